#include "weft/distribute/internal/replica_group.h"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "weft/autodiff/tape.h"
#include "weft/core/config.h"
#include "weft/core/trace_me.h"
#include "weft/distribute/collective/internal/reduce.h"
#include "weft/distribute/updates.h"
#include "weft/distribute/values.h"
#include "weft/np/array.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/shape_ops.h"

namespace weft::distribute::internal {
namespace {

// Thrown in a replica whose wait ended because another replica failed; run() reports the
// failure itself, not this.
struct Aborted {};

const char* op_name(ReduceOp op) { return op == ReduceOp::SUM ? "SUM" : "MEAN"; }

// The group whose replica runs on this thread, if any.
thread_local const ReplicaGroup* this_threads_group = nullptr;

// A begin_all_reduce whose sum across workers the communication thread makes.
class PendingAcross : public ReplicaContext::Pending {
 public:
  PendingAcross(std::vector<Tensor> outputs, std::shared_future<void> done)
      : outputs_(std::move(outputs)), done_(std::move(done)) {}
  std::vector<Tensor> wait() override {
    // The sum across workers still being made on the communication thread (its own events say
    // whether it is waiting for the other workers or transferring).
    TraceMe trace("wait_for_collectives", 1, TraceCategory::kCollective);
    done_.get();
    return std::move(outputs_);
  }

 private:
  std::vector<Tensor> outputs_;
  std::shared_future<void> done_;
};

// The most flat tensors a group keeps for reuse (ReplicaGroup::pack).
constexpr size_t kKeptPacks = 32;

// Values laid end to end in one flat tensor per dtype, the dtypes in the order they first come.
struct FlatLayout {
  std::vector<DType> dtypes;
  std::vector<int64_t> totals;  // each flat tensor's elements so far
  // The index of dtype's flat tensor (a new one when it has none).
  size_t index(DType dtype) {
    size_t k = static_cast<size_t>(std::find(dtypes.begin(), dtypes.end(), dtype) - dtypes.begin());
    if (k == dtypes.size()) {
      dtypes.push_back(dtype);
      totals.push_back(0);
    }
    return k;
  }
  // Lays out `numel` more elements of `dtype`; returns where they begin in its flat tensor.
  int64_t add(DType dtype, int64_t numel) {
    size_t k = index(dtype);
    totals[k] += numel;
    return totals[k] - numel;
  }
};

}  // namespace

class ReplicaGroup::Context : public ReplicaContext {
 public:
  Context(ReplicaGroup* group, int id) : group_(group), id_(id) {}
  int replica_id_in_sync_group() const override { return group_->first_replica() + id_; }
  int num_replicas_in_sync() const override { return group_->global_size(); }
  std::vector<Tensor> all_reduce(ReduceOp op, const std::vector<Tensor>& values) override {
    return group_->all_reduce(id_, op, values);
  }
  Tensor all_gather(const Tensor& value, int64_t axis) override {
    return group_->all_gather(id_, value, axis);
  }
  void merge_call(const std::function<void()>& fn) override { group_->merge_call(id_, fn); }
  void merge_call_in_parts(const std::function<void(int, int)>& fn,
                           const std::function<void()>& then) override {
    group_->merge_call_in_parts(id_, fn, then);
  }
  std::unique_ptr<Pending> begin_all_reduce(ReduceOp op,
                                            const std::vector<Tensor>& values) override {
    if (!group_->across_workers()) return ReplicaContext::begin_all_reduce(op, values);
    return group_->begin_all_reduce(id_, op, values);
  }
  std::size_t gradient_pack_bytes() const override { return group_->gradient_pack_bytes(); }

 private:
  ReplicaGroup* group_;
  int id_;
};

struct ReplicaGroup::Call {
  std::string kind;
  uint64_t sequence = 0;
  std::vector<Tensor> values;
  // all_gather: the replica's value, its gather axis first (the kind names the other axes).
  Tensor rows{};

