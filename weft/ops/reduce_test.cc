#include "weft/ops/reduce.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/cumulative.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/shape_ops.h"
#include "weft/testing/gradient_check.h"
#include "weft/testing/thread_determinism.h"

namespace weft {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using testing::gradient_check;
using ::testing::HasSubstr;
using testing::second_derivative_check;
using ::testing::ThrowsMessage;
using testing::uniform;

using ReduceFn = Tensor (*)(const Tensor&, const Axes&, bool);

// A naive reduction: every element's output index by dropping the reduced axes, then `combine`
// over each output's elements in index order.
struct NaiveReduce {
  Shape shape;
  std::vector<double> values;
};

NaiveReduce naive_reduce(const Tensor& x, const Axes& axes, bool keepdims,
                         const std::function<double(const std::vector<double>&)>& combine) {
  const Shape& in = x.shape();
  int64_t rank = x.rank();
  std::vector<bool> mask(rank, axes.empty());
  for (int64_t a : axes) mask[a < 0 ? a + rank : a] = true;
  NaiveReduce out;
  Shape kept;
  for (int64_t i = 0; i < rank; ++i) {
    if (!mask[i]) kept.push_back(in[i]);
    if (!mask[i] || keepdims) out.shape.push_back(mask[i] ? 1 : in[i]);
  }
  std::vector<std::vector<double>> groups(num_elements(kept));
  std::vector<double> xv = x.to_vector<double>();
  std::vector<int64_t> index(rank, 0);
  for (size_t e = 0; e < xv.size(); ++e) {
    int64_t o = 0;
    for (int64_t i = 0; i < rank; ++i) {
      if (!mask[i]) o = o * in[i] + index[i];
    }
    groups[o].push_back(xv[e]);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < in[d]) break;
      index[d] = 0;
    }
  }
  for (const auto& g : groups) out.values.push_back(combine(g));
  return out;
}

