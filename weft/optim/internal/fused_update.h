// The one pass over memory behind every optimizer update: reads the gradient, the variable and its
// slots and writes the variable and slots back, element by element, split over weft's threads.
// Each element is independent, so the result does not depend on how the work is cut. GCC
// vectorises the loop only with -fno-math-errno: otherwise std::sqrt keeps an errno branch in it
// (docs/benchmarks.md has the figures).
//
//   fused_update<1>(grad, var, slots, [=](auto g, auto& w, auto& m) {
//     using C = decltype(g);          // float for float32 (and bf16/f16), double for float64
//     m = m * C(momentum) - g * C(lr);
//     w += m;
//   });
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>

#include "weft/core/errors.h"
#include "weft/core/tensor.h"
#include "weft/ops/internal/loop.h"

namespace weft::optim::internal {

// `var` and the K `slots` are contiguous with one shape and dtype; `grad` has that shape and dtype
// and any strides. f(g, w, s_0, ..., s_{K-1}) receives values in the compute type and updates w
// and the slots through its references.
template <size_t K, typename F>
void fused_update(const Tensor& grad, const Tensor& var, std::span<const Tensor> slots, F f) {
  constexpr size_t N = K + 2;  // var, slots..., grad
  WEFT_ASSERT(slots.size() == K) << "fused_update<" << K << "> got " << slots.size() << " slots";
  WEFT_ASSERT(var.is_contiguous() && grad.shape() == var.shape() && grad.dtype() == var.dtype())
      << "fused_update: var " << shape_str(var.shape()) << " " << var.dtype() << ", grad "
      << shape_str(grad.shape()) << " " << grad.dtype();
  std::array<const Tensor*, N> operands;
  operands[0] = &var;
  for (size_t k = 0; k < slots.size(); ++k) {
    WEFT_ASSERT(slots[k].is_contiguous() && slots[k].shape() == var.shape() &&
                slots[k].dtype() == var.dtype())
        << "fused_update: slot " << k << " does not match its variable";
    operands[k + 1] = &slots[k];
  }
  operands[N - 1] = &grad;
  // var and slots are contiguous with one shape, so they share every merged stride: slot offsets
  // below use the variable's.
  auto loop = ops::internal::make_loop<N>(var.shape(), operands);
  dispatch_dtype(var.dtype(), [&]<typename T>() {
    using C = compute_t<T>;
    if constexpr (std::is_floating_point_v<C>) {
      ops::internal::run_parallel(loop, [&](const auto& p, const auto& st, int64_t n) {
        [&]<size_t... k>(std::index_sequence<k...>) {
          T* w = reinterpret_cast<T*>(p[0]);
          const std::array<T*, K> s{reinterpret_cast<T*>(p[k + 1])...};
          const T* g = reinterpret_cast<const T*>(p[N - 1]);
          auto element = [&](int64_t i, int64_t j) {  // i: var and slots, j: grad
            C wv = static_cast<C>(w[i]);
            std::array<C, K> sv{static_cast<C>(s[k][i])...};
            f(static_cast<C>(g[j]), wv, sv[k]...);
            w[i] = static_cast<T>(wv);
            ((s[k][i] = static_cast<T>(sv[k])), ...);
          };
          if (st[0] == 1 && st[N - 1] == 1) {
            for (int64_t i = 0; i < n; ++i) element(i, i);
          } else {
            for (int64_t i = 0; i < n; ++i) element(i * st[0], i * st[N - 1]);
          }
        }
        (std::make_index_sequence<K>{});
      });
    } else {
      WEFT_ASSERT(false) << "fused_update: variable dtype " << var.dtype() << " is not floating";
    }
  });
}

}  // namespace weft::optim::internal
