// `weft launch -n N -- weft train --strategy multi_worker` end to end, with real processes on
// 127.0.0.1 and small IDX datasets the test writes itself: --deterministic gives the same weights
// for 1 x 1, 1 x 2, 2 x 1, 2 x 2 and 4 x 1 (processes x replicas), MLP and CNN; a worker killed
// with SIGKILL, or one that fails, is named by the others, which exit non-zero within seconds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <tuple>

#include "cli_helpers.h"
#include "weft/distribute/cluster/local_ports.h"
#include "weft/testing/loopback_capture.h"

namespace {

using namespace weft_cli_test;
using testing::HasSubstr;

// `mpirun` of 2 ranks, every MPI call in pieces of at most `max_count` elements; leak checks off
// in the ranks (OpenMPI's components leak at MPI_Finalize, see UnderMpirunTheWorkersAreMpisRanks).
std::string mpirun_two_ranks(int max_count) {
  return "mpirun --oversubscribe -np 2 -x LSAN_OPTIONS=detect_leaks=0 -x WEFT_MPI_MAX_COUNT=" +
         std::to_string(max_count) + " " + (geteuid() == 0 ? "--allow-run-as-root " : "");
}

// The environment of worker `index` of the two-worker cluster at addresses a0 and a1.
std::string worker_env(const std::string& a0, const std::string& a1, int index,
                       const std::string& token = "t0k3n") {
  return "TF_CONFIG='{\"cluster\": {\"worker\": [\"" + a0 + "\", \"" + a1 +
         "\"]}, \"task\": {\"type\": \"worker\", \"index\": " + std::to_string(index) +
         "}}' WEFT_CLUSTER_TOKEN=" + token + " ";
}
// ... at the ports `ports` holds on 127.0.0.1.
std::string worker_env(const weft::distribute::ReservedLocalPorts& ports, int index,
                       const std::string& token = "t0k3n") {
  return worker_env(ports.address(0), ports.address(1), index, token);
}

class MultiWorkerCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) / ("multi_worker_cli_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    // 1000 examples in batches of 64: 15 full batches and a last one of 40, cut unevenly.
    data_ = dir_ / "data";
    write_dataset(data_, 1000, 200);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Without `quiet` the chief prints a line at the end of each epoch (kEpochLine).
  std::string train_args(const std::string& args, const fs::path& json, bool quiet = true) {
    return "train --dataset " + data_.string() + " --batch-size 64 --seed 5" +
           (quiet ? " --quiet" : "") + " --metrics-json " + json.string() + " " + args;
  }
  // Runs `<wrap(0)> weft <worker0_args>` and, after the shell commands `before1`, `<wrap(1)>
  // weft <worker1_args>` as the two workers of a cluster, each for at most 120 s, and expects
  // both to exit with status 0. `env(i)` is worker i's environment (default: its TF_CONFIG and
  // token); `wrap(i)` a command that runs the rest (default: none).
  void both_train(const std::string& worker0_args, const std::string& before1,
                  const std::string& worker1_args, std::function<std::string(int)> wrap = nullptr,
                  std::function<std::string(int)> env = nullptr) {
    weft::distribute::ReservedLocalPorts ports(2);
    if (!env) env = [&](int i) { return worker_env(ports, i); };
    if (!wrap) wrap = [](int) { return std::string(); };
    Result r = shell("cd " + dir_.string() + "; (" + env(0) + "timeout 120 " + wrap(0) + weft_ +
                     worker0_args + " > w0.log 2>&1; echo $? > status0) & " + before1 + env(1) +
                     "timeout 120 " + wrap(1) + weft_ + worker1_args +
                     " > w1.log 2>&1; echo $? > status1; wait");
    ASSERT_EQ(r.status, 0) << r.output;
    for (int w = 0; w < 2; ++w) {
      std::ifstream status(dir_ / ("status" + std::to_string(w)));
      std::ifstream log(dir_ / ("w" + std::to_string(w) + ".log"));
      std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
      int code = -1;
      status >> code;
      EXPECT_EQ(code, 0) << "worker " << w << ": " << text;
    }
  }
  const std::string weft_ = std::string(WEFT_BINARY_DIR) + "/weft ";
  // `weft launch -n workers [--replicas-per-worker r] -- weft train ...`, or a plain run when
  // workers is 0.
  nlohmann::json train(int workers, int replicas, const std::string& args) {
    fs::path json = dir_ / ("run_" + std::to_string(runs_++) + ".json");
    std::string command = workers == 0
                              ? train_args(args, json)
                              : "launch -n " + std::to_string(workers) + " --replicas-per-worker " +
                                    std::to_string(replicas) + " -- weft " +
                                    train_args("--strategy multi_worker " + args, json);
    Result r = shell("timeout 300 " + std::string(WEFT_BINARY_DIR) + "/weft " + command);
    EXPECT_EQ(r.status, 0) << command << ": " << r.output;
    return r.status == 0 ? read_json(json) : nlohmann::json{};
  }
  fs::path dir_;
  fs::path data_;  // train()'s dataset
  int runs_ = 0;
};

