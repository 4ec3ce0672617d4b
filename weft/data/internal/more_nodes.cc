// More of tf.data's stages: in-memory elements (from_tensors), concatenate, enumerate, flat_map,
// unbatch, take_while, ignore_errors, choose_from_datasets / sample_from_datasets, scan, unique.
#include <algorithm>
#include <set>

#include "weft/core/philox.h"
#include "weft/data/internal/pipeline.h"
#include "weft/ops/shape_ops.h"

namespace weft::data::internal {
namespace {

// ---- elements held in memory ------------------------------------------------------------------

class ElementsReader : public Reader {
 public:
  explicit ElementsReader(std::shared_ptr<const std::vector<Element>> elements)
      : elements_(std::move(elements)) {}
  std::optional<Element> next() override {
    if (index_ >= elements_->size()) return std::nullopt;
    return (*elements_)[index_++];
  }
  void save(StateWriter& w) const override {
    w.begin("elements");
    w.write_i64(static_cast<int64_t>(index_));
  }
  void restore(StateReader& r) override {
    r.begin("elements");
    index_ =
        static_cast<size_t>(r.read_i64("position", 0, static_cast<int64_t>(elements_->size())));
  }

 private:
  std::shared_ptr<const std::vector<Element>> elements_;
  size_t index_ = 0;
};

class ElementsNode : public Node {
 public:
  ElementsNode(std::vector<Element> elements, std::string description, bool file_names)
      : elements_(std::make_shared<const std::vector<Element>>(std::move(elements))),
        description_(std::move(description)),
        file_names_(file_names) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<ElementsReader>(elements_);
  }
  int64_t cardinality() const override { return static_cast<int64_t>(elements_->size()); }
  std::string describe() const override { return description_; }
  // A file list is where tf.data's auto-shard inserts shard(num_shards, index).
  NodePtr shard_files(FileShard& shard) const override {
    if (!file_names_) return Node::shard_files(shard);
    const auto files = static_cast<int64_t>(elements_->size());
    shard.files = shard.files < 0 ? files : std::min(shard.files, files);
    if (files < shard.num_shards) {
      shard.unshardable = "its file list " + description_ + " has " + std::to_string(files) +
                          " files for " + std::to_string(shard.num_shards) + " workers";
      return nullptr;
    }
    return make_shard_node(std::make_shared<ElementsNode>(*this), shard.num_shards, shard.index);
  }

 private:
  std::shared_ptr<const std::vector<Element>> elements_;
  std::string description_;
  bool file_names_;
};

// ---- concatenate ------------------------------------------------------------------------------

class ConcatenateReader : public Reader {
 public:
  ConcatenateReader(std::unique_ptr<Reader> first, std::unique_ptr<Reader> second)
      : first_(std::move(first)), second_(std::move(second)) {}
  std::optional<Element> next() override {
    if (!in_second_) {
      if (std::optional<Element> e = first_->next()) return e;
      in_second_ = true;
    }
    return second_->next();
  }
  void save(StateWriter& w) const override {
    w.begin("concatenate");
    w.write_bool(in_second_);
    first_->save(w);
    second_->save(w);
  }
  void restore(StateReader& r) override {
    r.begin("concatenate");
    in_second_ = r.read_bool("in the second dataset");
    first_->restore(r);
    second_->restore(r);
  }

 private:
  std::unique_ptr<Reader> first_, second_;
  bool in_second_ = false;
};

class ConcatenateNode : public Node {
 public:
  ConcatenateNode(NodePtr a, NodePtr b) : a_(std::move(a)), b_(std::move(b)) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<ConcatenateReader>(a_->make_reader(), b_->make_reader());
  }
  int64_t cardinality() const override {
    int64_t x = a_->cardinality(), y = b_->cardinality();
    if (x == kInfinite || y == kInfinite) return kInfinite;
    if (x == kUnknown || y == kUnknown) return kUnknown;
    return x + y;
  }
  std::string describe() const override {
    return a_->describe() + ".concatenate(" + b_->describe() + ")";
  }
  NodePtr shard_files(FileShard& shard) const override {
    std::vector<NodePtr> both = shard_every_input({a_, b_}, shard);
    return both.empty() ? nullptr : std::make_shared<ConcatenateNode>(both[0], both[1]);
  }

