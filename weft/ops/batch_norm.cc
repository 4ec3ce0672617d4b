#include "weft/ops/batch_norm.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/core/op_scope.h"
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

// Two sums per feature in one pass: term(i, f, a, b) sets a and b for element i of feature f, and
// sums[f] = {sum of a, sum of b} over every element of feature f, accumulated per block of outer
// rows in row order and then over blocks in block order.
template <typename C, typename Term>
std::pair<std::vector<C>, std::vector<C>> feature_sums(const View& v, Term term) {
  int64_t row = v.features * v.inner;
  int64_t rows_per_block = std::max<int64_t>(1, kBlockElements / row);
  int64_t blocks = (v.outer + rows_per_block - 1) / rows_per_block;
  int64_t F = v.features;
  std::vector<C> partial(blocks * 2 * F, C(0));  // block b: F first sums, then F second sums
  parallel_for(blocks, 1, [&](int64_t begin, int64_t end) {
    Term local = term;  // a copy whose pointers stay in registers across the stores below
    for (int64_t b = begin; b < end; ++b) {
      C* acc0 = partial.data() + b * 2 * F;
      C* acc1 = acc0 + F;
      for (int64_t o = b * rows_per_block; o < std::min(v.outer, (b + 1) * rows_per_block); ++o) {
        int64_t base = o * row;
        if (v.inner == 1) {
          // GCC cannot tell that acc0 and acc1 do not overlap and would run this loop scalar.
#pragma omp simd
          for (int64_t f = 0; f < F; ++f) {
            C t0, t1;  // set through references: GCC does not vectorize a returned pair here
            local(base + f, f, t0, t1);
            acc0[f] += t0;
            acc1[f] += t1;
          }
        } else {
          for (int64_t f = 0; f < F; ++f) {
            C s0 = 0, s1 = 0;
#pragma omp simd reduction(+ : s0, s1)
            for (int64_t i = 0; i < v.inner; ++i) {
              C t0, t1;
              local(base + f * v.inner + i, f, t0, t1);
              s0 += t0;
              s1 += t1;
            }
            acc0[f] += s0;
            acc1[f] += s1;
          }
        }
      }
    }
  });
  std::pair<std::vector<C>, std::vector<C>> sums{std::vector<C>(F, C(0)), std::vector<C>(F, C(0))};
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t f = 0; f < F; ++f) {
      sums.first[f] += partial[b * 2 * F + f];
      sums.second[f] += partial[(b * 2 + 1) * F + f];
    }
  }
  return sums;
}

// out[i] = f(i, feature of i) over the whole view.
template <typename F>
void for_each_element(const View& v, F f) {
  int64_t row = v.features * v.inner;
  parallel_for(v.outer, std::max<int64_t>(1, kBlockElements / row),
               [&](int64_t begin, int64_t end) {
                 F f_here = f;  // a local copy, as in feature_sums
                 for (int64_t o = begin; o < end; ++o) {
                   int64_t base = o * row;
                   if (v.inner == 1) {
#pragma omp simd
                     for (int64_t c = 0; c < v.features; ++c) f_here(base + c, c);
                   } else {
                     for (int64_t c = 0; c < v.features; ++c) {
                       for (int64_t i = 0; i < v.inner; ++i) f_here(base + c * v.inner + i, c);
                     }
                   }
                 }
               });
}

// c ? d : 0 without a branch, which GCC would keep as one and so not vectorize the loop.
template <typename C>
inline C keep_if(bool c, C d) {
  using Bits = std::conditional_t<sizeof(C) == 4, uint32_t, uint64_t>;
  return std::bit_cast<C>(std::bit_cast<Bits>(d) & (c ? ~Bits(0) : Bits(0)));
}

// x * scale + shift, the one expression both passes use, so the backward pass's ReLU mask is the
// forward pass's.
template <typename C>
inline C normalized(C x, C scale, C shift) {
  return x * scale + shift;
}

// Per feature, sum(d) and sum(d^2) of d = x - shift[f], in one pass.
template <typename T, typename C = compute_t<T>>
std::pair<std::vector<C>, std::vector<C>> shifted_moments(const View& v, const T* px,
                                                          const C* shift) {
  return feature_sums<C>(v, [=](int64_t i, int64_t f, C& sum, C& sum_squares) {
    C d = C(px[i]) - shift[f];
    sum = d;
    sum_squares = d * d;
  });
}

// Per-feature statistics of the forward pass, (features,) tensors of the compute type (the
// parameters' dtype), kept by the backward pass.
struct Statistics {
  Tensor mean, inv_std, scale, shift;  // y = x * scale + shift
};

// The backward pass: dx, dgamma and dbeta from x and dy, the ReLU's mask (when fused) recomputed
// from x exactly as the forward pass made it.
template <typename T, bool Relu, typename C = compute_t<T>>
void backward(const View& v, const T* px, const T* pdy, const C* pg, const Statistics& st, T* pdx,
              C* dgamma, C* dbeta) {
  const C *m = st.mean.data<C>(), *inv = st.inv_std.data<C>();
  const C *sc = st.scale.data<C>(), *sh = st.shift.data<C>();
  // The gradient reaching the normalisation.
  auto grad = [=](int64_t i, int64_t f) {
    C d = C(pdy[i]);
    if constexpr (Relu) d = keep_if(normalized(C(px[i]), sc[f], sh[f]) > C(0), d);
    return d;
  };
  // dbeta = sum(g), dgamma = sum(g * xhat) with xhat = (x - mean) * inv, in one pass.
  auto [sum_g, sum_g_xhat] = feature_sums<C>(v, [=](int64_t i, int64_t f, C& g, C& g_xhat) {
    g = grad(i, f);
    g_xhat = g * (C(px[i]) - m[f]) * inv[f];
  });
  auto n = static_cast<C>(v.count());
  std::vector<C> a(v.features), b(v.features), c(v.features);
  for (int64_t f = 0; f < v.features; ++f) {
    dbeta[f] = sum_g[f];
    dgamma[f] = sum_g_xhat[f];
    // dx = gamma * inv * (g - sum_g / n - xhat * sum_g_xhat / n) = a*g + b*x + c
    a[f] = pg[f] * inv[f];
    b[f] = -a[f] * inv[f] * sum_g_xhat[f] / n;
    c[f] = -a[f] * sum_g[f] / n - b[f] * m[f];
  }
  const C *pa = a.data(), *pb = b.data(), *pc = c.data();
  // Grouped so that each product has one sum to fuse with: as a*g + b*x + c, GCC fused a
  // different product for float16 than for float32 once both were vectorized, and the results
  // differed in the last bit.
  for_each_element(v, [=](int64_t i, int64_t f) {
    C bx_c = pb[f] * C(px[i]) + pc[f];
    pdx[i] = T(pa[f] * grad(i, f) + bx_c);
  });
}

}  // namespace