TEST_F(MultiWorkerCli, DeterministicWeightsDoNotDependOnProcessesOrReplicas) {
  // Determinism needs few steps: 193 examples, 3 full batches of 64 and a last one of 1 row,
  // which leaves every worker but the last without rows (the CNN's BatchNormalization records
  // updates of no weight there, and every worker makes the same reductions).
  data_ = dir_ / "small";
  write_dataset(data_, 193, 40);
  for (const char* model : {"mlp", "cnn"}) {
    std::string base = std::string("--model ") + model + " --epochs 1 --deterministic";
    nlohmann::json one = train(0, 1, base);
    ASSERT_FALSE(one.empty());
    for (auto [workers, replicas] : {std::pair{1, 2}, {2, 1}, {2, 2}, {4, 1}}) {
      nlohmann::json j = train(workers, replicas, base);
      EXPECT_EQ(j["strategy"], "multi_worker");
      EXPECT_EQ(j["workers"], workers);
      EXPECT_EQ(j["replicas"], workers * replicas);
      EXPECT_EQ(j["steps"], 4);
      EXPECT_EQ(j["weights_fingerprint"], one["weights_fingerprint"])
          << model << ": " << workers << " x " << replicas << " differs from one process";
    }
  }
  // Three workers train it too, but not under --deterministic: the sum across 3 workers cannot
  // follow the fixed tree, and every worker says so rather than differ from one process.
  nlohmann::json three = train(3, 1, "--model cnn --epochs 1");
  EXPECT_EQ(three["steps"], 4);
  EXPECT_EQ(three["workers"], 3);
  Result refused = shell("timeout 120 " + std::string(WEFT_BINARY_DIR) +
                         "/weft launch -n 3 -- weft " +
                         train_args("--strategy multi_worker --model mlp --deterministic",
                                    dir_ / "refused.json"));
  EXPECT_NE(refused.status, 0);
  EXPECT_THAT(refused.output,
              HasSubstr("InvalidArgument: fit: op determinism (--deterministic) gives one "
                        "replica's bits only when the replicas' shares split the fixed tree over "
                        "the micro-batches, and 3 replicas (3 workers x 1) with 8 micro-batches "
                        "do not. With 8 micro-batches, 1, 2, 4 or 8 replicas do"))
      << refused.output;
}

// predict, gather, reduce along an axis, ReplicaContext::all_gather and
// experimental_distribute_values_from_function in real processes: every worker gets the
// one-process results, all rows in the dataset's order, with global batches that leave some
// replicas without rows (tests/global_results_tool.cc).
TEST_F(MultiWorkerCli, GlobalResultsEqualTheOneProcessResultsOnEveryWorker) {
  const std::string tool = std::string(WEFT_BINARY_DIR) + "/tests/global_results_tool";
  fs::create_directories(dir_);
  Result alone = shell("timeout 60 " + tool + " " + (dir_ / "alone").string());
  ASSERT_EQ(alone.status, 0) << alone.output;
  nlohmann::json reference = read_json(dir_ / "alone.0.json");
  ASSERT_EQ(reference["predict"].size(), 18u);
  ASSERT_EQ(reference["gather_rows"].size(), 3u);  // batches of 4, 4 and 1 rows
  reference.erase("replicas");
  // Workers, replicas per worker, and whether mpirun starts them (MPI's ranks, every MPI call in
  // pieces of at most 2 elements) rather than weft launch.
  for (auto [workers, replicas, mpi] :
       {std::tuple{2, 1, false}, {3, 1, false}, {2, 2, false}, {2, 1, true}}) {
    std::string prefix = (dir_ / ("n" + std::to_string(workers) + "x" + std::to_string(replicas) +
                                  (mpi ? "mpi" : "")))
                             .string();
    Result r = shell(
        mpi ? "timeout 120 " + mpirun_two_ranks(/*max_count=*/2) + tool + " " + prefix
            : "timeout 120 " + std::string(WEFT_BINARY_DIR) + "/weft launch -n " +
                  std::to_string(workers) + " --replicas-per-worker " + std::to_string(replicas) +
                  " -- " + tool + " " + prefix);
    ASSERT_EQ(r.status, 0) << r.output;
    for (int w = 0; w < workers; ++w) {
      SCOPED_TRACE(std::to_string(workers) + " x " + std::to_string(replicas) + ", worker " +
                   std::to_string(w));
      nlohmann::json got = read_json(prefix + "." + std::to_string(w) + ".json");
      EXPECT_EQ(got["replicas"], workers * replicas);
      std::vector<float> ids;
      for (int g = 0; g < workers * replicas; ++g) ids.push_back(float(g));
      EXPECT_EQ(got["replica_ids"], nlohmann::json(ids));
      got.erase("replicas");
      got.erase("replica_ids");
      nlohmann::json expected = reference;
      expected.erase("replica_ids");
      for (const auto& [key, value] : expected.items()) EXPECT_EQ(got[key], value) << key;
    }
  }
}

TEST_F(MultiWorkerCli, GradientPacksAllReducedDuringBackwardGiveTheSameWeights) {
  // Without --deterministic (which sums micro-batches first, after the backward pass), the
  // gradients go out in packs as the backward pass finishes them: the same sums, the same bits.
  for (auto [workers, replicas] : {std::pair{2, 1}, {2, 2}}) {
    std::string base = "--model mlp --epochs 1";
    nlohmann::json off = train(workers, replicas, base + " --overlap-all-reduce off");
    nlohmann::json on = train(workers, replicas, base + " --bytes-per-pack 4096");
    ASSERT_FALSE(off.empty() || on.empty());
    EXPECT_EQ(on["weights_fingerprint"], off["weights_fingerprint"])
        << workers << " x " << replicas;
    EXPECT_EQ(on["test_accuracy"], off["test_accuracy"]);
  }
}

