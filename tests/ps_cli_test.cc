// Parameter-server clusters from the command line, with real processes on 127.0.0.1:
// `weft launch --ps K -n N` starts chief:0, worker:0..N-1 and ps:0..K-1, keeps the others running
// when a worker or PS dies, starts that task alone again on the same address (--max-restarts),
// restarts every task when the chief fails, and exits with the chief's status. The tasks here are
// small shell scripts that read their TF_CONFIG, so that each test decides who fails and when.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "cli_helpers.h"
#include "weft/distribute/cluster/local_ports.h"
#include "weft/testing/ps_cluster.h"

namespace {

using namespace weft_cli_test;
using testing::HasSubstr;
using testing::Not;

class PsCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) / ("ps_cli_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes the task script `body` (sh; $D is the test's directory, $TASK "worker:1", every wait
  // bounded) and runs it under `weft launch LAUNCH_ARGS`.
  Result launch(const std::string& launch_args, const std::string& body) {
    const fs::path script = dir_ / "task.sh";
    std::ofstream(script) << "D=" << dir_.string() << "\n"
                          << "TASK=$(printf '%s' \"$TF_CONFIG\" | sed -n "
                             "'s/.*\"task\":{\"index\":\\([0-9]*\\),\"type\":\"\\([a-z]*\\)\"}.*/"
                             "\\2:\\1/p')\n"
                          << "wait_for() { for i in $(seq 300); do [ -e \"$D/$1\" ] && return 0; "
                             "sleep 0.1; done; echo \"gave up waiting for $1\"; exit 9; }\n"
                          << body;
    return shell("timeout 120 " + std::string(WEFT_BINARY_DIR) + "/weft launch " + launch_args +
                 " -- sh " + script.string());
  }
  // How a job recovers from its tasks' loss: without a backup (the others go on), by restarting
  // the whole cluster from its backup, or by rolling the variables back to the backup in the
  // same run (a ps task lost).
  enum class Recovery { kGoOn, kClusterRestart, kRollBack };
  Result expect_exactly_once_after_killing(const std::vector<std::string>& victims,
                                           const std::string& launch_args, Recovery recovery,
                                           int batch_size = 64, const std::string& signal = "KILL",
                                           const std::string& train_args = "");
  static int count(const std::string& text, const std::string& what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }
  fs::path dir_;
};

TEST_F(PsCli, TheClusterHasAChiefWorkersAndParameterServers) {
  Result r = launch("--ps 2 -n 3", "echo \"config $TF_CONFIG\"\n");
  ASSERT_EQ(r.status, 0) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(\[chief:0\] config (\{.*\}))")))
      << r.output;
  nlohmann::json config = nlohmann::json::parse(m[1].str());
  EXPECT_EQ(config["cluster"]["chief"].size(), 1u);
  EXPECT_EQ(config["cluster"]["worker"].size(), 3u);
  EXPECT_EQ(config["cluster"]["ps"].size(), 2u);
  std::set<std::string> addresses;
  for (const auto& job : config["cluster"]) {
    for (const auto& a : job) addresses.insert(a.get<std::string>());
  }
  EXPECT_EQ(addresses.size(), 6u);  // six different ports
  for (const char* task : {"chief:0", "worker:0", "worker:1", "worker:2", "ps:0", "ps:1"}) {
    EXPECT_EQ(count(r.output, std::string("[") + task + "] config "), 1) << task;
  }
  EXPECT_THAT(r.output, HasSubstr(R"("task":{"index":1,"type":"ps"})"));
}

// worker:1 is SIGKILLed at its first start and started again alone, on the same address; the
// chief (which waits for its second start) and the others run once; the exit status is the
// chief's.
TEST_F(PsCli, ADeadWorkerIsStartedAgainAloneOnTheSameAddress) {
  Result r = launch("--ps 1 -n 2 --max-restarts 2",
                    "echo \"start $TASK $TF_CONFIG\"\n"
                    "case $TASK in\n"
                    "  worker:1) if [ ! -e $D/killed ]; then touch $D/killed; kill -9 $$; fi;\n"
                    "            touch $D/back ;;\n"
                    "  chief:0) wait_for back; touch $D/done ;;\n"
                    "  *) wait_for done ;;\n"
                    "esac\n");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, testing::ContainsRegex(
                            "weft launch: worker:1 \\(pid [0-9]+\\) was killed by signal 9 "
                            "\\(Killed\\); starting it again alone \\(restart 1 of 2\\)"))
      << r.output;
  std::smatch m;
  std::string out = r.output;
  std::vector<std::string> configs;
  std::regex start(R"(\[worker:1\] start worker:1 (\{[^\n]*\}))");
  for (std::sregex_iterator it(out.begin(), out.end(), start), end; it != end; ++it) {
    configs.push_back((*it)[1].str());
  }
  ASSERT_EQ(configs.size(), 2u) << r.output;
  EXPECT_EQ(configs[0], configs[1]);  // the same address, the same cluster
  for (const char* task : {"chief:0", "worker:0", "ps:0"}) {
    EXPECT_EQ(count(r.output, std::string("[") + task + "] start "), 1) << task << r.output;
  }
  EXPECT_THAT(r.output, Not(HasSubstr("stopping the other")));
}

