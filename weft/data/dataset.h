// weft::data::Dataset: an input pipeline as tf.data describes it: a lazy sequence of elements,
// each a tuple of tensors, built from sources and transformations and read with an iterator whose
// exact position can be saved and restored (it is a Trackable, so checkpoints carry it).
//
//   auto ds = weft::data::Dataset::from_tensor_slices({images, labels})
//                 .shuffle(10000, /*seed=*/42)
//                 .batch(128)
//                 .map([](const weft::data::Element& b) { return augment(b); }, 4)
//                 .prefetch(2);
//   for (const weft::data::Element& batch : ds) step(batch[0], batch[1]);
//
//   auto it = ds.begin();                   // or hold an iterator across steps
//   std::string state = it.save_state();    // ... later, in this or another process:
//   auto it2 = ds.begin(); it2.restore_state(state);   // yields what `it` would have yielded
#pragma once

#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "weft/checkpoint/trackable.h"
#include "weft/core/tensor.h"

namespace weft::data {

// One element of a dataset: its components (one per tensor given to from_tensor_slices).
using Element = std::vector<Tensor>;

// tf.data.experimental.AutoShardPolicy: how MultiWorkerMirroredStrategy divides a dataset among
// its workers (experimental_distribute_dataset and fit).
//   DATA: every worker reads every global batch and keeps its replicas' rows: each example is
//         trained on once per epoch, by one worker, in the order one process would.
//   AUTO: FILE when the pipeline can be divided by file (weft/data/auto_shard.h), else DATA.
//   FILE: each worker reads its own share of the input files and makes its rows of each global
//         batch from them; refused (InvalidArgument) for a pipeline that cannot be divided so.
//   OFF:  no sharding: every worker reads the whole dataset and trains on each of its batches,
//         so every example is seen once per worker per epoch (the global batch is the dataset's
//         batch times the workers).
enum class AutoShardPolicy { AUTO, OFF, FILE, DATA };
const char* auto_shard_policy_name(AutoShardPolicy policy);
struct DistributeOptions {
  AutoShardPolicy auto_shard_policy = AutoShardPolicy::AUTO;
};
// tf.data.Options: settings a pipeline carries through its transformations.
struct Options {
  DistributeOptions experimental_distribute;
  // The default of interleave's `deterministic`: false lets a parallel interleave yield elements
  // out of order when that saves waiting.
  bool experimental_deterministic = true;
};

// A component's dtype and shape (-1: any size along that axis), as tf.TensorSpec.
struct TensorSpec {
  DType dtype = kFloat32;
  Shape shape{};
};

struct PaddedBatchOptions {
  // Per component: the shape to pad to (-1 entries, or an empty shape: the batch's longest).
  std::vector<Shape> padded_shapes{};
  std::vector<double> padding_values{};  // per component; 0 by default
  bool drop_remainder = false;
};

struct WindowOptions {
  int64_t size = 1;
  int64_t shift = 0;   // elements between window starts; 0: size
  int64_t stride = 1;  // take every stride-th element within a window
  bool drop_remainder = false;
};

// Dataset::interleave's settings, as tf.data.Dataset.interleave's arguments.
struct InterleaveOptions {
  // Inner datasets open at once; -1 (kAutotune): config::num_threads() sequentially, in parallel
  // min(num_parallel_calls, config::num_threads()), or a third of the threads (rounded up) when
  // num_parallel_calls is kAutotune too.
  int64_t cycle_length = -1;
  int64_t block_length = 1;  // consecutive elements taken from each inner dataset
  // 0 (TF's None): read on the caller's thread; n >= 1 (at most cycle_length) or kAutotune (-1):
  // the inner datasets are read ahead on that many worker threads.
  int64_t num_parallel_calls = 0;
  // Parallel only. true: the sequential order exactly; false: when the current inner dataset has
  // no element ready, the next one that has gives its element (each inner order is kept).
  // Unset: the dataset's Options::experimental_deterministic.
  std::optional<bool> deterministic{};
};

// Dataset::bucket_by_sequence_length's settings (tf.data.experimental.bucket_by_sequence_length's).
struct BucketOptions {
  // As PaddedBatchOptions': per component, the shape to pad to (-1 entries, or an empty shape:
  // the batch's longest). weft has no static shapes, so pad_to_bucket_boundary needs them: its
  // -1 entries become the bucket's boundary - 1.
  std::vector<Shape> padded_shapes{};
  std::vector<double> padding_values{};  // per component; 0 by default
  bool pad_to_bucket_boundary = false;
  bool no_padding = false;  // batch instead of padded_batch (elements of equal shapes)
  bool drop_remainder = false;
};

// The compression of saved data (tf.data's compression argument). kAuto is none: TF would pick
// SNAPPY, which weft does not have.
enum class Compression { kAuto, kNone, kGzip };
class Dataset;
// Dataset::save's settings (tf.data.experimental.save's arguments).
struct SaveOptions {
  Compression compression = Compression::kNone;  // kGzip: each record deflated by zlib
  // An element's shard, an id >= 0. Unset: element i goes to shard i % config::num_threads().
  std::function<int64_t(const Element&)> shard_func{};
};
// Dataset::load's settings (tf.data.experimental.load's arguments).
struct LoadOptions {
  // When given, checked against the saved one (InvalidArgument); the saved one is used otherwise.
  std::vector<TensorSpec> element_spec{};
  std::optional<Compression> compression{};  // when given, checked against the saved one
  // The dataset made of the shards' (in ascending shard id). Unset: one element of each shard in
  // turn (a parallel, deterministic interleave), which gives back the order the elements were
  // saved in under the default shard_func, on any machine.
  std::function<Dataset(const std::vector<Dataset>& shards)> reader_func{};
};

// Dataset::snapshot's settings (tf.data.experimental.snapshot's arguments).
// shard_func and reader_func are as SaveOptions' and LoadOptions'.
struct SnapshotOptions {
  Compression compression = Compression::kAuto;  // kAuto: none
  std::function<int64_t(const Element&)> shard_func{};
  std::function<Dataset(const std::vector<Dataset>& shards)> reader_func{};
};

class StateWriter;  // weft/data/iterator_state.h
class StateReader;
struct RowSource;  // internal: the tensors a from_tensor_slices pipeline reads rows of
struct FileShard;  // weft/data/auto_shard.h

class Dataset {
 public:
  class Iterator;

