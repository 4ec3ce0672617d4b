#include "weft/ops/conv.h"

#include <algorithm>

#include "weft/autodiff/tape.h"
#include "weft/core/op_scope.h"
#include "weft/ops/cast.h"
#include "weft/ops/internal/conv_reference.h"
#include "weft/ops/internal/max_pool.h"
#include "weft/ops/onednn/onednn.h"
#include "weft/ops/shape_ops.h"

namespace weft {
namespace {

using ops::internal::ConvParams;
using ops::internal::PoolParams;

void check_rank(const char* op, const char* what, const Tensor& t, int rank) {
  WEFT_CHECK(t.defined(), InvalidArgument) << op << ": " << what << " is undefined";
  WEFT_CHECK(t.rank() == rank, InvalidArgument)
      << op << ": " << what << " must have rank " << rank << ", got shape " << shape_str(t.shape());
  WEFT_CHECK(is_floating(t.dtype()), InvalidArgument)
      << op << ": " << what << " must be floating point, got " << t.dtype();
}

// A half type this oneDNN cannot compute in (float16 on oneDNN 2.x CPUs) runs in float32 and is
// rounded once at the end, as weft computes half types anyway.
bool needs_float32(DType t) { return is_half(t) && !onednn::supports(t); }

// oneDNN 2.6 has no fast bfloat16 AMX kernel for a one-channel input (a grey image's first
// layer): on an AMX CPU it runs no faster than in float32. With the input and filter padded to
// four channels, the three extra ones zero, it picks its AMX kernels. Without AMX the padding only
// adds work, so only AMX CPUs pad (figures in docs/benchmarks.md). The zero channels add nothing
// to any sum, and pad's gradient slices them off.
constexpr int64_t kPaddedChannels = 4;
bool pads_channels(DType t, int64_t channels) {
  return t == kBFloat16 && channels == 1 && onednn::has_amx();
}

// The shapes of a 2-D (NHWC, HWIO) or 3-D (NDHWC, DHWIO) problem's input, output and filters.
template <typename Params>
Shape input_shape(const Params& p) {
  return p.spatial_dims == 3 ? Shape{p.n, p.d, p.h, p.w, p.c} : Shape{p.n, p.h, p.w, p.c};
}
template <typename Params>
Shape output_shape(const Params& p, int64_t channels) {
  return p.spatial_dims == 3 ? Shape{p.n, p.od, p.oh, p.ow, channels}
                             : Shape{p.n, p.oh, p.ow, channels};
}
Shape filter_shape(const ConvParams& p) {
  const int64_t in = p.c / p.groups;
  return p.spatial_dims == 3 ? Shape{p.kd, p.kh, p.kw, in, p.oc} : Shape{p.kh, p.kw, in, p.oc};
}
template <typename Params>
const char* op_name(const Params& p, const char* two_d, const char* three_d) {
  return p.spatial_dims == 3 ? three_d : two_d;
}

// Runs the oneDNN kernel, or for float64 the reference one.
template <typename OneDnn, typename Reference>
void run_kernel(DType dtype, OneDnn&& onednn_kernel, Reference&& reference) {
  if (onednn::supports(dtype)) {
    onednn_kernel();
  } else {
    WEFT_ASSERT(dtype == kFloat64) << "no kernel for " << dtype;
    reference(double{});
  }
}

Tensor conv_backward_input(const Tensor& dy, const Tensor& w, const ConvParams& p);
Tensor conv_backward_filter(const Tensor& x, const Tensor& dy, const ConvParams& p);

Tensor conv_forward(const Tensor& x_in, const Tensor& w_in, const ConvParams& p) {
  Tensor x = contiguous(x_in), w = contiguous(w_in);
  Tensor y = Tensor::empty(output_shape(p, p.oc), x.dtype());
  run_kernel(
      x.dtype(),
      [&] { onednn::conv_forward(x.dtype(), p, x.raw_data(), w.raw_data(), y.raw_data()); },
      [&](auto t) {
        using T = decltype(t);
        ops::internal::conv_forward<T>(p, x.data<T>(), w.data<T>(), y.data<T>());
      });
  if (autodiff::is_recording()) {
    autodiff::record(op_name(p, "conv2d", "conv3d"), {x_in, w_in}, {y},
                     [x_in, w_in, p](const autodiff::Grads& g) {
                       return std::vector<Tensor>{
                           g.needs(0) ? conv_backward_input(g[0], w_in, p) : Tensor(),
                           g.needs(1) ? conv_backward_filter(x_in, g[0], p) : Tensor()};
                     });
  }
  return y;
}

// Both backward ops are linear in each argument; their own gradients give second derivatives.
Tensor conv_backward_input(const Tensor& dy_in, const Tensor& w_in, const ConvParams& p) {
  Tensor dy = contiguous(dy_in), w = contiguous(w_in);
  Tensor dx = Tensor::empty(input_shape(p), dy.dtype());
  run_kernel(
      dy.dtype(),
      [&] {
        onednn::conv_backward_input(dy.dtype(), p, dy.raw_data(), w.raw_data(), dx.raw_data());
      },
      [&](auto t) {
        using T = decltype(t);
        ops::internal::conv_backward_input<T>(p, dy.data<T>(), w.data<T>(), dx.data<T>());
      });
  if (autodiff::is_recording()) {
    autodiff::record(op_name(p, "conv2d_backprop_input", "conv3d_backprop_input"), {dy_in, w_in},
                     {dx}, [dy_in, w_in, p](const autodiff::Grads& g) {
                       return std::vector<Tensor>{conv_forward(g[0], w_in, p),
                                                  conv_backward_filter(g[0], dy_in, p)};
                     });
  }
  return dx;
}

Tensor conv_backward_filter(const Tensor& x_in, const Tensor& dy_in, const ConvParams& p) {
  Tensor x = contiguous(x_in), dy = contiguous(dy_in);
  Tensor dw = Tensor::empty(filter_shape(p), x.dtype());
  run_kernel(
      x.dtype(),
      [&] {
        onednn::conv_backward_filter(x.dtype(), p, x.raw_data(), dy.raw_data(), dw.raw_data());
      },
      [&](auto t) {
        using T = decltype(t);
        ops::internal::conv_backward_filter<T>(p, x.data<T>(), dy.data<T>(), dw.data<T>());
      });
  if (autodiff::is_recording()) {
    autodiff::record(op_name(p, "conv2d_backprop_filter", "conv3d_backprop_filter"), {x_in, dy_in},
                     {dw}, [x_in, dy_in, p](const autodiff::Grads& g) {
                       return std::vector<Tensor>{conv_backward_input(dy_in, g[0], p),
                                                  conv_forward(x_in, g[0], p)};
                     });
  }
  return dw;
}

PoolParams pool_params(const char* op, const Tensor& x, Size2 ksize, Size2 strides,
                       std::string_view padding) {
  check_rank(op, "input", x, 4);
  return ops::internal::make_pool2d_params(op, x.dim(0), x.dim(1), x.dim(2), x.dim(3), ksize[0],
                                           ksize[1], strides[0], strides[1], padding);
}

Tensor avg_pool_backward(const Tensor& dy_in, const PoolParams& p);

Tensor avg_pool_forward(const Tensor& x_in, const PoolParams& p) {
  Tensor x = contiguous(x_in);
  Tensor y = Tensor::empty(output_shape(p, p.c), x.dtype());
  run_kernel(
      x.dtype(), [&] { onednn::avg_pool_forward(x.dtype(), p, x.raw_data(), y.raw_data()); },
      [&](auto t) {
        using T = decltype(t);
        ops::internal::avg_pool_forward<T>(p, x.data<T>(), y.data<T>());
      });
  if (autodiff::is_recording()) {
    autodiff::record(
        op_name(p, "avg_pool2d", "avg_pool3d"), {x_in}, {y},
        [p](const autodiff::Grads& g) { return std::vector<Tensor>{avg_pool_backward(g[0], p)}; });
  }
  return y;
}

Tensor avg_pool_backward(const Tensor& dy_in, const PoolParams& p) {
  Tensor dy = contiguous(dy_in);
  Tensor dx = Tensor::empty(input_shape(p), dy.dtype());
  run_kernel(
      dy.dtype(), [&] { onednn::avg_pool_backward(dy.dtype(), p, dy.raw_data(), dx.raw_data()); },
      [&](auto t) {
        using T = decltype(t);
        ops::internal::avg_pool_backward<T>(p, dy.data<T>(), dx.data<T>());
      });
  if (autodiff::is_recording()) {
    autodiff::record(
        op_name(p, "avg_pool2d_grad", "avg_pool3d_grad"), {dy_in}, {dx},
        [p](const autodiff::Grads& g) { return std::vector<Tensor>{avg_pool_forward(g[0], p)}; });
  }
  return dx;
}

}  // namespace

Tensor conv3d(const Tensor& x_in, const Tensor& f_in, Size3 strides, std::string_view padding,
              Size3 dilations) {
  check_rank("conv3d", "input", x_in, 5);
  check_rank("conv3d", "filters", f_in, 5);
  OpScope op("conv3d", x_in, f_in);
  if (op.spmd()) {  // per example: the batch as the input's, the filters whole
    return op.run(SpmdRule{SpmdRule::Kind::kBatch}, {x_in, f_in}, [=](const SpmdArgs& c) {
      return conv3d(c[0], c[1], strides, padding, dilations);
    });
  }
  const int64_t groups = f_in.dim(3) > 0 ? x_in.dim(4) / f_in.dim(3) : 0;
  WEFT_CHECK(groups >= 1 && x_in.dim(4) == groups * f_in.dim(3) && f_in.dim(4) % groups == 0,
             InvalidArgument)
      << "conv3d: input has " << x_in.dim(4) << " channels (shape " << shape_str(x_in.shape())
      << ") but the filters expect " << f_in.dim(3) << " (shape " << shape_str(f_in.shape())
      << ", DHWIO), or a divisor of them whose quotient (the groups) divides the " << f_in.dim(4)
      << " output channels";
  DType dtype = promote_types(x_in.dtype(), f_in.dtype());
  if (needs_float32(dtype)) {
    return cast(conv3d(cast(x_in, kFloat32), cast(f_in, kFloat32), strides, padding, dilations),
                dtype);
  }
  Tensor x = cast(x_in, dtype), f = cast(f_in, dtype);
  ConvParams p = ops::internal::make_conv3d_params("conv3d", x.dim(0), x.dim(1), x.dim(2), x.dim(3),
                                                   x.dim(4), f.dim(0), f.dim(1), f.dim(2), f.dim(4),
                                                   strides, dilations, padding, groups);
  return conv_forward(x, f, p);
}

Tensor conv2d(const Tensor& x_in, const Tensor& f_in, Size2 strides, std::string_view padding,
              Size2 dilations) {
  check_rank("conv2d", "input", x_in, 4);
  check_rank("conv2d", "filters", f_in, 4);
  OpScope op("conv2d", x_in, f_in);
  if (op.spmd()) {  // per example: the batch as the input's, the filters whole
    return op.run(SpmdRule{SpmdRule::Kind::kBatch}, {x_in, f_in}, [=](const SpmdArgs& c) {
      return conv2d(c[0], c[1], strides, padding, dilations);
    });
  }
  const int64_t groups = f_in.dim(2) > 0 ? x_in.dim(3) / f_in.dim(2) : 0;
  WEFT_CHECK(groups >= 1 && x_in.dim(3) == groups * f_in.dim(2) && f_in.dim(3) % groups == 0,
             InvalidArgument)
      << "conv2d: input has " << x_in.dim(3) << " channels (shape " << shape_str(x_in.shape())
      << ") but the filters expect " << f_in.dim(2) << " (shape " << shape_str(f_in.shape())
      << ", HWIO), or a divisor of them whose quotient (the groups) divides the " << f_in.dim(3)
      << " output channels";
  DType dtype = promote_types(x_in.dtype(), f_in.dtype());
  if (needs_float32(dtype)) {
    return cast(conv2d(cast(x_in, kFloat32), cast(f_in, kFloat32), strides, padding, dilations),
                dtype);
  }
  Tensor x = cast(x_in, dtype), f = cast(f_in, dtype);
  if (groups == 1 && pads_channels(dtype, x.dim(3))) {
    int64_t extra = kPaddedChannels - 1;
    return conv2d(pad(x, {{0, 0}, {0, 0}, {0, 0}, {0, extra}}),
                  pad(f, {{0, 0}, {0, 0}, {0, extra}, {0, 0}}), strides, padding, dilations);
  }
  ConvParams p = ops::internal::make_conv2d_params(
      "conv2d", x.dim(0), x.dim(1), x.dim(2), x.dim(3), f.dim(0), f.dim(1), f.dim(3), strides[0],
      strides[1], dilations[0], dilations[1], padding, groups);
  return conv_forward(x, f, p);
}

Tensor depthwise_conv2d(const Tensor& x, const Tensor& filters, Size2 strides,
                        std::string_view padding, Size2 dilations) {
  check_rank("depthwise_conv2d", "input", x, 4);
  check_rank("depthwise_conv2d", "filters", filters, 4);
  WEFT_CHECK(x.dim(3) == filters.dim(2), InvalidArgument)
      << "depthwise_conv2d: input has " << x.dim(3) << " channels (shape " << shape_str(x.shape())
      << ") but the filters (kh, kw, channels, multiplier) have " << filters.dim(2) << " (shape "
      << shape_str(filters.shape()) << ")";
  // (kh, kw, c, m) in memory is the grouped filter (kh, kw, 1, c * m): one group per channel.
  Shape grouped{filters.dim(0), filters.dim(1), 1, filters.dim(2) * filters.dim(3)};
  return conv2d(x, reshape(filters, grouped), strides, padding, dilations);
}

Tensor conv2d_transpose(const Tensor& x_in, const Tensor& f_in, Size2 strides,
                        std::string_view padding, Size2 dilations) {
  check_rank("conv2d_transpose", "input", x_in, 4);
  check_rank("conv2d_transpose", "filters", f_in, 4);
  OpScope op("conv2d_transpose", x_in, f_in);
  if (op.spmd()) {  // per example: the batch as the input's, the filters whole
    return op.run(SpmdRule{SpmdRule::Kind::kBatch}, {x_in, f_in}, [=](const SpmdArgs& c) {
      return conv2d_transpose(c[0], c[1], strides, padding, dilations);
    });
  }
  WEFT_CHECK(x_in.dim(3) == f_in.dim(3), InvalidArgument)
      << "conv2d_transpose: input has " << x_in.dim(3) << " channels (shape "
      << shape_str(x_in.shape()) << ") but the filters (kh, kw, out, in) take " << f_in.dim(3)
      << " (shape " << shape_str(f_in.shape()) << ")";
  WEFT_CHECK(padding == "SAME" || padding == "VALID", InvalidArgument)
      << "conv2d_transpose: padding must be \"SAME\" or \"VALID\", got \"" << padding << "\"";
  DType dtype = promote_types(x_in.dtype(), f_in.dtype());
  if (needs_float32(dtype)) {
    return cast(
        conv2d_transpose(cast(x_in, kFloat32), cast(f_in, kFloat32), strides, padding, dilations),
        dtype);
  }
  // Keras's deconv_output_length.
  auto out_size = [&](int64_t in, int64_t k, int64_t stride, int64_t dilation) {
    const int64_t reach = (k - 1) * dilation + 1;
    return padding == "SAME" ? in * stride : in * stride + std::max<int64_t>(reach - stride, 0);
  };
  const int64_t h = out_size(x_in.dim(1), f_in.dim(0), strides[0], dilations[0]);
  const int64_t w = out_size(x_in.dim(2), f_in.dim(1), strides[1], dilations[1]);
  // The convolution whose input gradient this is: from (n, h, w, out) to x's shape.
  ConvParams p = ops::internal::make_conv2d_params(
      "conv2d_transpose", x_in.dim(0), h, w, f_in.dim(2), f_in.dim(0), f_in.dim(1), f_in.dim(3),
      strides[0], strides[1], dilations[0], dilations[1], padding);
  WEFT_ASSERT(p.oh == x_in.dim(1) && p.ow == x_in.dim(2))
      << "conv2d_transpose: output " << h << "x" << w << " does not map back to the input";
  return conv_backward_input(cast(x_in, dtype), cast(f_in, dtype), p);
}

Tensor conv1d(const Tensor& x, const Tensor& filters, int64_t stride, std::string_view padding,
              int64_t dilation) {
  WEFT_CHECK(x.defined() && x.rank() == 3 && filters.defined() && filters.rank() == 3,
             InvalidArgument)
      << "conv1d: expected an input (batch, length, channels) and filters (width, channels, "
         "filters), got shapes "
      << (x.defined() ? shape_str(x.shape()) : "undefined") << " and "
      << (filters.defined() ? shape_str(filters.shape()) : "undefined");
  Tensor y =
      conv2d(expand_dims(x, 1), expand_dims(filters, 0), {1, stride}, padding, {1, dilation});
  return squeeze(y, {1});
}

namespace {

// The flat input position of each output's maximum, from the taps max_pool2d_nhwc_forward saved
// (tap ky * kw + kx of the unclipped window).
Tensor max_positions(const PoolParams& p, const Tensor& argmax) {
  Tensor at = Tensor::empty(argmax.shape(), kInt64);
  const int32_t* tap = argmax.data<int32_t>();
  int64_t* out = at.data<int64_t>();
  for (int64_t b = 0, i = 0; b < p.n; ++b) {
    for (int64_t oy = 0; oy < p.oh; ++oy) {
      for (int64_t ox = 0; ox < p.ow; ++ox) {
        for (int64_t ch = 0; ch < p.c; ++ch, ++i) {
          const int64_t iy = oy * p.stride_h - p.pad_top + tap[i] / p.kw;
          const int64_t ix = ox * p.stride_w - p.pad_left + tap[i] % p.kw;
          out[i] = ((b * p.h + iy) * p.w + ix) * p.c + ch;
        }
      }
    }
  }
  return at;
}

}  // namespace

Tensor max_pool2d(const Tensor& x_in, Size2 ksize, Size2 strides, std::string_view padding) {
  OpScope op("max_pool2d", x_in);
  if (op.spmd()) {
    return op.run(SpmdRule{SpmdRule::Kind::kBatch}, {x_in},
                  [=](const SpmdArgs& c) { return max_pool2d(c[0], ksize, strides, padding); });
  }
  PoolParams p = pool_params("max_pool2d", x_in, ksize, strides, padding);
  Tensor x = contiguous(x_in);
  Tensor y = Tensor::empty({p.n, p.oh, p.ow, p.c}, x.dtype());
  // Where each maximum was, for the backward pass.
  Tensor argmax = Tensor::empty(y.shape(), kInt32);
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      ops::internal::max_pool2d_nhwc_forward<T>(p, x.data<T>(), y.data<T>(),
                                                argmax.data<int32_t>());
    }
  });
  if (autodiff::is_recording()) {
    DType dtype = x.dtype();
    autodiff::record("max_pool2d", {x_in}, {y}, [argmax, dtype, p](const autodiff::Grads& g) {
      Tensor dy = contiguous(cast(g[0], dtype));
      Tensor dx = Tensor::empty({p.n, p.h, p.w, p.c}, dtype);
      dispatch_dtype(dtype, [&]<typename T>() {
        if constexpr (std::is_floating_point_v<compute_t<T>>) {
          ops::internal::max_pool2d_nhwc_backward<T>(p, argmax.data<int32_t>(), dy.data<T>(),
                                                     dx.data<T>());
        }
      });
      if (autodiff::is_recording()) {
        // The gradient is linear in dy: its own gradient (and a forward accumulator's tangent)
        // gathers each output's value from where that output's maximum was.
        Tensor at = max_positions(p, argmax);
        autodiff::record("max_pool2d_grad", {dy}, {dx}, [at](const autodiff::Grads& gg) {
          return std::vector<Tensor>{gather(reshape(gg[0], {-1}), at)};
        });
      }
      return std::vector<Tensor>{dx};
    });
  }
  return y;
}

