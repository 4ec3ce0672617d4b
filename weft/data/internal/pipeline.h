// Internals of Dataset's pipeline: the node factories behind Dataset's methods, and RowSource,
// the tensors behind from_tensor_slices. Stages that only select, reorder or repeat elements
// (shuffle, filter, take, skip, shard, repeat, cache) pass row numbers of the RowSource instead
// of elements when their input does, so batch can gather a whole batch with one copy per
// component and an iterator's state can hold row numbers instead of tensors.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "weft/data/auto_shard.h"
#include "weft/data/dataset.h"
#include "weft/data/iterator_state.h"

namespace weft::data {

struct RowSource : std::enable_shared_from_this<RowSource> {
  // Applied to every row fetched: a cast, then a division (uint8 pixels -> float32 in [0, 1]
  // without holding a float copy of the whole dataset).
  struct Conversion {
    std::optional<DType> dtype;
    double divisor = 1;
  };

  // Components are made contiguous; all must have the same first dimension (InvalidArgument).
  explicit RowSource(std::vector<Tensor> components, std::vector<Conversion> conversions = {});

  int64_t size() const { return components_[0].dim(0); }
  Element row(int64_t i) const;
  // Rows idx[0], idx[1], ... stacked along a new first axis: views when the rows are
  // consecutive, otherwise one gather copy per component.
  Element rows(const std::vector<int64_t>& idx) const;
  std::string describe() const;

 private:
  bool converts(size_t component) const;
  Tensor gather(size_t component, const std::vector<int64_t>& idx) const;

  std::vector<Tensor> components_;
  std::vector<Conversion> conversions_;
};

namespace internal {

using Node = Dataset::Node;
using Reader = Dataset::Reader;
using NodePtr = std::shared_ptr<const Node>;
// The two cardinalities that are not counts, as the stages' cardinality() functions return them.
constexpr int64_t kInfinite = Dataset::kInfiniteCardinality;
constexpr int64_t kUnknown = Dataset::kUnknownCardinality;

// Node::shard_files of a stage with one input: a copy of `node` over its input rewritten, or null
// when the input cannot be.
template <typename N>
NodePtr with_sharded_input(const N& node, NodePtr N::*input, FileShard& shard) {
  NodePtr rewritten = (node.*input)->shard_files(shard);
  if (!rewritten) return nullptr;
  auto copy = std::make_shared<N>(node);
  (*copy).*input = std::move(rewritten);
  return copy;
}
// Node::shard_files of a stage with several inputs: every input rewritten (each as if it were the
// only one), or none when one cannot be.
std::vector<NodePtr> shard_every_input(const std::vector<NodePtr>& inputs, FileShard& shard);
// The parts of a batch() stage, for a rewrite; a null input when `node` is another stage.
struct BatchParts {
  NodePtr input;
  int64_t size = 0;
  bool drop_remainder = false;
};
BatchParts batch_parts(const Node& node);
// map_only_own_rows's rewrite (weft/data/auto_shard.h): `root` as a worker that keeps rows
// rows(n) of each global batch of n reads it, or null unless `root` is batch() over map()s.
NodePtr own_rows_node(const NodePtr& root,
                      std::function<std::pair<int64_t, int64_t>(int64_t)> rows);
// The batch size a file-sharded worker's batch(batch_size) takes: its rows of each global batch
// for the outermost batch, batch_size for those below it; 0 (shard.unshardable says why) when
// some worker would have no rows.
int64_t sharded_batch_size(int64_t batch_size, bool outermost, FileShard& shard);

NodePtr make_slices_node(std::shared_ptr<const RowSource> source);
NodePtr make_map_node(NodePtr input, std::function<Element(const Element&)> f,
                      int64_t num_parallel_calls);
NodePtr make_filter_node(NodePtr input, std::function<bool(const Element&)> pred);
NodePtr make_batch_node(NodePtr input, int64_t batch_size, bool drop_remainder);
NodePtr make_take_node(NodePtr input, int64_t count);
NodePtr make_skip_node(NodePtr input, int64_t count);
NodePtr make_shard_node(NodePtr input, int64_t num_shards, int64_t index);
NodePtr make_repeat_node(NodePtr input, int64_t count);
NodePtr make_shuffle_node(NodePtr input, int64_t buffer_size, uint64_t seed, bool reshuffle);
NodePtr make_cache_node(NodePtr input);
NodePtr make_prefetch_node(NodePtr input, int64_t buffer_size);
NodePtr make_generator_node(std::function<Dataset::Generator()> make,
                            std::vector<TensorSpec> output_signature);
NodePtr make_zip_node(std::vector<NodePtr> inputs);
NodePtr make_padded_batch_node(NodePtr input, int64_t batch_size, PaddedBatchOptions options);
NodePtr make_window_node(NodePtr input, WindowOptions options);
using ScanFn = Dataset::ScanFn;
// `file_names`: the elements name files (list_files, a file reader's names), which shard_by_file
// divides among workers.
NodePtr make_elements_node(std::vector<Element> elements, std::string description,
                           bool file_names = false);
NodePtr make_concatenate_node(NodePtr a, NodePtr b);
NodePtr make_enumerate_node(NodePtr input, int64_t start);
NodePtr make_take_while_node(NodePtr input, std::function<bool(const Element&)> pred);
NodePtr make_ignore_errors_node(NodePtr input);
NodePtr make_flat_map_node(NodePtr input, std::function<Dataset(const Element&)> f,
                           std::string name);
// `deterministic`: the options' value resolved (InterleaveOptions::deterministic or the dataset's).
NodePtr make_interleave_node(NodePtr input, std::function<Dataset(const Element&)> f,
                             const InterleaveOptions& options, bool deterministic);
// `description`: what describe() appends to the input's, e.g. "group_by_window(window_size=4)".
NodePtr make_group_by_window_node(NodePtr input, std::function<int64_t(const Element&)> key_func,
                                  std::function<Dataset(int64_t, const Dataset&)> reduce_func,
                                  std::function<int64_t(int64_t)> window_size_func,
                                  std::string description);
NodePtr make_choose_node(std::vector<NodePtr> inputs, NodePtr choices);
NodePtr make_sample_node(std::vector<NodePtr> inputs, std::vector<double> weights, uint64_t seed);
NodePtr make_scan_node(NodePtr input, Element initial, ScanFn f);
NodePtr make_unique_node(NodePtr input);

// Restoring an iterator is all or nothing. While a RestoreScope is open on this thread, readers
// made to receive a state draw nothing from their node's shared counters (shuffle's pass numbers),
// and changes a restore makes to state shared through the node (those counters, the cache) are
// queued with on_success() and applied only by commit(), once every stage has been restored.
class RestoreScope {
 public:
  RestoreScope();
  ~RestoreScope();
  RestoreScope(const RestoreScope&) = delete;
  RestoreScope& operator=(const RestoreScope&) = delete;
  static bool active();
  // Runs `f` at commit(), or at once when no scope is open.
  static void on_success(std::function<void()> f);
  void commit();

