// TensorFlow's parameter-server fault-tolerance scenarios (fault_tolerance_test_base.py), with
// real processes: this test is the chief (its ParameterServerStrategy and ClusterCoordinator),
// and each worker and ps task is a fault_tolerance_task process on 127.0.0.1, which a test kills
// with SIGKILL and starts again on the same address. The model and functions are TF's
// (fault_tolerance_model.h). Where TF asserts "at least N iterations" (a closure may run twice),
// these assert exactly N: a closure's updates are applied only at its commit, so a run cut short
// by a killed worker adds nothing. Where TF's scenario runs a function on a worker device
// directly, which weft does not offer, the function is scheduled instead; TF's variant that
// passes a dataset rather than a dataset function has none here (a dataset cannot travel).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fault_tolerance_model.h"
#include "weft/distribute/cluster/local_ports.h"
#include "weft/testing/ps_cluster.h"

extern char** environ;

namespace {

namespace ft = fault_tolerance;
namespace fs = std::filesystem;
namespace dist = weft::distribute;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;

// Waits until `done` holds, at most `timeout`; whether it did.
bool wait_until(const std::function<bool()>& done, milliseconds timeout = seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

// The names of this process's threads (/proc/self/task/*/comm).
std::vector<std::string> thread_names() {
  std::vector<std::string> names;
  for (const auto& t : fs::directory_iterator("/proc/self/task")) {
    std::string name;
    std::getline(std::ifstream(t.path() / "comm"), name);
    names.push_back(name);
  }
  return names;
}

long count_named(const std::string& name) {
  const std::vector<std::string> names = thread_names();
  return std::count(names.begin(), names.end(), name);
}

// A thrown error's message and whether it is of type E.
template <typename E>
std::optional<std::string> error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

class FaultTolerance : public ::testing::Test {
 protected:
  // A cluster of `workers` and `ps` tasks, every task started and met; its coordinator gives a
  // lost worker `recovery` to come back.
  void start(int workers, int ps, milliseconds recovery = seconds(60)) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("fault_tolerance_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    workers_ = workers;
    ps_ = ps;
    ports_.emplace(1 + workers + ps);
    for (int i = 0; i < workers; ++i) start_task("worker:" + std::to_string(i));
    for (int i = 0; i < ps; ++i) start_task("ps:" + std::to_string(i));
    strategy_.emplace(weft::testing::ps_strategy(*ports_, "chief:0", workers, ps, ft::options()));
    model_.emplace(*strategy_);
    fns_ = ft::register_functions(*model_, dir_);
    dist::ClusterCoordinatorOptions options;
    options.closure_timeout = seconds(120);
    options.worker_recovery_timeout = recovery;
    coordinator_.emplace(*strategy_, options);
    it_ = coordinator_->create_per_worker_dataset(fns_.dataset_fn);
    it2_ = coordinator_->create_per_worker_dataset(fns_.dataset_fn);
    // Every task has built its model (a task still reading its variables from a ps task that
    // a test then restarts would wait for them until the chief is done).
    for (const auto& entry : pids_) {  // (Clang 14 captures no structured binding)
      const pid_t pid = entry.second;
      ASSERT_TRUE(wait_until([&] { return fs::exists(ft::ready_marker(dir_, pid)); }, seconds(60)))
          << entry.first << " did not get ready";
    }
  }

  void TearDown() override {
    stop_looping();
    coordinator_.reset();
    strategy_.reset();  // the chief is done: its tasks' join() returns
    for (const auto& [task, running] : pids_) {
      const pid_t pid = running;  // (Clang 14 captures no structured binding)
      if (pid <= 0) continue;
      int status = 0;
      if (!wait_until([&] { return waitpid(pid, &status, WNOHANG) == pid; }, seconds(20))) {
        std::stringstream log;
        log << std::ifstream(dir_ / (task + ".log")).rdbuf();
        ADD_FAILURE() << task << " (pid " << pid << ") did not end with the chief: killed; its "
                      << "output:\n"
                      << log.str();
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
      }
    }
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Starts task `task` ("worker:0") as a process, its output appended to DIR/TASK.log.
  void start_task(const std::string& task) {
    const std::string tf_config = weft::testing::ps_tf_config(*ports_, task, workers_, ps_);
    std::vector<std::string> env{"TF_CONFIG=" + tf_config, "WEFT_FT_DIR=" + dir_.string()};
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string var = *e;
      if (var.rfind("TF_CONFIG=", 0) != 0 && var.rfind("WEFT_FT_DIR=", 0) != 0) env.push_back(var);
    }
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string program = std::string(WEFT_BINARY_DIR) + "/tests/fault_tolerance_task";
    char* argv[] = {program.data(), nullptr};
    const std::string log = (dir_ / (task + ".log")).string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ASSERT_EQ(rc, 0) << "could not start " << program;
    pids_[task] = pid;
  }

  void kill_task(const std::string& task) {
    const pid_t pid = pids_.at(task);
    ASSERT_GT(pid, 0) << task << " is not running";
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    pids_[task] = -1;
  }

  // The process of `task` the coordination service has registered last (0: none).
  uint64_t incarnation(const std::string& task) const {
    return strategy_->wait_for_task_states(0, milliseconds(0)).of(task).incarnation;
  }
  // Waits until a process of `task` other than `before` has registered (TF's check_alive).
  void wait_until_back(const std::string& task, uint64_t before) {
    uint64_t generation = 0;
    const auto deadline = std::chrono::steady_clock::now() + seconds(30);
    for (;;) {
      const auto states = strategy_->wait_for_task_states(generation, milliseconds(500));
      const auto& status = states.of(task);
      if (status.state == weft::distribute::coordination::TaskState::kConnected &&
          status.incarnation != before) {
        return;
      }
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << task << " did not come back";
      generation = states.generation;
    }
  }

  // TF's _restart: kills `task`, starts it again after `downtime`, and waits until it is back.
  void restart(const std::string& task, milliseconds downtime = seconds(2)) {
    const uint64_t before = incarnation(task);
    kill_task(task);
    std::this_thread::sleep_for(downtime);
    start_task(task);
    wait_until_back(task, before);
  }

  // TF's schedule_training_functions / join_training_functions.
  void schedule_training_functions(int n) {
    for (int i = 0; i < n; ++i) coordinator_->schedule(fns_.train_fn, {it_, it2_});
  }
  void join_training_functions() {
    stop_looping();
    coordinator_->join();
  }
  int64_t iterations() { return model_->iterations.value().item<int64_t>(); }

  // TF's _create_model_and_run_indefinitely: 10 closures that loop until join_training_functions,
  // one running on each worker (its marker written) and the rest queued.
  void run_indefinitely() {
    make_closures_loop();
    schedule_training_functions(10);
    for (int i = 0; i < workers_; ++i) {
      ASSERT_TRUE(looping("worker:" + std::to_string(i)))
          << "worker:" << i << " never ran a looping closure";
    }
  }

  // train_fn and long_function loop until join_training_functions (TF's do_infinite_step).
  void make_closures_loop() { std::ofstream(dir_ / "infinite") << "1\n"; }
  void stop_looping() { fs::remove(dir_ / "infinite"); }
  // Waits until the running process of `task` runs a looping closure (its marker is written).
  bool looping(const std::string& task) {
    const pid_t running = pid(task);
    return wait_until([&] { return fs::exists(ft::looping_marker(dir_, running)); });
  }

  pid_t pid(const std::string& task) const { return pids_.at(task); }

  fs::path dir_;
  int workers_ = 0, ps_ = 0;
  std::optional<dist::ReservedLocalPorts> ports_;
  std::map<std::string, pid_t> pids_;
  std::optional<dist::ParameterServerStrategy> strategy_;
  std::optional<ft::Model> model_;
  ft::Functions fns_;
  std::optional<dist::ClusterCoordinator> coordinator_;
  dist::PerWorkerValues it_, it2_;
};

// testClusterCoordinatorDestroyed: the coordinator's threads (TF's WorkerClosureProcessingLoop
// and WorkerPreemptionHandler) end with it.
TEST_F(FaultTolerance, TheCoordinatorsThreadsEndWithIt) {
  start(2, 1);
  // Each names itself as it starts.
  EXPECT_TRUE(wait_until([] { return count_named("weft-dispatch") == 2; }));
  EXPECT_TRUE(wait_until([] { return count_named("weft-task-watch") == 1; }));
  coordinator_.reset();
  EXPECT_EQ(count_named("weft-dispatch"), 0);
  EXPECT_EQ(count_named("weft-task-watch"), 0);
}

// testWorkerPreemptionBetweenFunctions.
TEST_F(FaultTolerance, AWorkerRestartedBetweenFunctionsTakesClosuresAgain) {
  start(2, 2);
  schedule_training_functions(2);
  join_training_functions();
  EXPECT_EQ(iterations(), 2);
  restart("worker:0");
  schedule_training_functions(2);
  join_training_functions();
  EXPECT_EQ(iterations(), 4);
}

// testWorkerPreemptionMidstFunction: TF asserts >= 4.
TEST_F(FaultTolerance, AWorkerKilledMidFunctionHasItsClosureRunAgainAndCountedOnce) {
  start(2, 2);
  make_closures_loop();
  schedule_training_functions(4);
  for (const char* w : {"worker:0", "worker:1"}) {
    ASSERT_TRUE(looping(w)) << w;
  }
  EXPECT_FALSE(coordinator_->done());
  restart("worker:0");
  join_training_functions();
  EXPECT_EQ(iterations(), 4);
}

// testOneWorkerPreemptionWithCancellation: a function's error while a worker is restarted is
// raised by join; the long function the killed worker ran is cancelled, not run again; the
// coordinator then runs closures as before.
TEST_F(FaultTolerance, AnErrorWhileAWorkerRestartsCancelsItsClosureAndTheClusterGoesOn) {
  start(2, 2);
  make_closures_loop();
  for (int i = 0; i < 3; ++i) coordinator_->schedule(fns_.normal_function);
  dist::RemoteValue long_result = coordinator_->schedule(fns_.long_function);
  dist::RemoteValue error_result = coordinator_->schedule(fns_.error_function);
  // The long function runs on one worker, the error function has failed on the other.
  std::string runs_long;
  ASSERT_TRUE(wait_until([&] {
    for (const char* w : {"worker:0", "worker:1"}) {
      if (fs::exists(ft::looping_marker(dir_, pid(w)))) runs_long = w;
    }
    return !runs_long.empty() && error_result.ready();
  }));
  restart(runs_long);
  auto error = error_of<weft::InvalidArgument>([&] { coordinator_->join(); });
  ASSERT_TRUE(error.has_value()) << "join did not raise the function's error";
  EXPECT_THAT(*error, HasSubstr("assert_non_positive"));
  EXPECT_THROW(long_result.fetch(), weft::Cancelled);
  stop_looping();
  std::vector<dist::RemoteValue> after;
  for (int i = 0; i < 3; ++i) after.push_back(coordinator_->schedule(fns_.normal_function));
  coordinator_->join();
  for (auto& r : after) EXPECT_GT(r.fetch()[0].item<float>(), 0.0f);
}

// testHandleDatasetCreationFailureWithDatasetFn: per-worker datasets made while a worker is down
// are made there once it is back. TF asserts >= 3.
TEST_F(FaultTolerance, DatasetsMadeWhileAWorkerIsDownAreMadeThereWhenItIsBack) {
  start(2, 2);
  std::thread restarter([&] { restart("worker:0", seconds(3)); });
  schedule_training_functions(3);
  it_ = coordinator_->create_per_worker_dataset(fns_.dataset_fn);
  it2_ = coordinator_->create_per_worker_dataset(fns_.dataset_fn);
  schedule_training_functions(3);
  it_ = coordinator_->create_per_worker_dataset(fns_.dataset_fn);
  it2_ = coordinator_->create_per_worker_dataset(fns_.dataset_fn);
  schedule_training_functions(3);
  join_training_functions();
  restarter.join();
  EXPECT_EQ(iterations(), 9);
}

// testWorkerPreemptionErrorType (TF calls the worker directly; here its closures): when no worker
// comes back, the error is Unavailable and names the workers, not a ps task.
TEST_F(FaultTolerance, AWorkerThatStaysLostIsAnUnavailableErrorNamingIt) {
  start(1, 1, seconds(3));
  kill_task("worker:0");
  coordinator_->schedule(fns_.normal_function);
  auto error = error_of<weft::Unavailable>([&] { coordinator_->join(); });
  ASSERT_TRUE(error.has_value()) << "join did not raise Unavailable";
  EXPECT_THAT(*error, HasSubstr("worker:0"));
  EXPECT_THAT(*error, Not(HasSubstr("ps:")));
}

// testPSPreemptionErrorType: a ps task restarted (holding nothing) fails the closures that read
// its variables, naming it.
TEST_F(FaultTolerance, APsTaskRestartedFailsTheClosuresThatReadItsVariablesNamingIt) {
  start(2, 2);
  coordinator_->schedule(fns_.worker_fn);  // v lives on ps:0
  coordinator_->join();
  restart("ps:0", seconds(1));
  coordinator_->schedule(fns_.worker_fn);
  try {
    coordinator_->join();
    ADD_FAILURE() << "a closure read a variable of a restarted ps task";
  } catch (const weft::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("ps:0"));
    EXPECT_THAT(e.code(),
                AnyOf(weft::ErrorCode::kUnavailable, weft::ErrorCode::kFailedPrecondition));
  }
}

// testTwoWorkersPreempted: TF asserts >= 10.
TEST_F(FaultTolerance, TwoWorkersKilledTogetherAreRecoveredAndEveryClosureCountsOnce) {
  start(2, 2);
  run_indefinitely();
  EXPECT_FALSE(coordinator_->done());
  const uint64_t before0 = incarnation("worker:0"), before1 = incarnation("worker:1");
  kill_task("worker:0");
  kill_task("worker:1");
  std::this_thread::sleep_for(seconds(2));
  start_task("worker:0");
  start_task("worker:1");
  wait_until_back("worker:0", before0);
  wait_until_back("worker:1", before1);
  join_training_functions();
  EXPECT_EQ(iterations(), 10);
}

// testWorkerContinuousFailure: TF asserts >= 10.
TEST_F(FaultTolerance, AWorkerKilledTwiceIsRecoveredEachTime) {
  start(2, 2);
  run_indefinitely();
  EXPECT_FALSE(coordinator_->done());
  restart("worker:0");
  ASSERT_TRUE(looping("worker:0")) << "the restarted worker:0 took no closure";
  restart("worker:0");
  join_training_functions();
  EXPECT_EQ(iterations(), 10);
}

// testPSFailureWhileRecoveryFromWokerFailure: a ps task lost while a worker is, both started
// again: the coordinator alone does not roll back (fit does, from its backup: ps_cli_test), so
// the closures fail naming the ps task. The worker stays down longer than the ps task (TF: both
// 1 s), so that the closures have failed when it is back: a worker started after a ps task lost
// its variables waits for them to be made again (as fit does) before it takes a closure, and a
// closure handed to it meanwhile waits for its function to be registered (function_wait).
TEST_F(FaultTolerance, APsTaskAndAWorkerKilledTogetherFailTheClosuresNamingThePsTask) {
  start(2, 2);
  run_indefinitely();
  std::thread worker([&] { restart("worker:0", seconds(3)); });
  std::thread ps([&] { restart("ps:0", seconds(1)); });
  worker.join();
  ps.join();
  try {
    join_training_functions();
    ADD_FAILURE() << "closures committed on a restarted ps task";
  } catch (const weft::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("ps:0"));
  }
}

