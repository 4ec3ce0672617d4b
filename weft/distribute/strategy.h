// weft::distribute::Strategy, as tf.distribute.Strategy: where variables live and how replicas
// run a step and meet. The default strategy (one replica, the calling thread) is what code sees
// outside any scope(); MirroredStrategy (weft/distribute/mirrored_strategy.h) runs replicas on
// threads. The same training code runs under every strategy.
//
//   weft::distribute::MirroredStrategy strategy;           // every logical CPU device
//   { auto scope = strategy.scope(); model = build_model(); model.compile(...); }
//   model.fit(train_ds, {.epochs = 3});                    // each global batch cut among replicas
//
//   auto dist_ds = strategy.experimental_distribute_dataset(train_ds);
//   for (const auto& batch : dist_ds) {
//     auto losses = strategy.run(train_step, batch);        // train_step(const data::Element&)
//     weft::Tensor loss = strategy.reduce(weft::distribute::ReduceOp::SUM, losses);
//   }
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "weft/autodiff/variable.h"
#include "weft/core/replica_context.h"
#include "weft/data/dataset.h"
#include "weft/distribute/values.h"

namespace weft::distribute {

namespace coordination {
class CoordinationClient;
}

// What a strategy implements.
class StrategyImpl {
 public:
  virtual ~StrategyImpl() = default;
  virtual int num_replicas_in_sync() const = 0;
  // "default", "mirrored", ...
  virtual std::string name() const = 0;
  // Runs fn(r) on every replica r, each on its own thread with its replica context, and returns
  // when all have, after writing the variable updates they recorded (combined by aggregation);
  // rethrows the first replica's error. The default strategy runs fn(0) on the calling thread.
  virtual void run_replicas(const std::function<void(int replica)>& fn) = 0;
  // How variables made inside scope() are created (none by default: in one process replicas
  // share one storage per variable).
  virtual std::optional<VariableCreator> variable_creator() const { return std::nullopt; }
  // The replicas this process runs, [first_local_replica(), + num_local_replicas()) of the
  // num_replicas_in_sync() of the whole cluster; run_replicas(fn) calls fn(0 ... local - 1).
  virtual int num_local_replicas() const { return num_replicas_in_sync(); }
  virtual int first_local_replica() const { return 0; }
  // Collectives over the cluster's processes, called between steps by every worker in the same
  // order (this process alone: value itself). The element-wise sum of `value`:
  virtual Tensor sum_across_workers(const Tensor& value) const { return value; }
  // The workers' values concatenated along axis 0 in worker order; they may differ in length
  // along axis 0 (a worker may have none), not in the other axes:
  virtual Tensor all_gather_across_workers(const Tensor& value) const { return value; }
  // The chief's value, on every worker:
  virtual Tensor broadcast_across_workers(const Tensor& value) const { return value; }
  // Returns once every worker has called it.
  virtual void barrier_across_workers() const {}
  // Tells the cluster's other processes that this one failed with `message`, so that their
  // waits end naming it (the first report counts; nothing outside a cluster).
  virtual void report_error(const std::string& /*message*/) const {}
  // Another process of the cluster whose failure ended it ("worker:1"), once this one has
  // heard; empty when none has failed, or this one failed first.
  virtual std::string failed_peer() const { return ""; }
  // How the workers' collectives travel: "shared_memory", "tcp", "mpi"; "none" in one process.
  virtual std::string transport() const { return "none"; }
  // This process's task in a cluster ("worker:1"); empty in one process.
  virtual std::string task() const { return ""; }
  // This task's client of the cluster's coordination service (its key-value store, barriers);
  // null in one process and under mpirun.
  virtual coordination::CoordinationClient* coordination_client() const { return nullptr; }
};

// tf.distribute.experimental.ValueContext: what experimental_distribute_values_from_function
// tells the function about the replica it makes a value for.
struct ValueContext {
  int replica_id_in_sync_group = 0;
  int num_replicas_in_sync = 1;
};

// tf.distribute.InputContext: what distribute_datasets_from_function tells each input pipeline.
struct InputContext {
  int num_input_pipelines = 1;
  int input_pipeline_id = 0;
  int num_replicas_in_sync = 1;
  // global_batch_size / num_replicas_in_sync; InvalidArgument when it does not divide.
  int64_t get_per_replica_batch_size(int64_t global_batch_size) const;
};

class DistributedDataset;
class StrategyScope;

class Strategy {
 public:
  // The default strategy.
  Strategy();
  explicit Strategy(std::shared_ptr<StrategyImpl> impl) : impl_(std::move(impl)) {}

