// Forward-mode differentiation, as tf.autodiff.ForwardAccumulator: while an accumulator lives,
// every op on its thread whose inputs carry tangents computes its outputs' tangents too (the
// Jacobian-vector products J·v), so one pass gives the directional derivative of everything
// computed from the primals along the tangents, where reverse mode would need one pass per output.
//
//   weft::ForwardAccumulator acc({x}, {v});
//   weft::Tensor y = weft::tanh(weft::matmul(x, w));
//   weft::Tensor dy = acc.jvp(y);   // J_y(x) · v, y's shape
//
// Every op's tangent is its gradient's transpose applied to the tangents of its inputs: the
// backward function (linear in the output gradient) is recorded and differentiated once more, so
// forward mode holds wherever second derivatives do, and a custom_gradient's function is used as
// written. Accumulators nest: one created inside another sees no work of the outer one, while the
// outer sees the inner's tangent computations, so acc_outer.jvp(acc_inner.jvp(y)) is a second
// directional derivative; a GradientTape watching the primals differentiates jvp() results
// (reverse over forward), and an accumulator sees a tape's backward pass (forward over reverse).
// Forward mode through the ops whose gradient is one kernel (cumprod, batch normalization while
// training, SyncBatchNormalization, oneDNN's fused RNN) raises
// FailedPrecondition naming the op; compute those in float64 steps or with a tape.
#pragma once

#include <memory>
#include <vector>

#include "weft/autodiff/tape.h"

namespace weft {

class ForwardAccumulator {
 public:
  // One tangent per primal, of its shape and dtype (floating). Variables: their current values
  // are the primals (assigning one while the accumulator lives starts a new value without a
  // tangent). InvalidArgument for a count, shape or dtype mismatch or a primal given twice.
  ForwardAccumulator(const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents);
  ForwardAccumulator(const std::vector<Variable>& primals, const std::vector<Tensor>& tangents);
  ~ForwardAccumulator();
  ForwardAccumulator(const ForwardAccumulator&) = delete;
  ForwardAccumulator& operator=(const ForwardAccumulator&) = delete;

  // The tangent of `target`: a primal's own, or what the ops that computed it from the primals
  // gave. A target that does not depend on the primals (or is not floating) gives an undefined
  // Tensor, or zeros of its shape with UnconnectedGradients::kZero.
  Tensor jvp(const Tensor& target,
             UnconnectedGradients unconnected = UnconnectedGradients::kNone) const;
  std::vector<Tensor> jvp(const std::vector<Tensor>& targets,
                          UnconnectedGradients unconnected = UnconnectedGradients::kNone) const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace weft