// What `weft train` (without --quiet) prints on the chief at the end of each epoch, flushed:
// "16/16 - 0s - 5120 examples/s - loss: ...". Seen in a worker's log, it says that every worker
// of the cluster is training (each step meets all of them).
constexpr const char* kEpochLine = "examples/s";

// A shell loop that waits until `log` holds `epochs` epoch lines (kEpochLine), while the shell
// test `alive` holds, for at most 60 s: the readiness signal before a test signals a worker.
std::string wait_for_epochs(const std::string& log, int epochs, const std::string& alive) {
  return "n=0; while [ $(cat " + log + " 2>/dev/null | grep -c '" + kEpochLine + "') -lt " +
         std::to_string(epochs) + " ] && " + alive +
         " && [ $n -lt 1200 ]; do sleep 0.05; n=$((n + 1)); done; ";
}

// Two workers started by hand (not under weft launch, which would stop the survivor itself), at
// ports this process holds for them until they end (local_ports.h). Worker 1 runs
// `worker1_args`; `signal` (none: nullptr) is sent to it once worker 0's log shows `epochs` epoch
// lines (kEpochLine; its args without --quiet), at most 60 s. Returns worker 0's exit status, its
// output, and how long after the signal it exited.
struct Outcome {
  std::string status;
  std::string log;
  double seconds_after_signal;
};

Outcome two_workers(const fs::path& dir, const std::string& worker0_args,
                    const std::string& worker1_args, const char* signal, int epochs,
                    const std::string& token = "t0k3n") {
  weft::distribute::ReservedLocalPorts ports(2);
  auto tf_config = [&](int index) { return worker_env(ports, index, token); };
  std::string weft = std::string(WEFT_BINARY_DIR) + "/weft ";
  // Worker 0 in the background, timed by the shell; worker 1 without `timeout` around it, so
  // that $! is its own pid.
  std::string script =
      "cd " + dir.string() + "; (" + tf_config(0) + "timeout 120 " + weft + worker0_args +
      " > worker0.log 2>&1; echo $? > status0; date +%s.%N > ended0) & " + tf_config(1) + weft +
      worker1_args + " > worker1.log 2>&1 & pid1=$!; " +
      wait_for_epochs("worker0.log", epochs, "[ ! -e ended0 ]") + "date +%s.%N > signalled1; " +
      (signal ? std::string("kill -") + signal + " $pid1; " : "") +
      "while [ ! -e ended0 ]; do sleep 0.05; done; kill -9 $pid1; wait";
  Result r = shell(script);
  EXPECT_EQ(r.status, 0) << r.output;
  auto read = [&](const char* name) {
    std::ifstream in(dir / name);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text;
  };
  std::string ended = read("ended0"), signalled = read("signalled1");
  double after = ended.empty() || signalled.empty() ? 1e9 : std::stod(ended) - std::stod(signalled);
  std::string status = read("status0");
  if (!status.empty() && status.back() == '\n') status.pop_back();
  return {status, read("worker0.log"), after};
}

// Pods of a cluster start minutes apart: each task waits for the others up to
// --startup-timeout (default 10 minutes), not the collectives' timeout. Worker 1 starts 5 s
// after the chief, whose collective timeout is 2 s (its rendezvous used to give up then): both
// train. And a task that never comes is named once the start-up timeout passes.
TEST_F(MultiWorkerCli, AWorkerStartedLateJoinsAndTrains) {
  const std::string args = "--strategy multi_worker --model mlp --epochs 1 --collective-timeout 2";
  both_train(train_args(args, dir_ / "w0.json"), "sleep 5; ", train_args(args, dir_ / "w1.json"));
  EXPECT_EQ(read_json(dir_ / "w0.json")["workers"], 2);  // the chief writes it
  // Worker 1 never starts: the chief gives up after its start-up timeout, naming it.
  weft::distribute::ReservedLocalPorts ports(2);
  auto start = std::chrono::steady_clock::now();
  Result alone = shell(worker_env(ports, 0) + "timeout 120 " + weft_ +
                       train_args(args + " --startup-timeout 2", dir_ / "x.json"));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(alone.status, 0);
  EXPECT_THAT(alone.output, HasSubstr("worker:1")) << alone.output;
  EXPECT_LT(seconds, 30) << alone.output;
}

