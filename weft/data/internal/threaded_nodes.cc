// map (in order, on a few worker threads when asked) and prefetch (a producer thread and a
// bounded queue). Both hold results computed ahead of the consumer; an iterator's state saves
// those results themselves, since what produced them has moved on.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "weft/core/config.h"
#include "weft/data/internal/pipeline.h"
#include "weft/data/internal/workers.h"
#include "weft/ops/shape_ops.h"

namespace weft::data::internal {
namespace {

// ---- map ---------------------------------------------------------------------------------------

using MapFn = std::function<Element(const Element&)>;

// One element being mapped on a worker.
struct Slot {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Result result;

  void finish(Result r) {
    {
      std::lock_guard lock(mu);
      result = std::move(r);
      done = true;
    }
    cv.notify_all();
  }
  const Result& wait() {
    std::unique_lock lock(mu);
    cv.wait(lock, [this] { return done; });
    return result;
  }
};

Result apply(const MapFn& f, const Element& e) {
  Result r;
  try {
    r.element = f(e);
  } catch (...) {
    r.error = std::current_exception();
  }
  return r;
}

// With parallelism 1 elements are mapped on the caller's thread; otherwise up to `parallelism`
// are in flight on a pool, and come out in input order.
class MapReader : public Reader {
 public:
  MapReader(std::unique_ptr<Reader> input, std::shared_ptr<const MapFn> f, int64_t parallelism)
      : input_(std::move(input)), f_(std::move(f)), parallelism_(parallelism) {}

  std::optional<Element> next() override {
    if (parallelism_ > 1) fill();
    if (!ahead_.empty()) {
      std::shared_ptr<Slot> slot = std::move(ahead_.front());
      ahead_.pop_front();
      Result r = slot->wait();
      return r.take();
    }
    if (parallelism_ > 1 || input_done_) return std::nullopt;
    std::optional<Element> e = input_->next();
    if (!e) {
      input_done_ = true;
      return std::nullopt;
    }
    return (*f_)(*e);
  }

  void save(StateWriter& w) const override {
    w.begin("map");
    w.write_i64(static_cast<int64_t>(ahead_.size()));
    for (const std::shared_ptr<Slot>& slot : ahead_) slot->wait().save(w);
    w.write_bool(input_done_);
    input_->save(w);
  }
  void restore(StateReader& r) override {
    r.begin("map");
    if (pool_) pool_->cancel_pending();
    ahead_.clear();
    int64_t n = r.read_i64("count of elements mapped ahead", 0);
    for (int64_t i = 0; i < n; ++i) {
      ahead_.push_back(std::make_shared<Slot>());
      ahead_.back()->finish(Result::restore(r));
    }
    input_done_ = r.read_bool("input-exhausted flag");
    input_->restore(r);
  }

 private:
  void fill() {
    if (!pool_) pool_ = std::make_unique<WorkerPool>(parallelism_);
    while (!input_done_ && static_cast<int64_t>(ahead_.size()) < parallelism_) {
      auto slot = std::make_shared<Slot>();
      std::optional<Element> e;
      try {
        e = input_->next();
      } catch (...) {
        // The input's error takes its place in the sequence, after what is already in flight.
        slot->finish(Result{std::nullopt, std::current_exception()});
        ahead_.push_back(std::move(slot));
        return;
      }
      if (!e) {
        input_done_ = true;
        return;
      }
      ahead_.push_back(slot);
      pool_->submit([slot, f = f_, e = std::move(*e)] { slot->finish(apply(*f, e)); });
    }
  }

  std::unique_ptr<Reader> input_;
  std::shared_ptr<const MapFn> f_;
  int64_t parallelism_;
  std::deque<std::shared_ptr<Slot>> ahead_;  // in input order
  bool input_done_ = false;
  std::unique_ptr<WorkerPool> pool_;  // last: destroyed (joined) first
};

class MapNode : public Node {
 public:
  MapNode(NodePtr input, MapFn f, int64_t parallelism)
      : input_(std::move(input)),
        f_(std::make_shared<const MapFn>(std::move(f))),
        parallelism_(parallelism) {
    WEFT_CHECK(parallelism == Dataset::kAutotune || parallelism >= 1, InvalidArgument)
        << "Dataset::map: num_parallel_calls must be >= 1 or kAutotune (-1), got " << parallelism;
  }
  std::unique_ptr<Reader> make_reader() const override {
    int64_t p = parallelism_ == Dataset::kAutotune ? config::num_threads() : parallelism_;
    return std::make_unique<MapReader>(input_->make_reader(), f_, p);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  // The parallelism is left out: it does not change the elements, so a state saved with one
  // restores with another (kAutotune differs between machines).
  std::string describe() const override { return input_->describe() + ".map()"; }
  NodePtr shard_files(FileShard& shard) const override {
    return with_sharded_input(*this, &MapNode::input_, shard);
  }
  const NodePtr& input() const { return input_; }
  const std::shared_ptr<const MapFn>& fn() const { return f_; }

 private:
  NodePtr input_;
  std::shared_ptr<const MapFn> f_;
  int64_t parallelism_;
};

// ---- prefetch ----------------------------------------------------------------------------------

// The producer thread starts on the first next() (so a restore right after begin() has nothing
// to undo) and stops when the reader is destroyed, after the element it is producing, if any.
class PrefetchReader : public Reader {
 public:
  PrefetchReader(std::unique_ptr<Reader> input, int64_t capacity)
      : input_(std::move(input)), capacity_(capacity) {}
  ~PrefetchReader() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  std::optional<Element> next() override {
    std::unique_lock lock(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { produce(); });
    // Never waits forever: the producer always delivers an element, the end or an error.
    cv_.wait(lock, [this] { return !queue_.empty(); });
    if (!queue_.front().element && !queue_.front().error) return std::nullopt;  // stays
    Result r = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    cv_.notify_all();
    return r.take();
  }

