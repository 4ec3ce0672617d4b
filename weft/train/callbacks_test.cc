// The built-in callbacks that steer training, each against a trace worked out by hand from Keras
// 2.4's rules: ReduceLROnPlateau (patience, cooldown, min_lr), TerminateOnNaN, LambdaCallback,
// EarlyStopping (patience, min_delta, baseline, restore_best_weights), LearningRateScheduler and
// CSVLogger (values at full precision). A LambdaCallback listed first writes the monitored value
// into the logs, so each trace is exact.
#include "weft/train/callbacks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

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

// BackupAndRestore takes SIGTERM while fit() runs and gives it back however fit() ends: when a
// step fails, a program that goes on must still be stoppable by SIGTERM.
TEST(BackupAndRestore, GivesBackTheSigtermHandlerWhenFitThrows) {
  auto handler = [] {
    struct sigaction now {};
    sigaction(SIGTERM, nullptr, &now);
    return now.sa_handler;
  };
  ASSERT_EQ(handler(), SIG_DFL);
  std::string dir = ::testing::TempDir() + "/backup_throws_" + std::to_string(getpid());
  nn::Sequential model = model_with(0.01);
  bool taken_while_training = false;
  Callback fail_at_batch_2 = LambdaCallback({.on_batch_end = [&](int64_t batch, const Logs&) {
    taken_while_training = handler() != SIG_DFL;
    if (batch == 2) throw std::runtime_error("a failing step");
  }});
  nn::FitOptions options{.epochs = 1, .callbacks = {BackupAndRestore(dir), fail_at_batch_2}};
  options.verbose = 0;
  EXPECT_THROW(model.fit(regression_data(), options), std::runtime_error);
  EXPECT_TRUE(taken_while_training);
  EXPECT_EQ(handler(), SIG_DFL);
  std::filesystem::remove_all(dir);
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

// Keras 2.4's rule (keras/callbacks.py, ReduceLROnPlateau.on_epoch_end): in cooldown the counter
// goes down by one and wait is reset to 0; an improvement resets wait; otherwise, out of cooldown
// (counted after the decrement), wait grows by one, and at wait >= patience a rate above min_lr
// (both as float32) becomes max(lr * factor, min_lr), cooldown starts again and wait is reset.
TEST(ReduceLROnPlateau, InCooldownTheWaitStaysZeroAndARateAtMinLrIsNotCutAgain) {
  nn::Sequential model = model_with(0.1);
  ::testing::internal::CaptureStdout();
  History h = model.fit(regression_data(), {.epochs = 10,
                                            .callbacks = {feed(std::vector<double>(10, 5.0)),
                                                          ReduceLROnPlateau({.monitor = "x",
                                                                             .factor = 0.5,
                                                                             .patience = 1,
                                                                             .cooldown = 2,
                                                                             .min_lr = 0.03,
                                                                             .verbose = 1})},
                                            .verbose = 0});
  std::string printed = ::testing::internal::GetCapturedStdout();
  // Epoch 0 sets the best, 5, never beaten. Epoch 1: wait 1 >= 1, cut to 0.05, cooldown 2.
  // Epoch 2: cooldown 1 left, no counting. Epoch 3: cooldown 0 left, wait 1: cut to
  // max(0.025, 0.03) = 0.03, cooldown 2. Epoch 4: cooldown. From epoch 5 on the wait grows, but
  // the rate is min_lr: no cut, no line.
  EXPECT_THAT(h.history["lr"],
              ::testing::Pointwise(::testing::DoubleNear(1e-12),
                                   {0.1, 0.1, 0.05, 0.05, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03}));
  EXPECT_NEAR(model.optimizer().current_learning_rate(), 0.03, 1e-12);
  EXPECT_THAT(printed,
              ::testing::HasSubstr("Epoch 2: ReduceLROnPlateau reducing learning rate to 0.05."));
  EXPECT_THAT(printed,
              ::testing::HasSubstr("Epoch 4: ReduceLROnPlateau reducing learning rate to 0.03."));
  size_t lines = 0;
  for (size_t at = printed.find("reducing learning rate"); at != std::string::npos;
       at = printed.find("reducing learning rate", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 2u) << printed;
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

// What a fit under EarlyStopping did: the epochs it ran, the weights' fingerprint at the end of
// each (taken before EarlyStopping's turn) and at the end.
struct EarlyStoppingRun {
  std::vector<int> epochs;
  std::vector<std::string> fingerprints;
  std::string final_fingerprint;
};

// Fits for up to values.size() epochs with `options`, a callback listed first putting values[e]
// into the logs under options.monitor at the end of epoch e.
EarlyStoppingRun run_early_stopping(const std::vector<double>& values,
                                    const EarlyStoppingOptions& options) {
  nn::Sequential model = model_with(0.01);
  EarlyStoppingRun run;
  History h = model.fit(
      regression_data(),
      {.epochs = static_cast<int>(values.size()),
       .callbacks = {LambdaCallback({.on_epoch_end =
                                         [&](int epoch, Logs& logs) {
                                           logs[options.monitor] =
                                               values.at(static_cast<size_t>(epoch));
                                           run.fingerprints.push_back(model.weights_fingerprint());
                                         }}),
                     EarlyStopping(options)},
       .verbose = 0});
  run.epochs = h.epoch;
  run.final_fingerprint = model.weights_fingerprint();
  return run;
}

// Epochs 0 .. n - 1.
std::vector<int> epochs_up_to(int n) {
  std::vector<int> e(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) e[static_cast<size_t>(i)] = i;
  return e;
}

// Keras 2.4's rule (keras/callbacks.py, EarlyStopping.on_epoch_end): an epoch that improves on
// the best resets `wait` to 0 (and remembers the weights); any other adds 1, and once wait >=
// patience training stops and the remembered weights are put back. Each trace below is worked
// out by hand from that rule.
TEST(EarlyStopping, StopsAfterPatienceAndRestoresTheBestWeights) {
  {
    EarlyStoppingRun run =
        run_early_stopping({3, 2, 2.5, 2.4, 2.6, 1, 1, 1, 1, 1},
                           {.monitor = "x", .patience = 2, .restore_best_weights = true});
    // Epoch 1's 2 is the best; epochs 2 and 3 do not improve on it (wait 1, then 2): the second
    // of them, epoch 3, stops training.
    EXPECT_EQ(run.epochs, (std::vector<int>{0, 1, 2, 3}));
    ASSERT_EQ(run.fingerprints.size(), 4u);
    EXPECT_EQ(run.final_fingerprint, run.fingerprints[1]);
    EXPECT_NE(run.fingerprints[3], run.fingerprints[1]);
  }
  // The same values at every patience. Epochs 0 and 1 improve; 2, 3, 4 do not (wait 1, 2, 3);
  // 5 improves to 1 (the best from then on, as 1 is not below 1); 6 to 9 do not (wait 1 to 4).
  // Patience 0 and 1 both stop at the first epoch that does not improve. With patience 4 the
  // fourth wait comes at the last epoch, which still stops and restores epoch 5's weights; with
  // patience 5 it never stops, and the weights stay those of the last epoch.
  struct Case {
    int patience;
    int epochs_run;
    int restored_from;  // the best epoch, or -1: not restored
  };
  for (Case c : {Case{0, 3, 1}, Case{1, 3, 1}, Case{2, 4, 1}, Case{3, 5, 1}, Case{4, 10, 5},
                 Case{5, 10, -1}}) {
    SCOPED_TRACE("patience " + std::to_string(c.patience));
    EarlyStoppingRun run =
        run_early_stopping({3, 2, 2.5, 2.4, 2.6, 1, 1, 1, 1, 1},
                           {.monitor = "x", .patience = c.patience, .restore_best_weights = true});
    EXPECT_EQ(run.epochs, epochs_up_to(c.epochs_run));
    ASSERT_EQ(run.fingerprints.size(), static_cast<size_t>(c.epochs_run));
    if (c.restored_from >= 0) {
      EXPECT_EQ(run.final_fingerprint, run.fingerprints[static_cast<size_t>(c.restored_from)]);
      EXPECT_NE(run.fingerprints.back(), run.fingerprints[static_cast<size_t>(c.restored_from)]);
    } else {
      EXPECT_EQ(run.final_fingerprint, run.fingerprints.back());
      EXPECT_NE(run.final_fingerprint, run.fingerprints[5]);
    }
  }
}

// Keras 2.4 improves when monitor_op(current - min_delta, best), with min_delta = |min_delta|
// for a maximised monitor and -|min_delta| for a minimised one: a value must beat the best by more
// than |min_delta|, in the monitor's direction.
TEST(EarlyStopping, MinDeltaMustBeBeatenInTheMonitorsDirection) {
  // Minimised, min_delta 0.5 (or -0.5: its sign is the mode's): epoch 0 sets the best, 3; 2.7 is
  // not below 3 - 0.5 (wait 1); 2.4 is (best 2.4); 2.1 is not (wait 1); 1.5 is (best 1.5); 1.2
  // and 1.1 are not (wait 1, 2): epoch 6 stops training.
  for (double min_delta : {0.5, -0.5}) {
    SCOPED_TRACE("min_delta " + std::to_string(min_delta));
    EarlyStoppingRun run =
        run_early_stopping({3, 2.7, 2.4, 2.1, 1.5, 1.2, 1.1, 1.0, 0.9, 0.8},
                           {.monitor = "x", .min_delta = min_delta, .patience = 2});
    EXPECT_EQ(run.epochs, epochs_up_to(7));
  }
  // Maximised, as a monitor named "...acc..." is in mode auto, min_delta 0.1: 0.5 is the best;
  // 0.55 is not above 0.5 + 0.1 (wait 1); 0.62 is (best 0.62); 0.65 is not (wait 1); 0.8 is (best
  // 0.8); 0.85 and 0.88 are not (wait 1, 2): epoch 6 stops training.
  for (const char* mode : {"auto", "max"}) {
    SCOPED_TRACE(mode);
    EarlyStoppingRun run = run_early_stopping(
        {0.5, 0.55, 0.62, 0.65, 0.8, 0.85, 0.88, 0.9, 0.95, 0.99},
        {.monitor = "val_accuracy", .min_delta = 0.1, .patience = 2, .mode = mode});
    EXPECT_EQ(run.epochs, epochs_up_to(7));
  }
}

// With a baseline, the best starts there: values that never beat it stop training after
// `patience` epochs, however much they improve on each other.
TEST(EarlyStopping, ABaselineIsTheBestToBeatFromTheStart) {
  std::vector<double> falling{3, 2.5, 1.8, 1.7, 1.6, 1.5, 1.4, 1.3, 1.2, 1.1};
  // 3 and 2.5 are not below 2 (wait 1, 2): epoch 1 stops training.
  EXPECT_EQ(run_early_stopping(falling, {.monitor = "x", .patience = 2, .baseline = 2.0}).epochs,
            epochs_up_to(2));
  // 1.8 beats it at epoch 2 (wait 0), and every epoch after improves: all ten run, as they do
  // without a baseline.
  EXPECT_EQ(run_early_stopping(falling, {.monitor = "x", .patience = 3, .baseline = 2.0}).epochs,
            epochs_up_to(10));
  EXPECT_EQ(run_early_stopping(falling, {.monitor = "x", .patience = 2}).epochs, epochs_up_to(10));
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

// The comma-separated fields of a row.
std::vector<std::string> fields_of(const std::string& row) {
  std::vector<std::string> fields;
  std::stringstream in(row);
  for (std::string f; std::getline(in, f, ',');) fields.push_back(f);
  return fields;
}

TEST(CSVLogger, WritesAHeaderAndARowPerEpoch) {
  std::string path = ::testing::TempDir() + "/weft_csv_" + std::to_string(getpid()) + ".csv";
  nn::Sequential model = model_with(0.01);
  History h = model.fit(
      regression_data(),
      {.epochs = 3, .callbacks = {feed({7, 8, 0.1 + 0.2}), CSVLogger(path)}, .verbose = 0});
  std::ifstream in(path);
  std::string header, row0, row1, row2;
  std::getline(in, header);
  std::getline(in, row0);
  std::getline(in, row1);
  std::getline(in, row2);
  EXPECT_EQ(header, "epoch,loss,x");
  // Every value with all the digits it needs to read back as the same double (as Keras's rows,
  // Python's repr of a float): 0.1 + 0.2 needs 17 significant digits, the losses about as many.
  std::vector<std::string> f0 = fields_of(row0);
  ASSERT_EQ(f0.size(), 3u) << row0;
  EXPECT_EQ(f0[0], "0");
  EXPECT_EQ(f0[2], "7");
  EXPECT_THAT(row1, ::testing::StartsWith("1,"));
  EXPECT_THAT(row1, ::testing::EndsWith(",8"));
  EXPECT_THAT(row2, ::testing::StartsWith("2,"));
  EXPECT_THAT(row2, ::testing::EndsWith(",0.30000000000000004"));
  EXPECT_EQ(std::stod(fields_of(row2).back()), 0.1 + 0.2);
  const std::string* rows[] = {&row0, &row1, &row2};
  for (size_t e = 0; e < 3; ++e) {
    std::vector<std::string> f = fields_of(*rows[e]);
    ASSERT_EQ(f.size(), 3u) << *rows[e];
    EXPECT_EQ(std::stod(f[1]), h.history["loss"][e]) << *rows[e];
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace weft::train