double naive_sum(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e;
  return s;
}
double naive_mean(const std::vector<double>& v) { return naive_sum(v) / v.size(); }
double naive_prod(const std::vector<double>& v) {
  double p = 1;
  for (double e : v) p *= e;
  return p;
}
double naive_max(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }
double naive_min(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
double naive_logsumexp(const std::vector<double>& v) {
  double m = naive_max(v), s = 0;
  for (double e : v) s += std::exp(e - m);
  return std::log(s) + m;
}

struct ReduceCase {
  const char* name;
  ReduceFn op;
  double (*naive)(const std::vector<double>&);
};

const ReduceCase kReductions[] = {
    {"sum", &sum, &naive_sum},    {"mean", &mean, &naive_mean},
    {"max", &max, &naive_max},    {"min", &min, &naive_min},
    {"prod", &prod, &naive_prod}, {"logsumexp", &logsumexp, &naive_logsumexp},
};

// Every subset of the axes of a rank-3 tensor ({} means all), some written negative or unordered.
const std::vector<Axes> kAxisSubsets = {{},     {0},       {1},  {2},    {0, 1},  {0, 2},
                                        {1, 2}, {0, 1, 2}, {-1}, {2, 0}, {-3, -2}};

std::string axes_str(const Axes& axes) {
  std::string s = "{";
  for (int64_t a : axes) s += std::to_string(a) + ",";
  return s + "}";
}

void expect_matches_naive(const ReduceCase& c, const Tensor& x) {
  for (const Axes& axes : kAxisSubsets) {
    for (bool keepdims : {false, true}) {
      Tensor y = c.op(x, axes, keepdims);
      NaiveReduce ref = naive_reduce(x, axes, keepdims, c.naive);
      ASSERT_EQ(y.shape(), ref.shape) << c.name << " " << axes_str(axes) << " " << keepdims;
      std::vector<double> yv = y.to_vector<double>();
      for (size_t i = 0; i < yv.size(); ++i) {
        EXPECT_NEAR(yv[i], ref.values[i], 1e-13 * std::max(1.0, std::fabs(ref.values[i])))
            << c.name << " " << axes_str(axes) << " keepdims " << keepdims << " at " << i;
      }
    }
  }
}

TEST(Reduce, EveryAxisSubsetMatchesNaiveLoop) {
  Tensor x = uniform({3, 4, 5}, 1, 0.5, 1.5);
  for (const ReduceCase& c : kReductions) expect_matches_naive(c, x);
}

TEST(Reduce, NonContiguousInputs) {
  Tensor base = uniform({5, 3, 8}, 2, 0.5, 1.5);
  Tensor t = transpose(base, {1, 2, 0});                                  // (3, 8, 5)
  Tensor s = slice(base, {Slice{{}, {}, -2}, Slice{}, Slice{1, {}, 3}});  // (3, 3, 3)
  Tensor b = broadcast_to(uniform({3, 1, 4}, 3), {3, 2, 4});
  for (const ReduceCase& c : kReductions) {
    expect_matches_naive(c, t);
    expect_matches_naive(c, s);
    expect_matches_naive(c, b);
  }
}

TEST(Reduce, LongRunsAcrossBlocks) {
  // More elements than one block (16384) along the reduced axis, and along a strided one.
  Tensor x = uniform({3, 40000}, 4);
  for (const ReduceCase& c : kReductions) {
    if (std::string(c.name) == "prod") continue;
    for (const Axes& axes : std::vector<Axes>{{}, {0}, {1}}) {
      Tensor y = c.op(x, axes, false);
      NaiveReduce ref = naive_reduce(x, axes, false, c.naive);
      std::vector<double> yv = y.to_vector<double>();
      ASSERT_EQ(yv.size(), ref.values.size());
      for (size_t i = 0; i < yv.size(); ++i) {
        EXPECT_NEAR(yv[i], ref.values[i], 1e-11 * std::max(1.0, std::fabs(ref.values[i])))
            << c.name << " " << axes_str(axes);
      }
    }
  }
  Tensor t = transpose(x);  // reduce over axis 0 of a (40000, 3) view: a strided run
  std::vector<double> col = sum(t, {0}).to_vector<double>();
  NaiveReduce ref = naive_reduce(x, {1}, false, naive_sum);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(col[i], ref.values[i], 1e-10);
}

TEST(Reduce, Dtypes) {
  Tensor i = Tensor::from_vector<int32_t>({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(sum(i).dtype(), kInt64);
  EXPECT_EQ(sum(i).item<int64_t>(), 10);
  EXPECT_EQ(prod(i).dtype(), kInt64);
  EXPECT_EQ(prod(i).item<int64_t>(), 24);
  EXPECT_EQ(max(i).dtype(), kInt32);
  EXPECT_EQ(max(i).item<int32_t>(), 4);
  EXPECT_EQ(min(i, {1}).to_vector<int32_t>(), std::vector<int32_t>({1, 3}));
  EXPECT_EQ(mean(i).dtype(), kFloat64);
  EXPECT_EQ(mean(i).item<double>(), 2.5);
  EXPECT_EQ(logsumexp(i).dtype(), kFloat64);
  Tensor b = Tensor::from_vector<bool>({true, false, true});
  EXPECT_EQ(sum(b).dtype(), kInt64);
  EXPECT_EQ(sum(b).item<int64_t>(), 2);
  EXPECT_EQ(sum(uniform({3}, 5, -1, 1, kFloat32)).dtype(), kFloat32);
  for (DType t : {kBFloat16, kFloat16}) {
    Tensor h = cast(Tensor::from_vector<float>({1.5f, 2.0f, -0.5f, 4.0f}), t);
    EXPECT_EQ(sum(h).dtype(), t);
    EXPECT_EQ(cast(sum(h), kFloat32).item<float>(), 7.0f);
    EXPECT_EQ(cast(mean(h), kFloat32).item<float>(), 1.75f);
    EXPECT_EQ(cast(max(h), kFloat32).item<float>(), 4.0f);
  }
}

TEST(Reduce, HalfSumAccumulatesInFloat) {
  // 4096 ones: a float16 accumulator would stop at 2048.
  Tensor h = ones({4096}, kFloat16);
  EXPECT_EQ(cast(sum(h), kFloat32).item<float>(), 4096.0f);
  EXPECT_EQ(cast(mean(h), kFloat32).item<float>(), 1.0f);
}

// In every floating dtype: half types compare in float (a float16 NaN must stay a NaN there).
TEST(Reduce, MaxMinPropagateNaN) {
  for (DType t : {kFloat64, kFloat32, kBFloat16, kFloat16}) {
    Tensor x = cast(Tensor::from_vector<double>({1, NAN, 3, 4, 5, 6}, {2, 3}), t);
    std::vector<double> m = cast(max(x, {1}), kFloat64).to_vector<double>();
    EXPECT_TRUE(std::isnan(m[0])) << t;
    EXPECT_EQ(m[1], 6) << t;
    EXPECT_TRUE(std::isnan(cast(min(x), kFloat64).item<double>())) << t;
  }
}

TEST(Reduce, LogSumExpIsStable) {
  Tensor x = Tensor::from_vector<double>({1000, 1000, 1000, -1000, -INFINITY, 0}, {2, 3});
  std::vector<double> y = logsumexp(x, {1}).to_vector<double>();
  EXPECT_DOUBLE_EQ(y[0], 1000 + std::log(3.0));
  EXPECT_DOUBLE_EQ(y[1], std::log(std::exp(-1000.0) + 1.0));
  Tensor all_neg_inf = full({2}, -INFINITY, kFloat64);
  EXPECT_EQ(logsumexp(all_neg_inf).item<double>(), -INFINITY);
  Tensor f = cast(Tensor::from_vector<double>({1000, 1000}), kFloat32);
  EXPECT_FLOAT_EQ(logsumexp(f).item<float>(), 1000 + std::log(2.0f));
}

TEST(Reduce, EmptyReductions) {
  Tensor e = zeros({0, 3}, kFloat64);
  EXPECT_THAT(sum(e, {0}).to_vector<double>(), ElementsAre(0, 0, 0));
  EXPECT_THAT(prod(e, {0}).to_vector<double>(), ElementsAre(1, 1, 1));
  EXPECT_EQ(sum(e, {1}).shape(), Shape({0}));
  EXPECT_EQ(sum(e).item<double>(), 0);
  EXPECT_TRUE(std::isnan(mean(e).item<double>()));
  EXPECT_EQ(max(e, {1}).shape(), Shape({0}));  // nothing to reduce into: fine
  EXPECT_THAT([&] { max(e, {0}); },
              ThrowsMessage<InvalidArgument>(
                  AllOf(HasSubstr("max"), HasSubstr("axis 0"), HasSubstr("(0, 3)"))));
  EXPECT_THAT([&] { min(e); }, ThrowsMessage<InvalidArgument>(HasSubstr("min")));
  EXPECT_THAT([&] { logsumexp(e, {0}); }, ThrowsMessage<InvalidArgument>(HasSubstr("max")));
  EXPECT_THAT([&] { argmax(e, 0); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("argmax"), HasSubstr("(0, 3)"))));
}

TEST(Reduce, AxisErrors) {
  Tensor x = zeros({2, 3, 4});
  for (const ReduceCase& c : kReductions) {
    ReduceFn op = c.op;
    EXPECT_THAT([&] { op(x, {3}, false); },
                ThrowsMessage<OutOfRange>(
                    AllOf(HasSubstr(c.name), HasSubstr("axis 3"), HasSubstr("rank 3"))))
        << c.name;
    EXPECT_THAT([&] { op(x, {-4}, false); },
                ThrowsMessage<OutOfRange>(AllOf(HasSubstr("axis -4"), HasSubstr("rank 3"))))
        << c.name;
  }
  EXPECT_THAT(
      [&] {
        sum(x, {1, -2});
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("sum"), HasSubstr("more than once"))));
  EXPECT_THAT([&] { argmax(x, 3); },
              ThrowsMessage<OutOfRange>(
                  AllOf(HasSubstr("argmax"), HasSubstr("axis 3"), HasSubstr("rank 3"))));
  EXPECT_THAT([&] { argmin(x, -4); }, ThrowsMessage<OutOfRange>(HasSubstr("argmin")));
}

TEST(Reduce, ScalarInput) {
  Tensor s = Tensor::scalar(2.5, kFloat64);
  EXPECT_EQ(sum(s).item<double>(), 2.5);
  EXPECT_EQ(sum(s).shape(), Shape{});
  EXPECT_EQ(max(s, {}, true).shape(), Shape{});
}

// ---- argmax / argmin ---------------------------------------------------------------------------

TEST(ArgReduce, EveryAxisMatchesNaive) {
  Tensor x = uniform({3, 4, 5}, 6);
  std::vector<double> xv = x.to_vector<double>();
  for (int64_t axis = -3; axis < 3; ++axis) {
    for (bool largest : {true, false}) {
      Tensor y = largest ? argmax(x, axis) : argmin(x, axis);
      ASSERT_EQ(y.dtype(), kInt64);
      int64_t a = axis < 0 ? axis + 3 : axis;
      NaiveReduce values = naive_reduce(x, {a}, false, largest ? naive_max : naive_min);
      ASSERT_EQ(y.shape(), values.shape);
      std::vector<int64_t> idx = y.to_vector<int64_t>();
      // The element at the returned index along `axis` is the extreme value.
      Shape s = x.shape();
      Strides st = contiguous_strides(s);
      for (size_t o = 0; o < idx.size(); ++o) {
        int64_t rem = static_cast<int64_t>(o), off = 0;
        for (int64_t d = 2; d >= 0; --d) {
          if (d == a) continue;
          off += (rem % s[d]) * st[d];
          rem /= s[d];
        }
        EXPECT_EQ(xv[off + idx[o] * st[a]], values.values[o]) << axis;
      }
    }
  }
}

TEST(ArgReduce, TiesGiveFirstIndexAndNaNWins) {
  Tensor x = Tensor::from_vector<float>({1, 3, 3, 0, 2, 2, 0, 0}, {2, 4});
  EXPECT_THAT(argmax(x, 1).to_vector<int64_t>(), ElementsAre(1, 0));
  EXPECT_THAT(argmin(x, 1).to_vector<int64_t>(), ElementsAre(3, 2));
  EXPECT_THAT(argmax(x, 0).to_vector<int64_t>(), ElementsAre(1, 0, 0, 0));  // last: a tie
  for (DType t : {kFloat64, kFloat32, kBFloat16, kFloat16}) {
    Tensor n = cast(Tensor::from_vector<double>({1, NAN, 5, NAN}), t);
    EXPECT_EQ(argmax(n, 0).item<int64_t>(), 1) << t;
    EXPECT_EQ(argmin(n, 0).item<int64_t>(), 1) << t;
  }
  Tensor i = Tensor::from_vector<int32_t>({5, -2, 9}, {3});
  EXPECT_EQ(argmax(i, 0).item<int64_t>(), 2);
  EXPECT_EQ(
      argmin(transpose(Tensor::from_vector<int32_t>({4, 1, 2, 0}, {2, 2})), 1).to_vector<int64_t>(),
      std::vector<int64_t>({1, 1}));
}

// ---- gradients ---------------------------------------------------------------------------------

TEST(ReduceGradient, EveryAxisSubsetWithAndWithoutKeepdims) {
  Tensor x = uniform({2, 3, 4}, 7, 0.5, 1.5);  // distinct values: no ties for max/min
  for (const ReduceCase& c : kReductions) {
    ReduceFn op = c.op;
    for (const Axes& axes : kAxisSubsets) {
      for (bool keepdims : {false, true}) {
        EXPECT_TRUE(gradient_check(
            [op, axes, keepdims](const auto& xs) { return op(xs[0], axes, keepdims); }, {x}))
            << c.name << " " << axes_str(axes) << " keepdims " << keepdims;
      }
    }
  }
}

TEST(ReduceGradient, NonContiguousInputs) {
  Tensor x = uniform({4, 3, 2}, 8, 0.5, 1.5);
  for (const ReduceCase& c : kReductions) {
    ReduceFn op = c.op;
    EXPECT_TRUE(gradient_check(
        [op](const auto& xs) {
          return op(transpose(xs[0], {2, 0, 1}), {1}, false);
        },
        {x}))
        << c.name;
    EXPECT_TRUE(gradient_check(
        [op](const auto& xs) {
          return op(slice(xs[0], {Slice{{}, {}, -2}}), {0, 2}, true);
        },
        {x}))
        << c.name;
  }
}

TEST(ReduceGradient, MaxTiesSplitEvenly) {
  Tensor x = Tensor::from_vector<double>({1, 3, 3, 2, 5, 5, 5, 0}, {2, 4});
  GradientTape tape(/*persistent=*/true);
  tape.watch(x);
  Tensor g = tape.gradient(sum(max(x, {1})), x);
  EXPECT_THAT(g.to_vector<double>(), ElementsAre(0, 0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0));
  Tensor gmin = tape.gradient(sum(min(x, {0}, true)), x);
  EXPECT_THAT(gmin.to_vector<double>(), ElementsAre(1, 1, 1, 0, 0, 0, 0, 1));
  Tensor all = Tensor::from_vector<double>({2, 2, 2, 2});
  GradientTape t2;
  t2.watch(all);
  EXPECT_THAT(t2.gradient(max(all), all).to_vector<double>(), ElementsAre(0.25, 0.25, 0.25, 0.25));
}

TEST(ReduceGradient, ProdWithZerosIsProductOfOthers) {
  // Row 0: no zero; row 1: one zero; row 2: two zeros.
  Tensor x = Tensor::from_vector<double>({2, 3, 0.5, -1, 4, 0, 3, 2, 0, 5, 0, 7}, {3, 4});
  std::vector<double> xv = x.to_vector<double>();
  GradientTape tape;
  tape.watch(x);
  std::vector<double> g = tape.gradient(sum(prod(x, {1})), x).to_vector<double>();
  for (int r = 0; r < 3; ++r) {
    for (int j = 0; j < 4; ++j) {
      double others = 1;
      for (int k = 0; k < 4; ++k) {
        if (k != j) others *= xv[r * 4 + k];
      }
      EXPECT_DOUBLE_EQ(g[r * 4 + j], others) << r << "," << j;
    }
  }
  EXPECT_TRUE(gradient_check([](const auto& xs) { return prod(xs[0], {1}); }, {x}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return prod(xs[0], {0}, true); }, {x}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return prod(xs[0]); }, {x}));
}

