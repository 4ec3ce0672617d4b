// Unary and binary arithmetic. Each op is a functor on the compute type (float for bf16/f16)
// run by one strided loop, with its gradient written right below it from other ops.
#include "weft/ops/elementwise.h"

#include <cmath>
#include <numbers>

#include "weft/autodiff/tape.h"
#include "weft/ops/creation.h"
#include "weft/ops/internal/elementwise_kernel.h"

namespace weft {
namespace {

using ops::internal::arith_dtype;
using ops::internal::binary_kernel;
using ops::internal::binary_loop;
using ops::internal::check_defined;
using ops::internal::float_kernel;
using ops::internal::record_binary;
using ops::internal::record_unary;
using ops::internal::scalar_like;
using ops::internal::unary_kernel;

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
  Tensor out = float_kernel(x, [](auto v) { return std::exp(v); });
  record_unary("exp", x, out, [out](const Tensor& g) { return mul(g, out); });
  return out;
}

Tensor log(const Tensor& x) {
  check_defined("log", x);
  Tensor out = float_kernel(x, [](auto v) { return std::log(v); });
  record_unary("log", x, out, [x](const Tensor& g) { return div(g, x); });
  return out;
}

Tensor sqrt(const Tensor& x) {
  check_defined("sqrt", x);
  Tensor out = float_kernel(x, [](auto v) { return std::sqrt(v); });
  record_unary("sqrt", x, out, [out](const Tensor& g) { return div(g, mul(out, 2.0)); });
  return out;
}

Tensor rsqrt(const Tensor& x) {
  check_defined("rsqrt", x);
  Tensor out = float_kernel(x, [](auto v) {
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
  Tensor out = float_kernel(x, [](auto v) { return std::tanh(v); });
  record_unary("tanh", x, out, [out](const Tensor& g) { return mul(g, sub(1.0, square(out))); });
  return out;
}

Tensor sigmoid(const Tensor& x) {
  check_defined("sigmoid", x);
  Tensor out = float_kernel(x, [](auto v) {
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
  Tensor out = float_kernel(x, [](auto v) { return std::erf(v); });
  record_unary("erf", x, out, [x](const Tensor& g) {
    return mul(g, mul(exp(neg(square(x))), 2.0 / std::sqrt(std::numbers::pi)));
  });
  return out;
}

Tensor gelu(const Tensor& x) {
  check_defined("gelu", x);
  Tensor out = float_kernel(x, [](auto v) {
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
  Tensor out = float_kernel(x, [](auto v) { return std::sin(v); });
  record_unary("sin", x, out, [x](const Tensor& g) { return mul(g, cos(x)); });
  return out;
}

Tensor cos(const Tensor& x) {
  check_defined("cos", x);
  Tensor out = float_kernel(x, [](auto v) { return std::cos(v); });
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
  Tensor out = binary_kernel<ops::internal::Dtypes::kFloats>("div", a, b, t,
                                                             [](auto u, auto v) { return u / v; });
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
