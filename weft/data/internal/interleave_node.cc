// interleave: up to cycle_length inner datasets open at once, block_length elements taken from
// each in turn, in TF 2.4's order (interleave_dataset_op.cc). In parallel, worker threads read
// the open inner datasets, and the next few input elements' ones, ahead of the consumer, which
// walks the same order (deterministic: the output is the sequential one) or takes from the next
// inner dataset that has an element ready when the current one has none (deterministic=false).
#include <algorithm>
#include <sstream>

#include "weft/data/internal/pipeline.h"
#include "weft/data/internal/workers.h"

namespace weft::data::internal {
namespace {

using Expand = std::function<Dataset(const Element&)>;

struct InterleaveParams {
  int64_t cycle_length = 1;
  int64_t block_length = 1;
  int64_t threads = 0;  // 0: sequential
  bool deterministic = true;
};

// One input element and the reader of its inner dataset, with what was read from it ahead; or,
// in its place, the error that reading the input element or calling f on it raised.
struct InterleaveEntry {
  std::exception_ptr open_error;
  Element source;
  std::unique_ptr<Reader> reader;
  // In parallel, guarded by the InterleaveReader's mu_; `reader` is read only by the worker
  // while `running`, and only by the consumer otherwise.
  std::deque<Result> ahead;
  bool running = false;

  bool ended() const { return !ahead.empty() && ahead.back().is_end(); }
};
using EntryPtr = std::shared_ptr<InterleaveEntry>;

class InterleaveReader : public Reader {
 public:
  InterleaveReader(std::unique_ptr<Reader> input, std::shared_ptr<const Expand> f,
                   InterleaveParams p)
      : input_(std::move(input)),
        f_(std::move(f)),
        p_(p),
        slots_(static_cast<size_t>(p.cycle_length)) {}
  ~InterleaveReader() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    pool_.reset();  // joins the workers; a running fill stops after its element
  }

  std::optional<Element> next() override {
    if (parallel()) top_up();
    while (!end_of_input_ || num_open_ > 0) {
      if (slots_[cycle_index_] && parallel() && !p_.deterministic) move_to_ready_slot();
      if (EntryPtr& slot = slots_[cycle_index_]) {
        Result r = take(slot);
        if (r.error) std::rethrow_exception(r.error);  // the position stays, as in TF
        if (r.element) {
          if (++block_index_ == p_.block_length) advance();
          return std::move(r.element);
        }
        slot.reset();
        --num_open_;
        advance();
      } else if (!end_of_input_) {
        EntryPtr e = open_next();
        if (!e) {
          end_of_input_ = true;
          continue;
        }
        if (e->open_error) std::rethrow_exception(e->open_error);
        slot = std::move(e);
        ++num_open_;
      } else {
        advance();
      }
    }
    return std::nullopt;
  }

  void save(StateWriter& w) const override {
    std::unique_lock lock(mu_);
    wait_idle(lock);
    w.begin("interleave");
    w.write_i64(p_.cycle_length);
    w.write_i64(cycle_index_);
    w.write_i64(block_index_);
    w.write_bool(end_of_input_);
    w.write_bool(input_done_);
    input_->save(w);
    w.write_i64(static_cast<int64_t>(futures_.size()));
    for (const EntryPtr& e : futures_) save_entry(w, *e);
    for (const EntryPtr& e : slots_) {
      w.write_bool(e != nullptr);
      if (e) save_entry(w, *e);
    }
  }

  void restore(StateReader& r) override {
    {
      std::unique_lock lock(mu_);
      wait_idle(lock);
    }
    r.begin("interleave");
    r.read_i64("cycle length", p_.cycle_length, p_.cycle_length);
    cycle_index_ = r.read_i64("cycle index", 0, p_.cycle_length - 1);
    block_index_ = r.read_i64("block index", 0, p_.block_length - 1);
    end_of_input_ = r.read_bool("input-exhausted flag");
    input_done_ = r.read_bool("input-read-to-the-end flag");
    input_->restore(r);
    futures_.clear();
    const int64_t n = r.read_i64("count of input elements opened ahead", 0);
    for (int64_t i = 0; i < n; ++i) futures_.push_back(restore_entry(r));
    num_open_ = 0;
    for (EntryPtr& slot : slots_) {
      slot = r.read_bool("open-slot flag") ? restore_entry(r) : nullptr;
      if (slot) ++num_open_;
    }
  }

 private:
  bool parallel() const { return p_.threads > 0; }

  void advance() {
    block_index_ = 0;
    cycle_index_ = (cycle_index_ + 1) % p_.cycle_length;
  }

