// Max pooling over NHWC tensors, vectorised over channels and parallel over images: weft's
// kernel for every floating dtype (oneDNN 2.6's NHWC max pooling ran at about 5 GB/s here).
// Same rules as the reference in conv_reference.h: padding never wins, the first NaN of a window
// wins, and each gradient goes to the first maximum of its window in row-major order. The forward
// pass records where each maximum was (its tap in the window, ky * kw + kx), so the backward pass
// reads that rather than the input again.
#pragma once

#include <cstdint>

#include "weft/ops/internal/conv_reference.h"

namespace weft::ops::internal {

// T: float, double, bfloat16, float16 (half types compare in float). argmax: y's shape.
template <typename T>
void max_pool2d_nhwc_forward(const PoolParams& p, const T* x, T* y, int32_t* argmax);
// argmax: from the forward pass. dx is fully overwritten.
template <typename T>
void max_pool2d_nhwc_backward(const PoolParams& p, const int32_t* argmax, const T* dy, T* dx);

}  // namespace weft::ops::internal
