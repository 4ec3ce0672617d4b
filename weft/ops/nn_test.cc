#include "weft/ops/nn.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/core/errors.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/testing/gradient_check.h"

namespace weft {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using testing::gradient_check;
using ::testing::HasSubstr;
using testing::second_derivative_check;
using ::testing::ThrowsMessage;
using testing::uniform;

// Softmax of each row of a (rows, cols) matrix, in long double.
std::vector<double> naive_softmax(const std::vector<double>& x, int64_t rows, int64_t cols) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    long double m = x[r * cols], s = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::max<long double>(m, x[r * cols + c]);
    for (int64_t c = 0; c < cols; ++c) s += std::exp(static_cast<long double>(x[r * cols + c]) - m);
    for (int64_t c = 0; c < cols; ++c) {
      out[r * cols + c] = static_cast<double>(std::exp(x[r * cols + c] - m) / s);
    }
  }
  return out;
}

TEST(Softmax, MatchesNaiveAndSumsToOne) {
  Tensor x = uniform({4, 7}, 1, -3, 3);
  std::vector<double> ref = naive_softmax(x.to_vector<double>(), 4, 7);
  std::vector<double> y = softmax(x).to_vector<double>();
  std::vector<double> ly = log_softmax(x).to_vector<double>();
  for (size_t i = 0; i < y.size(); ++i) {
    EXPECT_NEAR(y[i], ref[i], 1e-15);
    EXPECT_NEAR(ly[i], std::log(ref[i]), 1e-14);
  }
  std::vector<double> rows = sum(softmax(x), {1}).to_vector<double>();
  for (double r : rows) EXPECT_NEAR(r, 1.0, 1e-15);
}

TEST(Softmax, OtherAxes) {
  Tensor x = uniform({3, 4, 5}, 2, -2, 2);
  // Softmax over axis 1 equals softmax over the last axis of the transposed tensor.
  Tensor a = transpose(softmax(x, 1), {0, 2, 1});
  Tensor b = softmax(transpose(x, {0, 2, 1}), -1);
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  for (size_t i = 0; i < av.size(); ++i) EXPECT_NEAR(av[i], bv[i], 1e-15);
  std::vector<double> s0 = sum(softmax(x, 0), {0}).to_vector<double>();
  for (double v : s0) EXPECT_NEAR(v, 1.0, 1e-15);
  EXPECT_THAT([&] { softmax(x, 3); },
              ThrowsMessage<OutOfRange>(AllOf(HasSubstr("axis 3"), HasSubstr("rank 3"))));
  EXPECT_THAT(
      [&] {
        softmax(Tensor::from_vector<int32_t>({1, 2}));
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("softmax"), HasSubstr("int32"))));
}

TEST(Softmax, StableForLargeLogits) {
  for (DType t : {kFloat32, kFloat64}) {
    Tensor x = cast(Tensor::from_vector<double>({1000, 1000, 1000, 1000, 0, -1000}, {2, 3}), t);
    std::vector<double> y = softmax(x).to_vector<double>();
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(y[i], 1.0 / 3, 1e-7) << dtype_name(t);
    EXPECT_NEAR(y[3], 1.0, 1e-7);
    EXPECT_EQ(y[5], 0.0);
    std::vector<double> ly = log_softmax(x).to_vector<double>();
    EXPECT_NEAR(ly[0], -std::log(3.0), 1e-6);
    EXPECT_NEAR(ly[4], -1000, 1e-3);
    EXPECT_NEAR(ly[5], -2000, 1e-3);
    for (double v : ly) EXPECT_TRUE(std::isfinite(v));
  }
}

