#include "weft/ops/elementwise.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/core/trace_me.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/linalg.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/testing/gradient_check.h"

namespace weft {
namespace {

using ::testing::AllOf;
using testing::away_from_zero;
using ::testing::ElementsAre;
using testing::gradient_check;
using ::testing::HasSubstr;
using testing::second_derivative_check;
using ::testing::ThrowsMessage;
using testing::uniform;

using UnaryFn = Tensor (*)(const Tensor&);
using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);

struct UnaryCase {
  const char* name;
  UnaryFn op;
  double (*reference)(double);
  bool positive_only;  // the domain (log, sqrt, rsqrt)
};

double ref_neg(double v) { return -v; }
double ref_abs(double v) { return std::fabs(v); }
double ref_exp(double v) { return std::exp(v); }
double ref_log(double v) { return std::log(v); }
double ref_sqrt(double v) { return std::sqrt(v); }
double ref_rsqrt(double v) { return 1 / std::sqrt(v); }
double ref_square(double v) { return v * v; }
double ref_tanh(double v) { return std::tanh(v); }
double ref_sigmoid(double v) { return 1 / (1 + std::exp(-v)); }
double ref_relu(double v) { return v > 0 ? v : 0; }
double ref_gelu(double v) { return 0.5 * v * (1 + std::erf(v / std::numbers::sqrt2)); }
double ref_erf(double v) { return std::erf(v); }
double ref_sin(double v) { return std::sin(v); }
double ref_cos(double v) { return std::cos(v); }
double ref_sign(double v) { return v > 0 ? 1 : v < 0 ? -1 : 0; }

const UnaryCase kUnary[] = {
    {"neg", &neg, &ref_neg, false},
    {"abs", &abs, &ref_abs, false},
    {"exp", &exp, &ref_exp, false},
    {"log", &log, &ref_log, true},
    {"sqrt", &sqrt, &ref_sqrt, true},
    {"rsqrt", &rsqrt, &ref_rsqrt, true},
    {"square", &square, &ref_square, false},
    {"tanh", &tanh, &ref_tanh, false},
    {"sigmoid", &sigmoid, &ref_sigmoid, false},
    {"relu", &relu, &ref_relu, false},
    {"gelu", &gelu, &ref_gelu, false},
    {"erf", &erf, &ref_erf, false},
    {"sin", &sin, &ref_sin, false},
    {"cos", &cos, &ref_cos, false},
    {"sign", &sign, &ref_sign, false},
};

Tensor input_for(const UnaryCase& c, const Shape& shape, uint64_t seed) {
  return c.positive_only ? uniform(shape, seed, 0.3, 2.0) : away_from_zero(shape, seed);
}

// ---- unary forward -----------------------------------------------------------------------------

TEST(Unary, Float64MatchesCmath) {
  for (const UnaryCase& c : kUnary) {
    Tensor x = input_for(c, {3, 5}, 1);
    Tensor y = c.op(x);
    ASSERT_EQ(y.dtype(), kFloat64) << c.name;
    ASSERT_EQ(y.shape(), Shape({3, 5})) << c.name;
    std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>();
    for (size_t i = 0; i < xv.size(); ++i) {
      EXPECT_NEAR(yv[i], c.reference(xv[i]), 1e-15 * std::max(1.0, std::fabs(yv[i])))
          << c.name << " at " << xv[i];
    }
  }
}

TEST(Unary, Float32MatchesCmath) {
  for (const UnaryCase& c : kUnary) {
    Tensor x = cast(input_for(c, {4, 7}, 2), kFloat32);
    Tensor y = c.op(x);
    ASSERT_EQ(y.dtype(), kFloat32) << c.name;
    std::vector<float> xv = x.to_vector<float>(), yv = y.to_vector<float>();
    for (size_t i = 0; i < xv.size(); ++i) {
      double ref = c.reference(static_cast<double>(xv[i]));
      EXPECT_NEAR(yv[i], ref, 1e-6 * std::max(1.0, std::fabs(ref))) << c.name << " at " << xv[i];
    }
  }
}

TEST(Unary, ReluKeepsNaN) {
  // As maximum(x, 0) does, in every floating dtype and above the parallel split size.
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    std::vector<double> v(100001, -1.0);
    v[5] = NAN;
    v[77777] = NAN;
    v[9] = 2.0;
    std::vector<double> y =
        cast(relu(cast(Tensor::from_vector(v), dtype)), kFloat64).to_vector<double>();
    EXPECT_TRUE(std::isnan(y[5])) << dtype;
    EXPECT_TRUE(std::isnan(y[77777])) << dtype;
    EXPECT_EQ(y[9], 2.0) << dtype;
    EXPECT_EQ(y[10], 0.0) << dtype;
    std::vector<double> m =
        cast(maximum(cast(Tensor::from_vector(v), dtype), 0.0), kFloat64).to_vector<double>();
    EXPECT_TRUE(std::isnan(m[5]));  // relu agrees with maximum(x, 0)
  }
}

