// weft::mixed_precision::LossScaleOptimizer (tf.keras.mixed_precision.LossScaleOptimizer):
// float16 gradients underflow to zero for small losses, so the loss is multiplied by a scale
// before differentiating and the gradients are divided by it afterwards, in float32.
//
//   weft::mixed_precision::LossScaleOptimizer opt(weft::optim::Adam(1e-3));  // dynamic, 2^15
//   opt.minimize(loss, vars, tape);                       // scales and unscales by itself
//   // or, in a custom loop:
//   weft::GradientTape tape;
//   weft::Tensor scaled = opt.get_scaled_loss(loss_fn(y, model(x, true)));
//   auto grads = opt.get_unscaled_gradients(tape.gradient(scaled, vars));
//   opt.apply_gradients(zip(grads, vars));  // skipped, and the scale halved, if not all finite
//
// The wrapper is a handle on the inner optimizer's own state (as every optimizer handle is):
// loss scaling is turned on for that optimizer, and the inner handle sees it too. Model::compile
// wraps the optimizer itself under the "mixed_float16" policy, once; a custom loop wraps its own.
#pragma once

#include <vector>

#include "weft/optim/optimizer.h"

namespace weft::mixed_precision {

using LossScaleOptions = optim::LossScaleOptions;

class LossScaleOptimizer : public optim::Optimizer {
 public:
  // InvalidArgument when `inner` already has loss scaling, or for a bad option.
  explicit LossScaleOptimizer(const optim::Optimizer& inner, LossScaleOptions options = {});
  // A handle on an optimizer that has loss scaling (has_loss_scale()); InvalidArgument if not.
  static LossScaleOptimizer of(const optim::Optimizer& optimizer);

  using Optimizer::loss_scale;  // the current scale
  bool dynamic() const { return loss_scale_options().dynamic; }
  int64_t dynamic_growth_steps() const { return loss_scale_options().dynamic_growth_steps; }
  int64_t dynamic_counter() const { return loss_scale_good_steps(); }  // finite steps in a row

  // loss * scale, to differentiate inside the tape.
  Tensor get_scaled_loss(const Tensor& loss) const;
  // Each defined gradient divided by the scale (undefined ones stay undefined).
  std::vector<Tensor> get_unscaled_gradients(const std::vector<Tensor>& grads) const;

 private:
  struct Existing {};
  LossScaleOptimizer(const optim::Optimizer& optimizer, Existing) : Optimizer(optimizer) {}
};

}  // namespace weft::mixed_precision