// testNumpyFetchedAfterWorkerFailure and testTensorGotAfterWorkerFailure: a closure's outputs
// live on the coordinator once fetched, whatever becomes of its worker.
TEST_F(FaultTolerance, OutputsFetchedBeforeTheWorkersAreKilledStayFetchable) {
  start(2, 1);
  dist::RemoteValue result = coordinator_->schedule(fns_.worker_fn);
  auto values = [&](const std::vector<weft::Tensor>& t) {
    return std::vector<int>{t.at(0).item<int>(), t.at(1).item<int>()};
  };
  EXPECT_EQ(values(result.fetch()), (std::vector<int>{1, -1}));
  kill_task("worker:0");
  EXPECT_EQ(values(result.fetch()), (std::vector<int>{1, -1}));
  kill_task("worker:1");
  EXPECT_EQ(values(result.get()), (std::vector<int>{1, -1}));
}

// testFetchFromPSAfterWorkerFailure: the chief reads the ps tasks' variables while a worker is
// killed and started again; every read succeeds, and the count is each join's exactly.
TEST_F(FaultTolerance, TheChiefReadsThePsTasksWhileAWorkerIsKilledAndStartedAgain) {
  start(2, 2);
  std::atomic<bool> restarted{false};
  std::thread killer([&] {
    std::this_thread::sleep_for(seconds(1));
    restart("worker:0", seconds(1));
    restarted = true;
  });
  int64_t scheduled = 0;
  int reads_after_restart = 0;
  for (int round = 0; round < 200 && reads_after_restart <= 5; ++round) {
    if (restarted) ++reads_after_restart;
    make_closures_loop();
    schedule_training_functions(1);
    ++scheduled;
    std::this_thread::sleep_for(milliseconds(50));
    join_training_functions();
    const auto until = std::chrono::steady_clock::now() + milliseconds(100);
    while (std::chrono::steady_clock::now() < until) ASSERT_EQ(iterations(), scheduled);
  }
  killer.join();
  EXPECT_GT(reads_after_restart, 5);
}

