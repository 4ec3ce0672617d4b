// TcpCommunicator's recursive-doubling all-reduce (the fixed tree).
#include <cstring>

#include "weft/distribute/collective/internal/reduce.h"
#include "weft/distribute/collective/tcp/internal/impl.h"

namespace weft::distribute::collective {

// Recursive doubling: at distance d = 1, 2, 4, ... each rank exchanges its partial result with
// rank ^ d and combines. Every rank ends with ((r0+r1)+(r2+r3))+... : the same bits everywhere,
// the fixed tree of DISTRIBUTED.md §2. Ranks that are not a power of two: every rank gathers
// every buffer and combines them in that tree itself.
void TcpCommunicator::Impl::recursive_doubling(const Header& h, void* data, std::size_t n,
                                               DType dtype, Reduction op, milliseconds timeout) {
  const std::size_t bytes = n * dtype_size(dtype);
  if (!internal::power_of_two(size())) {
    check_agreement(h, timeout);
    std::vector<char> all(bytes * size());
    gather_bytes(data, all.data(), bytes, Clock::now() + timeout, h.describe());
    internal::tree_combine(all.data(), bytes, size(), n, dtype, op);
    std::memcpy(data, all.data(), bytes);
    return;
  }
  std::vector<char> theirs(bytes);
  auto deadline = Clock::now() + timeout;
  for (int d = 1; d < size(); d *= 2) {
    int peer = rank_ ^ d;
    Header their_header;
    transfer(peer, &h, sizeof(Header), peer, &their_header, sizeof(Header), deadline, h.describe());
    internal::CollectiveTrace::arrived();  // the first peer's header: the wait ends
    if (!their_header.agrees(h)) mismatch(h, their_header);
    if (bytes == 0) continue;
    transfer(peer, data, bytes, peer, theirs.data(), bytes, deadline, h.describe());
    // The lower rank's value on the left: addition is commutative, so this only fixes MAX/MIN
    // ties between -0 and +0 the same way on both sides.
    if (rank_ < peer) {
      internal::combine(data, data, theirs.data(), n, dtype, op);
    } else {
      internal::combine(data, theirs.data(), data, n, dtype, op);
    }
  }
}

}  // namespace weft::distribute::collective