  // Across the whole cluster; this process runs experimental_local_results' count of them.
  int num_replicas_in_sync() const { return impl_->num_replicas_in_sync(); }
  std::string name() const { return impl_->name(); }
  StrategyImpl& extended() const { return *impl_; }
  bool operator==(const Strategy& o) const { return impl_ == o.impl_; }

  // While the returned guard lives, this is the calling thread's strategy (get_strategy()) and
  // variables made on the thread go through its creator.
  [[nodiscard]] StrategyScope scope() const;

  // Calls fn once per replica, concurrently, each with its replica's value of every argument (a
  // PerReplica or DistributedElement gives replica r its r-th value; anything else is passed to
  // every replica as it is), and returns the per-replica results. On a DistributedElement each
  // replica also gets its BatchSlice (current_batch_slice(); Dropout keys its masks by it).
  template <typename F, typename... Args>
  auto run(F&& fn, const Args&... args) const;

  // tf.distribute.Strategy.reduce: across every replica of the cluster, element-wise (axis
  // nullopt), or also along `axis` of the values concatenated (MEAN then divides by every element
  // reduced; the values may then differ in length along `axis`, and a replica may have none).
  Tensor reduce(ReduceOp op, const PerReplica<Tensor>& value,
                std::optional<int64_t> axis = std::nullopt) const;
  // Every replica's value concatenated along `axis`, in global replica order: in a cluster the
  // other workers' replicas too, so every worker gets the same tensor. The values may differ in
  // length along `axis`, and a replica with nothing to add (no rows of a short last batch) may pass
  // an undefined tensor.
  Tensor gather(const PerReplica<Tensor>& value, int64_t axis) const;
  // tf.distribute.Strategy.experimental_distribute_values_from_function: fn(context) for each of
  // this process's replicas, as a PerReplica for run().
  template <typename F>
  auto experimental_distribute_values_from_function(F&& fn) const {
    using Value = std::invoke_result_t<F&, const ValueContext&>;
    std::vector<Value> values;
    for (int r = 0; r < impl_->num_local_replicas(); ++r) {
      values.push_back(fn(ValueContext{impl_->first_local_replica() + r, num_replicas_in_sync()}));
    }
    return PerReplica<Value>(std::move(values));
  }
  template <typename T>
  std::vector<T> experimental_local_results(const PerReplica<T>& value) const {
    return value.values();
  }

  // Each element of `dataset` is a global batch; each replica gets a contiguous slice of its
  // rows, cut as evenly as it goes (row_range), so a partial last batch is shared out too. In a
  // cluster, by the dataset's auto-shard policy (worker_input below): under DATA every worker
  // reads the same global batches and keeps its replicas' rows (mapping only those, over
  // batch() over map()s), so the position of the iterator is the same on every worker; under
  // FILE (and AUTO over a pipeline that reads at least one file per worker) each worker reads
  // only its share of the files and makes its rows of each global batch.
  DistributedDataset experimental_distribute_dataset(const data::Dataset& dataset) const;
  // One global batch cut for this process's replicas (as experimental_distribute_dataset cuts
  // each element, by the dataset's auto-shard policy); `step` is the global batch's number.
  DistributedElement split(const data::Element& batch, int64_t step,
                           data::AutoShardPolicy policy = data::AutoShardPolicy::AUTO) const;
  // fn makes the dataset of one input pipeline, whose elements are per-replica batches; replica
  // r of a step gets the step's r-th element. In a cluster each worker runs its own pipeline,
  // and the workers agree on every step (one small all-gather of their rows, as TensorFlow's
  // "has data" all-reduce): the global batch is the sum of their rows (a last batch may be
  // shorter on some workers), and a pipeline that ends before the others, or makes batches of
  // another size at the first step, fails on every worker naming it.
  DistributedDataset distribute_datasets_from_function(
      const std::function<data::Dataset(const InputContext&)>& fn) const;