  // "all_reduce(SUM) #3 of (784, 700) float32, (700,) float32"
  std::string describe() const {
    std::ostringstream os;
    os << kind << " #" << sequence;
    if (!values.empty()) os << " of";
    for (size_t i = 0; i < values.size(); ++i) {
      os << (i ? ", " : " ");
      if (values[i].defined()) {
        os << shape_str(values[i].shape()) << " " << values[i].dtype();
      } else {
        os << "undefined";
      }
    }
    return os.str();
  }
  // Same kind, sequence and number of values; values defined in both have one shape and dtype.
  bool matches(const Call& o) const {
    if (kind != o.kind || sequence != o.sequence || values.size() != o.values.size()) return false;
    for (size_t i = 0; i < values.size(); ++i) {
      const Tensor& a = values[i];
      const Tensor& b = o.values[i];
      if (a.defined() && b.defined() && (a.shape() != b.shape() || a.dtype() != b.dtype())) {
        return false;
      }
    }
    return true;
  }
};

ReplicaGroup::ReplicaGroup(int replicas, int total_threads, std::optional<Workers> workers)
    : workers_(std::move(workers)),
      total_threads_(std::max(1, total_threads)),
      threads_per_replica_(std::max(1, total_threads / replicas)),
      done_(static_cast<size_t>(replicas)),
      calls_(static_cast<size_t>(replicas)),
      updates_(static_cast<size_t>(replicas)),
      sequence_(static_cast<size_t>(replicas)),
      spin_(replicas >= 2 && replicas <= config::hardware_threads()),
      local_(replicas, collective::kDefaultTimeout, spin_) {
  WEFT_ASSERT(replicas >= 1) << replicas;
  for (int r = 0; r < replicas; ++r) contexts_.push_back(std::make_unique<Context>(this, r));
  for (int r = 0; r < replicas; ++r) threads_.emplace_back([this, r] { worker(r); });
  if (workers_) comm_thread_ = std::thread([this] { communicate(); });
}

bool ReplicaGroup::on_replica_thread() { return this_threads_group != nullptr; }

ReplicaGroup::~ReplicaGroup() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    ++signals_;
  }
  job_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  if (comm_thread_.joinable()) {
    {
      std::lock_guard lock(comm_mu_);
      comm_stop_ = true;
    }
    comm_cv_.notify_all();
    comm_thread_.join();
  }
}

void ReplicaGroup::run(const std::function<void(int)>& fn) {
  WEFT_CHECK(this_threads_group != this, FailedPrecondition)
      << "a strategy's run (or fit, evaluate, predict) was called inside one of its own replica "
         "functions; a replica function cannot start another step: call it outside strategy.run";
  {
    std::lock_guard lock(mu_);
    WEFT_CHECK(!running_, FailedPrecondition)
        << "a strategy's run was called while another thread's run of the same strategy is in "
           "progress; its replicas run one step at a time";
    running_ = true;
    fn_ = &fn;
    ++job_;
    ++signals_;
    arrived_ = 0;
    failed_ = false;
    failure_.clear();
    first_error_ = nullptr;
    for (size_t r = 0; r < done_.size(); ++r) {
      done_[r] = false;
      updates_[r].clear();
      calls_[r] = Call{};
      sequence_[r] = 0;
    }
  }
  job_cv_.notify_all();
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [this] { return finished() == size(); });
  fn_ = nullptr;
  running_ = false;
  round_ = Round{};  // the last collective's values, which would otherwise outlive the step
  // Reductions begun and never waited for end with the step.
  std::exception_ptr across_failure;
  if (workers_) {
    try {
      communicator_now();
    } catch (...) {
      across_failure = std::current_exception();
    }
  }
  if (failed_) {
    if (first_error_) std::rethrow_exception(first_error_);
    WEFT_FAIL(FailedPrecondition) << failure_;
  }
  if (across_failure) std::rethrow_exception(across_failure);
  lock.unlock();
  TraceMe trace("write_updates", 1, TraceCategory::kCompute);
  std::vector<Update> merged = combine_updates(updates_);
  if (workers_) sum_updates_across_workers(merged);
  write_updates(std::move(merged));
}

