// `weft train --strategy mirrored` end to end, on small IDX datasets the test writes itself:
// --deterministic gives the same weights at 1, 2, 4 and 8 replicas and at 1 or 2 threads (MLP,
// and the CNN with BatchNormalization); a mirrored run killed mid-epoch and resumed from its
// backup ends with the uninterrupted run's weights.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

extern char** environ;

namespace {

namespace fs = std::filesystem;

struct Result {
  int status;
  std::string output;
};

Result run(const std::string& args) {
  FILE* pipe = popen((std::string(WEFT_BINARY_DIR) + "/weft " + args + " 2>&1").c_str(), "r");
  std::string output;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) output.append(buf, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// Fashion-MNIST-named IDX files: n images whose brightness pattern depends on the label.
void write_dataset(const fs::path& dir, int n_train, int n_test) {
  fs::create_directories(dir);
  std::mt19937 rng(7);
  for (auto [prefix, n] : {std::pair{"train", n_train}, std::pair{"t10k", n_test}}) {
    std::string images = std::string("\0\0\x08\x03", 4) + be32(n) + be32(28) + be32(28);
    std::string labels = std::string("\0\0\x08\x01", 4) + be32(n);
    for (int i = 0; i < n; ++i) {
      int label = static_cast<int>(rng() % 10);
      labels += static_cast<char>(label);
      for (int p = 0; p < 28 * 28; ++p) {
        images += static_cast<char>((p % 10 == label ? 200 : 20) + static_cast<int>(rng() % 50));
      }
    }
    for (auto [name, bytes] : {std::pair{std::string(prefix) + "-images-idx3-ubyte.gz", images},
                               std::pair{std::string(prefix) + "-labels-idx1-ubyte.gz", labels}}) {
      gzFile f = gzopen((dir / name).c_str(), "wb");
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
      gzclose(f);
    }
  }
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

class MirroredCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) / ("mirrored_cli_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    // 1000 examples in batches of 64: 15 full batches and a last one of 40, cut unevenly.
    write_dataset(dir_ / "data", 1000, 200);
  }
  void TearDown() override { fs::remove_all(dir_); }
  nlohmann::json train(const std::string& args) {
    fs::path json = dir_ / ("run_" + std::to_string(runs_++) + ".json");
    Result r =
        run("train --dataset " + (dir_ / "data").string() +
            " --batch-size 64 --seed 5 --quiet --metrics-json " + json.string() + " " + args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.output;
    return r.status == 0 ? read_json(json) : nlohmann::json{};
  }
  fs::path dir_;
  int runs_ = 0;
};

TEST_F(MirroredCli, DeterministicWeightsDoNotDependOnReplicasOrThreads) {
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
      EXPECT_EQ(j["steps"], 16);
      EXPECT_EQ(j["weights_fingerprint"], one["weights_fingerprint"])
          << model << ": " << replicas << " replicas differ from the default strategy";
    }
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
  std::vector<std::string> argv_s = {std::string(WEFT_BINARY_DIR) + "/weft"};
  std::istringstream split(args);
  for (std::string w; split >> w;) argv_s.push_back(w);
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid;
  ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(backup / "checkpoint") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run finished before it could be killed";

  Result resumed = run(args);
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_THAT(resumed.output, testing::HasSubstr("restored backup"));
  nlohmann::json c = read_json(json);
  EXPECT_EQ(c["steps"], full["steps"]);
  EXPECT_EQ(c["weights_fingerprint"], full["weights_fingerprint"]);
}

}  // namespace
