#include "weft/distribute/collective/tcp/internal/shared_memory.h"

#include <fcntl.h>
#include <immintrin.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <random>
#include <thread>

#include "weft/core/errors.h"
#include "weft/distribute/collective/internal/reduce.h"
#include "weft/distribute/collective/internal/trace.h"

namespace weft::distribute::collective::internal {

// The head of a rank's segment; its two buffers follow.
struct alignas(64) SharedMemory::Control {
  std::atomic<uint64_t> ready;  // the last step whose data and header this rank has written
  char pad0[56];
  std::atomic<uint64_t> done;   // the last step this rank has finished reading everyone's data
  char pad1[56];
  std::atomic<uint64_t> reduced;  // the last step whose slice this rank has summed (split chunks)
  char pad2[56];
  char header[2][kHeaderBytes];  // per buffer
  char identity[64];             // random, written by the segment's rank
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared counters must be lock-free");

namespace {

using std::chrono::milliseconds;

std::string random_hex() {
  std::random_device device;
  char out[17];
  std::snprintf(out, sizeof(out), "%08x%08x", device(), device());
  return out;
}

std::string machine_identity() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(boot, id);
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  return id + "/" + host;
}

}  // namespace

bool all_on_one_host(coordination::CoordinationClient& client, int rank, int size,
                     const std::string& prefix, milliseconds timeout) {
  const std::string mine = machine_identity();
  client.insert_key_value(prefix + "/" + std::to_string(rank), mine);
  bool same = true;
  for (int r = 0; r < size; ++r) {
    same = client.get_key_value(prefix + "/" + std::to_string(r), timeout) == mine && same;
  }
  return same;
}

SharedMemory::Control* SharedMemory::control(int rank) const {
  return reinterpret_cast<Control*>(segments_[static_cast<size_t>(rank)]);
}

char* SharedMemory::buffer(int rank, int parity) const {
  return segments_[static_cast<size_t>(rank)] + sizeof(Control) +
         static_cast<std::size_t>(parity) * kChunkBytes;
}

SharedMemory::SharedMemory(coordination::CoordinationClient& client, int rank, int size,
                           const std::string& prefix, milliseconds timeout)
    : rank_(rank),
      size_(size),
      segments_(static_cast<size_t>(size), nullptr),
      segment_bytes_(sizeof(Control) + 2 * kChunkBytes) {
  static_assert(sizeof(Control) % 64 == 0);
  // This rank's segment, marked with a random identity: a peer that maps it and reads the same
  // identity shares this memory (in containers with /dev/shm of their own, a name is not found,
  // or is another segment).
  name_ = "/weft-" + random_hex() + "-" + std::to_string(rank);
  const std::string identity = random_hex() + random_hex();
  std::string why;  // why this rank cannot use shared memory; empty: it can
  int fd = ::shm_open(name_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  bool sized = fd >= 0 && ::ftruncate(fd, static_cast<off_t>(segment_bytes_)) == 0;
  void* mine = sized ? ::mmap(nullptr, segment_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                     : MAP_FAILED;
  if (mine == MAP_FAILED) {
    why = "rank " + std::to_string(rank) + " cannot create " + std::to_string(segment_bytes_) +
          " bytes of shared memory (" + std::strerror(errno) + "; is /dev/shm large enough?)";
  }
  if (fd >= 0) ::close(fd);
  if (fd >= 0 && !why.empty()) ::shm_unlink(name_.c_str());  // made, but not usable: no leftover
  if (why.empty()) {
    segments_[static_cast<size_t>(rank)] = static_cast<char*>(mine);
    auto* control = new (mine) Control{};
    std::snprintf(control->identity, sizeof(control->identity), "%s", identity.c_str());
  }
  client.insert_key_value(prefix + "/name/" + std::to_string(rank),
                          why.empty() ? name_ + " " + identity : "");
  for (int r = 0; r < size && why.empty(); ++r) {
    if (r == rank) continue;
    std::istringstream published(
        client.get_key_value(prefix + "/name/" + std::to_string(r), timeout));
    std::string name, theirs;
    if (!(published >> name >> theirs)) break;  // it could not create its own: it says why
    int peer = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
    void* p = peer >= 0 ? ::mmap(nullptr, segment_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED,
                                 peer, 0)
                        : MAP_FAILED;
    if (peer >= 0) ::close(peer);
    if (p == MAP_FAILED) {
      why = "rank " + std::to_string(rank) + " cannot map rank " + std::to_string(r) +
            "'s shared memory " + name + " (" + std::strerror(errno) + ")";
      break;
    }
    segments_[static_cast<size_t>(r)] = static_cast<char*>(p);
    if (theirs != reinterpret_cast<Control*>(p)->identity) {
      why = "rank " + std::to_string(rank) + " found another segment under rank " +
            std::to_string(r) + "'s name " + name + " (its /dev/shm is not this one)";
    }
  }
  // Every rank says whether it mapped every segment; all use shared memory only if all did.
  // Then the names can go: nothing is left in /dev/shm, even if a process is killed later.
  client.insert_key_value(prefix + "/mapped/" + std::to_string(rank), why.empty() ? "ok" : why);
  for (int r = 0; r < size; ++r) {
    std::string said = client.get_key_value(prefix + "/mapped/" + std::to_string(r), timeout);
    if (said != "ok" && unavailable_.empty()) unavailable_ = said;
  }
  if (segments_[static_cast<size_t>(rank)] != nullptr) ::shm_unlink(name_.c_str());
}

SharedMemory::~SharedMemory() {
  for (char* s : segments_) {
    if (s != nullptr) ::munmap(s, segment_bytes_);
  }
}

SharedMemory::Stalled SharedMemory::wait_for(int peer, const std::atomic<uint64_t>& counter,
                                             uint64_t value, Clock::time_point deadline) {
  for (uint64_t spins = 0;; ++spins) {
    if (counter.load(std::memory_order_acquire) >= value) return {Wait::kDone, peer};
    if (spins < 4096) {
      _mm_pause();
      continue;
    }
    if (aborted_.load(std::memory_order_acquire)) return {Wait::kAborted, peer};
    if ((spins & 255) == 0 && Clock::now() >= deadline) return {Wait::kTimedOut, peer};
    // Past a short spin, give the core away: a peer may be sharing it.
    if (spins < 65536) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

SharedMemory::Stalled SharedMemory::all_reduce(std::span<const Piece> in, void* data,
                                               std::size_t n, DType dtype, Reduction op,
                                               const void* header, int* mismatched_rank,
                                               void* their_header, void* rank0_header,
                                               Clock::time_point deadline) {
  *mismatched_rank = -1;
  const std::size_t es = dtype_size(dtype);
  const std::size_t per_chunk = kChunkBytes / es;
  char* out = static_cast<char*>(data);
  auto wait_all = [&](std::atomic<uint64_t> Control::*counter, uint64_t value) -> Stalled {
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      Stalled s = wait_for(r, control(r)->*counter, value, deadline);
      if (s.why != Wait::kDone) return s;
    }
    return {Wait::kDone, -1};
  };
  std::size_t offset = 0;
  bool first = true;
  while (first || offset < n) {
    const std::size_t count = std::min(per_chunk, n - offset);
    const uint64_t step = ++step_;
    const int parity = static_cast<int>(step & 1);
    char* mine = buffer(rank_, parity);
    // This buffer was last read at step - 2: every rank must be done with it.
    if (step > 2) {
      if (Stalled s = wait_all(&Control::done, step - 2); s.why != Wait::kDone) return s;
    }
    // Large chunks are split: rank r sums slice r of every rank's and the others copy it.
    const bool split = size_ > 1 && count * es >= kSplitBytes;
    // Slice q: elements [bound(q), bound(q + 1)) of the chunk, on 64-byte boundaries.
    auto bound = [&](int q) {
      const std::size_t align = 64 / es;
      return q == size_ ? count : count * static_cast<std::size_t>(q) / size_ / align * align;
    };
    if (split) {  // the slices the others sum; rank r's own is read where it lies
      for (int q = 0; q < size_; ++q) {
        if (q == rank_) continue;
        gather_pieces(in, offset + bound(q), bound(q + 1) - bound(q), es, mine + bound(q) * es);
      }
    } else {
      gather_pieces(in, offset, count, es, mine);
    }
    std::memcpy(control(rank_)->header[parity], header, kHeaderBytes);
    control(rank_)->ready.store(step, std::memory_order_release);
    if (first) CollectiveTrace::waiting();  // for the others' first chunks: the call's wait
    if (Stalled s = wait_all(&Control::ready, step); s.why != Wait::kDone) return s;
    CollectiveTrace::arrived();
    if (first) {
      const char* reference = control(0)->header[parity];
      for (int r = 1; r < size_; ++r) {
        if (std::memcmp(control(r)->header[parity], reference, kHeaderBytes) != 0) {
          *mismatched_rank = r;
          std::memcpy(their_header, control(r)->header[parity], kHeaderBytes);
          std::memcpy(rank0_header, reference, kHeaderBytes);
          return {Wait::kDone, r};
        }
      }
    }
    std::vector<const void*> level(static_cast<std::size_t>(size_));
    if (!split) {
      for (int r = 0; r < size_; ++r) level[static_cast<std::size_t>(r)] = buffer(r, parity);
      tree_combine_from(level, out + offset * es, count, dtype, op);
    } else {
      // This rank's slice, run by run of its pieces (a null run is zeros, put where the slice's
      // result will go), into `out` and then into the buffer for the others.
      const std::size_t lo = bound(rank_), hi = bound(rank_ + 1);
      std::size_t at = lo;
      for (const Piece& piece : cut_pieces(in, offset + lo, hi - lo, es)) {
        const char* own = static_cast<const char*>(piece.data);
        if (own == nullptr) {
          std::memset(mine + at * es, 0, piece.count * es);
          own = mine + at * es;
        }
        for (int r = 0; r < size_; ++r) {
          level[static_cast<std::size_t>(r)] = r == rank_ ? own : buffer(r, parity) + at * es;
        }
        tree_combine_from(level, out + (offset + at) * es, piece.count, dtype, op);
        at += piece.count;
      }
      std::memcpy(mine + lo * es, out + (offset + lo) * es, (hi - lo) * es);
      control(rank_)->reduced.store(step, std::memory_order_release);
      if (Stalled s = wait_all(&Control::reduced, step); s.why != Wait::kDone) return s;
      for (int q = 0; q < size_; ++q) {
        if (q == rank_) continue;
        std::memcpy(out + (offset + bound(q)) * es, buffer(q, parity) + bound(q) * es,
                    (bound(q + 1) - bound(q)) * es);
      }
    }
    control(rank_)->done.store(step, std::memory_order_release);
    offset += count;
    first = false;
  }
  return {Wait::kDone, -1};
}

}  // namespace weft::distribute::collective::internal
