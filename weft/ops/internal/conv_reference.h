// Direct-loop NHWC 2-D convolution and pooling with TensorFlow semantics (filter HWIO). These are
// weft's float64 kernels (oneDNN has no f64) and the reference the oneDNN path is tested against.
// Single-threaded on purpose: every sum runs in one fixed order, so results are bit-reproducible.
//
//   // batch 8, 28x28x1 input, 3x3 filter to 32 channels, stride 1, dilation 1
//   Conv2DParams p = make_conv2d_params("conv2d", 8, 28, 28, 1, 3, 3, 32, 1, 1, 1, 1, "SAME");
//   conv2d_forward<double>(p, x, w, y);  // x: n·h·w·c, w: kh·kw·c·oc, y: n·oh·ow·oc
#pragma once

#include <cstdint>
#include <string_view>

namespace weft::ops::internal {

// Everything needed to index; padding is already resolved. Padding after is implied by oh/ow.
struct Conv2DParams {
  int64_t n, h, w, c;  // input
  int64_t kh, kw, oc;  // filter (in channels = c)
  int64_t oh, ow;      // output
  int64_t stride_h, stride_w, dilation_h, dilation_w;
  int64_t pad_top, pad_left;
  // Grouped convolution: input channel i feeds only the outputs of group i / (c / groups); the
  // filter is (kh, kw, c / groups, oc), output channels group by group (TF's layout).
  int64_t groups = 1;
};

// Resolves TF padding ("VALID" or "SAME") into output sizes and padding before. Throws
// InvalidArgument, naming op_name and the sizes, for a non-positive kernel/stride/dilation, an
// unknown padding, or an empty output (e.g. a VALID kernel larger than the input).
Conv2DParams make_conv2d_params(std::string_view op_name, int64_t n, int64_t h, int64_t w,
                                int64_t c, int64_t kh, int64_t kw, int64_t oc, int64_t stride_h,
                                int64_t stride_w, int64_t dilation_h, int64_t dilation_w,
                                std::string_view padding, int64_t groups = 1);

template <typename T>
void conv2d_forward(const Conv2DParams& p, const T* x, const T* w, T* y);
// dx (n·h·w·c) is fully overwritten.
template <typename T>
void conv2d_backward_input(const Conv2DParams& p, const T* dy, const T* w, T* dx);
// dw (kh·kw·c·oc) is fully overwritten.
template <typename T>
void conv2d_backward_filter(const Conv2DParams& p, const T* x, const T* dy, T* dw);

struct Pool2DParams {
  int64_t n, h, w, c, kh, kw, oh, ow, stride_h, stride_w, pad_top, pad_left;
};

// Same rules and errors as make_conv2d_params, with dilation 1.
Pool2DParams make_pool2d_params(std::string_view op_name, int64_t n, int64_t h, int64_t w,
                                int64_t c, int64_t kh, int64_t kw, int64_t stride_h,
                                int64_t stride_w, std::string_view padding);

// Padding never wins a max; a NaN in the window does, so it propagates.
template <typename T>
void max_pool2d_forward(const Pool2DParams& p, const T* x, T* y);
// Each dy goes to the first maximum of its window in row-major order (TF's tie rule); dx is fully
// overwritten.
template <typename T>
void max_pool2d_backward(const Pool2DParams& p, const T* x, const T* dy, T* dx);
// Averages over the window's elements inside the input only, as TF does for SAME padding.
template <typename T>
void avg_pool2d_forward(const Pool2DParams& p, const T* x, T* y);
// dx is fully overwritten.
template <typename T>
void avg_pool2d_backward(const Pool2DParams& p, const T* dy, T* dx);

}  // namespace weft::ops::internal
