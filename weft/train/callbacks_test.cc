// The built-in callbacks that steer training, each against a trace worked out by hand:
// ReduceLROnPlateau (patience, cooldown, min_lr), TerminateOnNaN, LambdaCallback, EarlyStopping
// (with restore_best_weights), LearningRateScheduler and CSVLogger. A LambdaCallback listed first
// writes the monitored value into the logs, so each trace is exact.
#include "weft/train/callbacks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "weft/nn/dense.h"
#include "weft/nn/model.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/optim/sgd.h"

namespace weft::train {
namespace {

// 24 examples in batches of 4 for a small regression model.
data::Dataset regression_data(bool with_nan_in_batch_2 = false) {
  Tensor x = stateless_random_normal({24, 3}, {31, 1});
  Tensor y = sum(x, {1}, true);
  if (with_nan_in_batch_2) {
    std::vector<float> v = x.to_vector<float>();
    v[9 * 3] = NAN;  // example 9: the third batch
    x = Tensor::from_vector(v, {24, 3});
  }
  return data::Dataset::from_tensor_slices({x, y}).batch(4);
}

nn::Sequential model_with(double lr) {
  random::set_seed(12);
  nn::Sequential model({nn::Dense(1)});
  model.compile(optim::SGD(lr), nn::losses::MeanSquaredError(), std::vector<std::string>{});
  return model;
}

// A callback that puts values[epoch] into the logs as "x" at each epoch's end.
Callback feed(std::vector<double> values) {
  return LambdaCallback({.on_epoch_end = [values](int epoch, Logs& logs) {
    logs["x"] = values.at(static_cast<size_t>(epoch));
  }});
}

TEST(ReduceLROnPlateau, CutsAfterPatienceWaitsOutCooldownAndStopsAtMinLr) {
  nn::Sequential model = model_with(0.1);
  History h = model.fit(
      regression_data(),
      {.epochs = 10,
       .callbacks =
           {feed({5, 4, 4, 4, 4, 3, 3, 3, 3, 3}),
            ReduceLROnPlateau(
                {.monitor = "x", .factor = 0.5, .patience = 2, .cooldown = 1, .min_lr = 0.02})},
       .verbose = 0});
  // Epoch 3 is the second without improvement: cut to 0.05 (logged from epoch 4). Epoch 4 is in
  // cooldown; 5 improves; 7 cuts to 0.025; 8 is in cooldown; 9 cuts to max(0.0125, min_lr).
  std::vector<double> lr = h.history["lr"];
  EXPECT_THAT(lr, ::testing::Pointwise(::testing::DoubleNear(1e-12),
                                       {0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025}));
  EXPECT_NEAR(model.optimizer().current_learning_rate(), 0.02, 1e-12);
  EXPECT_THROW(ReduceLROnPlateau({.factor = 1.0}), InvalidArgument);
}

TEST(ReduceLROnPlateau, MaximizesAccuracyLikeMonitors) {
  nn::Sequential model = model_with(0.1);
  History h =
      model.fit(regression_data(),
                {.epochs = 4,
                 .callbacks = {LambdaCallback({.on_epoch_end =
                                                   [](int epoch, Logs& logs) {
                                                     logs["val_accuracy"] = 0.5 + 0.1 * epoch;
                                                   }}),
                               ReduceLROnPlateau({.monitor = "val_accuracy", .patience = 1})},
                 .verbose = 0});
  // Rising accuracy is improvement: never cut.
  EXPECT_NEAR(model.optimizer().current_learning_rate(), 0.1, 1e-12);
}

TEST(TerminateOnNaN, StopsAtTheFirstBatchWithANaNLoss) {
  nn::Sequential model = model_with(0.01);
  int64_t last_batch = -1;
  History h = model.fit(
      regression_data(/*with_nan_in_batch_2=*/true),
      {.epochs = 3,
       .callbacks = {TerminateOnNaN(),
                     LambdaCallback(
                         {.on_batch_end = [&](int64_t b, const Logs&) { last_batch = b; }})},
       .verbose = 0});
  EXPECT_EQ(last_batch, 2);
  EXPECT_EQ(model.optimizer().iterations().value().item<int64_t>(), 3);
  EXPECT_EQ(h.epoch, std::vector<int>{0});
  EXPECT_TRUE(std::isnan(h.history["loss"][0]));
}

TEST(LambdaCallback, EveryHookRunsWhenFitSaysAndEpochEndMayAddLogs) {
  nn::Sequential model = model_with(0.01);
  std::vector<std::string> trace;
  History h = model.fit(
      regression_data(),
      {.epochs = 2,
       .callbacks = {LambdaCallback(
           {.on_epoch_begin = [&](int e,
                                  const Logs&) { trace.push_back("eb" + std::to_string(e)); },
            .on_epoch_end =
                [&](int e, Logs& logs) {
                  trace.push_back("ee" + std::to_string(e));
                  logs["twice_loss"] = 2 * logs.at("loss");
                },
            .on_batch_begin = [&](int64_t, const Logs&) { trace.push_back("b"); },
            .on_batch_end = [&](int64_t b,
                                const Logs& logs) { EXPECT_TRUE(logs.count("loss")) << b; },
            .on_train_begin = [&](const Logs&) { trace.push_back("tb"); },
            .on_train_end = [&](const Logs&) { trace.push_back("te"); }})},
       .verbose = 0});
  std::vector<std::string> want{"tb", "eb0"};
  for (int i = 0; i < 6; ++i) want.push_back("b");
  want.push_back("ee0");
  want.push_back("eb1");
  for (int i = 0; i < 6; ++i) want.push_back("b");
  want.insert(want.end(), {"ee1", "te"});
  EXPECT_EQ(trace, want);
  ASSERT_EQ(h.history["twice_loss"].size(), 2u);
  EXPECT_DOUBLE_EQ(h.history["twice_loss"][1], 2 * h.history["loss"][1]);
}

TEST(EarlyStopping, StopsAfterPatienceAndRestoresTheBestWeights) {
  nn::Sequential model = model_with(0.01);
  std::vector<std::string> fingerprints;
  History h = model.fit(
      regression_data(),
      {.epochs = 10,
       .callbacks = {LambdaCallback({.on_epoch_end =
                                         [&](int epoch, Logs& logs) {
                                           const double x[] = {3, 2, 2.5, 2.4, 2.6, 1, 1, 1, 1, 1};
                                           logs["x"] = x[epoch];
                                           fingerprints.push_back(model.weights_fingerprint());
                                         }}),
                     EarlyStopping({.monitor = "x", .patience = 2, .restore_best_weights = true})},
       .verbose = 0});
  // Epochs 2, 3 and 4 do not improve on epoch 1's 2: the third of them stops training.
  EXPECT_EQ(h.epoch, (std::vector<int>{0, 1, 2, 3, 4}));
  ASSERT_EQ(fingerprints.size(), 5u);
  EXPECT_EQ(model.weights_fingerprint(), fingerprints[1]);
  EXPECT_NE(fingerprints[4], fingerprints[1]);
}

TEST(LearningRateScheduler, SetsEachEpochsRateAndLogsIt) {
  nn::Sequential model = model_with(0.1);
  History h =
      model.fit(regression_data(), {.epochs = 3,
                                    .callbacks = {LearningRateScheduler([](int epoch, double lr) {
                                      return epoch == 0 ? lr : lr * 0.5;
                                    })},
                                    .verbose = 0});
  EXPECT_THAT(h.history["lr"],
              ::testing::Pointwise(::testing::DoubleNear(1e-12), {0.1, 0.05, 0.025}));
}

TEST(CSVLogger, WritesAHeaderAndARowPerEpoch) {
  std::string path = ::testing::TempDir() + "/weft_csv_" + std::to_string(getpid()) + ".csv";
  nn::Sequential model = model_with(0.01);
  History h = model.fit(regression_data(),
                        {.epochs = 2, .callbacks = {feed({7, 8}), CSVLogger(path)}, .verbose = 0});
  std::ifstream in(path);
  std::string header, row0, row1;
  std::getline(in, header);
  std::getline(in, row0);
  std::getline(in, row1);
  EXPECT_EQ(header, "epoch,loss,x");
  std::ostringstream want0;
  want0 << "0," << h.history["loss"][0] << ",7";
  EXPECT_EQ(row0, want0.str());
  EXPECT_THAT(row1, ::testing::StartsWith("1,"));
  EXPECT_THAT(row1, ::testing::EndsWith(",8"));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace weft::train
