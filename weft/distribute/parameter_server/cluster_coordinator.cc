#include "weft/distribute/parameter_server/cluster_coordinator.h"

#include <grpcpp/grpcpp.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "weft/core/errors.h"
#include "weft/distribute/internal/grpc_glue.h"
#include "weft/distribute/parameter_server/internal/remote_variable.h"
#include "weft/distribute/parameter_server/internal/serving.h"
#include "weft/distribute/parameter_server/internal/tensor_value.h"
#include "weft/distribute/parameter_server/ps_client.h"
#include "weft/distribute/parameter_server/worker.grpc.pb.h"

namespace weft::distribute {
namespace internal {

// A closure's error, kept as its code and message: each fetch() and join() throws an exception of
// its own, so that no exception object is shared between threads.
struct Failure {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  [[noreturn]] void raise() const { std::rethrow_exception(make_error(code, message)); }
};

// The failure an exception being handled carries.
Failure failure_of_current_exception() {
  try {
    throw;
  } catch (const Error& e) {
    return {e.code(), e.message()};
  } catch (const std::exception& e) {
    return {ErrorCode::kInternal, e.what()};
  }
}

// A scheduled closure: what to run, and how it ended.
struct ClosureState {
  enum class Status { kQueued, kDone, kFailed, kCancelled };
  uint64_t id = 0;
  std::string function;
  std::vector<ClosureArgument> args;
  bool commit = true;        // ScheduleOptions::commit
  int64_t steps = 1;         // ScheduleOptions::steps
  bool backup_runs = false;  // ScheduleOptions::backup_runs
  // Under the coordinator's lock: its runs going on, and whether it has ended (its first run
  // returned, it failed or was cancelled).
  int runs = 0;
  bool ended = false;

  mutable std::mutex mu;
  mutable std::condition_variable cv;
  Status status = Status::kQueued;
  std::vector<Tensor> outputs;
  std::optional<Failure> failure;
  uint64_t staged_run = 0;  // without commit: the run whose updates stay staged (0: none)
  // ...and the ps tasks it staged them on, each with its incarnation then.
  std::map<std::string, uint64_t> staged_on;
  int64_t staleness = -1;  // RemoteValue::staleness
  bool won_by_backup = false;

  void finish(Status s, std::vector<Tensor> out, std::optional<Failure> f, uint64_t run = 0,
              std::map<std::string, uint64_t> on = {}, int64_t stale = -1, bool backup = false) {
    {
      std::lock_guard lock(mu);
      status = s;
      outputs = std::move(out);
      failure = std::move(f);
      staged_run = run;
      staged_on = std::move(on);
      staleness = stale;
      won_by_backup = backup;
    }
    cv.notify_all();
  }
};

}  // namespace internal

namespace {

namespace pb = ::weft::ps;
using Closure = std::shared_ptr<internal::ClosureState>;
using SystemClock = std::chrono::system_clock;

// How a closure's run on one worker ended.
enum class Ran { kDone, kFunctionFailed, kWorkerLost };

bool worker_lost(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED ||
         code == grpc::StatusCode::CANCELLED || code == grpc::StatusCode::ABORTED ||
         code == grpc::StatusCode::UNKNOWN;
}

}  // namespace

std::vector<Tensor> RemoteValue::fetch() const {
  WEFT_CHECK(state_ != nullptr, FailedPrecondition) << "RemoteValue: not made by schedule()";
  std::unique_lock lock(state_->mu);
  state_->cv.wait(lock, [&] { return state_->status != internal::ClosureState::Status::kQueued; });
  if (state_->failure) state_->failure->raise();
  return state_->outputs;
}

bool RemoteValue::ready() const {
  if (state_ == nullptr) return false;
  std::lock_guard lock(state_->mu);
  return state_->status != internal::ClosureState::Status::kQueued;
}

int64_t RemoteValue::staleness() const {
  if (state_ == nullptr) return -1;
  std::lock_guard lock(state_->mu);
  return state_->staleness;
}

bool RemoteValue::won_by_backup() const {
  if (state_ == nullptr) return false;
  std::lock_guard lock(state_->mu);
  return state_->won_by_backup;
}

class ClusterCoordinator::Impl {
 public:
  Impl(std::vector<std::pair<std::string, std::string>> workers, ClusterCoordinatorOptions options,
       const std::vector<std::pair<std::string, std::string>>& ps_tasks)
      : options_(std::move(options)),
        run_ids_(parameter_server::internal::UniqueIds::kClosures, std::random_device{}()) {
    WEFT_CHECK(!workers.empty(), InvalidArgument) << "ClusterCoordinator: no workers";
    WEFT_CHECK(!options_.service.token.empty(), InvalidArgument)
        << "ClusterCoordinator: the cluster token is empty (set "
        << coordination::kTokenEnvironmentVariable << "; weft launch makes one)";
    for (auto& [task, address] : workers) {
      auto w = std::make_unique<Worker>();
      w->task = task;
      w->address = address;
      w->channel = parameter_server::internal::open_channel(address, options_.service);
      w->stub = pb::Worker::NewStub(w->channel);
      workers_.push_back(std::move(w));
    }
    for (const auto& [task, address] : ps_tasks) {
      ps_.push_back(std::make_unique<parameter_server::ParameterServerClient>(task, address,
                                                                              options_.service));
    }
    for (size_t i = 0; i < workers_.size(); ++i) {
      workers_[i]->dispatcher = std::thread([this, i] {
        pthread_setname_np(pthread_self(), "weft-dispatch");  // TF's WorkerClosureProcessingLoop
        dispatch(i);
      });
    }
    if (options_.task_states) {
      watcher_ = std::thread([this] {
        pthread_setname_np(pthread_self(), "weft-task-watch");
        watch();
      });
    }
  }