// Without restarts a dead PS stays dead and the others go on; a task that keeps failing is given
// up after --max-restarts.
TEST_F(PsCli, ATaskIsNotStartedAgainBeyondMaxRestartsAndTheOthersGoOn) {
  Result r = launch("--ps 1 -n 1",
                    "case $TASK in\n"
                    "  ps:0) touch $D/ps-died; exit 3 ;;\n"
                    "  chief:0) wait_for ps-died; sleep 0.5; echo 'chief finished' ;;\n"
                    "  *) wait_for ps-died; sleep 0.5 ;;\n"
                    "esac\n");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, testing::ContainsRegex(
                            "weft launch: ps:0 \\(pid [0-9]+\\) exited with status 3; not started "
                            "again \\(--max-restarts 0\\), the others go on"));
  EXPECT_THAT(r.output, HasSubstr("[chief:0] chief finished"));

  Result twice = launch("--ps 1 -n 1 --max-restarts 1",
                        "case $TASK in\n"
                        "  worker:0) echo 'worker start'; echo >> $D/starts; exit 4 ;;\n"
                        "  chief:0) for i in $(seq 300); do [ -e $D/starts ] && "
                        "[ $(wc -l < $D/starts) -ge 2 ] && break; sleep 0.1; done; sleep 0.5 ;;\n"
                        "esac\n");
  ASSERT_EQ(twice.status, 0) << twice.output;
  EXPECT_EQ(count(twice.output, "[worker:0] worker start"), 2) << twice.output;
  EXPECT_THAT(twice.output, HasSubstr("starting it again alone (restart 1 of 1)"));
  EXPECT_THAT(twice.output,
              HasSubstr("exited with status 4; not started again (--max-restarts 1)"));
}

// The chief's failure stops every task and starts the whole cluster again; without restarts left
// the launcher exits with the chief's status.
TEST_F(PsCli, TheChiefsFailureRestartsEveryTaskAndItsStatusIsTheLaunchers) {
  Result r = launch("--ps 1 -n 1 --max-restarts 1",
                    "echo \"start $TASK\"; touch $D/up-$TASK\n"
                    "case $TASK in\n"
                    "  chief:0) if [ ! -e $D/failed ]; then wait_for up-worker:0; "
                    "wait_for up-ps:0; touch $D/failed; exit 5; fi;\n"
                    "           touch $D/done ;;\n"
                    "  *) wait_for done ;;\n"
                    "esac\n");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, testing::ContainsRegex(
                            "weft launch: chief:0 \\(pid [0-9]+\\) exited with status 5; stopping "
                            "the other tasks"));
  EXPECT_THAT(r.output, HasSubstr("restarting every task (restart 1 of 1)"));
  for (const char* task : {"chief:0", "worker:0", "ps:0"}) {
    EXPECT_EQ(count(r.output, std::string("[") + task + "] start "), 2) << task << r.output;
  }

  Result failed = launch("--ps 1 -n 1", "[ $TASK = chief:0 ] && exit 6\nsleep 30\n");
  EXPECT_EQ(failed.status, 6) << failed.output;
  EXPECT_THAT(failed.output, HasSubstr("chief:0 (pid "));
}