// Containers with host networking share the host's name and kernel but not /dev/shm: worker 1
// runs in a mount namespace of its own with a fresh tmpfs on /dev/shm. The workers find that
// they cannot map each other's shared memory, agree on it, and train over TCP; the same job
// without the namespace uses shared memory.
TEST_F(MultiWorkerCli, WorkersWithoutACommonDevShmTrainOverTcp) {
  if (geteuid() != 0 && std::getenv("CI") == nullptr) {
    GTEST_SKIP() << "a mount namespace with its own /dev/shm needs root";
  }
  const std::string args = "--strategy multi_worker --model mlp --epochs 1";
  both_train(train_args(args, dir_ / "apart.json"), "", train_args(args, dir_ / "w1.json"),
             [](int worker) -> std::string {
               if (worker == 0) return "";
               return "unshare --mount --propagation private sh -c 'mount -t tmpfs -o size=128m "
                      "weft-shm /dev/shm && exec \"$0\" \"$@\"' ";
             });
  nlohmann::json apart = read_json(dir_ / "apart.json");
  EXPECT_EQ(apart["transport"], "tcp");
  EXPECT_GT(apart["test_accuracy"].get<double>(), 0.6);
  both_train(train_args(args, dir_ / "together.json"), "", train_args(args, dir_ / "w1.json"));
  nlohmann::json together = read_json(dir_ / "together.json");
  EXPECT_EQ(together["transport"], "shared_memory");
  EXPECT_EQ(together["workers"], 2);
}

// Two hosts, emulated (scripts/two-hosts): network namespaces joined by a veth pair shaped to
// 1 Gbit/s, each worker with its own host name and /dev/shm. The job trains across the link:
// AUTO takes TCP (not shared memory), and the gradients cross the veth.
TEST_F(MultiWorkerCli, TwoEmulatedHostsTrainAcrossTheirLink) {
  if (geteuid() != 0 && std::getenv("CI") == nullptr) {
    GTEST_SKIP() << "network namespaces need root";
  }
  const std::string id = "t" + std::to_string(getpid());
  const std::string hosts = std::string(WEFT_SOURCE_DIR) + "/scripts/two-hosts ";
  struct Down {
    std::string command;
    ~Down() { shell(command); }
  } down{hosts + "down " + id};
  Result up = shell(hosts + "up " + id + " 1gbit");
  ASSERT_EQ(up.status, 0) << up.output;
  auto env = [](int worker) {
    return worker_env("10.231.0.1:23456", "10.231.0.2:23456", worker);
  };
  const std::string args = "--strategy multi_worker --model mlp --epochs 1";
  both_train(train_args(args, dir_ / "hosts.json"), "", train_args(args, dir_ / "w1.json"),
             [&](int worker) { return hosts + "run " + id + " " + std::to_string(worker) + " "; },
             env);
  nlohmann::json j = read_json(dir_ / "hosts.json");
  EXPECT_EQ(j["workers"], 2);
  EXPECT_EQ(j["transport"], "tcp");
  EXPECT_GT(j["test_accuracy"].get<double>(), 0.6);
  Result sent = shell("ip netns exec weft-" + id + "-1 cat /sys/class/net/wv" + id +
                      "-1/statistics/tx_bytes");
  ASSERT_EQ(sent.status, 0) << sent.output;
  EXPECT_GT(std::stoll(sent.output), 1 << 20) << "worker 1's gradients did not cross the link";
}

// srun's environment without TF_CONFIG: the step's tasks are the workers (SlurmClusterResolver),
// both on this node, the chief's coordination service at WEFT_SLURM_PORT_BASE.
TEST_F(MultiWorkerCli, UnderSrunTheStepsTasksAreTheWorkers) {
  weft::distribute::ReservedLocalPorts base(1);
  auto srun_env = [&](int rank) {
    return "SLURM_PROCID=" + std::to_string(rank) + " SLURM_STEP_NUM_TASKS=2 SLURM_NTASKS=2 "
           "SLURM_STEP_NODELIST=127.0.0.1 SLURM_STEP_TASKS_PER_NODE=2 WEFT_SLURM_PORT_BASE=" +
           std::to_string(base.ports()[0]) + " WEFT_CLUSTER_TOKEN=t0k3n ";
  };
  const std::string args = "--strategy multi_worker --model mlp --epochs 1";
  both_train(train_args(args, dir_ / "srun.json"), "", train_args(args, dir_ / "w1.json"), nullptr,
             srun_env);
  nlohmann::json j = read_json(dir_ / "srun.json");
  EXPECT_EQ(j["workers"], 2);
  EXPECT_EQ(j["transport"], "shared_memory");
  EXPECT_GT(j["test_accuracy"].get<double>(), 0.6);
}

TEST_F(MultiWorkerCli, UnderMpirunTheWorkersAreMpisRanks) {
  // Built with MPI (the default) and run by mpirun without TF_CONFIG: MPI's ranks are the workers.
  std::string base = "--model mlp --epochs 1 --deterministic";
  nlohmann::json one = train(0, 1, base);
  fs::path json = dir_ / "mpirun.json";
  // OpenMPI's components leak at MPI_Finalize and are unloaded, so LeakSanitizer (in the
  // sanitizer build) cannot even name them: leak checks are off in the MPI ranks only. Every
  // MPI call carries at most 100 000 elements here, so the first layer's broadcast and
  // gradients (548 800) go in pieces, as buffers over 2^31 elements do.
  Result r = shell("timeout 300 " + mpirun_two_ranks(/*max_count=*/100000) + WEFT_BINARY_DIR +
                   "/weft " + train_args("--strategy multi_worker " + base, json));
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json j = read_json(json);
  EXPECT_EQ(j["workers"], 2);
  EXPECT_EQ(j["weights_fingerprint"], one["weights_fingerprint"]);
}

