// Conversions between dtypes and layouts: cast (differentiable between float types), copy and
// contiguous (differentiable) and assign_into (Variable's in-place write).
#pragma once

#include "weft/core/tensor.h"

namespace weft {

Tensor cast(const Tensor& x, DType dtype);
// A contiguous copy with its own storage.
Tensor copy(const Tensor& x);
// x itself if it is contiguous, otherwise copy(x).
Tensor contiguous(const Tensor& x);
// Writes `src`, broadcast to dst's shape and cast to dst's dtype, into dst's storage. Not
// recorded by tapes: only Variable and kernels writing their own fresh outputs use it.
void assign_into(const Tensor& dst, const Tensor& src);

}  // namespace weft
