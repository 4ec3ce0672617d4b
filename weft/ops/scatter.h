// Functional scatters into a tensor's flattened view, in the spirit of tf.tensor_scatter_nd_update
// and tensor_scatter_nd_add: a new tensor equal to x except at the flat positions `indices`
// (int32/int64, any shape, each in [0, x.numel())), where `updates` (broadcast to indices' shape)
// replace or add to the elements. Repeated positions: update keeps the last, add accumulates
// (as np.add.at and TF). Differentiable in x and updates.
//
//   weft::Tensor y = weft::scatter_flat_add(x, idx, ones);   // x.flat[idx] += 1, repeats counted
#pragma once

#include "weft/core/tensor.h"

namespace weft {

Tensor scatter_flat_update(const Tensor& x, const Tensor& indices, const Tensor& updates);
Tensor scatter_flat_add(const Tensor& x, const Tensor& indices, const Tensor& updates);

}  // namespace weft