// testClusterStateNotDisrupted: a worker killed mid-function, then one killed between functions,
// in one cluster.
TEST_F(FaultTolerance, TheClusterStaysUsableAcrossSeveralFailures) {
  start(2, 2);
  make_closures_loop();
  schedule_training_functions(4);
  ASSERT_TRUE(looping("worker:1"));
  restart("worker:1");
  join_training_functions();
  EXPECT_EQ(iterations(), 4);
  restart("worker:0");
  schedule_training_functions(2);
  join_training_functions();
  EXPECT_EQ(iterations(), 6);
}

// testJoinRaisesUnavailableErrorAtPsFailure and testScheduleRaisesUnavailableErrorAtPsFailure: a
// ps task lost for good fails the running closures; join, or the next schedule, raises it
// naming the task.
TEST_F(FaultTolerance, APsTaskLostForGoodIsRaisedByJoinNamingIt) {
  start(2, 2);
  run_indefinitely();
  kill_task("ps:0");
  try {
    coordinator_->join();
    ADD_FAILURE() << "join returned with ps:0 lost";
  } catch (const weft::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("ps:0"));
    EXPECT_THAT(e.code(),
                AnyOf(weft::ErrorCode::kUnavailable, weft::ErrorCode::kFailedPrecondition));
  }
}

