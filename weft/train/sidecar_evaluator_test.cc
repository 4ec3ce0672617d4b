// SidecarEvaluator: a model of its own evaluates each checkpoint ModelCheckpoint writes, to
// the logs the trained model itself gets (bit for bit), waits for newer ones up to its timeout,
// and stops at final_step.
#include "weft/train/sidecar_evaluator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <future>

#include "weft/core/errors.h"
#include "weft/nn/dense.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/optim/adam.h"
#include "weft/train/callbacks.h"

namespace weft::train {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

nn::Sequential make_model() {
  nn::Sequential model({nn::Dense(8, "relu"), nn::Dense(3)});
  model.compile(optim::Adam(0.01), nn::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                {"accuracy"});
  return model;
}

class SidecarEvaluatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sidecar_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(SidecarEvaluatorTest, EvaluatesEachNewCheckpointAsTheTrainedModelWould) {
  const Tensor x = stateless_random_normal({64, 4}, {4, 1});
  const Tensor y = argmax(slice(x, {Slice{}, Slice{0, 3}}), -1);
  const data::Dataset train = data::Dataset::from_tensor_slices({x, y}).batch(16);
  const data::Dataset test = data::Dataset::from_tensor_slices({x, y}).batch(10);
  nn::Sequential trained = make_model();
  const std::vector<Callback> save{ModelCheckpoint(dir_.string())};
  trained.fit(train, {.epochs = 1, .callbacks = save, .verbose = 0});
  const std::map<std::string, double> after_one = trained.evaluate(test);

  // Only checkpoint 1 exists: evaluated, and the evaluator stops there.
  std::vector<SidecarEvaluation> first =
      SidecarEvaluator(make_model(), test, {.checkpoint_dir = dir_.string(), .final_step = 1})
          .start();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].step, 1);
  EXPECT_EQ(first[0].checkpoint, (dir_ / "ckpt-1").string());
  EXPECT_EQ(first[0].logs, after_one);

  // Checkpoints 2 and 3 written while it waits: it ends with the last, oldest first.
  auto evaluations = std::async(std::launch::async, [&] {
    return SidecarEvaluator(make_model(), test,
                            {.checkpoint_dir = dir_.string(),
                             .final_step = 3,
                             .timeout = std::chrono::seconds(60),
                             .log_dir = (dir_ / "logs").string()})
        .start();
  });
  trained.fit(train, {.epochs = 3, .callbacks = save, .initial_epoch = 1, .verbose = 0});
  const std::vector<SidecarEvaluation> later = evaluations.get();
  ASSERT_FALSE(later.empty());
  for (size_t i = 1; i < later.size(); ++i) EXPECT_LT(later[i - 1].step, later[i].step);
  EXPECT_EQ(later.back().step, 3);
  EXPECT_EQ(later.back().logs, trained.evaluate(test));
  EXPECT_FALSE(fs::is_empty(dir_ / "logs" / "evaluation"));
}

TEST_F(SidecarEvaluatorTest, NoNewCheckpointWithinTheTimeoutIsAnErrorNamingTheDirectory) {
  const Tensor x = stateless_random_normal({8, 4}, {4, 2});
  const data::Dataset test =
      data::Dataset::from_tensor_slices({x, argmax(slice(x, {Slice{}, Slice{0, 3}}), -1)}).batch(8);
  SidecarEvaluator evaluator(make_model(), test,
                             {.checkpoint_dir = dir_.string(),
                              .final_step = 5,
                              .timeout = std::chrono::milliseconds(300)});
  EXPECT_THAT([&] { evaluator.start(); },
              ::testing::ThrowsMessage<DeadlineExceeded>(
                  ::testing::AllOf(HasSubstr(dir_.string()), HasSubstr("waiting for step 5"))));
  nn::Sequential uncompiled({nn::Dense(3)});
  EXPECT_THROW(SidecarEvaluator(uncompiled, test, {.checkpoint_dir = dir_.string()}),
               FailedPrecondition);
}

}  // namespace
}  // namespace weft::train