BatchNormResult batch_norm_training(const Tensor& x_in, const Tensor& gamma_in,
                                    const Tensor& beta_in, int64_t axis, double epsilon,
                                    bool relu) {
  const char* op = "batch_norm_training";
  WEFT_CHECK(x_in.defined() && gamma_in.defined() && beta_in.defined(), InvalidArgument)
      << op << ": an input tensor is undefined";
  WEFT_CHECK(is_floating(x_in.dtype()), InvalidArgument)
      << op << ": expected a floating input, got " << dtype_name(x_in.dtype());
  DType param_dtype = batch_norm_param_dtype(x_in.dtype());
  WEFT_CHECK(x_in.rank() >= 2, InvalidArgument)
      << op << ": expected an input of rank >= 2, got shape " << shape_str(x_in.shape());
  axis = normalize_axis(op, axis, x_in.rank());
  OpScope scope(op, x_in, gamma_in, beta_in);
  if (scope.spmd()) {  // statistics over the batch: on replicated operands only
    std::vector<Tensor> r =
        scope.run_all(SpmdRule::replicated(), {x_in, gamma_in, beta_in}, [=](const SpmdArgs& c) {
          BatchNormResult b = batch_norm_training(c[0], c[1], c[2], axis, epsilon, relu);
          return std::vector<Tensor>{b.y, b.mean, b.variance};
        });
    return {r[0], r[1], r[2]};
  }
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

  Tensor x = contiguous(x_in), gamma = contiguous(gamma_in), beta = contiguous(beta_in);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  auto feature_tensor = [&] { return Tensor::empty({v.features}, param_dtype); };
  Statistics st{feature_tensor(), feature_tensor(), feature_tensor(), feature_tensor()};
  Tensor variance = feature_tensor();
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    using C = compute_t<T>;  // float for the half types
    if constexpr (std::is_floating_point_v<C>) {
      const T* px = x.data<T>();
      const C* pg = gamma.data<C>();
      const C* pb = beta.data<C>();
      T* py = y.data<T>();
      auto n = static_cast<C>(v.count());
      // One pass over x for both moments, taken about a shift (each feature's first value) so
      // that sum(d^2) - sum(d)^2 / n does not cancel when the mean is large against the spread.
      std::vector<C> k(v.features);
      for (int64_t f = 0; f < v.features; ++f) k[f] = C(px[f * v.inner]);
      auto [s, ss] = shifted_moments<T>(v, px, k.data());
      C *mean = st.mean.data<C>(), *inv_std = st.inv_std.data<C>(), *var = variance.data<C>();
      C *sc = st.scale.data<C>(), *sh = st.shift.data<C>();
      for (int64_t f = 0; f < v.features; ++f) {
        C ds = s[f] / n;
        var[f] = std::max(C(0), ss[f] / n - ds * ds);
        inv_std[f] = C(1) / std::sqrt(var[f] + static_cast<C>(epsilon));
        mean[f] = k[f] + ds;
        sc[f] = inv_std[f] * pg[f];
        sh[f] = pb[f] - mean[f] * sc[f];
      }
      if (relu) {
        for_each_element(v, [=](int64_t i, int64_t f) {
          py[i] = T(std::max(normalized(C(px[i]), sc[f], sh[f]), C(0)));
        });
      } else {
        for_each_element(
            v, [=](int64_t i, int64_t f) { py[i] = T(normalized(C(px[i]), sc[f], sh[f])); });
      }
    }
  });
  if (autodiff::is_recording()) {
    autodiff::record(
        op, {x_in, gamma_in, beta_in}, {y}, [x, gamma, v, st, relu](const autodiff::Grads& g) {
          DType param_dtype = gamma.dtype();
          Tensor dy = contiguous(cast(g[0], x.dtype()));
          Tensor dx = Tensor::empty(x.shape(), x.dtype());
          Tensor dgamma = Tensor::empty({v.features}, param_dtype);
          Tensor dbeta = Tensor::empty({v.features}, param_dtype);
          dispatch_dtype(x.dtype(), [&]<typename T>() {
            using C = compute_t<T>;
            if constexpr (std::is_floating_point_v<C>) {
              auto run = [&]<bool Relu>() {
                backward<T, Relu>(v, x.data<T>(), dy.data<T>(), gamma.data<C>(), st, dx.data<T>(),
                                  dgamma.data<C>(), dbeta.data<C>());
              };
              relu ? run.template operator()<true>() : run.template operator()<false>();
            }
          });
          return std::vector<Tensor>{dx, dgamma, dbeta};
        });
  }
  return {y, st.mean, variance};
}

}  // namespace weft
