#include "weft/ops/internal/max_pool.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/core/parallel.h"

namespace weft::ops::internal {
namespace {

// The input rows and columns of output (oy, ox)'s window, clipped to the image.
struct Window {
  int64_t y0, y1, x0, x1;
};

Window window(const Pool2DParams& p, int64_t oy, int64_t ox) {
  int64_t top = oy * p.stride_h - p.pad_top, left = ox * p.stride_w - p.pad_left;
  return {std::max<int64_t>(top, 0), std::min(top + p.kh, p.h), std::max<int64_t>(left, 0),
          std::min(left + p.kw, p.w)};
}

// best[ch] = the window's maximum of channel ch; where[ch] = its position in the window (row-major
// over the clipped window), the first one on ties, the first NaN if any.
template <typename T, typename C>
void window_max(const Pool2DParams& p, const T* image, const Window& win, C* __restrict best,
                int32_t* __restrict where) {
  int32_t k = 0;
  for (int64_t iy = win.y0; iy < win.y1; ++iy) {
    for (int64_t ix = win.x0; ix < win.x1; ++ix, ++k) {
      const T* __restrict in = image + (iy * p.w + ix) * p.c;
      if (k == 0) {
        for (int64_t ch = 0; ch < p.c; ++ch) {
          best[ch] = static_cast<C>(in[ch]);
          if (where) where[ch] = 0;
        }
        continue;
      }
      for (int64_t ch = 0; ch < p.c; ++ch) {
        C v = static_cast<C>(in[ch]);
        bool take = v > best[ch] || (v != v && best[ch] == best[ch]);
        best[ch] = take ? v : best[ch];
        if (where) where[ch] = take ? k : where[ch];
      }
    }
  }
}

}  // namespace

template <typename T>
void max_pool2d_nhwc_forward(const Pool2DParams& p, const T* x, T* y) {
  using C = compute_t<T>;
  parallel_for(p.n * p.oh, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> best(p.c);
    for (int64_t row = begin; row < end; ++row) {
      int64_t b = row / p.oh, oy = row % p.oh;
      const T* image = x + b * p.h * p.w * p.c;
      for (int64_t ox = 0; ox < p.ow; ++ox) {
        window_max<T, C>(p, image, window(p, oy, ox), best.data(), nullptr);
        T* __restrict out = y + ((row * p.ow) + ox) * p.c;
        for (int64_t ch = 0; ch < p.c; ++ch) out[ch] = static_cast<T>(best[ch]);
      }
    }
  });
}

template <typename T>
void max_pool2d_nhwc_backward(const Pool2DParams& p, const T* x, const T* dy, T* dx) {
  using C = compute_t<T>;
  int64_t image_size = p.h * p.w * p.c;
  // One image per work item: windows never cross images, so no two items write the same dx.
  parallel_for(p.n, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> best(p.c);
    std::vector<int32_t> where(p.c);
    for (int64_t b = begin; b < end; ++b) {
      const T* image = x + b * image_size;
      T* grad = dx + b * image_size;
      std::fill_n(grad, image_size, T(0));
      for (int64_t oy = 0; oy < p.oh; ++oy) {
        for (int64_t ox = 0; ox < p.ow; ++ox) {
          Window win = window(p, oy, ox);
          window_max<T, C>(p, image, win, best.data(), where.data());
          const T* __restrict g = dy + ((b * p.oh + oy) * p.ow + ox) * p.c;
          int32_t k = 0;
          for (int64_t iy = win.y0; iy < win.y1; ++iy) {
            for (int64_t ix = win.x0; ix < win.x1; ++ix, ++k) {
              T* __restrict d = grad + (iy * p.w + ix) * p.c;
              const int32_t* __restrict w = where.data();
              for (int64_t ch = 0; ch < p.c; ++ch) {
                d[ch] = static_cast<T>(static_cast<C>(d[ch]) +
                                       (w[ch] == k ? static_cast<C>(g[ch]) : C(0)));
              }
            }
          }
        }
      }
    }
  });
}

#define WEFT_INSTANTIATE(T)                                                                  \
  template void max_pool2d_nhwc_forward<T>(const Pool2DParams&, const T*, T*);               \
  template void max_pool2d_nhwc_backward<T>(const Pool2DParams&, const T*, const T*, T*);
WEFT_INSTANTIATE(float)
WEFT_INSTANTIATE(double)
WEFT_INSTANTIATE(bfloat16)
WEFT_INSTANTIATE(float16)
#undef WEFT_INSTANTIATE

}  // namespace weft::ops::internal
