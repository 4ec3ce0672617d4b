// Replicas on threads (MirroredStrategy's engine): one std::thread per replica, each with its
// share of the cores, its ReplicaContext and an UpdateCollector, and the in-memory collectives
// the contexts use. Every collective call carries its kind, sequence number and the shapes and
// dtypes of its values; replicas that disagree, or a replica that returns from the step while
// others wait in a collective, fail every replica with a message naming both. A replica that
// throws ends every other replica's wait at once; run() reports the first failure.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "weft/autodiff/variable.h"
#include "weft/core/replica_context.h"
#include "weft/distribute/collective/communicator.h"
#include "weft/distribute/collective/local/communicator.h"

namespace weft::distribute::internal {

// The other processes of a cluster, when the group is one worker's replicas: its replicas are
// [first_replica, first_replica + replicas) of global_replicas, and `comm` joins the workers.
// With overlap, fit's training steps all-reduce their gradients in packs of
// options.bytes_per_pack (0: kDefaultGradientPackBytes) while the backward pass runs.
struct Workers {
  collective::Communicator* comm = nullptr;
  int first_replica = 0;
  int global_replicas = 1;
  collective::CommunicationOptions options;
  bool overlap = false;
};

// The pack size of overlapped gradient all-reduces when CommunicationOptions leave it at 0
// (docs/benchmarks.md, "Gradient packs during the backward pass").
inline constexpr std::size_t kDefaultGradientPackBytes = 256 << 10;

class ReplicaGroup {
 public:
  // Each replica's kernels get total_threads / replicas threads (at least one); a merge_call,
  // while the other replicas wait, gets all of them. With `workers`, all_reduce and the
  // variable updates of a step also combine every worker's (after this group's own, so the sums
  // keep the fixed tree of DISTRIBUTED.md §2), and merge_call runs on every worker.
  ReplicaGroup(int replicas, int total_threads, std::optional<Workers> workers = std::nullopt);
  ~ReplicaGroup();
  ReplicaGroup(const ReplicaGroup&) = delete;
  ReplicaGroup& operator=(const ReplicaGroup&) = delete;

  // True on a thread that runs a replica of some group.
  static bool on_replica_thread();

  int size() const { return static_cast<int>(contexts_.size()); }
  int global_size() const { return workers_ ? workers_->global_replicas : size(); }
  int first_replica() const { return workers_ ? workers_->first_replica : 0; }
  bool across_workers() const { return workers_.has_value(); }
  // Over the workers, between runs (this process alone: value): the element-wise sum, the
  // values concatenated along axis 0 (in worker order, of any lengths), the chief's value, and a
  // wait for every worker (StrategyImpl's collectives across workers).
  Tensor sum_across_workers(const Tensor& value);
  Tensor all_gather_across_workers(const Tensor& value);
  Tensor broadcast_across_workers(const Tensor& value);
  void barrier_across_workers();
  // Runs fn(r) on replica r's thread for every r, and returns when all have; then writes the
  // variable updates the replicas recorded, combined (weft/distribute/updates.h). Rethrows the
  // first failure: a replica's exception, or FailedPrecondition for replicas that disagreed. One
  // run at a time: a call from one of the group's replicas, or while another thread's run is in
  // progress, throws FailedPrecondition.
  void run(const std::function<void(int replica)>& fn);

  std::vector<Tensor> all_reduce(int replica, ReduceOp op, const std::vector<Tensor>& values);
  // ReplicaContext::begin_all_reduce: the replicas' sum is made at once, the sum across workers
  // on the group's communication thread, in the order the calls began.
  std::unique_ptr<ReplicaContext::Pending> begin_all_reduce(int replica, ReduceOp op,
                                                            const std::vector<Tensor>& values);
  std::size_t gradient_pack_bytes() const;
  Tensor all_gather(int replica, const Tensor& value, int64_t axis);
  void merge_call(int replica, const std::function<void()>& fn);
  // Every replica runs fn(replica, size()) at once, with no replica context (as merge_call's
  // fn), then `then` runs once on the last to finish.
  void merge_call_in_parts(int replica, const std::function<void(int, int)>& fn,
                           const std::function<void()>& then);

 private:
  class Context;
  struct Call;  // what a replica brought to the current collective
  // Deposits `call`, waits for every replica, and runs `on_all` once (on the last to arrive)
  // with every replica's call. Throws when the group failed.
  // `may_spin`: false where the waiters' cores are needed by the replica that goes on.
  void meet(int replica, Call call, const std::function<void(std::vector<Call>&)>& on_all,
            bool may_spin = true);
  // cv.wait(lock, ready), spinning first when the group may (spin_).
  template <typename Ready>
  void wait(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Ready ready,
            bool may_spin = true);
  // An all_reduce's round: every replica's values, flattened ([replica][value]), and the outputs
  // (undefined for a value no replica passed), views into one flat tensor per dtype (across
  // workers, all-reduced at once).
  struct Round {
    std::vector<std::vector<Tensor>> inputs;
    std::vector<Tensor> outputs;
    std::vector<Tensor> packs;
    // Where pack k's elements are read from, value by value: the pack's own view, or, when the
    // group has one replica, the value itself (the communicator reads it directly: one copy
    // fewer). `from_input[i]`: value i is read from the input, and no replica copies it.
    std::vector<std::vector<collective::Piece>> pieces;
    std::vector<bool> from_input;
    // begin_all_reduce: done when the communication thread has reduced the packs.
    std::shared_future<void> across;
    // An all_reduce at a call site whose layout the workers learned at its first call (site:
    // its kind and number in the step): this group's own layout, and the flag, pack 0's last
    // element, that a worker whose values do not fit the agreed layout sets to 1.
    std::string site;
    std::vector<int64_t> layout;
    Tensor flag;
  };
  // The replicas' part of an all_reduce: they meet and lay the values out in one flat pack per
  // dtype (the outputs are views into them), every replica all-reduces its values into the packs
  // on its rank of `local_` (the fixed tree), and with `then` they meet again; `then` runs on the
  // last to arrive, under the lock, with the shared round. Returns the round as every replica
  // sees it after the last meeting. Across workers, the packs are laid out from the values
  // themselves (`as_given`: every value is defined everywhere) or from what every worker has.
  Round reduce_replicas(int replica, ReduceOp op, const std::vector<Tensor>& values,
                        const std::string& kind, bool as_given,
                        const std::function<void(Round&)>& then);
  void fail(std::exception_ptr error, const std::string& why);
  // In a catch block, with mu_ held: fails the group with the exception being handled ("replica
  // R failed in `what`") and throws Aborted.
  [[noreturn]] void fail_in(int replica, const std::string& what);
  void worker(int replica);
  int finished() const { return static_cast<int>(std::count(done_.begin(), done_.end(), true)); }