TEST(Unary, SpecialValues) {
  Tensor x = Tensor::from_vector<double>({0.0, -0.0, 1.0, -2.0, INFINITY, -INFINITY});
  EXPECT_THAT(relu(x).to_vector<double>(), ElementsAre(0, 0, 1, 0, INFINITY, 0));
  EXPECT_THAT(sign(x).to_vector<double>(), ElementsAre(0, 0, 1, -1, 1, -1));
  EXPECT_THAT(abs(x).to_vector<double>(), ElementsAre(0, 0, 1, 2, INFINITY, INFINITY));
  EXPECT_THAT(tanh(x).to_vector<double>(),
              ElementsAre(0, 0, std::tanh(1.0), std::tanh(-2.0), 1, -1));
  EXPECT_EQ(sigmoid(x).to_vector<double>()[4], 1.0);
  EXPECT_EQ(sigmoid(x).to_vector<double>()[5], 0.0);
  EXPECT_TRUE(std::isnan(sign(Tensor::scalar(NAN, kFloat64)).item<double>()));
  EXPECT_TRUE(std::isnan(sign(Tensor::scalar(NAN, kFloat32)).item<float>()));
  EXPECT_TRUE(std::isnan(log(Tensor::scalar(-1.0, kFloat64)).item<double>()));
  EXPECT_EQ(log(Tensor::scalar(0.0, kFloat64)).item<double>(), -INFINITY);
  EXPECT_DOUBLE_EQ(gelu(Tensor::scalar(1.0, kFloat64)).item<double>(),
                   0.5 * (1 + std::erf(1 / std::sqrt(2.0))));
}

TEST(Unary, IntegerInputsPromoteLikeNumPy) {
  Tensor i = Tensor::from_vector<int32_t>({-2, 0, 3});
  EXPECT_EQ(exp(i).dtype(), kFloat64);
  EXPECT_DOUBLE_EQ(exp(i).to_vector<double>()[2], std::exp(3.0));
  EXPECT_EQ(sqrt(Tensor::from_vector<int64_t>({4})).dtype(), kFloat64);
  EXPECT_EQ(sqrt(Tensor::from_vector<uint8_t>({4})).dtype(), kFloat16);  // np.sqrt(uint8)
  // Value-preserving ops keep integer types.
  EXPECT_EQ(abs(i).dtype(), kInt32);
  EXPECT_THAT(abs(i).to_vector<int32_t>(), ElementsAre(2, 0, 3));
  EXPECT_THAT(neg(i).to_vector<int32_t>(), ElementsAre(2, 0, -3));
  EXPECT_THAT(square(i).to_vector<int32_t>(), ElementsAre(4, 0, 9));
  EXPECT_THAT(relu(i).to_vector<int32_t>(), ElementsAre(0, 0, 3));
  EXPECT_THAT(sign(i).to_vector<int32_t>(), ElementsAre(-1, 0, 1));
  EXPECT_THAT([] { neg(Tensor::from_vector<bool>({true})); },
              ThrowsMessage<InvalidArgument>(HasSubstr("neg")));
}

TEST(Unary, NonContiguousInput) {
  Tensor base = uniform({4, 6}, 3, 0.1, 2.0);
  Tensor t = transpose(base);                                    // (6, 4), strides (1, 6)
  Tensor s = slice(base, {Slice{{}, {}, -1}, Slice{1, {}, 2}});  // rows reversed, odd columns
  ASSERT_FALSE(t.is_contiguous());
  ASSERT_FALSE(s.is_contiguous());
  for (const Tensor& v : {t, s}) {
    std::vector<double> xv = v.to_vector<double>();
    std::vector<double> yv = log(v).to_vector<double>();
    ASSERT_EQ(xv.size(), yv.size());
    for (size_t i = 0; i < xv.size(); ++i) EXPECT_DOUBLE_EQ(yv[i], std::log(xv[i]));
  }
}

// ---- unary gradients ---------------------------------------------------------------------------

TEST(UnaryGradient, EveryOpContiguous) {
  for (const UnaryCase& c : kUnary) {
    UnaryFn op = c.op;
    EXPECT_TRUE(
        gradient_check([op](const auto& xs) { return op(xs[0]); }, {input_for(c, {3, 4}, 7)}))
        << c.name;
  }
}

TEST(UnaryGradient, EveryOpOnTransposedAndSlicedViews) {
  for (const UnaryCase& c : kUnary) {
    UnaryFn op = c.op;
    Tensor x = input_for(c, {4, 6}, 8);
    EXPECT_TRUE(gradient_check([op](const auto& xs) { return op(transpose(xs[0])); }, {x}))
        << c.name;
    EXPECT_TRUE(gradient_check(
        [op](const auto& xs) {
          return op(slice(xs[0], {Slice{{}, {}, -2}, Slice{1, 5, 3}}));
        },
        {x}))
        << c.name;
    // The input itself a non-contiguous view.
    EXPECT_TRUE(gradient_check([op](const auto& xs) { return op(xs[0]); }, {transpose(x)}))
        << c.name;
  }
}

