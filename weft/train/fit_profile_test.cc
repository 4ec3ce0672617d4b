// TensorBoard's profile_batch: fit profiles exactly the steps it names (counted from 1 across
// epochs), each a "train" step event with its step_num holding the input's and the optimizer's
// events, into log_dir/train/plugins/profile/<run>/; a run that ends first writes what it has.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "weft/core/trace_me.h"
#include "weft/nn/dense.h"
#include "weft/nn/model.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/optim/sgd.h"
#include "weft/profiler/trace_file.h"
#include "weft/testing/chrome_trace.h"
#include "weft/train/callbacks.h"

namespace weft::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// 24 examples in batches of 4: 6 steps an epoch.
data::Dataset profiled_data() {
  Tensor x = stateless_random_normal({24, 3}, {41, 1});
  return data::Dataset::from_tensor_slices({x, sum(x, {1}, true)}).batch(4);
}

// The one trace fit wrote under `logdir`/train, checked against the format.
json profiled_trace(const fs::path& logdir) {
  const fs::path runs = logdir / "train" / "plugins" / "profile";
  std::vector<fs::path> files;
  for (const auto& run : fs::directory_iterator(runs)) {
    for (const auto& f : fs::directory_iterator(run.path())) files.push_back(f.path());
  }
  EXPECT_EQ(files.size(), 1u);
  if (files.size() != 1) return {};
  std::ifstream in(files[0], std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json doc = json::parse(gzip_decompress(gz, files[0].string()));
  EXPECT_THAT(weft::testing::chrome_trace_problems(doc), ::testing::IsEmpty());
  return doc;
}

class FitProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    logdir_ = fs::path(::testing::TempDir()) / ("fit_profile_" + std::to_string(getpid()));
    fs::remove_all(logdir_);
    random::set_seed(3);
    model_.compile(optim::SGD(0.01), nn::losses::MeanSquaredError(), std::vector<std::string>{});
  }
  void TearDown() override { fs::remove_all(logdir_); }
  fs::path logdir_;
  nn::Sequential model_{{nn::Dense(1)}};
};

TEST_F(FitProfile, ProfilesTheStepsProfileBatchNamesAcrossEpochs) {
  model_.fit(
      profiled_data(),
      {.epochs = 2, .callbacks = {TensorBoard(logdir_.string(), {.profile_batch = {5, 8}})}});
  EXPECT_FALSE(trace_active(1));
  const json doc = profiled_trace(logdir_);
  std::vector<std::pair<std::string, std::string>> steps;  // step_num, epoch_num
  int next = 0, apply = 0, matmul = 0;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["name"] == "train") {
      EXPECT_EQ(e["cat"], "step");
      steps.emplace_back(e["args"]["step_num"], e["args"]["epoch_num"]);
      // The step holds its input: an Iterator::next on its thread, inside it.
      const double from = e["ts"], to = from + e["dur"].get<double>();
      bool holds_input = false;
      for (const json& c : doc["traceEvents"]) {
        holds_input |= c.value("name", "") == "Iterator::next" && c["tid"] == e["tid"] &&
                       c["ts"].get<double>() >= from && c["ts"].get<double>() <= to;
      }
      EXPECT_TRUE(holds_input) << "step " << e["args"]["step_num"];
    }
    next += e["name"] == "Iterator::next";
    apply += e["name"] == "Optimizer::apply_gradients";
    matmul += e["cat"] == "op" && e["name"] == "matmul";
  }
  EXPECT_EQ(steps, (std::vector<std::pair<std::string, std::string>>{
                       {"5", "0"}, {"6", "0"}, {"7", "1"}, {"8", "1"}}));
  EXPECT_GE(next, 4);
  EXPECT_EQ(apply, 4);
  EXPECT_GE(matmul, 4);  // ops, at the default host_tracer_level 2
  EXPECT_EQ(doc["otherData"]["host_tracer_level"], 2);
}

TEST_F(FitProfile, ARunThatEndsFirstWritesTheStepsItHadAndNoneIsTheDefault) {
  model_.fit(
      profiled_data(),
      {.epochs = 1, .callbacks = {TensorBoard(logdir_.string(), {.profile_batch = {5, 99}})}});
  int steps = 0;
  const json doc = profiled_trace(logdir_);
  for (const json& e : doc["traceEvents"]) steps += e.value("name", "") == "train";
  EXPECT_EQ(steps, 2);  // 5 and 6 of 6
  fs::remove_all(logdir_);
  model_.fit(profiled_data(), {.epochs = 1, .callbacks = {TensorBoard(logdir_.string())}});
  EXPECT_FALSE(fs::exists(logdir_ / "train" / "plugins"));
  EXPECT_THROW(TensorBoard(logdir_.string(), {.profile_batch = {3, 2}}), InvalidArgument);
  EXPECT_THROW(TensorBoard(logdir_.string(), {.profile_batch = {0, 2}}), InvalidArgument);
}

}  // namespace
}  // namespace weft::train
