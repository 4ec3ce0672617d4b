// Sorting along an axis, as numpy.sort / argsort: ascending, NaN last, and stable (equal elements
// keep their order). float32 and int32 rows sort by an LSD radix sort on their bit patterns
// (three 11-bit passes), other dtypes by a stable comparison sort; rows run in parallel.
//
//   weft::Tensor s = weft::sort(x);             // along the last axis
//   weft::Tensor order = weft::argsort(x, 0);   // int64 permutation along axis 0
#pragma once

#include "weft/core/tensor.h"

namespace weft {

// Differentiable: the gradient is routed back through the sorting permutation.
Tensor sort(const Tensor& x, int64_t axis = -1);
Tensor argsort(const Tensor& x, int64_t axis = -1);

}  // namespace weft
