// Binary arithmetic with NumPy broadcasting: add, sub, mul, div, pow, maximum and minimum, their
// Scalar forms, clip, and the operators. Each op is a functor on the compute type (float for
// bf16/f16) run by one strided loop, with its gradient written right below it from other ops.
// (The unary ops are in elementwise.cc: apart, each file compiles in half the time.)
#include <cmath>

#include "weft/core/op_scope.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/internal/elementwise_kernel.h"

namespace weft {
namespace {

using ops::internal::arith_dtype;
using ops::internal::binary_kernel;
using ops::internal::record_binary;
using ops::internal::scalar_like;

}  // namespace

// ---- binary ------------------------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) {
  OpScope op("add", a, b);
  if (op.spmd()) return op.elementwise({a, b}, [](const SpmdArgs& c) { return add(c[0], c[1]); });
  DType t = arith_dtype("add", a, b);
  Tensor out = binary_kernel("add", a, b, t, [](auto u, auto v) { return u + v; });
  record_binary("add", a, b, out, [](const Tensor& g) { return std::pair{g, g}; });
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  OpScope op("sub", a, b);
  if (op.spmd()) return op.elementwise({a, b}, [](const SpmdArgs& c) { return sub(c[0], c[1]); });
  DType t = arith_dtype("sub", a, b);
  WEFT_CHECK(t != kBool, InvalidArgument) << "sub: not defined for bool tensors";
  Tensor out = binary_kernel("sub", a, b, t, [](auto u, auto v) { return u - v; });
  record_binary("sub", a, b, out, [](const Tensor& g) { return std::pair{g, neg(g)}; });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  OpScope op("mul", a, b);
  if (op.spmd()) return op.elementwise({a, b}, [](const SpmdArgs& c) { return mul(c[0], c[1]); });
  DType t = arith_dtype("mul", a, b);
  Tensor out = binary_kernel("mul", a, b, t, [](auto u, auto v) { return u * v; });
  record_binary("mul", a, b, out, [a, b](const Tensor& g) {
    return std::pair{mul(g, b), mul(g, a)};
  });
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  OpScope op("div", a, b);
  if (op.spmd()) return op.elementwise({a, b}, [](const SpmdArgs& c) { return div(c[0], c[1]); });
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
  OpScope op("pow", a, b);
  if (op.spmd()) return op.elementwise({a, b}, [](const SpmdArgs& c) { return pow(c[0], c[1]); });
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
  OpScope op("maximum", a, b);
  if (op.spmd())
    return op.elementwise({a, b}, [](const SpmdArgs& c) { return maximum(c[0], c[1]); });
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
  OpScope op("minimum", a, b);
  if (op.spmd())
    return op.elementwise({a, b}, [](const SpmdArgs& c) { return minimum(c[0], c[1]); });
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
