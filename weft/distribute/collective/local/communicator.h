// Ranks that are threads of one process (the replicas of MirroredStrategy, the devices of a
// DTensor mesh in one process): a LocalGroup of n ranks hands out one Communicator per rank, each
// for its own thread. Values meet in memory: each call waits for every rank, each rank then
// reads the others' buffers directly, and a second wait keeps every buffer alive until all have
// read it. Sums run in the fixed tree ((r0+r1)+(r2+r3))+... (DISTRIBUTED.md §2): every rank gets
// the same bits; each rank reduces its chunk reading the others' values where they lie and
// writes it into every rank's result (ranks may share one result: all_reduce_gathered with one
// `out`, as MirroredStrategy's replicas do). Ranks that disagree on a call (kind, shape, dtype, reduction, root) fail alike,
// naming both; every wait is bounded by the group's timeout (DeadlineExceeded, naming the ranks
// that did not come).
//
//   collective::LocalGroup group(2);
//   // on thread r: collective::all_reduce(group.rank(r), partial)
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "weft/distribute/collective/communicator.h"

namespace weft::distribute::collective {

// How long a rank of a group with `spin` spins (yielding its core to any thread that wants it)
// before it sleeps in a wait: on a virtual machine, waking a thread whose vCPU went idle costs
// enough to slow a mirrored step by a tenth or more (docs/benchmarks.md, "Replicas that spin
// before they sleep").
inline constexpr std::chrono::microseconds kSpinBeforeSleep{1000};

class LocalGroup {
 public:
  // `spin`: waits spin for kSpinBeforeSleep before they sleep (for ranks with a core each).
  explicit LocalGroup(int ranks, std::chrono::milliseconds timeout = kDefaultTimeout,
                      bool spin = false);
  ~LocalGroup();
  LocalGroup(const LocalGroup&) = delete;
  LocalGroup& operator=(const LocalGroup&) = delete;

  int size() const { return static_cast<int>(ranks_.size()); }
  // Rank r's communicator: one thread at a time.
  Communicator& rank(int r);

 private:
  class Rank;
  friend class Rank;
  struct Post;
  // Waits until every rank has posted this call; InvalidArgument on every rank when they
  // disagree.
  void meet(int rank, const Post& post);
  // Waits until every rank is past reading the others' buffers.
  void leave(int rank);
  // The barrier both use: the last rank to come runs `last`, under the lock.
  void wait_for_all(std::unique_lock<std::mutex>& lock, int rank, const char* what,
                    const std::function<void()>& last);

  std::chrono::milliseconds timeout_;
  const bool spin_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<const Post*> posts_;  // this call's, by rank
  std::vector<bool> here_;          // who has come to the current wait
  int arrived_ = 0;
  std::atomic<uint64_t> generation_{0};  // waits that ended (read unlocked by spinning ranks)
  std::string verdict_;  // why this call's ranks disagree (empty: they agree)
  std::string failed_;   // set when a wait timed out: every later call fails with it
  std::vector<std::unique_ptr<Rank>> ranks_;
};

}  // namespace weft::distribute::collective
