// `weft train` end to end, on small IDX datasets the test writes itself (SPEC §6): resuming from a
// backup in a new process gives bit-identical weights, and bad input gives one line and a
// non-zero exit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "cli_helpers.h"

namespace {

using namespace weft_cli_test;
using testing::HasSubstr;

class TrainCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) / ("train_cli_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    write_dataset(dir_ / "data", 2048, 256);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write_small() const { write_dataset(dir_ / "small", 512, 64); }
  // `data`: the fixture's 2048 examples (64 steps an epoch), or "small" (512: 16 steps), which
  // write_small() writes, for tests whose point does not need many steps.
  std::string common(int epochs = 3, const char* data = "data") const {
    return "train --model mlp --dataset " + (dir_ / data).string() + " --epochs " +
           std::to_string(epochs) + " --batch-size 32 --seed 11 --threads 2 --quiet";
  }
  fs::path dir_;
};

TEST_F(TrainCli, ResumedRunMatchesUninterruptedRunBitForBit) {
  Result full = run(common() + " --metrics-json " + (dir_ / "full.json").string());
  ASSERT_EQ(full.status, 0) << full.output;
  nlohmann::json a = read_json(dir_ / "full.json");
  EXPECT_EQ(a["steps"], 3 * 64);
  EXPECT_GT(a["test_accuracy"].get<double>(), 0.5);  // the pattern is learnable

  // The same run, backing up every 5 steps, killed (SIGKILL) soon after its first backup.
  fs::path backup = dir_ / "backup";
  std::string args = common() + " --backup-dir " + backup.string() +
                     " --save-freq 5 --metrics-json " + (dir_ / "resumed.json").string();
  expect_resumed_run_matches(args, backup, dir_ / "resumed.json", a);
  EXPECT_FALSE(fs::exists(backup)) << "a completed fit() deletes its backup";
}

// weft train --deterministic: the same weights from run to run and at 1 or 2 threads, in float32
// and in mixed bfloat16. Different precisions train to different weights.
TEST_F(TrainCli, DeterministicRunsAgreeAcrossRunsAndThreadCounts) {
  // Eight steps of batch 64 per run: each step's products already differ between thread counts
  // where a kernel's bits do; twelve runs of the fixture's 32 steps took 104 s under the
  // sanitizers.
  write_small();
  for (const char* model : {"mlp", "cnn"}) {
    std::map<std::string, std::string> by_precision;
    for (const char* precision : {"off", "bf16"}) {
      std::vector<std::string> fingerprints;
      for (int threads : {2, 2, 1}) {
        fs::path json = dir_ / ("det_" + std::to_string(fingerprints.size()) + ".json");
        Result r = run("train --model " + std::string(model) + " --dataset " +
                       (dir_ / "small").string() + " --mixed-precision " + precision +
                       " --epochs 1 --batch-size 64 --seed 3 --deterministic --quiet --threads " +
                       std::to_string(threads) + " --metrics-json " + json.string());
        ASSERT_EQ(r.status, 0) << r.output;
        nlohmann::json j = read_json(json);
        EXPECT_EQ(j["deterministic"], true);
        EXPECT_EQ(j["mixed_precision"], precision);
        fingerprints.push_back(j["weights_fingerprint"]);
      }
      EXPECT_EQ(fingerprints[1], fingerprints[0])
          << model << " " << precision << ": two runs at 2 threads differ";
      EXPECT_EQ(fingerprints[2], fingerprints[0])
          << model << " " << precision << ": 1 and 2 threads differ";
      by_precision[precision] = fingerprints[0];
    }
    EXPECT_NE(by_precision["bf16"], by_precision["off"]) << model;
  }
}

// WEFT_DETERMINISTIC and TensorFlow's TF_DETERMINISTIC_OPS turn op determinism on at start-up
// (`weft info` reports it), with TensorFlow's spellings; anything else is refused by name.
TEST(DeterminismEnvironment, EitherVariableTurnsItOn) {
  std::string info = std::string(WEFT_BINARY_DIR) + "/weft info";
  auto reported = [&](const std::string& env) {
    Result r = shell("env -u WEFT_DETERMINISTIC -u TF_DETERMINISTIC_OPS " + env + " " + info);
    EXPECT_EQ(r.status, 0) << env << ": " << r.output;
    return r.output.find("deterministic ops: on") != std::string::npos;
  };
  EXPECT_FALSE(reported(""));
  EXPECT_TRUE(reported("WEFT_DETERMINISTIC=1"));
  EXPECT_TRUE(reported("TF_DETERMINISTIC_OPS=1"));
  EXPECT_TRUE(reported("TF_DETERMINISTIC_OPS=True"));
  EXPECT_FALSE(reported("TF_DETERMINISTIC_OPS=0"));
  EXPECT_FALSE(reported("WEFT_DETERMINISTIC=false"));
  Result bad = shell("TF_DETERMINISTIC_OPS=maybe " + info);
  EXPECT_NE(bad.status, 0);
  EXPECT_THAT(bad.output, HasSubstr("TF_DETERMINISTIC_OPS=\"maybe\""));
  EXPECT_EQ(std::count(bad.output.begin(), bad.output.end(), '\n'), 1) << bad.output;
}

