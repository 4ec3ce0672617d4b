// shuffle and cache: the stages that hold many elements (or row numbers) between calls.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <sstream>

#include "weft/core/philox.h"
#include "weft/data/internal/pipeline.h"

namespace weft::data::internal {
namespace {

// ---- shuffle -----------------------------------------------------------------------------------

// Passes started over one shuffle dataset (shared by its copies, as tf.data's seed generator):
// pass k draws from the Philox stream keyed by (seed, k).
using PassCounter = std::atomic<uint64_t>;

template <typename T>
class ShuffleReader : public ItemReader<T> {
 public:
  ShuffleReader(const RowSource* source, std::unique_ptr<Reader> input, int64_t buffer_size,
                uint64_t seed, std::shared_ptr<PassCounter> passes)
      : ItemReader<T>(source),
        input_(std::move(input)),
        buffer_size_(buffer_size),
        seed_(seed),
        passes_(std::move(passes)),
        pass_(passes_ && !RestoreScope::active() ? passes_->fetch_add(1) : 0) {}

  std::optional<T> step() override {
    while (!input_done_ && static_cast<int64_t>(buffer_.size()) < buffer_size_) {
      std::optional<T> x = pull<T>(*input_);
      if (!x) {
        input_done_ = true;
      } else {
        buffer_.push_back(std::move(*x));
      }
    }
    if (buffer_.empty()) return std::nullopt;
    int64_t j;
    random_internal::uniform_int64(seed_, pass_, draws_++, &j, 1, 0,
                                   static_cast<int64_t>(buffer_.size()));
    T out = std::move(buffer_[j]);
    if (j + 1 != static_cast<int64_t>(buffer_.size())) buffer_[j] = std::move(buffer_.back());
    buffer_.pop_back();
    return out;
  }

  void save(StateWriter& w) const override {
    w.begin("shuffle");
    w.write_u64(pass_);
    w.write_u64(draws_);
    w.write_bool(input_done_);
    w.write_i64(static_cast<int64_t>(buffer_.size()));
    for (const T& x : buffer_) write_item(w, x);
    input_->save(w);
  }
  void restore(StateReader& r) override {
    r.begin("shuffle");
    pass_ = r.read_u64("pass");
    draws_ = r.read_u64("draw count");
    input_done_ = r.read_bool("input-exhausted flag");
    int64_t n = r.read_i64("buffered element count", 0, buffer_size_);
    buffer_.clear();
    buffer_.reserve(n);
    for (int64_t i = 0; i < n; ++i) {
      buffer_.push_back(read_item<T>(r, this->source_.get(), "buffered element"));
    }
    input_->restore(r);
    // Later passes continue after the restored one, as they would have where it was saved.
    if (passes_) RestoreScope::on_success([passes = passes_, next = pass_ + 1] { *passes = next; });
  }

 private:
  std::unique_ptr<Reader> input_;
  int64_t buffer_size_;
  uint64_t seed_;
  std::shared_ptr<PassCounter> passes_;  // null without reshuffle_each_iteration
  uint64_t pass_;
  uint64_t draws_ = 0;
  bool input_done_ = false;
  std::vector<T> buffer_;
};

class ShuffleNode : public Node {
 public:
  ShuffleNode(NodePtr input, int64_t buffer_size, uint64_t seed, bool reshuffle)
      : input_(std::move(input)),
        buffer_size_(buffer_size),
        seed_(seed),
        passes_(reshuffle ? std::make_shared<PassCounter>(0) : nullptr) {
    WEFT_CHECK(buffer_size >= 1, InvalidArgument)
        << "Dataset::shuffle: buffer_size must be >= 1, got " << buffer_size;
  }
  std::unique_ptr<Reader> make_reader() const override {
    return make_item_reader<ShuffleReader>(input_->make_reader(), buffer_size_, seed_, passes_);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string describe() const override {
    std::ostringstream s;
    s << input_->describe() << ".shuffle(" << buffer_size_ << ", seed=" << seed_
      << (passes_ ? "" : ", reshuffle_each_iteration=false") << ")";
    return s.str();
  }
  NodePtr shard_files(FileShard& shard) const override {
    return with_sharded_input(*this, &ShuffleNode::input_, shard);
  }

 private:
  NodePtr input_;
  int64_t buffer_size_;
  uint64_t seed_;
  std::shared_ptr<PassCounter> passes_;
};

// ---- cache -------------------------------------------------------------------------------------

// The elements (or row numbers) of the first complete pass, shared by every reader of one cache
// dataset.
struct CacheStore {
  std::mutex mu;
  std::shared_ptr<const std::vector<Element>> elements;
  std::shared_ptr<const std::vector<int64_t>> rows;
  std::shared_ptr<const RowSource> source;  // what `rows` index