TEST_F(MultiWorkerCli, BenchAllreduceComparesEveryAlgorithmAndMpi) {
  // Under mpirun (see UnderMpirunTheWorkersAreMpisRanks for the leak checks).
  Result r = shell("LSAN_OPTIONS=detect_leaks=0 timeout 300 " + std::string(WEFT_BINARY_DIR) +
                   "/weft bench allreduce --json --max-bytes 65536 --output " +
                   (dir_ / "rows.json").string());
  ASSERT_EQ(r.status, 0) << r.output;
  std::ifstream file(dir_ / "rows.json");
  nlohmann::json rows = nlohmann::json::parse(file);
  std::set<std::string> seen;
  for (const auto& row : rows) {
    seen.insert(row["implementation"].get<std::string>());
    EXPECT_EQ(row["ranks"], 2);
    EXPECT_GT(row["median_seconds"].get<double>(), 0) << row.dump();
  }
  EXPECT_EQ(rows.size(), 3 * seen.size()) << r.output;  // 4, 16 and 64 KiB
  for (const char* name : {"AUTO", "RECURSIVE_DOUBLING", "RING", "SHARED_MEMORY", "GLOO_RING",
                           "GLOO_HALVING_DOUBLING", "MPI_Allreduce"}) {
    EXPECT_TRUE(seen.count(name)) << name << " missing: " << r.output;
  }
  // A file it cannot write fails before any worker starts.
  r = shell(std::string(WEFT_BINARY_DIR) + "/weft bench allreduce --output " +
            (dir_ / "no" / "such" / "rows.json").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("weft bench: cannot write " +
                                  (dir_ / "no" / "such" / "rows.json").string() +
                                  ": No such file or directory"));
}

TEST_F(MultiWorkerCli, ASigkilledWorkerIsNamedByTheOthersWithinSeconds) {
  std::string args = train_args("--strategy multi_worker --model mlp --epochs 100000",
                                dir_ / "x.json", /*quiet=*/false);
  Outcome o = two_workers(dir_, args, args, "9", /*epochs=*/1);
  EXPECT_THAT(o.log, HasSubstr(kEpochLine)) << "killed before training: " << o.log;
  EXPECT_NE(o.status, "0") << o.log;
  EXPECT_THAT(o.log, HasSubstr("task worker:1 failed: its connection to the coordination service "
                               "broke"))
      << o.log;
  EXPECT_LT(o.seconds_after_signal, 5.0) << o.log;
}

TEST_F(MultiWorkerCli, AStoppedWorkerIsNamedWhenTheCollectiveTimeoutPasses) {
  std::string args =
      train_args("--strategy multi_worker --model mlp --epochs 100000 --collective-timeout 3",
                 dir_ / "x.json", /*quiet=*/false);
  Outcome o = two_workers(dir_, args, args, "STOP", /*epochs=*/1);
  EXPECT_THAT(o.log, HasSubstr(kEpochLine)) << "stopped before training: " << o.log;
  EXPECT_NE(o.status, "0") << o.log;
  EXPECT_THAT(o.log, HasSubstr("timed out waiting for worker:1 (rank 1)")) << o.log;
  EXPECT_LT(o.seconds_after_signal, 3.0 + 2.0) << o.log;
  EXPECT_GT(o.seconds_after_signal, 2.5) << o.log;
}

TEST_F(MultiWorkerCli, WorkersRunningDifferentModelsFailNamingBothShapes) {
  Outcome o =
      two_workers(dir_, train_args("--strategy multi_worker --model mlp", dir_ / "a.json"),
                  train_args("--strategy multi_worker --model cnn", dir_ / "b.json"), nullptr, 0);
  EXPECT_NE(o.status, "0") << o.log;
  // The first variable each creates is broadcast from the chief: a kernel of 784 x 700 against
  // the first convolution's 3 x 3 x 1 x 32.
  EXPECT_THAT(o.log, HasSubstr("collectives disagree: rank 0 (worker:0) called broadcast #1 of "
                               "float32 [784, 700] from root 0, rank 1 (worker:1) called broadcast "
                               "#1 of float32 [3, 3, 1, 32] from root 0"))
      << o.log;
}

