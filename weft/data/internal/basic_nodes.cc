// The single-threaded stages: from_tensor_slices, filter, batch, take, skip, shard, repeat.
#include <algorithm>
#include <limits>
#include <sstream>

#include "weft/data/internal/pipeline.h"

namespace weft::data::internal {
namespace {

// ---- from_tensor_slices ------------------------------------------------------------------------

class SlicesReader : public ItemReader<int64_t> {
 public:
  explicit SlicesReader(const RowSource* source) : ItemReader(source) {}
  std::optional<int64_t> step() override {
    if (index_ >= source_->size()) return std::nullopt;
    return index_++;
  }
  void save(StateWriter& w) const override {
    w.begin("from_tensor_slices");
    w.write_i64(index_);
  }
  void restore(StateReader& r) override {
    r.begin("from_tensor_slices");
    index_ = r.read_i64("position", 0, source_->size());
  }

 private:
  int64_t index_ = 0;
};

class SlicesNode : public Node {
 public:
  explicit SlicesNode(std::shared_ptr<const RowSource> source) : source_(std::move(source)) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<SlicesReader>(source_.get());
  }
  int64_t cardinality() const override { return source_->size(); }
  std::string describe() const override { return source_->describe(); }

 private:
  std::shared_ptr<const RowSource> source_;
};

// ---- filter ------------------------------------------------------------------------------------

using Predicate = std::function<bool(const Element&)>;

template <typename T>
class FilterReader : public ItemReader<T> {
 public:
  FilterReader(const RowSource* source, std::unique_ptr<Reader> input,
               std::shared_ptr<const Predicate> pred)
      : ItemReader<T>(source), input_(std::move(input)), pred_(std::move(pred)) {}
  std::optional<T> step() override {
    while (std::optional<T> x = pull<T>(*input_)) {
      bool keep;
      if constexpr (ItemReader<T>::kRows) {
        keep = (*pred_)(this->source_->row(*x));
      } else {
        keep = (*pred_)(*x);
      }
      if (keep) return x;
    }
    return std::nullopt;
  }
  void save(StateWriter& w) const override {
    w.begin("filter");
    input_->save(w);
  }
  void restore(StateReader& r) override {
    r.begin("filter");
    input_->restore(r);
  }

 private:
  std::unique_ptr<Reader> input_;
  std::shared_ptr<const Predicate> pred_;
};

class FilterNode : public Node {
 public:
  FilterNode(NodePtr input, Predicate pred)
      : input_(std::move(input)), pred_(std::make_shared<const Predicate>(std::move(pred))) {}
  std::unique_ptr<Reader> make_reader() const override {
    return make_item_reader<FilterReader>(input_->make_reader(), pred_);
  }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    return n == 0 || n == kInfinite ? n : kUnknown;
  }
  std::string describe() const override { return input_->describe() + ".filter()"; }
  NodePtr shard_files(FileShard& shard) const override {
    return with_sharded_input(*this, &FilterNode::input_, shard);
  }

 private:
  NodePtr input_;
  std::shared_ptr<const Predicate> pred_;
};

// ---- batch -------------------------------------------------------------------------------------

class BatchReader : public Reader {
 public:
  BatchReader(std::unique_ptr<Reader> input, int64_t size, bool drop_remainder)
      : input_(std::move(input)), size_(size), drop_remainder_(drop_remainder) {}
  std::optional<Element> next() override {
    if (const RowSource* source = input_->row_source()) {
      std::vector<int64_t> rows;
      rows.reserve(size_);
      while (static_cast<int64_t>(rows.size()) < size_) {
        std::optional<int64_t> i = input_->next_row();
        if (!i) break;
        rows.push_back(*i);
      }
      if (!complete(rows.size())) return std::nullopt;
      return source->rows(rows);
    }
    std::vector<Element> elements;
    while (static_cast<int64_t>(elements.size()) < size_) {
      std::optional<Element> e = input_->next();
      if (!e) break;
      elements.push_back(std::move(*e));
    }
    if (!complete(elements.size())) return std::nullopt;
    return stack_elements(elements);
  }
  void save(StateWriter& w) const override {
    w.begin("batch");
    input_->save(w);
  }
  void restore(StateReader& r) override {
    r.begin("batch");
    input_->restore(r);
  }

 private:
  bool complete(size_t n) const {
    return n > 0 && !(drop_remainder_ && static_cast<int64_t>(n) < size_);
  }
  std::unique_ptr<Reader> input_;
  int64_t size_;
  bool drop_remainder_;
};

