// The same-host path of the collectives: every rank maps every other rank's segment of shared
// memory (POSIX shm, named through the coordination service), so a small all-reduce is one copy
// in, one wait, and a reduction read straight from the peers' memory (DeepSpeed's CPU all-reduce
// does the same; loopback TCP is the slow part of every path we measured), and a large one a
// reduce-scatter and an all-gather through it. Used when all ranks run on one host and every rank
// could map every other's segment.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/distribute/collective/communicator.h"
#include "weft/distribute/coordination/client.h"

namespace weft::distribute::collective::internal {

class SharedMemory {
 public:
  using Clock = std::chrono::steady_clock;
  // The bytes of a rank's buffer; larger messages go through it in chunks.
  static constexpr std::size_t kChunkBytes = std::size_t{8} << 20;
  static constexpr std::size_t kHeaderBytes = 96;
  // Chunks of at least this many bytes are split among the ranks (docs/benchmarks.md).
  static constexpr std::size_t kSplitBytes = std::size_t{64} << 10;

  // Creates this rank's segment, publishes its name under `prefix` and tries to map every other
  // rank's; every rank learns whether all of them could (through the key-value store).
  SharedMemory(coordination::CoordinationClient& client, int rank, int size,
               const std::string& prefix, std::chrono::milliseconds timeout);
  // Why the ranks cannot share memory (the first rank's reason), or empty when they can: ranks
  // with separate /dev/shm (containers with host networking) find that the others' segments
  // are missing or are not theirs.
  const std::string& unavailable() const { return unavailable_; }
  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  // What a wait ended with.
  enum class Wait { kDone, kTimedOut, kAborted };
  struct Stalled {
    Wait why;
    int peer;  // the rank waited for
  };

  // Every rank's n elements, the concatenation of its `in` (read straight into shared memory),
  // combined in the fixed tree of ranks ((r0+r1)+(r2+r3)) into `out`, the same bits on every
  // rank; a piece of `in` may lie in `out` where it goes. A chunk of kSplitBytes or more is
  // split into one slice per rank: each rank copies in only the slices the others sum, sums its
  // own, and copies the others' sums (with two ranks, 4 n bytes moved per rank where summing
  // everything moves 5 n). `header` (kHeaderBytes) is compared with every rank's
  // first: on a mismatch *mismatched_rank is set to the first rank whose header differs from
  // rank 0's and its header copied to *their_header. Returns kDone, or why and for whom it
  // stopped waiting.
  Stalled all_reduce(std::span<const Piece> in, void* out, std::size_t n, DType dtype,
                     Reduction op, const void* header, int* mismatched_rank, void* their_header,
                     void* rank0_header, Clock::time_point deadline);
  // Ends every wait in progress and every later one (any thread).
  void abort() { aborted_.store(true, std::memory_order_release); }

 private:
  struct Control;
  Control* control(int rank) const;
  char* buffer(int rank, int parity) const;
  Stalled wait_for(int peer, const std::atomic<uint64_t>& counter, uint64_t value,
                   Clock::time_point deadline);

  int rank_;
  int size_;
  std::string name_;               // this rank's segment
  std::string unavailable_;
  std::vector<char*> segments_;    // every rank's segment, mapped
  std::size_t segment_bytes_;
  uint64_t step_ = 0;              // chunks this rank has reduced
  std::atomic<bool> aborted_{false};
};

// Whether every rank of `tasks` may run on this host (they compare the kernel's boot id and
// host name through the key-value store under `prefix`): then SharedMemory is worth trying.
bool all_on_one_host(coordination::CoordinationClient& client, int rank, int size,
                     const std::string& prefix, std::chrono::milliseconds timeout);

}  // namespace weft::distribute::collective::internal