  // The next input element's entry (opened ahead, or now); null at the end of the input.
  EntryPtr open_next() {
    if (!futures_.empty()) {
      EntryPtr e = std::move(futures_.front());
      futures_.pop_front();
      return e;
    }
    return input_done_ ? nullptr : pull_input();
  }
  EntryPtr pull_input() {
    auto e = std::make_shared<InterleaveEntry>();
    std::optional<Element> x;
    try {
      x = input_->next();
      if (!x) {
        input_done_ = true;
        return nullptr;
      }
      e->source = std::move(*x);
      e->reader = (*f_)(e->source).node()->make_reader();
    } catch (...) {
      e->open_error = std::current_exception();
    }
    return e;
  }

  // The next result of an open slot's inner dataset. Sequentially, an error propagates as is.
  Result take(const EntryPtr& e) {
    if (!parallel()) {
      if (!e->ahead.empty()) {  // read ahead by a parallel reader whose state was restored
        Result r = std::move(e->ahead.front());
        e->ahead.pop_front();
        return r;
      }
      return Result{e->reader->next(), nullptr};
    }
    std::unique_lock lock(mu_);
    schedule(e);
    cv_.wait(lock, [&] { return !e->ahead.empty(); });
    Result r = std::move(e->ahead.front());
    e->ahead.pop_front();
    schedule(e);
    return r;
  }

  // deterministic=false: when the current slot has nothing ready, the next slot in the cycle
  // that has, or an empty one that the next input element's inner dataset, ready, would fill
  // (waiting for one when there is none).
  void move_to_ready_slot() {
    std::unique_lock lock(mu_);
    for (const EntryPtr& e : slots_) {
      if (e) schedule(e);  // one opened straight from the input is not being read yet
    }
    while (true) {
      for (int64_t i = 0; i < p_.cycle_length; ++i) {
        const int64_t j = (cycle_index_ + i) % p_.cycle_length;
        const EntryPtr& e = slots_[j];
        const bool ready =
            e ? !e->ahead.empty()
              : !end_of_input_ && !futures_.empty() &&
                    (futures_.front()->open_error || !futures_.front()->ahead.empty());
        if (ready) {
          if (j != cycle_index_) {
            cycle_index_ = j;
            block_index_ = 0;
          }
          return;
        }
      }
      cv_.wait(lock);
    }
  }

  // Parallel: reads the next input elements ahead and keeps a fill running for every entry.
  void top_up() {
    if (!pool_) pool_ = std::make_unique<WorkerPool>(p_.threads);
    while (!input_done_ && static_cast<int64_t>(futures_.size()) < p_.cycle_length) {
      EntryPtr e = pull_input();
      if (!e) break;
      futures_.push_back(std::move(e));
    }
    std::lock_guard lock(mu_);
    for (const EntryPtr& e : slots_) {
      if (e) schedule(e);
    }
    for (const EntryPtr& e : futures_) schedule(e);
  }

  // Under mu_: starts a fill of `e` unless one runs or its read-ahead is full or ended.
  void schedule(const EntryPtr& e) {
    if (!e->reader || e->running || e->ended() || stop_ || pausing_ ||
        static_cast<int64_t>(e->ahead.size()) >= p_.block_length) {
      return;
    }
    e->running = true;
    pool_->submit([this, e] { fill(e); });
  }

  // On a worker: reads `e` ahead until block_length results are waiting, its end, or a pause.
  void fill(const EntryPtr& e) {
    while (true) {
      Result r;
      try {
        r.element = e->reader->next();
      } catch (...) {
        r.error = std::current_exception();
      }
      std::lock_guard lock(mu_);
      const bool end = r.is_end();
      e->ahead.push_back(std::move(r));
      if (end || stop_ || pausing_ || static_cast<int64_t>(e->ahead.size()) >= p_.block_length) {
        e->running = false;
        cv_.notify_all();
        return;
      }
      cv_.notify_all();
    }
  }

  // Under mu_: until no fill runs (none starts before the consumer's next call).
  void wait_idle(std::unique_lock<std::mutex>& lock) const {
    pausing_ = true;
    cv_.wait(lock, [this] {
      auto busy = [](const EntryPtr& e) { return e && e->running; };
      return std::none_of(slots_.begin(), slots_.end(), busy) &&
             std::none_of(futures_.begin(), futures_.end(), busy);
    });
    pausing_ = false;
  }