  ~Impl() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      cancel_queued();
      for (auto& w : workers_) {
        if (w->running != nullptr) w->running->TryCancel();
      }
    }
    cv_.notify_all();
    for (auto& w : workers_) w->dispatcher.join();
    if (watcher_.joinable()) watcher_.join();
  }

  RemoteValue schedule(const RemoteFunction& fn, std::vector<ClosureArgument> args,
                       const ScheduleOptions& options) {
    std::unique_lock lock(mu_);
    raise_if_error(lock);
    WEFT_CHECK(!all_gave_up(), Unavailable)
        << "schedule('" << fn.name << "'): " << every_worker_lost();
    WEFT_CHECK(!options.backup_runs || !options.commit, InvalidArgument)
        << "schedule('" << fn.name
        << "'): a closure with backup runs is committed by commit_together (commit = false): "
           "only the run that returns first may be applied";
    for (const auto& a : args) {
      if (const auto* p = std::get_if<PerWorkerValues>(&a)) {
        WEFT_CHECK(per_worker_.count(p->id) != 0, InvalidArgument)
            << "schedule('" << fn.name << "'): per-worker value " << p->id
            << " was not made by this coordinator's create_per_worker_dataset";
      }
    }
    cv_.wait(lock, [&] { return queue_.size() < options_.max_queued_closures || stopping_; });
    auto c = std::make_shared<internal::ClosureState>();
    c->id = next_closure_++;
    c->function = fn.name;
    c->args = std::move(args);
    c->commit = options.commit;
    c->steps = options.steps;
    c->backup_runs = options.backup_runs;
    queue_.push_back(c);
    cv_.notify_all();
    RemoteValue r;
    r.state_ = c;
    return r;
  }

  // The runs whose updates `closures` left staged, in order, each with where it staged them;
  // FailedPrecondition for one that has not returned or was scheduled with commit.
  struct StagedRun {
    uint64_t run = 0;
    std::map<std::string, uint64_t> on;  // ps task → its incarnation
  };
  static std::vector<StagedRun> staged_runs(const std::vector<RemoteValue>& closures,
                                            const char* what) {
    std::vector<StagedRun> runs;
    for (const RemoteValue& v : closures) {
      WEFT_CHECK(v.state_ != nullptr, FailedPrecondition) << what << ": not made by schedule()";
      const internal::ClosureState& c = *v.state_;
      std::lock_guard lock(c.mu);
      WEFT_CHECK(!c.commit, FailedPrecondition)
          << what << ": closure " << c.id << " ('" << c.function
          << "') was scheduled to commit by itself";
      WEFT_CHECK(c.status != internal::ClosureState::Status::kQueued, FailedPrecondition)
          << what << ": closure " << c.id << " ('" << c.function << "') has not ended";
      runs.push_back({c.staged_run, c.staged_on});
    }
    return runs;
  }

  void commit_together(const std::vector<RemoteValue>& closures) {
    std::vector<StagedRun> runs = staged_runs(closures, "commit_together");
    for (std::size_t i = 0; i < runs.size(); ++i) {
      WEFT_CHECK(runs[i].run != 0, FailedPrecondition)
          << "commit_together: closure " << closures[i].state_->id << " did not return";
    }
    if (runs.empty()) return;
    std::vector<uint64_t> with;
    for (std::size_t i = 1; i < runs.size(); ++i) with.push_back(runs[i].run);
    for (auto& ps : ps_) {
      // The incarnation the closures staged on there (they all pushed to the same one, or the
      // server restarted between them and holds only the later ones).
      uint64_t incarnation = 0;
      for (const StagedRun& r : runs) {
        auto it = r.on.find(ps->task());
        if (it == r.on.end()) continue;
        WEFT_CHECK(incarnation == 0 || incarnation == it->second, Unavailable)
            << "commit_together: parameter server " << ps->task() << " at " << ps->address()
            << " restarted while the step's closures staged their updates on it";
        incarnation = it->second;
      }
      ps->commit(runs[0].run, with, incarnation);
    }
  }

  void abort_staged(const std::vector<RemoteValue>& closures) {
    for (const StagedRun& r : staged_runs(closures, "abort_staged")) {
      if (r.run != 0) abort_run(r.run);
    }
  }

  void join() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return (queue_.empty() && inflight_ == 0) || error_; });
    raise_if_error(lock);
  }

  // Under the lock.
  bool all_gave_up() const {
    for (const auto& w : workers_) {
      if (!w->gave_up) return false;
    }
    return true;
  }
  std::string every_worker_lost() const {
    std::string why;
    for (const auto& w : workers_)
      why += (why.empty() ? "" : "; ") + w->task + " (" + w->lost + ")";
    return "every worker was lost and none came back within " +
           std::to_string(options_.worker_recovery_timeout.count()) + " ms: " + why;
  }

  bool done() {
    std::unique_lock lock(mu_);
    raise_if_error(lock);
    return queue_.empty() && inflight_ == 0;
  }

  PerWorkerValues create_per_worker_dataset(const DatasetFunction& fn) {
    std::lock_guard lock(mu_);
    PerWorkerValues v{next_per_worker_++};
    per_worker_[v.id] = fn.name;
    return v;  // made on each worker before its first closure that takes it
  }

  int num_workers() const { return static_cast<int>(workers_.size()); }

 private:
  struct Worker {
    std::string task;
    std::string address;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<pb::Worker::Stub> stub;
    std::thread dispatcher;
    // Only its dispatcher uses these:
    uint64_t incarnation = 0;
    std::set<uint64_t> made;  // per-worker values made on this incarnation
    // Under mu_:
    grpc::ClientContext* running = nullptr;
    bool gave_up = false;
    std::string lost;            // why it was lost last
    bool lost_by_state = false;  // the coordination service says it is lost (task_states)
  };

  // Follows the task states: a worker the service declares lost has its running call cancelled
  // (its closure then runs elsewhere) and gets no closure until a process of it connects again.
  void watch() {
    uint64_t generation = 0;
    for (;;) {
      {
        std::lock_guard lock(mu_);
        if (stopping_) return;
      }
      coordination::TaskStates states;
      try {
        states = options_.task_states(generation, std::chrono::milliseconds(250));
      } catch (const Error&) {
        // The service is gone (the job is ending): calls to the workers tell the rest.
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(250), [&] { return stopping_; });
        continue;
      }
      generation = states.generation;
      std::lock_guard lock(mu_);
      for (auto& w : workers_) {
        auto it =
            std::find_if(states.tasks.begin(), states.tasks.end(),
                         [&](const coordination::TaskStatus& t) { return t.task == w->task; });
        if (it == states.tasks.end()) continue;
        const bool lost = it->state == coordination::TaskState::kLost;
        if (lost && !w->lost_by_state) {
          w->lost = "the coordination service lost it: " + it->error;
          std::fprintf(stderr, "weft: %s at %s lost (%s); it gets no closure until it is back\n",
                       w->task.c_str(), w->address.c_str(), w->lost.c_str());
          if (w->running != nullptr) w->running->TryCancel();
        }
        w->lost_by_state = lost;
      }
      cv_.notify_all();
    }
  }

  // Under the lock: an error of a closure is pending: cancel what is queued, wait until nothing
  // runs, then throw it (and forget it).
  void raise_if_error(std::unique_lock<std::mutex>& lock) {
    if (!error_) return;
    cancel_queued();
    cv_.wait(lock, [&] { return inflight_ == 0; });
    internal::Failure e = *error_;
    error_.reset();
    e.raise();
  }

  // Under the lock.
  void cancel_queued() {
    for (auto& c : queue_) {
      c->finish(internal::ClosureState::Status::kCancelled, {},
                internal::Failure{ErrorCode::kCancelled,
                                  "closure " + std::to_string(c->id) + " ('" + c->function +
                                      "') was cancelled: an earlier closure failed, or the "
                                      "coordinator stopped"});
    }
    queue_.clear();
    cv_.notify_all();
  }

  // Under the lock: closure `c` failed with `e`; the first error is the one raised.
  void fail(const Closure& c, const internal::Failure& e) {
    c->finish(internal::ClosureState::Status::kFailed, {}, e);
    if (!error_) {
      error_ = e;
      cancel_queued();
    }
  }

  // Under the lock: the closure an idle worker backs up (none: nullptr): of those running that
  // take backup runs, the one with the fewest runs, the oldest first.
  Closure backup_wanted() const {
    if (error_ || !queue_.empty()) return nullptr;
    Closure best;
    for (const Closure& c : backed_up_) {
      if (best == nullptr || c->runs < best->runs) best = c;
    }
    return best;
  }

  // Under the lock: `c`, taken from the queue, no longer runs as a closure that has not ended
  // (it ended, or went back to the queue).
  void leave_running(const Closure& c) {
    --inflight_;
    backed_up_.erase(std::remove(backed_up_.begin(), backed_up_.end(), c), backed_up_.end());
  }

  void dispatch(size_t index) {
    Worker& w = *workers_[index];
    for (;;) {
      Closure c;
      bool backup = false;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] {
          return stopping_ || !queue_.empty() || (!w.lost_by_state && backup_wanted());
        });
        if (stopping_) return;
        if (w.lost_by_state) {
          lock.unlock();
          if (!wait_for(w)) return;
          continue;
        }
        if (!queue_.empty()) {
          c = queue_.front();
          queue_.pop_front();
          ++inflight_;
          if (c->backup_runs) backed_up_.push_back(c);
        } else {
          c = backup_wanted();
          backup = true;
        }
        ++c->runs;
        cv_.notify_all();  // a schedule() waiting for room; a worker that may back it up
      }
      std::vector<Tensor> outputs;
      internal::Failure error;
      uint64_t staged_run = 0;
      std::map<std::string, uint64_t> staged_on;
      int64_t staleness = -1;
      Ran ran = run_on(index, *c, &outputs, &error, &staged_run, &staged_on, &staleness);
      bool requeued = false, given_up = false;
      {
        std::lock_guard lock(mu_);
        --c->runs;
        if (c->ended) {
          given_up = true;  // another run of it returned first
        } else if (ran == Ran::kDone) {
          c->finish(internal::ClosureState::Status::kDone, std::move(outputs), std::nullopt,
                    staged_run, std::move(staged_on), staleness, backup);
        } else if (ran == Ran::kFunctionFailed) {
          fail(c, error);
        } else if (c->runs > 0) {
          given_up = true;  // its other runs go on
        } else if (stopping_ || error_) {
          c->finish(
              internal::ClosureState::Status::kCancelled, {},
              internal::Failure{ErrorCode::kCancelled, "closure " + std::to_string(c->id) +
                                                           " was cancelled while its worker " +
                                                           w.task + " was lost"});
        } else {
          queue_.push_front(c);  // another worker runs it
          requeued = true;
          leave_running(c);
        }
        if (!given_up && !requeued) {
          c->ended = true;
          leave_running(c);
        }
        cv_.notify_all();
      }
      // A run given up that returned has its updates dropped (one that failed had them dropped
      // already).
      if (given_up && staged_run != 0) abort_run(staged_run);
      if (ran == Ran::kWorkerLost) {
        std::string why;
        {
          std::lock_guard lock(mu_);
          if (stopping_) return;
          why = w.lost;
        }
        if (requeued) {
          std::fprintf(stderr, "weft: %s at %s lost (%s); closure %llu runs on another worker\n",
                       w.task.c_str(), w.address.c_str(), why.c_str(),
                       static_cast<unsigned long long>(c->id));
        }
        if (!wait_for(w)) return;
      }
    }
  }

  // Runs closure `c` on worker `index`, first making the per-worker values it takes there.
  Ran run_on(size_t index, const internal::ClosureState& c, std::vector<Tensor>* outputs,
             internal::Failure* error, uint64_t* staged_run,
             std::map<std::string, uint64_t>* staged_on, int64_t* staleness) {
    Worker& w = *workers_[index];
    pb::RunClosureRequest request;
    request.set_function(c.function);
    std::vector<uint64_t> needed;
    for (const auto& a : c.args) {
      auto* arg = request.add_args();
      if (const auto* t = std::get_if<Tensor>(&a)) {
        parameter_server::internal::encode(*t, arg->mutable_tensor());
      } else {
        arg->set_per_worker(std::get<PerWorkerValues>(a).id);
        needed.push_back(std::get<PerWorkerValues>(a).id);
      }
    }
    // A worker that restarted has lost its per-worker values: it says NOT_FOUND; make them
    // again and run once more.
    for (int attempt = 0; attempt < 3; ++attempt) {
      for (uint64_t id : needed) {
        if (w.made.count(id) != 0) continue;
        if (Ran r = make_per_worker(index, id, error); r != Ran::kDone) return r;
      }
      // Each run stages its updates under an id of its own: a run given up for lost cannot add
      // to the next one's.
      const uint64_t run = run_ids_.next();
      request.set_closure_id(run);
      pb::RunClosureResponse response;
      grpc::ClientContext ctx;
      ctx.AddMetadata(distribute::internal::kTokenMetadataKey, options_.service.token);
      ctx.set_deadline(SystemClock::now() + options_.closure_timeout);
      if (!begin_call(w, &ctx)) return Ran::kWorkerLost;
      const int64_t applied_before = commits_.load();
      grpc::Status status = w.stub->RunClosure(&ctx, request, &response);
      end_call(w);
      if (status.ok()) {
        note_incarnation(w, response.incarnation());
        try {
          if (!response.error_code().empty()) {
            std::rethrow_exception(
                make_error(error_code_from_name(response.error_code()), response.error_message()));
          }
          for (int i = 0; i < response.outputs_size(); ++i) {
            outputs->push_back(parameter_server::internal::decode(
                response.outputs(i), "output " + std::to_string(i) + " of '" + c.function + "'"));
          }
          // What the closure staged on the parameter servers is applied (or left staged, for
          // commit_together).
          std::map<std::string, uint64_t> staged;
          for (int i = 0; i < response.staged_on_size(); ++i) {
            staged[response.staged_on(i)] =
                i < response.staged_incarnations_size() ? response.staged_incarnations(i) : 0;
          }
          if (c.commit) {
            commit_where_staged(run, staged);
            *staleness = commits_.fetch_add(c.steps) - applied_before;
          } else {
            *staged_run = run;
            *staged_on = std::move(staged);
          }
        } catch (...) {
          *error = internal::failure_of_current_exception();
          abort_run(run);
          return Ran::kFunctionFailed;
        }
        return Ran::kDone;
      }
      abort_run(run);
      if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
        w.made.clear();
        continue;
      }
      return call_failed(w, status, "closure " + std::to_string(c.id) + " ('" + c.function + "')",
                         error);
    }
    return lost(w, "its per-worker values kept disappearing (does it keep restarting?)");
  }

  Ran make_per_worker(size_t index, uint64_t id, internal::Failure* error) {
    Worker& w = *workers_[index];
    pb::CreatePerWorkerRequest request;
    request.set_id(id);
    {
      std::lock_guard lock(mu_);
      request.set_dataset_function(per_worker_.at(id));
    }
    request.set_num_input_pipelines(static_cast<int>(workers_.size()));
    request.set_input_pipeline_id(static_cast<int>(index));
    pb::WorkerReply reply;
    grpc::ClientContext ctx;
    ctx.AddMetadata(distribute::internal::kTokenMetadataKey, options_.service.token);
    ctx.set_deadline(SystemClock::now() + options_.service.call_timeout);
    if (!begin_call(w, &ctx)) return Ran::kWorkerLost;
    grpc::Status status = w.stub->CreatePerWorker(&ctx, request, &reply);
    end_call(w);
    if (!status.ok()) {
      return call_failed(w, status,
                         "create_per_worker_dataset('" + request.dataset_function() + "')", error);
    }
    note_incarnation(w, reply.incarnation());
    w.made.insert(id);
    return Ran::kDone;
  }

  // Applies what run `run` staged on the ps tasks `staged_on` names (none: nothing to apply), on
  // the incarnation of each it staged on. One after another: at once, on threads of their own,
  // trained no faster on 2 vCPUs (the MLP, weft bench ps: 7 557-8 743 against 8 335-8 928
  // examples/s).
  void commit_where_staged(uint64_t run, const std::map<std::string, uint64_t>& staged_on) {
    for (auto& ps : ps_) {
      auto it = staged_on.find(ps->task());
      if (it != staged_on.end()) ps->commit(run, {}, it->second);
    }
  }

  // Drops what run `run` staged on the parameter servers (its closure failed or its worker was
  // lost). A parameter server that cannot be reached keeps it, never applied.
  void abort_run(uint64_t run) {
    for (auto& ps : ps_) {
      try {
        ps->abort(run);
      } catch (const Error&) {
      }
    }
  }

  // A call to `w` failed: the worker is lost (it did not answer), or the call was refused for a
  // reason that would refuse it anywhere (the closure's error).
  Ran call_failed(Worker& w, const grpc::Status& status, const std::string& what,
                  internal::Failure* error) {
    if (worker_lost(status.error_code())) {
      return lost(w, status.error_message());
    }
    try {
      distribute::internal::throw_status(status, what, "worker " + w.task + " at " + w.address);
    } catch (...) {
      *error = internal::failure_of_current_exception();
    }
    return Ran::kFunctionFailed;
  }

  Ran lost(Worker& w, const std::string& why) {
    std::lock_guard lock(mu_);
    if (!w.lost_by_state) w.lost = why;  // else the service's verdict, which cancelled the call
    return Ran::kWorkerLost;
  }

  void note_incarnation(Worker& w, uint64_t incarnation) {
    if (w.incarnation != 0 && w.incarnation != incarnation) w.made.clear();  // it restarted
    w.incarnation = incarnation;
  }

  // Registers the call running on `w` (so that the destructor can cancel it); false when the
  // coordinator is stopping.
  bool begin_call(Worker& w, grpc::ClientContext* ctx) {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    w.running = ctx;
    return true;
  }
  void end_call(Worker& w) {
    std::lock_guard lock(mu_);
    w.running = nullptr;
  }

  // Waits until lost worker `w` can be reached again, at most worker_recovery_timeout; false
  // when it did not come back (or the coordinator stops). When no worker is left, the queued
  // closures fail naming every worker.
  bool wait_for(Worker& w) {
    const auto deadline = SystemClock::now() + options_.worker_recovery_timeout;
    {
      // Not at once: a worker that refused the call (it is stopping) still answers on its
      // channel for a moment.
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_; });
    }
    while (SystemClock::now() < deadline) {
      {
        std::unique_lock lock(mu_);
        if (stopping_) return false;
        if (w.lost_by_state) {  // until a process of it connects to the service again
          cv_.wait_until(lock,
                         std::min(deadline, SystemClock::now() + std::chrono::milliseconds(200)),
                         [&] { return stopping_ || !w.lost_by_state; });
          continue;
        }
      }
      w.channel->GetState(/*try_to_connect=*/true);
      if (w.channel->WaitForConnected(
              std::min(deadline, SystemClock::now() + std::chrono::milliseconds(200)))) {
        return true;
      }
    }
    std::lock_guard lock(mu_);
    w.gave_up = true;
    if (all_gave_up() && !queue_.empty()) {
      // Nothing can run what is queued: the first closure fails naming every worker, and the
      // others are cancelled.
      Closure first = queue_.front();
      queue_.pop_front();
      fail(first, internal::Failure{ErrorCode::kUnavailable, every_worker_lost()});
      cancel_queued();
    }
    cv_.notify_all();
    return false;
  }

  const ClusterCoordinatorOptions options_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::unique_ptr<parameter_server::ParameterServerClient>> ps_;
  parameter_server::internal::UniqueIds run_ids_;  // the id each run stages its updates under
  // Steps of the closures whose updates were applied (RemoteValue::staleness).
  std::atomic<int64_t> commits_{0};

  std::thread watcher_;  // follows options_.task_states, when given

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::deque<Closure> queue_;
  // Closures taken from the queue that have not ended, and of them those that take backup runs.
  int inflight_ = 0;
  std::vector<Closure> backed_up_;
  std::optional<internal::Failure> error_;
  uint64_t next_closure_ = 1;
  uint64_t next_per_worker_ = 1;
  std::map<uint64_t, std::string> per_worker_;  // id → dataset function
};