 private:
  RestoreScope* outer_;
  std::vector<std::function<void()>> pending_;
};

// Stacks equal-shaped elements component by component (batch's general path); InvalidArgument
// naming the element, component and shapes otherwise.
Element stack_elements(const std::vector<Element>& elements);

// The next item of `r`: an element (T = Element) or a row number (T = int64_t).
template <typename T>
std::optional<T> pull(Reader& r) {
  if constexpr (std::is_same_v<T, int64_t>) {
    return r.next_row();
  } else {
    return r.next();
  }
}

inline void write_item(StateWriter& w, int64_t row) { w.write_i64(row); }
inline void write_item(StateWriter& w, const Element& e) { w.write_element(e); }

template <typename T>
T read_item(StateReader& r, const RowSource* source, std::string_view what) {
  if constexpr (std::is_same_v<T, int64_t>) {
    return r.read_i64(what, 0, source->size() - 1);
  } else {
    return r.read_element(what);
  }
}

// A reader written once for both kinds of item: step() yields the next T; next() / next_row()
// turn it into what the caller asked for.
template <typename T>
class ItemReader : public Reader {
 public:
  static constexpr bool kRows = std::is_same_v<T, int64_t>;

  std::optional<Element> next() final {
    if constexpr (kRows) {
      std::optional<int64_t> i = step();
      if (!i) return std::nullopt;
      return source_->row(*i);
    } else {
      return step();
    }
  }
  std::optional<int64_t> next_row() final {
    if constexpr (kRows) {
      return step();
    } else {
      return Reader::next_row();
    }
  }
  const RowSource* row_source() const final { return source_.get(); }

 protected:
  explicit ItemReader(const RowSource* source)
      : source_(source ? source->shared_from_this() : nullptr) {}
  virtual std::optional<T> step() = 0;

  std::shared_ptr<const RowSource> source_;  // null unless kRows
};

// R<int64_t> when `input` yields row numbers, R<Element> otherwise; R's constructor takes
// (const RowSource*, std::unique_ptr<Reader> input, args...).
template <template <typename> class R, typename... Args>
std::unique_ptr<Reader> make_item_reader(std::unique_ptr<Reader> input, Args&&... args) {
  if (const RowSource* source = input->row_source()) {
    return std::make_unique<R<int64_t>>(source, std::move(input), std::forward<Args>(args)...);
  }
  return std::make_unique<R<Element>>(nullptr, std::move(input), std::forward<Args>(args)...);
}

}  // namespace internal
}  // namespace weft::data
