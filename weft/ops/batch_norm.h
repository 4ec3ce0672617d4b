// Batch normalization in training mode as one op (TensorFlow's FusedBatchNorm): the batch's
// per-feature mean and variance, and y = (x - mean) / sqrt(variance + epsilon) * gamma + beta, in
// one reading pass and one writing pass; the backward pass is one more of each. With `relu`,
// y = max(that, 0) in the same passes, and the gradient is masked in the backward pass's (as
// TensorFlow's remapper fuses FusedBatchNorm and Relu), which saves the two passes of a separate
// ReLU and its gradient. Feature sums are taken over fixed blocks in a fixed order, so results do
// not depend on the thread count.
//
//   weft::BatchNormResult r = weft::batch_norm_training(x, gamma, beta, /*axis=*/-1, 1e-3);
//   // r.y: x's shape; r.mean, r.variance: (features,), the biased variance, not recorded.
#pragma once

#include "weft/core/tensor.h"

namespace weft {

struct BatchNormResult {
  Tensor y, mean, variance;
};

// The dtype of gamma, beta, mean and variance for an x of dtype `x`: x's own, or float32 for a
// bfloat16/float16 x, which is normalised in float32.
inline DType batch_norm_param_dtype(DType x) { return is_half(x) ? kFloat32 : x; }

// x: floating, rank >= 2, features along `axis`; gamma and beta: (features,) of
// batch_norm_param_dtype(x.dtype()) (y in x's dtype; mean and variance in the parameters').
// Differentiable once in x, gamma and beta (the backward pass is a kernel of its own, so a nested
// tape sees no second derivative, as with max_pool2d).
BatchNormResult batch_norm_training(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                    int64_t axis, double epsilon, bool relu = false);

}  // namespace weft