namespace {
ClusterCoordinatorOptions with_strategys_service(const ParameterServerStrategy& strategy,
                                                 ClusterCoordinatorOptions options) {
  WEFT_CHECK(strategy.is_chief(), FailedPrecondition)
      << "a ClusterCoordinator runs on the chief; this is " << strategy.task()
      << " (call strategy.join() there)";
  options.service.token = strategy.service_options().token;
  options.service.tls = strategy.service_options().tls;
  options.task_states = [strategy](uint64_t after, std::chrono::milliseconds timeout) {
    return strategy.wait_for_task_states(after, timeout);
  };
  return options;
}
}  // namespace

ClusterCoordinator::ClusterCoordinator(const ParameterServerStrategy& strategy,
                                       ClusterCoordinatorOptions options)
    : ClusterCoordinator(strategy.workers(), with_strategys_service(strategy, std::move(options)),
                         strategy.ps_tasks()) {}

ClusterCoordinator::ClusterCoordinator(
    std::vector<std::pair<std::string, std::string>> workers, ClusterCoordinatorOptions options,
    const std::vector<std::pair<std::string, std::string>>& ps_tasks)
    : impl_(std::make_unique<Impl>(std::move(workers), std::move(options), ps_tasks)) {}
ClusterCoordinator::~ClusterCoordinator() = default;
RemoteValue ClusterCoordinator::schedule(const RemoteFunction& fn,
                                         std::vector<ClosureArgument> args,
                                         const ScheduleOptions& options) {
  return impl_->schedule(fn, std::move(args), options);
}
void ClusterCoordinator::commit_together(const std::vector<RemoteValue>& closures) {
  impl_->commit_together(closures);
}
void ClusterCoordinator::abort_staged(const std::vector<RemoteValue>& closures) {
  impl_->abort_staged(closures);
}
void ClusterCoordinator::join() { impl_->join(); }
bool ClusterCoordinator::done() { return impl_->done(); }
PerWorkerValues ClusterCoordinator::create_per_worker_dataset(const DatasetFunction& fn) {
  return impl_->create_per_worker_dataset(fn);
}
int ClusterCoordinator::num_workers() const { return impl_->num_workers(); }

}  // namespace weft::distribute
