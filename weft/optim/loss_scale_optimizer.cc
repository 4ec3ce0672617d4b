#include "weft/optim/loss_scale_optimizer.h"

#include "weft/core/errors.h"
#include "weft/ops/elementwise.h"

namespace weft::mixed_precision {

LossScaleOptimizer::LossScaleOptimizer(const optim::Optimizer& inner, LossScaleOptions options)
    : Optimizer(inner) {
  WEFT_CHECK(inner.defined(), InvalidArgument)
      << "LossScaleOptimizer: the inner optimizer is undefined";
  enable_loss_scale(options);
}

LossScaleOptimizer LossScaleOptimizer::of(const optim::Optimizer& optimizer) {
  WEFT_CHECK(optimizer.defined() && optimizer.has_loss_scale(), InvalidArgument)
      << "LossScaleOptimizer::of: the optimizer has no loss scaling";
  return LossScaleOptimizer(optimizer, Existing{});
}

Tensor LossScaleOptimizer::get_scaled_loss(const Tensor& loss) const {
  WEFT_CHECK(loss.defined(), InvalidArgument) << "get_scaled_loss: the loss is undefined";
  return mul(loss, Tensor::scalar(loss_scale(), loss.dtype()));
}

std::vector<Tensor> LossScaleOptimizer::get_unscaled_gradients(
    const std::vector<Tensor>& grads) const {
  double inverse = 1.0 / loss_scale();
  std::vector<Tensor> out;
  out.reserve(grads.size());
  for (const Tensor& g : grads) {
    out.push_back(g.defined() ? mul(g, Tensor::scalar(inverse, g.dtype())) : g);
  }
  return out;
}

}  // namespace weft::mixed_precision