 private:
  NodePtr a_, b_;
};

// ---- a reader with a counter and one input, for enumerate, take_while, ignore_errors -----------

using ElementFn = std::function<std::optional<Element>(int64_t index, Element e, bool* stop)>;

class StepReader : public Reader {
 public:
  StepReader(std::string name, std::unique_ptr<Reader> input, std::shared_ptr<const ElementFn> f,
             bool skip_errors)
      : name_(std::move(name)),
        input_(std::move(input)),
        f_(std::move(f)),
        skip_errors_(skip_errors) {}
  std::optional<Element> next() override {
    while (!stopped_) {
      std::optional<Element> e;
      if (skip_errors_) {
        try {
          e = input_->next();
        } catch (const InvalidArgument&) {
          continue;
        } catch (const DataLoss&) {
          continue;
        }
      } else {
        e = input_->next();
      }
      if (!e) return std::nullopt;
      std::optional<Element> out = (*f_)(count_++, std::move(*e), &stopped_);
      if (out) return out;
    }
    return std::nullopt;
  }
  void save(StateWriter& w) const override {
    w.begin(name_);
    w.write_i64(count_);
    w.write_bool(stopped_);
    input_->save(w);
  }
  void restore(StateReader& r) override {
    r.begin(name_);
    count_ = r.read_i64("elements seen", 0);
    stopped_ = r.read_bool("stopped");
    input_->restore(r);
  }

 private:
  std::string name_;
  std::unique_ptr<Reader> input_;
  std::shared_ptr<const ElementFn> f_;
  bool skip_errors_;
  int64_t count_ = 0;
  bool stopped_ = false;
};

class StepNode : public Node {
 public:
  StepNode(std::string name, NodePtr input, ElementFn f, bool skip_errors, bool same_count)
      : name_(std::move(name)),
        input_(std::move(input)),
        f_(std::make_shared<const ElementFn>(std::move(f))),
        skip_errors_(skip_errors),
        same_count_(same_count) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<StepReader>(name_, input_->make_reader(), f_, skip_errors_);
  }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    return same_count_ || n == 0 ? n : kUnknown;
  }
  std::string describe() const override { return input_->describe() + "." + name_ + "()"; }
  NodePtr shard_files(FileShard& shard) const override {
    return with_sharded_input(*this, &StepNode::input_, shard);
  }

 private:
  std::string name_;
  NodePtr input_;
  std::shared_ptr<const ElementFn> f_;
  bool skip_errors_, same_count_;
};

// ---- flat_map and unbatch: each input element becomes a dataset --------------------------------

using Expand = std::function<Dataset(const Element&)>;

class FlatMapReader : public Reader {
 public:
  FlatMapReader(std::unique_ptr<Reader> input, std::shared_ptr<const Expand> f)
      : input_(std::move(input)), f_(std::move(f)) {}
  std::optional<Element> next() override {
    while (true) {
      if (inner_) {
        if (std::optional<Element> e = inner_->next()) return e;
        inner_.reset();
      }
      std::optional<Element> outer = input_->next();
      if (!outer) return std::nullopt;
      current_ = *outer;
      inner_ = (*f_)(current_).node()->make_reader();
    }
  }
  void save(StateWriter& w) const override {
    w.begin("flat_map");
    input_->save(w);
    w.write_bool(inner_ != nullptr);
    if (inner_) {
      w.write_element(current_);
      inner_->save(w);
    }
  }
  void restore(StateReader& r) override {
    r.begin("flat_map");
    input_->restore(r);
    inner_.reset();
    if (r.read_bool("an inner dataset")) {
      current_ = r.read_element("the element the inner dataset came from");
      inner_ = (*f_)(current_).node()->make_reader();
      inner_->restore(r);
    }
  }