  // The cluster's part of an all_reduce: first the outputs, packed (every value some worker has,
  // zeros where none of this group's replicas passed it), then, once this group has summed its
  // replicas into them, the packs summed across the workers.
  void pack_across_workers(const std::vector<Call>& calls, bool as_given, const std::string& site,
                           Round& round);
  // The round's packs, outputs and pieces as `meta` lays the values out (with `contribute`
  // false: zeros, and no outputs).
  void lay_out(const std::vector<int64_t>& meta, bool contribute, Round& round);
  // The round's values as this group's replicas pass them, summed into its outputs: on every
  // replica's rank of `local_` at once, or (replica < 0) on this thread alone, in the same tree.
  void sum_replicas(int replica, ReduceOp op, const Round& round);
  void reduce_packs(Round& round, collective::Communicator& comm);
  // A step's combined variable updates summed across the workers, values and counts, in one
  // all-reduce per dtype (weft/distribute/updates.h).
  void sum_updates_across_workers(std::vector<autodiff::UpdateCollector::Update>& updates);
  void reduce_across_workers(ReduceOp op, Round& round, collective::Communicator& comm);
  // The communicator for a call made now: once the communication thread has finished what it
  // was given (rethrowing its first failure), so that every worker calls in one order.
  collective::Communicator& communicator_now();
  std::shared_future<void> submit(std::function<void()> job);
  void communicate();  // the communication thread
  // A flat tensor for an all_reduce across workers: a kept one of this dtype and size that
  // nothing else holds any more (its pages are already mapped), else a new one, kept.
  Tensor pack(DType dtype, int64_t numel);

  std::optional<Workers> workers_;
  std::vector<std::unique_ptr<Context>> contexts_;
  std::vector<std::thread> threads_;
  int total_threads_;
  int threads_per_replica_;

  std::mutex mu_;
  // One for each kind of wait, so that a step's meetings wake only the replicas in them: a
  // waiter woken for nothing takes the core from the replica that shares it.
  std::condition_variable job_cv_;      // replicas: a new job, or stop
  std::condition_variable done_cv_;     // run(): a replica finished the job
  std::condition_variable meeting_cv_;  // replicas in a collective: it met, or the group failed
  // The job: its number, the function, and which replicas have finished it.
  uint64_t job_ = 0;
  const std::function<void(int)>* fn_ = nullptr;
  bool running_ = false;
  std::vector<bool> done_;
  bool stop_ = false;
  // The collective in progress: who has arrived, and the meeting's number.
  std::vector<Call> calls_;
  int arrived_ = 0;
  uint64_t meeting_ = 0;
  // The first failure of this job: what went wrong, and the exception when a replica threw.
  bool failed_ = false;
  std::string failure_;
  std::exception_ptr first_error_;
  std::vector<std::vector<autodiff::UpdateCollector::Update>> updates_;
  std::vector<uint64_t> sequence_;  // each replica's collective calls in this job
  // With a core for each replica (and more than one), waits spin before they sleep: on a virtual
  // machine, waking a thread whose vCPU went idle costs enough to slow a mirrored step by a tenth
  // or more (docs/benchmarks.md, "Replicas that spin before they sleep"). `signals_` grows with
  // every notification a waiter may be waiting for (a job, a meeting, a failure, stop).
  const bool spin_;
  std::atomic<uint64_t> signals_{0};
  // The replicas as ranks of a Communicator: an all_reduce's sums.
  collective::LocalGroup local_;
  // The reduction in progress.
  Round round_;
  // The all_gather in progress: the whole, its gather axis first, and where each replica's rows
  // begin in it.
  Tensor gathered_;
  std::vector<int64_t> gather_offsets_;
  std::vector<Tensor> packs_;  // kept between steps (pack())
  // Each all_reduce call site's layout across workers, as last agreed (the same on every worker).
  std::map<std::string, std::vector<int64_t>> layouts_;

  // The communication thread (across workers only) and its queue.
  std::thread comm_thread_;
  std::mutex comm_mu_;
  std::condition_variable comm_cv_;
  std::deque<std::packaged_task<void()>> comm_jobs_;
  bool comm_busy_ = false;
  bool comm_stop_ = false;
  std::exception_ptr comm_failure_;  // the first job's that failed
};

}  // namespace weft::distribute::internal
