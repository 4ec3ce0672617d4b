#include "weft/distribute/strategy.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <numeric>

#include "weft/autodiff/tape.h"
#include "weft/distribute/updates.h"
#include "weft/np/array.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft::distribute {
namespace {

class DefaultStrategy : public StrategyImpl {
 public:
  int num_replicas_in_sync() const override { return 1; }
  std::string name() const override { return "default"; }
  void run_replicas(const std::function<void(int)>& fn) override { fn(0); }
};

const std::shared_ptr<StrategyImpl>& default_impl() {
  static const std::shared_ptr<StrategyImpl> impl = std::make_shared<DefaultStrategy>();
  return impl;
}

thread_local std::vector<Strategy>* scopes = nullptr;  // innermost last

}  // namespace

Strategy::Strategy() : impl_(default_impl()) {}

StrategyScope::StrategyScope(const Strategy& strategy) {
  if (scopes == nullptr) scopes = new std::vector<Strategy>;
  scopes->push_back(strategy);
  if (auto creator = strategy.extended().variable_creator()) creator_.emplace(std::move(*creator));
}

StrategyScope::~StrategyScope() {
  creator_.reset();
  scopes->pop_back();
  if (scopes->empty()) {
    delete scopes;
    scopes = nullptr;
  }
}

Strategy get_strategy() {
  return scopes != nullptr && !scopes->empty() ? scopes->back() : Strategy();
}
bool has_strategy() { return scopes != nullptr && !scopes->empty(); }

int64_t InputContext::get_per_replica_batch_size(int64_t global_batch_size) const {
  WEFT_CHECK(num_replicas_in_sync > 0 && global_batch_size % num_replicas_in_sync == 0,
             InvalidArgument)
      << "InputContext: the global batch size " << global_batch_size
      << " is not divisible by num_replicas_in_sync (" << num_replicas_in_sync << ")";
  return global_batch_size / num_replicas_in_sync;
}

Tensor Strategy::reduce(ReduceOp op, const PerReplica<Tensor>& value,
                        std::optional<int64_t> axis) const {
  autodiff::NoRecordScope no_record;
  WEFT_CHECK(value.num_replicas() > 0, InvalidArgument) << "Strategy::reduce: no values";
  if (axis) {
    Tensor all = gather(value, *axis);
    return op == ReduceOp::SUM ? sum(all, {*axis}) : mean(all, {*axis});
  }
  for (int r = 1; r < value.num_replicas(); ++r) {
    WEFT_CHECK(value[r].shape() == value[0].shape(), InvalidArgument)
        << "Strategy::reduce: replica 0's value has shape " << shape_str(value[0].shape())
        << ", replica " << r << "'s " << shape_str(value[r].shape());
  }
  Tensor total = impl_->sum_across_workers(tree_sum(value.values()));
  return op == ReduceOp::SUM ? total : div(total, static_cast<double>(num_replicas_in_sync()));
}

Tensor Strategy::gather(const PerReplica<Tensor>& value, int64_t axis) const {
  autodiff::NoRecordScope no_record;
  WEFT_CHECK(value.num_replicas() > 0, InvalidArgument) << "Strategy::gather: no values";
  // A replica with nothing to add (no rows of a short batch) may pass an undefined tensor.
  std::vector<Tensor> defined;
  for (const Tensor& v : value.values()) {
    if (v.defined()) defined.push_back(v);
  }
  Tensor here = defined.empty() ? Tensor() : concat(defined, axis);
  if (impl_->num_local_replicas() == num_replicas_in_sync()) {
    WEFT_CHECK(here.defined(), InvalidArgument) << "Strategy::gather: every value is undefined";
    return here;
  }
  // Across the workers along axis 0: each worker's replicas are consecutive in global order.
  Tensor all = impl_->all_gather_across_workers(
      here.defined() && axis != 0 ? np::moveaxis(here, axis, 0) : here);
  WEFT_CHECK(all.defined(), InvalidArgument)
      << "Strategy::gather: every value is undefined, on every worker";
  return axis == 0 ? all : np::moveaxis(all, 0, axis);
}

Tensor compute_average_loss(const Tensor& per_example_loss,
                            std::optional<int64_t> global_batch_size) {
  int64_t global = 0;
  if (global_batch_size) {
    global = *global_batch_size;
  } else if (auto slice = current_batch_slice()) {
    global = slice->global_batch_size;
  } else {
    int64_t per_replica = per_example_loss.rank() > 0 ? per_example_loss.dim(0) : 1;
    global = per_replica * get_replica_context().num_replicas_in_sync();
  }
  WEFT_CHECK(global > 0, InvalidArgument)
      << "compute_average_loss: the global batch size must be positive, got " << global;
  return div(sum(per_example_loss), static_cast<double>(global));
}