class BatchNode : public Node {
 public:
  BatchNode(NodePtr input, int64_t size, bool drop_remainder)
      : input_(std::move(input)), size_(size), drop_remainder_(drop_remainder) {
    WEFT_CHECK(size > 0, InvalidArgument)
        << "Dataset::batch: batch_size must be positive, got " << size;
  }
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<BatchReader>(input_->make_reader(), size_, drop_remainder_);
  }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    if (n < 0) return n;
    return drop_remainder_ ? n / size_ : (n + size_ - 1) / size_;
  }
  std::string describe() const override {
    std::ostringstream s;
    s << input_->describe() << ".batch(" << size_ << (drop_remainder_ ? ", drop_remainder" : "")
      << ")";
    return s.str();
  }
  BatchParts parts() const { return {input_, size_, drop_remainder_}; }
  NodePtr shard_files(FileShard& shard) const override {
    const int64_t size = sharded_batch_size(size_, !std::exchange(shard.rebatched, true), shard);
    NodePtr input = size > 0 ? input_->shard_files(shard) : nullptr;
    return input ? std::make_shared<BatchNode>(std::move(input), size, drop_remainder_) : nullptr;
  }

 private:
  NodePtr input_;
  int64_t size_;
  bool drop_remainder_;
};

// ---- take / skip / shard -----------------------------------------------------------------------

// The state of take, skip and shard is one counter beside their input's.
template <typename T>
class CountingReader : public ItemReader<T> {
 public:
  struct Counter {
    const char* tag;   // the reader's name in saved state
    const char* what;  // what the counter counts, for errors
    int64_t value, lo, hi;
  };
  CountingReader(const RowSource* source, std::unique_ptr<Reader> input, Counter counter)
      : ItemReader<T>(source), input_(std::move(input)), counter_(counter) {}
  void save(StateWriter& w) const override {
    w.begin(counter_.tag);
    w.write_i64(counter_.value);
    input_->save(w);
  }
  void restore(StateReader& r) override {
    r.begin(counter_.tag);
    counter_.value = r.read_i64(counter_.what, counter_.lo, counter_.hi);
    input_->restore(r);
  }

 protected:
  std::unique_ptr<Reader> input_;
  Counter counter_;
};

constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max();

template <typename T>
class TakeReader : public CountingReader<T> {
 public:
  TakeReader(const RowSource* source, std::unique_ptr<Reader> input,
             const std::vector<int64_t>& args)
      : CountingReader<T>(source, std::move(input),
                          {"take", "elements left", args[0], -1, kMaxCount}) {}
  std::optional<T> step() override {
    int64_t& left = this->counter_.value;  // -1: all
    if (left == 0) return std::nullopt;
    std::optional<T> x = pull<T>(*this->input_);
    if (!x) {
      left = 0;
    } else if (left > 0) {
      --left;
    }
    return x;
  }
};

template <typename T>
class SkipReader : public CountingReader<T> {
 public:
  SkipReader(const RowSource* source, std::unique_ptr<Reader> input,
             const std::vector<int64_t>& args)
      : CountingReader<T>(source, std::move(input),
                          {"skip", "elements to skip", args[0], -1, kMaxCount}) {}
  std::optional<T> step() override {
    int64_t& to_skip = this->counter_.value;  // -1: everything
    while (to_skip != 0) {
      if (!pull<T>(*this->input_)) return std::nullopt;
      if (to_skip > 0) --to_skip;
    }
    return pull<T>(*this->input_);
  }
};

template <typename T>
class ShardReader : public CountingReader<T> {
 public:
  ShardReader(const RowSource* source, std::unique_ptr<Reader> input,
              const std::vector<int64_t>& args)
      : CountingReader<T>(source, std::move(input),
                          {"shard", "position modulo num_shards", 0, 0, args[0] - 1}),
        num_shards_(args[0]),
        index_(args[1]) {}
  std::optional<T> step() override {
    int64_t& position = this->counter_.value;  // of the next input element, modulo num_shards
    while (std::optional<T> x = pull<T>(*this->input_)) {
      int64_t k = position;
      position = (position + 1) % num_shards_;
      if (k == index_) return x;
    }
    return std::nullopt;
  }

 private:
  int64_t num_shards_, index_;
};

// take, skip and shard differ only in their reader, cardinality and name.
template <template <typename> class R>
class SelectNode : public Node {
 public:
  SelectNode(NodePtr input, std::string name, std::vector<int64_t> args,
             std::function<int64_t(int64_t)> cardinality)
      : input_(std::move(input)),
        name_(std::move(name)),
        args_(std::move(args)),
        cardinality_(std::move(cardinality)) {}
  std::unique_ptr<Reader> make_reader() const override {
    return make_item_reader<R>(input_->make_reader(), args_);
  }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    return n == kUnknown ? n : cardinality_(n);
  }
  std::string describe() const override {
    std::ostringstream s;
    s << input_->describe() << "." << name_ << "(";
    for (size_t i = 0; i < args_.size(); ++i) s << (i ? ", " : "") << args_[i];
    s << ")";
    return s.str();
  }
  NodePtr shard_files(FileShard& shard) const override {
    return with_sharded_input(*this, &SelectNode::input_, shard);
  }

 private:
  NodePtr input_;
  std::string name_;
  std::vector<int64_t> args_;
  std::function<int64_t(int64_t)> cardinality_;
};

// ---- repeat ------------------------------------------------------------------------------------