  template <typename T>
  std::shared_ptr<const std::vector<T>>& get() {
    if constexpr (std::is_same_v<T, int64_t>) {
      return rows;
    } else {
      return elements;
    }
  }
  template <typename T>
  std::shared_ptr<const std::vector<T>> load() {
    std::lock_guard lock(mu);
    return get<T>();
  }
  // The first complete pass wins.
  template <typename T>
  std::shared_ptr<const std::vector<T>> commit(std::shared_ptr<const std::vector<T>> items,
                                               std::shared_ptr<const RowSource> row_source) {
    std::lock_guard lock(mu);
    if (!get<T>()) {
      get<T>() = std::move(items);
      source = std::move(row_source);
    }
    return get<T>();
  }
};

template <typename T>
class CacheReader : public ItemReader<T> {
 public:
  CacheReader(const RowSource* source, std::unique_ptr<Reader> input, NodePtr node,
              std::shared_ptr<CacheStore> store)
      : ItemReader<T>(source), node_(std::move(node)), store_(std::move(store)) {
    cache_ = store_->load<T>();
    if (!cache_) input_ = std::move(input);
  }

  std::optional<T> step() override {
    if (cache_) {
      if (position_ < cache_->size()) return (*cache_)[position_++];
      return std::nullopt;
    }
    std::optional<T> x = pull<T>(*input_);
    if (x) {
      filling_.push_back(*x);
      return x;
    }
    cache_ = store_->commit<T>(std::make_shared<const std::vector<T>>(std::move(filling_)),
                               this->source_);
    filling_.clear();
    position_ = cache_->size();
    input_.reset();
    return std::nullopt;
  }

  void save(StateWriter& w) const override {
    w.begin("cache");
    w.write_bool(cache_ != nullptr);
    const std::vector<T>& items = cache_ ? *cache_ : filling_;
    w.write_i64(static_cast<int64_t>(items.size()));
    for (const T& x : items) write_item(w, x);
    if (cache_) {
      w.write_i64(static_cast<int64_t>(position_));
    } else {
      input_->save(w);
    }
  }
  void restore(StateReader& r) override {
    r.begin("cache");
    bool reading = r.read_bool("reading-the-cache flag");
    int64_t n = r.read_i64("cached element count", 0);
    std::vector<T> items;
    for (int64_t i = 0; i < n; ++i) {
      items.push_back(read_item<T>(r, this->source_.get(), "cached element"));
    }
    if (reading) {
      position_ = r.read_i64("position in the cache", 0, n);
      cache_ = std::make_shared<const std::vector<T>>(std::move(items));
      // The first pass may have been completed in another process: later passes here read it.
      RestoreScope::on_success([store = store_, cache = cache_, source = this->source_] {
        store->commit<T>(cache, source);
      });
      filling_.clear();
      input_.reset();
    } else {
      filling_ = std::move(items);
      cache_.reset();
      position_ = 0;
      input_ = node_->make_reader();
      input_->restore(r);
    }
  }

 private:
  NodePtr node_;  // the input, for a reader to restore a filling pass into
  std::shared_ptr<CacheStore> store_;
  std::unique_ptr<Reader> input_;  // while filling
  std::vector<T> filling_;
  std::shared_ptr<const std::vector<T>> cache_;  // once reading
  size_t position_ = 0;
};

class CacheNode : public Node {
 public:
  explicit CacheNode(NodePtr input)
      : input_(std::move(input)), store_(std::make_shared<CacheStore>()) {}
  std::unique_ptr<Reader> make_reader() const override {
    std::shared_ptr<const RowSource> source;
    bool rows = false, elements = false;
    {
      std::lock_guard lock(store_->mu);
      rows = store_->rows != nullptr;
      elements = store_->elements != nullptr;
      source = store_->source;
    }
    // Once filled, later passes do not even start a reader of the input.
    if (rows) return std::make_unique<CacheReader<int64_t>>(source.get(), nullptr, input_, store_);
    if (elements) return std::make_unique<CacheReader<Element>>(nullptr, nullptr, input_, store_);
    return make_item_reader<CacheReader>(input_->make_reader(), input_, store_);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string describe() const override { return input_->describe() + ".cache()"; }
  // A cache of its own: this one's may already hold every worker's elements.
  NodePtr shard_files(FileShard& shard) const override {
    NodePtr input = input_->shard_files(shard);
    return input ? std::make_shared<CacheNode>(std::move(input)) : nullptr;
  }

 private:
  NodePtr input_;
  std::shared_ptr<CacheStore> store_;
};

}  // namespace

NodePtr make_shuffle_node(NodePtr input, int64_t buffer_size, uint64_t seed, bool reshuffle) {
  return std::make_shared<ShuffleNode>(std::move(input), buffer_size, seed, reshuffle);
}

NodePtr make_cache_node(NodePtr input) { return std::make_shared<CacheNode>(std::move(input)); }

}  // namespace weft::data::internal
