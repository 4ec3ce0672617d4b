#include "weft/distribute/collective/tcp/communicator.h"

#include <cstring>
#include <thread>

#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/distribute/collective/internal/reduce.h"
#include "weft/distribute/collective/tcp/internal/impl.h"

namespace weft::distribute::collective {

TcpCommunicator::Impl::Impl(coordination::CoordinationClient& client,
                            std::vector<std::string> tasks, int rank, const std::string& hostname,
                            const std::string& token, const TcpOptions& options)
    : client_(client),
      tasks_(std::move(tasks)),
      rank_(rank),
      hostname_(hostname),
      name_(options.name),
      timeout_(options.timeout),
      options_(options) {
  WEFT_CHECK(rank_ >= 0 && rank_ < static_cast<int>(tasks_.size()), InvalidArgument)
      << "TcpCommunicator: rank " << rank_ << " is not one of the " << tasks_.size() << " ranks";
  const bool any_port = options.first_port == 0 && options.last_port == 0;
  WEFT_CHECK(any_port || (options.first_port >= 1 && options.first_port <= options.last_port &&
                          options.last_port <= 65535),
             InvalidArgument)
      << "TcpCommunicator: the data-plane ports " << options.first_port << "-" << options.last_port
      << " are not a range of ports (1-65535, first <= last)";
  // The rendezvous waits for every rank up to the start-up timeout (tasks may start minutes
  // apart).
  const milliseconds startup =
      options.startup_timeout.count() > 0 ? options.startup_timeout : options.timeout;
  try {
    mesh_ = std::make_shared<internal::SocketMesh>(
        client_, rank_, size(), hostname, token, name_ + "/weft", startup,
        internal::SocketMesh::PortRange{options.first_port, options.last_port});
  } catch (const Unavailable& e) {
    std::string ranks;
    for (int r = 0; r < size(); ++r) {
      ranks += (r ? ", " : "") + task(r) + " is rank " + std::to_string(r);
    }
    throw Unavailable(e.message() + " (" + ranks + ")");
  }
  if (size() > 1 && internal::all_on_one_host(client_, rank_, size(), name_ + "/host", startup)) {
    auto shm =
        std::make_shared<internal::SharedMemory>(client_, rank_, size(), name_ + "/shm", startup);
    if (shm->unavailable().empty()) shm_ = std::move(shm);  // else TCP, on every rank
  }
  // When any task fails, end this rank's waits at once instead of at their deadline.
  std::weak_ptr<internal::SocketMesh> mesh = mesh_;
  std::weak_ptr<internal::SharedMemory> shm = shm_;
  auto failure = failure_;
  client_.on_failure([mesh, shm, failure](const std::string& why) {
    {
      std::lock_guard lock(failure->mu);
      failure->text = why;
    }
    if (auto m = mesh.lock()) m->abort();
    if (auto s = shm.lock()) s->abort();
  });
}

// The ranks whose color is this rank's, as a communicator of their own (MPI_Comm_split).
std::unique_ptr<Communicator> TcpCommunicator::Impl::split(int color,
                                                           const CommunicationOptions& options) {
  std::vector<int64_t> colors(tasks_.size());
  const int64_t mine = color;
  all_gather(&mine, colors.data(), Shape{1}, kInt64, options);
  std::vector<std::string> members;
  int index = 0;
  for (int r = 0; r < size(); ++r) {
    if (colors[static_cast<size_t>(r)] != color) continue;
    if (r == rank_) index = static_cast<int>(members.size());
    members.push_back(task(r));
  }
  TcpOptions sub = options_;
  sub.name = name_ + "/split" + std::to_string(splits_++) + "/" + std::to_string(color);
  return std::make_unique<TcpCommunicator>(client_, std::move(members), index, hostname_, sub);
}

Implementation TcpCommunicator::Impl::auto_implementation(std::size_t bytes) const {
  // Measured with `weft bench allreduce` (docs/benchmarks.md, "All-reduce between processes").
  if (shm_) return Implementation::SHARED_MEMORY;
  if (size() <= 2 || internal::power_of_two(size())) {
    return bytes <= kRecursiveDoublingUpTo ? Implementation::RECURSIVE_DOUBLING
                                           : Implementation::RING;
  }
  return Implementation::RING;
}

void TcpCommunicator::Impl::all_reduce(std::span<const Piece> in, void* data, const Shape& shape,
                                       DType dtype, Reduction op,
                                       const CommunicationOptions& options) {
  internal::check_collective_dtype(dtype, "all_reduce");
  std::lock_guard lock(mu_);
  Header h = header(Kind::kAllReduce, shape, dtype, static_cast<uint32_t>(op));
  std::size_t n = static_cast<std::size_t>(num_elements(shape));
  std::size_t bytes = n * dtype_size(dtype);
  Implementation impl = options.implementation;
  if (impl == Implementation::AUTO || (impl == Implementation::SHARED_MEMORY && !shm_)) {
    impl = auto_implementation(bytes);
  }
  // The fixed tree under op determinism (DISTRIBUTED.md §2): recursive doubling or shared
  // memory; with two ranks every algorithm adds the same two values.
  if (config::op_determinism_enabled() && size() > 2 && impl != Implementation::SHARED_MEMORY) {
    impl = Implementation::RECURSIVE_DOUBLING;
  }
  if (impl == Implementation::GLOO_HALVING_DOUBLING && (dtype == kFloat16 || dtype == kBFloat16)) {
    impl = Implementation::GLOO_RING;
  }
  milliseconds timeout = wait_limit(options);
  guarded(h, implementation_name(impl), [&] {
    if (impl == Implementation::SHARED_MEMORY) {  // reads `in` itself
      shared_memory(h, in, data, n, dtype, op, timeout);
      return;
    }
    internal::gather_pieces(in, 0, n, dtype_size(dtype), data);
    if (impl == Implementation::RECURSIVE_DOUBLING) {
      recursive_doubling(h, data, n, dtype, op, timeout);
      return;
    }
    if (impl == Implementation::RING) {
      ring(h, data, n, dtype, op, timeout);
      return;
    }
    gloo(h, impl, data, n, dtype, op, timeout);
  });
  if (op == Reduction::MEAN) internal::divide(data, n, dtype, size());
}

void TcpCommunicator::Impl::all_gather(const void* in, void* out, const Shape& shape, DType dtype,
                                       const CommunicationOptions& options) {
  internal::check_collective_dtype(dtype, "all_gather");
  std::lock_guard lock(mu_);
  Header h = header(Kind::kAllGather, shape, dtype, 0);
  std::size_t bytes = static_cast<std::size_t>(num_elements(shape)) * dtype_size(dtype);
  milliseconds timeout = wait_limit(options);
  guarded(h, "ring", [&] {
    check_agreement(h, timeout);
    if (bytes == 0) return;
    if (size() == 1) {
      std::memcpy(out, in, bytes);
      return;
    }
    gather_bytes(in, out, bytes, Clock::now() + timeout, h.describe());
  });
}

void TcpCommunicator::Impl::barrier(const CommunicationOptions& options) {
  std::lock_guard lock(mu_);
  Header h = header(Kind::kBarrier, {}, kFloat32, 0);
  milliseconds timeout = wait_limit(options);
  guarded(h, "ring", [&] { check_agreement(h, timeout); });
}

void TcpCommunicator::Impl::lost(const std::string& what, int peer, const std::string& transport) {
  if (peer < 0 && size() == 2) peer = 1 - rank_;  // Gloo's messages do not name the peer
  bool timed_out = transport.find("Timed out") != std::string::npos ||
                   transport.find("timed out") != std::string::npos;
  // A stopped peer is only ever noticed by a deadline: nothing better is coming.
  auto until = Clock::now() + milliseconds(timed_out ? 0 : 2000);
  std::string failure;
  while ((failure = client_.failure()).empty() && Clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  if (!failure.empty()) throw Unavailable(seen(failure, task(rank_), what));
  std::string who = peer >= 0 ? task(peer) + " (rank " + std::to_string(peer) + ")" : "a peer";
  std::string message = task(rank_) + ": " + what +
                        (timed_out ? " timed out waiting for " : " lost ") + who + ": " + transport;
  client_.report_error(message);
  if (timed_out) throw DeadlineExceeded(message);
  throw Unavailable(message);
}

void TcpCommunicator::Impl::transfer(int to, const void* send, std::size_t send_bytes, int from,
                                     void* recv, std::size_t recv_bytes, Clock::time_point deadline,
                                     const std::string& what) {
  try {
    mesh_->transfer(to, send, send_bytes, from, recv, recv_bytes, deadline);
  } catch (const internal::TransferError& e) {
    if (e.kind == internal::TransferError::kAborted) {
      throw Unavailable(seen(failure(), task(rank_), what));
    }
    lost(what, e.peer,
         e.kind == internal::TransferError::kTimedOut
             ? "timed out: its deadline (the timeout_seconds of the call) passed"
             : std::string(e.what()));
  }
}

void TcpCommunicator::Impl::gather_bytes(const void* in, void* out, std::size_t bytes,
                                         Clock::time_point deadline, const std::string& what) {
  char* blocks = static_cast<char*>(out);
  std::memcpy(blocks + rank_ * bytes, in, bytes);
  const int right = (rank_ + 1) % size(), left = (rank_ + size() - 1) % size();
  for (int k = 0; k + 1 < size(); ++k) {
    int send_block = (rank_ - k + size()) % size();
    int recv_block = (rank_ - k - 1 + 2 * size()) % size();
    transfer(right, blocks + send_block * bytes, bytes, left, blocks + recv_block * bytes, bytes,
             deadline, what);
  }
}

void TcpCommunicator::Impl::check_agreement(const Header& h, milliseconds timeout) {
  if (size() == 1) return;
  std::vector<Header> all(size());
  gather_bytes(&h, all.data(), sizeof(Header), Clock::now() + timeout, h.describe());
  internal::CollectiveTrace::arrived();
  for (int r = 1; r < size(); ++r) {
    if (!all[r].agrees(all[0])) mismatch(all[0], all[r]);
  }
}

void TcpCommunicator::Impl::mismatch(const Header& a, const Header& b) {
  throw InvalidArgument(internal::disagreement(a, b, [&](int r) { return task(r); }));
}

TcpCommunicator::TcpCommunicator(coordination::CoordinationClient& client,
                                 std::vector<std::string> tasks, int rank,
                                 const std::string& hostname, TcpOptions options)
    : impl_(std::make_unique<Impl>(client, std::move(tasks), rank, hostname, client.options().token,
                                   options)) {}
TcpCommunicator::~TcpCommunicator() = default;
int TcpCommunicator::rank() const { return impl_->rank(); }
uint64_t TcpCommunicator::calls() const { return impl_->calls(); }
std::string TcpCommunicator::transport() const {
  return impl_->auto_implementation(0) == Implementation::SHARED_MEMORY ? "shared_memory" : "tcp";
}
int TcpCommunicator::size() const { return impl_->size(); }
std::string TcpCommunicator::task_of(int rank) const { return impl_->task(rank); }
void TcpCommunicator::all_reduce(void* data, const Shape& shape, DType dtype, Reduction op,
                                 const CommunicationOptions& options) {
  const Piece whole{data, static_cast<std::size_t>(num_elements(shape))};
  impl_->all_reduce({&whole, 1}, data, shape, dtype, op, options);
}
void TcpCommunicator::all_reduce_gathered(std::span<const Piece> pieces, void* out,
                                          const Shape& shape, DType dtype, Reduction op,
                                          const CommunicationOptions& options) {
  impl_->all_reduce(pieces, out, shape, dtype, op, options);
}
void TcpCommunicator::broadcast(void* data, const Shape& shape, DType dtype, int root,
                                const CommunicationOptions& options) {
  impl_->broadcast(data, shape, dtype, root, options);
}
void TcpCommunicator::all_gather(const void* in, void* out, const Shape& shape, DType dtype,
                                 const CommunicationOptions& options) {
  impl_->all_gather(in, out, shape, dtype, options);
}
void TcpCommunicator::reduce_scatter(const void* in, void* out, const Shape& shape, DType dtype,
                                     Reduction op, const CommunicationOptions& options) {
  impl_->reduce_scatter(in, out, shape, dtype, op, options);
}
void TcpCommunicator::all_to_all(const void* in, void* out, const Shape& shape, DType dtype,
                                 const CommunicationOptions& options) {
  impl_->all_to_all(in, out, shape, dtype, options);
}
void TcpCommunicator::barrier(const CommunicationOptions& options) { impl_->barrier(options); }
std::unique_ptr<Communicator> TcpCommunicator::split(int color,
                                                     const CommunicationOptions& options) {
  return impl_->split(color, options);
}
Implementation TcpCommunicator::auto_implementation(std::size_t bytes) const {
  return impl_->auto_implementation(bytes);
}

}  // namespace weft::distribute::collective