TEST_F(MultiWorkerCli, TrainsWithMutualTlsOnTheControlPlane) {
  std::string d = dir_.string();
  Result certs = shell(
      "cd " + d +
      " && ( openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=ca "
      "-keyout ca.key -out ca.pem && openssl req -newkey rsa:2048 -nodes -subj /CN=task "
      "-keyout task.key -out task.csr && printf 'subjectAltName=IP:127.0.0.1\\n' > task.ext && "
      "openssl x509 -req -in task.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
      "-extfile task.ext -out task.pem ) > openssl.log 2>&1");
  ASSERT_EQ(certs.status, 0) << certs.output;
  std::string tls =
      " --tls-cert " + d + "/task.pem --tls-key " + d + "/task.key --tls-ca " + d + "/ca.pem";
  // Everything on the loopback interface while the job runs: the token never crosses it (TLS
  // hides it on the control plane, the collectives' handshake proves it without sending it),
  // while worker 1's hello to the chief (the magic "weft" as it lies in memory, then rank 1)
  // does, to a port of --data-ports.
  // The cluster runs in a network namespace of this test's own: ctest runs unit tests beside it
  // whose collectives send the same hello on the machine's loopback.
  const std::string token = "a-token-to-look-for-" + std::to_string(getpid()) + "-on-the-wire";
  if (geteuid() != 0 && std::getenv("CI") == nullptr) {
    GTEST_SKIP() << "capturing loopback traffic in a namespace of its own needs root";
  }
  ASSERT_EQ(weft::testing::use_private_loopback(), "");
  weft::testing::LoopbackCapture wire({token, std::string("tfew\x01\0\0\0", 8)});
  ASSERT_EQ(wire.error(), "");
  const std::string ports = " --data-ports 47000-47099";
  Outcome o = two_workers(
      dir_, train_args("--strategy multi_worker --model mlp" + tls + ports, dir_ / "tls.json"),
      train_args("--strategy multi_worker --model mlp" + tls + ports, dir_ / "tls1.json"),
      nullptr, 0, token);
  wire.stop();
  EXPECT_EQ(o.status, "0") << o.log;
  nlohmann::json j = read_json(dir_ / "tls.json");
  EXPECT_EQ(j["workers"], 2);
  EXPECT_EQ(wire.found(0), 0) << "the cluster token crossed the wire";
  EXPECT_GT(wire.payload_bytes(), 1u << 20);  // the gradients, at least
  EXPECT_EQ(wire.found(1), 1) << "worker 1's hello to the chief";
  for (int port : wire.ports(1)) {
    EXPECT_TRUE(port >= 47000 && port <= 47099) << "the chief listened at " << port;
  }
  EXPECT_EQ(wire.dropped(), 0u) << "the capture missed packets: the token check is incomplete";

  // The same cluster with worker 1 speaking plain text, then TLS without a certificate of its
  // own: the chief's service refuses both, so worker 1 never registers (it keeps retrying, silent,
  // until it is killed) and the chief gives up waiting for it to join the collectives after its
  // --startup-timeout. Had the service let either in, they would have trained as above.
  std::string chief_args = "--strategy multi_worker --model mlp --startup-timeout 3" + tls;
  for (const auto& [name, worker1_tls] :
       {std::pair<std::string, std::string>{"plain_text", ""},
        std::pair<std::string, std::string>{"no_client_cert", " --tls-ca " + d + "/ca.pem"}}) {
    fs::path run = dir_ / name;  // its own status and log files, apart from the run above's
    fs::create_directories(run);
    Outcome refused = two_workers(
        run, train_args(chief_args, run / "chief.json"),
        train_args("--strategy multi_worker --model mlp" + worker1_tls, run / "worker1.json"),
        nullptr, 0);
    EXPECT_EQ(refused.status, "1") << name << ": " << refused.log;
    EXPECT_THAT(refused.log, HasSubstr("weft: Unavailable: collectives: rank 0 waited 3000 ms "
                                       "for rank 1 to connect"))
        << name << ": " << refused.log;
    EXPECT_FALSE(fs::exists(run / "chief.json")) << name;
    EXPECT_FALSE(fs::exists(run / "worker1.json")) << name;
    std::ifstream in(run / "worker1.log");
    std::string worker1_log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_THAT(worker1_log, testing::Not(HasSubstr("weft: "))) << name << ": " << worker1_log;
  }
}

TEST_F(MultiWorkerCli, LaunchForwardsSigtermToItsWorkers) {
  // SIGTERM once the chief has finished an epoch (both workers are training), then the
  // launcher's exit status and the times it was signalled and exited.
  std::string script =
      "cd " + dir_.string() + "; " + WEFT_BINARY_DIR + "/weft launch -n 2 -- weft " +
      train_args("--strategy multi_worker --epochs 100000", dir_ / "x.json", /*quiet=*/false) +
      " > launch.log 2>&1 & pid=$!; " +
      wait_for_epochs("launch.log", 1, "kill -0 $pid 2>/dev/null") +
      "signalled=$(date +%s.%N); kill -TERM $pid; wait $pid; echo $? $signalled $(date +%s.%N)";
  Result r = shell(script);
  std::ifstream in(dir_ / "launch.log");
  std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int status = -1;
  double signalled = 0, ended = 1e9;
  std::istringstream(r.output) >> status >> signalled >> ended;
  EXPECT_THAT(log, HasSubstr(kEpochLine)) << "signalled before training: " << log;
  EXPECT_EQ(status, 143) << r.output << log;  // 128 + SIGTERM: the workers ended by the signal
  EXPECT_THAT(log, HasSubstr("was killed by signal 15")) << log;
  EXPECT_LT(ended - signalled, 20.0) << log;
}

