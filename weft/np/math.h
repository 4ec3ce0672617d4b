// weft::np elementwise functions under NumPy's names and dtype rules: unary math, arithmetic,
// rounding, comparisons and predicates. Binary functions take ArrayLike operands (a tensor or a
// C++ number) and broadcast. Each forwards to the weft:: op that implements it.
#pragma once

#include <utility>

#include "weft/core/tensor.h"
#include "weft/np/array_like.h"

namespace weft::np {

// ---- unary -------------------------------------------------------------------------------------
Tensor abs(const Tensor& x);
Tensor absolute(const Tensor& x);
Tensor fabs(const Tensor& x);  // float result, as NumPy
Tensor negative(const Tensor& x);
Tensor positive(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor square(const Tensor& x);
Tensor cbrt(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor arcsin(const Tensor& x);
Tensor arccos(const Tensor& x);
Tensor arctan(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor arcsinh(const Tensor& x);
Tensor arccosh(const Tensor& x);
Tensor arctanh(const Tensor& x);
Tensor deg2rad(const Tensor& x);
Tensor rad2deg(const Tensor& x);
Tensor sinc(const Tensor& x);  // sin(πx)/(πx), 1 at 0

// ---- rounding ----------------------------------------------------------------------------------
// Zero gradients, as TensorFlow. round/around are half to even; decimals may be negative.
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor fix(const Tensor& x);  // toward zero
Tensor round(const Tensor& x, int64_t decimals = 0);
Tensor around(const Tensor& x, int64_t decimals = 0);

// ---- arithmetic --------------------------------------------------------------------------------
Tensor add(const ArrayLike& a, const ArrayLike& b);
Tensor subtract(const ArrayLike& a, const ArrayLike& b);
Tensor multiply(const ArrayLike& a, const ArrayLike& b);
Tensor divide(const ArrayLike& a, const ArrayLike& b);  // true division
Tensor true_divide(const ArrayLike& a, const ArrayLike& b);
Tensor power(const ArrayLike& a, const ArrayLike& b);
Tensor float_power(const ArrayLike& a, const ArrayLike& b);  // in float64
Tensor maximum(const ArrayLike& a, const ArrayLike& b);
Tensor minimum(const ArrayLike& a, const ArrayLike& b);
// Python's // and %: the remainder has the divisor's sign.
Tensor floor_divide(const ArrayLike& a, const ArrayLike& b);
Tensor mod(const ArrayLike& a, const ArrayLike& b);
Tensor remainder(const ArrayLike& a, const ArrayLike& b);
std::pair<Tensor, Tensor> divmod(const ArrayLike& a, const ArrayLike& b);
Tensor arctan2(const ArrayLike& y, const ArrayLike& x);
Tensor hypot(const ArrayLike& a, const ArrayLike& b);
Tensor logaddexp(const ArrayLike& a, const ArrayLike& b);
Tensor logaddexp2(const ArrayLike& a, const ArrayLike& b);
Tensor heaviside(const ArrayLike& x, const ArrayLike& h0);
Tensor nextafter(const ArrayLike& a, const ArrayLike& b);
Tensor clip(const Tensor& a, const ArrayLike& a_min, const ArrayLike& a_max);

// ---- integers and bits -------------------------------------------------------------------------
Tensor gcd(const ArrayLike& a, const ArrayLike& b);
Tensor lcm(const ArrayLike& a, const ArrayLike& b);
Tensor bitwise_and(const ArrayLike& a, const ArrayLike& b);
Tensor bitwise_or(const ArrayLike& a, const ArrayLike& b);
Tensor bitwise_xor(const ArrayLike& a, const ArrayLike& b);
Tensor bitwise_not(const Tensor& x);

// ---- comparisons and logic (bool results) ------------------------------------------------------
Tensor equal(const ArrayLike& a, const ArrayLike& b);
Tensor not_equal(const ArrayLike& a, const ArrayLike& b);
Tensor less(const ArrayLike& a, const ArrayLike& b);
Tensor less_equal(const ArrayLike& a, const ArrayLike& b);
Tensor greater(const ArrayLike& a, const ArrayLike& b);
Tensor greater_equal(const ArrayLike& a, const ArrayLike& b);
Tensor logical_and(const ArrayLike& a, const ArrayLike& b);
Tensor logical_or(const ArrayLike& a, const ArrayLike& b);
Tensor logical_xor(const ArrayLike& a, const ArrayLike& b);
Tensor logical_not(const Tensor& x);
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);
Tensor isneginf(const Tensor& x);
Tensor isposinf(const Tensor& x);
Tensor signbit(const Tensor& x);
// |a - b| <= atol + rtol * |b|, elementwise; infinities close only to themselves.
Tensor isclose(const ArrayLike& a, const ArrayLike& b, double rtol = 1e-05, double atol = 1e-08,
               bool equal_nan = false);
bool allclose(const ArrayLike& a, const ArrayLike& b, double rtol = 1e-05, double atol = 1e-08,
              bool equal_nan = false);
// Same shape and equal elements.
bool array_equal(const ArrayLike& a, const ArrayLike& b);

// condition ? x : y, broadcasting all three; differentiable in x and y.
Tensor where(const Tensor& condition, const ArrayLike& x, const ArrayLike& y);

}  // namespace weft::np
