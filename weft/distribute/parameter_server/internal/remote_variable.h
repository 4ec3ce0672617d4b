// A variable whose value lives on parameter servers (ParameterServerStrategy's variables): the
// binding that pulls it before a read, writes an assignment through and stages a closure's
// optimizer updates, and the scope of a closure, in which it reads each variable once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "weft/autodiff/variable.h"
#include "weft/checkpoint/held_slices.h"
#include "weft/distribute/parameter_server/ps_client.h"

namespace weft::distribute::parameter_server::internal {

// The ids a process stages updates under: a coordinator's closures (kClosures), or the writes
// made outside closures (kWrites: the chief's initial values and assignments). The top bit says
// which, then 31 bits drawn per process, then a counter: ids never meet across the two kinds nor
// across processes (an earlier chief's, a restarted one's) but by a chance of 2^-31.
class UniqueIds {
 public:
  enum Kind : uint64_t { kClosures = 0, kWrites = 1 };
  UniqueIds(Kind kind, uint64_t seed) : prefix_((kind << 63) | ((seed & 0x7fffffff) << 32)) {}
  uint64_t next() { return prefix_ | (counter_++ & 0xffffffffu); }

 private:
  const uint64_t prefix_;
  std::atomic<uint64_t> counter_{0};
};

class RemoteVariable final : public VariableBinding, public checkpoint::HeldElsewhere {
 public:
  // One piece along axis 0, `offset` bytes into the whole variable's value.
  struct Shard {
    std::shared_ptr<ParameterServerClient> ps;
    VariableSpec spec;
    std::size_t offset = 0;
  };
  RemoteVariable(std::vector<Shard> shards, std::shared_ptr<UniqueIds> ids)
      : shards_(std::move(shards)), ids_(std::move(ids)) {}

  // Creates the shards on their ps tasks (readable from the first write on).
  void create() const;
  // Whether `ps` holds (readable) every shard of this variable placed on it; Unavailable when
  // it cannot be reached.
  bool held_on(ParameterServerClient& ps) const;
  // Creates again the shards placed on `ps`, with the slots of the optimizer slot() gave them:
  // after `ps` restarted (they hold no value until written).
  void create_on(ParameterServerClient& ps) const;
  // Waits until every shard is readable (another task creates and writes them), at most
  // `timeout`: DeadlineExceeded naming the variable when it is not; Unavailable once
  // `chief_gone` (asked every half second) says the chief finished or failed, and with it the
  // job (a ps task that restarted holds nothing until the chief makes it again).
  void wait_until_readable(std::chrono::milliseconds timeout,
                           const std::function<bool()>& chief_gone) const;
  // Pulls `cache` once per closure (outside one, at every read); in a closure, then applies the
  // gradient steps it staged on the variable since its last read, so that its later steps read
  // its own updates (a closure of several steps, compile's steps_per_execution).
  void refresh(const Tensor& cache) const override;
  // Outside a closure, committed at once under an id of its own; inside one, staged with the
  // closure's other updates.
  void write(const Tensor& value) const override;
  // Push each shard's piece under the running closure's id (SnapshotScope), a gradient as that
  // closure's next step of this variable (applied to this process's copy at its next read).
  bool stage_gradient(const GradientUpdate& update) const override;
  bool stage_add(const Tensor& delta) const override;
  // Slot k of each shard, on its ps task (given the optimizer there first, if it had none).
  std::shared_ptr<const VariableBinding> slot(size_t k,
                                              const std::string& optimizer) const override;
  const std::vector<Shard>& shards() const { return shards_; }
  // Each shard, as the slice its ps task writes into a checkpoint (train::Checkpoint::save).
  std::vector<checkpoint::HeldSlice> held_slices() const override;

 private:
  // Pushes each shard's piece of `whole` (the variable's shape) under `closure_id`; returns the
  // incarnation of each shard's server then.
  std::vector<uint64_t> push_pieces(uint64_t closure_id, PushKind kind, const Tensor& whole,
                                    const GradientStep& step) const;
  // Applies the running closure's unread gradient steps of this variable to `cache`, shard by
  // shard with the optimizer's algorithm, as the ps tasks will at the commit.
  void apply_unread(const Tensor& cache) const;
  // Each shard's `count` slots of `optimizer` (its Keras config), pulled from its ps task.
  std::vector<std::vector<Tensor>> pull_slots(const std::string& optimizer, size_t count) const;

  std::vector<Shard> shards_;
  std::shared_ptr<UniqueIds> ids_;
  mutable std::mutex mu_;
  mutable std::string optimizer_;  // whose slots the shards have (slot()), "" for none
};

// A closure running on this thread (a worker's): each remote variable read there is pulled once,
// at its first read (the closure's snapshot, TensorFlow's cache_variable_reads), instead of at
// every read, and the optimizer updates it makes are staged under `closure_id`, which the
// coordinator commits or aborts. Its own updates it reads too: a read after a staged gradient
// step applies it to the copy first (pulling the variable's slots then), as the commit will.
class SnapshotScope {
 public:
  explicit SnapshotScope(uint64_t closure_id);
  ~SnapshotScope();
  // Whether this thread runs a closure.
  static bool active();
  // The ps tasks (task names) the closure has staged updates on so far, each with the server's
  // incarnation at the first push, which the commit names.
  std::vector<std::pair<std::string, uint64_t>> staged_on() const;
  SnapshotScope(const SnapshotScope&) = delete;
  SnapshotScope& operator=(const SnapshotScope&) = delete;
};

}  // namespace weft::distribute::parameter_server::internal