 private:
  std::unique_ptr<Reader> input_;
  std::shared_ptr<const Expand> f_;
  Element current_;
  std::unique_ptr<Reader> inner_;
};

class FlatMapNode : public Node {
 public:
  FlatMapNode(NodePtr input, Expand f, std::string name)
      : input_(std::move(input)),
        f_(std::make_shared<const Expand>(std::move(f))),
        name_(std::move(name)) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<FlatMapReader>(input_->make_reader(), f_);
  }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    return n == 0 ? 0 : kUnknown;
  }
  std::string describe() const override { return input_->describe() + "." + name_ + "()"; }
  NodePtr shard_files(FileShard& shard) const override {
    return with_sharded_input(*this, &FlatMapNode::input_, shard);
  }

 private:
  NodePtr input_;
  std::shared_ptr<const Expand> f_;
  std::string name_;
};

// ---- choose_from_datasets ---------------------------------------------------------------------

class ChooseReader : public Reader {
 public:
  ChooseReader(std::vector<std::unique_ptr<Reader>> inputs, std::unique_ptr<Reader> choices)
      : inputs_(std::move(inputs)), choices_(std::move(choices)) {}
  std::optional<Element> next() override {
    while (std::optional<Element> c = choices_->next()) {
      WEFT_CHECK(c->size() == 1 && c->at(0).numel() == 1, InvalidArgument)
          << "choose_from_datasets: each choice must be one integer scalar";
      int64_t i = c->at(0).item<int64_t>();
      WEFT_CHECK(i >= 0 && i < static_cast<int64_t>(inputs_.size()), InvalidArgument)
          << "choose_from_datasets: choice " << i << " is not the index of one of the "
          << inputs_.size() << " datasets";
      if (std::optional<Element> e = inputs_[i]->next()) return e;
    }
    return std::nullopt;
  }
  void save(StateWriter& w) const override {
    w.begin("choose_from_datasets");
    choices_->save(w);
    for (const auto& in : inputs_) in->save(w);
  }
  void restore(StateReader& r) override {
    r.begin("choose_from_datasets");
    choices_->restore(r);
    for (auto& in : inputs_) in->restore(r);
  }

 private:
  std::vector<std::unique_ptr<Reader>> inputs_;
  std::unique_ptr<Reader> choices_;
};

class ChooseNode : public Node {
 public:
  ChooseNode(std::vector<NodePtr> inputs, NodePtr choices)
      : inputs_(std::move(inputs)), choices_(std::move(choices)) {}
  std::unique_ptr<Reader> make_reader() const override {
    std::vector<std::unique_ptr<Reader>> readers;
    for (const NodePtr& n : inputs_) readers.push_back(n->make_reader());
    return std::make_unique<ChooseReader>(std::move(readers), choices_->make_reader());
  }
  std::string describe() const override {
    std::string s = "choose_from_datasets([";
    for (size_t i = 0; i < inputs_.size(); ++i) s += (i ? ", " : "") + inputs_[i]->describe();
    return s + "], " + choices_->describe() + ")";
  }

 private:
  std::vector<NodePtr> inputs_;
  NodePtr choices_;
};

