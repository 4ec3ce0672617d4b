// Stages that make or reshape elements: from_generator, zip, padded_batch and window.
#include <algorithm>
#include <deque>
#include <utility>

#include "weft/data/internal/pipeline.h"
#include "weft/ops/shape_ops.h"

namespace weft::data::internal {
namespace {

// ---- from_generator -----------------------------------------------------------------------------

class GeneratorReader : public Reader {
 public:
  GeneratorReader(Dataset::Generator generator, std::shared_ptr<const std::vector<TensorSpec>> spec)
      : generator_(std::move(generator)), spec_(std::move(spec)) {}
  std::optional<Element> next() override {
    std::optional<Element> e = generator_();
    if (e && spec_) check(*e);
    ++produced_;
    return e;
  }

 private:
  void check(const Element& e) const {
    WEFT_CHECK(e.size() == spec_->size(), InvalidArgument)
        << "Dataset::from_generator: element " << produced_ << " has " << e.size()
        << " components, the output_signature " << spec_->size();
    for (size_t c = 0; c < e.size(); ++c) {
      const TensorSpec& s = (*spec_)[c];
      bool fits = e[c].dtype() == s.dtype && e[c].rank() == static_cast<int64_t>(s.shape.size());
      for (size_t a = 0; fits && a < s.shape.size(); ++a) {
        fits = s.shape[a] < 0 || s.shape[a] == e[c].dim(static_cast<int64_t>(a));
      }
      WEFT_CHECK(fits, InvalidArgument)
          << "Dataset::from_generator: component " << c << " of element " << produced_ << " is "
          << shape_str(e[c].shape()) << " " << e[c].dtype() << ", the output_signature says "
          << shape_str(s.shape) << " " << s.dtype << " (-1: any size)";
    }
  }
  Dataset::Generator generator_;
  std::shared_ptr<const std::vector<TensorSpec>> spec_;
  int64_t produced_ = 0;
};

class GeneratorNode : public Node {
 public:
  GeneratorNode(std::function<Dataset::Generator()> make, std::vector<TensorSpec> spec)
      : make_(std::move(make)),
        spec_(spec.empty() ? nullptr
                           : std::make_shared<const std::vector<TensorSpec>>(std::move(spec))) {}
  std::unique_ptr<Reader> make_reader() const override {
    Dataset::Generator g = make_();
    WEFT_CHECK(g != nullptr, InvalidArgument)
        << "Dataset::from_generator: the factory returned an empty generator";
    return std::make_unique<GeneratorReader>(std::move(g), spec_);
  }
  std::string describe() const override { return "from_generator()"; }

 private:
  std::function<Dataset::Generator()> make_;
  std::shared_ptr<const std::vector<TensorSpec>> spec_;
};

// ---- zip ----------------------------------------------------------------------------------------

class ZipReader : public Reader {
 public:
  explicit ZipReader(std::vector<std::unique_ptr<Reader>> inputs) : inputs_(std::move(inputs)) {}
  std::optional<Element> next() override {
    Element out;
    for (auto& in : inputs_) {
      std::optional<Element> e = in->next();
      if (!e) return std::nullopt;
      out.insert(out.end(), e->begin(), e->end());
    }
    return out;
  }
  void save(StateWriter& w) const override {
    w.begin("zip");
    for (const auto& in : inputs_) in->save(w);
  }
  void restore(StateReader& r) override {
    r.begin("zip");
    for (auto& in : inputs_) in->restore(r);
  }

 private:
  std::vector<std::unique_ptr<Reader>> inputs_;
};

class ZipNode : public Node {
 public:
  explicit ZipNode(std::vector<NodePtr> inputs) : inputs_(std::move(inputs)) {}
  std::unique_ptr<Reader> make_reader() const override {
    std::vector<std::unique_ptr<Reader>> readers;
    for (const NodePtr& n : inputs_) readers.push_back(n->make_reader());
    return std::make_unique<ZipReader>(std::move(readers));
  }
  int64_t cardinality() const override {
    int64_t finite = kInfinite;
    bool unknown = false;
    for (const NodePtr& n : inputs_) {
      int64_t c = n->cardinality();
      if (c == kUnknown) unknown = true;
      if (c >= 0) finite = finite == kInfinite ? c : std::min(finite, c);
    }
    if (finite == 0) return 0;
    return unknown ? kUnknown : finite;
  }
  NodePtr shard_files(FileShard& shard) const override {
    std::vector<NodePtr> inputs = shard_every_input(inputs_, shard);
    return inputs.empty() ? nullptr : std::make_shared<ZipNode>(std::move(inputs));
  }
  std::string describe() const override {
    std::string s = "zip(";
    for (size_t i = 0; i < inputs_.size(); ++i) s += (i ? ", " : "") + inputs_[i]->describe();
    return s + ")";
  }

