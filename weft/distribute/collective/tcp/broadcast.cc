// TcpCommunicator's broadcast: a binomial tree from the root.
#include "weft/core/errors.h"
#include "weft/distribute/collective/internal/reduce.h"
#include "weft/distribute/collective/tcp/internal/impl.h"

namespace weft::distribute::collective {

void TcpCommunicator::Impl::broadcast(void* data, const Shape& shape, DType dtype, int root,
                                      const CommunicationOptions& options) {
  internal::check_collective_dtype(dtype, "broadcast");
  WEFT_CHECK(root >= 0 && root < size(), InvalidArgument)
      << "broadcast: root " << root << " is not one of the " << size() << " ranks";
  std::lock_guard lock(mu_);
  Header h = header(Kind::kBroadcast, shape, dtype, static_cast<uint32_t>(root));
  std::size_t bytes = static_cast<std::size_t>(num_elements(shape)) * dtype_size(dtype);
  milliseconds timeout = wait_limit(options);
  guarded(h, "binomial_tree", [&] {
    check_agreement(h, timeout);
    if (size() == 1 || bytes == 0) return;
    // A binomial tree from the root: at distance d, the ranks that have the data (relative
    // rank below d) send it to relative rank + d.
    const int relative = (rank_ - root + size()) % size();
    auto deadline = Clock::now() + timeout;
    int d = 1;  // the distance at which this rank starts sending: 1 for the root
    if (relative > 0) {
      while (2 * d <= relative) d *= 2;  // it receives at distance d, from relative - d
      transfer(-1, nullptr, 0, (relative - d + root) % size(), data, bytes, deadline, h.describe());
      d *= 2;
    }
    for (; d < size(); d *= 2) {
      if (relative < d && relative + d < size()) {
        transfer((relative + d + root) % size(), data, bytes, -1, nullptr, 0, deadline,
                 h.describe());
      }
    }
  });
}

}  // namespace weft::distribute::collective
