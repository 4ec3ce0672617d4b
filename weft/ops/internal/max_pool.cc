#include "weft/ops/internal/max_pool.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/core/parallel.h"

namespace weft::ops::internal {
namespace {

// An unsigned integer of N bytes that may alias any type.
template <size_t N>
struct UnsignedOfSizeImpl;
template <>
struct UnsignedOfSizeImpl<2> {
  typedef uint16_t __attribute__((may_alias)) type;
};
template <>
struct UnsignedOfSizeImpl<4> {
  typedef uint32_t __attribute__((may_alias)) type;
};
template <>
struct UnsignedOfSizeImpl<8> {
  typedef uint64_t __attribute__((may_alias)) type;
};
template <size_t N>
using UnsignedOfSize = typename UnsignedOfSizeImpl<N>::type;

// The input rows and columns of output (oy, ox)'s window, clipped to the image, and where the
// unclipped window starts.
struct Window {
  int64_t y0, y1, x0, x1;
  int64_t top, left;
};

Window window(const PoolParams& p, int64_t oy, int64_t ox) {
  int64_t top = oy * p.stride_h - p.pad_top, left = ox * p.stride_w - p.pad_left;
  return {std::max<int64_t>(top, 0),
          std::min(top + p.kh, p.h),
          std::max<int64_t>(left, 0),
          std::min(left + p.kw, p.w),
          top,
          left};
}

// Whether v replaces best as its window's maximum: the first NaN wins; otherwise only a larger
// value does, so ties keep the first occurrence.
template <typename C>
inline bool takes_over(C v, C best) {
  return v > best || (v != v && best == best);
}

// best[ch] = the window's maximum of channels [0, n) (image offset to the first of them), and
// at[ch] = its tap in the window (ky * kw + kx, counting the taps of the unclipped window). N > 0
// fixes the count at compile time, so that best and at stay in registers across the taps.
template <int64_t N, typename T, typename C>
void window_max(const PoolParams& p, const T* image, const Window& win, int64_t n,
                C* __restrict best, int32_t* __restrict at) {
  if constexpr (N > 0) n = N;
  bool first = true;
  for (int64_t iy = win.y0; iy < win.y1; ++iy) {
    for (int64_t ix = win.x0; ix < win.x1; ++ix) {
      const T* __restrict in = image + (iy * p.w + ix) * p.c;
      auto tap = static_cast<int32_t>((iy - win.top) * p.kw + (ix - win.left));
      if (first) {
#pragma omp simd
        for (int64_t ch = 0; ch < n; ++ch) {
          best[ch] = static_cast<C>(in[ch]);
          at[ch] = tap;
        }
        first = false;
        continue;
      }
#pragma omp simd
      for (int64_t ch = 0; ch < n; ++ch) {
        C v = static_cast<C>(in[ch]);
        bool take = takes_over(v, best[ch]);
        best[ch] = take ? v : best[ch];
        at[ch] = take ? tap : at[ch];
      }
    }
  }
}

// T(v) for a v that came from a T, so that no rounding is needed: for bfloat16 its top half.
template <typename T, typename C>
inline T exact_narrow(C v) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    T t;
    t.bits = static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16);
    return t;
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace

template <typename T>
void max_pool2d_nhwc_forward(const PoolParams& p, const T* x, T* y, int32_t* argmax) {
  using C = compute_t<T>;
  // Channels go in blocks of two AVX-512 registers' worth, whose maxima and taps stay in
  // registers over the window (faster than in memory; figures in docs/benchmarks.md).
  constexpr int64_t kBlock = 64 / sizeof(C) * 2;
  int64_t blocked = p.c / kBlock * kBlock;
  parallel_for(p.n * p.oh, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> tail_best(p.c - blocked);
    std::vector<int32_t> tail_at(p.c - blocked);
    for (int64_t row = begin; row < end; ++row) {
      int64_t b = row / p.oh, oy = row % p.oh;
      const T* image = x + b * p.h * p.w * p.c;
      for (int64_t ox = 0; ox < p.ow; ++ox) {
        Window win = window(p, oy, ox);
        int64_t out = ((row * p.ow) + ox) * p.c;
        auto store = [&](const C* best, const int32_t* at, int64_t c0, int64_t n) {
          T* __restrict yo = y + out + c0;
          int32_t* __restrict ao = argmax + out + c0;
#pragma omp simd
          for (int64_t ch = 0; ch < n; ++ch) {
            yo[ch] = exact_narrow<T>(best[ch]);
            ao[ch] = at[ch];
          }
        };
        for (int64_t c0 = 0; c0 < blocked; c0 += kBlock) {
          C best[kBlock];
          int32_t at[kBlock];
          window_max<kBlock>(p, image + c0, win, kBlock, best, at);
          store(best, at, c0, kBlock);
        }
        if (blocked < p.c) {
          window_max<0>(p, image + blocked, win, p.c - blocked, tail_best.data(), tail_at.data());
          store(tail_best.data(), tail_at.data(), blocked, p.c - blocked);
        }
      }
    }
  });
}

