// DistributedDataset: a dataset's batches cut among a strategy's replicas, and in a cluster
// divided among its workers by the dataset's auto-shard policy (DATA: every worker reads every
// global batch and keeps its rows; FILE: each worker reads its own files).
#include <algorithm>
#include <charconv>
#include <functional>

#include "weft/data/auto_shard.h"
#include "weft/distribute/strategy.h"
#include "weft/ops/creation.h"
#include "weft/ops/shape_ops.h"

namespace weft::distribute {
namespace {

// Every worker's rows at this step, in worker order (one all-gather, TensorFlow's "has data"
// all-reduce); -1 for a worker whose input has ended.
std::vector<int64_t> rows_of_workers(const StrategyImpl& strategy, int64_t mine) {
  std::vector<int64_t> rows{mine};
  if (strategy.num_local_replicas() == strategy.num_replicas_in_sync()) return rows;
  return strategy.all_gather_across_workers(Tensor::from_vector(rows)).to_vector<int64_t>();
}
bool ended(int64_t rows) { return rows < 0; }

// Places this worker's slices of a step in its global batch: after the rows of the workers
// before it, in a global batch of every worker's rows.
void place_slices(const StrategyImpl& strategy, const std::vector<int64_t>& rows,
                  std::vector<BatchSlice>& slices) {
  const int me = strategy.first_local_replica() / strategy.num_local_replicas();
  int64_t before = 0, global = 0;
  for (int w = 0; w < static_cast<int>(rows.size()); ++w) {
    const int64_t n = std::max<int64_t>(rows[static_cast<size_t>(w)], 0);
    if (w < me) before += n;
    global += n;
  }
  for (BatchSlice& s : slices) {
    s.first_example += before;
    s.global_batch_size = global;
  }
}

// The rows [lo, hi) of a global batch of n rows that replicas [first, first + local) of
// `replicas` take: one worker's.
std::pair<int64_t, int64_t> worker_rows(int64_t n, int replicas, int first, int local) {
  return {row_range(n, replicas, first).first, row_range(n, replicas, first + local - 1).second};
}

std::optional<data::Dataset> shard_by_file(const StrategyImpl& strategy,
                                           const data::Dataset& dataset) {
  const data::AutoShardPolicy policy = dataset.options().experimental_distribute.auto_shard_policy;
  const int replicas = strategy.num_replicas_in_sync(), local = strategy.num_local_replicas();
  const int first = strategy.first_local_replica(), workers = replicas / local;
  if (workers == 1 ||
      (policy != data::AutoShardPolicy::AUTO && policy != data::AutoShardPolicy::FILE)) {
    return std::nullopt;
  }
  data::FileShard shard{.num_shards = workers,
                        .index = first / local,
                        .local_rows = [=](int64_t n) {
                          auto [lo, hi] = worker_rows(n, replicas, first, local);
                          return hi - lo;
                        }};
  std::optional<data::Dataset> mine = data::shard_by_file(dataset, shard);
  WEFT_CHECK(mine || policy == data::AutoShardPolicy::AUTO, InvalidArgument)
      << "distributed dataset: auto_shard_policy FILE divides the input files among the "
      << workers << " workers, but this pipeline cannot be divided by file: " << shard.unshardable
      << "; use DATA (or AUTO, which falls back to DATA) to cut each global batch's rows";
  return mine;
}

// Replicas [first, first + count)'s slices of a global batch of `global_rows` rows, cut from
// `rows`, which holds the global batch's rows from `offset` on.
DistributedElement cut_rows(const data::Element& rows, int64_t global_rows, int64_t offset,
                            int replicas, int first, int count, int64_t step) {
  std::vector<data::Element> parts;
  std::vector<BatchSlice> slices;
  for (int r = first; r < first + count; ++r) {
    auto [lo, hi] = row_range(global_rows, replicas, r);
    data::Element part;
    for (const Tensor& t : rows) part.push_back(slice(t, {Slice{lo - offset, hi - offset}}));
    parts.push_back(std::move(part));
    slices.push_back({step, lo, hi - lo, global_rows});
  }
  return DistributedElement(std::move(parts), std::move(slices));
}

}  // namespace

DistributedElement split_batch(const data::Element& batch, int replicas, int64_t step, int first,
                               int count, data::AutoShardPolicy policy) {
  if (count == 0) count = replicas - first;
  const int workers = replicas / count;
  if (workers > 1 && policy == data::AutoShardPolicy::FILE) {
    WEFT_FAIL(InvalidArgument)
        << "distributed dataset: auto_shard_policy FILE divides a pipeline's files among the "
           "workers, which experimental_distribute_dataset and fit do with the whole dataset; "
           "one batch cannot be divided by file (use DATA to cut its rows)";
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
  return cut_rows(batch, rows, 0, replicas, first, count, step);
}

DistributedElement Strategy::split(const data::Element& batch, int64_t step,
                                   data::AutoShardPolicy policy) const {
  return split_batch(batch, num_replicas_in_sync(), step, impl_->first_local_replica(),
                     impl_->num_local_replicas(), policy);
}

DistributedDataset Strategy::experimental_distribute_dataset(const data::Dataset& dataset) const {
  WorkerInput input = worker_input(*impl_, dataset);
  return DistributedDataset(std::move(input.dataset), impl_, input.elements, dataset);
}

// In a cluster each worker's pipeline makes the elements of its own replicas: input pipeline k
// of num_workers.
DistributedDataset Strategy::distribute_datasets_from_function(
    const std::function<data::Dataset(const InputContext&)>& fn) const {
  int local = impl_->num_local_replicas();
  InputContext ctx{num_replicas_in_sync() / local, impl_->first_local_replica() / local,
                   num_replicas_in_sync()};
  return DistributedDataset(fn(ctx), impl_, DistributedDataset::Elements::kReplicaBatches);
}

DistributedDataset::Iterator DistributedDataset::begin() const {
  Iterator it;
  it.it_ = dataset_.begin();
  it.impl_ = impl_;
  it.elements_ = elements_;
  it.policy_ = dataset_.options().experimental_distribute.auto_shard_policy;
  it.whole_ = whole_;
  return it;
}

std::string DistributedDataset::Iterator::tracked_state() const {
  WEFT_CHECK(elements_ != Elements::kWorkerBatches, FailedPrecondition)
      << "DistributedDataset::Iterator: this dataset is divided by file among the workers, so "
         "each worker's position is in its own files and one checkpoint cannot hold them; "
         "checkpoint the model alone (a resumed run starts the data anew), or set the dataset's "
         "auto_shard_policy to DATA";
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
  switch (elements_) {
    case Elements::kGlobalBatches:
      if (std::optional<data::Element> batch = it_.next()) {
        out = split_batch(*batch, impl_->num_replicas_in_sync(), step_++,
                          impl_->first_local_replica(), impl_->num_local_replicas(), policy_);
      }
      return out;
    case Elements::kOwnRows:
      if (std::optional<data::Element> rows = it_.next()) {
        const int64_t global_rows = take_global_rows(*rows);
        out = split_own_rows(*impl_, *rows, global_rows, step_++);
      }
      return out;
    case Elements::kWorkerBatches: {
      out = split_worker_batch(*impl_, it_.next(), step_, like_, *whole_);
      if (out) {
        ++step_;
      } else {
        exhausted_ = true;
      }
      return out;
    }
    case Elements::kReplicaBatches:
      return read_replica_batches();
  }
  return out;
}

// One element per replica; a step needs all of them (a short last step is dropped whole, so that
// every replica runs the same number of steps).
std::optional<DistributedElement> DistributedDataset::Iterator::read_replica_batches() {
  std::optional<DistributedElement> out;
  const int local = impl_->num_local_replicas();
  std::vector<data::Element> parts;
  std::vector<BatchSlice> slices;
  int64_t offset = 0;
  for (int r = 0; r < local && parts.size() == static_cast<size_t>(r); ++r) {
    std::optional<data::Element> e = it_.next();
    if (!e) break;
    int64_t rows = !e->empty() && (*e)[0].rank() >= 1 ? (*e)[0].dim(0) : 1;
    slices.push_back({step_, offset, rows, 0});
    offset += rows;
    parts.push_back(std::move(*e));
  }
  const bool has_data = parts.size() == static_cast<size_t>(local);
  // Every worker's pipeline is its own: the workers agree on each step (TensorFlow's "has data"
  // all-reduce), so that one whose pipeline ends early, or makes other batches at the first step,
  // is named on every worker instead of leaving the others waiting in a collective; the slices'
  // positions and the global batch size count the rows every worker has.
  const std::vector<int64_t> rows = rows_of_workers(*impl_, has_data ? offset : -1);
  const auto workers = static_cast<int>(rows.size());
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
  place_slices(*impl_, rows, slices);
  ++step_;
  out.emplace(std::move(parts), std::move(slices));
  return out;
}



WorkerInput worker_input(const StrategyImpl& strategy, const data::Dataset& dataset) {
  if (std::optional<data::Dataset> mine = shard_by_file(strategy, dataset)) {
    return {std::move(*mine), DistributedDataset::Elements::kWorkerBatches};
  }
  const data::AutoShardPolicy policy = dataset.options().experimental_distribute.auto_shard_policy;
  const int replicas = strategy.num_replicas_in_sync(), local = strategy.num_local_replicas();
  const int first = strategy.first_local_replica();
  if (local < replicas &&
      (policy == data::AutoShardPolicy::DATA || policy == data::AutoShardPolicy::AUTO)) {
    std::optional<data::Dataset> own = data::map_only_own_rows(
        dataset, [=](int64_t n) { return worker_rows(n, replicas, first, local); });
    if (own) return {std::move(*own), DistributedDataset::Elements::kOwnRows};
  }
  return {dataset, DistributedDataset::Elements::kGlobalBatches};
}

int64_t take_global_rows(data::Element& own_rows) {
  const int64_t global_rows = own_rows.back().item<int64_t>();
  own_rows.pop_back();
  return global_rows;
}

DistributedElement split_own_rows(const StrategyImpl& strategy, const data::Element& rows,
                                  int64_t global_rows, int64_t step) {
  const int replicas = strategy.num_replicas_in_sync(), local = strategy.num_local_replicas();
  const int first = strategy.first_local_replica();
  const int64_t offset = worker_rows(global_rows, replicas, first, local).first;
  return cut_rows(rows, global_rows, offset, replicas, first, local, step);
}

std::optional<DistributedElement> split_worker_batch(const StrategyImpl& strategy,
                                                     const std::optional<data::Element>& batch,
                                                     int64_t step,
                                                     std::vector<data::TensorSpec>& like,
                                                     const data::Dataset& whole) {
  int64_t mine = -1;
  if (batch) {
    WEFT_CHECK(!batch->empty() && (*batch)[0].rank() >= 1, InvalidArgument)
        << "distributed dataset: an element must hold batched tensors (a first axis to cut "
           "among replicas)";
    mine = (*batch)[0].dim(0);
    like.clear();
    for (const Tensor& t : *batch) like.push_back({t.dtype(), t.shape()});
  } else if (like.empty()) {
    like = whole.element_spec();  // this worker's files have made no rows yet
  }
  const std::vector<int64_t> rows = rows_of_workers(strategy, mine);
  if (std::all_of(rows.begin(), rows.end(), ended)) return std::nullopt;
  data::Element here;
  if (batch) {
    here = *batch;
  } else {
    for (const data::TensorSpec& c : like) {
      Shape shape = c.shape.empty() ? Shape{0} : c.shape;
      shape[0] = 0;
      for (int64_t& d : shape) d = std::max<int64_t>(d, 0);
      here.push_back(zeros(shape, c.dtype));
    }
  }
  DistributedElement out = split_batch(here, strategy.num_local_replicas(), step);
  place_slices(strategy, rows, out.slices);
  return out;
}

}  // namespace weft::distribute