Tensor avg_pool2d(const Tensor& x, Size2 ksize, Size2 strides, std::string_view padding) {
  OpScope op("avg_pool2d", x);
  if (op.spmd()) {
    return op.run(SpmdRule{SpmdRule::Kind::kBatch}, {x},
                  [=](const SpmdArgs& c) { return avg_pool2d(c[0], ksize, strides, padding); });
  }
  PoolParams p = pool_params("avg_pool2d", x, ksize, strides, padding);
  if (needs_float32(x.dtype())) {
    return cast(avg_pool2d(cast(x, kFloat32), ksize, strides, padding), x.dtype());
  }
  return avg_pool_forward(x, p);
}

// A box's maximum is the maximum over its planes of each plane's (height, width) maximum, so
// max_pool3d is two passes of max_pool2d: over (height, width) with the depth folded into the
// batch, then over the depth with (height, width) folded into one axis. Each pass keeps the first
// maximum (row-major) and the first NaN, so the two keep the first in (depth, height, width) order
// as the 2-D kernel does; padding (SAME is per axis) never wins. The gradient is the passes'.
Tensor max_pool3d(const Tensor& x, Size3 ksize, Size3 strides, std::string_view padding) {
  check_rank("max_pool3d", "input", x, 5);
  OpScope op("max_pool3d", x);
  if (op.spmd()) {
    return op.run(SpmdRule{SpmdRule::Kind::kBatch}, {x},
                  [=](const SpmdArgs& c) { return max_pool3d(c[0], ksize, strides, padding); });
  }
  PoolParams p = ops::internal::make_pool3d_params("max_pool3d", x.dim(0), x.dim(1), x.dim(2),
                                                   x.dim(3), x.dim(4), ksize, strides, padding);
  Tensor planes = max_pool2d(reshape(x, {p.n * p.d, p.h, p.w, p.c}), {ksize[1], ksize[2]},
                             {strides[1], strides[2]}, padding);
  Tensor depth = max_pool2d(reshape(planes, {p.n, p.d, p.oh * p.ow, p.c}), {ksize[0], 1},
                            {strides[0], 1}, padding);
  return reshape(depth, {p.n, p.od, p.oh, p.ow, p.c});
}

Tensor avg_pool3d(const Tensor& x, Size3 ksize, Size3 strides, std::string_view padding) {
  check_rank("avg_pool3d", "input", x, 5);
  OpScope op("avg_pool3d", x);
  if (op.spmd()) {
    return op.run(SpmdRule{SpmdRule::Kind::kBatch}, {x},
                  [=](const SpmdArgs& c) { return avg_pool3d(c[0], ksize, strides, padding); });
  }
  PoolParams p = ops::internal::make_pool3d_params("avg_pool3d", x.dim(0), x.dim(1), x.dim(2),
                                                   x.dim(3), x.dim(4), ksize, strides, padding);
  if (needs_float32(x.dtype())) {
    return cast(avg_pool3d(cast(x, kFloat32), ksize, strides, padding), x.dtype());
  }
  return avg_pool_forward(x, p);
}

}  // namespace weft