// sample_from_datasets: element k is drawn from dataset i with probability weights[i] (among
// those not yet exhausted), by a Philox draw keyed by (seed, k).
class SampleReader : public Reader {
 public:
  SampleReader(std::vector<std::unique_ptr<Reader>> inputs, std::vector<double> weights,
               uint64_t seed)
      : inputs_(std::move(inputs)),
        weights_(std::move(weights)),
        seed_(seed),
        done_(inputs_.size(), false) {}
  std::optional<Element> next() override {
    while (true) {
      double total = 0;
      for (size_t i = 0; i < inputs_.size(); ++i) total += done_[i] ? 0 : weights_[i];
      if (total <= 0) return std::nullopt;
      std::array<uint32_t, 4> bits = random_internal::philox4x32_10(
          {static_cast<uint32_t>(drawn_), static_cast<uint32_t>(drawn_ >> 32), 0, 0},
          {static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32)});
      ++drawn_;
      double u =
          (static_cast<double>(bits[0] >> 5) * 67108864.0 + (bits[1] >> 6)) / 9007199254740992.0;
      double at = u * total;
      size_t pick = inputs_.size();
      for (size_t i = 0; i < inputs_.size(); ++i) {
        if (done_[i] || weights_[i] <= 0) continue;
        pick = i;
        if (at < weights_[i]) break;
        at -= weights_[i];
      }
      if (std::optional<Element> e = inputs_[pick]->next()) return e;
      done_[pick] = true;
    }
  }
  void save(StateWriter& w) const override {
    w.begin("sample_from_datasets");
    w.write_i64(drawn_);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      w.write_bool(done_[i]);
      inputs_[i]->save(w);
    }
  }
  void restore(StateReader& r) override {
    r.begin("sample_from_datasets");
    drawn_ = r.read_i64("draws", 0);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      done_[i] = r.read_bool("exhausted");
      inputs_[i]->restore(r);
    }
  }

 private:
  std::vector<std::unique_ptr<Reader>> inputs_;
  std::vector<double> weights_;
  uint64_t seed_;
  std::vector<bool> done_;
  int64_t drawn_ = 0;
};

class SampleNode : public Node {
 public:
  SampleNode(std::vector<NodePtr> inputs, std::vector<double> weights, uint64_t seed)
      : inputs_(std::move(inputs)), weights_(std::move(weights)), seed_(seed) {}
  std::unique_ptr<Reader> make_reader() const override {
    std::vector<std::unique_ptr<Reader>> readers;
    for (const NodePtr& n : inputs_) readers.push_back(n->make_reader());
    return std::make_unique<SampleReader>(std::move(readers), weights_, seed_);
  }
  std::string describe() const override {
    std::string s = "sample_from_datasets([";
    for (size_t i = 0; i < inputs_.size(); ++i) s += (i ? ", " : "") + inputs_[i]->describe();
    return s + "], seed=" + std::to_string(seed_) + ")";
  }

 private:
  std::vector<NodePtr> inputs_;
  std::vector<double> weights_;
  uint64_t seed_;
};

// ---- scan and unique: state carried from element to element ------------------------------------

class ScanReader : public Reader {
 public:
  ScanReader(std::unique_ptr<Reader> input, Element initial, std::shared_ptr<const ScanFn> f)
      : input_(std::move(input)), state_(std::move(initial)), f_(std::move(f)) {}
  std::optional<Element> next() override {
    std::optional<Element> e = input_->next();
    if (!e) return std::nullopt;
    auto [state, out] = (*f_)(state_, *e);
    state_ = std::move(state);
    return out;
  }
  void save(StateWriter& w) const override {
    w.begin("scan");
    w.write_element(state_);
    input_->save(w);
  }
  void restore(StateReader& r) override {
    r.begin("scan");
    state_ = r.read_element("the scan state");
    input_->restore(r);
  }

 private:
  std::unique_ptr<Reader> input_;
  Element state_;
  std::shared_ptr<const ScanFn> f_;
};

class ScanNode : public Node {
 public:
  ScanNode(NodePtr input, Element initial, ScanFn f)
      : input_(std::move(input)),
        initial_(std::move(initial)),
        f_(std::make_shared<const ScanFn>(std::move(f))) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<ScanReader>(input_->make_reader(), initial_, f_);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string describe() const override { return input_->describe() + ".scan()"; }
  NodePtr shard_files(FileShard& shard) const override {
    return with_sharded_input(*this, &ScanNode::input_, shard);
  }

 private:
  NodePtr input_;
  Element initial_;
  std::shared_ptr<const ScanFn> f_;
};