  static void save_entry(StateWriter& w, const InterleaveEntry& e) {
    w.write_bool(e.open_error != nullptr);
    if (e.open_error) {
      w.write_error(e.open_error);
      return;
    }
    w.write_element(e.source);
    w.write_i64(static_cast<int64_t>(e.ahead.size()));
    for (const Result& r : e.ahead) r.save(w);
    e.reader->save(w);
  }
  EntryPtr restore_entry(StateReader& r) const {
    auto e = std::make_shared<InterleaveEntry>();
    if (r.read_bool("failed-input-element flag")) {
      e->open_error = r.read_error("the error of an input element");
      return e;
    }
    e->source = r.read_element("the element an inner dataset came from");
    const int64_t n = r.read_i64("count of inner elements read ahead", 0, p_.block_length);
    for (int64_t i = 0; i < n; ++i) e->ahead.push_back(Result::restore(r));
    e->reader = (*f_)(e->source).node()->make_reader();
    e->reader->restore(r);
    return e;
  }

  std::unique_ptr<Reader> input_;
  std::shared_ptr<const Expand> f_;
  InterleaveParams p_;
  std::vector<EntryPtr> slots_;   // the cycle
  std::deque<EntryPtr> futures_;  // the next input elements, opened ahead (parallel)
  int64_t cycle_index_ = 0;
  int64_t block_index_ = 0;
  int64_t num_open_ = 0;
  bool end_of_input_ = false;  // the cycle found the input's end
  bool input_done_ = false;    // the input has been read to its end (perhaps ahead)
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable bool pausing_ = false;  // guarded by mu_
  bool stop_ = false;             // guarded by mu_
  std::unique_ptr<WorkerPool> pool_;
};

class InterleaveNode : public Node {
 public:
  InterleaveNode(NodePtr input, Expand f, InterleaveParams p)
      : input_(std::move(input)), f_(std::make_shared<const Expand>(std::move(f))), p_(p) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<InterleaveReader>(input_->make_reader(), f_, p_);
  }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    return n == 0 ? 0 : kUnknown;
  }
  // The resolved cycle length (kAutotune's differs between machines and changes the order);
  // parallelism and determinism are left out, so a state saved by one restores in the other.
  std::string describe() const override {
    std::ostringstream s;
    s << input_->describe() << ".interleave(cycle_length=" << p_.cycle_length
      << ", block_length=" << p_.block_length << ")";
    return s.str();
  }
  NodePtr shard_files(FileShard& shard) const override {
    return with_sharded_input(*this, &InterleaveNode::input_, shard);
  }

 private:
  NodePtr input_;
  std::shared_ptr<const Expand> f_;
  InterleaveParams p_;
};

}  // namespace

NodePtr make_interleave_node(NodePtr input, std::function<Dataset(const Element&)> f,
                             const InterleaveOptions& o, bool deterministic) {
  constexpr int64_t kAuto = Dataset::kAutotune;
  WEFT_CHECK(o.cycle_length > 0 || o.cycle_length == kAuto, InvalidArgument)
      << "Dataset::interleave: cycle_length must be > 0 or kAutotune (-1), got " << o.cycle_length;
  WEFT_CHECK(o.block_length > 0, InvalidArgument)
      << "Dataset::interleave: block_length must be > 0, got " << o.block_length;
  WEFT_CHECK(o.num_parallel_calls >= 0 || o.num_parallel_calls == kAuto, InvalidArgument)
      << "Dataset::interleave: num_parallel_calls must be >= 1, kAutotune (-1) or 0 (none: "
      << "sequential), got " << o.num_parallel_calls;
  const int64_t cores = config::num_threads();
  InterleaveParams p;
  p.block_length = o.block_length;
  p.deterministic = deterministic;
  p.cycle_length = o.cycle_length;
  if (o.num_parallel_calls == 0) {
    if (p.cycle_length == kAuto) p.cycle_length = cores;  // TF: port::MaxParallelism()
  } else {
    if (p.cycle_length == kAuto) {
      // TF: min(num_parallel_calls, cores), or a third of the cores (rounded up) when the
      // parallelism is autotuned too (a thread each for an element and its two read ahead).
      p.cycle_length =
          o.num_parallel_calls == kAuto ? (cores + 2) / 3 : std::min(o.num_parallel_calls, cores);
    }
    WEFT_CHECK(o.num_parallel_calls <= p.cycle_length, InvalidArgument)
        << "Dataset::interleave: num_parallel_calls (" << o.num_parallel_calls
        << ") must be <= cycle_length (" << p.cycle_length << ")";
    p.threads =
        o.num_parallel_calls == kAuto ? std::min(cores, p.cycle_length) : o.num_parallel_calls;
  }
  return std::make_shared<InterleaveNode>(std::move(input), std::move(f), p);
}

}  // namespace weft::data::internal
