// compile's steps_per_execution in fit, as Keras 2.4's: the batch callbacks come once per N
// steps (on_train_batch_begin with the first step's index, on_train_batch_end with the last's),
// an epoch's last execution is cut to its remaining steps, and the steps are those of N = 1: the
// same weights and logs, bit for bit. (Under ParameterServerStrategy, N steps per closure: the
// parameter-server tests.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "weft/core/errors.h"
#include "weft/nn/dense.h"
#include "weft/nn/model.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/optim/adam.h"
#include "weft/train/callbacks.h"

namespace weft::nn {
namespace {

// What the batch callbacks were told, in order.
class BatchRecorder : public CallbackImpl {
 public:
  void on_train_batch_begin(int64_t step, const Logs&) override { begins.push_back(step); }
  void on_train_batch_end(int64_t step, const Logs&) override {
    ends.push_back(step);
    steps.push_back(batch_steps_);
    examples.push_back(batch_examples_);
  }
  std::vector<int64_t> begins, ends, steps, examples;
};

Sequential trained_model(int64_t steps_per_execution, const data::Dataset& data,
                         const std::shared_ptr<BatchRecorder>& recorder, History* history) {
  random::set_seed(5);
  Sequential model({Dense(8, "relu"), Dense(3)});
  model.compile(optim::Adam(0.01), losses::SparseCategoricalCrossentropy({.from_logits = true}),
                {"accuracy"}, {.steps_per_execution = steps_per_execution});
  *history = model.fit(data, {.epochs = 2, .callbacks = {Callback(recorder)}, .verbose = 0});
  return model;
}

TEST(StepsPerExecution, BatchCallbacksComeOncePerExecutionAndTheStepsAreTheSame) {
  const Tensor x = stateless_random_normal({38, 4}, {9, 1});
  const Tensor y = argmax(slice(x, {Slice{}, Slice{0, 3}}), -1);
  const data::Dataset data = data::Dataset::from_tensor_slices({x, y}).batch(4);  // 10 batches
  auto one = std::make_shared<BatchRecorder>(), three = std::make_shared<BatchRecorder>();
  History h1, h3;
  Sequential m1 = trained_model(1, data, one, &h1);
  Sequential m3 = trained_model(3, data, three, &h3);

  EXPECT_EQ(one->ends.size(), 20u);
  // Per epoch: executions of 3, 3, 3 and 1 steps (the last one's batch has 2 examples).
  const std::vector<int64_t> begins{0, 3, 6, 9, 0, 3, 6, 9}, ends{2, 5, 8, 9, 2, 5, 8, 9};
  EXPECT_EQ(three->begins, begins);
  EXPECT_EQ(three->ends, ends);
  EXPECT_EQ(three->steps, (std::vector<int64_t>{3, 3, 3, 1, 3, 3, 3, 1}));
  EXPECT_EQ(three->examples, (std::vector<int64_t>{12, 12, 12, 2, 12, 12, 12, 2}));
  EXPECT_EQ(m3.weights_fingerprint(), m1.weights_fingerprint());
  EXPECT_EQ(m3.optimizer().iterations().value().item<int64_t>(), 20);
  EXPECT_EQ(h3.history, h1.history);
}

TEST(StepsPerExecution, CompileRefusesFewerThanOneStep) {
  Sequential model({Dense(3)});
  EXPECT_THAT(
      [&] {
        model.compile(optim::Adam(), losses::SparseCategoricalCrossentropy(), {},
                      {.steps_per_execution = 0});
      },
      ::testing::ThrowsMessage<InvalidArgument>(
          ::testing::HasSubstr("Model::compile: steps_per_execution must be at least 1, got 0")));
}

}  // namespace
}  // namespace weft::nn
