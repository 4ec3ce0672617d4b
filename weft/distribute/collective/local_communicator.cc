#include "weft/distribute/collective/local_communicator.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "weft/core/errors.h"
#include "weft/distribute/collective/internal/call_header.h"
#include "weft/distribute/collective/internal/reduce.h"

namespace weft::distribute::collective {

using internal::Header;
using internal::Kind;

// What a rank brings to a call: its header and its input (it lives until the rank leaves).
struct LocalGroup::Post {
  Header header;
  const void* in = nullptr;
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
                  const CommunicationOptions&) override {
    internal::check_collective_dtype(dtype, "all_reduce");
    const Post post = make(Kind::kAllReduce, shape, dtype, static_cast<uint32_t>(op), data);
    const std::size_t n = static_cast<std::size_t>(num_elements(shape)), es = dtype_size(dtype);
    group_.meet(rank_, post, n * es);
    // This rank reduces its chunk of the elements into the group's result, every chunk in the
    // same tree; then each rank copies the whole result.
    const std::size_t chunk = (n + size() - 1) / size();
    const std::size_t lo = std::min(n, rank_ * chunk), count = std::min(n, lo + chunk) - lo;
    if (count > 0) {
      std::vector<char> terms(static_cast<std::size_t>(size()) * count * es);
      for (int s = 0; s < size(); ++s) {
        std::memcpy(terms.data() + s * count * es,
                    static_cast<const char*>(group_.posts_[s]->in) + lo * es, count * es);
      }
      internal::tree_combine(terms.data(), count * es, size(), count, dtype, op);
      if (op == Reduction::MEAN) internal::divide(terms.data(), count, dtype, size());
      std::memcpy(group_.result_.data() + lo * es, terms.data(), count * es);
    }
    group_.leave(rank_);
    std::memcpy(data, group_.result_.data(), n * es);
    group_.leave(rank_);
  }
  void broadcast(void* data, const Shape& shape, DType dtype, int root,
                 const CommunicationOptions&) override {
    internal::check_collective_dtype(dtype, "broadcast");
    WEFT_CHECK(root >= 0 && root < size(), InvalidArgument)
        << "broadcast: root " << root << " is not one of the " << size() << " ranks";
    const Post post = make(Kind::kBroadcast, shape, dtype, static_cast<uint32_t>(root), data);
    group_.meet(rank_, post, 0);
    if (rank_ != root) std::memcpy(data, group_.posts_[root]->in, bytes(shape, dtype));
    group_.leave(rank_);
  }
  void all_gather(const void* in, void* out, const Shape& shape, DType dtype,
                  const CommunicationOptions&) override {
    internal::check_collective_dtype(dtype, "all_gather");
    const Post post = make(Kind::kAllGather, shape, dtype, 0, in);
    group_.meet(rank_, post, 0);
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
    group_.meet(rank_, post, 0);
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
    group_.meet(rank_, post, 0);
    const std::size_t b = bytes(shape, dtype);
    for (int s = 0; s < size(); ++s) {
      std::memcpy(static_cast<char*>(out) + s * b,
                  static_cast<const char*>(group_.posts_[s]->in) + rank_ * b, b);
    }
    group_.leave(rank_);
  }
  void barrier(const CommunicationOptions&) override {
    const Post post = make(Kind::kBarrier, {}, kFloat32, 0, nullptr);
    group_.meet(rank_, post, 0);
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

LocalGroup::LocalGroup(int ranks, std::chrono::milliseconds timeout)
    : timeout_(timeout), posts_(static_cast<std::size_t>(std::max(ranks, 0))) {
  WEFT_CHECK(ranks >= 1, InvalidArgument) << "LocalGroup: " << ranks << " ranks; at least 1";
  for (int r = 0; r < ranks; ++r) ranks_.push_back(std::make_unique<Rank>(*this, r));
}

LocalGroup::~LocalGroup() = default;

Communicator& LocalGroup::rank(int r) {
  WEFT_CHECK(r >= 0 && r < size(), InvalidArgument) << "LocalGroup: rank " << r << " of " << size();
  return *ranks_[static_cast<std::size_t>(r)];
}

void LocalGroup::meet(int rank, const Post& post, std::size_t result_bytes) {
  std::unique_lock lock(mu_);
  posts_[static_cast<std::size_t>(rank)] = &post;
  wait_for_all(lock, rank, post.header.describe().c_str(), [&] {
    // The last rank to come: size the result, then judge whether the calls agree.
    if (result_.size() < result_bytes) result_.resize(result_bytes);
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
