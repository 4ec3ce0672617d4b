// tf.distribute.experimental.ParameterServerStrategy (TensorFlow 2.4): a cluster of a chief, which
// coordinates (ClusterCoordinator), workers, which run closures, and ps tasks, which hold the
// variables. Every task runs the same program and learns its role from TF_CONFIG:
//
//   // TF_CONFIG='{"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"],
//   //             "ps": ["h3:2222"]}, "task": {"type": "worker", "index": 0}}'
//   weft::distribute::ParameterServerStrategy strategy(
//       weft::distribute::cluster_resolver::TFConfigClusterResolver{});
//   { auto scope = strategy.scope(); model = build_model(); }  // variables on the ps tasks
//   if (!strategy.is_chief()) { strategy.join(); return 0; }  // serve until the chief is done
//
// The chief serves the coordination service, in which workers and ps tasks are recoverable (their
// loss is a task state the chief acts on, coordination/options.h); a ps task serves a
// ParameterServer, a worker a WorkerService, each on its own address from TF_CONFIG. Variables
// made in scope() on the chief are created on the ps tasks, round-robin in creation order, or cut
// along axis 0 by the variable_partitioner (partitioners.h) into shards placed round-robin: a
// ShardedVariable, which reads as the shards concatenated. On every task the same variable
// (the same creation order) is bound to the same place, so that a closure on a worker reads it
// from there. A read outside a closure pulls the value; an assignment writes it through.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "weft/distribute/cluster/cluster_resolver.h"
#include "weft/distribute/coordination/options.h"
#include "weft/distribute/parameter_server/options.h"
#include "weft/distribute/parameter_server/partitioners.h"
#include "weft/distribute/strategy.h"

namespace weft::distribute {

struct ParameterServerOptions {
  // Cuts variables into shards along axis 0 (none: each variable on one ps task).
  VariablePartitioner variable_partitioner{};
  // The control plane; an empty token is read from WEFT_CLUSTER_TOKEN.
  coordination::CoordinationOptions coordination;
  // How long a task waits at start for the chief's service and the other tasks.
  std::chrono::milliseconds startup_timeout{std::chrono::minutes(10)};
  // How fit trains (weft train --ps-mode). Asynchronous (TensorFlow's): each step is one worker's
  // closure on the whole batch, applied when it returns, on values other steps may have changed
  // meanwhile. Synchronous (TF1's SyncReplicasOptimizer, every worker aggregated): each step's
  // batch is cut among the workers, their gradients summed on the ps tasks and applied once,
  // and the next step starts from the values it left.
  bool synchronous = false;
  // Asynchronous fit: the most earlier steps whose updates a step may not see when it reads the
  // variables (SSP's staleness bound): fit runs at most max_staleness + 1 steps at once, so every
  // step up to max_staleness + 1 before it has been applied when it starts. 0 trains as one
  // process would, one step at a time. None: 2 x workers - 1 (two steps per worker in flight;
  // TensorFlow sets no bound). With compile's steps_per_execution N, fit runs closures of N
  // steps, whose updates are applied at their commit: max_staleness / N + 1 of them at once (a
  // step reads its own closure's earlier steps), one when N > max_staleness. InvalidArgument
  // below 0, or with `synchronous` (whose steps always read the last step's values).
  std::optional<int64_t> max_staleness{};
  // Synchronous fit: how many of the workers are backups (TF1's SyncReplicasOptimizer with
  // total_num_replicas = workers, replicas_to_aggregate = workers - backup_workers). Each step's
  // batch is cut into workers - backup_workers parts; a worker with no part of its own runs a
  // part that another still runs, and each part's first run to return is the one applied (its
  // rows trained once), so a slow or frozen worker delays no step. InvalidArgument below 0,
  // without `synchronous`, or unless fewer than the workers.
  int backup_workers = 0;
};

class ParameterServerStrategy : public Strategy {
 public:
  // The cluster `resolver` describes; it needs a chief, at least one worker and one ps task
  // (InvalidArgument naming what is missing).
  explicit ParameterServerStrategy(const cluster_resolver::ClusterResolver& resolver,
                                   ParameterServerOptions options = {});
  // The ParameterServerStrategy `strategy` is (a model's, say); InvalidArgument for another.
  explicit ParameterServerStrategy(const Strategy& strategy);
  // Whether `strategy` is a ParameterServerStrategy (TF's isinstance check).
  static bool is(const Strategy& strategy);

