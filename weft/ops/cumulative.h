// Running sums and products along an axis (tf.math.cumsum / cumprod, numpy.cumsum / cumprod).
// Integer and bool inputs accumulate in int64, as NumPy; half types accumulate in float32.
//
//   weft::Tensor c = weft::cumsum(x, 1);                        // [[1, 2], [3, 4]] -> [[1, 3], [3,
//   7]] weft::Tensor before = weft::cumsum(x, 0, /*exclusive=*/true);  // sums of the earlier rows
#pragma once

#include "weft/core/tensor.h"

namespace weft {

// exclusive: element i holds the sum of the elements before it; reverse: runs from the end.
Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive = false, bool reverse = false);
// Its gradient is exact where elements are zero; the gradient itself is not differentiable.
Tensor cumprod(const Tensor& x, int64_t axis);

}  // namespace weft