 private:
  std::shared_ptr<StrategyImpl> impl_;
};

class StrategyScope {
 public:
  explicit StrategyScope(const Strategy& strategy);
  ~StrategyScope();
  StrategyScope(const StrategyScope&) = delete;
  StrategyScope& operator=(const StrategyScope&) = delete;

 private:
  std::optional<VariableCreatorScope> creator_;
};
inline StrategyScope Strategy::scope() const { return StrategyScope(*this); }

// The calling thread's strategy: the innermost Strategy::scope(), else the default strategy.
Strategy get_strategy();
// True inside some strategy's scope() (or on its replica threads).
bool has_strategy();

// tf.nn.compute_average_loss: sum(per_example_loss) / global_batch_size, so that summing the
// replicas' results gives the mean over the whole global batch, however it was cut. Without
// global_batch_size: the current batch slice's (exact for a partial last batch), else the
// per-replica batch times num_replicas_in_sync.
Tensor compute_average_loss(const Tensor& per_example_loss,
                            std::optional<int64_t> global_batch_size = std::nullopt);

// A dataset whose elements are cut among a strategy's replicas.
class DistributedDataset {
 public:
  // What the dataset's elements are.
  enum class Elements {
    kGlobalBatches,   // global batches, each cut among all replicas (DATA, OFF)
    kOwnRows,         // this worker's rows of every global batch, mapped here only (DATA)
    kWorkerBatches,   // this worker's rows of each global batch, from its files (FILE)
    kReplicaBatches,  // one batch per replica (distribute_datasets_from_function)
  };

  // A Trackable: a train::Checkpoint of it (with the model and the optimizer) resumes a custom
  // loop at the next global batch, on any number of replicas or workers. (Not when divided by
  // file: each worker's position in its own files is its own, and saving it is refused.)
  class Iterator : public Trackable {
   public:
    Iterator() = default;
    // The next global batch, cut; nullopt at the end.
    std::optional<DistributedElement> next();
    const DistributedElement& operator*();
    Iterator& operator++();
    bool operator==(std::default_sentinel_t);
    // The underlying iterator (over global batches, its position is the same on any number of
    // replicas).
    const data::Dataset::Iterator& global_iterator() const { return it_; }

    // The position after the batches handed out so far (one being worked on counts as done).
    std::vector<std::pair<std::string, Variable>> tracked_variables() const override { return {}; }
    std::string tracked_state() const override;
    void restore_state(const std::string& state) override;

   private:
    friend class DistributedDataset;
    data::Dataset::Iterator it_;
    std::shared_ptr<StrategyImpl> impl_;
    Elements elements_ = Elements::kGlobalBatches;
    data::AutoShardPolicy policy_ = data::AutoShardPolicy::AUTO;
    std::optional<data::Dataset> whole_;  // the pipeline before worker_input rewrote it
    int64_t step_ = 0;
    bool exhausted_ = false;  // the end was read (and agreed on)
    std::vector<data::TensorSpec> like_;  // kWorkerBatches: the last batch's structure
    std::optional<DistributedElement> current_;  // read by operator* or ==, not yet consumed
    bool fetched_ = false;
    std::optional<DistributedElement> read();
    std::optional<DistributedElement> read_replica_batches();
  };
  Iterator begin() const;
  std::default_sentinel_t end() const { return {}; }
  // The pipeline read here (in a cluster, as worker_input rewrote it for this worker).
  const data::Dataset& dataset() const { return dataset_; }

