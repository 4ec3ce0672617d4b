// Elementwise math beyond elementwise.cc: each op is a functor on the compute type run by the
// shared kernels (ops/internal/elementwise_kernel.h), with its gradient written below it from
// other ops.
#include "weft/ops/math.h"

#include <bit>
#include <cmath>
#include <numbers>
#include <numeric>
#include <type_traits>

#include "weft/core/op_scope.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/internal/elementwise_kernel.h"
#include "weft/ops/shape_ops.h"

namespace weft {
namespace {

using ops::internal::arith_dtype;
using ops::internal::binary_kernel;
using ops::internal::check_defined;
using ops::internal::Dtypes;
using ops::internal::float_kernel;
using ops::internal::float_result;
using ops::internal::record_binary;
using ops::internal::record_unary;
using ops::internal::scalar_like;
using ops::internal::unary_kernel;

constexpr double kLn2 = std::numbers::ln2;
constexpr double kLn10 = std::numbers::ln10;

template <typename C>
constexpr bool kFloat = std::is_floating_point_v<C>;

// A float-valued unary op (integers promoted as NumPy) and its gradient.
template <typename F>
Tensor unary_float(
    const char* op, const Tensor& x, F f,
    std::function<Tensor(const Tensor& x, const Tensor& out, const Tensor& g)> grad) {
  OpScope scope(op, x);
  if (scope.spmd()) {
    return scope.elementwise({x},
                             [&](const SpmdArgs& c) { return unary_float(op, c[0], f, grad); });
  }
  check_defined(op, x);
  Tensor out = float_kernel(x, f);
  record_unary(op, x, out,
               [x, out, grad = std::move(grad)](const Tensor& g) { return grad(x, out, g); });
  return out;
}

Tensor zero_grad(const Tensor&, const Tensor&, const Tensor& g) { return zeros_like(g); }

// A predicate of each element: a bool tensor, no gradient.
template <typename F>
Tensor predicate(const char* op, const Tensor& x, F f) {
  OpScope scope(op, x);
  if (scope.spmd())
    return scope.elementwise({x}, [&](const SpmdArgs& c) { return predicate(op, c[0], f); });
  check_defined(op, x);
  return unary_kernel<Dtypes::kAll, /*kToBool=*/true>(x, x.dtype(), f);
}

// The float type two operands compute a float-valued binary function in.
DType float_binary_dtype(const char* op, const Tensor& a, const Tensor& b) {
  return float_result(arith_dtype(op, a, b));
}

DType integer_dtype(const char* op, const Tensor& a, const Tensor& b, bool allow_bool) {
  DType t = arith_dtype(op, a, b);
  WEFT_CHECK(is_integral(t) || (allow_bool && t == kBool), InvalidArgument)
      << op << ": expected integer" << (allow_bool ? " or bool" : "") << " tensors, got "
      << a.dtype() << " and " << b.dtype();
  return t;
}

// Floor division and its remainder of one pair, as NumPy's npy_divmod: the remainder takes the
// divisor's sign, and the quotient is exact where a - mod is a multiple of b.
template <typename C>
std::pair<C, C> divmod_one(C a, C b) {
  if constexpr (kFloat<C>) {
    C mod = std::fmod(a, b);
    if (b == 0) return {a / b, mod};
    C div = (a - mod) / b;
    if (mod != 0) {
      if ((b < 0) != (mod < 0)) {
        mod += b;
        div -= 1;
      }
    } else {
      mod = std::copysign(C(0), b);
    }
    C floordiv;
    if (div != 0) {
      floordiv = std::floor(div);
      if (div - floordiv > C(0.5)) floordiv += 1;
    } else {
      floordiv = std::copysign(C(0), a / b);
    }
    return {floordiv, mod};
  } else if constexpr (std::is_same_v<C, bool>) {
    return {a, false};  // refused before it gets here
  } else {
    if (b == 0) return {0, 0};
    if constexpr (std::is_signed_v<C>) {
      if (b == -1) return {static_cast<C>(0 - static_cast<std::make_unsigned_t<C>>(a)), 0};
      C q = a / b, r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) {
        q -= 1;
        r += b;
      }
      return {q, r};
    } else {
      return {static_cast<C>(a / b), static_cast<C>(a % b)};
    }
  }
}

DType divmod_dtype(const char* op, const Tensor& a, const Tensor& b) {
  DType t = arith_dtype(op, a, b);
  WEFT_CHECK(t != kBool, InvalidArgument)
      << op << ": not defined for bool tensors; cast to an integer type first";
  return t;
}

}  // namespace