TEST(ReduceGradient, LogSumExpGradientIsSoftmax) {
  Tensor x = Tensor::from_vector<double>({1000, 1001, 999, 0, 1, 2}, {2, 3});
  GradientTape tape;
  tape.watch(x);
  std::vector<double> g = tape.gradient(sum(logsumexp(x, {1})), x).to_vector<double>();
  std::vector<double> xv = x.to_vector<double>();
  for (int r = 0; r < 2; ++r) {
    double m = std::max({xv[r * 3], xv[r * 3 + 1], xv[r * 3 + 2]}), s = 0;
    for (int j = 0; j < 3; ++j) s += std::exp(xv[r * 3 + j] - m);
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(g[r * 3 + j], std::exp(xv[r * 3 + j] - m) / s, 1e-15);
  }
}

TEST(ReduceGradient, SecondDerivatives) {
  Tensor x = uniform({2, 3}, 9, 0.5, 1.5);
  for (const ReduceCase& c : kReductions) {
    ReduceFn op = c.op;
    // Square first so the second derivative is not trivially zero for the linear reductions.
    EXPECT_TRUE(second_derivative_check(
        [op](const auto& xs) { return op(square(xs[0]), {1}, false); }, {x}))
        << c.name;
  }
}

TEST(ReduceGradient, Float32MatchesFloat64) {
  Tensor x64 = uniform({3, 5}, 10, 0.5, 1.5);
  Tensor x32 = cast(x64, kFloat32);
  for (const ReduceCase& c : kReductions) {
    auto grad = [&](const Tensor& x) {
      GradientTape tape;
      tape.watch(x);
      return tape.gradient(sum(c.op(x, {0}, false)), x);
    };
    std::vector<double> a = grad(x32).to_vector<double>(), b = grad(x64).to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(a[i], b[i], 1e-5 * std::max(1.0, std::fabs(b[i])));
  }
}

