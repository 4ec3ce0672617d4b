// TcpCommunicator's reduce-scatter: the first half of the ring.
#include <cstring>

#include "weft/distribute/collective/internal/reduce.h"
#include "weft/distribute/collective/tcp/internal/impl.h"

namespace weft::distribute::collective {

// The first half of `ring`: block b of `in` (n elements each) is passed around the ring, each
// rank combining its own block b into it, and ends, reduced over every rank, at rank b. Each
// rank sends and combines (P - 1) / P of the data, not an all-reduce of the whole.
void TcpCommunicator::Impl::reduce_scatter(const void* in, void* out, const Shape& shape,
                                           DType dtype, Reduction op,
                                           const CommunicationOptions& options) {
  internal::check_collective_dtype(dtype, "reduce_scatter");
  std::lock_guard lock(mu_);
  Header h = header(Kind::kReduceScatter, shape, dtype, static_cast<uint32_t>(op));
  const std::size_t n = static_cast<std::size_t>(num_elements(shape));
  const std::size_t bytes = n * dtype_size(dtype);
  milliseconds timeout = wait_limit(options);
  guarded(h, "ring", [&] {
    check_agreement(h, timeout);
    const char* blocks = static_cast<const char*>(in);
    auto own = [&](int b) {
      return blocks + static_cast<std::size_t>((b % size() + size()) % size()) * bytes;
    };
    std::vector<char> partial(own(rank_ - 1), own(rank_ - 1) + bytes), received(bytes);
    const int right = (rank_ + 1) % size(), left = (rank_ + size() - 1) % size();
    auto deadline = Clock::now() + timeout;
    // Step k receives block rank - k - 2 combined over the ranks before this one in ring
    // order, adds this rank's, and passes it on; the last step's is block rank, complete.
    for (int k = 0; k + 1 < size() && bytes > 0; ++k) {
      transfer(right, partial.data(), bytes, left, received.data(), bytes, deadline, h.describe());
      internal::combine(partial.data(), received.data(), own(rank_ - k - 2), n, dtype, op);
    }
    std::memcpy(out, partial.data(), bytes);
    if (op == Reduction::MEAN) internal::divide(out, n, dtype, size());
  });
}

}  // namespace weft::distribute::collective
