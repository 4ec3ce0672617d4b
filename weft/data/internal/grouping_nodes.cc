// group_by_window (tf.data.experimental.group_by_window, group_by_window_dataset_op.cc): input
// elements are gathered by key until one key's window is full; reduce_func(key, window) is then
// read to its end before more input is read. At the end of the input the unfinished windows are
// reduced in ascending key order (TF's std::map). bucket_by_sequence_length is built on it
// (dataset.cc).
#include <map>
#include <sstream>

#include "weft/data/internal/pipeline.h"

namespace weft::data::internal {
namespace {

struct GroupFns {
  std::function<int64_t(const Element&)> key;
  std::function<Dataset(int64_t, const Dataset&)> reduce;
  std::function<int64_t(int64_t)> window_size;
};

class GroupByWindowReader : public Reader {
 public:
  GroupByWindowReader(std::unique_ptr<Reader> input, std::shared_ptr<const GroupFns> fns)
      : input_(std::move(input)), fns_(std::move(fns)) {}

  std::optional<Element> next() override {
    do {
      if (current_) {
        if (std::optional<Element> e = current_->next()) return e;
        current_.reset();
        groups_.erase(current_key_);  // a group stays until its reduced dataset is read
      }
      while (!end_of_input_) {
        std::optional<Element> x = input_->next();
        if (!x) {
          end_of_input_ = true;
          break;
        }
        const int64_t key = fns_->key(*x);
        auto size = window_sizes_.find(key);
        if (size == window_sizes_.end()) {
          const int64_t n = fns_->window_size(key);
          WEFT_CHECK(n > 0, InvalidArgument)
              << "Dataset::group_by_window: window size must be greater than zero, but "
                 "window_size_func gave "
              << n << " for key " << key;
          size = window_sizes_.emplace(key, n).first;
        }
        std::vector<Element>& group = groups_[key];
        group.push_back(std::move(*x));
        if (static_cast<int64_t>(group.size()) == size->second) {
          current_key_ = key;
          start_flushing();
          break;
        }
      }
      if (end_of_input_ && !current_ && !groups_.empty()) {
        current_key_ = groups_.begin()->first;
        start_flushing();
      }
    } while (current_ || !end_of_input_);
    return std::nullopt;
  }

  void save(StateWriter& w) const override {
    w.begin("group_by_window");
    input_->save(w);
    w.write_bool(end_of_input_);
    w.write_i64(static_cast<int64_t>(window_sizes_.size()));
    for (const auto& [key, size] : window_sizes_) {
      w.write_i64(key);
      w.write_i64(size);
    }
    w.write_i64(static_cast<int64_t>(groups_.size()));
    for (const auto& [key, group] : groups_) {
      w.write_i64(key);
      w.write_i64(static_cast<int64_t>(group.size()));
      for (const Element& e : group) w.write_element(e);
    }
    w.write_bool(current_ != nullptr);
    if (current_) {
      w.write_i64(current_key_);
      current_->save(w);
    }
  }

  void restore(StateReader& r) override {
    r.begin("group_by_window");
    input_->restore(r);
    end_of_input_ = r.read_bool("input-exhausted flag");
    window_sizes_.clear();
    const int64_t sizes = r.read_i64("count of window sizes", 0);
    for (int64_t i = 0; i < sizes; ++i) {
      const int64_t key = r.read_i64("key");
      window_sizes_[key] = r.read_i64("window size", 1);
    }
    groups_.clear();
    const int64_t groups = r.read_i64("count of groups", 0);
    for (int64_t i = 0; i < groups; ++i) {
      std::vector<Element>& group = groups_[r.read_i64("key")];
      const int64_t n = r.read_i64("count of elements in a group", 0);
      for (int64_t j = 0; j < n; ++j) group.push_back(r.read_element("grouped element"));
    }
    current_.reset();
    if (r.read_bool("a group being reduced")) {
      current_key_ = r.read_i64("key of the group being reduced");
      if (groups_.count(current_key_) == 0) r.fail("the group being reduced among the groups");
      start_flushing();  // reduce_func again over the same window, as TF's RestoreInternal
      current_->restore(r);
    }
  }

 private:
  void start_flushing() {
    Dataset window(make_elements_node(groups_.at(current_key_), "group_by_window's window"));
    current_ = fns_->reduce(current_key_, window).node()->make_reader();
  }

  std::unique_ptr<Reader> input_;
  std::shared_ptr<const GroupFns> fns_;
  bool end_of_input_ = false;
  std::map<int64_t, int64_t> window_sizes_;  // window_size_func's value, once per key
  std::map<int64_t, std::vector<Element>> groups_;
  int64_t current_key_ = 0;
  std::unique_ptr<Reader> current_;  // reduce_func's dataset of the group being flushed
};

class GroupByWindowNode : public Node {
 public:
  GroupByWindowNode(NodePtr input, GroupFns fns, std::string description)
      : input_(std::move(input)),
        fns_(std::make_shared<const GroupFns>(std::move(fns))),
        description_(std::move(description)) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<GroupByWindowReader>(input_->make_reader(), fns_);
  }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    return n == 0 ? 0 : kUnknown;
  }
  std::string describe() const override { return input_->describe() + "." + description_; }
  NodePtr shard_files(FileShard& shard) const override {
    return with_sharded_input(*this, &GroupByWindowNode::input_, shard);
  }

 private:
  NodePtr input_;
  std::shared_ptr<const GroupFns> fns_;
  std::string description_;
};

}  // namespace

NodePtr make_group_by_window_node(NodePtr input, std::function<int64_t(const Element&)> key_func,
                                  std::function<Dataset(int64_t, const Dataset&)> reduce_func,
                                  std::function<int64_t(int64_t)> window_size_func,
                                  std::string description) {
  return std::make_shared<GroupByWindowNode>(
      std::move(input),
      GroupFns{std::move(key_func), std::move(reduce_func), std::move(window_size_func)},
      std::move(description));
}

}  // namespace weft::data::internal