template <typename T>
class RepeatReader : public ItemReader<T> {
 public:
  RepeatReader(const RowSource* source, std::unique_ptr<Reader> input, NodePtr node, int64_t count)
      : ItemReader<T>(source), node_(std::move(node)), count_(count) {
    if (count_ != 0) input_ = std::move(input);
  }
  std::optional<T> step() override {
    while (input_) {
      if (std::optional<T> x = pull<T>(*input_)) {
        produced_ = true;
        return x;
      }
      ++passes_;
      // An empty pass ends an endless repeat instead of spinning forever, as in tf.data.
      if ((count_ >= 0 && passes_ >= count_) || !produced_) {
        input_.reset();
        break;
      }
      input_ = node_->make_reader();
      produced_ = false;
    }
    return std::nullopt;
  }
  void save(StateWriter& w) const override {
    w.begin("repeat");
    w.write_i64(passes_);
    w.write_bool(produced_);
    w.write_bool(input_ != nullptr);
    if (input_) input_->save(w);
  }
  void restore(StateReader& r) override {
    r.begin("repeat");
    passes_ = r.read_i64("completed passes", 0, count_ < 0 ? INT64_MAX : count_);
    produced_ = r.read_bool("produced-this-pass flag");
    if (r.read_bool("pass-in-progress flag")) {
      input_ = node_->make_reader();
      input_->restore(r);
    } else {
      input_.reset();
    }
  }

 private:
  NodePtr node_;
  int64_t count_;                  // -1: forever
  std::unique_ptr<Reader> input_;  // null once finished
  int64_t passes_ = 0;             // completed
  bool produced_ = false;          // anything in the current pass
};

class RepeatNode : public Node {
 public:
  RepeatNode(NodePtr input, int64_t count) : input_(std::move(input)), count_(count) {}
  std::unique_ptr<Reader> make_reader() const override {
    return make_item_reader<RepeatReader>(input_->make_reader(), input_, count_);
  }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    if (count_ == 0 || n == 0) return 0;
    if (n == kUnknown) return kUnknown;
    if (count_ < 0 || n == kInfinite) return kInfinite;
    return n * count_;
  }
  std::string describe() const override {
    return input_->describe() + ".repeat(" + (count_ < 0 ? "" : std::to_string(count_)) + ")";
  }
  NodePtr shard_files(FileShard& shard) const override {
    return with_sharded_input(*this, &RepeatNode::input_, shard);
  }

 private:
  NodePtr input_;
  int64_t count_;
};

}  // namespace

BatchParts batch_parts(const Node& node) {
  const auto* batch = dynamic_cast<const BatchNode*>(&node);
  return batch ? batch->parts() : BatchParts{};
}

NodePtr make_slices_node(std::shared_ptr<const RowSource> source) {
  return std::make_shared<SlicesNode>(std::move(source));
}

NodePtr make_filter_node(NodePtr input, Predicate pred) {
  return std::make_shared<FilterNode>(std::move(input), std::move(pred));
}

NodePtr make_batch_node(NodePtr input, int64_t batch_size, bool drop_remainder) {
  return std::make_shared<BatchNode>(std::move(input), batch_size, drop_remainder);
}

NodePtr make_take_node(NodePtr input, int64_t count) {
  WEFT_CHECK(count >= -1, InvalidArgument)
      << "Dataset::take: count must be >= 0, or -1 for all, got " << count;
  return std::make_shared<SelectNode<TakeReader>>(
      std::move(input), "take", std::vector<int64_t>{count}, [count](int64_t n) {
        if (count < 0) return n;
        return n == kInfinite ? count : std::min(n, count);
      });
}

NodePtr make_skip_node(NodePtr input, int64_t count) {
  WEFT_CHECK(count >= -1, InvalidArgument)
      << "Dataset::skip: count must be >= 0, or -1 for all, got " << count;
  return std::make_shared<SelectNode<SkipReader>>(
      std::move(input), "skip", std::vector<int64_t>{count}, [count](int64_t n) -> int64_t {
        if (count < 0) return 0;
        return n == kInfinite ? n : std::max<int64_t>(0, n - count);
      });
}

NodePtr make_shard_node(NodePtr input, int64_t num_shards, int64_t index) {
  WEFT_CHECK(num_shards >= 1, InvalidArgument)
      << "Dataset::shard: num_shards must be >= 1, got " << num_shards;
  WEFT_CHECK(index >= 0 && index < num_shards, InvalidArgument)
      << "Dataset::shard: index must be in [0, " << num_shards << "), got " << index;
  return std::make_shared<SelectNode<ShardReader>>(
      std::move(input), "shard", std::vector<int64_t>{num_shards, index},
      [num_shards, index](int64_t n) -> int64_t {
        if (n == kInfinite) return n;
        return n > index ? (n - index + num_shards - 1) / num_shards : 0;
      });
}

NodePtr make_repeat_node(NodePtr input, int64_t count) {
  WEFT_CHECK(count >= -1, InvalidArgument)
      << "Dataset::repeat: count must be >= 0, or -1 for forever, got " << count;
  return std::make_shared<RepeatNode>(std::move(input), count);
}

}  // namespace weft::data::internal
