// Direct-loop NHWC 2-D and NDHWC 3-D convolution and pooling with TensorFlow semantics (filters
// HWIO, DHWIO). These are weft's float64 kernels (oneDNN has no f64) and the reference the oneDNN
// path is tested against. Single-threaded on purpose: every sum runs in one fixed order, so
// results are bit-reproducible. A 2-D problem is the 3-D one of depth 1 (the depth fields keep
// their defaults).
//
//   // batch 8, 28x28x1 input, 3x3 filter to 32 channels, stride 1, dilation 1
//   ConvParams p = make_conv2d_params("conv2d", 8, 28, 28, 1, 3, 3, 32, 1, 1, 1, 1, "SAME");
//   conv_forward<double>(p, x, w, y);  // x: n·h·w·c, w: kh·kw·c·oc, y: n·oh·ow·oc
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace weft::ops::internal {

// Everything needed to index; padding is already resolved. Padding after is implied by oh/ow.
struct ConvParams {
  int64_t n, h, w, c;  // input
  int64_t kh, kw, oc;  // filter (in channels = c)
  int64_t oh, ow;      // output
  int64_t stride_h, stride_w, dilation_h, dilation_w;
  int64_t pad_top, pad_left;
  // Grouped convolution: input channel i feeds only the outputs of group i / (c / groups); the
  // filter is (kh, kw, c / groups, oc), output channels group by group (TF's layout).
  int64_t groups = 1;
  // 3-D: the input's depth, the filter's, the output's; with depth, x is n·d·h·w·c, the filter
  // kd·kh·kw·(c / groups)·oc and y n·od·oh·ow·oc.
  int64_t d = 1, kd = 1, od = 1, stride_d = 1, dilation_d = 1, pad_front = 0;
  int spatial_dims = 2;
};

// Resolves TF padding ("VALID" or "SAME") into output sizes and padding before. Throws
// InvalidArgument, naming op_name and the sizes, for a non-positive kernel/stride/dilation, an
// unknown padding, or an empty output (e.g. a VALID kernel larger than the input).
ConvParams make_conv2d_params(std::string_view op_name, int64_t n, int64_t h, int64_t w, int64_t c,
                              int64_t kh, int64_t kw, int64_t oc, int64_t stride_h,
                              int64_t stride_w, int64_t dilation_h, int64_t dilation_w,
                              std::string_view padding, int64_t groups = 1);

template <typename T>
void conv_forward(const ConvParams& p, const T* x, const T* w, T* y);
// dx (n·h·w·c) is fully overwritten.
template <typename T>
void conv_backward_input(const ConvParams& p, const T* dy, const T* w, T* dx);
// dw (kh·kw·c·oc) is fully overwritten.
template <typename T>
void conv_backward_filter(const ConvParams& p, const T* x, const T* dy, T* dw);

struct PoolParams {
  int64_t n, h, w, c, kh, kw, oh, ow, stride_h, stride_w, pad_top, pad_left;
  int64_t d = 1, kd = 1, od = 1, stride_d = 1, pad_front = 0;  // 3-D, as ConvParams
  int spatial_dims = 2;
};

// make_conv2d_params, then the depth axis: sizes, strides and dilations as {depth, height,
// width}.
ConvParams make_conv3d_params(std::string_view op_name, int64_t n, int64_t d, int64_t h, int64_t w,
                              int64_t c, int64_t kd, int64_t kh, int64_t kw, int64_t oc,
                              std::array<int64_t, 3> strides, std::array<int64_t, 3> dilations,
                              std::string_view padding, int64_t groups = 1);

// Same rules and errors as make_conv2d_params, with dilation 1.
PoolParams make_pool3d_params(std::string_view op_name, int64_t n, int64_t d, int64_t h, int64_t w,
                              int64_t c, std::array<int64_t, 3> ksize,
                              std::array<int64_t, 3> strides, std::string_view padding);
PoolParams make_pool2d_params(std::string_view op_name, int64_t n, int64_t h, int64_t w, int64_t c,
                              int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                              std::string_view padding);

// Padding never wins a max; a NaN in the window does, so it propagates.
template <typename T>
void max_pool_forward(const PoolParams& p, const T* x, T* y);
// Each dy goes to the first maximum of its window in row-major order (TF's tie rule); dx is fully
// overwritten.
template <typename T>
void max_pool_backward(const PoolParams& p, const T* x, const T* dy, T* dx);
// Averages over the window's elements inside the input only, as TF does for SAME padding.
template <typename T>
void avg_pool_forward(const PoolParams& p, const T* x, T* y);
// dx is fully overwritten.
template <typename T>
void avg_pool_backward(const PoolParams& p, const T* dy, T* dx);

}  // namespace weft::ops::internal