// ---- rounding ----------------------------------------------------------------------------------

Tensor floor(const Tensor& x) {
  return unary_float(
      "floor", x, [](auto v) { return std::floor(v); }, zero_grad);
}
Tensor ceil(const Tensor& x) {
  return unary_float(
      "ceil", x, [](auto v) { return std::ceil(v); }, zero_grad);
}
Tensor trunc(const Tensor& x) {
  return unary_float(
      "trunc", x, [](auto v) { return std::trunc(v); }, zero_grad);
}

Tensor round(const Tensor& x, int64_t decimals) {
  check_defined("round", x);
  OpScope op("round", x);
  if (op.spmd()) {
    return op.elementwise({x}, [decimals](const SpmdArgs& c) { return round(c[0], decimals); });
  }
  if (!is_floating(x.dtype()) && (decimals >= 0 || x.dtype() == kBool)) return contiguous(x);
  // As NumPy: scale by 10^decimals, round half to even, scale back.
  double scale = std::pow(10.0, static_cast<double>(std::abs(decimals)));
  bool up = decimals > 0;
  DType compute = is_floating(x.dtype()) ? x.dtype() : kFloat64;
  Tensor out = unary_kernel(x, compute, [scale, up, decimals](auto v) {
    using C = decltype(v);
    if constexpr (kFloat<C>) {
      if (decimals == 0) return std::nearbyint(v);
      C s = static_cast<C>(scale);
      return up ? std::nearbyint(v * s) / s : std::nearbyint(v / s) * s;
    } else {
      return v;
    }
  });
  record_unary("round", x, out, [](const Tensor& g) { return zeros_like(g); });
  return is_floating(x.dtype()) ? out : cast(out, x.dtype());
}

// ---- floor division
// ------------------------------------------------------------------------------

Tensor floor_div(const Tensor& a, const Tensor& b) {
  OpScope op("floor_div", a, b);
  if (op.spmd())
    return op.elementwise({a, b}, [](const SpmdArgs& c) { return floor_div(c[0], c[1]); });
  DType t = divmod_dtype("floor_div", a, b);
  Tensor out =
      binary_kernel("floor_div", a, b, t, [](auto u, auto v) { return divmod_one(u, v).first; });
  record_binary("floor_div", a, b, out, [](const Tensor& g) {
    return std::pair{zeros_like(g), zeros_like(g)};
  });
  return out;
}

Tensor floor_mod(const Tensor& a, const Tensor& b) {
  OpScope op("floor_mod", a, b);
  if (op.spmd())
    return op.elementwise({a, b}, [](const SpmdArgs& c) { return floor_mod(c[0], c[1]); });
  DType t = divmod_dtype("floor_mod", a, b);
  Tensor out =
      binary_kernel("floor_mod", a, b, t, [](auto u, auto v) { return divmod_one(u, v).second; });
  // a mod b = a - floor(a / b) * b
  record_binary("floor_mod", a, b, out, [a, b](const Tensor& g) {
    return std::pair{g, neg(mul(g, floor_div(a, b)))};
  });
  return out;
}

Tensor floor_div(const Tensor& a, Scalar b) { return floor_div(a, scalar_like(b, a)); }
Tensor floor_mod(const Tensor& a, Scalar b) { return floor_mod(a, scalar_like(b, a)); }

// ---- exponentials and logarithms ----------------------------------------------------------------