TEST_F(MultiWorkerCli, LaunchRestartsTheClusterUpToMaxRestarts) {
  // Worker 1 fails at start (no such dataset) on its first `failures` starts, then trains.
  auto run = [&](int failures, int max_restarts) {
    fs::remove(dir_ / "starts");
    std::ofstream script(dir_ / "worker.sh");
    script << "d=" << (dir_ / "data").string() << "\n"
           << "case \"$TF_CONFIG\" in *'\"index\":1'*)\n"
           << "  echo x >> " << (dir_ / "starts").string() << "\n"
           << "  [ $(wc -l < " << (dir_ / "starts").string() << ") -le " << failures
           << " ] && d=/nonexistent ;;\n"
           << "esac\n"
           << "exec " << WEFT_BINARY_DIR << "/weft train --strategy multi_worker --quiet "
           << "--epochs 1 --batch-size 64 --dataset \"$d\"\n";
    script.close();
    return shell("timeout 120 " + std::string(WEFT_BINARY_DIR) + "/weft launch -n 2 " +
                 "--max-restarts " + std::to_string(max_restarts) + " -- sh " +
                 (dir_ / "worker.sh").string());
  };
  Result once = run(1, 2);
  EXPECT_EQ(once.status, 0) << once.output;
  EXPECT_THAT(once.output, HasSubstr("exited with status 1; restarting every worker (restart 1 "
                                     "of 2)"))
      << once.output;
  EXPECT_THAT(once.output, testing::Not(HasSubstr("restart 2 of 2"))) << once.output;
  Result always = run(100, 2);
  EXPECT_EQ(always.status, 1) << always.output;
  EXPECT_THAT(always.output, HasSubstr("restart 2 of 2")) << always.output;
  EXPECT_THAT(always.output,
              testing::ContainsRegex("weft launch: worker:1 \\(pid [0-9]+\\) exited with status 1; "
                                     "the cluster was restarted 2 times \\(--max-restarts 2\\), "
                                     "giving up"))
      << always.output;
}

TEST_F(MultiWorkerCli, AWorkerKilledMidEpochIsRestartedAndTheJobResumesFromItsBackup) {
  // 1024 examples in batches of 64, two epochs: 32 steps, backed up every 10. On its first
  // start worker 1 is killed (SIGKILL) as soon as the chief has committed a backup; weft launch
  // restarts both, and they resume from the newest backup to the uninterrupted run's weights.
  const int examples = 1024;
  write_dataset(dir_ / "big", examples, 200);
  std::string args =
      "train --strategy multi_worker --deterministic --quiet --epochs 2 "
      "--batch-size 64 --seed 5 --dataset " +
      (dir_ / "big").string();
  std::string weft = std::string(WEFT_BINARY_DIR) + "/weft ";
  Result plain = shell("timeout 300 " + weft + "launch -n 2 -- " + weft + args +
                       " --metrics-json " + (dir_ / "plain.json").string());
  ASSERT_EQ(plain.status, 0) << plain.output;
  const fs::path backup = dir_ / "backup";
  {
    std::ofstream script(dir_ / "worker.sh");
    script << "args='" << args << " --backup-dir " << backup.string()
           << " --save-freq 10 --metrics-json " << (dir_ / "resumed.json").string() << "'\n"
           << "case \"$TF_CONFIG\" in *'\"index\":1'*)\n"
           << "  if [ ! -e " << (dir_ / "killed").string() << " ]; then\n"
           << "    touch " << (dir_ / "killed").string() << "\n"
           << "    " << weft << "$args & pid=$!\n"
           << "    while [ ! -e " << (backup / "checkpoint").string()
           << " ] && kill -0 $pid 2>/dev/null; do sleep 0.005; done\n"
           << "    kill -9 $pid; wait $pid; exit $?\n"
           << "  fi ;;\n"
           << "esac\n"
           << "exec " << weft << "$args\n";
  }
  Result r = shell("timeout 300 " + weft + "launch -n 2 --max-restarts 1 -- sh " +
                   (dir_ / "worker.sh").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("weft launch: worker:1 (pid ")) << r.output;
  EXPECT_THAT(r.output, HasSubstr("exited with status 137; restarting every worker (restart 1 of "
                                  "1)"))
      << r.output;
  EXPECT_THAT(r.output, HasSubstr("[worker:0] weft: restored backup " + backup.string()))
      << r.output;
  EXPECT_EQ(read_json(dir_ / "resumed.json")["weights_fingerprint"],
            read_json(dir_ / "plain.json")["weights_fingerprint"]);
  // No example trained twice or skipped: two epochs of 1024, over both starts.
  EXPECT_EQ(read_json(dir_ / "plain.json")["examples_trained"], 2 * examples);
  EXPECT_EQ(read_json(dir_ / "resumed.json")["examples_trained"], 2 * examples);
  EXPECT_FALSE(fs::exists(backup)) << "the backup outlived the completed job";
}

