// The pieces every elementwise op is made of: a unary and a binary kernel over the strided loop
// (computing in compute_t<T>, float for bf16/f16), NumPy's result type of a float-valued
// function, and the tape records that reduce a broadcast gradient back to each input's shape.
// elementwise.cc and math.cc build their ops from these.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/ops/cast.h"
#include "weft/ops/internal/loop.h"
#include "weft/ops/reduce.h"

namespace weft::ops::internal {

inline void check_defined(const char* op, const Tensor& t) {
  WEFT_CHECK(t.defined(), InvalidArgument) << op << ": an input tensor is undefined";
}

// NumPy's result type of a float-valued function of `t` (np.exp(int32) is float64).
inline DType float_result(DType t) {
  if (is_floating(t)) return t;
  return t == kInt32 || t == kInt64 ? kFloat64 : kFloat16;
}

// The dtypes a kernel is compiled for: all, or (kFloats) the floating ones alone, for functions
// whose computing dtype is always floating (float_result): their integer copies were never run,
// yet were half of elementwise.cc's and math.cc's compile time.
enum class Dtypes { kAll, kFloats };

template <Dtypes S, typename F>
decltype(auto) dispatch(DType t, F&& f) {
  if constexpr (S == Dtypes::kFloats) {
    return dispatch_float_dtype(t, std::forward<F>(f));
  } else {
    return dispatch_dtype(t, std::forward<F>(f));
  }
}

// out[i] = f(x[i]) with x cast to `dtype`; the output has `dtype`, or kBool when `kToBool`
// (predicates such as isnan). kToBool is a template argument, not a run-time flag, so that each
// op's kernels are compiled for the one output type it has (a flag compiled both, for every op).
template <Dtypes S = Dtypes::kAll, bool kToBool = false, typename F>
Tensor unary_kernel(const Tensor& x, DType dtype, F f) {
  Tensor in = cast(x, dtype);
  Tensor out = Tensor::empty(in.shape(), kToBool ? kBool : dtype);
  auto loop = make_loop<2>(out.shape(), {&out, &in});
  auto run = [&]<typename O, typename T>() {
    using C = compute_t<T>;
    run_parallel(loop, [&](auto p, auto st, int64_t n) {
      O* o = reinterpret_cast<O*>(p[0]);
      const T* a = reinterpret_cast<const T*>(p[1]);
      if (st[0] == 1 && st[1] == 1) {
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(f(static_cast<C>(a[i])));
      } else {
        for (int64_t i = 0; i < n; ++i) {
          o[i * st[0]] = static_cast<O>(f(static_cast<C>(a[i * st[1]])));
        }
      }
    });
  };
  dispatch<S>(dtype, [&]<typename T>() {
    if constexpr (kToBool) {
      run.template operator()<bool, T>();
    } else {
      run.template operator()<T, T>();
    }
  });
  return out;
}

// out[i] = f(x[i]) in NumPy's floating result dtype of x (np.exp(int32) is float64).
template <typename F>
Tensor float_kernel(const Tensor& x, F f) {
  return unary_kernel<Dtypes::kFloats>(x, float_result(x.dtype()), f);
}

// out[i] = f(a[i], b[i]) after broadcasting; a and b already have dtype T, out has OutT.
template <typename OutT, typename T, typename F>
void binary_loop(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  using C = compute_t<T>;
  auto loop = make_loop<3>(out.shape(), {&out, &a, &b});
  run_parallel(loop, [&](auto p, auto st, int64_t n) {
    OutT* o = reinterpret_cast<OutT*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    const T* y = reinterpret_cast<const T*>(p[2]);
    auto put = [&](int64_t i, C u, C v) { o[i] = static_cast<OutT>(f(u, v)); };
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      for (int64_t i = 0; i < n; ++i) put(i, static_cast<C>(x[i]), static_cast<C>(y[i]));
    } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
      C v = static_cast<C>(y[0]);
      for (int64_t i = 0; i < n; ++i) put(i, static_cast<C>(x[i]), v);
    } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
      C u = static_cast<C>(x[0]);
      for (int64_t i = 0; i < n; ++i) put(i, u, static_cast<C>(y[i]));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        o[i * st[0]] =
            static_cast<OutT>(f(static_cast<C>(x[i * st[1]]), static_cast<C>(y[i * st[2]])));
      }
    }
  });
}

// a and b broadcast and cast to `compute`; the result has `compute`'s dtype. (Comparisons, whose
// result is bool, have their own kernels: ops/compare.cc.)
template <Dtypes S = Dtypes::kAll, typename F>
Tensor binary_kernel(const char* op, const Tensor& a, const Tensor& b, DType compute, F f) {
  Shape shape = broadcast_shapes(op, a.shape(), b.shape());
  Tensor x = cast(a, compute), y = cast(b, compute);
  Tensor out = Tensor::empty(shape, compute);
  dispatch<S>(compute, [&]<typename T>() { binary_loop<T, T>(out, x, y, f); });
  return out;
}

// The gradient reaching an input of `input`'s shape and dtype from one of the broadcast output.
inline Tensor reduce_grad(const Tensor& g, const Tensor& input) {
  if (!is_floating(input.dtype())) return Tensor();
  return cast(sum_to(g, input.shape()), input.dtype());
}

inline Tensor scalar_like(Scalar s, const Tensor& t) {
  return Tensor::scalar(s, promote_with_scalar(t.dtype(), s.is_float));
}

// Records a float-valued unary op: `grad` maps the output's gradient to the input's.
inline void record_unary(const char* op, const Tensor& x, const Tensor& out,
                         std::function<Tensor(const Tensor& g)> grad) {
  if (!autodiff::is_recording() || !is_floating(x.dtype())) return;
  autodiff::record(op, {x}, {out}, [grad = std::move(grad), dtype = x.dtype()](const auto& g) {
    return std::vector<Tensor>{cast(grad(g[0]), dtype)};
  });
}

// Records a binary op whose float output is differentiable; `grad` gives both inputs' gradients
// at the output's shape, reduced here to each input's.
inline void record_binary(const char* op, const Tensor& a, const Tensor& b, const Tensor& out,
                          std::function<std::pair<Tensor, Tensor>(const Tensor& g)> grad) {
  if (!autodiff::is_recording() || !is_floating(out.dtype())) return;
  autodiff::record(op, {a, b}, {out}, [a, b, grad = std::move(grad)](const auto& g) {
    auto [ga, gb] = grad(g[0]);
    return std::vector<Tensor>{reduce_grad(ga, a), reduce_grad(gb, b)};
  });
}

inline DType arith_dtype(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a);
  check_defined(op, b);
  return promote_types(a.dtype(), b.dtype());
}

}  // namespace weft::ops::internal
