#include "weft/ops/batch_norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/core/parallel.h"
#include "weft/ops/cast.h"
#include "weft/ops/shape_ops.h"

namespace weft {
namespace {

// x viewed as (outer, features, inner), contiguous.
struct View {
  int64_t outer = 1, features = 1, inner = 1;
  int64_t count() const { return outer * inner; }  // elements per feature
};

// Elements per block of outer rows: fixed by the shape, never by the thread count.
constexpr int64_t kBlockElements = 16384;

// sums[f] = sum over every element of feature f of term(index, f), accumulated per block of outer
// rows in row order and then over blocks in block order.
template <typename C, typename Term>
std::vector<C> feature_sums(const View& v, Term term) {
  int64_t row = v.features * v.inner;
  int64_t rows_per_block = std::max<int64_t>(1, kBlockElements / row);
  int64_t blocks = (v.outer + rows_per_block - 1) / rows_per_block;
  std::vector<C> partial(blocks * v.features, C(0));
  parallel_for(blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      C* acc = partial.data() + b * v.features;
      for (int64_t o = b * rows_per_block; o < std::min(v.outer, (b + 1) * rows_per_block); ++o) {
        int64_t base = o * row;
        if (v.inner == 1) {
          for (int64_t f = 0; f < v.features; ++f) acc[f] += term(base + f, f);
        } else {
          for (int64_t f = 0; f < v.features; ++f) {
            C s = 0;
            for (int64_t i = 0; i < v.inner; ++i) s += term(base + f * v.inner + i, f);
            acc[f] += s;
          }
        }
      }
    }
  });
  std::vector<C> sums(v.features, C(0));
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t f = 0; f < v.features; ++f) sums[f] += partial[b * v.features + f];
  }
  return sums;
}

// out[i] = f(i, feature of i) over the whole view.
template <typename F>
void for_each_element(const View& v, F f) {
  int64_t row = v.features * v.inner;
  parallel_for(v.outer, std::max<int64_t>(1, kBlockElements / row),
               [&](int64_t begin, int64_t end) {
                 for (int64_t o = begin; o < end; ++o) {
                   int64_t base = o * row;
                   if (v.inner == 1) {
                     for (int64_t c = 0; c < v.features; ++c) f(base + c, c);
                   } else {
                     for (int64_t c = 0; c < v.features; ++c) {
                       for (int64_t i = 0; i < v.inner; ++i) f(base + c * v.inner + i, c);
                     }
                   }
                 }
               });
}

Tensor vector_tensor(const std::vector<double>& values, DType dtype) {
  return cast(Tensor::from_vector(values, {static_cast<int64_t>(values.size())}), dtype);
}

}  // namespace