Tensor exp2(const Tensor& x) {
  return unary_float(
      "exp2", x, [](auto v) { return std::exp2(v); },
      [](const Tensor&, const Tensor& out, const Tensor& g) { return mul(g, mul(out, kLn2)); });
}
Tensor expm1(const Tensor& x) {
  return unary_float(
      "expm1", x, [](auto v) { return std::expm1(v); },
      [](const Tensor&, const Tensor& out, const Tensor& g) { return mul(g, add(out, 1.0)); });
}
Tensor log2(const Tensor& x) {
  return unary_float(
      "log2", x, [](auto v) { return std::log2(v); },
      [](const Tensor& x, const Tensor&, const Tensor& g) { return div(g, mul(x, kLn2)); });
}
Tensor log10(const Tensor& x) {
  return unary_float(
      "log10", x, [](auto v) { return std::log10(v); },
      [](const Tensor& x, const Tensor&, const Tensor& g) { return div(g, mul(x, kLn10)); });
}
Tensor log1p(const Tensor& x) {
  return unary_float(
      "log1p", x, [](auto v) { return std::log1p(v); },
      [](const Tensor& x, const Tensor&, const Tensor& g) { return div(g, add(x, 1.0)); });
}
Tensor cbrt(const Tensor& x) {
  return unary_float(
      "cbrt", x, [](auto v) { return std::cbrt(v); },
      [](const Tensor&, const Tensor& out, const Tensor& g) {
        return div(g, mul(square(out), 3.0));
      });
}

Tensor reciprocal(const Tensor& x) {
  OpScope op("reciprocal", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return reciprocal(c[0]); });
  check_defined("reciprocal", x);
  Tensor out = unary_kernel(x, x.dtype(), [](auto v) {
    using C = decltype(v);
    if constexpr (kFloat<C>) {
      return C(1) / v;
    } else if constexpr (std::is_same_v<C, bool>) {
      return v;
    } else {
      return v == 0 ? C(0) : static_cast<C>(C(1) / v);
    }
  });
  record_unary("reciprocal", x, out, [out](const Tensor& g) { return neg(mul(g, square(out))); });
  return out;
}

namespace {

// log_base(base^a + base^b) as NumPy's npy_logaddexp: equal arguments (infinities included) give
// a + log_base(2); otherwise the larger plus log1p of the smaller's ratio.
Tensor logaddexp_impl(const char* op, const Tensor& a, const Tensor& b, bool base2) {
  DType t = float_binary_dtype(op, a, b);
  Tensor out = binary_kernel<Dtypes::kFloats>(op, a, b, t, [base2](auto u, auto v) {
    using C = decltype(u);
    if constexpr (kFloat<C>) {
      C ln2 = static_cast<C>(kLn2);
      if (u == v) return u + (base2 ? C(1) : ln2);
      C d = u - v;
      C m = d > 0 ? u : v;
      C e = d > 0 ? -d : d;
      if (d != d) return d;
      return base2 ? m + std::log1p(std::exp2(e)) / ln2 : m + std::log1p(std::exp(e));
    } else {
      return u;
    }
  });
  record_binary(op, a, b, out, [a, b, out, base2](const Tensor& g) {
    auto share = [&](const Tensor& x) { return base2 ? exp2(sub(x, out)) : exp(sub(x, out)); };
    return std::pair{mul(g, share(a)), mul(g, share(b))};
  });
  return out;
}

}  // namespace

Tensor logaddexp(const Tensor& a, const Tensor& b) {
  OpScope op("logaddexp", a, b);
  if (op.spmd())
    return op.elementwise({a, b}, [](const SpmdArgs& c) { return logaddexp(c[0], c[1]); });
  return logaddexp_impl("logaddexp", a, b, false);
}
Tensor logaddexp2(const Tensor& a, const Tensor& b) {
  OpScope op("logaddexp2", a, b);
  if (op.spmd())
    return op.elementwise({a, b}, [](const SpmdArgs& c) { return logaddexp2(c[0], c[1]); });
  return logaddexp_impl("logaddexp2", a, b, true);
}