// When the chief has ended, tasks still running are given a few seconds, then stopped; the
// launcher's status stays the chief's.
TEST_F(PsCli, TasksThatOutliveTheChiefAreStopped) {
  auto start = std::chrono::steady_clock::now();
  Result r = launch("--ps 1 -n 1", "[ $TASK = chief:0 ] && exit 0\nexec sleep 60\n");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("weft launch: the chief has ended; stopping the tasks still "
                                  "running"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

// weft train --strategy parameter_server under weft launch: the chief's fit schedules each step
// on one of the two workers, whose updates are applied on the two ps tasks; each of the epoch's
// examples is trained on once (a step's batch travels with its closure), each step is one
// iteration of the optimizer (whose count lives on a ps task), and the model learns. Every
// variable is cut into two shards, one on each ps task. 512 of the helpers' learnable examples,
// 8 steps: each step moves the MLP's 3.6 MB of variables and as many gradients (Fashion-MNIST's
// epoch took 135 s under the sanitizers; its three epochs reach 0.875: docs/distributed.md).
// The synchronous mode is the next test's.
TEST_F(PsCli, WeftTrainTrainsOnTheWorkersWithTheVariablesOnThePsTasks) {
  write_dataset(dir_ / "data", 512, 128);
  const fs::path json = dir_ / "ps.json";
  Result r = shell("timeout 300 " + std::string(WEFT_BINARY_DIR) + "/weft launch --ps 2 -n 2 -- " +
                   WEFT_BINARY_DIR +
                   "/weft train --strategy parameter_server --variable-partitioner fixed:2 "
                   "--dataset " +
                   (dir_ / "data").string() + " --epochs 1 --batch-size 64 --quiet " +
                   "--metrics-json " + json.string());
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json j = read_json(json);
  EXPECT_EQ(j["strategy"], "parameter_server");
  EXPECT_EQ(j["ps"]["mode"], "async");
  EXPECT_EQ(j["workers"], 2);
  EXPECT_EQ(j["ps"]["tasks"], 2);
  EXPECT_EQ(j["examples_trained"], 512);
  EXPECT_EQ(j["steps"], 8);
  EXPECT_GT(j["test_accuracy"].get<double>(), 0.5) << j.dump();  // the pattern is learnable
  // The default staleness bound, 2 x workers - 1, and the staleness measured (the updates
  // applied between a step's start and its own): at most the bound's earlier steps plus as many
  // later ones, and with two workers running up to four steps at once, some step's values missed
  // another's update.
  EXPECT_EQ(j["ps"]["max_staleness"], 3);
  int64_t steps = 0;
  for (const auto& [stale, n] : j["ps"]["staleness"]["steps_by_staleness"].items()) {
    EXPECT_LE(std::stoi(stale), 2 * 3) << j.dump();
    steps += n.get<int64_t>();
  }
  EXPECT_EQ(steps, 8) << j.dump();
  EXPECT_LE(j["ps"]["staleness"]["max"].get<int64_t>(), 2 * 3) << j.dump();
  EXPECT_GE(j["ps"]["staleness"]["max"].get<int64_t>(), 1) << j.dump();
}

// Mixed float16 (--mixed-precision f16): each worker scales the loss, checks its gradients for
// overflow and pushes only finite ones; the dynamic scale and its count of finite steps live on a
// ps task, written with each closure's commit. A step skipped for overflow counts no optimizer
// step, but its rows were trained on (the ledger). The synchronous mode refuses it
// (cli_messages_test).
TEST_F(PsCli, MixedFloat16ScalesTheLossOnTheWorkers) {
  write_dataset(dir_ / "data", 512, 128);
  const fs::path json = dir_ / "f16.json";
  Result r = shell("timeout 300 " + std::string(WEFT_BINARY_DIR) + "/weft launch --ps 2 -n 2 -- " +
                   WEFT_BINARY_DIR + "/weft train --strategy parameter_server --mixed-precision " +
                   "f16 --dataset " + (dir_ / "data").string() +
                   " --epochs 2 --batch-size 64 --quiet --metrics-json " + json.string());
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json j = read_json(json);
  EXPECT_EQ(j["mixed_precision"], "f16");
  EXPECT_EQ(j["examples_trained"], 2 * 512);
  EXPECT_GE(j["steps"].get<int64_t>(), 1) << j.dump();
  EXPECT_LE(j["steps"].get<int64_t>(), 16) << j.dump();
  EXPECT_GT(j["test_accuracy"].get<double>(), 0.5) << j.dump();
}

// Trains 2 epochs of 512 examples (16 steps in batches of 64) under weft launch --ps 2 -n 2 with
// --backup-dir (backups every 4 steps, which the asynchronous fit takes once the steps in flight
// have finished), `launch_args` and `train_args`, sending `signal` (KILL; STOP: the process
// freezes until the job is done, then is killed; TERM: the process is waited for, to end by itself)
// to each task of `victims` on its first start as soon as a backup exists (a victim started again
// waits 2 s first). Expects the job to end normally (returns its output) having trained on each
// example once per epoch, one optimizer step per batch, over every start, recovered as `recovery`
// says.
Result PsCli::expect_exactly_once_after_killing(const std::vector<std::string>& victims,
                                                const std::string& launch_args, Recovery recovery,
                                                int batch_size, const std::string& signal,
                                                const std::string& train_args) {
  write_dataset(dir_ / "data", 512, 128);
  const std::string weft = std::string(WEFT_BINARY_DIR) + "/weft";
  std::string chosen = "false";
  for (const std::string& v : victims) chosen += " || [ $TASK = " + v + " ]";
  Result r = launch(
      launch_args,
      "ARGS=\"train --strategy parameter_server --dataset $D/data --epochs 2 --batch-size " +
          std::to_string(batch_size) +
          " --quiet --backup-dir $D/backup --save-freq 4 --metrics-json $D/ps.json " + train_args +
          "\"\n"
          "if { " +
          chosen +
          "; }; then\n"
          "  if [ ! -e $D/killed.$TASK ]; then\n"
          "    touch $D/killed.$TASK\n"
          "    " +
          weft +
          " $ARGS & pid=$!\n"
          "    n=0; while [ ! -e $D/backup/checkpoint ] && kill -0 $pid 2>/dev/null && "
          "[ $n -lt 6000 ]; do sleep 0.01; n=$((n + 1)); done\n"
          "    trap 'kill -9 $pid 2>/dev/null' EXIT\n"
          "    kill -" +
          signal +
          " $pid 2>/dev/null && touch $D/killed_while_training.$TASK\n"
          "    n=0; while [ " +
          (signal == "STOP" ? "! -e $D/ps.json" : "1 = 0") +
          " ] && [ $n -lt 9000 ]; do sleep 0.01; n=$((n + 1)); done\n"
          "    " +
          (signal == "TERM" ? "" : "kill -9 $pid 2>/dev/null; ") +
          "wait $pid; exit $?\n"
          "  fi\n"
          "  sleep 2\n"
          "fi\n"
          "exec " +
          weft + " $ARGS\n");
  EXPECT_EQ(r.status, 0) << r.output;
  for (const std::string& v : victims) {
    EXPECT_TRUE(fs::exists(dir_ / ("killed_while_training." + v))) << v << r.output;
    EXPECT_THAT(r.output, HasSubstr(v + " (pid ")) << r.output;
  }
  if (signal == "KILL") {
    EXPECT_THAT(r.output, HasSubstr("exited with status 137")) << r.output;
  }
  EXPECT_EQ(count(r.output, "restarting every task"), recovery == Recovery::kClusterRestart ? 1 : 0)
      << r.output;
  EXPECT_EQ(count(r.output, "[chief:0] weft: restored backup " + (dir_ / "backup").string()),
            recovery == Recovery::kGoOn ? 0 : 1)
      << r.output;
  EXPECT_EQ(count(r.output, "to roll every variable back to the newest backup"),
            recovery == Recovery::kRollBack ? 1 : 0)
      << r.output;
  if (!fs::exists(dir_ / "ps.json")) {
    ADD_FAILURE() << "the job wrote no metrics: " << r.output;
    return r;
  }
  nlohmann::json j = read_json(dir_ / "ps.json");
  EXPECT_EQ(j["examples_trained"], 2 * 512) << r.output;
  EXPECT_EQ(j["steps"], 2 * 512 / batch_size) << r.output;
  EXPECT_GT(j["test_accuracy"].get<double>(), 0.5) << j.dump();
  EXPECT_FALSE(fs::exists(dir_ / "backup")) << "the backup outlived the completed job";
  return r;
}

// A worker SIGKILLed and started again alone 2 s later (--max-restarts 1): it rejoins the cluster
// (which met already: no second start-up barrier), its closure having run on the other worker,
// and the job goes on without a restart; the worker leaves with the others when the chief is
// done. Batches of 8 (128 steps) keep the job going for those 2 s; under AddressSanitizer, whose
// steps take ten times as long, batches of 32 do (the test took 45 s there in batches of 8).
TEST_F(PsCli, AWorkerKilledAndStartedAgainRejoinsAndTheJobGoesOn) {
  Result r = expect_exactly_once_after_killing({"worker:1"}, "--ps 2 -n 2 --max-restarts 1",
                                               Recovery::kGoOn,
                                               /*batch_size=*/kAddressSanitizer ? 32 : 8);
  EXPECT_THAT(r.output,
              HasSubstr("exited with status 137; starting it again alone (restart 1 of 1)"))
      << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("not started again"))) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("stopping the tasks still running"))) << r.output;
}

