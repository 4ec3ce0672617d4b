#include "weft/ops/internal/conv_reference.h"

#include <algorithm>
#include <cmath>

#include "weft/core/errors.h"

namespace weft::ops::internal {
namespace {

struct SpatialDim {
  int64_t out;
  int64_t pad_before;
};

// TF's padding rule, the one place it lives for conv and pool alike.
SpatialDim resolve_spatial_dim(std::string_view op_name, std::string_view dim, int64_t in,
                               int64_t k, int64_t stride, int64_t dilation,
                               std::string_view padding) {
  WEFT_CHECK(in >= 0, InvalidArgument)
      << op_name << ": input " << dim << " " << in << " is negative";
  WEFT_CHECK(k >= 1 && stride >= 1 && dilation >= 1, InvalidArgument)
      << op_name << ": kernel " << dim << " " << k << ", stride " << stride << " and dilation "
      << dilation << " must all be at least 1";
  const int64_t k_eff = (k - 1) * dilation + 1;
  SpatialDim d{};
  if (padding == "VALID") {
    d.out = in >= k_eff ? (in - k_eff) / stride + 1 : 0;
    d.pad_before = 0;
  } else if (padding == "SAME") {
    d.out = (in + stride - 1) / stride;
    d.pad_before = std::max<int64_t>((d.out - 1) * stride + k_eff - in, 0) / 2;
  } else {
    WEFT_FAIL(InvalidArgument) << op_name << ": padding must be \"SAME\" or \"VALID\", got \""
                               << padding << "\"";
  }
  WEFT_CHECK(d.out >= 1, InvalidArgument)
      << op_name << ": output " << dim << " would be empty: input " << dim << " " << in
      << ", kernel " << dim << " " << k << ", dilation " << dilation << " (dilated kernel " << dim
      << " " << k_eff << "), stride " << stride << ", padding " << padding;
  return d;
}

void check_non_negative(std::string_view op_name, std::string_view what, int64_t value) {
  WEFT_CHECK(value >= 0, InvalidArgument)
      << op_name << ": " << what << " " << value << " is negative";
}

// Calls f(y_offset, x_offset, w_offset) for every output pixel and every filter tap that lands
// inside the input (taps on padding contribute zero), ordered by batch, output plane, row, column,
// filter plane, row, column. The offsets locate the pixel's oc outputs, the input pixel's c
// channels and the tap's (c / groups)×oc filter matrix.
template <typename F>
void for_each_tap(const ConvParams& p, F&& f) {
  for (int64_t b = 0; b < p.n; ++b) {
    for (int64_t oz = 0; oz < p.od; ++oz) {
      for (int64_t oy = 0; oy < p.oh; ++oy) {
        for (int64_t ox = 0; ox < p.ow; ++ox) {
          const int64_t y_offset = (((b * p.od + oz) * p.oh + oy) * p.ow + ox) * p.oc;
          for (int64_t kz = 0; kz < p.kd; ++kz) {
            const int64_t iz = oz * p.stride_d - p.pad_front + kz * p.dilation_d;
            if (iz < 0 || iz >= p.d) continue;
            for (int64_t ky = 0; ky < p.kh; ++ky) {
              const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dilation_h;
              if (iy < 0 || iy >= p.h) continue;
              for (int64_t kx = 0; kx < p.kw; ++kx) {
                const int64_t ix = ox * p.stride_w - p.pad_left + kx * p.dilation_w;
                if (ix < 0 || ix >= p.w) continue;
                f(y_offset, (((b * p.d + iz) * p.h + iy) * p.w + ix) * p.c,
                  ((kz * p.kh + ky) * p.kw + kx) * (p.c / p.groups) * p.oc);
              }
            }
          }
        }
      }
    }
  }
}

// One output pixel's window, clipped to the input: planes [z0, z1), rows [y0, y1), columns
// [x0, x1).
struct PoolWindow {
  int64_t y_offset;
  int64_t b, z0, z1, y0, y1, x0, x1;
  int64_t count() const { return (z1 - z0) * (y1 - y0) * (x1 - x0); }
};

template <typename F>
void for_each_window(const PoolParams& p, F&& f) {
  for (int64_t b = 0; b < p.n; ++b) {
    for (int64_t oz = 0; oz < p.od; ++oz) {
      for (int64_t oy = 0; oy < p.oh; ++oy) {
        for (int64_t ox = 0; ox < p.ow; ++ox) {
          const int64_t front = oz * p.stride_d - p.pad_front;
          const int64_t top = oy * p.stride_h - p.pad_top;
          const int64_t left = ox * p.stride_w - p.pad_left;
          f(PoolWindow{(((b * p.od + oz) * p.oh + oy) * p.ow + ox) * p.c, b,
                       std::max<int64_t>(front, 0), std::min(front + p.kd, p.d),
                       std::max<int64_t>(top, 0), std::min(top + p.kh, p.h),
                       std::max<int64_t>(left, 0), std::min(left + p.kw, p.w)});
        }
      }
    }
  }
}

// Calls f(x_offset) for every input pixel of the window, in row-major (plane, row, column) order.
template <typename F>
void for_each_in_window(const PoolParams& p, const PoolWindow& win, F&& f) {
  for (int64_t iz = win.z0; iz < win.z1; ++iz) {
    for (int64_t iy = win.y0; iy < win.y1; ++iy) {
      for (int64_t ix = win.x0; ix < win.x1; ++ix)
        f((((win.b * p.d + iz) * p.h + iy) * p.w + ix) * p.c);
    }
  }
}

// Shared by forward and backward so the gradient goes exactly where the forward value came from.
template <typename T>
int64_t window_argmax(const PoolParams& p, const PoolWindow& win, const T* x, int64_t ch) {
  int64_t best = -1;
  for_each_in_window(p, win, [&](int64_t offset) {
    const int64_t at = offset + ch;
    if (best < 0 || x[at] > x[best] || (std::isnan(x[at]) && !std::isnan(x[best]))) best = at;
  });
  return best;
}

}  // namespace

ConvParams make_conv2d_params(std::string_view op_name, int64_t n, int64_t h, int64_t w, int64_t c,
                              int64_t kh, int64_t kw, int64_t oc, int64_t stride_h,
                              int64_t stride_w, int64_t dilation_h, int64_t dilation_w,
                              std::string_view padding, int64_t groups) {
  check_non_negative(op_name, "batch size", n);
  check_non_negative(op_name, "input channels", c);
  check_non_negative(op_name, "output channels", oc);
  WEFT_CHECK(groups >= 1 && c % groups == 0 && oc % groups == 0, InvalidArgument)
      << op_name << ": " << groups << " groups must divide the " << c << " input channels and the "
      << oc << " output channels";
  const SpatialDim rows =
      resolve_spatial_dim(op_name, "height", h, kh, stride_h, dilation_h, padding);
  const SpatialDim cols =
      resolve_spatial_dim(op_name, "width", w, kw, stride_w, dilation_w, padding);
  return ConvParams{.n = n,
                    .h = h,
                    .w = w,
                    .c = c,
                    .kh = kh,
                    .kw = kw,
                    .oc = oc,
                    .oh = rows.out,
                    .ow = cols.out,
                    .stride_h = stride_h,
                    .stride_w = stride_w,
                    .dilation_h = dilation_h,
                    .dilation_w = dilation_w,
                    .pad_top = rows.pad_before,
                    .pad_left = cols.pad_before,
                    .groups = groups};
}

PoolParams make_pool2d_params(std::string_view op_name, int64_t n, int64_t h, int64_t w, int64_t c,
                              int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                              std::string_view padding) {
  check_non_negative(op_name, "batch size", n);
  check_non_negative(op_name, "channels", c);
  const SpatialDim rows = resolve_spatial_dim(op_name, "height", h, kh, stride_h, 1, padding);
  const SpatialDim cols = resolve_spatial_dim(op_name, "width", w, kw, stride_w, 1, padding);
  return PoolParams{.n = n,
                    .h = h,
                    .w = w,
                    .c = c,
                    .kh = kh,
                    .kw = kw,
                    .oh = rows.out,
                    .ow = cols.out,
                    .stride_h = stride_h,
                    .stride_w = stride_w,
                    .pad_top = rows.pad_before,
                    .pad_left = cols.pad_before};
}

ConvParams make_conv3d_params(std::string_view op_name, int64_t n, int64_t d, int64_t h, int64_t w,
                              int64_t c, int64_t kd, int64_t kh, int64_t kw, int64_t oc,
                              std::array<int64_t, 3> strides, std::array<int64_t, 3> dilations,
                              std::string_view padding, int64_t groups) {
  ConvParams p = make_conv2d_params(op_name, n, h, w, c, kh, kw, oc, strides[1], strides[2],
                                    dilations[1], dilations[2], padding, groups);
  const SpatialDim planes =
      resolve_spatial_dim(op_name, "depth", d, kd, strides[0], dilations[0], padding);
  p.d = d;
  p.kd = kd;
  p.od = planes.out;
  p.stride_d = strides[0];
  p.dilation_d = dilations[0];
  p.pad_front = planes.pad_before;
  p.spatial_dims = 3;
  return p;
}

PoolParams make_pool3d_params(std::string_view op_name, int64_t n, int64_t d, int64_t h, int64_t w,
                              int64_t c, std::array<int64_t, 3> ksize,
                              std::array<int64_t, 3> strides, std::string_view padding) {
  PoolParams p =
      make_pool2d_params(op_name, n, h, w, c, ksize[1], ksize[2], strides[1], strides[2], padding);
  const SpatialDim planes =
      resolve_spatial_dim(op_name, "depth", d, ksize[0], strides[0], 1, padding);
  p.d = d;
  p.kd = ksize[0];
  p.od = planes.out;
  p.stride_d = strides[0];
  p.pad_front = planes.pad_before;
  p.spatial_dims = 3;
  return p;
}

// Input channel ic of a tap: its row of the filter matrix and the outputs [o0, o1) of its group.
struct TapChannel {
  int64_t w_row, o0, o1;
};
TapChannel tap_channel(const ConvParams& p, int64_t ic) {
  const int64_t group_in = p.c / p.groups, group_out = p.oc / p.groups, g = ic / group_in;
  return {(ic % group_in) * p.oc, g * group_out, (g + 1) * group_out};
}

template <typename T>
void conv_forward(const ConvParams& p, const T* x, const T* w, T* y) {
  std::fill_n(y, p.n * p.od * p.oh * p.ow * p.oc, T{});
  for_each_tap(p, [&](int64_t yo, int64_t xo, int64_t wo) {
    for (int64_t ic = 0; ic < p.c; ++ic) {
      const TapChannel t = tap_channel(p, ic);
      const T xv = x[xo + ic];
      const T* w_row = w + wo + t.w_row;
      for (int64_t o = t.o0; o < t.o1; ++o) y[yo + o] += xv * w_row[o];
    }
  });
}

template <typename T>
void conv_backward_input(const ConvParams& p, const T* dy, const T* w, T* dx) {
  std::fill_n(dx, p.n * p.d * p.h * p.w * p.c, T{});
  for_each_tap(p, [&](int64_t yo, int64_t xo, int64_t wo) {
    for (int64_t ic = 0; ic < p.c; ++ic) {
      const TapChannel t = tap_channel(p, ic);
      const T* w_row = w + wo + t.w_row;
      T sum = 0;
      for (int64_t o = t.o0; o < t.o1; ++o) sum += dy[yo + o] * w_row[o];
      dx[xo + ic] += sum;
    }
  });
}

template <typename T>
void conv_backward_filter(const ConvParams& p, const T* x, const T* dy, T* dw) {
  std::fill_n(dw, p.kd * p.kh * p.kw * (p.c / p.groups) * p.oc, T{});
  for_each_tap(p, [&](int64_t yo, int64_t xo, int64_t wo) {
    for (int64_t ic = 0; ic < p.c; ++ic) {
      const TapChannel t = tap_channel(p, ic);
      const T xv = x[xo + ic];
      T* dw_row = dw + wo + t.w_row;
      for (int64_t o = t.o0; o < t.o1; ++o) dw_row[o] += xv * dy[yo + o];
    }
  });
}

template <typename T>
void max_pool_forward(const PoolParams& p, const T* x, T* y) {
  for_each_window(p, [&](const PoolWindow& win) {
    for (int64_t ch = 0; ch < p.c; ++ch) y[win.y_offset + ch] = x[window_argmax(p, win, x, ch)];
  });
}

template <typename T>
void max_pool_backward(const PoolParams& p, const T* x, const T* dy, T* dx) {
  std::fill_n(dx, p.n * p.d * p.h * p.w * p.c, T{});
  for_each_window(p, [&](const PoolWindow& win) {
    for (int64_t ch = 0; ch < p.c; ++ch) dx[window_argmax(p, win, x, ch)] += dy[win.y_offset + ch];
  });
}

template <typename T>
void avg_pool_forward(const PoolParams& p, const T* x, T* y) {
  for_each_window(p, [&](const PoolWindow& win) {
    const T count = static_cast<T>(win.count());
    for (int64_t ch = 0; ch < p.c; ++ch) {
      T sum = 0;
      for_each_in_window(p, win, [&](int64_t offset) { sum += x[offset + ch]; });
      y[win.y_offset + ch] = sum / count;
    }
  });
}

template <typename T>
void avg_pool_backward(const PoolParams& p, const T* dy, T* dx) {
  std::fill_n(dx, p.n * p.d * p.h * p.w * p.c, T{});
  for_each_window(p, [&](const PoolWindow& win) {
    const T count = static_cast<T>(win.count());
    for (int64_t ch = 0; ch < p.c; ++ch) {
      const T share = dy[win.y_offset + ch] / count;
      for_each_in_window(p, win, [&](int64_t offset) { dx[offset + ch] += share; });
    }
  });
}

#define WEFT_INSTANTIATE(T)                                                         \
  template void conv_forward<T>(const ConvParams&, const T*, const T*, T*);         \
  template void conv_backward_input<T>(const ConvParams&, const T*, const T*, T*);  \
  template void conv_backward_filter<T>(const ConvParams&, const T*, const T*, T*); \
  template void max_pool_forward<T>(const PoolParams&, const T*, T*);               \
  template void max_pool_backward<T>(const PoolParams&, const T*, const T*, T*);    \
  template void avg_pool_forward<T>(const PoolParams&, const T*, T*);               \
  template void avg_pool_backward<T>(const PoolParams&, const T*, T*);
WEFT_INSTANTIATE(float)
WEFT_INSTANTIATE(double)
#undef WEFT_INSTANTIATE

}  // namespace weft::ops::internal
