// TcpCommunicator's state and its algorithms, one per file beside it (as Gloo lays its own out):
// communicator.cc (set-up, agreement, failures, the transfers every algorithm makes, all-gather,
// barrier), recursive_doubling.cc, ring.cc, reduce_scatter.cc, broadcast.cc, all_to_all.cc,
// shared_memory.cc, and gloo.cc (Gloo's own algorithms: the only file that includes Gloo).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "weft/distribute/collective/internal/call_header.h"
#include "weft/distribute/collective/internal/trace.h"
#include "weft/distribute/collective/tcp/communicator.h"
#include "weft/distribute/collective/tcp/internal/shared_memory.h"
#include "weft/distribute/collective/tcp/internal/socket_mesh.h"

namespace weft::distribute::collective {

class TcpCommunicator::Impl {
 public:
  using Header = internal::Header;
  using Kind = internal::Kind;
  using milliseconds = std::chrono::milliseconds;
  using Clock = std::chrono::steady_clock;

  Impl(coordination::CoordinationClient& client, std::vector<std::string> tasks, int rank,
       const std::string& hostname, const std::string& token, const TcpOptions& options);

  int size() const { return static_cast<int>(tasks_.size()); }
  int rank() const { return rank_; }
  uint64_t calls() const { return sequence_.load(); }
  const std::string& task(int r) const { return tasks_[static_cast<size_t>(r)]; }

  // The ranks whose color is this rank's, as a communicator of their own (MPI_Comm_split).
  std::unique_ptr<Communicator> split(int color, const CommunicationOptions& options);
  Implementation auto_implementation(std::size_t bytes) const;

  // `in`'s concatenation reduced into `data` (which `in` may be), by the algorithm the options
  // and op determinism choose.
  void all_reduce(std::span<const Piece> in, void* data, const Shape& shape, DType dtype,
                  Reduction op, const CommunicationOptions& options);
  void broadcast(void* data, const Shape& shape, DType dtype, int root,
                 const CommunicationOptions& options);
  void all_gather(const void* in, void* out, const Shape& shape, DType dtype,
                  const CommunicationOptions& options);
  void all_to_all(const void* in, void* out, const Shape& shape, DType dtype,
                  const CommunicationOptions& options);
  void reduce_scatter(const void* in, void* out, const Shape& shape, DType dtype, Reduction op,
                      const CommunicationOptions& options);
  void barrier(const CommunicationOptions& options);

 private:
  // Up to this size, all-reduces use recursive doubling (log2(P) full exchanges); larger ones
  // the ring. Measured with `weft bench allreduce` (docs/benchmarks.md).
  static constexpr std::size_t kRecursiveDoublingUpTo = std::size_t{256} << 10;

  // The cluster's failure, once the coordination client has learned of it.
  struct Failure {
    std::mutex mu;
    std::string text;
  };
  // Gloo's device and full mesh (gloo.cc), connected the first time a call asks for GLOO_*.
  struct Gloo;

  std::string failure() const {
    std::lock_guard lock(failure_->mu);
    return failure_->text;
  }
  Header header(Kind kind, const Shape& shape, DType dtype, uint32_t op) {
    return internal::make_header(++sequence_, kind, shape, dtype, op, rank_);
  }
  static std::string seen(const std::string& failure, const std::string& by,
                          const std::string& what) {
    return failure + " (seen by " + by + " in " + what + ")";
  }
  milliseconds wait_limit(const CommunicationOptions& options) const {
    if (options.timeout_seconds <= 0) return timeout_;
    return milliseconds(static_cast<int64_t>(options.timeout_seconds * 1000));
  }

  // Runs a collective's body: a failure the cluster already knows ends it first, and a
  // disagreement it finds is reported to every task.
  template <typename F>
  // Also the call's profiler events (internal/trace.h), naming `implementation`.
  void guarded(const Header& h, const char* implementation, F&& body) {
    internal::CollectiveTrace trace(name_, implementation);
    trace.call(h);
    if (std::string f = failure(); !f.empty()) {
      throw Unavailable(seen(f, task(rank_), h.describe()));
    }
    try {
      body();
    } catch (const weft::Error& e) {
      if (e.code() == ErrorCode::kInvalidArgument) client_.report_error(e.what());
      throw;
    }
  }
  // A peer is gone or silent. The coordination service usually knows why (its error, or that
  // its process died) a moment later: wait for that, briefly, and report it; else report what
  // the transport saw.
  [[noreturn]] void lost(const std::string& what, int peer, const std::string& transport);
  // One transfer on weft's own connections (SocketMesh::transfer), its errors turned into weft's.
  void transfer(int to, const void* send, std::size_t send_bytes, int from, void* recv,
                std::size_t recv_bytes, Clock::time_point deadline, const std::string& what);
  // A ring: in step k each rank passes the block it got in step k-1 to its right and receives
  // its left's.
  void gather_bytes(const void* in, void* out, std::size_t bytes, Clock::time_point deadline,
                    const std::string& what);
  // Every rank gathers every rank's header; all fail alike, naming the first rank that differs
  // from rank 0. It is also the barrier.
  void check_agreement(const Header& h, milliseconds timeout);
  [[noreturn]] void mismatch(const Header& a, const Header& b);

  // The all-reduce algorithms, on `data` in place (shared_memory reads the pieces itself).
  void recursive_doubling(const Header& h, void* data, std::size_t n, DType dtype, Reduction op,
                          milliseconds timeout);
  void ring(const Header& h, void* data, std::size_t n, DType dtype, Reduction op,
            milliseconds timeout);
  void shared_memory(const Header& h, std::span<const Piece> in, void* data, std::size_t n,
                     DType dtype, Reduction op, milliseconds timeout);
  // GLOO_RING or GLOO_HALVING_DOUBLING.
  void gloo(const Header& h, Implementation implementation, void* data, std::size_t n, DType dtype,
            Reduction op, milliseconds timeout);

  coordination::CoordinationClient& client_;
  std::vector<std::string> tasks_;
  int rank_;
  std::string hostname_;
  std::string name_;  // the prefix of this communicator's keys
  milliseconds timeout_;
  TcpOptions options_;          // what split() gives its communicators
  int splits_ = 0;              // split() calls so far (every rank makes the same)
  std::shared_ptr<Gloo> gloo_;  // once asked for
  std::shared_ptr<internal::SocketMesh> mesh_;
  std::shared_ptr<internal::SharedMemory> shm_;  // when every rank runs on this host
  std::shared_ptr<Failure> failure_ = std::make_shared<Failure>();
  std::mutex mu_;  // one collective at a time
  std::atomic<uint64_t> sequence_{0};
};

namespace internal {
inline bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }
}  // namespace internal

}  // namespace weft::distribute::collective
