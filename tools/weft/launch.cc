// `weft launch -n N [--ps K] [--replicas-per-worker R] -- CMD...`: a local cluster
// (DISTRIBUTED.md §3).
// Starts N processes of CMD, each with its TF_CONFIG (workers on 127.0.0.1 at ports the OS
// picked, which the launcher holds until they exit so that no other process can take one before
// its worker binds it: local_ports.h), the cluster token and a disjoint set of CPUs; prefixes
// each line of their output with the task's name; forwards SIGINT and SIGTERM; kills them if it
// dies itself; when one fails (the first that did not exit with train::kPeerFailedExitStatus,
// "another worker failed"), stops the others and exits with the failing task's status, naming
// it, or (--max-restarts K) starts them all again, up to K times, so that BackupAndRestore
// resumes the job.
//
// With --ps K (a parameter-server cluster, DISTRIBUTED.md §5) the cluster is chief:0,
// worker:0..N-1 and ps:0..K-1. A worker or PS that fails does not stop the others (the chief
// carries on without it, as its coordination service's recoverable jobs let it): --max-restarts
// K starts that task alone again, on the same address, up to K times each. The chief's failure
// stops every task and (--max-restarts) starts them all again; when the chief ends, the others
// are given a few seconds to end too, then stopped; the exit status is the chief's.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tools/weft/commands.h"
#include "tools/weft/flags.h"
#include "weft/core/errors.h"
#include "weft/core/hex.h"
#include "weft/distribute/cluster/local_ports.h"
#include "weft/distribute/coordination/options.h"
#include "weft/train/callbacks.h"

extern char** environ;

namespace weft::cli {
namespace {

struct LaunchFlags {
  int workers = 2;
  int ps = 0;  // > 0: a parameter-server cluster, with a chief
  int replicas_per_worker = 1;
  int max_restarts = 0;
  bool evaluator = false;  // --ps: an evaluator task beside the cluster
  int profiler_port = -1;  // >= 0: task i's profiler server at this + i (0: ports the OS picks)
  std::vector<std::string> command;
};

// How one start of the cluster ended.
struct Outcome {
  int code = 0;               // the exit code for weft launch: the failing task's, else 0
  std::string failure;        // "worker:1 (pid 123) was killed by signal 9 (Killed)"
  bool any_finished = false;  // a worker exited 0 (the job itself completed)
  bool signalled = false;     // SIGINT or SIGTERM came from outside and was forwarded
};

std::atomic<int> forwarded_signal{0};
void on_signal(int sig) { forwarded_signal = sig; }

std::string make_token() {
  unsigned char bytes[16];
  std::ifstream random("/dev/urandom", std::ios::binary);
  random.read(reinterpret_cast<char*>(bytes), sizeof(bytes));
  WEFT_CHECK(random.good(), Unavailable) << "weft launch: cannot read /dev/urandom";
  return hex_bytes(bytes, sizeof(bytes));
}

// The CPUs this process may use, shared out: child i gets an even, disjoint share (shares wrap
// around when there are more children than CPUs).
std::vector<cpu_set_t> cpu_shares(int n) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  sched_getaffinity(0, sizeof(mine), &mine);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &mine)) cpus.push_back(c);
  }
  std::vector<cpu_set_t> shares(static_cast<size_t>(n));
  for (auto& s : shares) CPU_ZERO(&s);
  int count = static_cast<int>(cpus.size());
  for (int i = 0; i < n; ++i) {
    if (count >= n) {
      for (int k = count * i / n; k < count * (i + 1) / n; ++k) CPU_SET(cpus[k], &shares[i]);
    } else {
      CPU_SET(cpus[static_cast<size_t>(i % count)], &shares[i]);
    }
  }
  return shares;
}