DistributedElement split_batch(const data::Element& batch, int replicas, int64_t step, int first,
                               int count, data::AutoShardPolicy policy) {
  if (count == 0) count = replicas - first;
  const int workers = replicas / count;
  if (workers > 1 && policy == data::AutoShardPolicy::FILE) {
    WEFT_FAIL(InvalidArgument)
        << "distributed dataset: auto_shard_policy FILE hands out input files by worker, but "
           "this dataset has no file source to divide (weft's readers load their data whole); "
           "use DATA (or AUTO, which is DATA here) to divide each global batch's rows";
  }
  if (workers > 1 && policy == data::AutoShardPolicy::OFF) {
    // The batch is this worker's alone; the workers' batches count as one global batch.
    DistributedElement local = split_batch(batch, count, step);
    const int64_t rows = batch[0].dim(0);
    for (BatchSlice& s : local.slices) {
      s.first_example += rows * (first / count);
      s.global_batch_size = rows * workers;
    }
    return local;
  }
  WEFT_CHECK(!batch.empty() && batch[0].rank() >= 1, InvalidArgument)
      << "distributed dataset: an element must hold batched tensors (a first axis to cut among "
         "replicas)";
  int64_t rows = batch[0].dim(0);
  for (const Tensor& t : batch) {
    WEFT_CHECK(t.rank() >= 1 && t.dim(0) == rows, InvalidArgument)
        << "distributed dataset: components of one batch have " << rows << " and "
        << (t.rank() >= 1 ? t.dim(0) : 0) << " rows; every component is cut by rows";
  }
  std::vector<data::Element> parts;
  std::vector<BatchSlice> slices;
  for (int r = first; r < first + count; ++r) {
    auto [lo, hi] = row_range(rows, replicas, r);
    data::Element part;
    for (const Tensor& t : batch) part.push_back(slice(t, {Slice{lo, hi}}));
    parts.push_back(std::move(part));
    slices.push_back({step, lo, hi - lo, rows});
  }
  return DistributedElement(std::move(parts), std::move(slices));
}

DistributedElement Strategy::split(const data::Element& batch, int64_t step,
                                   data::AutoShardPolicy policy) const {
  return split_batch(batch, num_replicas_in_sync(), step, impl_->first_local_replica(),
                     impl_->num_local_replicas(), policy);
}

DistributedDataset Strategy::experimental_distribute_dataset(const data::Dataset& dataset) const {
  return DistributedDataset(dataset, num_replicas_in_sync(), impl_->first_local_replica(),
                            impl_->num_local_replicas(), nullptr);
}

// In a cluster each worker's pipeline makes the elements of its own replicas: input pipeline k
// of num_workers.
DistributedDataset Strategy::distribute_datasets_from_function(
    const std::function<data::Dataset(const InputContext&)>& fn) const {
  int local = impl_->num_local_replicas();
  InputContext ctx{num_replicas_in_sync() / local, impl_->first_local_replica() / local,
                   num_replicas_in_sync()};
  return DistributedDataset(fn(ctx), num_replicas_in_sync(), impl_->first_local_replica(), local,
                            impl_);
}

DistributedDataset::Iterator DistributedDataset::begin() const {
  Iterator it;
  it.it_ = dataset_.begin();
  it.replicas_ = replicas_;
  it.first_ = first_;
  it.local_ = local_;
  it.policy_ = dataset_.options().experimental_distribute.auto_shard_policy;
  it.per_replica_elements_ = impl_ != nullptr;
  it.impl_ = impl_;
  return it;
}

std::string DistributedDataset::Iterator::tracked_state() const {
  return std::to_string(step_) + " " + it_.save_state();
}

void DistributedDataset::Iterator::restore_state(const std::string& state) {
  size_t space = state.find(' ');
  int64_t step = 0;
  bool ok = space != std::string::npos &&
            std::from_chars(state.data(), state.data() + space, step).ec == std::errc() &&
            step >= 0;
  WEFT_CHECK(ok, DataLoss) << "DistributedDataset::Iterator: unreadable saved position \""
                           << state.substr(0, 40) << "\"";
  it_.restore_state(state.substr(space + 1));
  step_ = step;
  current_.reset();
  fetched_ = false;
  exhausted_ = false;
}