  void save(StateWriter& w) const override {
    Pause pause(*this);
    w.begin("prefetch");
    w.write_i64(static_cast<int64_t>(queue_.size()));
    for (const Result& r : queue_) r.save(w);
    input_->save(w);
  }
  void restore(StateReader& r) override {
    Pause pause(*this);
    r.begin("prefetch");
    queue_.clear();
    ended_ = false;
    int64_t n = r.read_i64("count of elements produced ahead", 0);
    for (int64_t i = 0; i < n; ++i) {
      queue_.push_back(Result::restore(r));
      if (!queue_.back().element && !queue_.back().error) ended_ = true;
    }
    input_->restore(r);
  }

 private:
  // Holds the producer between elements, and mu_, while the queue and input are read or written.
  class Pause {
   public:
    explicit Pause(const PrefetchReader& p) : p_(p), lock_(p.mu_) {
      ++p_.paused_;
      p_.cv_.wait(lock_, [this] { return !p_.busy_; });
    }
    ~Pause() {
      --p_.paused_;
      lock_.unlock();
      p_.cv_.notify_all();
    }

   private:
    const PrefetchReader& p_;
    std::unique_lock<std::mutex> lock_;
  };

  void produce() {
    config::ThreadBudget one(1);  // pipeline threads leave the cores to the training threads
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [this] {
        return stop_ ||
               (paused_ == 0 && !ended_ && static_cast<int64_t>(queue_.size()) < capacity_);
      });
      if (stop_) return;
      busy_ = true;
      lock.unlock();
      Result r;
      try {
        r.element = input_->next();
      } catch (...) {
        r.error = std::current_exception();
      }
      lock.lock();
      busy_ = false;
      if (!r.element && !r.error) ended_ = true;
      queue_.push_back(std::move(r));
      cv_.notify_all();
    }
  }

  std::unique_ptr<Reader> input_;
  int64_t capacity_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::deque<Result> queue_;  // guarded by mu_; an end marker stays at the front once reached
  bool ended_ = false;        // the end marker is queued: nothing more to produce
  bool stop_ = false;
  bool busy_ = false;  // the producer is inside input_->next()
  mutable int paused_ = 0;
  std::thread thread_;
};

class PrefetchNode : public Node {
 public:
  PrefetchNode(NodePtr input, int64_t buffer_size)
      : input_(std::move(input)), buffer_size_(buffer_size) {
    WEFT_CHECK(buffer_size == Dataset::kAutotune || buffer_size >= 1, InvalidArgument)
        << "Dataset::prefetch: buffer_size must be >= 1 or kAutotune (-1), got " << buffer_size;
  }
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<PrefetchReader>(input_->make_reader(),
                                            buffer_size_ == Dataset::kAutotune ? 2 : buffer_size_);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  // The buffer size is left out, as map's parallelism.
  std::string describe() const override { return input_->describe() + ".prefetch()"; }
  NodePtr shard_files(FileShard& shard) const override {
    return with_sharded_input(*this, &PrefetchNode::input_, shard);
  }

 private:
  NodePtr input_;
  int64_t buffer_size_;
};

// ---- batch over map, mapping only this worker's rows (map_only_own_rows) ----------------------

using OwnRows = std::function<std::pair<int64_t, int64_t>(int64_t)>;

// batch(size) over maps fs[0] (the outermost) ... fs[L-1] over `source`, where each global batch
// of n elements keeps rows(n) only, and only those are mapped; its element is those rows
// followed by an int64 scalar, n. Its state is written as the batch and map readers write theirs
// (with what a restored map had mapped ahead kept per map, consumed first), so a state saved by
// either restores in the other.
class OwnRowsReader : public Reader {
 public:
  OwnRowsReader(std::unique_ptr<Reader> source, std::vector<std::shared_ptr<const MapFn>> fs,
                int64_t size, bool drop_remainder, OwnRows rows)
      : source_(std::move(source)),
        fs_(std::move(fs)),
        ahead_(fs_.size()),
        size_(size),
        drop_remainder_(drop_remainder),
        rows_(std::move(rows)) {}