void ReplicaGroup::sum_updates_across_workers(std::vector<Update>& updates) {
  if (updates.empty()) return;
  autodiff::NoRecordScope no_record;
  // One flat tensor per dtype, the values in order (an ONLY_FIRST_REPLICA value only from the
  // first worker, -0.0 from the others: adding it changes no bit), and the counts after the
  // values of the first pack whose dtype holds them exactly (else in a float32 pack of their own).
  auto holds_counts = [](DType d) {
    return d == kFloat32 || d == kFloat64 || d == kInt32 || d == kInt64;
  };
  FlatLayout layout;
  std::vector<int64_t> offsets;
  for (const Update& u : updates) offsets.push_back(layout.add(u.value.dtype(), u.value.numel()));
  const std::vector<DType>& dtypes = layout.dtypes;
  auto counts_dtype = std::find_if(dtypes.begin(), dtypes.end(), holds_counts);
  const size_t counts_pack = layout.index(counts_dtype != dtypes.end() ? *counts_dtype : kFloat32);
  const int64_t counts_at = layout.add(dtypes[counts_pack], static_cast<int64_t>(updates.size()));
  std::vector<Tensor> packs;
  for (size_t k = 0; k < dtypes.size(); ++k) packs.push_back(pack(dtypes[k], layout.totals[k]));
  auto view = [&](size_t i) {
    const Tensor& v = updates[i].value;
    size_t k = layout.index(v.dtype());
    return reshape(slice(packs[k], {Slice{offsets[i], offsets[i] + v.numel()}}), v.shape());
  };
  const bool first_worker = workers_->first_replica == 0;
  std::vector<double> counts;
  for (size_t i = 0; i < updates.size(); ++i) {
    const Update& u = updates[i];
    bool only_first = u.variable.aggregation() == VariableAggregation::ONLY_FIRST_REPLICA;
    assign_into(view(i), only_first && !first_worker ? full(u.value.shape(), -0.0, u.value.dtype())
                                                      : u.value);
    counts.push_back(static_cast<double>(u.count));
  }
  Tensor count_view = slice(packs[counts_pack],
                            {Slice{counts_at, counts_at + static_cast<int64_t>(counts.size())}});
  assign_into(count_view, Tensor::from_vector(counts));
  collective::Communicator& comm = communicator_now();
  for (Tensor& p : packs) {
    comm.all_reduce(p.raw_data(), p.shape(), p.dtype(), collective::Reduction::SUM,
                    workers_->options);
  }
  std::vector<double> all = cast(count_view, kFloat64).to_vector<double>();
  for (size_t i = 0; i < updates.size(); ++i) {
    updates[i].value = copy(view(i));
    updates[i].count = static_cast<int64_t>(all[i]);
  }
}

Tensor ReplicaGroup::sum_across_workers(const Tensor& value) {
  if (!workers_) return value;
  return collective::all_reduce(communicator_now(), value, collective::Reduction::SUM,
                                workers_->options);
}

Tensor ReplicaGroup::all_gather_across_workers(const Tensor& value) {
  if (!workers_) return value;
  return collective::all_gather(communicator_now(), value, workers_->options);
}

Tensor ReplicaGroup::broadcast_across_workers(const Tensor& value) {
  if (!workers_) return value;
  return collective::broadcast(communicator_now(), value, /*root=*/0, workers_->options);
}

void ReplicaGroup::barrier_across_workers() {
  if (workers_) collective::barrier(communicator_now(), workers_->options);
}

std::size_t ReplicaGroup::gradient_pack_bytes() const {
  if (!workers_ || !workers_->overlap) return 0;
  return workers_->options.bytes_per_pack > 0 ? workers_->options.bytes_per_pack
                                              : kDefaultGradientPackBytes;
}

collective::Communicator& ReplicaGroup::communicator_now() {
  std::unique_lock lock(comm_mu_);
  comm_cv_.wait(lock, [this] { return comm_jobs_.empty() && !comm_busy_; });
  if (comm_failure_) std::rethrow_exception(comm_failure_);
  return *workers_->comm;
}

std::shared_future<void> ReplicaGroup::submit(std::function<void()> job) {
  std::packaged_task<void()> task([this, job = std::move(job)] {
    {
      std::lock_guard lock(comm_mu_);
      if (comm_failure_) std::rethrow_exception(comm_failure_);  // the workers are out of step
    }
    try {
      job();
    } catch (...) {
      std::lock_guard lock(comm_mu_);
      if (!comm_failure_) comm_failure_ = std::current_exception();
      throw;
    }
  });
  std::shared_future<void> done = task.get_future().share();
  {
    std::lock_guard lock(comm_mu_);
    comm_jobs_.push_back(std::move(task));
  }
  comm_cv_.notify_all();
  return done;
}

void ReplicaGroup::communicate() {
  config::ThreadBudget one(1);
  set_trace_thread_name("collectives");
  std::unique_lock lock(comm_mu_);
  while (true) {
    comm_cv_.wait(lock, [this] { return comm_stop_ || !comm_jobs_.empty(); });
    if (comm_jobs_.empty()) return;
    std::packaged_task<void()> task = std::move(comm_jobs_.front());
    comm_jobs_.pop_front();
    comm_busy_ = true;
    lock.unlock();
    task();  // its failure goes to its future
    lock.lock();
    comm_busy_ = false;
    comm_cv_.notify_all();
  }
}

