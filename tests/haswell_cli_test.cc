// `weft train` on an emulated AVX2-only CPU (QEMU's Haswell), where oneDNN runs other kernels
// (its jit gemm rather than brgemm) than on AVX-512 machines: the weights do not depend on the
// thread count, and a run killed and resumed from its backup ends with the uninterrupted run's
// weights. These run on every CI machine, so that the AVX2 machines' differences show anywhere.
// QEMU runs a step 50-100 times slower than the CPU: the runs are a few steps of batch 16 (every
// step's products already differ between thread counts where a kernel's bits do). The same
// checks at full size run natively in train_cli_test and mirrored_cli_test. tests/CMakeLists.txt
// builds this only for the default WEFT_MARCH, without the sanitizers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "cli_helpers.h"

namespace {

using namespace weft_cli_test;

class HaswellCli : public testing::Test {
 protected:
  void SetUp() override {
    setenv("WEFT_TEST_LAUNCHER", WEFT_QEMU " -cpu Haswell", 1);
    dir_ = fs::path(testing::TempDir()) / ("haswell_cli_" + std::to_string(getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override {
    unsetenv("WEFT_TEST_LAUNCHER");
    fs::remove_all(dir_);
  }
  nlohmann::json train(const std::string& args) {
    fs::path json = dir_ / ("run_" + std::to_string(runs_++) + ".json");
    Result r =
        run("train --batch-size 16 --seed 3 --quiet --metrics-json " + json.string() + " " + args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.output;
    return r.status == 0 ? read_json(json) : nlohmann::json{};
  }
  fs::path dir_;
  int runs_ = 0;
};

TEST_F(HaswellCli, DeterministicWeightsDoNotDependOnThreads) {
  write_dataset(dir_ / "data", 32, 16);
  Result info = run("info");
  ASSERT_THAT(info.output, testing::HasSubstr("cpu isa: avx2\n")) << "not an AVX2-only CPU";
  for (const char* model : {"mlp", "transformer"}) {
    std::string base = "--dataset " + (dir_ / "data").string() + " --model " + model +
                       " --epochs 1 --deterministic --threads ";
    nlohmann::json two = train(base + "2");
    ASSERT_EQ(two["steps"], 2) << model;
    EXPECT_EQ(train(base + "1")["weights_fingerprint"], two["weights_fingerprint"])
        << model << ": 1 and 2 threads differ";
  }
}

// Backups restore bit for bit with this CPU's kernels. (Eight steps are fewer than the 64 calls a
// product runs before the timed choice between one thread and two starts, weft/ops/onednn: that
// choice changing a resumed run's bits shows natively, in TrainCli's test of 192 steps, on an
// AVX2 machine.)
TEST_F(HaswellCli, ResumedRunMatchesUninterruptedRunBitForBit) {
  write_dataset(dir_ / "data", 64, 16);
  std::string common =
      "--dataset " + (dir_ / "data").string() + " --model mlp --epochs 2 --threads 2";
  nlohmann::json full = train(common);
  ASSERT_EQ(full["steps"], 8);

  fs::path backup = dir_ / "backup";
  fs::path json = dir_ / "resumed.json";
  std::string args = "train --batch-size 16 --seed 3 --quiet " + common + " --backup-dir " +
                     backup.string() + " --save-freq 2 --metrics-json " + json.string();
  expect_resumed_run_matches(args, backup, json, full);
}

}  // namespace
