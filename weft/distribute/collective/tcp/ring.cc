// TcpCommunicator's ring all-reduce.
#include "weft/distribute/collective/internal/reduce.h"
#include "weft/distribute/collective/tcp/internal/impl.h"
#include "weft/distribute/values.h"

namespace weft::distribute::collective {

// Reduce-scatter then all-gather around the ring (rank r sends to r + 1): block b of the result
// is combined by one rank, in ring order, and then copied to the others, so every rank gets
// the same bits. Each rank sends and combines 2 (P - 1) / P of the data.
void TcpCommunicator::Impl::ring(const Header& h, void* data, std::size_t n, DType dtype,
                                 Reduction op, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  if (size() == 1) return;
  const int right = (rank_ + 1) % size(), left = (rank_ + size() - 1) % size();
  // Neighbours compare their calls: when every pair of neighbours agrees, all ranks do.
  Header theirs;
  transfer(right, &h, sizeof(Header), left, &theirs, sizeof(Header), deadline, h.describe());
  internal::CollectiveTrace::arrived();
  if (!theirs.agrees(h)) mismatch(h, theirs);
  if (n == 0) return;
  const std::size_t es = dtype_size(dtype);
  char* bytes = static_cast<char*>(data);
  auto block = [&](int b) {
    auto [lo, hi] = row_range(static_cast<int64_t>(n), size(), (b % size() + size()) % size());
    return std::pair<std::size_t, std::size_t>(static_cast<std::size_t>(lo) * es,
                                               static_cast<std::size_t>(hi - lo));
  };
  std::vector<char> scratch(block(0).second * es + es);
  for (int k = 0; k + 1 < size(); ++k) {
    auto [send_at, send_n] = block(rank_ - k);
    auto [recv_at, recv_n] = block(rank_ - k - 1);
    transfer(right, bytes + send_at, send_n * es, left, scratch.data(), recv_n * es, deadline,
             h.describe());
    // The received partial holds the ranks before this one in ring order.
    internal::combine(bytes + recv_at, scratch.data(), bytes + recv_at, recv_n, dtype, op);
  }
  for (int k = 0; k + 1 < size(); ++k) {
    auto [send_at, send_n] = block(rank_ + 1 - k);
    auto [recv_at, recv_n] = block(rank_ - k);
    transfer(right, bytes + send_at, send_n * es, left, bytes + recv_at, recv_n * es, deadline,
             h.describe());
  }
}

}  // namespace weft::distribute::collective