namespace {

// A value's entry in an all_reduce's layout: dtype + 1 (0: no value), rank, up to 8 dimensions.
constexpr size_t kFields = 10;

// The layout of the values the calls pass: each entry from the first call that defines it.
std::vector<int64_t> layout_of(const std::vector<std::vector<Tensor>>& values_of_calls,
                               size_t count) {
  std::vector<int64_t> meta(count * kFields, 0);
  for (size_t i = 0; i < count; ++i) {
    for (const std::vector<Tensor>& values : values_of_calls) {
      const Tensor& t = values[i];
      if (!t.defined()) continue;
      WEFT_CHECK(t.rank() <= 8, InvalidArgument)
          << "all_reduce: value " << i << " has rank " << t.rank()
          << "; replicas all-reduce values of rank at most 8 (reshape it first)";
      meta[i * kFields] = static_cast<int64_t>(t.dtype()) + 1;
      meta[i * kFields + 1] = t.rank();
      for (int64_t d = 0; d < t.rank(); ++d) meta[i * kFields + 2 + d] = t.dim(d);
      break;
    }
  }
  return meta;
}

// Every value of `mine` stands in `agreed` as it is (values `mine` lacks may stand there).
bool fits(const std::vector<int64_t>& mine, const std::vector<int64_t>& agreed) {
  if (mine.size() != agreed.size()) return false;
  for (size_t at = 0; at < mine.size(); at += kFields) {
    if (mine[at] != 0 && !std::equal(&mine[at], &mine[at] + kFields, &agreed[at])) return false;
  }
  return true;
}

}  // namespace

void ReplicaGroup::pack_across_workers(const std::vector<Call>& calls, bool as_given,
                                       const std::string& site, Round& round) {
  std::vector<std::vector<Tensor>> values;
  for (const Call& c : calls) values.push_back(c.values);
  std::vector<int64_t> mine = layout_of(values, calls[0].values.size());
  if (as_given) {
    lay_out(mine, /*contribute=*/true, round);
    return;
  }
  // Which values some worker has, with their dtype and shape, learned by an exchange at a call
  // site's first call; later calls reduce in that layout at once, with a flag that a worker whose
  // values do not fit it raises (reduce_across_workers then exchanges the layouts again).
  auto agreed = layouts_.find(site);
  if (agreed == layouts_.end()) {
    communicator_now().all_reduce(mine.data(), {static_cast<int64_t>(mine.size())}, kInt64,
                                  collective::Reduction::MAX, workers_->options);
    layouts_[site] = mine;
    lay_out(mine, /*contribute=*/true, round);
    return;
  }
  const bool fit = fits(mine, agreed->second);
  round.site = site;
  round.layout = mine;
  lay_out(agreed->second, fit, round);
}

void ReplicaGroup::lay_out(const std::vector<int64_t>& meta, bool contribute, Round& round) {
  const size_t count = meta.size() / kFields;
  const bool flag = !round.site.empty();
  // One flat tensor per dtype, in the order the values first appear (pack 0 with one element
  // more for the flag).
  FlatLayout layout;
  std::vector<int64_t> offsets(count, 0);
  for (size_t i = 0; i < count; ++i) {
    const int64_t* m = &meta[i * kFields];
    if (m[0] == 0) continue;
    offsets[i] = layout.add(static_cast<DType>(m[0] - 1), num_elements(Shape(m + 2, m + 2 + m[1])));
  }
  if (flag) layout.add(layout.dtypes.empty() ? kFloat32 : layout.dtypes[0], 1);
  const std::vector<DType>& dtypes = layout.dtypes;
  round.packs.clear();
  for (size_t k = 0; k < dtypes.size(); ++k) {
    round.packs.push_back(pack(dtypes[k], layout.totals[k]));
  }
  round.pieces.assign(dtypes.size(), {});
  round.outputs.assign(count, Tensor());
  round.from_input.assign(count, false);
  for (size_t i = 0; i < count; ++i) {
    const int64_t* m = &meta[i * kFields];
    if (m[0] == 0) continue;
    DType dtype = static_cast<DType>(m[0] - 1);
    size_t k = layout.index(dtype);
    Shape shape(m + 2, m + 2 + m[1]);
    if (!contribute) {  // zeros, and no outputs: the values are laid out again
      round.pieces[k].push_back({nullptr, static_cast<size_t>(num_elements(shape))});
      continue;
    }
    Tensor view = reshape(
        slice(round.packs[k], {Slice{offsets[i], offsets[i] + num_elements(shape)}}), shape);
    bool here = std::any_of(round.inputs.begin(), round.inputs.end(),
                            [&](const std::vector<Tensor>& in) { return in[i].defined(); });
    if (!here)
      std::memset(view.raw_data(), 0, static_cast<size_t>(view.numel()) * dtype_size(dtype));
    round.outputs[i] = view;
    // One replica of a worker: its value is this group's sum as it stands.
    const Tensor& in = round.inputs[0][i];
    round.from_input[i] = workers_ && round.inputs.size() == 1 && here && in.dtype() == dtype &&
                          in.numel() == view.numel() && in.is_contiguous();
    round.pieces[k].push_back({round.from_input[i] ? in.raw_data() : view.raw_data(),
                               static_cast<size_t>(view.numel())});
  }
  if (flag) {
    round.flag = full({1}, contribute ? 0.0 : 1.0, dtypes[0]);
    round.pieces[0].push_back({round.flag.raw_data(), 1});
  }
}

