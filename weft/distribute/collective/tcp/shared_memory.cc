// TcpCommunicator's all-reduce through the shared memory of one host.
#include "weft/distribute/collective/tcp/internal/impl.h"

namespace weft::distribute::collective {

// Through the shared memory of one host: the fixed tree of ranks, every rank the same bits.
void TcpCommunicator::Impl::shared_memory(const Header& h, std::span<const Piece> in, void* data,
                                          std::size_t n, DType dtype, Reduction op,
                                          milliseconds timeout) {
  Header mine = h, rank0, theirs;
  mine.rank = 0;  // the headers are compared byte for byte
  int mismatched = -1;
  auto stalled = shm_->all_reduce(in, data, n, dtype, op, &mine, &mismatched, &theirs, &rank0,
                                  Clock::now() + timeout);
  if (mismatched >= 0) {
    rank0.rank = 0;
    theirs.rank = mismatched;
    mismatch(rank0, theirs);
  }
  using Wait = internal::SharedMemory::Wait;
  if (stalled.why == Wait::kAborted) throw Unavailable(seen(failure(), task(rank_), h.describe()));
  if (stalled.why == Wait::kTimedOut) {
    lost(h.describe(), stalled.peer,
         "timed out: its deadline (the timeout_seconds of the call) "
         "passed");
  }
}

}  // namespace weft::distribute::collective