TEST_F(FaultTolerance, APsTaskLostForGoodIsRaisedByTheNextScheduleNamingIt) {
  start(2, 2);
  make_closures_loop();
  std::vector<dist::RemoteValue> results;
  for (int i = 0; i < 10; ++i)
    results.push_back(coordinator_->schedule(fns_.train_fn, {it_, it2_}));
  for (const char* w : {"worker:0", "worker:1"}) {
    ASSERT_TRUE(looping(w)) << w;
  }
  kill_task("ps:0");
  ASSERT_TRUE(wait_until([&] { return results.back().ready(); }))
      << "the queued closures were not cancelled";
  try {
    coordinator_->schedule(fns_.normal_function);
    ADD_FAILURE() << "schedule did not raise ps:0's loss";
  } catch (const weft::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("ps:0"));
  }
}

// testWorkerExecutionAfterPsFailureRaisesExpectedError: with every ps task lost, a function that
// reads a variable fails on any worker, naming a ps task.
TEST_F(FaultTolerance, AFunctionRunAfterThePsTasksAreLostFailsNamingOne) {
  start(2, 2);
  run_indefinitely();
  kill_task("ps:0");
  kill_task("ps:1");
  EXPECT_THROW(coordinator_->join(), weft::Error);
  stop_looping();
  for (int i = 0; i < 2; ++i) {
    coordinator_->schedule(fns_.trivial_function);  // reads iterations, on ps:1
    try {
      coordinator_->join();
      ADD_FAILURE() << "a function read a variable of a lost ps task";
    } catch (const weft::Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("ps:1"));
    }
  }
}

// testAsyncWaitIsNoOp: asking whether the closures are done does not raise a killed worker's
// loss; the other worker runs them all. TF asserts >= 10.
TEST_F(FaultTolerance, DoneDoesNotRaiseAKilledWorkersLoss) {
  start(2, 2);
  run_indefinitely();
  kill_task("worker:0");
  std::this_thread::sleep_for(seconds(1));
  EXPECT_FALSE(coordinator_->done());
  join_training_functions();
  EXPECT_EQ(iterations(), 10);
}

}  // namespace
