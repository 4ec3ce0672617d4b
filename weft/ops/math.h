// The rest of elementwise math, NumPy's semantics and TensorFlow's gradients: rounding and integer
// division, exp/log and trigonometric families, predicates, integer and bitwise ops. Float-valued
// functions of integers give float64, as NumPy; rounding gives a zero gradient, as TensorFlow.
// weft::np exposes them under NumPy's names (np::arcsin for asin, np::mod for floor_mod).
//
//   weft::Tensor r = weft::floor_mod(x, 3);          // sign of the divisor, as x % 3 in Python
//   weft::Tensor ok = weft::logical_not(weft::isnan(y));
#pragma once

#include <utility>

#include "weft/core/tensor.h"

namespace weft {

// Rounding. floor/ceil/trunc of integers give float64 (as NumPy 1.x); round is half to even and
// keeps integers (np.round). All have zero gradients.
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor trunc(const Tensor& x);
Tensor round(const Tensor& x, int64_t decimals = 0);

// Division that rounds toward -inf and its remainder, whose sign is the divisor's (Python's //
// and %). Integer division by zero gives 0, as NumPy; floats give inf/NaN.
Tensor floor_div(const Tensor& a, const Tensor& b);
Tensor floor_mod(const Tensor& a, const Tensor& b);
Tensor floor_div(const Tensor& a, Scalar b);
Tensor floor_mod(const Tensor& a, Scalar b);

// Exponentials and logarithms.
Tensor exp2(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor cbrt(const Tensor& x);
// 1/x; integers divide as integers (np.reciprocal: 1/2 is 0).
Tensor reciprocal(const Tensor& x);
// log(exp(a) + exp(b)) and log2(2^a + 2^b) without overflow.
Tensor logaddexp(const Tensor& a, const Tensor& b);
Tensor logaddexp2(const Tensor& a, const Tensor& b);

// Trigonometric and hyperbolic.
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor asinh(const Tensor& x);
Tensor acosh(const Tensor& x);
Tensor atanh(const Tensor& x);
Tensor atan2(const Tensor& y, const Tensor& x);
Tensor hypot(const Tensor& a, const Tensor& b);

// Predicates: bool tensors, no gradient. Integers are finite and never NaN.
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);
Tensor signbit(const Tensor& x);

// The next representable value after a toward b (floats; no gradient, as TensorFlow).
Tensor nextafter(const Tensor& a, const Tensor& b);
// 0 where x < 0, h0 where x == 0, 1 where x > 0, NaN where x is NaN; the gradient flows to h0.
Tensor heaviside(const Tensor& x, const Tensor& h0);

// Integers (and bool for the bitwise ops), broadcasting; gcd/lcm are non-negative.
Tensor gcd(const Tensor& a, const Tensor& b);
Tensor lcm(const Tensor& a, const Tensor& b);
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
Tensor bitwise_not(const Tensor& x);

}  // namespace weft
