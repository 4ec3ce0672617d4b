// Max pooling over NHWC tensors, vectorised over channels and parallel over images: weft's
// kernel for every floating dtype (oneDNN 2.6's NHWC max pooling ran at about 5 GB/s here).
// Same rules as the reference in conv_reference.h: padding never wins, the first NaN of a window
// wins, and each gradient goes to the first maximum of its window in row-major order. The
// backward pass finds where each maximum was from x and y rather than keeping a workspace.
#pragma once

#include "weft/ops/internal/conv_reference.h"

namespace weft::ops::internal {

// T: float, double, bfloat16, float16 (half types compare in float).
template <typename T>
void max_pool2d_nhwc_forward(const Pool2DParams& p, const T* x, T* y);
// y: the forward output for x. dx is fully overwritten.
template <typename T>
void max_pool2d_nhwc_backward(const Pool2DParams& p, const T* x, const T* y, const T* dy, T* dx);

}  // namespace weft::ops::internal