Tensor ReplicaGroup::pack(DType dtype, int64_t numel) {
  // Reused only when nothing else holds it: a caller may keep last step's reduced values.
  for (const Tensor& kept : packs_) {
    if (kept.dtype() == dtype && kept.numel() == numel && kept.storage().use_count() == 1) {
      return kept;
    }
  }
  if (packs_.size() == kKeptPacks) packs_.erase(packs_.begin());
  packs_.push_back(Tensor::empty({numel}, dtype));
  return packs_.back();
}

void ReplicaGroup::sum_replicas(int replica, ReduceOp op, const Round& round) {
  // Pack k's values in order, each as every replica passed it (null: nothing, zeros).
  const size_t ranks = round.inputs.size();
  for (size_t k = 0; k < round.packs.size(); ++k) {
    const Tensor& pack = round.packs[k];
    std::vector<std::vector<collective::Piece>> pieces(ranks);
    size_t count = 0;
    for (size_t i = 0; i < round.outputs.size(); ++i) {
      const Tensor& out = round.outputs[i];
      if (!out.defined() || out.dtype() != pack.dtype()) continue;
      const size_t n = static_cast<size_t>(out.numel());
      for (size_t r = 0; r < ranks; ++r) {
        const Tensor& in = round.inputs[r][i];
        // One replica whose value is read where it is: the pack's view stands for it.
        const void* data = round.from_input[i] ? out.raw_data()
                           : in.defined()      ? in.raw_data()
                                               : nullptr;
        pieces[r].push_back({data, n});
      }
      count += n;
    }
    if (count == 0) continue;
    const Shape shape{static_cast<int64_t>(count)};
    const collective::Reduction reduction =
        op == ReduceOp::SUM ? collective::Reduction::SUM : collective::Reduction::MEAN;
    if (replica >= 0) {
      local_.rank(replica).all_reduce_gathered(pieces[static_cast<size_t>(replica)],
                                               pack.raw_data(), shape, pack.dtype(), reduction,
                                               {});
      continue;
    }
    // On this thread (a sum: across workers the mean is taken at the end), value by value:
    // every replica's pieces hold the same values.
    WEFT_ASSERT(op == ReduceOp::SUM);
    char* to = static_cast<char*>(pack.raw_data());
    std::vector<const void*> sources(ranks);
    for (size_t j = 0; j < pieces[0].size(); ++j) {
      for (size_t r = 0; r < ranks; ++r) sources[r] = pieces[r][j].data;
      collective::internal::tree_combine_from(sources, to, pieces[0][j].count, pack.dtype(),
                                              collective::Reduction::SUM);
      to += pieces[0][j].count * dtype_size(pack.dtype());
    }
  }
}

void ReplicaGroup::reduce_across_workers(ReduceOp op, Round& round,
                                         collective::Communicator& comm) {
  reduce_packs(round, comm);
  if (round.flag.defined()) {
    const Tensor& first = round.packs[0];
    if (cast(slice(first, {Slice{first.numel() - 1, first.numel()}}), kFloat64).item<double>() >
        0) {
      // Some worker's values did not fit the layout agreed at this call site's first call:
      // every worker exchanges its own, lays the values out again and reduces them again (each
      // group's sum taken afresh from its replicas' values).
      std::vector<int64_t> meta = round.layout;
      comm.all_reduce(meta.data(), {static_cast<int64_t>(meta.size())}, kInt64,
                      collective::Reduction::MAX, workers_->options);
      layouts_[round.site] = meta;
      round.site.clear();
      round.flag = Tensor();
      lay_out(meta, /*contribute=*/true, round);
      sum_replicas(/*replica=*/-1, ReduceOp::SUM, round);
      reduce_packs(round, comm);
    }
  }
  if (op == ReduceOp::MEAN) {
    for (Tensor& pack : round.packs) {
      collective::internal::divide(pack.raw_data(), static_cast<size_t>(pack.numel()),
                                   pack.dtype(), global_size());
    }
  }
}

