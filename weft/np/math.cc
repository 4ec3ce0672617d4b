#include "weft/np/math.h"

#include <numbers>

#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/math.h"
#include "weft/ops/reduce.h"

namespace weft::np {
namespace {

// NumPy's float result type for a float-valued function (integers give float64).
Tensor as_float(const Tensor& x) {
  WEFT_CHECK(x.defined(), InvalidArgument) << "np: an input tensor is undefined";
  if (is_floating(x.dtype())) return x;
  return cast(x, x.dtype() == kBool ? kFloat16 : kFloat64);
}

template <typename F>
Tensor binary(const ArrayLike& a, const ArrayLike& b, F f) {
  auto [x, y] = operands(a, b);
  return f(x, y);
}

}  // namespace

Tensor abs(const Tensor& x) { return weft::abs(x); }
Tensor absolute(const Tensor& x) { return weft::abs(x); }
Tensor fabs(const Tensor& x) { return weft::abs(as_float(x)); }
Tensor negative(const Tensor& x) { return weft::neg(x); }
Tensor positive(const Tensor& x) { return contiguous(x); }
Tensor sign(const Tensor& x) { return weft::sign(x); }
Tensor sqrt(const Tensor& x) { return weft::sqrt(x); }
Tensor square(const Tensor& x) { return weft::square(x); }
Tensor cbrt(const Tensor& x) { return weft::cbrt(x); }
Tensor reciprocal(const Tensor& x) { return weft::reciprocal(x); }
Tensor exp(const Tensor& x) { return weft::exp(x); }
Tensor exp2(const Tensor& x) { return weft::exp2(x); }
Tensor expm1(const Tensor& x) { return weft::expm1(x); }
Tensor log(const Tensor& x) { return weft::log(x); }
Tensor log2(const Tensor& x) { return weft::log2(x); }
Tensor log10(const Tensor& x) { return weft::log10(x); }
Tensor log1p(const Tensor& x) { return weft::log1p(x); }
Tensor sin(const Tensor& x) { return weft::sin(x); }
Tensor cos(const Tensor& x) { return weft::cos(x); }
Tensor tan(const Tensor& x) { return weft::tan(x); }
Tensor arcsin(const Tensor& x) { return weft::asin(x); }
Tensor arccos(const Tensor& x) { return weft::acos(x); }
Tensor arctan(const Tensor& x) { return weft::atan(x); }
Tensor sinh(const Tensor& x) { return weft::sinh(x); }
Tensor cosh(const Tensor& x) { return weft::cosh(x); }
Tensor tanh(const Tensor& x) { return weft::tanh(x); }
Tensor arcsinh(const Tensor& x) { return weft::asinh(x); }
Tensor arccosh(const Tensor& x) { return weft::acosh(x); }
Tensor arctanh(const Tensor& x) { return weft::atanh(x); }
Tensor deg2rad(const Tensor& x) { return mul(as_float(x), std::numbers::pi / 180); }
Tensor rad2deg(const Tensor& x) { return mul(as_float(x), 180 / std::numbers::pi); }

Tensor sinc(const Tensor& x) {
  // sin(πx)/(πx) with the removable singularity at 0 filled by 1 (and a safe denominator there,
  // so the gradient at 0 is 0, not NaN).
  Tensor f = as_float(x);
  Tensor zero = weft::equal(f, 0);
  Tensor px = mul(where(zero, weft::ones_like(f), f), std::numbers::pi);
  return where(zero, weft::ones_like(f), weft::div(weft::sin(px), px));
}

Tensor floor(const Tensor& x) { return weft::floor(x); }
Tensor ceil(const Tensor& x) { return weft::ceil(x); }
Tensor fix(const Tensor& x) { return weft::trunc(x); }
Tensor round(const Tensor& x, int64_t decimals) { return weft::round(x, decimals); }
Tensor around(const Tensor& x, int64_t decimals) { return weft::round(x, decimals); }

Tensor add(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::add(x, y); });
}
Tensor subtract(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::sub(x, y); });
}
Tensor multiply(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::mul(x, y); });
}
Tensor divide(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::div(x, y); });
}
Tensor true_divide(const ArrayLike& a, const ArrayLike& b) { return divide(a, b); }
Tensor power(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::pow(x, y); });
}
Tensor float_power(const ArrayLike& a, const ArrayLike& b) {
  return weft::pow(cast(a.tensor(), kFloat64), cast(b.tensor(), kFloat64));
}
Tensor maximum(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::maximum(x, y); });
}
Tensor minimum(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::minimum(x, y); });
}
Tensor floor_divide(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::floor_div(x, y); });
}
Tensor mod(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::floor_mod(x, y); });
}
Tensor remainder(const ArrayLike& a, const ArrayLike& b) { return mod(a, b); }
std::pair<Tensor, Tensor> divmod(const ArrayLike& a, const ArrayLike& b) {
  return {floor_divide(a, b), mod(a, b)};
}
Tensor arctan2(const ArrayLike& y, const ArrayLike& x) {
  return binary(y, x, [](auto& u, auto& v) { return weft::atan2(u, v); });
}
Tensor hypot(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::hypot(x, y); });
}
Tensor logaddexp(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::logaddexp(x, y); });
}
Tensor logaddexp2(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::logaddexp2(x, y); });
}
Tensor heaviside(const ArrayLike& x, const ArrayLike& h0) {
  return binary(x, h0, [](auto& u, auto& v) { return weft::heaviside(u, v); });
}
Tensor nextafter(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::nextafter(x, y); });
}
Tensor clip(const Tensor& a, const ArrayLike& a_min, const ArrayLike& a_max) {
  return weft::minimum(weft::maximum(a, a_min.tensor_next_to(a)), a_max.tensor_next_to(a));
}