 private:
  friend class Strategy;
  DistributedDataset(data::Dataset dataset, std::shared_ptr<StrategyImpl> impl, Elements elements,
                     std::optional<data::Dataset> whole = std::nullopt)
      : dataset_(std::move(dataset)),
        impl_(std::move(impl)),
        elements_(elements),
        whole_(std::move(whole)) {}
  data::Dataset dataset_;
  std::shared_ptr<StrategyImpl> impl_;
  Elements elements_;
  std::optional<data::Dataset> whole_;  // the pipeline before worker_input rewrote it
};

// Cuts one global batch into `replicas` contiguous row slices (row_range) and keeps `count` of
// them from `first` on (count 0: all of them). With several workers (replicas / count) and
// `policy` OFF, the batch is this worker's alone: cut among its `count` replicas, placed after
// the other workers' batches; FILE is refused (a pipeline is divided by file whole, by
// experimental_distribute_dataset or fit, not batch by batch).
DistributedElement split_batch(const data::Element& batch, int replicas, int64_t step,
                               int first = 0, int count = 0,
                               data::AutoShardPolicy policy = data::AutoShardPolicy::AUTO);

// How this process's worker reads `dataset` in a cluster (experimental_distribute_dataset and
// fit), by the dataset's auto-shard policy:
//   kWorkerBatches: under FILE, and under AUTO where it applies, the pipeline divided by file
//     (data::shard_by_file: its file lists divided among the workers, its outermost batch this
//     worker's rows of each global batch). FILE over a pipeline that cannot be divided by file is
//     InvalidArgument saying why.
//   kOwnRows: under DATA (and AUTO otherwise) over batch() over map()s, every global batch with
//     only this worker's rows mapped (data::map_only_own_rows).
//   kGlobalBatches: otherwise (one worker, OFF, other pipelines): the pipeline as it is.
struct WorkerInput {
  data::Dataset dataset;
  DistributedDataset::Elements elements = DistributedDataset::Elements::kGlobalBatches;
};
WorkerInput worker_input(const StrategyImpl& strategy, const data::Dataset& dataset);
// kOwnRows: an element of map_only_own_rows is this worker's rows, then the global batch's row
// count, which take_global_rows removes and returns; split_own_rows cuts the rows among this
// worker's replicas as split_batch cuts the whole batch.
int64_t take_global_rows(data::Element& own_rows);
DistributedElement split_own_rows(const StrategyImpl& strategy, const data::Element& rows,
                                  int64_t global_rows, int64_t step);
// One step of a dataset divided by file: `batch` is this worker's (nullopt once its files are
// read), cut among its replicas once the workers agree on the step's rows (one small all-gather,
// as TensorFlow's "has data" all-reduce). Every worker's rows count in the global batch; a worker
// whose files are read trains on 0 rows while the others go on; nullopt once every worker's
// have ended. `like` keeps the last batch's structure for a 0-row batch (`whole`'s, the pipeline
// before it was divided, when this worker has had no rows).
std::optional<DistributedElement> split_worker_batch(const StrategyImpl& strategy,
                                                     const std::optional<data::Element>& batch,
                                                     int64_t step,
                                                     std::vector<data::TensorSpec>& like,
                                                     const data::Dataset& whole);

namespace internal {
template <typename T>
const T& replica_value(const T& v, int) {
  return v;
}
template <typename T>
const T& replica_value(const PerReplica<T>& v, int r) {
  return v[r];
}
inline const data::Element& replica_value(const DistributedElement& v, int r) { return v[r]; }
template <typename T>
const BatchSlice* slice_of(const T&, int) {
  return nullptr;
}
inline const BatchSlice* slice_of(const DistributedElement& v, int r) {
  return &v.slices[static_cast<size_t>(r)];
}
}  // namespace internal

template <typename F, typename... Args>
auto Strategy::run(F&& fn, const Args&... args) const {
  using Result = std::invoke_result_t<F&, decltype(internal::replica_value(args, 0))...>;
  int n = impl_->num_local_replicas();
  auto call = [&]([[maybe_unused]] int r) {
    StrategyScope in_scope(*this);  // replica threads see this strategy and its variable creator
    const BatchSlice* slice = nullptr;
    ((slice = slice ? slice : internal::slice_of(args, r)), ...);
    std::optional<BatchSliceScope> in_slice;
    if (slice != nullptr) in_slice.emplace(*slice);
    return fn(internal::replica_value(args, r)...);
  };
  if constexpr (std::is_void_v<Result>) {
    impl_->run_replicas(call);
  } else {
    std::vector<std::optional<Result>> results(static_cast<size_t>(n));
    impl_->run_replicas([&](int r) { results[static_cast<size_t>(r)].emplace(call(r)); });
    std::vector<Result> out;
    for (auto& r : results) out.push_back(std::move(*r));
    return PerReplica<Result>(std::move(out));
  }
}

}  // namespace weft::distribute