// A worker that stops answering without its connections breaking (SIGSTOP: a frozen process)
// holds its closure until the coordination service declares it lost, 2 s without a heartbeat
// here (--heartbeat-timeout): the coordinator then cancels the call, says why, and the other
// worker runs the closure. (The channel's keepalive would notice too, after 10 + 5 s.) In
// synchronous mode every step has a closure for each worker, so the job cannot end before then.
TEST_F(PsCli, AFrozenWorkersClosureRunsElsewhereOnceItMissesItsHeartbeats) {
  Result r = expect_exactly_once_after_killing({"worker:1"}, "--ps 2 -n 2", Recovery::kGoOn,
                                               /*batch_size=*/128, "STOP",
                                               "--heartbeat-timeout 2 --ps-mode sync");
  EXPECT_THAT(r.output,
              testing::ContainsRegex("\\[chief:0\\] weft: worker:1 at 127.0.0.1:[0-9]+ lost \\(the "
                                     "coordination service lost it: [^)]*heartbeat"))
      << r.output;
}

// Backup workers (--ps-mode sync --backup-workers 1 on two workers): each step's batch is one
// part, which both workers run, the first run to return applied. A frozen worker (SIGSTOP) then
// holds no step up: its heartbeats are given 10 minutes here, so nothing declares it lost, and
// the other worker's runs win every step (and evaluation's batches) until the job ends. Each
// example is trained once: the given-up runs' updates are dropped.
TEST_F(PsCli, ABackupWorkerKeepsTrainingWhileAFrozenWorkerHoldsItsPart) {
  Result r = expect_exactly_once_after_killing(
      {"worker:1"}, "--ps 2 -n 2", Recovery::kGoOn, /*batch_size=*/64, "STOP",
      "--heartbeat-timeout 600 --ps-mode sync --backup-workers 1");
  EXPECT_THAT(r.output, Not(HasSubstr(" lost ("))) << r.output;
  nlohmann::json j = read_json(dir_ / "ps.json");
  EXPECT_EQ(j["ps"]["backup_workers"], 1);
  EXPECT_GE(j["ps"]["parts_won_by_backups"].get<int64_t>(), 0);
  EXPECT_LE(j["ps"]["parts_won_by_backups"].get<int64_t>(), j["steps"].get<int64_t>());
}

// A worker sent SIGTERM (preempted) leaves after its closure: it refuses the next, tells the
// coordination service, whose word the chief follows, and exits with status 75; the other worker
// trains the rest, each example once. It first waits 2 s for the chief to say it is stopping too
// (it is not), so the job is kept going as in AWorkerKilledAndStartedAgain...
TEST_F(PsCli, AWorkerSentSigtermLeavesAfterItsClosureAndTheOtherTrainsTheRest) {
  Result r = expect_exactly_once_after_killing({"worker:1"}, "--ps 2 -n 2", Recovery::kGoOn,
                                               /*batch_size=*/kAddressSanitizer ? 32 : 8, "TERM");
  EXPECT_THAT(r.output, HasSubstr("exited with status 75 (preempted")) << r.output;
  EXPECT_THAT(r.output, HasSubstr("not started again")) << r.output;
  EXPECT_THAT(r.output,
              testing::ContainsRegex("\\[chief:0\\] weft: worker:1 at 127.0.0.1:[0-9]+ lost \\(the "
                                     "coordination service lost it: [^)]*worker:1 left: SIGTERM"))
      << r.output;
}

// A worker SIGKILLed and never started again: the other trains the rest.
TEST_F(PsCli, AWorkerKilledForGoodLeavesTheRestToTheOthers) {
  Result r = expect_exactly_once_after_killing({"worker:1"}, "--ps 2 -n 2", Recovery::kGoOn);
  EXPECT_THAT(r.output, HasSubstr("exited with status 137; not started again")) << r.output;
}