  // prefetch / map(num_parallel_calls): let weft choose (tf.data.AUTOTUNE).
  static constexpr int64_t kAutotune = -1;
  // What cardinality() returns for endless datasets and when it cannot tell without reading.
  static constexpr int64_t kInfiniteCardinality = -1;
  static constexpr int64_t kUnknownCardinality = -2;

  // ---- sources ----
  // Slices every component along its first dimension; all must have the same first dimension.
  static Dataset from_tensor_slices(const Tensor& t);
  static Dataset from_tensor_slices(const std::vector<Tensor>& components);
  // 0, 1, ..., n-1 (or start, start+step, ... < stop) as int64 scalars.
  static Dataset range(int64_t n);
  static Dataset range(int64_t start, int64_t stop, int64_t step = 1);
  // tf.data.Dataset.from_generator: `make` is called at the start of every pass and returns the
  // generator, which gives one element per call and nullopt at the end. With an
  // output_signature, every element is checked against it (InvalidArgument naming the element
  // and component). An iterator over it cannot save its position (a generator's state is its
  // own), so it cannot be checkpointed.
  using Generator = std::function<std::optional<Element>()>;
  static Dataset from_generator(std::function<Generator()> make,
                                std::vector<TensorSpec> output_signature = {});
  // tf.data.Dataset.zip: elements of every dataset side by side (their components concatenated),
  // until the shortest ends.
  static Dataset zip(const std::vector<Dataset>& datasets);
  // One element: the tensors as they are (from_tensor_slices slices them).
  static Dataset from_tensors(const std::vector<Tensor>& components);
  // tf.data.experimental.choose_from_datasets: the next element of datasets[c] for each integer
  // scalar c of `choices` (an exhausted dataset's turn is skipped).
  static Dataset choose_from_datasets(const std::vector<Dataset>& datasets, const Dataset& choices);
  // tf.data.experimental.sample_from_datasets: each element from dataset i with probability
  // weights[i] (default: equal) among those not yet exhausted, drawn by Philox keyed by (seed,
  // element number); it ends when all are exhausted.
  static Dataset sample_from_datasets(const std::vector<Dataset>& datasets,
                                      std::vector<double> weights = {}, uint64_t seed = 0);

