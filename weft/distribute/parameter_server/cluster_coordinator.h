// tf.distribute.experimental.coordinator.ClusterCoordinator: schedules functions on the workers of
// a parameter-server cluster and collects their results, as TensorFlow 2.4's does.
//
//   weft::distribute::ClusterCoordinator coordinator(strategy);  // ParameterServerStrategy
//   auto iter = coordinator.create_per_worker_dataset(dataset_fn);  // remote_functions.h
//   std::vector<weft::distribute::RemoteValue> losses;
//   for (int step = 0; step < 100; ++step) losses.push_back(coordinator.schedule(train_step,
//   {iter})); coordinator.join();                                  // every closure has run
//   weft::Tensor last = losses.back().fetch()[0];
//
// schedule() puts a closure on a bounded queue and returns at once; one dispatcher per worker (a
// thread named weft-dispatch; weft-task-watch follows the task states; both end with the
// coordinator) takes the next closure and runs it there, so each worker runs one closure at a
// time. A closure whose worker is lost (it cannot be reached, or restarted) goes back to the front
// of the queue and runs on another worker; the lost worker's dispatcher waits for it to come back
// (its per-worker datasets are made again). A closure whose function throws fails: the first such
// error is raised by join(), done() or the next schedule(), after the closures still queued are
// cancelled (their fetch() throws Cancelled) and those running have ended; then it is cleared. When
// join() or done() returns or throws, no closure is running (a backup run given up may be, below).
// The optimizer updates a closure makes (apply_gradients on variables that live on the ps tasks)
// are staged there under an id of its run and applied when it has returned (committed in the order
// closures finish); a run that failed, or whose worker was lost, has them dropped (aborted), and
// its retry stages its own. A closure scheduled with backup_runs may also run on a worker that
// would otherwise idle while it runs elsewhere (a backup run: the backup workers of synchronous
// training, MapReduce's backup tasks): the first run to return is its result, and the others
// are given up, their updates dropped.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "weft/core/tensor.h"
#include "weft/distribute/coordination/options.h"
#include "weft/distribute/parameter_server/options.h"
#include "weft/distribute/parameter_server/parameter_server_strategy.h"
#include "weft/distribute/parameter_server/remote_functions.h"

namespace weft::distribute {

namespace internal {
struct ClosureState;
}

// tf.distribute.experimental.coordinator.RemoteValue: a scheduled closure's outputs.
class RemoteValue {
 public:
  RemoteValue() = default;
  // Waits until the closure has run and returns its outputs; throws the function's error, or
  // Cancelled when the closure was cancelled (an earlier closure failed) and so never ran.
  std::vector<Tensor> fetch() const;
  std::vector<Tensor> get() const { return fetch(); }
  // Whether fetch() would return (or throw) without waiting.
  bool ready() const;
  // Once the closure has run and its updates were applied (scheduled with commit): how many
  // steps of other closures' updates (ScheduleOptions::steps) were applied between the start of
  // its run and its own, at least as many as the values it read missed (asynchronous SGD's
  // staleness). -1 otherwise.
  int64_t staleness() const;
  // Once the closure has run: whether the run that returned first, whose outputs these are, was
  // a backup run (ScheduleOptions::backup_runs), which another worker started while the first
  // still ran.
  bool won_by_backup() const;

