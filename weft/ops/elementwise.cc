// Unary and binary arithmetic. Each op is a functor on the compute type (float for bf16/f16)
// run by one strided loop, with its gradient written right below it from other ops.
#include "weft/ops/elementwise.h"

#include <cmath>
#include <numbers>

#include "weft/autodiff/tape.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/internal/loop.h"
#include "weft/ops/reduce.h"

namespace weft {
namespace {

using ops::internal::make_loop;
using ops::internal::run_parallel;

void check_defined(const char* op, const Tensor& t) {
  WEFT_CHECK(t.defined(), InvalidArgument) << op << ": an input tensor is undefined";
}

// NumPy's result type of a float-valued function of `t` (np.exp(int32) is float64).
DType float_result(DType t) {
  if (is_floating(t)) return t;
  return t == kInt32 || t == kInt64 ? kFloat64 : kFloat16;
}

// out[i] = f(x[i]); out and x share a dtype.
template <typename F>
Tensor unary_kernel(const Tensor& x, DType dtype, F f) {
  Tensor in = cast(x, dtype);
  Tensor out = Tensor::empty(in.shape(), dtype);
  auto loop = make_loop<2>(out.shape(), {&out, &in});
  dispatch_dtype(dtype, [&]<typename T>() {
    using C = compute_t<T>;
    run_parallel(loop, [&](auto p, auto st, int64_t n) {
      T* o = reinterpret_cast<T*>(p[0]);
      const T* a = reinterpret_cast<const T*>(p[1]);
      if (st[0] == 1 && st[1] == 1) {
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(f(static_cast<C>(a[i])));
      } else {
        for (int64_t i = 0; i < n; ++i) {
          o[i * st[0]] = static_cast<T>(f(static_cast<C>(a[i * st[1]])));
        }
      }
    });
  });
  return out;
}

// out[i] = f(a[i], b[i]) after broadcasting; a and b already have dtype `in`, out has `out_dtype`.
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

template <typename F>
Tensor binary_kernel(const char* op, const Tensor& a, const Tensor& b, DType compute, F f) {
  Shape shape = broadcast_shapes(op, a.shape(), b.shape());
  Tensor x = cast(a, compute), y = cast(b, compute);
  Tensor out = Tensor::empty(shape, compute);
  dispatch_dtype(compute, [&]<typename T>() { binary_loop<T, T>(out, x, y, f); });
  return out;
}

// The gradient reaching an input of `input`'s shape and dtype from one of the broadcast output.
Tensor reduce_grad(const Tensor& g, const Tensor& input) {
  if (!is_floating(input.dtype())) return Tensor();
  return cast(sum_to(g, input.shape()), input.dtype());
}

Tensor scalar_like(Scalar s, const Tensor& t) {
  return Tensor::scalar(s, promote_with_scalar(t.dtype(), s.is_float));
}

void record_unary(const char* op, const Tensor& x, const Tensor& out,
                  std::function<Tensor(const Tensor& g)> grad) {
  if (!autodiff::is_recording() || !is_floating(x.dtype())) return;
  autodiff::record(op, {x}, {out}, [grad = std::move(grad), dtype = x.dtype()](const auto& g) {
    return std::vector<Tensor>{cast(grad(g[0]), dtype)};
  });
}

// relu's gradient, g where x > 0 and 0 elsewhere, in one pass (g has x's shape). It is linear in
// g, so a nested tape differentiates it by applying it again.
Tensor relu_grad(const Tensor& x, const Tensor& g) {
  Tensor xs = contiguous(cast(x, g.dtype())), gs = contiguous(g);
  Tensor out = Tensor::empty(gs.shape(), gs.dtype());
  dispatch_dtype(gs.dtype(), [&]<typename T>() {
    binary_loop<T, T>(out, xs, gs, [](auto u, auto v) { return u > 0 ? v : decltype(v)(0); });
  });
  if (autodiff::is_recording()) {
    autodiff::record("relu_grad", {x, g}, {out}, [x](const autodiff::Grads& gg) {
      return std::vector<Tensor>{Tensor(), relu_grad(x, gg[0])};
    });
  }
  return out;
}

}  // namespace

// ---- unary -------------------------------------------------------------------------------------

Tensor neg(const Tensor& x) {
  check_defined("neg", x);
  WEFT_CHECK(x.dtype() != kBool, InvalidArgument) << "neg: not defined for bool tensors";
  Tensor out = unary_kernel(x, x.dtype(), [](auto v) { return -v; });
  record_unary("neg", x, out, [](const Tensor& g) { return neg(g); });
  return out;
}

Tensor abs(const Tensor& x) {
  check_defined("abs", x);
  Tensor out = unary_kernel(x, x.dtype(), [](auto v) {
    if constexpr (std::is_same_v<decltype(v), bool>) {
      return v;
    } else {
      return v < 0 ? -v : v;
    }
  });
  record_unary("abs", x, out, [x](const Tensor& g) { return mul(g, sign(x)); });
  return out;
}

Tensor exp(const Tensor& x) {
  check_defined("exp", x);
  Tensor out = unary_kernel(x, float_result(x.dtype()), [](auto v) { return std::exp(v); });
  record_unary("exp", x, out, [out](const Tensor& g) { return mul(g, out); });
  return out;
}

Tensor log(const Tensor& x) {
  check_defined("log", x);
  Tensor out = unary_kernel(x, float_result(x.dtype()), [](auto v) { return std::log(v); });
  record_unary("log", x, out, [x](const Tensor& g) { return div(g, x); });
  return out;
}

Tensor sqrt(const Tensor& x) {
  check_defined("sqrt", x);
  Tensor out = unary_kernel(x, float_result(x.dtype()), [](auto v) { return std::sqrt(v); });
  record_unary("sqrt", x, out, [out](const Tensor& g) { return div(g, mul(out, 2.0)); });
  return out;
}

Tensor rsqrt(const Tensor& x) {
  check_defined("rsqrt", x);
  Tensor out = unary_kernel(x, float_result(x.dtype()), [](auto v) {
    using C = decltype(v);
    return C(1) / std::sqrt(v);
  });
  record_unary("rsqrt", x, out,
               [out](const Tensor& g) { return mul(g, mul(pow(out, 3.0), -0.5)); });
  return out;
}

Tensor square(const Tensor& x) {
  check_defined("square", x);
  Tensor out = unary_kernel(x, x.dtype(), [](auto v) { return v * v; });
  record_unary("square", x, out, [x](const Tensor& g) { return mul(g, mul(x, 2.0)); });
  return out;
}

Tensor tanh(const Tensor& x) {
  check_defined("tanh", x);
  Tensor out = unary_kernel(x, float_result(x.dtype()), [](auto v) { return std::tanh(v); });
  record_unary("tanh", x, out, [out](const Tensor& g) { return mul(g, sub(1.0, square(out))); });
  return out;
}

Tensor sigmoid(const Tensor& x) {
  check_defined("sigmoid", x);
  Tensor out = unary_kernel(x, float_result(x.dtype()), [](auto v) {
    using C = decltype(v);
    return C(1) / (C(1) + std::exp(-v));
  });
  record_unary("sigmoid", x, out,
               [out](const Tensor& g) { return mul(g, mul(out, sub(1.0, out))); });
  return out;
}

Tensor relu(const Tensor& x) {
  check_defined("relu", x);
  // NaN stays NaN (v != v), as in maximum(x, 0), NumPy and PyTorch: a NaN is never hidden.
  Tensor out =
      unary_kernel(x, x.dtype(), [](auto v) { return v > 0 || v != v ? v : decltype(v)(0); });
  record_unary("relu", x, out, [x](const Tensor& g) { return relu_grad(x, g); });
  return out;
}

Tensor erf(const Tensor& x) {
  check_defined("erf", x);
  Tensor out = unary_kernel(x, float_result(x.dtype()), [](auto v) { return std::erf(v); });
  record_unary("erf", x, out, [x](const Tensor& g) {
    return mul(g, mul(exp(neg(square(x))), 2.0 / std::sqrt(std::numbers::pi)));
  });
  return out;
}

Tensor gelu(const Tensor& x) {
  check_defined("gelu", x);
  Tensor out = unary_kernel(x, float_result(x.dtype()), [](auto v) {
    using C = decltype(v);
    return C(0.5) * v * (C(1) + std::erf(v * C(std::numbers::sqrt2 / 2)));
  });
  // d/dx x·Φ(x) = Φ(x) + x·φ(x)
  record_unary("gelu", x, out, [x](const Tensor& g) {
    Tensor cdf = mul(add(erf(mul(x, std::numbers::sqrt2 / 2)), 1.0), 0.5);
    Tensor pdf = mul(exp(mul(square(x), -0.5)), 1.0 / std::sqrt(2 * std::numbers::pi));
    return mul(g, add(cdf, mul(x, pdf)));
  });
  return out;
}

Tensor sin(const Tensor& x) {
  check_defined("sin", x);
  Tensor out = unary_kernel(x, float_result(x.dtype()), [](auto v) { return std::sin(v); });
  record_unary("sin", x, out, [x](const Tensor& g) { return mul(g, cos(x)); });
  return out;
}

Tensor cos(const Tensor& x) {
  check_defined("cos", x);
  Tensor out = unary_kernel(x, float_result(x.dtype()), [](auto v) { return std::cos(v); });
  record_unary("cos", x, out, [x](const Tensor& g) { return mul(g, neg(sin(x))); });
  return out;
}

Tensor sign(const Tensor& x) {
  check_defined("sign", x);
  Tensor out = unary_kernel(x, x.dtype(), [](auto v) {
    using C = decltype(v);
    return v != v ? v : static_cast<C>((C(0) < v) - (v < C(0)));  // sign(NaN) is NaN, as NumPy
  });
  record_unary("sign", x, out, [](const Tensor& g) { return zeros_like(g); });
  return out;
}

// ---- binary ------------------------------------------------------------------------------------

namespace {

void record_binary(const char* op, const Tensor& a, const Tensor& b, const Tensor& out,
                   std::function<std::pair<Tensor, Tensor>(const Tensor& g)> grad) {
  if (!autodiff::is_recording() || !is_floating(out.dtype())) return;
  autodiff::record(op, {a, b}, {out}, [a, b, grad = std::move(grad)](const auto& g) {
    auto [ga, gb] = grad(g[0]);
    return std::vector<Tensor>{reduce_grad(ga, a), reduce_grad(gb, b)};
  });
}

DType arith_dtype(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a);
  check_defined(op, b);
  return promote_types(a.dtype(), b.dtype());
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  DType t = arith_dtype("add", a, b);
  Tensor out = binary_kernel("add", a, b, t, [](auto u, auto v) { return u + v; });
  record_binary("add", a, b, out, [](const Tensor& g) { return std::pair{g, g}; });
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  DType t = arith_dtype("sub", a, b);
  WEFT_CHECK(t != kBool, InvalidArgument) << "sub: not defined for bool tensors";
  Tensor out = binary_kernel("sub", a, b, t, [](auto u, auto v) { return u - v; });
  record_binary("sub", a, b, out, [](const Tensor& g) { return std::pair{g, neg(g)}; });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  DType t = arith_dtype("mul", a, b);
  Tensor out = binary_kernel("mul", a, b, t, [](auto u, auto v) { return u * v; });
  record_binary("mul", a, b, out, [a, b](const Tensor& g) {
    return std::pair{mul(g, b), mul(g, a)};
  });
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  DType t = arith_dtype("div", a, b);
  if (!is_floating(t)) t = kFloat64;
  Tensor out = binary_kernel("div", a, b, t, [](auto u, auto v) { return u / v; });
  record_binary("div", a, b, out, [a, b](const Tensor& g) {
    return std::pair{div(g, b), neg(div(mul(g, a), square(b)))};
  });
  return out;
}

Tensor pow(const Tensor& a, const Tensor& b) {
  DType t = arith_dtype("pow", a, b);
  Tensor out = binary_kernel("pow", a, b, t, [](auto u, auto v) {
    using C = decltype(u);
    return static_cast<C>(std::pow(u, v));
  });
  record_binary("pow", a, b, out, [a, b, out](const Tensor& g) {
    Tensor ga = mul(g, mul(b, pow(a, sub(b, 1))));
    // d/db a^b = a^b log a, taken as 0 where a <= 0 (as TensorFlow does).
    Tensor safe_log =
        where(greater(a, 0), log(where(greater(a, 0), a, ones_like(a))), zeros_like(a));
    return std::pair{ga, mul(g, mul(out, safe_log))};
  });
  return out;
}

Tensor maximum(const Tensor& a, const Tensor& b) {
  DType t = arith_dtype("maximum", a, b);
  Tensor out = binary_kernel("maximum", a, b, t, [](auto u, auto v) {
    return (u >= v || u != u) ? u : v;  // NaN propagates, as np.maximum
  });
  record_binary("maximum", a, b, out, [a, b](const Tensor& g) {
    Tensor mask = greater_equal(a, b);
    Tensor zero = zeros({}, g.dtype());
    return std::pair{where(mask, g, zero), where(mask, zero, g)};
  });
  return out;
}

Tensor minimum(const Tensor& a, const Tensor& b) {
  DType t = arith_dtype("minimum", a, b);
  Tensor out =
      binary_kernel("minimum", a, b, t, [](auto u, auto v) { return (u <= v || u != u) ? u : v; });
  record_binary("minimum", a, b, out, [a, b](const Tensor& g) {
    Tensor mask = less_equal(a, b);
    Tensor zero = zeros({}, g.dtype());
    return std::pair{where(mask, g, zero), where(mask, zero, g)};
  });
  return out;
}

Tensor add(const Tensor& a, Scalar b) { return add(a, scalar_like(b, a)); }
Tensor sub(const Tensor& a, Scalar b) { return sub(a, scalar_like(b, a)); }
Tensor mul(const Tensor& a, Scalar b) { return mul(a, scalar_like(b, a)); }
Tensor div(const Tensor& a, Scalar b) { return div(a, scalar_like(b, a)); }
Tensor pow(const Tensor& a, Scalar b) { return pow(a, scalar_like(b, a)); }
Tensor maximum(const Tensor& a, Scalar b) { return maximum(a, scalar_like(b, a)); }
Tensor minimum(const Tensor& a, Scalar b) { return minimum(a, scalar_like(b, a)); }
Tensor clip(const Tensor& x, Scalar lo, Scalar hi) { return minimum(maximum(x, lo), hi); }
Tensor clip(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  return minimum(maximum(x, lo), hi);
}

Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, Scalar b) { return add(a, b); }
Tensor operator-(const Tensor& a, Scalar b) { return sub(a, b); }
Tensor operator*(const Tensor& a, Scalar b) { return mul(a, b); }
Tensor operator/(const Tensor& a, Scalar b) { return div(a, b); }
Tensor operator+(Scalar a, const Tensor& b) { return add(scalar_like(a, b), b); }
Tensor operator-(Scalar a, const Tensor& b) { return sub(scalar_like(a, b), b); }
Tensor operator*(Scalar a, const Tensor& b) { return mul(scalar_like(a, b), b); }
Tensor operator/(Scalar a, const Tensor& b) { return div(scalar_like(a, b), b); }
Tensor sub(Scalar a, const Tensor& b) { return a - b; }

}  // namespace weft