TEST(UnaryGradient, SignGradientIsZero) {
  Tensor x = away_from_zero({5}, 9);
  GradientTape tape;
  tape.watch(x);
  Tensor g = tape.gradient(sum(sign(x)), x);
  EXPECT_THAT(g.to_vector<double>(), ElementsAre(0, 0, 0, 0, 0));
}

TEST(UnaryGradient, ReluGradientIsStep) {
  Tensor x = Tensor::from_vector<double>({-1.5, 0.5, 2.0, -0.1});
  GradientTape tape;
  tape.watch(x);
  Tensor g = tape.gradient(sum(relu(x)), x);
  EXPECT_THAT(g.to_vector<double>(), ElementsAre(0, 1, 1, 0));
}

TEST(UnaryGradient, SecondDerivatives) {
  for (const UnaryCase& c : kUnary) {
    UnaryFn op = c.op;
    EXPECT_TRUE(second_derivative_check([op](const auto& xs) { return op(xs[0]); },
                                        {input_for(c, {2, 3}, 11)}))
        << c.name;
  }
}

TEST(UnaryGradient, Float32GradientMatchesFloat64) {
  for (const UnaryCase& c : kUnary) {
    Tensor x64 = input_for(c, {3, 3}, 12);
    Tensor x32 = cast(x64, kFloat32);
    auto grad = [&](const Tensor& x) {
      GradientTape tape;
      tape.watch(x);
      return tape.gradient(sum(c.op(x)), x);
    };
    Tensor g32 = grad(x32), g64 = grad(x64);
    ASSERT_EQ(g32.dtype(), kFloat32) << c.name;
    std::vector<double> a = g32.to_vector<double>(), b = g64.to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_NEAR(a[i], b[i], 1e-5 * std::max(1.0, std::fabs(b[i]))) << c.name;
    }
  }
}

// ---- binary forward ----------------------------------------------------------------------------

struct BinaryCase {
  const char* name;
  BinaryFn op;
  double (*reference)(double, double);
};

double ref_add(double a, double b) { return a + b; }
double ref_sub(double a, double b) { return a - b; }
double ref_mul(double a, double b) { return a * b; }
double ref_div(double a, double b) { return a / b; }
double ref_pow(double a, double b) { return std::pow(a, b); }
double ref_max(double a, double b) { return std::max(a, b); }
double ref_min(double a, double b) { return std::min(a, b); }

const BinaryCase kBinary[] = {
    {"add", &add, &ref_add},         {"sub", &sub, &ref_sub}, {"mul", &mul, &ref_mul},
    {"div", &div, &ref_div},         {"pow", &pow, &ref_pow}, {"maximum", &maximum, &ref_max},
    {"minimum", &minimum, &ref_min},
};

Tensor positive(const Shape& shape, uint64_t seed) { return uniform(shape, seed, 0.5, 2.0); }

TEST(Binary, BroadcastColumnAgainstRow) {
  Tensor a = positive({3, 1}, 21);
  Tensor b = positive({4}, 22);
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  for (const BinaryCase& c : kBinary) {
    Tensor y = c.op(a, b);
    ASSERT_EQ(y.shape(), Shape({3, 4})) << c.name;
    std::vector<double> yv = y.to_vector<double>();
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 4; ++j) {
        EXPECT_DOUBLE_EQ(yv[i * 4 + j], c.reference(av[i], bv[j])) << c.name;
      }
    }
    // And the other way round.
    std::vector<double> yt = c.op(b, a).to_vector<double>();
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 4; ++j) EXPECT_DOUBLE_EQ(yt[i * 4 + j], c.reference(bv[j], av[i]));
    }
  }
}

TEST(Binary, BroadcastAboveTheParallelSplitSize) {
  // (300, 1) against (700,) and a transposed (700, 300) against (300, 1): 210000 elements, so
  // the loops are cut among threads (grain 32768), each cut starting mid-row.
  Tensor a = positive({300, 1}, 31), b = positive({700}, 32);
  Tensor c_base = positive({700, 300}, 33);
  Tensor c = transpose(c_base);  // (300, 700), non-contiguous
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(),
                      cv = c.to_vector<double>();
  for (const BinaryCase& k : kBinary) {
    std::vector<double> y = k.op(a, b).to_vector<double>();
    std::vector<double> z = k.op(c, a).to_vector<double>();
    ASSERT_EQ(y.size(), 210000u) << k.name;
    ASSERT_EQ(z.size(), 210000u) << k.name;
    auto off = [](double got, double want) {  // EXPECT_DOUBLE_EQ's 4 ulp
      return std::fabs(got - want) > 4 * std::numeric_limits<double>::epsilon() * std::fabs(want);
    };
    int wrong = 0;
    for (int i = 0; i < 300; ++i) {
      for (int j = 0; j < 700; ++j) {
        wrong += off(y[i * 700 + j], k.reference(av[i], bv[j]));
        wrong += off(z[i * 700 + j], k.reference(cv[i * 700 + j], av[i]));
      }
    }
    EXPECT_EQ(wrong, 0) << k.name;
  }
}