TEST(SumTo, UndoesBroadcast) {
  Tensor g = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 2, 3});
  EXPECT_THAT(sum_to(g, {3}).to_vector<double>(), ElementsAre(22, 26, 30));
  EXPECT_THAT(sum_to(g, {2, 1}).to_vector<double>(), ElementsAre(30, 48));
  EXPECT_EQ(sum_to(g, {2, 1, 3}).shape(), Shape({2, 1, 3}));
  EXPECT_THAT(sum_to(g, {2, 1, 3}).to_vector<double>(), ElementsAre(5, 7, 9, 17, 19, 21));
  EXPECT_EQ(sum_to(g, {}).item<double>(), 78);
  EXPECT_EQ(sum_to(g, g.shape()).id(), g.id());
}

// ---- determinism across thread counts ----------------------------------------------------------

Tensor large_float32(const Shape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(num_elements(shape)));
  for (float& e : v) e = dist(gen);
  return Tensor::from_vector(v, shape);
}

TEST(ReduceDeterminism, BitIdenticalAcrossThreadCounts) {
  Tensor a = large_float32({3, 1000003}, 11);
  Tensor b = large_float32({4000037}, 12);
  Tensor nhwc = large_float32({64, 28, 28, 32}, 13);  // per-channel sums, as batch norm takes
  EXPECT_EQ(testing::thread_count_differences([&] {
              std::vector<Tensor> r;
              for (ReduceFn op : {&sum, &mean, &max}) {
                for (const Tensor& t :
                     {op(a, {}, false), op(a, {0}, false), op(a, {1}, false), op(b, {}, false),
                      op(transpose(a), {0}, false), op(nhwc, {0, 1, 2}, false)}) {
                  r.push_back(t);
                }
              }
              return r;
            }),
            "");
  // And the values are right.
  double ref = 0;
  for (double v : b.to_vector<double>()) ref += v;
  EXPECT_NEAR(sum(b).item<float>(), ref, 1e-3);
  std::vector<double> channel(32, 0.0);
  std::vector<double> values = nhwc.to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i) channel[i % 32] += values[i];
  std::vector<double> got = sum(nhwc, {0, 1, 2}).to_vector<double>();
  for (int c = 0; c < 32; ++c) EXPECT_NEAR(got[c], channel[c], 1e-2) << "channel " << c;
}