std::string describe_status(int status) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == train::kPreemptedExitStatus) {
    return "exited with status " + std::to_string(WEXITSTATUS(status)) +
           " (preempted: a chief after its backup, a worker after its closure)";
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == train::kPeerFailedExitStatus) {
    return "exited with status " + std::to_string(WEXITSTATUS(status)) +
           " (because another worker failed)";
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "ended with status " + std::to_string(status);
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

struct Child {
  std::string task;
  std::vector<std::string> env;  // its environment, TF_CONFIG included (kept for restarts)
  cpu_set_t cpus;
  int restarts = 0;  // --ps: times this task alone was started again
  pid_t pid = -1;
  int out_fd = -1;  // the read end of its stdout+stderr
  std::string partial;
  bool running = true;
  int status = 0;
};

// Prints each complete line the child wrote, prefixed "[worker:1] ".
void relay(Child& c, bool flush_all) {
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(c.out_fd, buf, sizeof(buf));
    if (n <= 0) break;
    c.partial.append(buf, static_cast<size_t>(n));
  }
  size_t start = 0, nl;
  while ((nl = c.partial.find('\n', start)) != std::string::npos) {
    std::printf("[%s] %.*s\n", c.task.c_str(), static_cast<int>(nl - start),
                c.partial.data() + start);
    start = nl + 1;
  }
  c.partial.erase(0, start);
  if (flush_all && !c.partial.empty()) {
    std::printf("[%s] %s\n", c.task.c_str(), c.partial.c_str());
    c.partial.clear();
  }
  std::fflush(stdout);
}

// Starts `program` with `argv` and `envp`, its stdout and stderr on `out`, on the CPUs `cpus`;
// killed (SIGKILL) if the launcher dies first, however it dies (PR_SET_PDEATHSIG). Returns 0, or
// the errno of the fork or exec that failed (then *pid is reaped). Called while the launcher has
// one thread, so that the child may do more than async-signal-safe calls before its exec.
int spawn(const std::string& program, const std::vector<char*>& argv,
          const std::vector<char*>& envp, int out, const cpu_set_t& cpus, pid_t* pid) {
  int exec_error[2];  // the child writes exec's errno here; closed unread when exec succeeds
  if (::pipe2(exec_error, O_CLOEXEC) != 0) return errno;
  const pid_t launcher = ::getpid();
  *pid = ::fork();
  if (*pid < 0) {
    int error = errno;
    ::close(exec_error[0]);
    ::close(exec_error[1]);
    return error;
  }
  if (*pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != launcher) ::_exit(127);  // the launcher died before prctl
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    ::sched_setaffinity(0, sizeof(cpu_set_t), &cpus);
    ::execvpe(program.c_str(), argv.data(), envp.data());
    int error = errno;
    (void)!::write(exec_error[1], &error, sizeof(error));
    ::_exit(127);
  }
  ::close(exec_error[1]);
  int error = 0;
  ssize_t n;
  while ((n = ::read(exec_error[0], &error, sizeof(error))) < 0 && errno == EINTR) {
  }
  ::close(exec_error[0]);
  if (n > 0) {
    ::waitpid(*pid, nullptr, 0);
    return error;
  }
  return 0;
}

// The environment of task `type`:`index` of `cluster` (the launcher's own, with TF_CONFIG, the
// token and the replicas per worker replaced).
std::vector<std::string> task_environment(const nlohmann::json& cluster, const std::string& type,
                                          int index, const std::string& token,
                                          int replicas_per_worker, int profiler_port) {
  nlohmann::json tf_config = {{"cluster", cluster}, {"task", {{"type", type}, {"index", index}}}};
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string v = *e;
    if (v.rfind("TF_CONFIG=", 0) == 0 || v.rfind("WEFT_CLUSTER_TOKEN=", 0) == 0 ||
        v.rfind("WEFT_REPLICAS_PER_WORKER=", 0) == 0 || v.rfind("WEFT_PROFILER_PORT=", 0) == 0) {
      continue;
    }
    env.push_back(v);
  }
  env.push_back("TF_CONFIG=" + tf_config.dump());
  env.push_back(std::string(distribute::coordination::kTokenEnvironmentVariable) + "=" + token);
  env.push_back("WEFT_REPLICAS_PER_WORKER=" + std::to_string(replicas_per_worker));
  if (profiler_port > 0) env.push_back("WEFT_PROFILER_PORT=" + std::to_string(profiler_port));
  return env;
}