TEST(Binary, Rank3BroadcastAndNonContiguous) {
  Tensor a = positive({2, 3, 4}, 23);
  Tensor b_base = positive({4, 3}, 24);
  Tensor b = transpose(b_base);  // (3, 4), non-contiguous
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  for (const BinaryCase& c : kBinary) {
    std::vector<double> yv = c.op(a, b).to_vector<double>();
    ASSERT_EQ(yv.size(), 24u);
    for (int i = 0; i < 24; ++i) EXPECT_DOUBLE_EQ(yv[i], c.reference(av[i], bv[i % 12])) << c.name;
  }
}

TEST(Binary, ScalarOperands) {
  Tensor x = Tensor::from_vector<float>({1, 2, 4});
  EXPECT_THAT((x + 1).to_vector<float>(), ElementsAre(2, 3, 5));
  EXPECT_THAT((x - 1).to_vector<float>(), ElementsAre(0, 1, 3));
  EXPECT_THAT((1 - x).to_vector<float>(), ElementsAre(0, -1, -3));
  EXPECT_THAT(sub(1, x).to_vector<float>(), ElementsAre(0, -1, -3));
  EXPECT_THAT((x * 2.5).to_vector<float>(), ElementsAre(2.5, 5, 10));
  EXPECT_THAT((2 * x).to_vector<float>(), ElementsAre(2, 4, 8));
  EXPECT_THAT((x / 2).to_vector<float>(), ElementsAre(0.5, 1, 2));
  EXPECT_THAT((8 / x).to_vector<float>(), ElementsAre(8, 4, 2));
  EXPECT_THAT((3 + x).to_vector<float>(), ElementsAre(4, 5, 7));
  EXPECT_THAT(pow(x, 2).to_vector<float>(), ElementsAre(1, 4, 16));
  EXPECT_THAT(maximum(x, 2).to_vector<float>(), ElementsAre(2, 2, 4));
  EXPECT_THAT(minimum(x, 2).to_vector<float>(), ElementsAre(1, 2, 2));
  EXPECT_THAT((-x).to_vector<float>(), ElementsAre(-1, -2, -4));
  EXPECT_EQ((x * 2.5).dtype(), kFloat32);  // a float scalar does not widen a float tensor
}

// In every floating dtype: half types compare in float (a float16 NaN must stay a NaN there).
TEST(Binary, MaximumMinimumPropagateNaN) {
  for (DType t : {kFloat64, kFloat32, kBFloat16, kFloat16}) {
    Tensor a = cast(Tensor::from_vector<double>({NAN, 1.0, 2.0}), t);
    Tensor b = cast(Tensor::from_vector<double>({0.0, NAN, 1.0}), t);
    std::vector<double> mx = cast(maximum(a, b), kFloat64).to_vector<double>();
    std::vector<double> mn = cast(minimum(a, b), kFloat64).to_vector<double>();
    EXPECT_TRUE(std::isnan(mx[0])) << t;
    EXPECT_TRUE(std::isnan(mx[1])) << t;
    EXPECT_EQ(mx[2], 2.0) << t;
    EXPECT_TRUE(std::isnan(mn[0])) << t;
    EXPECT_TRUE(std::isnan(mn[1])) << t;
    EXPECT_EQ(mn[2], 1.0) << t;
    EXPECT_TRUE(
        std::isnan(cast(sign(cast(Tensor::scalar(NAN, kFloat64), t)), kFloat64).item<double>()))
        << t;
  }
}

TEST(Binary, IntegerArithmetic) {
  Tensor a = Tensor::from_vector<int32_t>({7, -7, 9});
  Tensor b = Tensor::from_vector<int32_t>({2, 2, 3});
  EXPECT_THAT(add(a, b).to_vector<int32_t>(), ElementsAre(9, -5, 12));
  EXPECT_THAT(sub(a, b).to_vector<int32_t>(), ElementsAre(5, -9, 6));
  EXPECT_THAT(mul(a, b).to_vector<int32_t>(), ElementsAre(14, -14, 27));
  EXPECT_THAT(pow(b, b).to_vector<int32_t>(), ElementsAre(4, 4, 27));
  Tensor q = div(a, b);  // true division
  EXPECT_EQ(q.dtype(), kFloat64);
  EXPECT_THAT(q.to_vector<double>(), ElementsAre(3.5, -3.5, 3.0));
  EXPECT_THAT(maximum(a, b).to_vector<int32_t>(), ElementsAre(7, 2, 9));
  EXPECT_THAT(minimum(a, b).to_vector<int32_t>(), ElementsAre(2, -7, 3));
}