// float32 and bfloat16 over the last axis run on oneDNN's softmax: the same values and gradients
// as the float64 composition, and second derivatives through weft's ops.
TEST(Softmax, OneDnnKernelMatchesFloat64) {
  Tensor x64 = uniform({6, 3, 33}, 7, -4, 4), dy64 = uniform({6, 3, 33}, 8, -1, 1);
  for (DType t : {kFloat32, kBFloat16}) {
    const double tol = t == kFloat32 ? 1e-6 : 1e-2;
    Tensor x = cast(x64, t), dy = cast(dy64, t);
    GradientTape tape;
    tape.watch(x);
    Tensor y = softmax(x);
    EXPECT_EQ(y.dtype(), t);
    Tensor dx = tape.gradient(y, x, dy);
    GradientTape ref_tape;
    Tensor xr = cast(x, kFloat64);
    ref_tape.watch(xr);
    Tensor yr = exp(log_softmax(xr));
    Tensor dxr = ref_tape.gradient(yr, xr, cast(dy, kFloat64));
    std::vector<double> a = y.to_vector<double>(), b = yr.to_vector<double>();
    std::vector<double> ga = dx.to_vector<double>(), gb = dxr.to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_NEAR(a[i], b[i], tol) << dtype_name(t) << " " << i;
      EXPECT_NEAR(ga[i], gb[i], tol) << dtype_name(t) << " " << i;
    }
  }
  Tensor x = cast(uniform({2, 5}, 9, -2, 2), kFloat32);
  GradientTape outer;
  outer.watch(x);
  Tensor dx;
  {
    GradientTape inner;
    inner.watch(x);
    dx = inner.gradient(sum(mul(softmax(x), softmax(x))), x);
  }
  Tensor second = outer.gradient(sum(dx), x);
  Tensor x64s = cast(x, kFloat64);
  GradientTape outer64;
  outer64.watch(x64s);
  Tensor dx64;
  {
    GradientTape inner64;
    inner64.watch(x64s);
    Tensor p = exp(log_softmax(x64s));
    dx64 = inner64.gradient(sum(mul(p, p)), x64s);
  }
  std::vector<double> s32 = second.to_vector<double>(),
                      s64 = outer64.gradient(sum(dx64), x64s).to_vector<double>();
  for (size_t i = 0; i < s32.size(); ++i) EXPECT_NEAR(s32[i], s64[i], 1e-5) << i;
}

TEST(SoftmaxGradient, Numerical) {
  Tensor x = uniform({3, 5}, 3, -2, 2);
  EXPECT_TRUE(gradient_check([](const auto& xs) { return softmax(xs[0]); }, {x}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return log_softmax(xs[0]); }, {x}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return softmax(xs[0], 0); }, {x}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return log_softmax(transpose(xs[0]), 0); }, {x}));
  EXPECT_TRUE(second_derivative_check([](const auto& xs) { return softmax(xs[0]); }, {x}));
  // Large logits: the gradient of the stable form stays finite and right.
  Tensor big = uniform({2, 4}, 4, 995, 1005);
  EXPECT_TRUE(gradient_check([](const auto& xs) { return log_softmax(xs[0]); }, {big}));
}

// ---- sparse softmax cross-entropy --------------------------------------------------------------

TEST(SparseSoftmaxCrossEntropy, MatchesNaive) {
  Tensor logits = uniform({5, 4}, 5, -3, 3);
  Tensor labels = Tensor::from_vector<int32_t>({0, 3, 1, 1, 2});
  Tensor loss = sparse_softmax_cross_entropy_with_logits(labels, logits);
  EXPECT_EQ(loss.shape(), Shape({5}));
  EXPECT_EQ(loss.dtype(), kFloat64);
  std::vector<double> p = naive_softmax(logits.to_vector<double>(), 5, 4);
  std::vector<int32_t> lv = labels.to_vector<int32_t>();
  std::vector<double> l = loss.to_vector<double>();
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(l[i], -std::log(p[i * 4 + lv[i]]), 1e-14);
  // int64 labels, float32 logits.
  Tensor l32 =
      sparse_softmax_cross_entropy_with_logits(cast(labels, kInt64), cast(logits, kFloat32));
  EXPECT_EQ(l32.dtype(), kFloat32);
  std::vector<double> lv32 = l32.to_vector<double>();
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(lv32[i], l[i], 1e-5);
}