// The chief SIGKILLed (--max-restarts 1): weft launch starts the whole cluster again, new ps
// tasks included; the new chief restores the newest backup (the variables and the optimizer's
// slots and step onto the new ps tasks, the data's position). Without the quiet point before a
// backup this ends with 17 or 18 steps.
TEST_F(PsCli, AChiefKilledMidTrainingRestartsTheClusterWhichResumesFromItsBackup) {
  expect_exactly_once_after_killing({"chief:0"}, "--ps 2 -n 2 --max-restarts 1",
                                    Recovery::kClusterRestart);
}

// A ps task and a worker SIGKILLed together: the launcher starts each alone again 2 s later (a
// restarted PS holds nothing). The chief's fit notices the lost PS, waits for it, creates its
// variables there again and rolls every variable back to the newest backup, in the same run: the
// steps after the backup train again, and the job finishes without a restart. Closures of two
// steps (--steps-per-execution 2), so the backups (due every 4 steps) come at executions' ends,
// and a closure lost with its worker is two steps run again elsewhere.
TEST_F(PsCli, APsAndAWorkerKilledTogetherAreRecoveredWithoutRestartingTheJob) {
  Result r =
      expect_exactly_once_after_killing({"ps:1", "worker:1"}, "--ps 2 -n 2 --max-restarts 1",
                                        Recovery::kRollBack, 64, "KILL", "--steps-per-execution 2");
  EXPECT_THAT(r.output, HasSubstr("[chief:0] weft: parameter server ps:1 lost; waiting for it"))
      << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("not started again"))) << r.output;
}

// A ps task SIGKILLed alone and started again 2 s later: the chief's fit waits for it, creates
// its variables there again and rolls every variable back to the newest backup, in the same run;
// the workers go on, and every example is trained once per epoch.
TEST_F(PsCli, APsKilledAloneIsRecoveredWithoutRestartingTheJob) {
  Result r = expect_exactly_once_after_killing({"ps:0"}, "--ps 2 -n 2 --max-restarts 1",
                                               Recovery::kRollBack);
  EXPECT_THAT(r.output, HasSubstr("[chief:0] weft: parameter server ps:0 lost; waiting for it"))
      << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("not started again"))) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr(" lost (the coordination service lost it"))) << r.output;
}