TEST(Binary, MismatchedShapesNameOpAndShapes) {
  Tensor a = zeros({2, 3}), b = zeros({4});
  for (const BinaryCase& c : kBinary) {
    BinaryFn op = c.op;
    EXPECT_THAT([&] { op(a, b); }, ThrowsMessage<InvalidArgument>(AllOf(
                                       HasSubstr(c.name), HasSubstr("(2, 3)"), HasSubstr("(4,)"))))
        << c.name;
  }
  EXPECT_THAT([&] { a + b; }, ThrowsMessage<InvalidArgument>(
                                  AllOf(HasSubstr("add"), HasSubstr("(2, 3)"), HasSubstr("(4,)"))));
  EXPECT_THAT([&] { where(zeros({5}, kBool), a, a); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("where"), HasSubstr("(5,)"))));
  EXPECT_THAT([&] { less(a, b); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("less"), HasSubstr("(2, 3)"))));
  EXPECT_THAT([&] { add(a, Tensor()); }, ThrowsMessage<InvalidArgument>(HasSubstr("undefined")));
}

// ---- type promotion ----------------------------------------------------------------------------

TEST(Promotion, NumPyRules) {
  Tensor i32 = Tensor::from_vector<int32_t>({1, 2});
  Tensor f32 = Tensor::from_vector<float>({0.5f, 0.25f});
  Tensor u8 = Tensor::from_vector<uint8_t>({1, 2});
  Tensor b = Tensor::from_vector<bool>({true, false});

  Tensor s = i32 + f32;
  EXPECT_EQ(s.dtype(), kFloat64);
  EXPECT_THAT(s.to_vector<double>(), ElementsAre(1.5, 2.25));
  EXPECT_EQ((i32 + 1).dtype(), kInt32);
  EXPECT_THAT((i32 + 1).to_vector<int32_t>(), ElementsAre(2, 3));
  EXPECT_EQ((i32 + 0.5).dtype(), kFloat64);
  EXPECT_THAT((i32 + 0.5).to_vector<double>(), ElementsAre(1.5, 2.5));
  EXPECT_EQ((0.5 * i32).dtype(), kFloat64);
  EXPECT_EQ((i32 / 2).dtype(), kFloat64);
  EXPECT_THAT((i32 / 2).to_vector<double>(), ElementsAre(0.5, 1.0));
  EXPECT_EQ(div(i32, i32).dtype(), kFloat64);
  EXPECT_EQ((u8 + f32).dtype(), kFloat32);
  EXPECT_EQ((u8 + i32).dtype(), kInt32);
  EXPECT_EQ((b + 1).dtype(), kInt64);
  EXPECT_EQ((b + i32).dtype(), kInt32);
  EXPECT_EQ((b + b).dtype(), kBool);
  EXPECT_EQ((f32 + cast(f32, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ((cast(f32, kFloat16) + cast(f32, kBFloat16)).dtype(), kFloat32);
  EXPECT_EQ((cast(f32, kBFloat16) + 1.5).dtype(), kBFloat16);
  EXPECT_EQ((cast(f32, kFloat16) + i32).dtype(), kFloat64);
}

TEST(Promotion, HalfTypesComputeInFloat) {
  for (DType t : {kBFloat16, kFloat16}) {
    Tensor a = cast(Tensor::from_vector<float>({1.0f, 2.5f, -3.0f, 0.5f}), t);
    Tensor b = cast(Tensor::from_vector<float>({0.5f, 0.5f, 2.0f, 4.0f}), t);
    EXPECT_EQ((a + b).dtype(), t);
    EXPECT_THAT(cast(a + b, kFloat32).to_vector<float>(), ElementsAre(1.5f, 3.0f, -1.0f, 4.5f));
    EXPECT_THAT(cast(a * b, kFloat32).to_vector<float>(), ElementsAre(0.5f, 1.25f, -6.0f, 2.0f));
    EXPECT_THAT(cast(a / b, kFloat32).to_vector<float>(), ElementsAre(2.0f, 5.0f, -1.5f, 0.125f));
    EXPECT_THAT(cast(relu(a), kFloat32).to_vector<float>(), ElementsAre(1.0f, 2.5f, 0.0f, 0.5f));
    Tensor e = cast(exp(a), kFloat32);
    EXPECT_EQ(exp(a).dtype(), t);
    double tol = t == kBFloat16 ? 1.0 / 128 : 1.0 / 1024;
    std::vector<float> ev = e.to_vector<float>();
    std::vector<float> av = cast(a, kFloat32).to_vector<float>();
    for (size_t i = 0; i < ev.size(); ++i) {
      EXPECT_NEAR(ev[i], std::exp(av[i]), tol * std::exp(av[i])) << dtype_name(t);
    }
  }
}

// ---- binary gradients --------------------------------------------------------------------------

TEST(BinaryGradient, SameShape) {
  for (const BinaryCase& c : kBinary) {
    BinaryFn op = c.op;
    EXPECT_TRUE(gradient_check([op](const auto& xs) { return op(xs[0], xs[1]); },
                               {positive({3, 4}, 31), positive({3, 4}, 32)}))
        << c.name;
  }
}

TEST(BinaryGradient, Broadcasting) {
  const std::vector<std::pair<Shape, Shape>> shapes = {{{3, 1}, {4}},       {{4}, {3, 1}},
                                                       {{2, 3, 4}, {3, 1}}, {{1, 3, 1}, {2, 1, 4}},
                                                       {{}, {2, 3}},        {{2, 3}, {}}};
  for (const BinaryCase& c : kBinary) {
    BinaryFn op = c.op;
    uint64_t seed = 40;
    for (const auto& [sa, sb] : shapes) {
      EXPECT_TRUE(gradient_check([op](const auto& xs) { return op(xs[0], xs[1]); },
                                 {positive(sa, seed++), positive(sb, seed++)}))
          << c.name << " " << shape_str(sa) << " " << shape_str(sb);
    }
  }
}

TEST(BinaryGradient, NonContiguousInputs) {
  for (const BinaryCase& c : kBinary) {
    BinaryFn op = c.op;
    Tensor a = positive({4, 3}, 51), b = positive({3, 8}, 52);
    EXPECT_TRUE(gradient_check(
        [op](const auto& xs) {
          return op(transpose(xs[0]), slice(xs[1], {Slice{}, Slice{{}, {}, -2}}));
        },
        {a, b}))
        << c.name;
    EXPECT_TRUE(gradient_check([op](const auto& xs) { return op(xs[0], xs[1]); },
                               {transpose(a), slice(b, {Slice{}, Slice{1, {}, 2}})}))
        << c.name;
  }
}

TEST(BinaryGradient, ScalarOperands) {
  Tensor x = positive({2, 3}, 61);
  EXPECT_TRUE(gradient_check([](const auto& xs) { return xs[0] + 2; }, {x}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return 2.0 - xs[0]; }, {x}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return xs[0] * 2.5; }, {x}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return 3.0 / xs[0]; }, {x}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return xs[0] / 3; }, {x}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return pow(xs[0], 3.0); }, {x}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return pow(xs[0], -1.5); }, {x}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return maximum(xs[0], 1.0); }, {x}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return minimum(xs[0], 1.0); }, {x}));
}