// ---- trigonometric and hyperbolic ---------------------------------------------------------------

Tensor tan(const Tensor& x) {
  return unary_float(
      "tan", x, [](auto v) { return std::tan(v); },
      [](const Tensor&, const Tensor& out, const Tensor& g) {
        return mul(g, add(square(out), 1.0));
      });
}
Tensor asin(const Tensor& x) {
  return unary_float(
      "asin", x, [](auto v) { return std::asin(v); },
      [](const Tensor& x, const Tensor&, const Tensor& g) {
        return mul(g, rsqrt(sub(1.0, square(x))));
      });
}
Tensor acos(const Tensor& x) {
  return unary_float(
      "acos", x, [](auto v) { return std::acos(v); },
      [](const Tensor& x, const Tensor&, const Tensor& g) {
        return neg(mul(g, rsqrt(sub(1.0, square(x)))));
      });
}
Tensor atan(const Tensor& x) {
  return unary_float(
      "atan", x, [](auto v) { return std::atan(v); },
      [](const Tensor& x, const Tensor&, const Tensor& g) { return div(g, add(square(x), 1.0)); });
}
Tensor sinh(const Tensor& x) {
  return unary_float(
      "sinh", x, [](auto v) { return std::sinh(v); },
      [](const Tensor& x, const Tensor&, const Tensor& g) { return mul(g, cosh(x)); });
}
Tensor cosh(const Tensor& x) {
  return unary_float(
      "cosh", x, [](auto v) { return std::cosh(v); },
      [](const Tensor& x, const Tensor&, const Tensor& g) { return mul(g, sinh(x)); });
}
Tensor asinh(const Tensor& x) {
  return unary_float(
      "asinh", x, [](auto v) { return std::asinh(v); },
      [](const Tensor& x, const Tensor&, const Tensor& g) {
        return mul(g, rsqrt(add(square(x), 1.0)));
      });
}
Tensor acosh(const Tensor& x) {
  return unary_float(
      "acosh", x, [](auto v) { return std::acosh(v); },
      [](const Tensor& x, const Tensor&, const Tensor& g) {
        return mul(g, rsqrt(sub(square(x), 1.0)));
      });
}
Tensor atanh(const Tensor& x) {
  return unary_float(
      "atanh", x, [](auto v) { return std::atanh(v); },
      [](const Tensor& x, const Tensor&, const Tensor& g) { return div(g, sub(1.0, square(x))); });
}

Tensor atan2(const Tensor& y, const Tensor& x) {
  OpScope op("atan2", y, x);
  if (op.spmd()) return op.elementwise({y, x}, [](const SpmdArgs& c) { return atan2(c[0], c[1]); });
  DType t = float_binary_dtype("atan2", y, x);
  Tensor out = binary_kernel<Dtypes::kFloats>("atan2", y, x, t,
                                              [](auto u, auto v) { return std::atan2(u, v); });
  record_binary("atan2", y, x, out, [y, x](const Tensor& g) {
    Tensor scaled = div(g, add(square(x), square(y)));
    return std::pair{mul(scaled, x), neg(mul(scaled, y))};
  });
  return out;
}

Tensor hypot(const Tensor& a, const Tensor& b) {
  OpScope op("hypot", a, b);
  if (op.spmd()) return op.elementwise({a, b}, [](const SpmdArgs& c) { return hypot(c[0], c[1]); });
  DType t = float_binary_dtype("hypot", a, b);
  Tensor out = binary_kernel<Dtypes::kFloats>("hypot", a, b, t,
                                              [](auto u, auto v) { return std::hypot(u, v); });
  record_binary("hypot", a, b, out, [a, b, out](const Tensor& g) {
    Tensor scaled = div(g, out);
    return std::pair{mul(scaled, a), mul(scaled, b)};
  });
  return out;
}

// ---- predicates --------------------------------------------------------------------------------