std::optional<DistributedElement> DistributedDataset::Iterator::next() {
  if (fetched_) {
    fetched_ = false;
    return std::move(current_);
  }
  return read();
}

const DistributedElement& DistributedDataset::Iterator::operator*() {
  WEFT_CHECK(*this != std::default_sentinel, OutOfRange)
      << "DistributedDataset::Iterator: dereferenced at the end";
  return *current_;
}

bool DistributedDataset::Iterator::operator==(std::default_sentinel_t) {
  if (!fetched_) {
    current_ = read();
    fetched_ = true;
  }
  return !current_.has_value();
}

DistributedDataset::Iterator& DistributedDataset::Iterator::operator++() {
  if (!fetched_) read();
  fetched_ = false;
  current_.reset();
  return *this;
}

std::optional<DistributedElement> DistributedDataset::Iterator::read() {
  std::optional<DistributedElement> out;
  if (exhausted_) return out;  // the workers agreed on the end: no more collectives
  if (!per_replica_elements_) {
    std::optional<data::Element> batch = it_.next();
    if (batch) out = split_batch(*batch, replicas_, step_++, first_, local_, policy_);
    return out;
  }
  // One element per replica; a step needs all of them (a short last step is dropped whole, so
  // that every replica runs the same number of steps).
  std::vector<data::Element> parts;
  std::vector<BatchSlice> slices;
  int64_t offset = 0;
  for (int r = 0; r < local_ && parts.size() == static_cast<size_t>(r); ++r) {
    std::optional<data::Element> e = it_.next();
    if (!e) break;
    int64_t rows = !e->empty() && (*e)[0].rank() >= 1 ? (*e)[0].dim(0) : 1;
    slices.push_back({step_, offset, rows, 0});
    offset += rows;
    parts.push_back(std::move(*e));
  }
  const bool has_data = parts.size() == static_cast<size_t>(local_);
  // Every worker's pipeline is its own: the workers agree on each step (TensorFlow's "has data"
  // all-reduce), so that one whose pipeline ends early, or makes other batches at the first step,
  // is named on every worker instead of leaving the others waiting in a collective; the slices'
  // positions and the global batch size count the rows every worker has.
  const int workers = replicas_ / local_, me = first_ / local_;
  std::vector<int64_t> rows{has_data ? offset : -1};  // -1: this pipeline has ended
  if (workers > 1) {
    rows = impl_->all_gather_across_workers(Tensor::from_vector(rows)).to_vector<int64_t>();
  }
  auto ended = [](int64_t r) { return r < 0; };
  if (std::all_of(rows.begin(), rows.end(), ended)) {
    exhausted_ = true;
    return out;
  }
  if (std::any_of(rows.begin(), rows.end(), ended)) {
    std::string done, going;  // "1", "0, 2"
    for (int w = 0; w < workers; ++w) {
      std::string& list = ended(rows[static_cast<size_t>(w)]) ? done : going;
      list += (list.empty() ? "" : ", ") + std::to_string(w);
    }
    WEFT_FAIL(InvalidArgument)
        << "distribute_datasets_from_function: the input pipeline of worker " << done
        << " ended after " << step_ << " steps while worker " << going
        << "'s went on; every worker's pipeline must make the same number of steps (shard the "
           "data evenly, or repeat and take)";
  }
  if (step_ == 0 && std::adjacent_find(rows.begin(), rows.end(), std::not_equal_to<>()) !=
                        rows.end()) {
    std::string counts;
    for (int w = 0; w < workers; ++w) {
      counts += (w ? ", worker " : "worker ") + std::to_string(w) + " " +
                std::to_string(rows[static_cast<size_t>(w)]);
    }
    WEFT_FAIL(InvalidArgument) << "distribute_datasets_from_function: the workers' pipelines make "
                                  "batches of different sizes at the first step (rows per worker: "
                               << counts << "); give every worker the same per-replica batch size";
  }
  const int64_t before = std::accumulate(rows.begin(), rows.begin() + me, int64_t{0});
  const int64_t global = std::accumulate(rows.begin(), rows.end(), int64_t{0});
  for (BatchSlice& s : slices) {
    s.first_example += before;
    s.global_batch_size = global;
  }
  ++step_;
  out.emplace(std::move(parts), std::move(slices));
  return out;
}

}  // namespace weft::distribute