  // ---- transformations (each returns a new Dataset; this one is unchanged) ----
  // Applies f to every element (to its single component, for the Tensor overload). With
  // num_parallel_calls > 1 (or kAutotune: config::num_threads()) that many elements are mapped at
  // once on worker threads; results still come in input order, so the output does not depend on
  // the parallelism. f must be safe to call from several threads at once.
  Dataset map(std::function<Tensor(const Tensor&)> f, int64_t num_parallel_calls = 1) const;
  Dataset map(std::function<Element(const Element&)> f, int64_t num_parallel_calls = 1) const;
  // Keeps the elements for which pred is true.
  Dataset filter(std::function<bool(const Tensor&)> pred) const;
  Dataset filter(std::function<bool(const Element&)> pred) const;
  // tf.data's shuffle: fills a buffer with the next buffer_size elements and yields a uniformly
  // random one of them, refilling its place from the input. Random picks are Philox draws keyed by
  // (seed, pass): with reshuffle_each_iteration every pass over this dataset (each begin(), each
  // repetition under repeat()) has its own order, the same in every run with the same seed;
  // without it every pass has the order of the first. Unlike TensorFlow a missing seed is 0, not a
  // random one: runs are reproducible unless a seed is chosen per run. Restoring an iterator's
  // state makes this dataset's next pass the one after the restored pass.
  Dataset shuffle(int64_t buffer_size, uint64_t seed = 0,
                  bool reshuffle_each_iteration = true) const;
  // Stacks consecutive elements component-wise; the last batch may be smaller unless
  // drop_remainder. Over from_tensor_slices (through shuffle, take, skip, shard, filter, repeat,
  // cache) a batch is made with one row copy per component instead of per-element tensors.
  Dataset batch(int64_t batch_size, bool drop_remainder = false) const;
  // batch for elements of different shapes: each component is padded (at the end of every axis)
  // to the longest in the batch, or to options.padded_shapes, with options.padding_values.
  // Components must have the same rank in every element.
  Dataset padded_batch(int64_t batch_size, PaddedBatchOptions options = {}) const;
  // Sliding windows: the elements [i shift, i shift + (size - 1) stride] taking every stride-th,
  // for i = 0, 1, ..., stacked component-wise as batch stacks (tf.data's window yields each window
  // as a dataset; window(...).flat_map(batch) is this). Windows at the end are shorter unless
  // drop_remainder.
  Dataset window(WindowOptions options) const;
  // f(*this): a transformation written as a function of datasets.
  Dataset apply(const std::function<Dataset(const Dataset&)>& f) const;
  // This dataset's elements, then other's.
  Dataset concatenate(const Dataset& other) const;
  // (index, element...) with index start, start + 1, ... as an int64 scalar first component.
  Dataset enumerate(int64_t start = 0) const;
  // The elements of f(e) for each element e, in order.
  Dataset flat_map(std::function<Dataset(const Element&)> f) const;
  // tf.data.Dataset.interleave: f(e) for each input element e gives an inner dataset; up to
  // cycle_length of them are open at once, and block_length consecutive elements are taken from
  // each in turn, an exhausted one being replaced by the next input element's in its place of
  // the cycle (TF's order exactly). With num_parallel_calls the inner datasets (and the next
  // cycle_length input elements') are read ahead on worker threads; deterministic output is the
  // sequential one. An error from f or an inner dataset is raised at its place in that order.
  // f runs on the caller's thread; in parallel, the inner datasets are read on worker threads.
  Dataset interleave(std::function<Dataset(const Element&)> f,
                     InterleaveOptions options = {}) const;
  // tf.data.experimental.group_by_window: elements are gathered by key_func's value until one
  // key has window_size of them (window_size_func(key), called once per key); all of
  // reduce_func(key, window) is then yielded before more input is read. At the end of the input
  // the unfinished windows are reduced in ascending key order. The window holds its elements in
  // input order.
  Dataset group_by_window(std::function<int64_t(const Element&)> key_func,
                          std::function<Dataset(int64_t key, const Dataset& window)> reduce_func,
                          int64_t window_size) const;
  Dataset group_by_window(std::function<int64_t(const Element&)> key_func,
                          std::function<Dataset(int64_t key, const Dataset& window)> reduce_func,
                          std::function<int64_t(int64_t key)> window_size_func) const;
  // tf.data.experimental.bucket_by_sequence_length: element_length_func's value puts an element
  // in bucket i when boundaries[i-1] <= length < boundaries[i] (a length equal to a boundary goes
  // up), and each bucket is batched by bucket_batch_sizes[i] (padded_batch, or batch with
  // no_padding), as group_by_window. bucket_boundaries must be strictly increasing.
  Dataset bucket_by_sequence_length(std::function<int64_t(const Element&)> element_length_func,
                                    std::vector<int64_t> bucket_boundaries,
                                    std::vector<int64_t> bucket_batch_sizes,
                                    BucketOptions options = {}) const;
  // The rows of each element (batch's inverse): components sliced along their first axis.
  Dataset unbatch() const;
  // Elements while pred holds; ends at the first for which it does not.
  Dataset take_while(std::function<bool(const Element&)> pred) const;
  // Drops the elements whose production throws InvalidArgument or DataLoss (a bad record, a
  // map function that refuses an element), as tf.data.experimental.ignore_errors.
  Dataset ignore_errors() const;
  // tf.data.experimental.scan: f(state, element) gives (new state, output element), starting
  // from initial_state; the state is saved with an iterator's position.
  using ScanFn =
      std::function<std::pair<Element, Element>(const Element& state, const Element& element)>;
  Dataset scan(Element initial_state, ScanFn f) const;
  // The first occurrence of each value; elements must be one integer scalar.
  Dataset unique() const;
  // f folded over every element from `initial` (tf.data's reduce), read now.
  Element reduce(Element initial,
                 const std::function<Element(const Element& state, const Element& e)>& f) const;
  // The dataset's only element; InvalidArgument unless it has exactly one.
  Element get_single_element() const;
  // Each component's dtype and shape, from the first element of a fresh pass (weft has no static
  // shapes to read it from; an empty dataset gives an empty spec).
  std::vector<TensorSpec> element_spec() const;
  // The whole dataset `count` times (-1: forever). Each repetition is a new pass.
  Dataset repeat(int64_t count = -1) const;
  // The first `count` elements (-1: all) / all but the first `count` (-1: none).
  Dataset take(int64_t count) const;
  Dataset skip(int64_t count) const;
  // Every num_shards-th element starting at `index` (one worker's part of the data).
  Dataset shard(int64_t num_shards, int64_t index) const;
  // Produces up to buffer_size elements ahead on a background thread (kAutotune: 2). An
  // exception raised while producing an element is rethrown by the consumer's next() at that
  // element's place in the sequence.
  Dataset prefetch(int64_t buffer_size = kAutotune) const;
  // Keeps the elements of the first complete pass in memory; later passes read them instead of
  // the input (a shuffle before cache() is thus frozen). An iterator's saved state then holds the
  // cached elements (only row numbers, over from_tensor_slices).
  Dataset cache() const;
  // The same pipeline carrying `options` (tf.data.Dataset.with_options); transformations made
  // from it carry them too.
  Dataset with_options(const Options& options) const;
  const Options& options() const;