// Without a backup there is nothing to roll a lost ps task's variables back to: the chief stops
// at once, naming the task, and the job's status is the chief's. ps:1 is killed when the first
// epoch's line reaches the chief's log (its output is flushed at each epoch's end), so that the
// second epoch's steps find it gone.
TEST_F(PsCli, APsLostWithoutABackupStopsTheJobNamingIt) {
  write_dataset(dir_ / "data", 512, 128);
  const std::string weft = std::string(WEFT_BINARY_DIR) + "/weft";
  Result r = launch("--ps 2 -n 2",
                    "ARGS=\"train --strategy parameter_server --dataset $D/data --epochs 2 "
                    "--batch-size 32\"\n"
                    "if [ $TASK = chief:0 ]; then exec " +
                        weft +
                        " $ARGS > $D/chief.log 2>&1; fi\n"
                        "if [ $TASK != ps:1 ]; then exec " +
                        weft + " $ARGS --quiet; fi\n" + weft +
                        " $ARGS --quiet & pid=$!\n"
                        "n=0; while ! grep -q 'val_loss' $D/chief.log 2>/dev/null && [ $n -lt "
                        "6000 ]; do sleep 0.01; n=$((n + 1)); done\n"
                        "kill -9 $pid; touch $D/killed_while_training; wait $pid; exit $?\n");
  std::ifstream in(dir_ / "chief.log");
  const std::string chief((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(r.status, 0) << r.output << chief;
  EXPECT_TRUE(fs::exists(dir_ / "killed_while_training")) << r.output;
  EXPECT_THAT(chief, HasSubstr("fit: parameter server ps:1 was lost, and the variables it held "
                               "with it; without a backup to roll back to (BackupAndRestore, "
                               "weft train --backup-dir) training cannot go on"))
      << r.output << chief;
  EXPECT_THAT(chief, HasSubstr("ps:1 at 127.0.0.1:")) << chief;  // the failed call's cause
}

// SIGTERM to weft launch mid-way through training on 2 ps tasks (each variable in 2 shards): the
// chief backs up once no step is in flight and exits 75 (the workers and ps tasks ignore SIGTERM
// until the chief is done). The same command on 3 ps tasks with other shards resumes from that
// backup and trains each example once per epoch over both runs; the model it saves evaluates in
// one process (weft evaluate) to the accuracy the cluster measured.
TEST_F(PsCli, APreemptedJobOnTwoPsTasksResumesOnThreeAndItsModelEvaluatesInOneProcess) {
  write_dataset(dir_ / "data", 512, 128);
  const std::string weft = std::string(WEFT_BINARY_DIR) + "/weft";
  auto train = [&](int ps, const std::string& partitioner, const std::string& json) {
    return weft + " launch --ps " + std::to_string(ps) + " -n 2 -- " + weft +
           " train --strategy parameter_server --variable-partitioner " + partitioner +
           " --dataset " + (dir_ / "data").string() +
           " --epochs 2 --batch-size 64 --quiet --save-freq 4 --backup-dir " +
           (dir_ / "backup").string() + " --save-model " + (dir_ / "model").string() +
           " --metrics-json " + (dir_ / json).string();
  };
  Result stopped =
      shell("cd " + dir_.string() + "; timeout -k 10 120 " + train(2, "fixed:2", "stopped.json") +
            " > stopped.log 2>&1 & pid=$!; n=0; while [ ! -e backup/checkpoint ] && kill -0 $pid "
            "2>/dev/null && [ $n -lt 6000 ]; do sleep 0.01; n=$((n + 1)); done; kill -TERM $pid; "
            "wait $pid; echo \"status $?\"; cat stopped.log");
  EXPECT_THAT(stopped.output, HasSubstr("status 75")) << stopped.output;
  EXPECT_THAT(stopped.output, HasSubstr("[chief:0] weft: preempted (SIGTERM): backed up epoch "))
      << stopped.output;
  EXPECT_FALSE(fs::exists(dir_ / "stopped.json")) << "a preempted run wrote its metrics";

  Result resumed = shell("timeout -k 10 120 " + train(3, "max_size:100000", "resumed.json"));
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_THAT(resumed.output,
              HasSubstr("[chief:0] weft: restored backup " + (dir_ / "backup").string()))
      << resumed.output;
  nlohmann::json j = read_json(dir_ / "resumed.json");
  EXPECT_EQ(j["ps"]["tasks"], 3);
  EXPECT_EQ(j["examples_trained"], 2 * 512) << resumed.output;
  EXPECT_EQ(j["steps"], 2 * 8) << resumed.output;
  EXPECT_FALSE(fs::exists(dir_ / "backup")) << "the backup outlived the completed job";

  Result evaluated = shell(weft + " evaluate " + (dir_ / "model").string() + " --dataset " +
                           (dir_ / "data").string());
  ASSERT_EQ(evaluated.status, 0) << evaluated.output;
  char accuracy[64];
  std::snprintf(accuracy, sizeof accuracy, "test accuracy %.4f", j["test_accuracy"].get<double>());
  EXPECT_THAT(evaluated.output, HasSubstr(accuracy)) << evaluated.output;
}

// Checkpoints a 2-ps-task job wrote (each variable in 2 shards, each ps task writing its own)
// restore in one process (weft evaluate --weights): the newest gives back the job's final
// weights bit for bit, and its accuracy; an earlier one other weights.
TEST_F(PsCli, CheckpointsWrittenByTwoPsTasksRestoreInOneProcessBitForBit) {
  write_dataset(dir_ / "data", 512, 128);
  const std::string weft = std::string(WEFT_BINARY_DIR) + "/weft";
  const std::string data = " --dataset " + (dir_ / "data").string();
  Result trained = shell("timeout -k 10 120 " + weft + " launch --ps 2 -n 2 -- " + weft +
                         " train --strategy parameter_server --variable-partitioner fixed:2" +
                         data + " --epochs 2 --batch-size 64 --quiet --checkpoint-dir " +
                         (dir_ / "ckpt").string() + " --save-model " + (dir_ / "model").string() +
                         " --metrics-json " + (dir_ / "m.json").string());
  ASSERT_EQ(trained.status, 0) << trained.output;
  nlohmann::json j = read_json(dir_ / "m.json");
  const std::string final_weights = j["weights_fingerprint"];
  Result newest = shell(weft + " evaluate " + (dir_ / "model").string() + data + " --weights " +
                        (dir_ / "ckpt").string());
  ASSERT_EQ(newest.status, 0) << newest.output;
  EXPECT_THAT(newest.output, HasSubstr("weights " + final_weights)) << newest.output;
  char accuracy[64];
  std::snprintf(accuracy, sizeof accuracy, "test accuracy %.4f", j["test_accuracy"].get<double>());
  EXPECT_THAT(newest.output, HasSubstr(accuracy)) << newest.output;
  std::vector<std::string> checkpoints;
  for (const auto& e : fs::directory_iterator(dir_ / "ckpt")) {
    if (e.is_directory()) checkpoints.push_back(e.path().string());
  }
  std::sort(checkpoints.begin(), checkpoints.end());
  ASSERT_EQ(checkpoints.size(), 2u) << "one checkpoint per epoch";
  Result first = shell(weft + " evaluate " + (dir_ / "model").string() + data + " --weights " +
                       checkpoints[0]);
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_THAT(first.output, HasSubstr("weights ")) << first.output;
  EXPECT_THAT(first.output, Not(HasSubstr("weights " + final_weights))) << first.output;
  Result missing = shell(weft + " evaluate " + (dir_ / "model").string() + data + " --weights " +
                         (dir_ / "data").string());
  EXPECT_NE(missing.status, 0);
  EXPECT_THAT(missing.output, HasSubstr("holds no checkpoint")) << missing.output;
}

// A worker SIGKILLed in the middle of synchronous training (--ps-mode sync), under the chief's fit
// (the tasks started by hand, not under weft launch): its slice's closure fails over to the
// other worker, which trains the rest alone, each step's slices still committed together; the
// run trains on each example once per epoch with one optimizer step per batch (the killed run's
// staged updates are aborted, its retry's committed). The chief ends normally.
TEST_F(PsCli, AWorkerKilledMidTrainingIsReplacedAndEveryBatchTrainsOnce) {
  write_dataset(dir_ / "data", 512, 128);
  weft::distribute::ReservedLocalPorts ports(5);  // chief, worker 0 and 1, ps 0 and 1
  auto env = [&](const std::string& type, int index) {
    return "TF_CONFIG='" +
           weft::testing::ps_tf_config(ports, type + ":" + std::to_string(index), 2, 2) +
           "' WEFT_CLUSTER_TOKEN=t0k3n ";
  };
  const std::string train =
      std::string(WEFT_BINARY_DIR) + "/weft train --strategy parameter_server --dataset " +
      (dir_ / "data").string() + " --epochs 2 --batch-size 64 --ps-mode sync ";
  // The chief timed in the background; each other task's pid kept; worker 1 killed once the
  // chief's log shows the second epoch begin; then every task this test started is ended.
  const std::string script =
      "cd " + dir_.string() + "; (" + env("chief", 0) + "timeout 120 " + train +
      "--metrics-json ps.json > chief.log 2>&1; echo $? > status) & " + env("worker", 0) + train +
      "--quiet > w0.log 2>&1 & p0=$!; " + env("worker", 1) + train +
      "--quiet > w1.log 2>&1 & p1=$!; " + env("ps", 0) + train +
      "--quiet > ps0.log 2>&1 & p2=$!; " + env("ps", 1) + train +
      "--quiet > ps1.log 2>&1 & p3=$!; " +
      "n=0; while ! grep -q 'Epoch 2/2' chief.log 2>/dev/null && [ ! -e status ] && [ $n -lt 1200 "
      "]; "
      "do sleep 0.05; n=$((n + 1)); done; [ -e status ] || touch killed_while_training; "
      "kill -9 $p1; "
      "n=0; while [ ! -e status ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done; "
      "kill -9 $p0 $p2 $p3 2>/dev/null; wait";
  Result r = shell(script);
  ASSERT_EQ(r.status, 0) << r.output;
  auto read = [&](const char* name) {
    std::ifstream in(dir_ / name);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string chief_log = read("chief.log");
  ASSERT_EQ(read("status"), "0\n") << chief_log << read("w1.log");
  EXPECT_TRUE(fs::exists(dir_ / "killed_while_training")) << chief_log;
  nlohmann::json j = read_json(dir_ / "ps.json");
  EXPECT_EQ(j["ps"]["mode"], "sync");
  EXPECT_EQ(j["examples_trained"], 2 * 512) << chief_log;
  EXPECT_EQ(j["steps"], 2 * 8) << chief_log;
  EXPECT_GT(j["test_accuracy"].get<double>(), 0.5) << j.dump();
  EXPECT_THAT(chief_log, HasSubstr("Epoch 2/2"));
}

// --max-staleness 0: two workers run one step at a time, each reading every earlier step's
// values, so the job trains the same weights as one process, bit for bit (--deterministic keeps
// the sums apart from the thread count). The metrics say the bound and the staleness measured.
// So it does with closures of three steps (--steps-per-execution 3), one closure at a time: a
// step reads its closure's earlier steps' updates, applied to the worker's copy of the
// variables and of Adam's slots as the ps tasks apply them. Each mode's flag is refused in the
// other (--max-staleness in sync, --backup-workers in async).
TEST_F(PsCli, MaxStalenessZeroTrainsAsOneProcessBitForBit) {
  write_dataset(dir_ / "data", 512, 128);
  const std::string weft = std::string(WEFT_BINARY_DIR) + "/weft";
  const std::string train = " train --dataset " + (dir_ / "data").string() +
                            " --epochs 1 --batch-size 64 --quiet --deterministic --metrics-json ";
  Result r = shell(weft + train + (dir_ / "one.json").string());
  ASSERT_EQ(r.status, 0) << r.output;
  r = shell("timeout 300 " + weft + " launch --ps 2 -n 2 -- " + weft + train +
            (dir_ / "ps0.json").string() + " --strategy parameter_server --max-staleness 0");
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json one = read_json(dir_ / "one.json"), ps0 = read_json(dir_ / "ps0.json");
  EXPECT_EQ(ps0["weights_fingerprint"], one["weights_fingerprint"]);
  EXPECT_EQ(ps0["steps"], 8);
  EXPECT_EQ(ps0["ps"]["max_staleness"], 0);
  EXPECT_TRUE(one["ps"].is_null()) << one.dump();
  // Staleness as measured (the updates applied between a step's start and its own): none.
  EXPECT_EQ(ps0["ps"]["staleness"]["steps_by_staleness"], nlohmann::json({{"0", 8}}));
  EXPECT_EQ(ps0["ps"]["staleness"]["max"], 0);
  r = shell("timeout 300 " + weft + " launch --ps 2 -n 2 -- " + weft + train +
            (dir_ / "ps0x3.json").string() +
            " --strategy parameter_server --max-staleness 0 --steps-per-execution 3");
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json x3 = read_json(dir_ / "ps0x3.json");
  EXPECT_EQ(x3["weights_fingerprint"], one["weights_fingerprint"]);
  EXPECT_EQ(x3["steps"], 8);
  EXPECT_EQ(x3["ps"]["staleness"]["steps_by_staleness"], nlohmann::json({{"0", 8}}));

  r = shell(weft + train + (dir_ / "x.json").string() +
            " --strategy parameter_server --ps-mode sync --max-staleness 2");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output,
              HasSubstr("--max-staleness needs --strategy parameter_server with --ps-mode async"));
  r = shell(weft + train + (dir_ / "x.json").string() +
            " --strategy parameter_server --backup-workers 1");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output,
              HasSubstr("--backup-workers needs --strategy parameter_server with --ps-mode sync"));
}

// An evaluator task beside the cluster (weft launch --evaluator; TensorFlow's side-car
// evaluation): it trains nothing, evaluates each epoch's checkpoint as the chief writes it and
// ends with the last epoch's, whose loss and accuracy are those the chief reports for the trained
// model (evaluated by the workers, a batch each: the same sums).
TEST_F(PsCli, AnEvaluatorTaskEvaluatesTheCheckpointsTheChiefWrites) {
  write_dataset(dir_ / "data", 512, 128);
  const std::string weft = std::string(WEFT_BINARY_DIR) + "/weft";
  Result r = shell("timeout 300 " + weft + " launch --ps 1 -n 1 --evaluator -- " + weft +
                   " train --strategy parameter_server --dataset " + (dir_ / "data").string() +
                   " --epochs 2 --batch-size 64 --checkpoint-dir " + (dir_ / "ckpts").string() +
                   " --metrics-json " + (dir_ / "ps.json").string());
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json j = read_json(dir_ / "ps.json");
  char expected[160];
  std::snprintf(expected, sizeof(expected),
                "[evaluator:0] evaluator: ckpt-2 (step 2):  accuracy: %.4f  loss: %.4f",
                j["test_accuracy"].get<double>(), j["test_loss"].get<double>());
  EXPECT_THAT(r.output, HasSubstr(expected));
  EXPECT_THAT(r.output, Not(HasSubstr("[evaluator:0] Epoch"))) << "the evaluator trained";

  Result refused = shell(weft + " launch -n 1 --evaluator -- true");
  EXPECT_NE(refused.status, 0);
  EXPECT_THAT(refused.output, HasSubstr("needs --ps"));
}

// weft server serves the ps tasks of a parameter-server job whose chief and workers run weft
// train: the job trains as when every task runs weft train. Any other task, or a process without
// TF_CONFIG, is refused, naming why.
TEST_F(PsCli, WeftServerServesThePsTasksOfAJob) {
  write_dataset(dir_ / "data", 256, 64);
  const std::string weft = std::string(WEFT_BINARY_DIR) + "/weft";
  Result r = launch("--ps 2 -n 2", "case $TASK in\n  ps:*) exec " + weft +
                                       " server ;;\n  *) exec " + weft +
                                       " train --strategy parameter_server --dataset $D/data "
                                       "--epochs 1 --batch-size 64 --quiet --metrics-json "
                                       "$D/ps.json ;;\nesac\n");
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json j = read_json(dir_ / "ps.json");
  EXPECT_EQ(j["ps"]["tasks"], 2);
  EXPECT_EQ(j["examples_trained"], 256);
  EXPECT_EQ(j["steps"], 4);

  r = shell("env -u TF_CONFIG " + weft + " server");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("weft server: TF_CONFIG names no cluster"));
  r = shell("TF_CONFIG='" +
            weft::testing::ps_tf_config(weft::distribute::ReservedLocalPorts(4), "worker:0", 1, 2) +
            "' " + weft + " server");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("weft server serves ps tasks; this is worker:0, which runs the "
                                  "program itself"));
}

