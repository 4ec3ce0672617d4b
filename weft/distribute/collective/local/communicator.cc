#include "weft/distribute/collective/local/communicator.h"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "weft/core/errors.h"
#include "weft/distribute/collective/internal/call_header.h"
#include "weft/distribute/collective/internal/reduce.h"

namespace weft::distribute::collective {

using internal::Header;
using internal::Kind;

// What a rank brings to a call: its header and its input (it lives until the rank leaves); an
// all-reduce's pieces and result.
struct LocalGroup::Post {
  Header header;
  const void* in = nullptr;
  std::span<const Piece> pieces{};
  void* out = nullptr;
};

namespace {

std::string replica(int r) { return "replica " + std::to_string(r); }

}  // namespace

class LocalGroup::Rank : public Communicator {
 public:
  Rank(LocalGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }
  std::string task_of(int rank) const override { return replica(rank); }
  uint64_t calls() const override { return calls_; }
  std::string transport() const override { return "in_process"; }

  void all_reduce(void* data, const Shape& shape, DType dtype, Reduction op,
                  const CommunicationOptions& options) override {
    const Piece whole{data, static_cast<std::size_t>(num_elements(shape))};
    all_reduce_gathered({&whole, 1}, data, shape, dtype, op, options);
  }
  void all_reduce_gathered(std::span<const Piece> pieces, void* out, const Shape& shape,
                           DType dtype, Reduction op, const CommunicationOptions&) override {
    internal::check_collective_dtype(dtype, "all_reduce");
    Post post = make(Kind::kAllReduce, shape, dtype, static_cast<uint32_t>(op), nullptr);
    post.pieces = pieces;
    post.out = out;
    group_.meet(rank_, post);
    // This rank reduces its chunk of the elements, reading every rank's pieces where they lie
    // (runs where every rank's pieces are contiguous), into the first rank's result, then copies
    // it into the other results: every chunk in the same tree, each read only by its rank.
    const std::size_t n = static_cast<std::size_t>(num_elements(shape)), es = dtype_size(dtype);
    const std::size_t chunk = (n + size() - 1) / size();
    const std::size_t lo = std::min(n, rank_ * chunk), hi = std::min(n, lo + chunk);
    std::vector<void*> outs;
    for (const Post* p : group_.posts_) {
      if (std::find(outs.begin(), outs.end(), p->out) == outs.end()) outs.push_back(p->out);
    }
    std::vector<std::vector<Piece>> cut;
    for (const Post* p : group_.posts_) {
      cut.push_back(internal::cut_pieces(p->pieces, lo, hi - lo, es));
    }
    std::vector<std::size_t> piece(cut.size(), 0), used(cut.size(), 0);
    std::vector<const void*> sources(cut.size());
    for (std::size_t at = lo; at < hi;) {
      std::size_t run = hi - at;
      for (std::size_t s = 0; s < cut.size(); ++s) {
        const Piece& p = cut[s][piece[s]];
        run = std::min(run, p.count - used[s]);
        sources[s] = p.data ? static_cast<const char*>(p.data) + used[s] * es : nullptr;
      }
      char* first = static_cast<char*>(outs[0]) + at * es;
      internal::tree_combine_from(sources, first, run, dtype, op);
      if (op == Reduction::MEAN) internal::divide(first, run, dtype, size());
      for (std::size_t o = 1; o < outs.size(); ++o) {
        std::memcpy(static_cast<char*>(outs[o]) + at * es, first, run * es);
      }
      for (std::size_t s = 0; s < cut.size(); ++s) {
        if ((used[s] += run) == cut[s][piece[s]].count) {
          ++piece[s];
          used[s] = 0;
        }
      }
      at += run;
    }
    group_.leave(rank_);
  }
  void broadcast(void* data, const Shape& shape, DType dtype, int root,
                 const CommunicationOptions&) override {
    internal::check_collective_dtype(dtype, "broadcast");
    WEFT_CHECK(root >= 0 && root < size(), InvalidArgument)
        << "broadcast: root " << root << " is not one of the " << size() << " ranks";
    const Post post = make(Kind::kBroadcast, shape, dtype, static_cast<uint32_t>(root), data);
    group_.meet(rank_, post);
    if (rank_ != root) std::memcpy(data, group_.posts_[root]->in, bytes(shape, dtype));
    group_.leave(rank_);
  }
  void all_gather(const void* in, void* out, const Shape& shape, DType dtype,
                  const CommunicationOptions&) override {
    internal::check_collective_dtype(dtype, "all_gather");
    const Post post = make(Kind::kAllGather, shape, dtype, 0, in);
    group_.meet(rank_, post);
    const std::size_t b = bytes(shape, dtype);
    for (int s = 0; s < size(); ++s) {
      std::memcpy(static_cast<char*>(out) + s * b, group_.posts_[s]->in, b);
    }
    group_.leave(rank_);
  }
  void reduce_scatter(const void* in, void* out, const Shape& shape, DType dtype, Reduction op,
                      const CommunicationOptions&) override {
    internal::check_collective_dtype(dtype, "reduce_scatter");
    const Post post = make(Kind::kReduceScatter, shape, dtype, static_cast<uint32_t>(op), in);
    group_.meet(rank_, post);
    const std::size_t n = static_cast<std::size_t>(num_elements(shape)), b = bytes(shape, dtype);
    std::vector<char> terms(static_cast<std::size_t>(size()) * b);
    for (int s = 0; s < size(); ++s) {
      std::memcpy(terms.data() + s * b, static_cast<const char*>(group_.posts_[s]->in) + rank_ * b,
                  b);
    }
    internal::tree_combine(terms.data(), b, size(), n, dtype, op);
    if (op == Reduction::MEAN) internal::divide(terms.data(), n, dtype, size());
    std::memcpy(out, terms.data(), b);
    group_.leave(rank_);
  }
  void all_to_all(const void* in, void* out, const Shape& shape, DType dtype,
                  const CommunicationOptions&) override {
    internal::check_collective_dtype(dtype, "all_to_all");
    const Post post = make(Kind::kAllToAll, shape, dtype, 0, in);
    group_.meet(rank_, post);
    const std::size_t b = bytes(shape, dtype);
    for (int s = 0; s < size(); ++s) {
      std::memcpy(static_cast<char*>(out) + s * b,
                  static_cast<const char*>(group_.posts_[s]->in) + rank_ * b, b);
    }
    group_.leave(rank_);
  }
  void barrier(const CommunicationOptions&) override {
    const Post post = make(Kind::kBarrier, {}, kFloat32, 0, nullptr);
    group_.meet(rank_, post);
    group_.leave(rank_);
  }