  // tf.data.experimental.save: reads the whole dataset now and writes it under `path`, in weft's
  // own format (weft/data/internal/snapshot_io.h), as a new run of shard files and then the
  // metadata, replaced atomically: a save that fails leaves the previous one at `path` readable.
  void save(const std::string& path, SaveOptions options = {}) const;
  // tf.data.experimental.load: the dataset saved at `path`, its element_spec read from the
  // metadata (as TF 2.5; TF 2.4 needs it given). A missing save is FailedPrecondition; a damaged
  // file DataLoss naming the file and the record's byte offset. Its iterators save the position
  // in each shard file, as any other stage.
  static Dataset load(const std::string& path, LoadOptions options = {});

  // tf.data.experimental.snapshot: a pass over the returned dataset either writes this one's
  // elements through to a new run under path/<hash of describe() and compression>/ (when no run
  // there is finished), finishing the run at the end of the input, or reads the finished run
  // instead of this dataset (with reader_func, or one element of each shard in turn). A pass
  // stopped early finishes nothing, so the next pass writes again. The files are save()'s. Only
  // describe() is hashed: a pipeline whose functions change needs a new path. An iterator saved
  // while writing closes the files written so far; restored, it writes a new run that starts
  // with them (hard links), leaving the saving run alone.
  Dataset snapshot(const std::string& path, SnapshotOptions options = {}) const;