  std::optional<Element> next() override {
    std::vector<std::pair<Element, size_t>> pulled;  // (element, maps still to apply)
    while (static_cast<int64_t>(pulled.size()) < size_) {
      std::optional<std::pair<Element, size_t>> e = pull();
      if (!e) break;
      pulled.push_back(std::move(*e));
    }
    const auto n = static_cast<int64_t>(pulled.size());
    if (n == 0 || (drop_remainder_ && n < size_)) return std::nullopt;
    auto [lo, hi] = rows_(n);
    std::vector<Element> mine;
    for (int64_t i = lo; i < hi; ++i) mine.push_back(mapped(pulled[static_cast<size_t>(i)]));
    Element out;
    if (mine.empty()) {  // no rows here: the structure of a mapped element, with 0 rows
      for (const Tensor& t : stack_elements({mapped(pulled[0])})) {
        out.push_back(slice(t, {Slice{0, 0}}));
      }
    } else {
      out = stack_elements(mine);
    }
    out.push_back(Tensor::scalar(n, kInt64));
    return out;
  }

  void save(StateWriter& w) const override {
    w.begin("batch");
    for (size_t level = 0; level < fs_.size(); ++level) {
      w.begin("map");
      w.write_i64(static_cast<int64_t>(ahead_[level].size()));
      for (const Result& r : ahead_[level]) r.save(w);
      w.write_bool(source_done_ && level + 1 == fs_.size());
    }
    source_->save(w);
  }
  void restore(StateReader& r) override {
    r.begin("batch");
    for (std::deque<Result>& ahead : ahead_) {
      r.begin("map");
      ahead.clear();
      int64_t n = r.read_i64("count of elements mapped ahead", 0);
      for (int64_t i = 0; i < n; ++i) ahead.push_back(Result::restore(r));
      source_done_ = r.read_bool("input-exhausted flag");
    }
    source_->restore(r);
  }

 private:
  // The next element, and how many maps it still needs: what a restored map had mapped ahead
  // first (the outermost map's), then the source's.
  std::optional<std::pair<Element, size_t>> pull() {
    for (size_t level = 0; level < ahead_.size(); ++level) {
      if (ahead_[level].empty()) continue;
      Result r = std::move(ahead_[level].front());
      ahead_[level].pop_front();
      std::optional<Element> e = r.take();
      if (e) return std::make_pair(std::move(*e), level);
    }
    if (source_done_) return std::nullopt;
    std::optional<Element> e = source_->next();
    if (!e) {
      source_done_ = true;
      return std::nullopt;
    }
    return std::make_pair(std::move(*e), fs_.size());
  }
  Element mapped(const std::pair<Element, size_t>& e) const {
    Element out = e.first;
    for (size_t level = e.second; level-- > 0;) out = (*fs_[level])(out);
    return out;
  }

  std::unique_ptr<Reader> source_;
  std::vector<std::shared_ptr<const MapFn>> fs_;
  std::vector<std::deque<Result>> ahead_;  // per map, what it had mapped ahead (restored)
  bool source_done_ = false;
  int64_t size_;
  bool drop_remainder_;
  OwnRows rows_;
};

class OwnRowsNode : public Node {
 public:
  OwnRowsNode(NodePtr whole, NodePtr source, std::vector<std::shared_ptr<const MapFn>> fs,
              BatchParts batch, OwnRows rows)
      : whole_(std::move(whole)),
        source_(std::move(source)),
        fs_(std::move(fs)),
        batch_(std::move(batch)),
        rows_(std::move(rows)) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<OwnRowsReader>(source_->make_reader(), fs_, batch_.size,
                                           batch_.drop_remainder, rows_);
  }
  int64_t cardinality() const override { return whole_->cardinality(); }
  // The whole pipeline's: a state saved here restores there and the other way round.
  std::string describe() const override { return whole_->describe(); }

 private:
  NodePtr whole_;  // batch(...) over the maps
  NodePtr source_;
  std::vector<std::shared_ptr<const MapFn>> fs_;  // the outermost first
  BatchParts batch_;
  OwnRows rows_;
};

}  // namespace

NodePtr own_rows_node(const NodePtr& root, OwnRows rows) {
  BatchParts batch = batch_parts(*root);
  std::vector<std::shared_ptr<const MapFn>> fs;
  NodePtr below = batch.input;
  while (below) {
    const auto* map = dynamic_cast<const MapNode*>(below.get());
    if (map == nullptr) break;
    fs.push_back(map->fn());
    below = map->input();
  }
  if (fs.empty()) return nullptr;
  return std::make_shared<OwnRowsNode>(root, below, std::move(fs), std::move(batch),
                                       std::move(rows));
}

NodePtr make_map_node(NodePtr input, MapFn f, int64_t num_parallel_calls) {
  return std::make_shared<MapNode>(std::move(input), std::move(f), num_parallel_calls);
}

NodePtr make_prefetch_node(NodePtr input, int64_t buffer_size) {
  return std::make_shared<PrefetchNode>(std::move(input), buffer_size);
}

}  // namespace weft::data::internal