TEST_F(MultiWorkerCli, SigtermBacksUpAndTheJobResumesOnAnyNumberOfWorkers) {
  // 32 steps backed up every 10. The first run gets SIGTERM (to weft launch, which forwards it,
  // or to the single process) once a backup exists: it backs up the step it finished and exits
  // with status 75. The second run, with 2 workers or 1, resumes there and ends with the
  // uninterrupted run's weights (--deterministic gives the same bits on any cluster size).
  const int examples = 1024;
  write_dataset(dir_ / "big", examples, 200);
  const std::string weft = std::string(WEFT_BINARY_DIR) + "/weft ";
  const fs::path backup = dir_ / "backup";
  auto command = [&](int workers, const std::string& json) {
    std::string train = weft +
                        "train --deterministic --quiet --epochs 2 --batch-size 64 "
                        "--seed 5 --dataset " +
                        (dir_ / "big").string() + " --backup-dir " + backup.string() +
                        " --save-freq 10 --metrics-json " + (dir_ / json).string();
    return workers == 1 ? train : weft + "launch -n 2 -- " + train + " --strategy multi_worker";
  };
  Result plain = shell("timeout 300 " + command(1, "plain.json"));
  ASSERT_EQ(plain.status, 0) << plain.output;
  const auto fingerprint = read_json(dir_ / "plain.json")["weights_fingerprint"];
  for (auto [first, second] : {std::pair{2, 2}, {2, 1}, {1, 2}}) {
    SCOPED_TRACE(std::to_string(first) + " then " + std::to_string(second) + " workers");
    fs::remove_all(backup);
    fs::remove(dir_ / "status");
    Result stopped =
        shell("timeout 300 sh -c '" + command(first, "stopped.json") + " > " +
              (dir_ / "stopped.log").string() + " 2>&1 & pid=$!; while [ ! -e " +
              (backup / "checkpoint").string() +
              " ] && kill -0 $pid 2>/dev/null; do sleep 0.005; done; kill -TERM $pid; wait $pid; "
              "echo $? > " +
              (dir_ / "status").string() + "'; cat " + (dir_ / "stopped.log").string() + " " +
              (dir_ / "status").string());
    EXPECT_THAT(stopped.output, testing::EndsWith("75\n")) << stopped.output;
    EXPECT_THAT(stopped.output, HasSubstr("weft: preempted (SIGTERM): backed up epoch "))
        << stopped.output;
    EXPECT_FALSE(fs::exists(dir_ / "stopped.json")) << "a preempted run wrote its metrics";
    Result resumed = shell("timeout 300 " + command(second, "resumed.json"));
    ASSERT_EQ(resumed.status, 0) << resumed.output;
    EXPECT_THAT(resumed.output, HasSubstr("weft: restored backup " + backup.string()))
        << resumed.output;
    EXPECT_EQ(read_json(dir_ / "resumed.json")["weights_fingerprint"], fingerprint);
    EXPECT_EQ(read_json(dir_ / "resumed.json")["examples_trained"], 2 * examples);
    EXPECT_FALSE(fs::exists(backup));
  }
}

// The launcher's workers do not outlive it: when it cannot start one (here: the second fork
// fails, user nobody being allowed two processes) it stops those it started, and when it is
// killed (SIGKILL: no handler runs) the kernel kills them (PR_SET_PDEATHSIG).
TEST_F(MultiWorkerCli, LaunchedWorkersDoNotOutliveTheLauncher) {
  const std::string weft = std::string(WEFT_BINARY_DIR) + "/weft";
  Result missing = shell(weft + " launch -n 2 -- /nonexistent/program");
  EXPECT_EQ(missing.status, 1);
  EXPECT_THAT(missing.output, HasSubstr("weft: InvalidArgument: weft launch: cannot start "
                                        "/nonexistent/program as worker:0: No such file or "
                                        "directory"));
  if (geteuid() == 0) {  // (as another user, the test cannot become nobody)
    // (Processes of nobody's already running count towards the limit, and are left alone.)
    const std::string running = "$(ps -L -u nobody --no-headers -o stat= | grep -cv '^Z')";
    Result nobody = shell("n=$(ps -L -u nobody --no-headers | wc -l); before=" + running +
                          "; cd /tmp && timeout 60 setpriv --reuid=nobody --regid=nogroup "
                          "--clear-groups prlimit --nproc=$((n + 2)) " + weft +
                          " launch -n 2 -- sleep 30 2>&1; echo status $?; echo $((" + running +
                          " - before))");
    EXPECT_THAT(nobody.output, HasSubstr("weft: Unavailable: weft launch: cannot start sleep as "
                                         "worker:1: Resource temporarily unavailable; stopped "
                                         "worker:0\nstatus 1\n0\n"))
        << nobody.output;
  }
  // Every worker of a launcher killed with SIGKILL ends (a zombie, or reaped) within 5 s.
  Result orphans = shell(
      weft + " launch -n 2 -- sleep 60 & l=$!; for i in $(seq 100); do "
      "[ $(pgrep -P $l | wc -l) -ge 2 ] && break; sleep 0.1; done; kids=$(pgrep -P $l); "
      "echo workers $(echo $kids | wc -w); kill -9 $l; for i in $(seq 50); do alive=0; "
      "for k in $kids; do ps -o stat= -p $k | grep -qv '^Z' && alive=$((alive + 1)); done; "
      "[ $alive -eq 0 ] && break; sleep 0.1; done; echo alive $alive");
  EXPECT_THAT(orphans.output, HasSubstr("workers 2\n")) << orphans.output;
  EXPECT_THAT(orphans.output, HasSubstr("alive 0\n")) << orphans.output;
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
  EXPECT_THAT(r.output, HasSubstr("[worker:1] weft: FailedPrecondition: Fashion-MNIST directory "
                                  "/nonexistent does not exist"))
      << r.output;
  // worker 0 heard of it from the cluster, with worker 1's own message (unless the launcher
  // stopped it first).
  if (r.output.find("[worker:0] weft:") != std::string::npos) {
    EXPECT_THAT(r.output, HasSubstr("[worker:0] weft: Unavailable: task worker:1 failed: "
                                    "FailedPrecondition: Fashion-MNIST directory /nonexistent"))
        << r.output;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60)) << r.output;
}

}  // namespace
