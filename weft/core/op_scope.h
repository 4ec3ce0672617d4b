// weft::OpScope: the one entry every public op passes (DISTRIBUTED.md §6). An op that takes a
// DTensor operand (weft/dtensor/dtensor.h) returns what its SPMD rule makes of it: the rule lays
// the operands out so that each device's block can be computed alone, runs the op itself on the
// components, and describes how the results lie on the mesh. Other calls pay one test of each
// operand, and one of the profiler's level (an op is an event at host level 2).
//
//   Tensor relu(const Tensor& x) {
//     OpScope op("relu", x);
//     if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return relu(c[0]); });
//     ... the local kernel ...
//   }
#pragma once

#include <functional>
#include <vector>

#include "weft/core/tensor.h"
#include "weft/core/trace_me.h"

namespace weft {

// How an op's result lies on a mesh given its operands' layouts (weft/dtensor/spmd.cc). The
// rules are TensorFlow DTensor's (research/dtensor-profiler.md A2).
struct SpmdRule {
  enum class Kind {
    kReplicated,   // any op: every operand fully replicated, and so is the result
    kElementwise,  // broadcasting n-ary: the operands' layouts merged
    kMatmul,       // a [..., m, k] x b [..., k, n] (transposed as flagged)
    kReduce,       // over `axes`: a sharded reduced axis leaves a pending `reduce` over its devices
    kAlongAxis,    // the result's layout is the operand's with `axes` unsharded (softmax, argmax)
    kSparseCrossEntropy,  // labels [B...], logits [B..., C] -> [B...]
    kReshape,             // to `shape`: a sharded axis that survives keeps its sharding
    kTranspose,           // result axis i is operand axis axes[i]
    kAssign,              // assign_into(dst, src): src laid out as dst
    kConcat,              // along axes[0]: every operand laid out as the first, that axis whole
    kNewAxis,             // a new unsharded axis at axes[0] of the result (one_hot, stack);
                          // further operands laid out as the first
    kGather,              // gather(params, indices) along axes[0]: that axis of params whole;
                          // the result's axes there are the indices'
    kBatch,               // per example (convolutions, pooling): the first operand's axis 0
                          // keeps its sharding (so do the operands `axes` lists), its other
                          // axes and every other operand whole
  };
  enum class Reduce { kSum, kMax, kMin };
  Kind kind = Kind::kReplicated;
  bool transpose_a = false, transpose_b = false;
  std::vector<int64_t> axes{};  // normalised, ascending
  bool keepdims = false;
  Reduce reduce = Reduce::kSum;
  Shape shape{};           // kReshape: the global shape, without -1
  bool drop_axes = false;  // kAlongAxis: the result lacks `axes` (argmax)

  static SpmdRule replicated() { return {}; }
  static SpmdRule elementwise() { return {Kind::kElementwise}; }
};

// What a rule hands the op for one device: its operands' components, and the shape of its
// result's component where the op needs it (kReshape).
struct SpmdArgs {
  const std::vector<Tensor>& components;
  const Shape& local_shape;
  const Tensor& operator[](size_t i) const { return components[i]; }
};
using SpmdFn = std::function<Tensor(const SpmdArgs& args)>;
// An op of several results (top_k, rnn): each lies as the rule says of one result.
using SpmdResultsFn = std::function<std::vector<Tensor>(const SpmdArgs& args)>;

class OpScope {
 public:
  template <typename... Operands>
  explicit OpScope(const char* op, const Operands&... operands)
      : op_(op), spmd_((is_distributed(operands) || ...)), trace_(op, 2, TraceCategory::kOp) {}
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

  // Whether an operand is a DTensor: the op then returns run()'s result.
  bool spmd() const { return spmd_; }
  // The rule's result: `fn` runs once for each distinct set of components (devices that hold the
  // same blocks share one result).
  Tensor run(const SpmdRule& rule, const std::vector<Tensor>& operands, const SpmdFn& fn) const;
  std::vector<Tensor> run_all(const SpmdRule& rule, const std::vector<Tensor>& operands,
                              const SpmdResultsFn& fn) const;
  Tensor elementwise(const std::vector<Tensor>& operands, const SpmdFn& fn) const {
    return run(SpmdRule::elementwise(), operands, fn);
  }

  // Where run() goes: set by weft/dtensor when the library loads.
  using Handler = std::vector<Tensor> (*)(const char* op, const SpmdRule& rule,
                                          const std::vector<Tensor>& operands,
                                          const SpmdResultsFn& fn);
  static void set_handler(Handler handler);

 private:
  static bool is_distributed(const Tensor& t) { return t.defined() && t.parts() != nullptr; }
  static bool is_distributed(const std::vector<Tensor>& ts) {
    for (const Tensor& t : ts) {
      if (is_distributed(t)) return true;
    }
    return false;
  }
  const char* op_;
  bool spmd_;
  TraceMe trace_;  // the op's event for the profiler, at host level 2 (weft/core/trace_me.h)
};

}  // namespace weft