BatchNormResult batch_norm_training(const Tensor& x_in, const Tensor& gamma_in,
                                    const Tensor& beta_in, int64_t axis, double epsilon) {
  const char* op = "batch_norm_training";
  WEFT_CHECK(x_in.defined() && gamma_in.defined() && beta_in.defined(), InvalidArgument)
      << op << ": an input tensor is undefined";
  WEFT_CHECK(is_floating(x_in.dtype()), InvalidArgument)
      << op << ": expected a floating input, got " << dtype_name(x_in.dtype());
  // Half inputs are normalised in float32 with float32 parameters and statistics.
  DType param_dtype = is_half(x_in.dtype()) ? kFloat32 : x_in.dtype();
  WEFT_CHECK(x_in.rank() >= 2, InvalidArgument)
      << op << ": expected an input of rank >= 2, got shape " << shape_str(x_in.shape());
  axis = normalize_axis(op, axis, x_in.rank());
  View v;
  for (int64_t i = 0; i < x_in.rank(); ++i) {
    (i < axis ? v.outer : i == axis ? v.features : v.inner) *= x_in.shape()[i];
  }
  for (const Tensor* p : {&gamma_in, &beta_in}) {
    WEFT_CHECK(p->shape() == Shape{v.features} && p->dtype() == param_dtype, InvalidArgument)
        << op << ": gamma and beta must be (" << v.features << ",) " << dtype_name(param_dtype)
        << " for input " << shape_str(x_in.shape()) << " with features on axis " << axis << ", got "
        << shape_str(p->shape()) << " " << dtype_name(p->dtype());
  }
  WEFT_CHECK(v.count() > 0, InvalidArgument)
      << op << ": no elements to take statistics over in shape " << shape_str(x_in.shape());
  WEFT_CHECK(epsilon > 0, InvalidArgument) << op << ": epsilon must be positive, got " << epsilon;

  Tensor x = x_in.contiguous(), gamma = gamma_in.contiguous(), beta = beta_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  std::vector<double> mean(v.features), inv_std(v.features), variance(v.features);
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    using C = compute_t<T>;  // float for the half types
    if constexpr (std::is_floating_point_v<C>) {
      const T* px = x.data<T>();
      const C* pg = gamma.data<C>();
      const C* pb = beta.data<C>();
      T* py = y.data<T>();
      auto n = static_cast<C>(v.count());
      std::vector<C> s = feature_sums<C>(v, [&](int64_t i, int64_t) { return C(px[i]); });
      std::vector<C> m(v.features), scale(v.features), shift(v.features);
      for (int64_t f = 0; f < v.features; ++f) m[f] = s[f] / n;
      std::vector<C> ss = feature_sums<C>(v, [&](int64_t i, int64_t f) {
        C d = C(px[i]) - m[f];
        return d * d;
      });
      for (int64_t f = 0; f < v.features; ++f) {
        C var = ss[f] / n;
        C inv = C(1) / std::sqrt(var + static_cast<C>(epsilon));
        mean[f] = m[f];
        variance[f] = var;
        inv_std[f] = inv;
        scale[f] = inv * pg[f];
        shift[f] = pb[f] - m[f] * scale[f];
      }
      for_each_element(v, [&](int64_t i, int64_t f) { py[i] = T(C(px[i]) * scale[f] + shift[f]); });
    }
  });
  BatchNormResult result{y, vector_tensor(mean, param_dtype), vector_tensor(variance, param_dtype)};
  if (autodiff::is_recording()) {
    autodiff::record(
        op, {x_in, gamma_in, beta_in}, {y},
        [x, gamma, v, mean, inv_std, param_dtype](const autodiff::Grads& g) {
          Tensor dy = cast(g[0], x.dtype()).contiguous();
          Tensor dx = Tensor::empty(x.shape(), x.dtype());
          Tensor dgamma = Tensor::empty({v.features}, param_dtype);
          Tensor dbeta = Tensor::empty({v.features}, param_dtype);
          dispatch_dtype(x.dtype(), [&]<typename T>() {
            using C = compute_t<T>;
            if constexpr (std::is_floating_point_v<C>) {
              const T* px = x.data<T>();
              const T* pdy = dy.data<T>();
              const C* pg = gamma.data<C>();
              std::vector<C> m(mean.begin(), mean.end()), inv(inv_std.begin(), inv_std.end());
              // dbeta = sum(dy), dgamma = sum(dy * xhat) with xhat = (x - mean) * inv.
              std::vector<C> sum_dy =
                  feature_sums<C>(v, [&](int64_t i, int64_t) { return C(pdy[i]); });
              std::vector<C> sum_dy_xhat = feature_sums<C>(
                  v, [&](int64_t i, int64_t f) { return C(pdy[i]) * (C(px[i]) - m[f]) * inv[f]; });
              auto n = static_cast<C>(v.count());
              std::vector<C> a(v.features), b(v.features), c(v.features);
              for (int64_t f = 0; f < v.features; ++f) {
                dbeta.data<C>()[f] = sum_dy[f];
                dgamma.data<C>()[f] = sum_dy_xhat[f];
                // dx = gamma * inv * (dy - sum_dy / n - xhat * sum_dy_xhat / n) = a*dy + b*x + c
                a[f] = pg[f] * inv[f];
                b[f] = -a[f] * inv[f] * sum_dy_xhat[f] / n;
                c[f] = -a[f] * sum_dy[f] / n - b[f] * m[f];
              }
              T* pdx = dx.data<T>();
              for_each_element(v, [&](int64_t i, int64_t f) {
                pdx[i] = T(a[f] * C(pdy[i]) + b[f] * C(px[i]) + c[f]);
              });
            }
          });
          return std::vector<Tensor>{dx, dgamma, dbeta};
        });
  }
  return result;
}

}  // namespace weft
