// Sorting along an axis, as numpy.sort / argsort: ascending, NaN last, and stable (equal elements
// keep their order). float32 and int32 rows sort by an LSD radix sort on their bit patterns
// (three 11-bit passes), other dtypes by a stable comparison sort; rows run in parallel.
//
//   weft::Tensor s = weft::sort(x);             // along the last axis
//   weft::Tensor order = weft::argsort(x, 0);   // int64 permutation along axis 0
//   auto [values, indices] = weft::top_k(scores, 3);
#pragma once

#include "weft/core/tensor.h"

namespace weft {

// Differentiable: the gradient is routed back through the sorting permutation.
Tensor sort(const Tensor& x, int64_t axis = -1);
Tensor argsort(const Tensor& x, int64_t axis = -1);

// tf.math.top_k: the k largest entries of each row along the last axis, largest first, and
// their positions (int32), each of shape x.shape[:-1] + [k]. Equal values come lower index first
// (TensorFlow's CPU kernel), NaN above every number. `sorted = false` is accepted and gives the
// same (sorted) order, one of those TensorFlow allows. The values' gradient goes to the chosen
// positions, zeros elsewhere (TensorFlow's); the indices have none. InvalidArgument for a scalar,
// k < 0, or k above the last axis's size.
struct TopK {
  Tensor values, indices;
};
TopK top_k(const Tensor& x, int64_t k = 1, bool sorted = true);

}  // namespace weft