Tensor isnan(const Tensor& x) {
  return predicate("isnan", x, [](auto v) {
    if constexpr (kFloat<decltype(v)>) return std::isnan(v);
    return false;
  });
}
Tensor isinf(const Tensor& x) {
  return predicate("isinf", x, [](auto v) {
    if constexpr (kFloat<decltype(v)>) return std::isinf(v);
    return false;
  });
}
Tensor isfinite(const Tensor& x) {
  return predicate("isfinite", x, [](auto v) {
    if constexpr (kFloat<decltype(v)>) return std::isfinite(v);
    return true;
  });
}
Tensor signbit(const Tensor& x) {
  return predicate("signbit", x, [](auto v) {
    using C = decltype(v);
    if constexpr (std::is_same_v<C, float>) {
      return (std::bit_cast<uint32_t>(v) >> 31) != 0;  // std::signbit here trips a GCC 12 ICE
    } else if constexpr (std::is_same_v<C, double>) {
      return (std::bit_cast<uint64_t>(v) >> 63) != 0;
    } else if constexpr (std::is_signed_v<C>) {
      return v < 0;
    } else {
      return false;
    }
  });
}

namespace {
// The half type H's next value after x toward y, stepping its 16-bit pattern (a float
// computation would round back to x).
template <typename H>
H next_half(H x, H y) {
  float fx = x, fy = y;
  if (fx != fx || fy != fy) return H(fx + fy);
  if (fx == fy) return y;
  H out;
  if (fx == 0) {
    out.bits = static_cast<uint16_t>(fy > 0 ? 0x0001 : 0x8001);  // the smallest subnormal
  } else {
    bool away_from_zero = (fy > fx) == (fx > 0);
    out.bits = static_cast<uint16_t>(away_from_zero ? x.bits + 1 : x.bits - 1);
  }
  return out;
}
}  // namespace

Tensor nextafter(const Tensor& a, const Tensor& b) {
  OpScope op("nextafter", a, b);
  if (op.spmd())
    return op.elementwise({a, b}, [](const SpmdArgs& c) { return nextafter(c[0], c[1]); });
  DType t = float_binary_dtype("nextafter", a, b);
  if (is_half(t)) {
    Shape shape = broadcast_shapes("nextafter", a.shape(), b.shape());
    Tensor x = contiguous(broadcast_to(cast(a, t), shape));
    Tensor y = contiguous(broadcast_to(cast(b, t), shape));
    Tensor out = Tensor::empty(shape, t);
    auto run = [&]<typename H>() {
      const H* u = x.data<H>();
      const H* v = y.data<H>();
      H* o = out.data<H>();
      for (int64_t i = 0; i < out.numel(); ++i) o[i] = next_half(u[i], v[i]);
    };
    if (t == kFloat16) {
      run.template operator()<float16>();
    } else {
      run.template operator()<bfloat16>();
    }
    return out;
  }
  return binary_kernel<Dtypes::kFloats>("nextafter", a, b, t, [](auto u, auto v) {
    using C = decltype(u);
    if constexpr (kFloat<C>) return std::nextafter(u, v);
    return u;
  });
}

Tensor heaviside(const Tensor& x, const Tensor& h0) {
  OpScope op("heaviside", x, h0);
  if (op.spmd()) {
    return op.elementwise({x, h0}, [](const SpmdArgs& c) { return heaviside(c[0], c[1]); });
  }
  DType t = float_binary_dtype("heaviside", x, h0);
  Tensor out = binary_kernel<Dtypes::kFloats>("heaviside", x, h0, t, [](auto u, auto v) {
    using C = decltype(u);
    if constexpr (kFloat<C>) {
      if (u != u) return u;
      return u < 0 ? C(0) : (u == 0 ? v : C(1));
    }
    return v;
  });
  record_binary("heaviside", x, h0, out, [x](const Tensor& g) {
    Tensor zero = zeros({}, g.dtype());
    return std::pair{zeros_like(g), where(equal(x, 0), g, zero)};
  });
  return out;
}