void ReplicaGroup::reduce_packs(Round& round, collective::Communicator& comm) {
  for (size_t k = 0; k < round.packs.size(); ++k) {
    Tensor& pack = round.packs[k];
    const int64_t n = pack.numel();
    const int64_t per =
        workers_->options.bytes_per_pack > 0
            ? std::max<int64_t>(1, static_cast<int64_t>(workers_->options.bytes_per_pack /
                                                        dtype_size(pack.dtype())))
            : n;
    char* base = static_cast<char*>(pack.raw_data());
    const size_t es = dtype_size(pack.dtype());
    for (int64_t at = 0; at < n; at += per) {
      int64_t len = std::min(per, n - at);
      TraceMe trace("pack", 3);
      trace.stat("bytes", std::to_string(len * static_cast<int64_t>(es)));
      std::vector<collective::Piece> in = collective::internal::cut_pieces(
          round.pieces[k], static_cast<size_t>(at), static_cast<size_t>(len), es);
      comm.all_reduce_gathered(in, base + at * es, {len}, pack.dtype(), collective::Reduction::SUM,
                               workers_->options);
    }
  }
}

void ReplicaGroup::fail_in(int replica, const std::string& what) {
  fail(std::current_exception(), "replica " + std::to_string(replica) + " failed in " + what);
  throw Aborted{};
}

template <typename Ready>
void ReplicaGroup::wait(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                        Ready ready, bool may_spin) {
  if (spin_ && may_spin && !ready()) {
    // Spinning, but yielding the core to any other thread that wants it, until something is
    // signalled or kSpinBeforeSleep passes; then the condition variable as usual.
    uint64_t seen = signals_.load(std::memory_order_relaxed);
    lock.unlock();
    auto until = std::chrono::steady_clock::now() + collective::kSpinBeforeSleep;
    while (signals_.load(std::memory_order_acquire) == seen &&
           std::chrono::steady_clock::now() < until) {
      sched_yield();
    }
    lock.lock();
  }
  cv.wait(lock, ready);
}