  // This process's task: "chief:0", "worker:1", "ps:0".
  std::string task() const;
  bool is_chief() const;
  int num_workers() const;
  int num_ps() const;
  // The workers' task names and addresses, in order (a ClusterCoordinator's).
  std::vector<std::pair<std::string, std::string>> workers() const;
  // The ps tasks' names and addresses, in order.
  std::vector<std::pair<std::string, std::string>> ps_tasks() const;
  // ParameterServerOptions::synchronous.
  bool synchronous() const;
  // The staleness bound fit keeps (ParameterServerOptions::max_staleness, or its default; 0 when
  // synchronous).
  int64_t max_staleness() const;
  // ParameterServerOptions::backup_workers.
  int backup_workers() const;
  // The cluster token and TLS files the tasks' services take.
  const parameter_server::ServiceOptions& service_options() const;
  // On a worker or ps task: serves until the chief has finished (it returns) or failed
  // (Unavailable naming it), or until this worker has left (leave()). FailedPrecondition on the
  // chief.
  void join() const;
  // On a worker, told to go (`why`: "SIGTERM", a preemption): it leaves the cluster after the
  // closure it runs, unless the chief says within `wait` that it is stopping (announce_stopping:
  // every task was told to go at once, and the chief, backing up, needs its workers until then;
  // the job then ends as the chief does). Leaving, the worker refuses any other closure (its
  // coordinator runs it elsewhere), returns once its closure has, and tells the coordination
  // service it left, so the chief gives it no closure until a process of it registers again;
  // join() then returns. Whether it left. FailedPrecondition on another task.
  bool leave(const std::string& why,
             std::chrono::milliseconds wait = std::chrono::milliseconds(2000)) const;
  // On the chief: its fit stops early (stop_training; a preemption's backup), so a worker told to
  // go from now on stays (leave()).
  void announce_stopping() const;
  // This run of the cluster: the chief's incarnation, the same on every task and new when the
  // chief starts again. Functions registered under a name carrying it are never another run's
  // (in a process that served tasks of several, as tests do).
  uint64_t run_id() const;
  // How many fits and evaluates this task began on the cluster before this one (0, 1, ...). A
  // worker serves from its program's first call until the chief's program is done, so it holds
  // that call's data only.
  int64_t next_call() const;
  // The coordination service's key-value store, shared by every task, for values of any size
  // (kept in pieces of coordination::kMaxValueBytes, so set a key once: a reader could see the
  // pieces of two values). get() waits until it is set, at most `timeout` (DeadlineExceeded).
  // remove() deletes what put() set under `key`, and every key under it ("key/...").
  void put(const std::string& key, const std::string& value) const;
  std::string get(const std::string& key, std::chrono::milliseconds timeout) const;
  void remove(const std::string& key) const;

  // Every task's state as the coordination service sees it (connected, lost with why, left),
  // once it changes after `after_generation` (a TaskStates::generation) or `timeout` passes.
  coordination::TaskStates wait_for_task_states(uint64_t after_generation,
                                                std::chrono::milliseconds timeout) const;

  // On the chief, after a call failed: the ps tasks that cannot be reached now or that no longer
  // hold the variables made on them (they restarted, holding nothing), in order.
  std::vector<std::string> lost_ps_tasks() const;
  // On the chief: waits until each of `tasks` answers (at most startup_timeout; DeadlineExceeded
  // naming it), then creates there again the variables made on it that it no longer holds, with
  // their optimizer slots. They hold no value until assigned: restore them (a parameter-server
  // fit restores its backup) before they are read.
  void recreate_lost_variables(const std::vector<std::string>& tasks) const;
};

}  // namespace weft::distribute