 private:
  std::vector<NodePtr> inputs_;
};

// ---- padded_batch -------------------------------------------------------------------------------

class PaddedBatchReader : public Reader {
 public:
  PaddedBatchReader(std::unique_ptr<Reader> input, int64_t size, PaddedBatchOptions options)
      : input_(std::move(input)), size_(size), o_(std::move(options)) {}
  std::optional<Element> next() override {
    std::vector<Element> elements;
    while (static_cast<int64_t>(elements.size()) < size_) {
      std::optional<Element> e = input_->next();
      if (!e) break;
      elements.push_back(std::move(*e));
    }
    if (elements.empty() || (o_.drop_remainder && static_cast<int64_t>(elements.size()) < size_)) {
      return std::nullopt;
    }
    const size_t components = elements[0].size();
    for (size_t c = 0; c < components; ++c) {
      Shape target = target_shape(elements, c);
      for (size_t k = 0; k < elements.size(); ++k) {
        Tensor& t = elements[k][c];
        std::vector<std::pair<int64_t, int64_t>> pads;
        bool any = false;
        for (int64_t a = 0; a < t.rank(); ++a) {
          pads.emplace_back(0, target[a] - t.dim(a));
          any = any || target[a] != t.dim(a);
        }
        double value = c < o_.padding_values.size() ? o_.padding_values[c] : 0.0;
        if (any) t = pad(t, pads, value);
      }
    }
    return stack_elements(elements);
  }
  void save(StateWriter& w) const override {
    w.begin("padded_batch");
    input_->save(w);
  }
  void restore(StateReader& r) override {
    r.begin("padded_batch");
    input_->restore(r);
  }

 private:
  // Each axis padded to the batch's longest, or to the size padded_shapes gives.
  Shape target_shape(const std::vector<Element>& elements, size_t c) const {
    Shape target = elements[0].at(c).shape();
    for (size_t k = 1; k < elements.size(); ++k) {
      const Tensor& t = elements[k].at(c);
      WEFT_CHECK(t.rank() == static_cast<int64_t>(target.size()), InvalidArgument)
          << "Dataset::padded_batch: component " << c << " of element " << k
          << " of the batch has shape " << shape_str(t.shape()) << ", element 0 "
          << shape_str(elements[0][c].shape()) << "; padding needs equal ranks";
      for (int64_t a = 0; a < t.rank(); ++a) target[a] = std::max(target[a], t.dim(a));
    }
    if (c < o_.padded_shapes.size() && !o_.padded_shapes[c].empty()) {
      const Shape& given = o_.padded_shapes[c];
      WEFT_CHECK(given.size() == target.size(), InvalidArgument)
          << "Dataset::padded_batch: padded_shapes[" << c << "] " << shape_str(given)
          << " has rank " << given.size() << ", the component " << target.size();
      for (size_t a = 0; a < given.size(); ++a) {
        if (given[a] < 0) continue;
        WEFT_CHECK(given[a] >= target[a], InvalidArgument)
            << "Dataset::padded_batch: component " << c << " has size " << target[a]
            << " along axis " << a << " in this batch, more than padded_shapes[" << c << "] "
            << shape_str(given) << " allows";
        target[a] = given[a];
      }
    }
    return target;
  }
  std::unique_ptr<Reader> input_;
  int64_t size_;
  PaddedBatchOptions o_;
};

class PaddedBatchNode : public Node {
 public:
  PaddedBatchNode(NodePtr input, int64_t size, PaddedBatchOptions o)
      : input_(std::move(input)), size_(size), o_(std::move(o)) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<PaddedBatchReader>(input_->make_reader(), size_, o_);
  }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    if (n < 0) return n;
    return o_.drop_remainder ? n / size_ : (n + size_ - 1) / size_;
  }
  std::string describe() const override {
    return input_->describe() + ".padded_batch(" + std::to_string(size_) +
           (o_.drop_remainder ? ", drop_remainder=True)" : ")");
  }
  NodePtr shard_files(FileShard& shard) const override {
    const int64_t size = sharded_batch_size(size_, !std::exchange(shard.rebatched, true), shard);
    NodePtr input = size > 0 ? input_->shard_files(shard) : nullptr;
    return input ? std::make_shared<PaddedBatchNode>(std::move(input), size, o_) : nullptr;
  }