// --mixed-precision f16 trains with dynamic loss scaling (added by compile) to finite weights
// and a loss below the untrained one (log 10).
TEST_F(TrainCli, Float16TrainsWithLossScaling) {
  fs::path json = dir_ / "f16.json";
  Result r = run("train --model mlp --dataset " + (dir_ / "data").string() +
                 " --mixed-precision f16 --epochs 2 --batch-size 32 --seed 1 --quiet "
                 "--metrics-json " +
                 json.string());
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json j = read_json(json);
  EXPECT_EQ(j["mixed_precision"], "f16");
  EXPECT_TRUE(std::isfinite(j["final_train_loss"].get<double>()));
  EXPECT_LT(j["final_train_loss"].get<double>(), 0.9 * std::log(10.0));
}

TEST_F(TrainCli, DamagedCheckpointIsRefusedByInspectVerify) {
  write_small();
  fs::path ckpts = dir_ / "ckpts";
  Result r = run(common(2, "small") + " --checkpoint-dir " + ckpts.string());
  ASSERT_EQ(r.status, 0) << r.output;
  fs::path newest = ckpts / "ckpt-2";
  ASSERT_TRUE(fs::exists(newest / "index.json")) << r.output;
  // Flip one byte of the newest checkpoint's data.
  fs::path shard;
  for (const auto& e : fs::directory_iterator(newest)) {
    if (e.path().filename().string().rfind("data-", 0) == 0) shard = e.path();
  }
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    char c;
    f.read(&c, 1);
    c ^= 0x40;
    f.seekp(100);
    f.write(&c, 1);
  }
  Result verify = run("inspect " + newest.string() + " --verify");
  EXPECT_NE(verify.status, 0);
  EXPECT_THAT(verify.output, HasSubstr(shard.filename().string()));
  EXPECT_EQ(run("inspect " + (ckpts / "ckpt-1").string() + " --verify").status, 0);
}

// The "epoch_learning_rate" lines of the train event file under `logdir`, decoded by the
// independent reader (scripts/read_tfevents.py).
std::vector<std::string> logged_learning_rates(const fs::path& logdir) {
  std::vector<std::string> lines;
  for (const auto& entry : fs::directory_iterator(logdir / "train")) {
    Result r = shell(std::string(WEFT_PYTHON) + " " + WEFT_SOURCE_DIR +
                     "/scripts/read_tfevents.py " + entry.path().string());
    EXPECT_EQ(r.status, 0) << r.output;
    std::istringstream in(r.output);
    for (std::string line; std::getline(in, line);) {
      if (line.find(" epoch_learning_rate ") != std::string::npos) lines.push_back(line);
    }
  }
  return lines;
}

// --lr-schedule cosine (the default) takes --lr to 0 over the whole run: half way after the
// first of two epochs, 0 after the second. A constant rate is not logged, as in Keras.
TEST_F(TrainCli, CosineScheduleSpansTheWholeRun) {
  write_small();
  ASSERT_EQ(run(common(2, "small") + " --lr 0.002 --logdir " + (dir_ / "cosine").string()).status,
            0);
  EXPECT_THAT(logged_learning_rates(dir_ / "cosine"),
              testing::ElementsAre("scalar 0 epoch_learning_rate 0.00100000005",
                                   "scalar 1 epoch_learning_rate 0"));
  ASSERT_EQ(
      run(common(2, "small") + " --lr-schedule constant --logdir " + (dir_ / "constant").string())
          .status,
      0);
  EXPECT_THAT(logged_learning_rates(dir_ / "constant"), testing::IsEmpty());
}

TEST_F(TrainCli, BadInputGivesOneLineAndNonZeroExit) {
  auto one_line = [](const Result& r, const std::string& needle) {
    EXPECT_NE(r.status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr(needle));
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  };
  one_line(run("train --dataset /nonexistent/dir --quiet"), "/nonexistent/dir");
  one_line(run("train --model resnet"), "resnet");
  one_line(run("train --mixed-precision fp8"), "fp8");
  one_line(run("train --lr-schedule linear"), "linear");
  one_line(run("train --strategy parameter_server --quiet"),
           "TF_CONFIG's cluster has no \"chief\" job (weft launch --ps K -n N sets TF_CONFIG");
  // A malformed cluster fails at start, before any data is read.
  one_line(shell("TF_CONFIG='{\"cluster\": {\"worker\": [\"a:1\"]}, \"task\": {\"type\": "
                 "\"worker\", \"index\": 3}}' " WEFT_BINARY_DIR "/weft train --strategy "
                 "multi_worker --dataset /nonexistent --quiet"),
           "task.index 3 is out of range");
  one_line(run("train --replicas 2 --quiet"), "--replicas 2 needs --strategy mirrored");
  one_line(run("train --ps-mode sync --quiet"), "--ps-mode sync needs --strategy parameter_server");
  one_line(run("train --strategy parameter_server --variable-partitioner fixed:0 --quiet"),
           "--variable-partitioner fixed:0: the number of shards must be a positive integer");

  fs::path bad = dir_ / "bad";
  write_dataset(bad, 64, 16);
  std::string magic = "\x01\x02\x03\x04" + std::string(100, '\0');
  write_gz(bad / "train-images-idx3-ubyte.gz", magic);
  one_line(run("train --quiet --dataset " + bad.string()), "train-images-idx3-ubyte.gz");

  fs::path truncated = dir_ / "truncated";
  write_dataset(truncated, 64, 16);
  std::string header = std::string("\0\0\x08\x03", 4) + be32(64) + be32(28) + be32(28) + "abc";
  write_gz(truncated / "t10k-images-idx3-ubyte.gz", header);
  one_line(run("train --quiet --dataset " + truncated.string()), "truncated");

  fs::path small = dir_ / "small_images";
  write_dataset(small, 64, 16, /*side=*/20);
  one_line(run("train --quiet --dataset " + small.string()), "(64, 20, 20, 1)");
}

}  // namespace