TEST(BinaryGradient, PowExponentGradientIsZeroForNonPositiveBase) {
  Tensor a = Tensor::from_vector<double>({-2.0, 0.0, 2.0});
  Tensor b = Tensor::from_vector<double>({2.0, 2.0, 2.0});
  GradientTape tape;
  tape.watch({a, b});
  auto g = tape.gradient(sum(pow(a, b)), std::vector<Tensor>{a, b});
  EXPECT_THAT(g[0].to_vector<double>(), ElementsAre(-4.0, 0.0, 4.0));
  EXPECT_THAT(g[1].to_vector<double>(), ElementsAre(0.0, 0.0, 4.0 * std::log(2.0)));
}

TEST(BinaryGradient, MaximumTiesGoToFirstOperand) {
  Tensor a = Tensor::from_vector<double>({1.0, 2.0, 3.0});
  Tensor b = Tensor::from_vector<double>({1.0, 5.0, 0.0});
  GradientTape tape;
  tape.watch({a, b});
  auto g = tape.gradient(sum(maximum(a, b)), std::vector<Tensor>{a, b});
  EXPECT_THAT(g[0].to_vector<double>(), ElementsAre(1, 0, 1));
  EXPECT_THAT(g[1].to_vector<double>(), ElementsAre(0, 1, 0));
}

TEST(BinaryGradient, IntegerOperandGetsNoGradient) {
  Tensor x = positive({3}, 62);
  Tensor i = Tensor::from_vector<int32_t>({1, 2, 3});
  GradientTape tape;
  tape.watch(x);
  Tensor y = sum(mul(x, i));
  EXPECT_EQ(y.dtype(), kFloat64);
  Tensor g = tape.gradient(y, x);
  EXPECT_THAT(g.to_vector<double>(), ElementsAre(1, 2, 3));
}

TEST(BinaryGradient, Float32OperandOfFloat64ProductGetsFloat32Gradient) {
  Tensor a = cast(positive({2, 2}, 63), kFloat32);
  Tensor b = positive({2, 2}, 64);
  GradientTape tape;
  tape.watch({a, b});
  auto g = tape.gradient(sum(mul(a, b)), std::vector<Tensor>{a, b});
  EXPECT_EQ(g[0].dtype(), kFloat32);
  EXPECT_EQ(g[1].dtype(), kFloat64);
  std::vector<double> bv = b.to_vector<double>();
  std::vector<float> ga = g[0].to_vector<float>();
  for (size_t i = 0; i < bv.size(); ++i) EXPECT_EQ(ga[i], static_cast<float>(bv[i]));
}