// ---- integers and bits -------------------------------------------------------------------------

namespace {
// |v| as the unsigned type (|INT_MIN| included), and gcd/lcm computed there and cast back, so
// results that do not fit wrap as NumPy's do instead of overflowing.
template <typename C>
auto magnitude(C v) {
  using U = std::make_unsigned_t<C>;
  if constexpr (std::is_signed_v<C>)
    return v < 0 ? static_cast<U>(U(0) - static_cast<U>(v)) : static_cast<U>(v);
  return static_cast<U>(v);
}
}  // namespace

Tensor gcd(const Tensor& a, const Tensor& b) {
  OpScope op("gcd", a, b);
  if (op.spmd()) return op.elementwise({a, b}, [](const SpmdArgs& c) { return gcd(c[0], c[1]); });
  DType t = integer_dtype("gcd", a, b, false);
  return binary_kernel("gcd", a, b, t, [](auto u, auto v) {
    using C = decltype(u);
    if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
      return static_cast<C>(std::gcd(magnitude(u), magnitude(v)));
    }
    return u;
  });
}
Tensor lcm(const Tensor& a, const Tensor& b) {
  OpScope op("lcm", a, b);
  if (op.spmd()) return op.elementwise({a, b}, [](const SpmdArgs& c) { return lcm(c[0], c[1]); });
  DType t = integer_dtype("lcm", a, b, false);
  return binary_kernel("lcm", a, b, t, [](auto u, auto v) {
    using C = decltype(u);
    if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
      auto x = magnitude(u), y = magnitude(v);
      if (x == 0 || y == 0) return C(0);
      return static_cast<C>(static_cast<decltype(x)>(x / std::gcd(x, y) * y));
    }
    return u;
  });
}

namespace {
template <typename F>
Tensor bitwise(const char* op, const Tensor& a, const Tensor& b, F f) {
  DType t = integer_dtype(op, a, b, true);
  return binary_kernel(op, a, b, t, [f](auto u, auto v) {
    using C = decltype(u);
    if constexpr (std::is_integral_v<C>) return static_cast<C>(f(u, v));
    return u;
  });
}
}  // namespace

Tensor bitwise_and(const Tensor& a, const Tensor& b) {
  OpScope op("bitwise_and", a, b);
  if (op.spmd())
    return op.elementwise({a, b}, [](const SpmdArgs& c) { return bitwise_and(c[0], c[1]); });
  return bitwise("bitwise_and", a, b, [](auto u, auto v) { return u & v; });
}
Tensor bitwise_or(const Tensor& a, const Tensor& b) {
  OpScope op("bitwise_or", a, b);
  if (op.spmd())
    return op.elementwise({a, b}, [](const SpmdArgs& c) { return bitwise_or(c[0], c[1]); });
  return bitwise("bitwise_or", a, b, [](auto u, auto v) { return u | v; });
}
Tensor bitwise_xor(const Tensor& a, const Tensor& b) {
  OpScope op("bitwise_xor", a, b);
  if (op.spmd())
    return op.elementwise({a, b}, [](const SpmdArgs& c) { return bitwise_xor(c[0], c[1]); });
  return bitwise("bitwise_xor", a, b, [](auto u, auto v) { return u ^ v; });
}
Tensor bitwise_not(const Tensor& x) {
  OpScope op("bitwise_not", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return bitwise_not(c[0]); });
  check_defined("bitwise_not", x);
  WEFT_CHECK(is_integral(x.dtype()) || x.dtype() == kBool, InvalidArgument)
      << "bitwise_not: expected an integer or bool tensor, got " << x.dtype();
  return unary_kernel(x, x.dtype(), [](auto v) {
    using C = decltype(v);
    if constexpr (std::is_same_v<C, bool>) {
      return !v;
    } else if constexpr (std::is_integral_v<C>) {
      return static_cast<C>(~v);
    } else {
      return v;
    }
  });
}

}  // namespace weft
