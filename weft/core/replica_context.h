// The replica context, as tf.distribute.get_replica_context(): what code running on one replica
// of a distribution strategy sees of its peers. Outside a strategy's run() it is the default
// context, one replica of one. Strategies (weft/distribute/) install their own on each replica
// thread; optimizers and layers below the strategies use it through this interface.
//
//   auto& ctx = weft::distribute::get_replica_context();
//   weft::Tensor total = ctx.all_reduce(weft::distribute::ReduceOp::SUM, {partial})[0];
//   ctx.merge_call([&] { /* runs once, on one replica, while the others wait */ });
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "weft/core/tensor.h"

namespace weft::distribute {

// tf.distribute.ReduceOp.
enum class ReduceOp { SUM, MEAN };

class ReplicaContext {
 public:
  virtual ~ReplicaContext() = default;
  virtual int replica_id_in_sync_group() const = 0;
  virtual int num_replicas_in_sync() const = 0;
  // Every replica passes tensors of the same shapes and dtypes, in the same order; each gets the
  // element-wise reduction across replicas, summed in replica order in one fixed tree, so the
  // result does not depend on which replica arrived first. An undefined tensor stands for zeros
  // of the others' shape (a replica with no gradient for a variable); undefined on every replica,
  // the result is undefined.
  virtual std::vector<Tensor> all_reduce(ReduceOp op, const std::vector<Tensor>& values) = 0;
  // tf.distribute.ReplicaContext.all_gather: every replica's value concatenated along `axis`, in
  // replica order (across the workers of a cluster too); each replica gets the whole. The values
  // may differ in length along `axis` only. On a tape, a replica's gradient is its slice of the
  // sum of every replica's output gradients (so every replica must differentiate through it). The
  // default context's: value.
  virtual Tensor all_gather(const Tensor& value, int64_t axis) { return value; }
  // Runs fn once, on one replica, while the others wait; every replica returns after it (and
  // rethrows what it threw). Every replica must call it, in the same order as its other
  // collective calls.
  virtual void merge_call(const std::function<void()>& fn) = 0;
  // A merge made by every replica of this process at once: each runs fn(part, parts) for its own
  // part (0 <= part < parts, parts = this process's replicas; element_part() says which elements
  // of a flat value a part covers), after every replica has called it; then `then` runs once, and
  // every replica returns after both. For merges of element-wise work (an optimizer's update):
  // each replica writes the elements it summed in the all_reduce before, on its own core, instead
  // of one replica writing all while the others wait. The default runs fn(0, 1), then `then`.
  virtual void merge_call_in_parts(const std::function<void(int part, int parts)>& fn,
                                   const std::function<void()>& then) {
    fn(0, 1);
    then();
  }

  // An all_reduce that finishes later: the caller goes on (with the rest of its backward pass)
  // while the values are reduced, and wait() returns what all_reduce would have. Every value
  // must be defined on every replica (InvalidArgument otherwise). Calls are collective calls
  // like the others: every replica begins the same ones in the same order. The values may be
  // read until wait() returns: do not write into them before. The default reduces at once.
  class Pending {
   public:
    virtual ~Pending() = default;
    // The reduced values; rethrows what went wrong in the reduction. Once only.
    virtual std::vector<Tensor> wait() = 0;
  };
  virtual std::unique_ptr<Pending> begin_all_reduce(ReduceOp op, const std::vector<Tensor>& values);
  // Bytes of gradients to gather before a begin_all_reduce while the backward pass runs (fit's
  // training step does): 0, the default, means all_reduce once the backward pass is done.
  virtual std::size_t gradient_pack_bytes() const { return 0; }
};

// The elements [first, last) of n that part `part` of `parts` covers: consecutive runs, each a
// whole number of 64-byte lines of float32 (16 elements) but the last, so that no two parts
// write one cache line. A replica's share of an all_reduce is its part of each value.
std::pair<int64_t, int64_t> element_part(int64_t n, int parts, int part);

// The calling thread's replica context: the one a strategy installed, else the default
// (replica 0 of 1, whose all_reduce returns its input and whose merge_call calls fn).
ReplicaContext& get_replica_context();
// True on a thread running a replica of a strategy with more than one replica in sync.
bool in_replica_sync_group();

// Installs `context` as the calling thread's replica context while it lives (strategies do).
class ReplicaContextScope {
 public:
  explicit ReplicaContextScope(ReplicaContext* context);
  ~ReplicaContextScope();
  ReplicaContextScope(const ReplicaContextScope&) = delete;
  ReplicaContextScope& operator=(const ReplicaContextScope&) = delete;

 private:
  ReplicaContext* previous_;
};

}  // namespace weft::distribute