TEST(SparseSoftmaxCrossEntropy, StableForLargeLogits) {
  Tensor logits = Tensor::from_vector<float>({1000, 0, -1000, 0, 1000, 1000}, {2, 3});
  Tensor labels = Tensor::from_vector<int32_t>({1, 2});
  std::vector<float> l =
      sparse_softmax_cross_entropy_with_logits(labels, logits).to_vector<float>();
  EXPECT_NEAR(l[0], 1000, 1e-3);
  EXPECT_NEAR(l[1], std::log(2.0), 1e-6);
}

TEST(SparseSoftmaxCrossEntropy, RankThreeLogits) {
  Tensor logits = uniform({2, 3, 4}, 6);
  Tensor labels = Tensor::from_vector<int64_t>({0, 1, 2, 3, 3, 0}, {2, 3});
  Tensor loss = sparse_softmax_cross_entropy_with_logits(labels, logits);
  EXPECT_EQ(loss.shape(), Shape({2, 3}));
  std::vector<double> p = naive_softmax(logits.to_vector<double>(), 6, 4);
  std::vector<int64_t> lv = labels.to_vector<int64_t>();
  std::vector<double> l = loss.to_vector<double>();
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(l[i], -std::log(p[i * 4 + lv[i]]), 1e-14);
}

TEST(SparseSoftmaxCrossEntropy, GradientIsSoftmaxMinusOneHot) {
  Tensor logits = uniform({4, 5}, 7, -2, 2);
  Tensor labels = Tensor::from_vector<int32_t>({4, 0, 2, 2});
  GradientTape tape;
  tape.watch(logits);
  Tensor g = tape.gradient(sum(sparse_softmax_cross_entropy_with_logits(labels, logits)), logits);
  std::vector<double> p = naive_softmax(logits.to_vector<double>(), 4, 5);
  std::vector<double> gv = g.to_vector<double>();
  std::vector<int32_t> lv = labels.to_vector<int32_t>();
  for (int i = 0; i < 4; ++i) {
    for (int c = 0; c < 5; ++c) {
      EXPECT_NEAR(gv[i * 5 + c], p[i * 5 + c] - (c == lv[i] ? 1.0 : 0.0), 1e-15);
    }
  }
  EXPECT_TRUE(gradient_check(
      [labels](const auto& xs) { return sparse_softmax_cross_entropy_with_logits(labels, xs[0]); },
      {logits}));
  EXPECT_TRUE(second_derivative_check(
      [labels](const auto& xs) { return sparse_softmax_cross_entropy_with_logits(labels, xs[0]); },
      {logits}));
}

TEST(SparseSoftmaxCrossEntropy, Errors) {
  Tensor logits = zeros({4, 3});
  EXPECT_THAT(
      [&] {
        sparse_softmax_cross_entropy_with_logits(Tensor::from_vector<int32_t>({0, 1, 5, -1}),
                                                 logits);
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("sparse_softmax_cross_entropy_with_logits"),
                                           HasSubstr("label 5"), HasSubstr("position 2"),
                                           HasSubstr("[0, 3)"))));
  EXPECT_THAT(
      [&] {
        sparse_softmax_cross_entropy_with_logits(Tensor::from_vector<int64_t>({0, -1, 0, 0}),
                                                 logits);
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("label -1"), HasSubstr("position 1"))));
  EXPECT_THAT(
      [&] {
        sparse_softmax_cross_entropy_with_logits(Tensor::from_vector<int32_t>({0, 1}), logits);
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("(2,)"), HasSubstr("(4, 3)"))));
  EXPECT_THAT([&] { sparse_softmax_cross_entropy_with_logits(zeros({4}), logits); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("labels"), HasSubstr("float32"))));
  EXPECT_THAT(
      [&] {
        sparse_softmax_cross_entropy_with_logits(Tensor::from_vector<int32_t>({0}),
                                                 zeros({1, 3}, kInt32));
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("floating point")));
}

}  // namespace
}  // namespace weft