void ReplicaGroup::worker(int replica) {
  config::ThreadBudget budget(threads_per_replica_);
  ReplicaContextScope context(contexts_[static_cast<size_t>(replica)].get());
  this_threads_group = this;
  set_trace_thread_name("replica " + std::to_string(replica));
  uint64_t seen = 0;
  while (true) {
    const std::function<void(int)>* fn = nullptr;
    {
      std::unique_lock lock(mu_);
      wait(lock, job_cv_, [&] { return stop_ || job_ != seen; });
      if (stop_) return;
      seen = job_;
      fn = fn_;
    }
    std::exception_ptr error;
    std::vector<autodiff::UpdateCollector::Update> updates;
    try {
      TraceMe trace("replica_step", 1, TraceCategory::kCompute);
      autodiff::UpdateCollector collector;
      (*fn)(replica);
      updates = collector.updates();
    } catch (const Aborted&) {
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(mu_);
    // Moved: this thread's reference to the exception ends under the lock, ordered before the
    // caller's rethrow. (Held past the unlock, it could be the exception's last reference, and
    // libstdc++'s count, not built with ThreadSanitizer, hides that order from it.)
    if (error) fail(std::move(error), "replica " + std::to_string(replica) + " failed");
    done_[static_cast<size_t>(replica)] = true;
    updates_[static_cast<size_t>(replica)] = std::move(updates);
    // Replicas waiting in a collective that this one never made would wait forever.
    if (!failed_ && arrived_ > 0 && arrived_ + finished() >= size()) {
      for (int r = 0; r < size(); ++r) {
        if (done_[static_cast<size_t>(r)]) continue;
        fail(nullptr, "replica " + std::to_string(replica) +
                          " returned from its step while replica " + std::to_string(r) +
                          " waits in " + calls_[static_cast<size_t>(r)].describe() +
                          ": every replica must make the same collective calls in the same order");
        break;
      }
    }
    done_cv_.notify_all();
  }
}

void ReplicaGroup::fail(std::exception_ptr error, const std::string& why) {
  if (!failed_) {
    failed_ = true;
    failure_ = why;
    first_error_ = error;
  }
  ++signals_;
  meeting_cv_.notify_all();
}

void ReplicaGroup::meet(int replica, Call call,
                        const std::function<void(std::vector<Call>&)>& on_all, bool may_spin) {
  std::unique_lock lock(mu_);
  if (failed_) throw Aborted{};
  calls_[static_cast<size_t>(replica)] = std::move(call);
  uint64_t meeting = meeting_;
  if (++arrived_ + finished() < size()) {
    TraceMe trace("wait_for_replicas", 1, TraceCategory::kCollectiveWait);
    wait(
        lock, meeting_cv_, [&] { return meeting_ != meeting || failed_; }, may_spin);
    if (meeting_ == meeting) throw Aborted{};
    return;
  }
  if (finished() > 0) {
    for (int r = 0; r < size(); ++r) {
      if (!done_[static_cast<size_t>(r)]) continue;
      fail(nullptr,
           "replica " + std::to_string(replica) + " waits in " +
               calls_[static_cast<size_t>(replica)].describe() + " but replica " +
               std::to_string(r) +
               " returned from its step: every replica must make the same collective calls in "
               "the same order");
      throw Aborted{};
    }
  }
  // Every call against the first, with each value it left undefined taken from the first
  // replica that defined it.
  Call reference = calls_[0];
  for (size_t i = 0; i < reference.values.size(); ++i) {
    for (size_t r = 1; r < calls_.size() && !reference.values[i].defined(); ++r) {
      if (i < calls_[r].values.size()) reference.values[i] = calls_[r].values[i];
    }
  }
  for (size_t r = 1; r < calls_.size(); ++r) {
    if (calls_[r].matches(reference)) continue;
    size_t q = 0;  // a replica that r disagrees with directly, to name in the message
    while (q + 1 < r && calls_[r].matches(calls_[q])) ++q;
    fail(nullptr, "replicas disagree on a collective: replica " + std::to_string(q) + " called " +
                      calls_[q].describe() + ", replica " + std::to_string(r) + " called " +
                      calls_[r].describe());
    throw Aborted{};
  }
  arrived_ = 0;
  if (on_all) on_all(calls_);
  ++meeting_;
  ++signals_;
  meeting_cv_.notify_all();
}

ReplicaGroup::Round ReplicaGroup::reduce_replicas(int replica, ReduceOp op,
                                                  const std::vector<Tensor>& values,
                                                  const std::string& kind, bool as_given,
                                                  const std::function<void(Round&)>& then) {
  autodiff::NoRecordScope no_record;
  uint64_t sequence = ++sequence_[static_cast<size_t>(replica)];
  // The last to arrive keeps every replica's values, flattened, and makes the outputs; each
  // replica takes its own references before it leaves, so the next round may replace them.
  meet(replica, Call{kind, sequence, values}, [&](std::vector<Call>& calls) {
    round_ = Round{};
    for (const Call& c : calls) {
      std::vector<Tensor> flat;
      for (const Tensor& v : c.values) {
        Tensor f = v.defined() ? reshape(v, {-1}) : Tensor();
        flat.push_back(f.defined() && !f.is_contiguous() ? copy(f) : f);
      }
      round_.inputs.push_back(std::move(flat));
    }
    if (workers_) {
      try {
        pack_across_workers(calls, as_given, kind + " #" + std::to_string(sequence), round_);
      } catch (...) {
        fail_in(replica, kind + " across workers");
      }
      return;
    }
    try {
      std::vector<std::vector<Tensor>> values_of_calls;
      for (const Call& c : calls) values_of_calls.push_back(c.values);
      lay_out(layout_of(values_of_calls, calls[0].values.size()), /*contribute=*/true, round_);
    } catch (...) {
      fail_in(replica, kind);
    }
  });
  Round round;
  {
    std::lock_guard lock(mu_);
    round = round_;
  }
  // Across workers the mean is taken at the end.
  sum_replicas(replica, workers_ ? ReduceOp::SUM : op, round);
  if (!then) return round;
  auto last = [&](std::vector<Call>&) {  // on the last replica to arrive, under the lock
    try {
      then(round_);
    } catch (...) {
      fail_in(replica, kind + " across workers");
    }
  };
  meet(replica, Call{kind + " (end)", sequence, {}}, last);
  std::lock_guard lock(mu_);
  round.outputs = round_.outputs;  // laid out again when a worker's values did not fit
  round.across = round_.across;
  return round;
}

std::vector<Tensor> ReplicaGroup::all_reduce(int replica, ReduceOp op,
                                             const std::vector<Tensor>& values) {
  std::function<void(Round&)> across;
  if (workers_)
    across = [&](Round& round) { reduce_across_workers(op, round, communicator_now()); };
  return reduce_replicas(replica, op, values, std::string("all_reduce(") + op_name(op) + ")",
                         /*as_given=*/false, across)
      .outputs;
}

std::unique_ptr<ReplicaContext::Pending> ReplicaGroup::begin_all_reduce(
    int replica, ReduceOp op, const std::vector<Tensor>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    WEFT_CHECK(values[i].defined(), InvalidArgument)
        << "begin_all_reduce: value " << i << " is undefined; every value must be defined";
  }
  Round round = reduce_replicas(
      replica, op, values, std::string("begin_all_reduce(") + op_name(op) + ")",
      /*as_given=*/true, [&](Round& shared) {
        Round packs;  // the job's own references keep the packs and the values it reads alive
        packs.packs = shared.packs;
        packs.pieces = shared.pieces;
        packs.inputs = shared.inputs;
        shared.across = submit(
            [this, op, packs]() mutable { reduce_across_workers(op, packs, *workers_->comm); });
      });
  return std::make_unique<PendingAcross>(std::move(round.outputs), std::move(round.across));
}