TEST(Reduce, Float32MeansArePairwiseAccurate) {
  // NumPy's pairwise summation keeps a float32 mean of values near 1000 within an ulp of the
  // exact mean; one accumulator per lane across a 16384-element block drifted past it.
  for (int64_t n : {1000, 16384, 131072, 1 << 20}) {
    std::mt19937 gen(static_cast<uint32_t>(n));
    std::uniform_real_distribution<float> dist(999.0f, 1001.0f);
    std::vector<float> v(static_cast<size_t>(n));
    double exact = 0;
    for (float& f : v) {
      f = dist(gen);
      exact += f;
    }
    exact /= static_cast<double>(n);
    Tensor x = Tensor::from_vector(v);
    float ulp = std::nextafter(static_cast<float>(exact), INFINITY) - static_cast<float>(exact);
    EXPECT_LE(std::fabs(mean(x).item<float>() - exact), ulp) << n << " values";
    // The same values as a row of a matrix: the reduction over its last axis, as
    // LayerNormalization takes it.
    EXPECT_LE(std::fabs(mean(reshape(x, {1, n}), {1}).item<float>() - exact), ulp) << n;
  }
}

TEST(CumprodGradient, SecondDerivativesAreUndefinedNotWrong) {
  // cumprod's backward is one scan that records nothing (docs/autodiff.md): a derivative of its
  // gradient comes back undefined, as batch_norm_training's does, never as a value that leaves it out.
  Tensor x = Tensor::from_vector<double>({1.5, -2, 0.5, 3, 0, 2}, {2, 3});
  GradientTape outer;
  outer.watch(x);
  Tensor dx;
  {
    GradientTape inner;
    inner.watch(x);
    dx = inner.gradient(sum(cumprod(x, 1)), x);
  }
  ASSERT_TRUE(dx.defined());
  // d/dx0 of x0 + x0 x1 + x0 x1 x2 = 1 + x1 + x1 x2 = 1 - 2 - 1 = -2 (first row).
  EXPECT_DOUBLE_EQ(dx.to_vector<double>()[0], -2.0);
  EXPECT_FALSE(outer.gradient(sum(dx), x).defined());
}

}  // namespace
}  // namespace weft