TEST(BinaryGradient, SecondDerivatives) {
  for (const BinaryCase& c : kBinary) {
    BinaryFn op = c.op;
    EXPECT_TRUE(second_derivative_check([op](const auto& xs) { return op(xs[0], xs[1]); },
                                        {positive({2, 3}, 71), positive({3}, 72)}))
        << c.name;
  }
}

// ---- clip and where ----------------------------------------------------------------------------

TEST(Clip, ForwardScalarAndTensorBounds) {
  Tensor x = Tensor::from_vector<double>({-3, -1, 0, 1, 3});
  EXPECT_THAT(clip(x, -2, 2).to_vector<double>(), ElementsAre(-2, -1, 0, 1, 2));
  Tensor lo = Tensor::from_vector<double>({-4, 0, 0, 0, 0});
  Tensor hi = Tensor::from_vector<double>({-3.5, 1, 1, 0.5, 5});
  EXPECT_THAT(clip(x, lo, hi).to_vector<double>(), ElementsAre(-3.5, 0, 0, 0.5, 3));
  Tensor i = Tensor::from_vector<int32_t>({-5, 5});
  EXPECT_EQ(clip(i, 0, 3).dtype(), kInt32);
  EXPECT_THAT(clip(i, 0, 3).to_vector<int32_t>(), ElementsAre(0, 3));
}

TEST(Clip, Gradient) {
  Tensor x = Tensor::from_vector<double>({-3, -1.5, 0.3, 1.2, 3}, {5});
  EXPECT_TRUE(gradient_check([](const auto& xs) { return clip(xs[0], -2, 2); }, {x}));
  GradientTape tape;
  tape.watch(x);
  EXPECT_THAT(tape.gradient(sum(clip(x, -2, 2)), x).to_vector<double>(),
              ElementsAre(0, 1, 1, 1, 0));
  // Tensor bounds get the gradient where they bind.
  Tensor lo = Tensor::from_vector<double>({-2.5, -2.5, -2.5, -2.5, -2.5});
  Tensor hi = Tensor::from_vector<double>({2.1, 2.1, 0.1, 2.1, 2.1});
  EXPECT_TRUE(
      gradient_check([](const auto& xs) { return clip(xs[0], xs[1], xs[2]); }, {x, lo, hi}));
}