// Starts child `c` (its output on a new pipe); 0, or the errno of what failed.
int start_child(Child& c, const std::string& program, const std::vector<std::string>& command) {
  std::vector<char*> envp, argv;
  for (auto& e : c.env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = command;
  args[0] = program;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int pipe_fds[2];
  WEFT_CHECK(::pipe2(pipe_fds, O_CLOEXEC) == 0, Unavailable)
      << "weft launch: pipe: " << std::strerror(errno);
  int error = spawn(program, argv, envp, pipe_fds[1], c.cpus, &c.pid);
  ::close(pipe_fds[1]);
  c.out_fd = pipe_fds[0];
  c.partial.clear();
  c.running = error == 0;
  if (error == 0) ::fcntl(c.out_fd, F_SETFL, O_NONBLOCK);
  return error;
}

Outcome run_cluster(const LaunchFlags& f) {
  Outcome outcome;
  const bool ps_mode = f.ps > 0;
  // The tasks, in TF_CONFIG's job order: with --ps, chief:0 first.
  std::vector<std::pair<std::string, int>> tasks;
  if (ps_mode) tasks.emplace_back("chief", 0);
  for (int i = 0; i < f.workers; ++i) tasks.emplace_back("worker", i);
  for (int i = 0; i < f.ps; ++i) tasks.emplace_back("ps", i);
  if (f.evaluator) tasks.emplace_back("evaluator", 0);
  const int n = static_cast<int>(tasks.size());
  // Held until every task has exited: the chief's coordination service binds its port when it
  // gets there, a restarted task binds its own again, and a restart of the cluster takes fresh
  // ports.
  distribute::ReservedLocalPorts ports(n);
  nlohmann::json cluster = nlohmann::json::object();
  for (int i = 0; i < n; ++i)
    cluster[tasks[static_cast<size_t>(i)].first].push_back(ports.address(i));
  // The token from the environment when set, so that `weft profile` (and other tools outside
  // the job) can authenticate; else a fresh one.
  const char* given_token = std::getenv(distribute::coordination::kTokenEnvironmentVariable);
  const std::string token = given_token && *given_token ? given_token : make_token();
  // --profiler-port: each task's server at port + i, or at ports reserved here (0).
  std::optional<distribute::ReservedLocalPorts> profiler_ports;
  std::vector<int> profiler_port(static_cast<size_t>(n), 0);
  if (f.profiler_port >= 0) {
    if (f.profiler_port == 0) profiler_ports.emplace(n);
    std::string hosts;
    for (int i = 0; i < n; ++i) {
      profiler_port[static_cast<size_t>(i)] =
          f.profiler_port == 0 ? profiler_ports->ports()[static_cast<size_t>(i)] : f.profiler_port + i;
      hosts += (i ? "," : "") + std::string("grpc://127.0.0.1:") +
               std::to_string(profiler_port[static_cast<size_t>(i)]);
    }
    std::fprintf(stderr, "weft launch: profiler servers: weft profile --hosts %s\n", hosts.c_str());
  }
  std::vector<cpu_set_t> shares = cpu_shares(n);
  // `weft` as the command means this very program, wherever it is installed.
  const std::string program = f.command[0] == "weft" ? self_program() : f.command[0];

  std::vector<Child> children(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    Child& c = children[static_cast<size_t>(i)];
    const auto& [type, index] = tasks[static_cast<size_t>(i)];
    c.task = type + ":" + std::to_string(index);
    c.env = task_environment(cluster, type, index, token, f.replicas_per_worker,
                             profiler_port[static_cast<size_t>(i)]);
    c.cpus = shares[static_cast<size_t>(i)];
    int error = start_child(c, program, f.command);
    if (error != 0) {
      // Stop the tasks already started: without this one they would wait for it in vain.
      std::string stopped;
      for (int k = 0; k < i; ++k) {
        Child& started = children[static_cast<size_t>(k)];
        ::kill(started.pid, SIGKILL);
        ::waitpid(started.pid, nullptr, 0);
        stopped += (k ? ", " : "") + started.task;
      }
      for (int k = 0; k <= i; ++k) ::close(children[static_cast<size_t>(k)].out_fd);
      std::string why = "weft launch: cannot start " + program + " as " + c.task + ": " +
                        std::strerror(error) + (stopped.empty() ? "" : "; stopped " + stopped);
      if (error == ENOENT || error == EACCES || error == ENOEXEC) throw InvalidArgument(why);
      throw Unavailable(why);  // out of processes or memory
    }
  }

  // Children are reaped as they exit, in that order, so that the first to fail is the one named
  // (the others usually fail moments later because of it). The reaper runs until every child,
  // those started again included, has been reaped; with none left to wait for at the moment
  // (ECHILD) it looks again shortly, since a task may be started again.
  std::mutex exits_mu;
  std::vector<std::pair<pid_t, int>> exits;
  std::atomic<bool> reaping{true};
  std::thread reaper([&] {
    while (reaping) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, 0);
      if (pid < 0) {
        if (errno == ECHILD) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      std::lock_guard lock(exits_mu);
      exits.emplace_back(pid, status);
    }
  });
  using TimePoint = std::chrono::steady_clock::time_point;
  int failed = -1;  // the child named as the failure
  // After a failure that names another task, how long to wait for that task to exit.
  TimePoint grace_deadline = TimePoint::max();
  bool stopping = false;
  auto stop_deadline = std::chrono::steady_clock::time_point::max();
  auto running = [&] {
    int n = 0;
    for (auto& c : children) n += c.running;
    return n;
  };
  auto stop_all = [&] {
    stopping = true;
    stop_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (auto& other : children) {
      if (other.running) ::kill(other.pid, SIGTERM);
    }
  };
  auto announce_and_stop = [&] {
    Child& c = children[static_cast<size_t>(failed)];
    std::fprintf(stderr, "weft launch: %s (pid %d) %s; stopping the other %s\n", c.task.c_str(),
                 static_cast<int>(c.pid), describe_status(c.status).c_str(),
                 ps_mode ? "tasks" : "workers");
    stop_all();
  };
  // --ps: after the chief has ended, how long the others may take to end on their own.
  TimePoint chief_ended_deadline = TimePoint::max();
  // --ps: a worker or PS that failed goes on without the others noticing here; it is started
  // again alone while it has restarts left (and the chief runs).
  auto task_failed = [&](Child& c) {
    std::string what = c.task + " (pid " + std::to_string(c.pid) + ") " + describe_status(c.status);
    if (c.restarts >= f.max_restarts || !children[0].running) {
      std::fprintf(stderr,
                   "weft launch: %s; not started again (--max-restarts %d), the others go on\n",
                   what.c_str(), f.max_restarts);
      return;
    }
    ++c.restarts;
    std::fprintf(stderr, "weft launch: %s; starting it again alone (restart %d of %d)\n",
                 what.c_str(), c.restarts, f.max_restarts);
    std::fflush(stderr);
    ::close(c.out_fd);
    if (int error = start_child(c, program, f.command); error != 0) {
      c.out_fd = -1;
      std::fprintf(stderr, "weft launch: cannot start %s again: %s\n", c.task.c_str(),
                   std::strerror(error));
    }
  };
  while (running() > 0) {
    std::vector<pollfd> fds;
    for (auto& c : children) {
      if (c.running) fds.push_back({c.out_fd, POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), 100);
    for (auto& c : children) {
      if (c.running) relay(c, false);
    }
    if (int sig = forwarded_signal.exchange(0)) {
      outcome.signalled = true;
      for (auto& c : children) {
        if (c.running) ::kill(c.pid, sig);
      }
    }
    std::vector<std::pair<pid_t, int>> exited;
    {
      std::lock_guard lock(exits_mu);
      exited.swap(exits);
    }
    for (auto [pid, status] : exited) {
      size_t i = 0;
      while (i < children.size() && children[i].pid != pid) ++i;
      if (i == children.size()) continue;
      Child& c = children[i];
      c.running = false;
      c.status = status;
      relay(c, true);
      bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (ps_mode) {
        if (i == 0) {  // the chief: its end is the job's
          outcome.any_finished = ok;
          if (!ok && !stopping) {
            failed = 0;
            announce_and_stop();
          } else if (ok) {
            outcome.code = 0;
            chief_ended_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
          }
        } else if (!ok && !stopping) {
          task_failed(c);
        }
        continue;
      }
      outcome.any_finished = outcome.any_finished || ok;
      if (!ok && !stopping) {
        // A worker that failed only because another did says so by its exit status; name the
        // one that failed first for a reason of its own, when it has exited too.
        bool because_of_another =
            WIFEXITED(status) && WEXITSTATUS(status) == train::kPeerFailedExitStatus;
        if (failed < 0 || !because_of_another) failed = static_cast<int>(i);
        if (!because_of_another && grace_deadline == TimePoint::max())
          grace_deadline = TimePoint::min();
        if (grace_deadline == TimePoint::max()) {
          grace_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        }
      }
    }
    if (!stopping && failed >= 0 && std::chrono::steady_clock::now() >= grace_deadline) {
      announce_and_stop();
    }
    if (!stopping && std::chrono::steady_clock::now() >= chief_ended_deadline) {
      std::fprintf(stderr, "weft launch: the chief has ended; stopping the tasks still running\n");
      stop_all();
    }
    if (stopping && std::chrono::steady_clock::now() > stop_deadline) {
      for (auto& c : children) {
        if (c.running) ::kill(c.pid, SIGKILL);
      }
      stop_deadline = std::chrono::steady_clock::time_point::max();
    }
  }
  if (failed >= 0 && !stopping) announce_and_stop();
  reaping = false;  // every child has been reaped: the reaper's next waitpid fails with ECHILD
  reaper.join();
  for (auto& c : children) {
    if (c.out_fd >= 0) ::close(c.out_fd);
  }
  if (failed >= 0) {
    const Child& c = children[static_cast<size_t>(failed)];
    outcome.code = exit_code_of(c.status);
    outcome.failure = c.task + " (pid " + std::to_string(c.pid) + ") " + describe_status(c.status);
  }
  return outcome;
}

int launch(const LaunchFlags& f) {
  WEFT_CHECK(!f.command.empty(), InvalidArgument)
      << "weft launch: no command; usage: weft launch -n N -- weft train --strategy multi_worker";
  const char* all = f.ps > 0 ? "task" : "worker";
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  for (int restarts = 0;; ++restarts) {
    Outcome o = run_cluster(f);
    // Not restarted: a success, a stop asked for from outside, or a job that had completed.
    if (o.code == 0 || o.signalled || o.any_finished) return o.code;
    if (restarts == f.max_restarts) {
      if (f.max_restarts > 0) {
        std::fprintf(stderr,
                     "weft launch: %s; the cluster was restarted %d time%s (--max-restarts %d), "
                     "giving up\n",
                     o.failure.c_str(), restarts, restarts == 1 ? "" : "s", f.max_restarts);
      }
      return o.code;
    }
    std::fprintf(stderr, "weft launch: %s; restarting every %s (restart %d of %d)\n",
                 o.failure.c_str(), all, restarts + 1, f.max_restarts);
  }
}

}  // namespace