 private:
  Post make(Kind kind, const Shape& shape, DType dtype, uint32_t op, const void* in) {
    return Post{internal::make_header(++calls_, kind, shape, dtype, op, rank_), in};
  }
  static std::size_t bytes(const Shape& shape, DType dtype) {
    return static_cast<std::size_t>(num_elements(shape)) * dtype_size(dtype);
  }
  LocalGroup& group_;
  int rank_;
  uint64_t calls_ = 0;
};

LocalGroup::LocalGroup(int ranks, std::chrono::milliseconds timeout, bool spin)
    : timeout_(timeout), spin_(spin), posts_(static_cast<std::size_t>(std::max(ranks, 0))) {
  WEFT_CHECK(ranks >= 1, InvalidArgument) << "LocalGroup: " << ranks << " ranks; at least 1";
  for (int r = 0; r < ranks; ++r) ranks_.push_back(std::make_unique<Rank>(*this, r));
}

LocalGroup::~LocalGroup() = default;

Communicator& LocalGroup::rank(int r) {
  WEFT_CHECK(r >= 0 && r < size(), InvalidArgument) << "LocalGroup: rank " << r << " of " << size();
  return *ranks_[static_cast<std::size_t>(r)];
}

void LocalGroup::meet(int rank, const Post& post) {
  std::unique_lock lock(mu_);
  posts_[static_cast<std::size_t>(rank)] = &post;
  wait_for_all(lock, rank, post.header.describe().c_str(), [&] {
    // The last rank to come judges whether the calls agree.
    verdict_.clear();
    for (int r = 1; r < size(); ++r) {
      if (!posts_[static_cast<std::size_t>(r)]->header.agrees(posts_[0]->header)) {
        verdict_ = internal::disagreement(posts_[0]->header,
                                          posts_[static_cast<std::size_t>(r)]->header, replica);
        break;
      }
    }
  });
  if (!verdict_.empty()) throw InvalidArgument(verdict_);
}

void LocalGroup::leave(int rank) {
  std::unique_lock lock(mu_);
  wait_for_all(lock, rank, "the end of a collective", [] {});
}

void LocalGroup::wait_for_all(std::unique_lock<std::mutex>& lock, int rank, const char* what,
                              const std::function<void()>& last) {
  WEFT_CHECK(failed_.empty(), FailedPrecondition) << failed_;
  here_.resize(posts_.size());
  here_[static_cast<std::size_t>(rank)] = true;
  if (++arrived_ == size()) {
    last();
    arrived_ = 0;
    std::fill(here_.begin(), here_.end(), false);
    ++generation_;
    cv_.notify_all();
    return;
  }
  const uint64_t generation = generation_;
  if (spin_) {
    // Spinning, but yielding the core to any other thread that wants it, until the wait ends or
    // kSpinBeforeSleep passes; then the condition variable as usual.
    lock.unlock();
    const auto until = std::chrono::steady_clock::now() + kSpinBeforeSleep;
    while (generation_.load(std::memory_order_acquire) == generation &&
           std::chrono::steady_clock::now() < until) {
      sched_yield();
    }
    lock.lock();
  }
  if (cv_.wait_for(lock, timeout_, [&] { return generation_ != generation || !failed_.empty(); })) {
    WEFT_CHECK(failed_.empty(), FailedPrecondition) << failed_;
    return;
  }
  std::string missing;
  for (int r = 0; r < size(); ++r) {
    if (!here_[static_cast<std::size_t>(r)]) missing += (missing.empty() ? "" : ", ") + replica(r);
  }
  failed_ = "LocalGroup: " + replica(rank) + " waited " + std::to_string(timeout_.count()) +
            " ms in " + what + " for " + missing + ", which did not come";
  cv_.notify_all();
  throw DeadlineExceeded(failed_);
}

}  // namespace weft::distribute::collective
