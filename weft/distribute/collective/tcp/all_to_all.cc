// TcpCommunicator's all-to-all: pairwise exchanges.
#include <cstring>

#include "weft/distribute/collective/internal/reduce.h"
#include "weft/distribute/collective/tcp/internal/impl.h"

namespace weft::distribute::collective {

// Pairwise: at step k = 1 .. P - 1 each rank sends its block for rank + k and receives the
// block of rank - k, so every pair exchanges once and each rank sends (P - 1) / P of `in`.
void TcpCommunicator::Impl::all_to_all(const void* in, void* out, const Shape& shape, DType dtype,
                                       const CommunicationOptions& options) {
  internal::check_collective_dtype(dtype, "all_to_all");
  std::lock_guard lock(mu_);
  Header h = header(Kind::kAllToAll, shape, dtype, 0);
  const std::size_t bytes = static_cast<std::size_t>(num_elements(shape)) * dtype_size(dtype);
  milliseconds timeout = wait_limit(options);
  guarded(h, "pairwise", [&] {
    check_agreement(h, timeout);
    const char* blocks = static_cast<const char*>(in);
    char* received = static_cast<char*>(out);
    std::memcpy(received + rank_ * bytes, blocks + rank_ * bytes, bytes);
    auto deadline = Clock::now() + timeout;
    for (int k = 1; k < size() && bytes > 0; ++k) {
      const int to = (rank_ + k) % size(), from = (rank_ - k + size()) % size();
      transfer(to, blocks + to * bytes, bytes, from, received + from * bytes, bytes, deadline,
               h.describe());
    }
  });
}

}  // namespace weft::distribute::collective