class UniqueReader : public Reader {
 public:
  explicit UniqueReader(std::unique_ptr<Reader> input) : input_(std::move(input)) {}
  std::optional<Element> next() override {
    while (std::optional<Element> e = input_->next()) {
      WEFT_CHECK(e->size() == 1 && e->at(0).numel() == 1 && is_integral(e->at(0).dtype()),
                 InvalidArgument)
          << "unique: elements must be one integer scalar (tf.data's unique takes integers and "
             "strings)";
      if (seen_.insert(e->at(0).item<int64_t>()).second) return e;
    }
    return std::nullopt;
  }
  void save(StateWriter& w) const override {
    w.begin("unique");
    w.write_i64(static_cast<int64_t>(seen_.size()));
    for (int64_t v : seen_) w.write_i64(v);
    input_->save(w);
  }
  void restore(StateReader& r) override {
    r.begin("unique");
    int64_t n = r.read_i64("values seen", 0);
    seen_.clear();
    for (int64_t i = 0; i < n; ++i) seen_.insert(r.read_i64("a value seen"));
    input_->restore(r);
  }

 private:
  std::unique_ptr<Reader> input_;
  std::set<int64_t> seen_;
};

class UniqueNode : public Node {
 public:
  explicit UniqueNode(NodePtr input) : input_(std::move(input)) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<UniqueReader>(input_->make_reader());
  }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    return n == 0 ? 0 : kUnknown;
  }
  std::string describe() const override { return input_->describe() + ".unique()"; }
  NodePtr shard_files(FileShard& shard) const override {
    return with_sharded_input(*this, &UniqueNode::input_, shard);
  }

 private:
  NodePtr input_;
};

}  // namespace

NodePtr make_elements_node(std::vector<Element> elements, std::string description,
                           bool file_names) {
  return std::make_shared<ElementsNode>(std::move(elements), std::move(description), file_names);
}
NodePtr make_concatenate_node(NodePtr a, NodePtr b) {
  return std::make_shared<ConcatenateNode>(std::move(a), std::move(b));
}
NodePtr make_enumerate_node(NodePtr input, int64_t start) {
  return std::make_shared<StepNode>(
      "enumerate", std::move(input),
      [start](int64_t i, Element e, bool*) -> std::optional<Element> {
        e.insert(e.begin(), Tensor::scalar(start + i, kInt64));
        return e;
      },
      false, true);
}
NodePtr make_take_while_node(NodePtr input, std::function<bool(const Element&)> pred) {
  return std::make_shared<StepNode>(
      "take_while", std::move(input),
      [pred = std::move(pred)](int64_t, Element e, bool* stop) -> std::optional<Element> {
        if (pred(e)) return e;
        *stop = true;
        return std::nullopt;
      },
      false, false);
}
NodePtr make_ignore_errors_node(NodePtr input) {
  return std::make_shared<StepNode>(
      "ignore_errors", std::move(input),
      [](int64_t, Element e, bool*) -> std::optional<Element> { return e; }, true, false);
}
NodePtr make_flat_map_node(NodePtr input, std::function<Dataset(const Element&)> f,
                           std::string name) {
  return std::make_shared<FlatMapNode>(std::move(input), std::move(f), std::move(name));
}
NodePtr make_choose_node(std::vector<NodePtr> inputs, NodePtr choices) {
  return std::make_shared<ChooseNode>(std::move(inputs), std::move(choices));
}
NodePtr make_sample_node(std::vector<NodePtr> inputs, std::vector<double> weights, uint64_t seed) {
  return std::make_shared<SampleNode>(std::move(inputs), std::move(weights), seed);
}
NodePtr make_scan_node(NodePtr input, Element initial, ScanFn f) {
  return std::make_shared<ScanNode>(std::move(input), std::move(initial), std::move(f));
}
NodePtr make_unique_node(NodePtr input) { return std::make_shared<UniqueNode>(std::move(input)); }

}  // namespace weft::data::internal