 private:
  NodePtr input_;
  int64_t size_;
  PaddedBatchOptions o_;
};

// ---- window -------------------------------------------------------------------------------------

class WindowReader : public Reader {
 public:
  WindowReader(std::unique_ptr<Reader> input, WindowOptions o) : input_(std::move(input)), o_(o) {}
  std::optional<Element> next() override {
    // Drop what the last window's shift passed over, reading past the buffer if need be.
    while (to_skip_ > 0) {
      if (!buffer_.empty()) {
        buffer_.pop_front();
      } else if (ended_ || !input_->next()) {
        ended_ = true;
        to_skip_ = 0;
        break;
      }
      --to_skip_;
    }
    const size_t span = static_cast<size_t>((o_.size - 1) * o_.stride + 1);
    while (!ended_ && buffer_.size() < span) {
      std::optional<Element> e = input_->next();
      if (!e) {
        ended_ = true;
        break;
      }
      buffer_.push_back(std::move(*e));
    }
    std::vector<Element> window;
    for (size_t i = 0; i < buffer_.size() && static_cast<int64_t>(window.size()) < o_.size;
         i += static_cast<size_t>(o_.stride)) {
      window.push_back(buffer_[i]);
    }
    if (window.empty() || (o_.drop_remainder && static_cast<int64_t>(window.size()) < o_.size)) {
      return std::nullopt;
    }
    to_skip_ = o_.shift;
    return stack_elements(window);
  }
  void save(StateWriter& w) const override {
    w.begin("window");
    input_->save(w);
    w.write_bool(ended_);
    w.write_i64(to_skip_);
    w.write_i64(static_cast<int64_t>(buffer_.size()));
    for (const Element& e : buffer_) w.write_element(e);
  }
  void restore(StateReader& r) override {
    r.begin("window");
    input_->restore(r);
    ended_ = r.read_bool("ended");
    to_skip_ = r.read_i64("elements to skip", 0, o_.shift);
    int64_t n = r.read_i64("buffered elements", 0, (o_.size - 1) * o_.stride + 1);
    buffer_.clear();
    for (int64_t i = 0; i < n; ++i) buffer_.push_back(r.read_element("a buffered element"));
  }

 private:
  std::unique_ptr<Reader> input_;
  WindowOptions o_;
  std::deque<Element> buffer_;  // from the current window's first element on
  int64_t to_skip_ = 0;
  bool ended_ = false;
};

class WindowNode : public Node {
 public:
  WindowNode(NodePtr input, WindowOptions o) : input_(std::move(input)), o_(o) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<WindowReader>(input_->make_reader(), o_);
  }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    if (n < 0) return n;
    if (!o_.drop_remainder) return (n + o_.shift - 1) / o_.shift;
    int64_t span = (o_.size - 1) * o_.stride + 1;
    return n < span ? 0 : (n - span) / o_.shift + 1;
  }
  std::string describe() const override {
    return input_->describe() + ".window(" + std::to_string(o_.size) +
           ", shift=" + std::to_string(o_.shift) + ", stride=" + std::to_string(o_.stride) +
           (o_.drop_remainder ? ", drop_remainder=True)" : ")");
  }

 private:
  NodePtr input_;
  WindowOptions o_;
};

}  // namespace

NodePtr make_generator_node(std::function<Dataset::Generator()> make,
                            std::vector<TensorSpec> output_signature) {
  return std::make_shared<GeneratorNode>(std::move(make), std::move(output_signature));
}
NodePtr make_zip_node(std::vector<NodePtr> inputs) {
  return std::make_shared<ZipNode>(std::move(inputs));
}
NodePtr make_padded_batch_node(NodePtr input, int64_t batch_size, PaddedBatchOptions options) {
  return std::make_shared<PaddedBatchNode>(std::move(input), batch_size, std::move(options));
}
NodePtr make_window_node(NodePtr input, WindowOptions options) {
  return std::make_shared<WindowNode>(std::move(input), options);
}

}  // namespace weft::data::internal
