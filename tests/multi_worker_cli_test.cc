// `weft launch -n N -- weft train --strategy multi_worker` end to end, with real processes on
// 127.0.0.1 and small IDX datasets the test writes itself: --deterministic gives the same weights
// for 1 x 1, 1 x 2, 2 x 1, 2 x 2 and 4 x 1 (processes x replicas), MLP and CNN; a worker killed
// with SIGKILL, or one that fails, is named by the others, which exit non-zero within seconds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "cli_helpers.h"

namespace {

using namespace weft_cli_test;
using testing::HasSubstr;

class MultiWorkerCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) / ("multi_worker_cli_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    // 1000 examples in batches of 64: 15 full batches and a last one of 40, cut unevenly.
    write_dataset(dir_ / "data", 1000, 200);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string train_args(const std::string& args, const fs::path& json) {
    return "train --dataset " + (dir_ / "data").string() +
           " --batch-size 64 --seed 5 --quiet --metrics-json " + json.string() + " " + args;
  }
  // `weft launch -n workers [--replicas-per-worker r] -- weft train ...`, or a plain run when
  // workers is 0.
  nlohmann::json train(int workers, int replicas, const std::string& args) {
    fs::path json = dir_ / ("run_" + std::to_string(runs_++) + ".json");
    std::string command =
        workers == 0 ? train_args(args, json)
                     : "launch -n " + std::to_string(workers) + " --replicas-per-worker " +
                           std::to_string(replicas) + " -- weft " +
                           train_args("--strategy multi_worker " + args, json);
    Result r = shell("timeout 300 " + std::string(WEFT_BINARY_DIR) + "/weft " + command);
    EXPECT_EQ(r.status, 0) << command << ": " << r.output;
    return r.status == 0 ? read_json(json) : nlohmann::json{};
  }
  fs::path dir_;
  int runs_ = 0;
};

TEST_F(MultiWorkerCli, DeterministicWeightsDoNotDependOnProcessesOrReplicas) {
  for (const char* model : {"mlp", "cnn"}) {
    std::string base = std::string("--model ") + model + " --epochs 1 --deterministic";
    nlohmann::json one = train(0, 1, base);
    ASSERT_FALSE(one.empty());
    for (auto [workers, replicas] : {std::pair{1, 2}, {2, 1}, {2, 2}, {4, 1}}) {
      nlohmann::json j = train(workers, replicas, base);
      EXPECT_EQ(j["strategy"], "multi_worker");
      EXPECT_EQ(j["workers"], workers);
      EXPECT_EQ(j["replicas"], workers * replicas);
      EXPECT_EQ(j["steps"], 16);
      EXPECT_EQ(j["weights_fingerprint"], one["weights_fingerprint"])
          << model << ": " << workers << " x " << replicas << " differs from one process";
    }
  }
}

TEST_F(MultiWorkerCli, ASigkilledWorkerIsNamedByTheOthersWithinSeconds) {
  // Two workers by hand (not under weft launch, which would stop the survivor itself): worker 1
  // is killed once training runs; worker 0 must exit non-zero, naming it, within 5 s.
  int port0 = 0, port1 = 0;
  {
    Result ports = shell(
        "python3 -c 'import socket\nfor _ in range(2):\n s=socket.socket(); s.bind((\"127.0.0.1\","
        "0)); print(s.getsockname()[1]); s.close()'");
    ASSERT_EQ(ports.status, 0) << ports.output;
    std::istringstream in(ports.output);
    in >> port0 >> port1;
  }
  auto tf_config = [&](int index) {
    return "TF_CONFIG='{\"cluster\": {\"worker\": [\"127.0.0.1:" + std::to_string(port0) +
           "\", \"127.0.0.1:" + std::to_string(port1) + "\"]}, \"task\": {\"type\": \"worker\", "
           "\"index\": " + std::to_string(index) + "}}' WEFT_CLUSTER_TOKEN=t0k3n ";
  };
  std::string weft = std::string(WEFT_BINARY_DIR) + "/weft ";
  std::string args = train_args("--strategy multi_worker --model mlp --epochs 100000", dir_ / "x.json");
  fs::path log0 = dir_ / "worker0.log";
  // Worker 0 in the background, timed by the shell; worker 1 (no `timeout` around it, so that
  // $! is its own pid) killed after 3 s of training.
  std::string script =
      "cd " + dir_.string() + "; (" + tf_config(0) + "timeout 120 " + weft + args + " > " +
      log0.string() + " 2>&1; echo $? > status0; date +%s.%N > ended0) & " + tf_config(1) + weft + args + " > worker1.log 2>&1 & pid1=$!; sleep 3; date +%s.%N > "
      "killed1; kill -9 $pid1; wait";
  Result r = shell(script);
  ASSERT_EQ(r.status, 0) << r.output;
  auto read = [&](const char* name) {
    std::ifstream in(dir_ / name);
    std::string s;
    std::getline(in, s);
    return s;
  };
  std::ifstream whole(log0);
  std::string log((std::istreambuf_iterator<char>(whole)), std::istreambuf_iterator<char>());
  EXPECT_NE(read("status0"), "0") << log;
  EXPECT_THAT(log, HasSubstr("task worker:1 failed")) << log;
  double waited = std::stod(read("ended0")) - std::stod(read("killed1"));
  EXPECT_LT(waited, 5.0) << log;
}

TEST_F(MultiWorkerCli, LaunchNamesTheFailingWorkerAndStopsTheOthers) {
  // Worker 1 is given a dataset directory that does not exist: it fails at start; the launcher
  // names it, stops worker 0 and exits with its status.
  {
    std::ofstream script(dir_ / "worker.sh");
    script << "case \"$TF_CONFIG\" in\n"
           << "  *'\"index\":1'*) d=/nonexistent ;;\n"
           << "  *) d=" << (dir_ / "data").string() << " ;;\n"
           << "esac\n"
           << "exec " << WEFT_BINARY_DIR << "/weft train --strategy multi_worker --quiet "
           << "--epochs 50 --dataset \"$d\"\n";
  }
  std::string script = "timeout 120 " + std::string(WEFT_BINARY_DIR) + "/weft launch -n 2 -- sh " +
                       (dir_ / "worker.sh").string();
  auto start = std::chrono::steady_clock::now();
  Result r = shell(script);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("weft launch: worker:1 (pid ")) << r.output;
  EXPECT_THAT(r.output, HasSubstr("exited with status 1; stopping the other workers")) << r.output;
  EXPECT_THAT(r.output, HasSubstr("[worker:1] weft: ")) << r.output;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60)) << r.output;
}

}  // namespace