std::string self_program() {
  char self[4096];
  ssize_t len = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  return len > 0 ? std::string(self, static_cast<size_t>(len)) : "weft";
}

void add_launch(CLI::App& app) {
  auto flags = std::make_shared<LaunchFlags>();
  auto* cmd = app.add_subcommand(
      "launch", "Run a command as a local cluster of N workers (TF_CONFIG set for each)");
  cmd->add_option("-n,--workers", flags->workers, "number of worker processes")
      ->check(in_range(1, 1024));
  cmd->add_option("--replicas-per-worker", flags->replicas_per_worker,
                  "replicas (threads) in each worker: the default of weft train's --replicas")
      ->check(in_range(1, 256));
  cmd->add_option("--ps", flags->ps,
                  "a parameter-server cluster: a chief, the N workers and this many ps tasks")
      ->check(in_range(0, 1024));
  cmd->add_option("--max-restarts", flags->max_restarts,
                  "when a worker fails, stop the others and start them all again, up to this "
                  "many times (with --backup-dir the job resumes where it was backed up); with "
                  "--ps, start a failed worker or ps task alone again, up to this many times each")
      ->check(in_range(0, 1000000));
  cmd->add_flag("--evaluator", flags->evaluator,
                "with --ps: an evaluator task too (TF_CONFIG's \"evaluator\"), which evaluates "
                "each checkpoint the chief writes (weft train --checkpoint-dir)");
  cmd->add_option("--profiler-port", flags->profiler_port,
                  "task i serves the profiler at this port + i (0: ports the OS picks), for weft "
                  "profile; weft train reads it (WEFT_PROFILER_PORT), and the --hosts list is "
                  "printed")
      ->check(in_range(0, 65535))
      ->default_str("");
  cmd->add_option("command", flags->command, "the command each worker runs, after --")->required();
  cmd->callback([flags] {
    if (flags->evaluator && flags->ps == 0) {
      throw CLI::ValidationError("--evaluator", "needs --ps (a parameter-server cluster)");
    }
    int code = launch(*flags);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace weft::cli