// weft bench ps: a row per number of workers and size, its step time and bandwidth (workers x 2
// x bytes over the step), beside all-reduce between as many processes (none for one worker, or
// for the closure that touches no variable); then parameter-server training against
// multi_worker's on the same data, as a ratio. The MPI ranks of all-reduce run without leak
// checks (see multi_worker_cli_test's BenchAllreduceComparesEveryAlgorithmAndMpi).
TEST_F(PsCli, BenchPsTimesStepsBesideAllReduceAndComparesTraining) {
  write_dataset(dir_ / "data", 256, 64);
  const fs::path json = dir_ / "bench.json";
  const std::string weft = std::string(WEFT_BINARY_DIR) + "/weft";
  Result r = shell("LSAN_OPTIONS=detect_leaks=0 timeout 300 " + weft +
                   " bench ps --json --workers 1,2 --bytes 0,65536 --dataset " +
                   (dir_ / "data").string() + " --output " + json.string());
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json doc = read_json(json);
  ASSERT_EQ(doc["steps"].size(), 4u) << doc.dump();
  for (const auto& row : doc["steps"]) {
    const int workers = row["workers"].get<int>();
    const int64_t bytes = row["bytes"].get<int64_t>();
    const double seconds = row["step_seconds"].get<double>();
    EXPECT_EQ(row["ps"], 2);
    EXPECT_GT(seconds, 0) << row.dump();
    EXPECT_DOUBLE_EQ(row["gbps"].get<double>(), workers * 2.0 * bytes / seconds / 1e9);
    const bool beside = workers == 2 && bytes > 0;
    EXPECT_EQ(row.contains("allreduce_seconds"), beside) << row.dump();
    EXPECT_EQ(row.contains("allreduce_ring_seconds"), beside) << row.dump();
    if (beside) {
      EXPECT_GT(row["allreduce_ring_seconds"].get<double>(), 0) << row.dump();
    }
  }
  EXPECT_EQ(doc["steps"][0]["workers"], 1);
  EXPECT_EQ(doc["steps"][3]["workers"], 2);
  EXPECT_EQ(doc["steps"][3]["bytes"], 65536);
  const auto& t = doc["training"];
  const double ps = t["parameter_server"]["examples_per_second"].get<double>();
  const double mw = t["multi_worker"]["examples_per_second"].get<double>();
  EXPECT_GT(ps, 0);
  EXPECT_GT(mw, 0);
  EXPECT_DOUBLE_EQ(t["ratio"].get<double>(), ps / mw);
  EXPECT_GT(t["parameter_server"]["test_accuracy"].get<double>(), 0.5) << t.dump();
  EXPECT_GT(t["multi_worker"]["test_accuracy"].get<double>(), 0.5) << t.dump();

  r = shell(weft + " bench ps --bytes 6 --train-epochs 0");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("weft bench ps: --bytes 6 is not a whole number of float32"));
}

}  // namespace