template <typename T>
void max_pool2d_nhwc_backward(const PoolParams& p, const int32_t* argmax, const T* dy, T* dx) {
  using C = compute_t<T>;
  using Bits = UnsignedOfSize<sizeof(T)>;
  int64_t image_size = p.h * p.w * p.c;
  // Windows that do not overlap give each input at most one gradient: it is written, not added,
  // and when they also cover the whole image, dx needs no zeroing first.
  bool disjoint = p.kh <= p.stride_h && p.kw <= p.stride_w;
  bool covering = disjoint && p.kh == p.stride_h && p.kw == p.stride_w && p.oh * p.kh == p.h &&
                  p.ow * p.kw == p.w && p.pad_top == 0 && p.pad_left == 0;
  // One image per work item: windows never cross images, so no two items write the same dx.
  parallel_for(p.n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      T* grad = dx + b * image_size;
      if (!covering) std::fill_n(grad, image_size, T(0));
      for (int64_t oy = 0; oy < p.oh; ++oy) {
        for (int64_t ox = 0; ox < p.ow; ++ox) {
          Window win = window(p, oy, ox);
          int64_t at = ((b * p.oh + oy) * p.ow + ox) * p.c;
          const int32_t* __restrict a = argmax + at;
          const int64_t channels = p.c;  // a local: the stores below may alias anything
          for (int64_t iy = win.y0; iy < win.y1; ++iy) {
            for (int64_t ix = win.x0; ix < win.x1; ++ix) {
              auto tap = static_cast<int32_t>((iy - win.top) * p.kw + (ix - win.left));
              T* __restrict d = grad + (iy * p.w + ix) * p.c;
              if (disjoint) {
                const Bits* __restrict gb = reinterpret_cast<const Bits*>(dy + at);
                Bits* __restrict db = reinterpret_cast<Bits*>(d);
                // Channels are independent; the pragma spares a short loop GCC's alias checks.
#pragma omp simd
                for (int64_t ch = 0; ch < channels; ++ch) {
                  // Loaded unconditionally: GCC masks a load inside the select, through the stack.
                  Bits g = gb[ch];
                  db[ch] = a[ch] == tap ? g : Bits(0);  // 0 is all-zero bits in every float type
                }
              } else {
                const T* __restrict g = dy + at;
#pragma omp simd
                for (int64_t ch = 0; ch < channels; ++ch) {
                  C gc = static_cast<C>(g[ch]);
                  d[ch] = static_cast<T>(static_cast<C>(d[ch]) + (a[ch] == tap ? gc : C(0)));
                }
              }
            }
          }
        }
      }
    }
  });
}

#define WEFT_INSTANTIATE(T)                                                            \
  template void max_pool2d_nhwc_forward<T>(const PoolParams&, const T*, T*, int32_t*); \
  template void max_pool2d_nhwc_backward<T>(const PoolParams&, const int32_t*, const T*, T*);
WEFT_INSTANTIATE(float)
WEFT_INSTANTIATE(double)
WEFT_INSTANTIATE(bfloat16)
WEFT_INSTANTIATE(float16)
#undef WEFT_INSTANTIATE

}  // namespace weft::ops::internal
