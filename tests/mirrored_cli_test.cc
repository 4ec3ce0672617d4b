// `weft train --strategy mirrored` end to end, on small IDX datasets the test writes itself:
// --deterministic gives the same weights at 1, 2, 4 and 8 replicas and at 1 or 2 threads (MLP,
// and the CNN with BatchNormalization); a mirrored run killed mid-epoch and resumed from its
// backup ends with the uninterrupted run's weights.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_helpers.h"

namespace {

using namespace weft_cli_test;

class MirroredCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) / ("mirrored_cli_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    // 1000 examples in batches of 64: 15 full batches and a last one of 40, cut unevenly.
    data_ = dir_ / "data";
    write_dataset(data_, 1000, 200);
  }
  void TearDown() override { fs::remove_all(dir_); }
  nlohmann::json train(const std::string& args) {
    fs::path json = dir_ / ("run_" + std::to_string(runs_++) + ".json");
    Result r =
        run("train --dataset " + data_.string() +
            " --batch-size 64 --seed 5 --quiet --metrics-json " + json.string() + " " + args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.output;
    return r.status == 0 ? read_json(json) : nlohmann::json{};
  }
  // Determinism needs few steps: 232 examples, 3 full batches of 64 and a last one of 40.
  void use_small_dataset() {
    data_ = dir_ / "small";
    write_dataset(data_, 232, 40);
  }
  fs::path dir_;
  fs::path data_;  // train()'s dataset
  int runs_ = 0;
};

TEST_F(MirroredCli, DeterministicWeightsDoNotDependOnReplicasOrThreads) {
  use_small_dataset();
  for (const char* model : {"mlp", "cnn"}) {
    std::string base = std::string("--model ") + model + " --epochs 1 --deterministic";
    nlohmann::json one = train(base + " --threads 2");
    ASSERT_EQ(one["replicas"], 1);
    EXPECT_EQ(train(base + " --threads 1")["weights_fingerprint"], one["weights_fingerprint"])
        << model << ": 1 and 2 threads differ";
    for (int replicas : {1, 2, 4, 8}) {
      nlohmann::json j =
          train(base + " --strategy mirrored --replicas " + std::to_string(replicas));
      EXPECT_EQ(j["strategy"], "mirrored");
      EXPECT_EQ(j["replicas"], replicas);
      EXPECT_EQ(j["steps"], 4);
      EXPECT_EQ(j["weights_fingerprint"], one["weights_fingerprint"])
          << model << ": " << replicas << " replicas differ from the default strategy";
    }
  }
  // 3 replicas do not split 8 micro-batches (refused: ModelDistributed tests it) but split 3.
  std::string three = "--model mlp --epochs 1 --deterministic --micro-batches 3";
  nlohmann::json alone = train(three);
  ASSERT_EQ(alone["steps"], 4);
  EXPECT_EQ(train(three + " --strategy mirrored --replicas 3")["weights_fingerprint"],
            alone["weights_fingerprint"]);
}

// The sequence models too (the LSTM on oneDNN's RNN primitives, the transformer's attention):
// --deterministic gives the same weights at 1 and 2 threads and on 2 replicas as on one.
TEST_F(MirroredCli, SequenceModelsAreDeterministicAcrossThreadsAndReplicas) {
  use_small_dataset();
  for (const char* model : {"lstm", "transformer"}) {
    std::string base = std::string("--model ") + model + " --epochs 1 --deterministic";
    nlohmann::json one = train(base + " --threads 2");
    ASSERT_EQ(one["steps"], 4) << model;
    EXPECT_EQ(train(base + " --threads 1")["weights_fingerprint"], one["weights_fingerprint"])
        << model << ": 1 and 2 threads differ";
    nlohmann::json two = train(base + " --strategy mirrored --replicas 2");
    EXPECT_EQ(two["replicas"], 2);
    EXPECT_EQ(two["weights_fingerprint"], one["weights_fingerprint"])
        << model << ": 2 replicas differ from one";
  }
}

TEST_F(MirroredCli, BackupResumesMidEpochToTheUninterruptedWeights) {
  std::string common = "--model mlp --epochs 3 --strategy mirrored --replicas 2";
  nlohmann::json full = train(common);
  ASSERT_EQ(full["steps"], 48);

  // The same run, backing up every 5 steps, killed (SIGKILL) soon after its first backup.
  fs::path backup = dir_ / "backup";
  fs::path json = dir_ / "resumed.json";
  std::string args = "train --dataset " + (dir_ / "data").string() +
                     " --batch-size 64 --seed 5 --quiet " + common + " --backup-dir " +
                     backup.string() + " --save-freq 5 --metrics-json " + json.string();
  expect_resumed_run_matches(args, backup, json, full);
}

}  // namespace