TEST(Where, ForwardBroadcasts) {
  Tensor cond = Tensor::from_vector<bool>({true, false, true}, {3, 1});
  Tensor a = Tensor::from_vector<double>({1, 2, 3, 4}, {4});
  Tensor b = Tensor::scalar(-1.0, kFloat64);
  Tensor y = where(cond, a, b);
  ASSERT_EQ(y.shape(), Shape({3, 4}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(1, 2, 3, 4, -1, -1, -1, -1, 1, 2, 3, 4));
  // Promotion between the branches, and a non-bool condition read as "nonzero".
  Tensor c2 = Tensor::from_vector<int32_t>({0, 7});
  Tensor z =
      where(c2, Tensor::from_vector<int32_t>({1, 2}), Tensor::from_vector<float>({0.5f, 0.5f}));
  EXPECT_EQ(z.dtype(), kFloat64);
  EXPECT_THAT(z.to_vector<double>(), ElementsAre(0.5, 2));
}

TEST(Where, Gradient) {
  Tensor cond = Tensor::from_vector<bool>({true, false, false}, {3, 1});
  EXPECT_TRUE(gradient_check([cond](const auto& xs) { return where(cond, xs[0], xs[1]); },
                             {uniform({3, 4}, 81), uniform({4}, 82)}));
  EXPECT_TRUE(
      gradient_check([](const auto& xs) { return where(xs[2], xs[0], xs[1]); },
                     {uniform({2, 3}, 83), uniform({2, 3}, 84),
                      Tensor::from_vector<bool>({true, false, true, true, false, false}, {2, 3})}));
  EXPECT_TRUE(second_derivative_check(
      [cond](const auto& xs) { return where(cond, square(xs[0]), xs[1] * xs[1] * xs[1]); },
      {uniform({3, 4}, 85), uniform({4}, 86)}));
}

// ---- comparisons and logical ops ---------------------------------------------------------------

TEST(Compare, AllComparisons) {
  Tensor a = Tensor::from_vector<double>({1, 2, 3});
  Tensor b = Tensor::from_vector<double>({2, 2, 2});
  EXPECT_EQ(equal(a, b).dtype(), kBool);
  EXPECT_THAT(equal(a, b).to_vector<bool>(), ElementsAre(false, true, false));
  EXPECT_THAT(not_equal(a, b).to_vector<bool>(), ElementsAre(true, false, true));
  EXPECT_THAT(less(a, b).to_vector<bool>(), ElementsAre(true, false, false));
  EXPECT_THAT(less_equal(a, b).to_vector<bool>(), ElementsAre(true, true, false));
  EXPECT_THAT(greater(a, b).to_vector<bool>(), ElementsAre(false, false, true));
  EXPECT_THAT(greater_equal(a, b).to_vector<bool>(), ElementsAre(false, true, true));
  EXPECT_THAT(equal(a, 2).to_vector<bool>(), ElementsAre(false, true, false));
  EXPECT_THAT(less(a, 2.5).to_vector<bool>(), ElementsAre(true, true, false));
  EXPECT_THAT(greater(a, 1).to_vector<bool>(), ElementsAre(false, true, true));
}

TEST(Compare, BroadcastAndMixedTypes) {
  Tensor col = Tensor::from_vector<int32_t>({1, 2}, {2, 1});
  Tensor row = Tensor::from_vector<float>({0.5f, 1.0f, 1.5f, 2.0f});
  Tensor y = less(col, row);
  ASSERT_EQ(y.shape(), Shape({2, 4}));
  EXPECT_THAT(y.to_vector<bool>(),
              ElementsAre(false, false, true, true, false, false, false, false));
  // int32 2 and float 2.5 compare as float64, not truncated.
  EXPECT_THAT(less(Tensor::from_vector<int32_t>({2}), 2.5).to_vector<bool>(), ElementsAre(true));
  Tensor nan = Tensor::from_vector<double>({NAN});
  EXPECT_THAT(equal(nan, nan).to_vector<bool>(), ElementsAre(false));
  EXPECT_THAT(not_equal(nan, nan).to_vector<bool>(), ElementsAre(true));
}

TEST(Compare, NoGradientFlows) {
  Tensor x = uniform({3}, 91);
  GradientTape tape;
  tape.watch(x);
  Tensor y = cast(greater(x, 0), kFloat64);
  EXPECT_FALSE(tape.gradient(sum(y), x).defined());
}

TEST(Logical, TruthTables) {
  Tensor a = Tensor::from_vector<bool>({false, false, true, true});
  Tensor b = Tensor::from_vector<bool>({false, true, false, true});
  EXPECT_THAT(logical_and(a, b).to_vector<bool>(), ElementsAre(false, false, false, true));
  EXPECT_THAT(logical_or(a, b).to_vector<bool>(), ElementsAre(false, true, true, true));
  EXPECT_THAT(logical_xor(a, b).to_vector<bool>(), ElementsAre(false, true, true, false));
  EXPECT_THAT(logical_not(a).to_vector<bool>(), ElementsAre(true, true, false, false));
  Tensor n = Tensor::from_vector<float>({0.0f, 2.0f, -1.0f, 0.0f});
  EXPECT_THAT(logical_not(n).to_vector<bool>(), ElementsAre(true, false, false, true));
  EXPECT_THAT(logical_and(n, b).to_vector<bool>(), ElementsAre(false, true, false, false));
  EXPECT_EQ(logical_and(n, b).dtype(), kBool);
}

// As TensorFlow's kernels: a denormal result is 0 and a denormal input counts as 0, in weft's
// own kernels and in oneDNN's, on one thread and on several; the caller's own arithmetic keeps
// IEEE denormals afterwards.
TEST(Denormals, KernelsFlushThemToZero) {
  const float tiny = 1e-40f;  // denormal in float32
  volatile float a = 1e-30f, b = 1e-10f;
  ASSERT_GT(a * b, 0.0f);  // IEEE: 1e-40, a denormal
  for (int threads : {1, 2}) {
    config::ThreadBudget budget(threads);
    std::vector<float> big(100000, 1e-30f);
    Tensor x = Tensor::from_vector(big);
    Tensor products = mul(x, 1e-10);  // denormal results
    EXPECT_EQ(max(products).item<float>(), 0.0f) << threads << " threads";
    Tensor sums = add(Tensor::from_vector(std::vector<float>(100000, tiny)), 0.0);  // denormal in
    EXPECT_EQ(max(sums).item<float>(), 0.0f) << threads << " threads";
    Tensor m = matmul(full({64, 64}, 1e-20, kFloat32), full({64, 64}, 1e-20, kFloat32));
    EXPECT_EQ(max(m).item<float>(), 0.0f) << threads << " threads";  // oneDNN: 64 x 1e-40
  }
  EXPECT_GT(a * b, 0.0f);  // this thread's own flags are back
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Every op passes OpScope, which makes it a profiler event at host level 2 (weft/core/trace_me.h):
// nested as the ops nest, and not recorded at level 1.
TEST(OpEvents, OpsAreEventsAtLevelTwoOnly) {
  Tensor a = Tensor::from_vector(std::vector<float>{1, -2, 3});
  start_tracing(2);
  Tensor r = relu(add(a, a));
  std::vector<TraceEvent> events = stop_tracing().events;
  std::vector<std::string> names;
  for (const TraceEvent& e : events) names.push_back(e.name);
  EXPECT_THAT(names, ::testing::ElementsAre("add", "relu"));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{2, 0, 6}));
  start_tracing(1);
  relu(add(a, a));
  EXPECT_TRUE(stop_tracing().events.empty());
}

}  // namespace
}  // namespace weft