  // Number of elements, kInfiniteCardinality or kUnknownCardinality (after filter, say).
  int64_t cardinality() const;
  // The pipeline as code, e.g. "from_tensor_slices((100, 784) float32).shuffle(100, seed=1)".
  // It is what a saved iterator state is checked against.
  std::string describe() const;

  // A fresh pass over the data.
  Iterator begin() const;
  std::default_sentinel_t end() const { return {}; }

  // The pipeline stage behind a Dataset; each make_reader() starts a fresh pass over the data.
  struct Reader {
    virtual ~Reader() = default;
    // The next element, or nullopt at the end.
    virtual std::optional<Element> next() = 0;
    // Writes / reads back this reader's exact position, its inputs' included, so that a reader
    // restored from what save() wrote yields exactly what this one would yield next. restore()
    // may be called on a reader in any state. The defaults throw FailedPrecondition.
    virtual void save(StateWriter& w) const;
    virtual void restore(StateReader& r);
    // Fast paths over from_tensor_slices (internal): when every element this reader yields is a
    // row of one RowSource, that source, and next_row() yields row numbers instead of elements.
    virtual const RowSource* row_source() const { return nullptr; }
    virtual std::optional<int64_t> next_row();
  };
  struct Node {
    virtual ~Node() = default;
    virtual std::unique_ptr<Reader> make_reader() const = 0;
    virtual int64_t cardinality() const { return kUnknownCardinality; }
    virtual std::string describe() const { return "custom()"; }
    // shard_by_file's rewrite (weft/data/auto_shard.h): this stage over its inputs rewritten, or
    // null when it cannot be (the default: the stage is named in shard.unshardable).
    virtual std::shared_ptr<const Node> shard_files(FileShard& shard) const;
  };

  // Reads a dataset. Copies share the position (an iterator is a handle to its pipeline's state).
  class Iterator : public Trackable {
   public:
    using value_type = Element;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    explicit Iterator(std::unique_ptr<Reader> reader);
    // The next element, or nullopt at the end.
    std::optional<Element> next();
    const Element& operator*() const;
    Iterator& operator++();
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const;

    // The exact position: every stage's state (shuffle buffers and random-draw counters, elements
    // produced ahead by prefetch or parallel map, repeat's pass count, ...), framed with a magic,
    // a version, a CRC-32 and the pipeline's describe() string.
    std::string save_state() const;
    // Continues from a state saved by an iterator over the same pipeline (in any process). A
    // corrupted, truncated or mismatched state throws DataLoss saying what was expected, and
    // leaves this iterator as it was.
    void restore_state(const std::string& state) override;

    // Trackable: no variables, the state above.
    std::vector<std::pair<std::string, Variable>> tracked_variables() const override { return {}; }
    std::string tracked_state() const override { return save_state(); }

   private:
    friend class Dataset;
    struct Cursor;
    Iterator(std::shared_ptr<const Node> node, std::unique_ptr<Reader> reader);

    std::shared_ptr<const Node> node_;  // null when built from a bare Reader
    std::shared_ptr<Cursor> cursor_;
  };

  explicit Dataset(std::shared_ptr<const Node> node) : node_(std::move(node)) {}
  const std::shared_ptr<const Node>& node() const { return node_; }

 private:
  // A dataset of `node` with this one's options.
  Dataset derived(std::shared_ptr<const Node> node) const;
  std::shared_ptr<const Node> node_;
  std::shared_ptr<const Options> options_;  // null: the defaults
};

}  // namespace weft::data