Tensor ReplicaGroup::all_gather(int replica, const Tensor& value, int64_t axis) {
  WEFT_CHECK(value.defined() && value.rank() >= 1, InvalidArgument)
      << "all_gather: the value must be a tensor with an axis to concatenate along";
  const int64_t rank = value.rank();
  WEFT_CHECK(axis >= -rank && axis < rank, InvalidArgument)
      << "all_gather: axis " << axis << " is out of range for a value of rank " << rank;
  if (axis < 0) axis += rank;
  Tensor gathered;
  int64_t offset = 0;  // where this replica's rows begin in `gathered`
  {
    autodiff::NoRecordScope no_record;
    Call call{"", ++sequence_[static_cast<size_t>(replica)], {}, np::moveaxis(value, axis, 0)};
    Shape others = value.shape();  // what every replica's value must agree on
    others.erase(others.begin() + axis);
    std::ostringstream kind;
    kind << "all_gather along axis " << axis << " of " << value.dtype() << " with the other axes "
         << shape_str(others);
    call.kind = kind.str();
    meet(replica, std::move(call), [&](std::vector<Call>& calls) {
      std::vector<Tensor> parts;
      gather_offsets_.clear();
      int64_t at = 0;
      for (const Call& c : calls) {
        gather_offsets_.push_back(at);
        at += c.rows.dim(0);
        parts.push_back(c.rows);
      }
      gathered_ = concat(parts, 0);
      if (!workers_) return;
      try {
        std::vector<int64_t> rows_of_worker;
        gathered_ = collective::all_gather(communicator_now(), gathered_, workers_->options,
                                           &rows_of_worker);
        int64_t before = 0;  // the rows of the workers before this one
        for (int w = 0; w < workers_->comm->rank(); ++w) before += rows_of_worker[w];
        for (int64_t& o : gather_offsets_) o += before;
      } catch (...) {
        fail_in(replica, "all_gather across workers");
      }
    });
    std::lock_guard lock(mu_);
    gathered = np::moveaxis(gathered_, 0, axis);
    offset = gather_offsets_[static_cast<size_t>(replica)];
  }
  if (autodiff::is_recording() && is_floating(value.dtype())) {
    const int64_t rows = value.dim(axis);
    autodiff::record("all_gather", {value}, {gathered}, [=](const autodiff::Grads& g) {
      Tensor total = get_replica_context().all_reduce(ReduceOp::SUM, {g[0]})[0];
      std::vector<Slice> mine(static_cast<size_t>(rank));
      mine[static_cast<size_t>(axis)] = Slice{offset, offset + rows};
      return std::vector<Tensor>{slice(total, mine)};
    });
  }
  return gathered;
}

void ReplicaGroup::merge_call(int replica, const std::function<void()>& fn) {
  uint64_t sequence = ++sequence_[static_cast<size_t>(replica)];
  meet(replica, Call{"merge_call", sequence, {}}, {});
  if (replica == 0) {
    try {
      ReplicaContextScope cross_replica(nullptr);
      autodiff::UpdateCollector::Suspend written_at_once;
      // The other replicas wait idle meanwhile: the merge (the optimizer's update) uses their
      // cores too.
      config::ThreadBudget every_core(total_threads_);
      fn();
    } catch (...) {
      std::lock_guard lock(mu_);
      fail_in(replica, "merge_call");
    }
  }
  // The others sleep meanwhile: replica 0's kernels need their cores.
  meet(replica, Call{"merge_call (end)", sequence, {}}, {}, /*may_spin=*/false);
}

void ReplicaGroup::merge_call_in_parts(int replica, const std::function<void(int, int)>& fn,
                                       const std::function<void()>& then) {
  uint64_t sequence = ++sequence_[static_cast<size_t>(replica)];
  meet(replica, Call{"merge_call_in_parts", sequence, {}}, {});
  try {
    ReplicaContextScope cross_replica(nullptr);
    autodiff::UpdateCollector::Suspend written_at_once;
    fn(replica, size());
  } catch (...) {
    std::lock_guard lock(mu_);
    fail_in(replica, "merge_call_in_parts");
  }
  meet(replica, Call{"merge_call_in_parts (end)", sequence, {}}, [&](std::vector<Call>&) {
    try {
      then();
    } catch (...) {
      fail_in(replica, "merge_call_in_parts");
    }
  });
}

}  // namespace weft::distribute::internal
