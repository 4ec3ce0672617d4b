// Unary elementwise ops. Each op is a functor on the compute type (float for bf16/f16) run by one
// strided loop, with its gradient written right below it from other ops. (The binary ones are in
// arithmetic.cc.)
#include "weft/ops/elementwise.h"

#include <cmath>
#include <numbers>

#include "weft/autodiff/tape.h"
#include "weft/core/op_scope.h"
#include "weft/ops/creation.h"
#include "weft/ops/internal/elementwise_kernel.h"

namespace weft {
namespace {

using ops::internal::binary_loop;
using ops::internal::check_defined;
using ops::internal::float_kernel;
using ops::internal::record_unary;
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
  OpScope op("neg", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return neg(c[0]); });
  check_defined("neg", x);
  WEFT_CHECK(x.dtype() != kBool, InvalidArgument) << "neg: not defined for bool tensors";
  Tensor out = unary_kernel(x, x.dtype(), [](auto v) { return -v; });
  record_unary("neg", x, out, [](const Tensor& g) { return neg(g); });
  return out;
}

Tensor abs(const Tensor& x) {
  OpScope op("abs", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return abs(c[0]); });
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
  OpScope op("exp", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return exp(c[0]); });
  check_defined("exp", x);
  Tensor out = float_kernel(x, [](auto v) { return std::exp(v); });
  record_unary("exp", x, out, [out](const Tensor& g) { return mul(g, out); });
  return out;
}

Tensor log(const Tensor& x) {
  OpScope op("log", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return log(c[0]); });
  check_defined("log", x);
  Tensor out = float_kernel(x, [](auto v) { return std::log(v); });
  record_unary("log", x, out, [x](const Tensor& g) { return div(g, x); });
  return out;
}

Tensor sqrt(const Tensor& x) {
  OpScope op("sqrt", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return sqrt(c[0]); });
  check_defined("sqrt", x);
  Tensor out = float_kernel(x, [](auto v) { return std::sqrt(v); });
  record_unary("sqrt", x, out, [out](const Tensor& g) { return div(g, mul(out, 2.0)); });
  return out;
}

Tensor rsqrt(const Tensor& x) {
  OpScope op("rsqrt", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return rsqrt(c[0]); });
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
  OpScope op("square", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return square(c[0]); });
  check_defined("square", x);
  Tensor out = unary_kernel(x, x.dtype(), [](auto v) { return v * v; });
  record_unary("square", x, out, [x](const Tensor& g) { return mul(g, mul(x, 2.0)); });
  return out;
}

Tensor tanh(const Tensor& x) {
  OpScope op("tanh", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return tanh(c[0]); });
  check_defined("tanh", x);
  Tensor out = float_kernel(x, [](auto v) { return std::tanh(v); });
  record_unary("tanh", x, out, [out](const Tensor& g) { return mul(g, sub(1.0, square(out))); });
  return out;
}

Tensor sigmoid(const Tensor& x) {
  OpScope op("sigmoid", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return sigmoid(c[0]); });
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
  OpScope op("relu", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return relu(c[0]); });
  check_defined("relu", x);
  // NaN stays NaN (v != v), as in maximum(x, 0), NumPy and PyTorch: a NaN is never hidden.
  Tensor out =
      unary_kernel(x, x.dtype(), [](auto v) { return v > 0 || v != v ? v : decltype(v)(0); });
  record_unary("relu", x, out, [x](const Tensor& g) { return relu_grad(x, g); });
  return out;
}

Tensor erf(const Tensor& x) {
  OpScope op("erf", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return erf(c[0]); });
  check_defined("erf", x);
  Tensor out = float_kernel(x, [](auto v) { return std::erf(v); });
  record_unary("erf", x, out, [x](const Tensor& g) {
    return mul(g, mul(exp(neg(square(x))), 2.0 / std::sqrt(std::numbers::pi)));
  });
  return out;
}

Tensor gelu(const Tensor& x) {
  OpScope op("gelu", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return gelu(c[0]); });
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
  OpScope op("sin", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return sin(c[0]); });
  check_defined("sin", x);
  Tensor out = float_kernel(x, [](auto v) { return std::sin(v); });
  record_unary("sin", x, out, [x](const Tensor& g) { return mul(g, cos(x)); });
  return out;
}

Tensor cos(const Tensor& x) {
  OpScope op("cos", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return cos(c[0]); });
  check_defined("cos", x);
  Tensor out = float_kernel(x, [](auto v) { return std::cos(v); });
  record_unary("cos", x, out, [x](const Tensor& g) { return mul(g, neg(sin(x))); });
  return out;
}

Tensor sign(const Tensor& x) {
  OpScope op("sign", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return sign(c[0]); });
  check_defined("sign", x);
  Tensor out = unary_kernel(x, x.dtype(), [](auto v) {
    using C = decltype(v);
    return v != v ? v : static_cast<C>((C(0) < v) - (v < C(0)));  // sign(NaN) is NaN, as NumPy
  });
  record_unary("sign", x, out, [](const Tensor& g) { return zeros_like(g); });
  return out;
}

}  // namespace weft
