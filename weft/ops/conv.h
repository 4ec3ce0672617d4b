// 2-D convolution (plain, grouped, depthwise, transposed; 1-D through it), 3-D convolution and
// pooling on NHWC (NDHWC) tensors with TensorFlow's conventions: filters HWIO (DHWIO), padding
// "SAME" or "VALID", strides and dilations as {height, width} ({depth, height, width}).
// float32/bfloat16/float16 run on oneDNN; float64 on reference loops (for exact gradient checks).
//
//   weft::Tensor y = weft::conv2d(x, w, {1, 1}, "SAME");       // x (n,h,w,c), w (kh,kw,c,oc)
//   weft::Tensor p = weft::max_pool2d(y, {2, 2}, {2, 2}, "VALID");
//   weft::Tensor v = weft::conv3d(clip, k, {1, 2, 2}, "SAME");  // clip (n,d,h,w,c)
#pragma once

#include <array>
#include <string_view>

#include "weft/core/tensor.h"

namespace weft {

using Size2 = std::array<int64_t, 2>;
using Size3 = std::array<int64_t, 3>;  // {depth, height, width}

// filters (kh, kw, c / groups, oc): a filter with fewer input channels than x has is a grouped
// convolution (as tf.nn.conv2d), groups = c / filters' input channels.
Tensor conv2d(const Tensor& x, const Tensor& filters, Size2 strides = {1, 1},
              std::string_view padding = "VALID", Size2 dilations = {1, 1});
// tf.nn.depthwise_conv2d: filters (kh, kw, c, multiplier); output channel i * multiplier + m is
// input channel i convolved with filters[..., i, m].
Tensor depthwise_conv2d(const Tensor& x, const Tensor& filters, Size2 strides = {1, 1},
                        std::string_view padding = "VALID", Size2 dilations = {1, 1});
// The transpose of conv2d (the gradient of conv2d with respect to its input), filters
// (kh, kw, output channels, input channels) as tf.nn.conv2d_transpose. The output's height is
// Keras's: h * stride for SAME, h * stride + max(k - stride, 0) for VALID (k the dilated kernel).
Tensor conv2d_transpose(const Tensor& x, const Tensor& filters, Size2 strides = {1, 1},
                        std::string_view padding = "VALID", Size2 dilations = {1, 1});
// tf.nn.conv1d on (n, length, c) with filters (k, c, oc), through conv2d.
Tensor conv1d(const Tensor& x, const Tensor& filters, int64_t stride = 1,
              std::string_view padding = "VALID", int64_t dilation = 1);
// tf.nn.conv3d on (n, d, h, w, c) with filters (kd, kh, kw, c / groups, oc), grouped as conv2d.
Tensor conv3d(const Tensor& x, const Tensor& filters, Size3 strides = {1, 1, 1},
              std::string_view padding = "VALID", Size3 dilations = {1, 1, 1});
Tensor max_pool3d(const Tensor& x, Size3 ksize, Size3 strides, std::string_view padding = "VALID");
Tensor avg_pool3d(const Tensor& x, Size3 ksize, Size3 strides, std::string_view padding = "VALID");
Tensor max_pool2d(const Tensor& x, Size2 ksize, Size2 strides, std::string_view padding = "VALID");
Tensor avg_pool2d(const Tensor& x, Size2 ksize, Size2 strides, std::string_view padding = "VALID");

}  // namespace weft