 private:
  friend class ClusterCoordinator;
  std::shared_ptr<internal::ClosureState> state_;
};

// tf.distribute.experimental.coordinator.PerWorkerValues: a value each worker holds its own copy
// of (here, an iterator of a per-worker dataset); as a closure's argument, each worker's own.
struct PerWorkerValues {
  uint64_t id = 0;
};

// A closure's argument: a tensor (the same on every worker) or a per-worker value.
using ClosureArgument = std::variant<Tensor, PerWorkerValues>;

struct ClusterCoordinatorOptions {
  // The cluster token and TLS every call carries, and the deadline of the short calls.
  parameter_server::ServiceOptions service;
  // The deadline of one closure's run.
  std::chrono::milliseconds closure_timeout{std::chrono::hours(1)};
  // How long a lost worker is waited for before its dispatcher gives up on it (TensorFlow waits
  // an hour as well); its closures run on the other workers meanwhile.
  std::chrono::milliseconds worker_recovery_timeout{std::chrono::hours(1)};
  // schedule() waits while this many closures are queued (TensorFlow's 256 K).
  std::size_t max_queued_closures = std::size_t{256} << 10;
  // The cluster's task states (the coordination service's; the strategy's constructor sets
  // them): a worker the service declares lost (it missed its heartbeats: a stopped process, a
  // cut cable) has its running closure cancelled and run elsewhere at once, and is given none
  // until a new process of it registers. Without them a worker is lost only when a call to it
  // fails, and a stopped one holds its closure for closure_timeout.
  std::function<coordination::TaskStates(uint64_t after_generation,
                                         std::chrono::milliseconds timeout)>
      task_states;
};

struct ScheduleOptions {
  // Whether the updates the closure stages on the ps tasks are applied as soon as it returns;
  // false leaves them staged for commit_together (or abort_staged).
  bool commit = true;
  // The optimizer steps the closure makes, which RemoteValue::staleness counts (fit's closures
  // of steps_per_execution steps).
  int64_t steps = 1;
  // Whether a worker with nothing queued to run may run the closure too while it runs elsewhere
  // (a backup run; the running closure with the fewest runs, the oldest first, is backed up).
  // The first run to return is the closure's; the others are given up: their updates are
  // dropped, and join() does not wait for them. Needs commit = false (InvalidArgument): the
  // caller commits the winner's updates with commit_together.
  bool backup_runs = false;
};

class ClusterCoordinator {
 public:
  // The workers of `strategy`'s cluster, with its token and TLS (options.service's are not
  // used); on the chief only (FailedPrecondition elsewhere), as TensorFlow's.
  explicit ClusterCoordinator(const ParameterServerStrategy& strategy,
                              ClusterCoordinatorOptions options = {});
  // `workers`: each worker task's name and address ({"worker:0", "10.0.0.2:2222"}, ...), in
  // order. InvalidArgument for none. `ps_tasks` likewise: where a closure that ran commits the
  // updates it staged (Optimizer::apply_gradients on their variables), or aborts them when it
  // failed or its worker was lost.
  ClusterCoordinator(std::vector<std::pair<std::string, std::string>> workers,
                     ClusterCoordinatorOptions options,
                     const std::vector<std::pair<std::string, std::string>>& ps_tasks = {});
  // Cancels the queued closures and waits for those running.
  ~ClusterCoordinator();
  ClusterCoordinator(const ClusterCoordinator&) = delete;
  ClusterCoordinator& operator=(const ClusterCoordinator&) = delete;

  // Queues fn(args) to run on some worker; raises a pending error first (see above).
  RemoteValue schedule(const RemoteFunction& fn, std::vector<ClosureArgument> args = {},
                       const ScheduleOptions& options = {});
  // Synchronous steps: applies what `closures` (scheduled with commit = false, all returned)
  // staged as one step, their gradients summed in this order on each ps task. FailedPrecondition
  // for one that has not returned; a ps task's error as its call's.
  void commit_together(const std::vector<RemoteValue>& closures);
  // Drops what those of `closures` that returned (with commit = false) staged.
  void abort_staged(const std::vector<RemoteValue>& closures);
  // Waits until every closure scheduled has run; raises the first error, if any. A backup run
  // whose closure another run won may still be running: it is given up (see backup_runs).
  void join();
  // Whether every closure scheduled has run, without waiting; raises the first error, if any.
  bool done();
  // Makes the dataset fn(InputContext) on every worker (input pipeline i of the workers) and
  // an iterator over each: as a closure's argument, the worker's own iterator.
  PerWorkerValues create_per_worker_dataset(const DatasetFunction& fn);

  int num_workers() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::distribute
