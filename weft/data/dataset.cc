#include "weft/data/dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "weft/core/trace_me.h"
#include "weft/data/internal/pipeline.h"
#include "weft/data/iterator_state.h"
#include "weft/ops/creation.h"

namespace weft::data {
namespace {

using namespace internal;  // NOLINT(google-build-using-namespace): the node factories

// Iterator state framing: magic, format version, payload length, CRC-32 of the payload.
constexpr char kStateMagic[8] = {'W', 'E', 'F', 'T', 'I', 'T', 'E', 'R'};
constexpr uint32_t kStateVersion = 1;
constexpr size_t kHeaderBytes = sizeof kStateMagic + 4 + 8 + 4;

uint32_t crc32_of(const char* p, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {  // zlib takes 32-bit lengths
    uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(p), chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

// "[1, 2, 3]"
std::string list_str(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <typename T>
T get(const std::string& in, size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof v);
  return v;
}

}  // namespace

// ---- Dataset -----------------------------------------------------------------------------------

Dataset Dataset::from_tensor_slices(const Tensor& t) {
  return from_tensor_slices(std::vector<Tensor>{t});
}
Dataset Dataset::from_tensor_slices(const std::vector<Tensor>& components) {
  return Dataset(make_slices_node(std::make_shared<const RowSource>(components)));
}
Dataset Dataset::range(int64_t n) { return range(0, n, 1); }
Dataset Dataset::range(int64_t start, int64_t stop, int64_t step) {
  WEFT_CHECK(step != 0, InvalidArgument) << "Dataset::range: step must not be 0";
  return from_tensor_slices(arange(start, stop, step, kInt64));
}

Dataset Dataset::map(std::function<Tensor(const Tensor&)> f, int64_t num_parallel_calls) const {
  WEFT_CHECK(f != nullptr, InvalidArgument) << "Dataset::map: the function is empty";
  return map(
      [f = std::move(f)](const Element& e) {
        WEFT_CHECK(e.size() == 1, InvalidArgument)
            << "Dataset::map: a function of one tensor was given, but elements have " << e.size()
            << " components; use a function of the whole Element";
        return Element{f(e[0])};
      },
      num_parallel_calls);
}
Dataset Dataset::map(std::function<Element(const Element&)> f, int64_t num_parallel_calls) const {
  WEFT_CHECK(f != nullptr, InvalidArgument) << "Dataset::map: the function is empty";
  return derived(make_map_node(node_, std::move(f), num_parallel_calls));
}
Dataset Dataset::filter(std::function<bool(const Tensor&)> pred) const {
  WEFT_CHECK(pred != nullptr, InvalidArgument) << "Dataset::filter: the predicate is empty";
  return filter([pred = std::move(pred)](const Element& e) {
    WEFT_CHECK(e.size() == 1, InvalidArgument)
        << "Dataset::filter: a predicate of one tensor was given, but elements have " << e.size()
        << " components; use a predicate of the whole Element";
    return pred(e[0]);
  });
}
Dataset Dataset::filter(std::function<bool(const Element&)> pred) const {
  WEFT_CHECK(pred != nullptr, InvalidArgument) << "Dataset::filter: the predicate is empty";
  return derived(make_filter_node(node_, std::move(pred)));
}
Dataset Dataset::shuffle(int64_t buffer_size, uint64_t seed, bool reshuffle_each_iteration) const {
  return derived(make_shuffle_node(node_, buffer_size, seed, reshuffle_each_iteration));
}
Dataset Dataset::from_generator(std::function<Generator()> make,
                                std::vector<TensorSpec> output_signature) {
  WEFT_CHECK(make != nullptr, InvalidArgument) << "Dataset::from_generator: the factory is empty";
  return Dataset(make_generator_node(std::move(make), std::move(output_signature)));
}

Dataset Dataset::zip(const std::vector<Dataset>& datasets) {
  WEFT_CHECK(!datasets.empty(), InvalidArgument) << "Dataset::zip: no datasets";
  std::vector<NodePtr> nodes;
  for (const Dataset& d : datasets) nodes.push_back(d.node());
  return datasets[0].derived(make_zip_node(std::move(nodes)));
}

Dataset Dataset::from_tensors(const std::vector<Tensor>& components) {
  WEFT_CHECK(!components.empty(), InvalidArgument) << "Dataset::from_tensors: no tensors";
  std::string description = "from_tensors(";
  for (size_t i = 0; i < components.size(); ++i) {
    description += (i ? ", " : "") + shape_str(components[i].shape()) + " " +
                   std::string(dtype_name(components[i].dtype()));
  }
  return Dataset(make_elements_node({components}, description + ")"));
}

Dataset Dataset::choose_from_datasets(const std::vector<Dataset>& datasets,
                                      const Dataset& choices) {
  WEFT_CHECK(!datasets.empty(), InvalidArgument) << "choose_from_datasets: no datasets";
  std::vector<NodePtr> nodes;
  for (const Dataset& d : datasets) nodes.push_back(d.node());
  return datasets[0].derived(make_choose_node(std::move(nodes), choices.node()));
}

Dataset Dataset::sample_from_datasets(const std::vector<Dataset>& datasets,
                                      std::vector<double> weights, uint64_t seed) {
  WEFT_CHECK(!datasets.empty(), InvalidArgument) << "sample_from_datasets: no datasets";
  if (weights.empty()) weights.assign(datasets.size(), 1.0);
  WEFT_CHECK(weights.size() == datasets.size(), InvalidArgument)
      << "sample_from_datasets: " << weights.size() << " weights for " << datasets.size()
      << " datasets";
  for (double w : weights) {
    WEFT_CHECK(w >= 0 && std::isfinite(w), InvalidArgument)
        << "sample_from_datasets: weights must be finite and non-negative, got " << w;
  }
  std::vector<NodePtr> nodes;
  for (const Dataset& d : datasets) nodes.push_back(d.node());
  return datasets[0].derived(make_sample_node(std::move(nodes), std::move(weights), seed));
}

Dataset Dataset::apply(const std::function<Dataset(const Dataset&)>& f) const {
  WEFT_CHECK(f != nullptr, InvalidArgument) << "Dataset::apply: the function is empty";
  return f(*this);
}
Dataset Dataset::concatenate(const Dataset& other) const {
  return derived(make_concatenate_node(node_, other.node()));
}
Dataset Dataset::enumerate(int64_t start) const {
  return derived(make_enumerate_node(node_, start));
}
Dataset Dataset::flat_map(std::function<Dataset(const Element&)> f) const {
  WEFT_CHECK(f != nullptr, InvalidArgument) << "Dataset::flat_map: the function is empty";
  return derived(make_flat_map_node(node_, std::move(f), "flat_map"));
}
Dataset Dataset::interleave(std::function<Dataset(const Element&)> f,
                            InterleaveOptions options) const {
  WEFT_CHECK(f != nullptr, InvalidArgument) << "Dataset::interleave: the function is empty";
  const bool deterministic =
      options.deterministic.value_or(this->options().experimental_deterministic);
  return derived(make_interleave_node(node_, std::move(f), options, deterministic));
}
Dataset Dataset::group_by_window(std::function<int64_t(const Element&)> key_func,
                                 std::function<Dataset(int64_t, const Dataset&)> reduce_func,
                                 int64_t window_size) const {
  WEFT_CHECK(window_size > 0, InvalidArgument)
      << "Dataset::group_by_window: window_size must be greater than zero, got " << window_size;
  WEFT_CHECK(key_func != nullptr, InvalidArgument) << "Dataset::group_by_window: key_func is empty";
  WEFT_CHECK(reduce_func != nullptr, InvalidArgument)
      << "Dataset::group_by_window: reduce_func is empty";
  return derived(make_group_by_window_node(
      node_, std::move(key_func), std::move(reduce_func),
      [window_size](int64_t) { return window_size; },
      "group_by_window(window_size=" + std::to_string(window_size) + ")"));
}
Dataset Dataset::group_by_window(std::function<int64_t(const Element&)> key_func,
                                 std::function<Dataset(int64_t, const Dataset&)> reduce_func,
                                 std::function<int64_t(int64_t)> window_size_func) const {
  WEFT_CHECK(key_func != nullptr, InvalidArgument) << "Dataset::group_by_window: key_func is empty";
  WEFT_CHECK(reduce_func != nullptr, InvalidArgument)
      << "Dataset::group_by_window: reduce_func is empty";
  WEFT_CHECK(window_size_func != nullptr, InvalidArgument)
      << "Dataset::group_by_window: window_size_func is empty";
  return derived(make_group_by_window_node(node_, std::move(key_func), std::move(reduce_func),
                                           std::move(window_size_func),
                                           "group_by_window(window_size_func)"));
}

Dataset Dataset::bucket_by_sequence_length(std::function<int64_t(const Element&)> length_func,
                                           std::vector<int64_t> boundaries,
                                           std::vector<int64_t> batch_sizes,
                                           BucketOptions o) const {
  const char* op = "Dataset::bucket_by_sequence_length";
  WEFT_CHECK(length_func != nullptr, InvalidArgument) << op << ": element_length_func is empty";
  WEFT_CHECK(batch_sizes.size() == boundaries.size() + 1, InvalidArgument)
      << op << ": len(bucket_batch_sizes) (" << batch_sizes.size()
      << ") must equal len(bucket_boundaries) + 1 (" << boundaries.size() + 1 << ")";
  // TF does not check these; an unsorted list would make buckets overlap.
  WEFT_CHECK(std::is_sorted(boundaries.begin(), boundaries.end(), std::less_equal<>()),
             InvalidArgument)
      << op << ": bucket_boundaries must be strictly increasing, got " << list_str(boundaries);
  WEFT_CHECK(std::all_of(batch_sizes.begin(), batch_sizes.end(), [](int64_t b) { return b > 0; }),
             InvalidArgument)
      << op << ": bucket_batch_sizes must be positive, got " << list_str(batch_sizes);
  WEFT_CHECK(!o.pad_to_bucket_boundary || o.no_padding || !o.padded_shapes.empty(), InvalidArgument)
      << op << ": pad_to_bucket_boundary needs padded_shapes (weft has no static shapes): their "
      << "-1 entries are padded to the bucket's boundary - 1";
  std::string description = "bucket_by_sequence_length(bucket_boundaries=" + list_str(boundaries) +
                            ", bucket_batch_sizes=" + list_str(batch_sizes);
  if (o.no_padding) {
    description += ", no_padding";
  } else if (o.pad_to_bucket_boundary) {
    description += ", pad_to_bucket_boundary";
  }
  if (o.drop_remainder) description += ", drop_remainder";
  description += ")";
  auto key = [length_func = std::move(length_func), boundaries](const Element& e) -> int64_t {
    const int64_t length = length_func(e);
    constexpr int64_t kMin = std::numeric_limits<int32_t>::min();
    constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
    WEFT_CHECK(length >= kMin && length < kMax, InvalidArgument)
        << "Dataset::bucket_by_sequence_length: element_length_func gave " << length
        << ", outside [" << kMin << ", " << kMax << ")";
    // TF's buckets are [INT32_MIN, b0), [b0, b1), ..., [b_last, INT32_MAX).
    return std::upper_bound(boundaries.begin(), boundaries.end(), length) - boundaries.begin();
  };
  auto reduce = [boundaries, batch_sizes, o](int64_t key, const Dataset& window) {
    const int64_t size = batch_sizes[static_cast<size_t>(key)];
    if (o.no_padding) return window.batch(size, o.drop_remainder);
    PaddedBatchOptions p{o.padded_shapes, o.padding_values, o.drop_remainder};
    if (o.pad_to_bucket_boundary) {
      WEFT_CHECK(key < static_cast<int64_t>(boundaries.size()), InvalidArgument)
          << "Dataset::bucket_by_sequence_length: When pad_to_bucket_boundary=True, elements "
             "must have length < max(bucket_boundaries) ("
          << boundaries.back() << ")";
      for (Shape& shape : p.padded_shapes) {
        for (int64_t& d : shape) {
          if (d == -1) d = boundaries[static_cast<size_t>(key)] - 1;
        }
      }
    }
    return window.padded_batch(size, std::move(p));
  };
  return derived(make_group_by_window_node(
      node_, std::move(key), std::move(reduce),
      [batch_sizes](int64_t key) { return batch_sizes[static_cast<size_t>(key)]; },
      std::move(description)));
}

Dataset Dataset::unbatch() const {
  return derived(make_flat_map_node(
      node_, [](const Element& e) { return from_tensor_slices(e); }, "unbatch"));
}
Dataset Dataset::take_while(std::function<bool(const Element&)> pred) const {
  WEFT_CHECK(pred != nullptr, InvalidArgument) << "Dataset::take_while: the predicate is empty";
  return derived(make_take_while_node(node_, std::move(pred)));
}
Dataset Dataset::ignore_errors() const { return derived(make_ignore_errors_node(node_)); }
Dataset Dataset::scan(Element initial_state, ScanFn f) const {
  WEFT_CHECK(f != nullptr, InvalidArgument) << "Dataset::scan: the function is empty";
  return derived(make_scan_node(node_, std::move(initial_state), std::move(f)));
}
Dataset Dataset::unique() const { return derived(make_unique_node(node_)); }

Element Dataset::reduce(Element initial,
                        const std::function<Element(const Element&, const Element&)>& f) const {
  WEFT_CHECK(f != nullptr, InvalidArgument) << "Dataset::reduce: the function is empty";
  Element state = std::move(initial);
  for (const Element& e : *this) state = f(state, e);
  return state;
}

Element Dataset::get_single_element() const {
  Iterator it = begin();
  std::optional<Element> first = it.next();
  WEFT_CHECK(first.has_value(), InvalidArgument)
      << "Dataset::get_single_element: the dataset is empty";
  WEFT_CHECK(!it.next().has_value(), InvalidArgument)
      << "Dataset::get_single_element: the dataset has more than one element";
  return *first;
}

std::vector<TensorSpec> Dataset::element_spec() const {
  std::optional<Element> first = begin().next();
  std::vector<TensorSpec> spec;
  if (!first) return spec;
  for (const Tensor& t : *first) spec.push_back({t.dtype(), t.shape()});
  return spec;
}

Dataset Dataset::padded_batch(int64_t batch_size, PaddedBatchOptions options) const {
  WEFT_CHECK(batch_size > 0, InvalidArgument)
      << "Dataset::padded_batch: batch_size must be positive, got " << batch_size;
  return derived(make_padded_batch_node(node_, batch_size, std::move(options)));
}

Dataset Dataset::window(WindowOptions o) const {
  if (o.shift == 0) o.shift = o.size;
  WEFT_CHECK(o.size > 0 && o.shift > 0 && o.stride > 0, InvalidArgument)
      << "Dataset::window: size (" << o.size << "), shift (" << o.shift << ") and stride ("
      << o.stride << ") must be positive";
  return derived(make_window_node(node_, o));
}

Dataset Dataset::batch(int64_t batch_size, bool drop_remainder) const {
  return derived(make_batch_node(node_, batch_size, drop_remainder));
}
Dataset Dataset::repeat(int64_t count) const { return derived(make_repeat_node(node_, count)); }
Dataset Dataset::take(int64_t count) const { return derived(make_take_node(node_, count)); }
Dataset Dataset::skip(int64_t count) const { return derived(make_skip_node(node_, count)); }
Dataset Dataset::shard(int64_t num_shards, int64_t index) const {
  return derived(make_shard_node(node_, num_shards, index));
}
Dataset Dataset::prefetch(int64_t buffer_size) const {
  return derived(make_prefetch_node(node_, buffer_size));
}
Dataset Dataset::cache() const { return derived(make_cache_node(node_)); }

int64_t Dataset::cardinality() const { return node_->cardinality(); }
std::string Dataset::describe() const { return node_->describe(); }

Dataset::Iterator Dataset::begin() const { return Iterator(node_, node_->make_reader()); }

// ---- Iterator ----------------------------------------------------------------------------------

struct Dataset::Iterator::Cursor {
  std::unique_ptr<Reader> reader;
  // The element under the cursor: operator* and == read one ahead, next() and ++ consume it.
  bool pulled = false;
  std::optional<Element> current;

  // The next element, once (a profiler event: the time spent waiting for input).
  void pull() {
    if (!pulled) {
      TraceMe trace("Iterator::next", 1, TraceCategory::kInput);
      current = reader->next();
      pulled = true;
    }
  }
};

Dataset::Iterator::Iterator(std::unique_ptr<Reader> reader)
    : Iterator(nullptr, std::move(reader)) {}

Dataset::Iterator::Iterator(std::shared_ptr<const Node> node, std::unique_ptr<Reader> reader)
    : node_(std::move(node)), cursor_(std::make_shared<Cursor>()) {
  WEFT_CHECK(reader != nullptr, InvalidArgument) << "Dataset::Iterator: the reader is null";
  cursor_->reader = std::move(reader);
}

std::optional<Element> Dataset::Iterator::next() {
  if (!cursor_) return std::nullopt;
  cursor_->pull();  // (nothing when operator== already pulled it)
  cursor_->pulled = false;
  return std::move(cursor_->current);
}

const Element& Dataset::Iterator::operator*() const {
  WEFT_CHECK(*this != std::default_sentinel, OutOfRange)
      << "Dataset::Iterator: dereferenced at the end of the dataset";
  return *cursor_->current;
}

Dataset::Iterator& Dataset::Iterator::operator++() {
  if (cursor_) {
    cursor_->pull();
    cursor_->pulled = false;
    cursor_->current.reset();
  }
  return *this;
}

bool Dataset::Iterator::operator==(std::default_sentinel_t) const {
  if (!cursor_) return true;
  cursor_->pull();
  return !cursor_->current.has_value();
}

std::string Dataset::Iterator::save_state() const {
  WEFT_CHECK(cursor_ != nullptr, FailedPrecondition)
      << "Dataset::Iterator::save_state: a default-constructed iterator has no state";
  StateWriter w;
  w.begin("iterator");
  w.write_string(node_ ? node_->describe() : "");
  w.write_bool(cursor_->pulled);
  w.write_bool(cursor_->current.has_value());
  if (cursor_->current) w.write_element(*cursor_->current);
  cursor_->reader->save(w);

  std::string out(kStateMagic, sizeof kStateMagic);
  put<uint32_t>(out, kStateVersion);
  put<uint64_t>(out, w.bytes().size());
  put<uint32_t>(out, crc32_of(w.bytes().data(), w.bytes().size()));
  out += w.bytes();
  return out;
}

void Dataset::Iterator::restore_state(const std::string& state) {
  WEFT_CHECK(cursor_ != nullptr, FailedPrecondition)
      << "Dataset::Iterator::restore_state: a default-constructed iterator reads no dataset";
  WEFT_CHECK(state.size() >= kHeaderBytes &&
                 std::memcmp(state.data(), kStateMagic, sizeof kStateMagic) == 0,
             DataLoss)
      << "Dataset iterator state: expected at least " << kHeaderBytes
      << " bytes starting with the magic \"WEFTITER\", got " << state.size()
      << " bytes that do not; this is not a saved weft iterator state";
  const uint32_t version = get<uint32_t>(state, 8);
  WEFT_CHECK(version == kStateVersion, DataLoss)
      << "Dataset iterator state: expected format version " << kStateVersion << ", found "
      << version;
  const uint64_t length = get<uint64_t>(state, 12);
  WEFT_CHECK(length == state.size() - kHeaderBytes, DataLoss)
      << "Dataset iterator state: the header announces " << length << " bytes of state after its "
      << kHeaderBytes << "-byte header, but " << state.size() - kHeaderBytes
      << " follow (truncated or padded)";
  const uint32_t expected_crc = get<uint32_t>(state, 20);
  const uint32_t crc = crc32_of(state.data() + kHeaderBytes, length);
  WEFT_CHECK(crc == expected_crc, DataLoss)
      << "Dataset iterator state: CRC-32 mismatch (header says " << std::hex << expected_crc
      << ", the " << std::dec << length << " bytes of state give " << std::hex << crc << std::dec
      << "); the state is corrupted";

  RestoreScope scope;
  StateReader r(state, kHeaderBytes);
  r.begin("iterator");
  const std::string pipeline = r.read_string("pipeline description");
  const std::string mine = node_ ? node_->describe() : "";
  WEFT_CHECK(pipeline == mine, DataLoss)
      << "Dataset iterator state: saved from the pipeline " << pipeline
      << " but this iterator reads " << mine << "; expected the same pipeline";
  auto restored = std::make_shared<Cursor>();
  restored->pulled = r.read_bool("element-under-cursor flag");
  if (r.read_bool("element presence")) restored->current = r.read_element("element under cursor");
  // A fresh reader tree takes the state, so a failure leaves this iterator untouched.
  restored->reader = node_ ? node_->make_reader() : std::move(cursor_->reader);
  try {
    restored->reader->restore(r);
    if (!r.at_end()) r.fail("the end of the state after the last stage");
  } catch (...) {
    if (!node_) cursor_->reader = std::move(restored->reader);
    throw;
  }
  scope.commit();
  *cursor_ = std::move(*restored);
}

Dataset Dataset::derived(std::shared_ptr<const Node> node) const {
  Dataset d(std::move(node));
  d.options_ = options_;
  return d;
}

Dataset Dataset::with_options(const Options& options) const {
  Dataset d(node_);
  d.options_ = std::make_shared<const Options>(options);
  return d;
}

const Options& Dataset::options() const {
  static const Options defaults;
  return options_ ? *options_ : defaults;
}

const char* auto_shard_policy_name(AutoShardPolicy policy) {
  switch (policy) {
    case AutoShardPolicy::AUTO:
      return "AUTO";
    case AutoShardPolicy::OFF:
      return "OFF";
    case AutoShardPolicy::FILE:
      return "FILE";
    case AutoShardPolicy::DATA:
      return "DATA";
  }
  return "?";
}

}  // namespace weft::data
