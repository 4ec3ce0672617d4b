#include "weft/distribute/collective/tcp_communicator.h"

#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>

#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/distribute/collective/internal/call_header.h"
#include "weft/distribute/collective/internal/reduce.h"
#include "weft/distribute/collective/internal/shared_memory.h"
#include "weft/distribute/collective/internal/socket_mesh.h"
#include "weft/distribute/values.h"

namespace weft::distribute::collective {
namespace {

using internal::Header;
using internal::Kind;

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// Gloo's rendezvous store over the coordination service's key-value store.
class CoordinationStore : public gloo::rendezvous::Store {
 public:
  CoordinationStore(coordination::CoordinationClient& client, std::string prefix,
                    milliseconds timeout)
      : client_(client), prefix_(std::move(prefix)), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    client_.insert_key_value(prefix_ + key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    std::string v = client_.get_key_value(prefix_ + key, timeout_);
    return {v.begin(), v.end()};
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const milliseconds& timeout) override {
    for (const auto& k : keys) client_.get_key_value(prefix_ + k, timeout);
  }

 private:
  coordination::CoordinationClient& client_;
  std::string prefix_;
  milliseconds timeout_;
};

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

template <typename T>
void run_halving_doubling(const std::shared_ptr<gloo::Context>& context, void* data,
                          std::size_t n, Reduction op) {
  const gloo::ReductionFunction<T>* fn = gloo::ReductionFunction<T>::sum;
  if (op == Reduction::MAX) fn = gloo::ReductionFunction<T>::max;
  if (op == Reduction::MIN) fn = gloo::ReductionFunction<T>::min;
  gloo::AllreduceHalvingDoubling<T> algorithm(context, {static_cast<T*>(data)},
                                              static_cast<int>(n), fn);
  algorithm.run();
}

}  // namespace

class TcpCommunicator::Impl {
 public:
  Impl(coordination::CoordinationClient& client, std::vector<std::string> tasks, int rank,
       const std::string& hostname, const std::string& token, const TcpOptions& options)
      : client_(client), tasks_(std::move(tasks)), rank_(rank), hostname_(hostname),
        name_(options.name), timeout_(options.timeout), options_(options) {
    WEFT_CHECK(rank_ >= 0 && rank_ < static_cast<int>(tasks_.size()), InvalidArgument)
        << "TcpCommunicator: rank " << rank_ << " is not one of the " << tasks_.size()
        << " ranks";
    const bool any_port = options.first_port == 0 && options.last_port == 0;
    WEFT_CHECK(any_port || (options.first_port >= 1 && options.first_port <= options.last_port &&
                            options.last_port <= 65535),
               InvalidArgument)
        << "TcpCommunicator: the data-plane ports " << options.first_port << "-"
        << options.last_port << " are not a range of ports (1-65535, first <= last)";
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
      auto shm = std::make_shared<internal::SharedMemory>(client_, rank_, size(),
                                                          name_ + "/shm", startup);
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

  int size() const { return static_cast<int>(tasks_.size()); }
  int rank() const { return rank_; }

  // The ranks whose color is this rank's, as a communicator of their own (MPI_Comm_split).
  std::unique_ptr<Communicator> split(int color, const CommunicationOptions& options) {
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
  uint64_t calls() const { return sequence_.load(); }
  const std::string& task(int r) const { return tasks_[static_cast<size_t>(r)]; }

  Implementation auto_implementation(std::size_t bytes) const {
    // Measured with `weft bench allreduce` (docs/benchmarks.md, "All-reduce between processes").
    if (shm_) return Implementation::SHARED_MEMORY;
    if (size() <= 2 || power_of_two(size())) {
      return bytes <= kRecursiveDoublingUpTo ? Implementation::RECURSIVE_DOUBLING
                                             : Implementation::RING;
    }
    return Implementation::RING;
  }

  // `in`'s concatenation reduced into `data` (which `in` may be).
  void all_reduce(std::span<const Piece> in, void* data, const Shape& shape, DType dtype,
                  Reduction op, const CommunicationOptions& options) {
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
    if (impl == Implementation::GLOO_HALVING_DOUBLING &&
        (dtype == kFloat16 || dtype == kBFloat16)) {
      impl = Implementation::GLOO_RING;
    }
    milliseconds timeout = wait_limit(options);
    guarded(h, [&] {
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
      check_agreement(h, timeout);
      if (size() == 1 || n == 0) return;
      const auto& context = gloo_context(timeout);
      if (impl == Implementation::GLOO_RING) {
        gloo::AllreduceOptions o(context);
        o.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
        set_output(o, data, n, dtype);
        o.setReduceFunction([dtype, op](void* out, const void* a, const void* b, size_t count) {
          internal::combine(out, a, b, count, dtype, op);
        });
        o.setTag(tag(h));
        o.setTimeout(timeout);
        gloo::allreduce(o);
      } else {
        switch (dtype) {
          case kFloat32: run_halving_doubling<float>(context, data, n, op); break;
          case kFloat64: run_halving_doubling<double>(context, data, n, op); break;
          case kInt32: run_halving_doubling<int32_t>(context, data, n, op); break;
          default: run_halving_doubling<int64_t>(context, data, n, op); break;
        }
      }
    });
    if (op == Reduction::MEAN) internal::divide(data, n, dtype, size());
  }

  void broadcast(void* data, const Shape& shape, DType dtype, int root,
                 const CommunicationOptions& options) {
    internal::check_collective_dtype(dtype, "broadcast");
    WEFT_CHECK(root >= 0 && root < size(), InvalidArgument)
        << "broadcast: root " << root << " is not one of the " << size() << " ranks";
    std::lock_guard lock(mu_);
    Header h = header(Kind::kBroadcast, shape, dtype, static_cast<uint32_t>(root));
    std::size_t bytes = static_cast<std::size_t>(num_elements(shape)) * dtype_size(dtype);
    milliseconds timeout = wait_limit(options);
    guarded(h, [&] {
      check_agreement(h, timeout);
      if (size() == 1 || bytes == 0) return;
      // A binomial tree from the root: at distance d, the ranks that have the data (relative
      // rank below d) send it to relative rank + d.
      const int relative = (rank_ - root + size()) % size();
      auto deadline = Clock::now() + timeout;
      int d = 1;  // the distance at which this rank starts sending: 1 for the root
      if (relative > 0) {
        while (2 * d <= relative) d *= 2;  // it receives at distance d, from relative - d
        transfer(-1, nullptr, 0, (relative - d + root) % size(), data, bytes, deadline,
                 h.describe());
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

  void all_gather(const void* in, void* out, const Shape& shape, DType dtype,
                  const CommunicationOptions& options) {
    internal::check_collective_dtype(dtype, "all_gather");
    std::lock_guard lock(mu_);
    Header h = header(Kind::kAllGather, shape, dtype, 0);
    std::size_t bytes = static_cast<std::size_t>(num_elements(shape)) * dtype_size(dtype);
    milliseconds timeout = wait_limit(options);
    guarded(h, [&] {
      check_agreement(h, timeout);
      if (bytes == 0) return;
      if (size() == 1) {
        std::memcpy(out, in, bytes);
        return;
      }
      gather_bytes(in, out, bytes, Clock::now() + timeout, h.describe());
    });
  }

  // Pairwise: at step k = 1 .. P - 1 each rank sends its block for rank + k and receives the
  // block of rank - k, so every pair exchanges once and each rank sends (P - 1) / P of `in`.
  void all_to_all(const void* in, void* out, const Shape& shape, DType dtype,
                  const CommunicationOptions& options) {
    internal::check_collective_dtype(dtype, "all_to_all");
    std::lock_guard lock(mu_);
    Header h = header(Kind::kAllToAll, shape, dtype, 0);
    const std::size_t bytes = static_cast<std::size_t>(num_elements(shape)) * dtype_size(dtype);
    milliseconds timeout = wait_limit(options);
    guarded(h, [&] {
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

  // The first half of `ring`: block b of `in` (n elements each) is passed around the ring, each
  // rank combining its own block b into it, and ends, reduced over every rank, at rank b. Each
  // rank sends and combines (P - 1) / P of the data, not an all-reduce of the whole.
  void reduce_scatter(const void* in, void* out, const Shape& shape, DType dtype, Reduction op,
                      const CommunicationOptions& options) {
    internal::check_collective_dtype(dtype, "reduce_scatter");
    std::lock_guard lock(mu_);
    Header h = header(Kind::kReduceScatter, shape, dtype, static_cast<uint32_t>(op));
    const std::size_t n = static_cast<std::size_t>(num_elements(shape));
    const std::size_t bytes = n * dtype_size(dtype);
    milliseconds timeout = wait_limit(options);
    guarded(h, [&] {
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
        transfer(right, partial.data(), bytes, left, received.data(), bytes, deadline,
                 h.describe());
        internal::combine(partial.data(), received.data(), own(rank_ - k - 2), n, dtype, op);
      }
      std::memcpy(out, partial.data(), bytes);
      if (op == Reduction::MEAN) internal::divide(out, n, dtype, size());
    });
  }

  void barrier(const CommunicationOptions& options) {
    std::lock_guard lock(mu_);
    Header h = header(Kind::kBarrier, {}, kFloat32, 0);
    milliseconds timeout = wait_limit(options);
    guarded(h, [&] { check_agreement(h, timeout); });
  }

 private:
  // Up to this size, all-reduces use recursive doubling (log2(P) full exchanges); larger ones
  // Gloo's ring. Measured with `weft bench allreduce` (docs/benchmarks.md).
  static constexpr std::size_t kRecursiveDoublingUpTo = std::size_t{256} << 10;

  // The cluster's failure, once the coordination client has learned of it.
  struct Failure {
    std::mutex mu;
    std::string text;
  };
  std::string failure() const {
    std::lock_guard lock(failure_->mu);
    return failure_->text;
  }

  Header header(Kind kind, const Shape& shape, DType dtype, uint32_t op) {
    return internal::make_header(++sequence_, kind, shape, dtype, op, rank_);
  }
  static uint32_t tag(const Header& h) { return static_cast<uint32_t>(h.sequence & 0x7fffffff); }
  static std::string seen(const std::string& failure, const std::string& by, const std::string& what) {
    return failure + " (seen by " + by + " in " + what + ")";
  }

  milliseconds wait_limit(const CommunicationOptions& options) const {
    if (options.timeout_seconds <= 0) return timeout_;
    return milliseconds(static_cast<int64_t>(options.timeout_seconds * 1000));
  }

  template <typename T>
  static void set_output(T& o, void* data, std::size_t n, DType dtype) {
    if (dtype_size(dtype) == 8) {
      o.template setOutput<int64_t>(static_cast<int64_t*>(data), n);
    } else if (dtype_size(dtype) == 4) {
      o.template setOutput<int32_t>(static_cast<int32_t*>(data), n);
    } else {
      o.template setOutput<int16_t>(static_cast<int16_t*>(data), n);
    }
  }

  // Gloo's full mesh, connected the first time a call asks for a GLOO_* implementation (every
  // rank has just agreed on that call; Gloo's connections do not prove the token).
  const std::shared_ptr<gloo::rendezvous::Context>& gloo_context(milliseconds timeout) {
    if (context_) return context_;
    gloo::transport::tcp::attr attr;
    attr.hostname = hostname_;
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
    } catch (const gloo::Exception& e) {
      WEFT_FAIL(Unavailable) << "TcpCommunicator: task " << task(rank_) << " cannot listen on "
                             << hostname_ << " for Gloo: " << e.what();
    }
    auto context = std::make_shared<gloo::rendezvous::Context>(rank_, size());
    context->setTimeout(timeout_);
    CoordinationStore store(client_, name_ + "/gloo/", timeout);
    try {
      context->connectFullMesh(store, device_);
    } catch (const weft::Error&) {
      throw;  // the store's errors already say what happened (a deadline, a failed task)
    } catch (const gloo::Exception& e) {
      lost("connecting Gloo's ranks", -1, e.what());
    }
    context_ = std::move(context);
    return context_;
  }

  // Runs a collective's body, turning what Gloo throws into weft's errors naming the peer.
  template <typename F>
  void guarded(const Header& h, F&& body) {
    if (std::string f = failure(); !f.empty()) throw Unavailable(seen(f, task(rank_), h.describe()));
    try {
      body();
    } catch (const weft::Error& e) {
      if (e.code() == ErrorCode::kInvalidArgument) client_.report_error(e.what());
      throw;
    } catch (const gloo::Exception& e) {
      lost(h.describe(), -1, e.what());
    }
  }

  // A peer is gone or silent. The coordination service usually knows why (its error, or that
  // its process died) a moment later: wait for that, briefly, and report it; else report what
  // the transport saw.
  [[noreturn]] void lost(const std::string& what, int peer, const std::string& transport) {
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
    std::string message = task(rank_) + ": " + what + (timed_out ? " timed out waiting for " :
                                                                   " lost ") + who + ": " + transport;
    client_.report_error(message);
    if (timed_out) throw DeadlineExceeded(message);
    throw Unavailable(message);
  }

  // One transfer on weft's own connections (SocketMesh::transfer), its errors turned into weft's.
  void transfer(int to, const void* send, std::size_t send_bytes, int from, void* recv,
                std::size_t recv_bytes, Clock::time_point deadline, const std::string& what) {
    try {
      mesh_->transfer(to, send, send_bytes, from, recv, recv_bytes, deadline);
    } catch (const internal::TransferError& e) {
      if (e.kind == internal::TransferError::kAborted) {
        throw Unavailable(seen(failure(), task(rank_), what));
      }
      lost(what, e.peer, e.kind == internal::TransferError::kTimedOut
                             ? "timed out: its deadline (the timeout_seconds of the call) passed"
                             : std::string(e.what()));
    }
  }

  // Recursive doubling: at distance d = 1, 2, 4, ... each rank exchanges its partial result with
  // rank ^ d and combines. Every rank ends with ((r0+r1)+(r2+r3))+... : the same bits everywhere,
  // the fixed tree of DISTRIBUTED.md §2. Ranks that are not a power of two: every rank gathers
  // every buffer and combines them in that tree itself.
  void recursive_doubling(const Header& h, void* data, std::size_t n, DType dtype, Reduction op,
                          milliseconds timeout) {
    const std::size_t bytes = n * dtype_size(dtype);
    if (!power_of_two(size())) {
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
      transfer(peer, &h, sizeof(Header), peer, &their_header, sizeof(Header), deadline,
               h.describe());
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

  // Through the shared memory of one host: the fixed tree of ranks, every rank the same bits.
  void shared_memory(const Header& h, std::span<const Piece> in, void* data, std::size_t n,
                     DType dtype, Reduction op, milliseconds timeout) {
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
      lost(h.describe(), stalled.peer, "timed out: its deadline (the timeout_seconds of the call) "
                                       "passed");
    }
  }

  // Reduce-scatter then all-gather around the ring (rank r sends to r + 1): block b of the result
  // is combined by one rank, in ring order, and then copied to the others, so every rank gets
  // the same bits. Each rank sends and combines 2 (P - 1) / P of the data.
  void ring(const Header& h, void* data, std::size_t n, DType dtype, Reduction op,
            milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    if (size() == 1) return;
    const int right = (rank_ + 1) % size(), left = (rank_ + size() - 1) % size();
    // Neighbours compare their calls: when every pair of neighbours agrees, all ranks do.
    Header theirs;
    transfer(right, &h, sizeof(Header), left, &theirs, sizeof(Header), deadline, h.describe());
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

  // A ring: in step k each rank passes the block it got in step k-1 to its right and receives
  // its left's. Slots `slot` ... `slot` + P - 2.
  // A ring: in step k each rank passes the block it got in step k-1 to its right and receives
  // its left's.
  void gather_bytes(const void* in, void* out, std::size_t bytes, Clock::time_point deadline,
                    const std::string& what) {
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

  // Every rank gathers every rank's header; all fail alike, naming the first rank that differs
  // from rank 0. It is also the barrier.
  void check_agreement(const Header& h, milliseconds timeout) {
    if (size() == 1) return;
    std::vector<Header> all(size());
    gather_bytes(&h, all.data(), sizeof(Header), Clock::now() + timeout, h.describe());
    for (int r = 1; r < size(); ++r) {
      if (!all[r].agrees(all[0])) mismatch(all[0], all[r]);
    }
  }

  [[noreturn]] void mismatch(const Header& a, const Header& b) {
    throw InvalidArgument(internal::disagreement(a, b, [&](int r) { return task(r); }));
  }

  coordination::CoordinationClient& client_;
  std::vector<std::string> tasks_;
  int rank_;
  std::string hostname_;
  std::string name_;  // the prefix of this communicator's keys
  milliseconds timeout_;
  TcpOptions options_;  // what split() gives its communicators
  int splits_ = 0;      // split() calls so far (every rank makes the same)
  std::shared_ptr<gloo::transport::Device> device_;            // Gloo's, once asked for
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::shared_ptr<internal::SocketMesh> mesh_;
  std::shared_ptr<internal::SharedMemory> shm_;  // when every rank runs on this host
  std::shared_ptr<Failure> failure_ = std::make_shared<Failure>();
  std::mutex mu_;  // one collective at a time
  std::atomic<uint64_t> sequence_{0};
};

TcpCommunicator::TcpCommunicator(coordination::CoordinationClient& client,
                                 std::vector<std::string> tasks, int rank,
                                 const std::string& hostname, TcpOptions options)
    : impl_(std::make_unique<Impl>(client, std::move(tasks), rank, hostname,
                                   client.options().token, options)) {}
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