Tensor gcd(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::gcd(x, y); });
}
Tensor lcm(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::lcm(x, y); });
}
Tensor bitwise_and(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::bitwise_and(x, y); });
}
Tensor bitwise_or(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::bitwise_or(x, y); });
}
Tensor bitwise_xor(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::bitwise_xor(x, y); });
}
Tensor bitwise_not(const Tensor& x) { return weft::bitwise_not(x); }

Tensor equal(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::equal(x, y); });
}
Tensor not_equal(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::not_equal(x, y); });
}
Tensor less(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::less(x, y); });
}
Tensor less_equal(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::less_equal(x, y); });
}
Tensor greater(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::greater(x, y); });
}
Tensor greater_equal(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::greater_equal(x, y); });
}
Tensor logical_and(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::logical_and(x, y); });
}
Tensor logical_or(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::logical_or(x, y); });
}
Tensor logical_xor(const ArrayLike& a, const ArrayLike& b) {
  return binary(a, b, [](auto& x, auto& y) { return weft::logical_xor(x, y); });
}
Tensor logical_not(const Tensor& x) { return weft::logical_not(x); }
Tensor isnan(const Tensor& x) { return weft::isnan(x); }
Tensor isinf(const Tensor& x) { return weft::isinf(x); }
Tensor isfinite(const Tensor& x) { return weft::isfinite(x); }
Tensor isneginf(const Tensor& x) { return weft::logical_and(weft::isinf(x), weft::signbit(x)); }
Tensor isposinf(const Tensor& x) {
  return weft::logical_and(weft::isinf(x), weft::logical_not(weft::signbit(x)));
}
Tensor signbit(const Tensor& x) { return weft::signbit(x); }

Tensor isclose(const ArrayLike& a, const ArrayLike& b, double rtol, double atol, bool equal_nan) {
  // As NumPy: compare in the float type of the operands (integers as float64).
  auto [x0, y0] = operands(a, b);
  DType t = weft::promote_types(as_float(x0).dtype(), as_float(y0).dtype());
  Tensor x = cast(x0, t), y = cast(y0, t);
  Tensor finite = weft::logical_and(weft::isfinite(x), weft::isfinite(y));
  Tensor close =
      weft::less_equal(weft::abs(weft::sub(x, y)), weft::add(weft::mul(weft::abs(y), rtol), atol));
  Tensor out = weft::where(finite, close, weft::equal(x, y));
  if (equal_nan) out = weft::logical_or(out, weft::logical_and(weft::isnan(x), weft::isnan(y)));
  return out;
}

bool allclose(const ArrayLike& a, const ArrayLike& b, double rtol, double atol, bool equal_nan) {
  return weft::all(isclose(a, b, rtol, atol, equal_nan)).item<bool>();
}

bool array_equal(const ArrayLike& a, const ArrayLike& b) {
  Tensor x = a.tensor(), y = b.tensor();
  return x.shape() == y.shape() && weft::all(weft::equal(x, y)).item<bool>();
}

Tensor where(const Tensor& condition, const ArrayLike& x, const ArrayLike& y) {
  auto [u, v] = operands(x, y);
  return weft::where(condition, u, v);
}

}  // namespace weft::np
