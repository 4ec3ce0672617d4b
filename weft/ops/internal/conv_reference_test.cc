#include "weft/ops/internal/conv_reference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "weft/core/errors.h"

namespace weft::ops::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::vector<double> random_values(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& e : v) e = dist(gen);
  return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

int64_t input_size(const ConvParams& p) { return p.n * p.h * p.w * p.c; }
int64_t filter_size(const ConvParams& p) { return p.kh * p.kw * p.c * p.oc; }
int64_t output_size(const ConvParams& p) { return p.n * p.oh * p.ow * p.oc; }

ConvParams conv_params(int64_t n, int64_t h, int64_t w, int64_t c, int64_t kh, int64_t kw,
                       int64_t oc, int64_t stride, int64_t dilation, const char* padding) {
  return make_conv2d_params("conv2d", n, h, w, c, kh, kw, oc, stride, stride, dilation, dilation,
                            padding);
}

std::vector<double> conv(const ConvParams& p, const std::vector<double>& x,
                         const std::vector<double>& w) {
  std::vector<double> y(output_size(p));
  conv_forward(p, x.data(), w.data(), y.data());
  return y;
}

TEST(Conv2DReference, ValidHandComputed) {
  const ConvParams p = conv_params(1, 3, 3, 1, 2, 2, 1, 1, 1, "VALID");
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<double> w = {1, 2, 3, 4};
  // y[0][0] = 1·1 + 2·2 + 4·3 + 5·4
  EXPECT_THAT(conv(p, x, w), ElementsAre(37, 47, 67, 77));
}

TEST(Conv2DReference, SameHandComputedPadsAfter) {
  // 2x2 kernel, stride 1: pad_total 1 goes entirely after (bottom/right), as in TF.
  const ConvParams p = conv_params(1, 3, 3, 1, 2, 2, 1, 1, 1, "SAME");
  EXPECT_EQ(p.pad_top, 0);
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<double> w = {1, 2, 3, 4};
  EXPECT_THAT(conv(p, x, w), ElementsAre(37, 47, 21, 67, 77, 33, 23, 26, 9));
}

TEST(Conv2DReference, SameCentredKernel) {
  const ConvParams p = conv_params(1, 3, 3, 1, 3, 3, 1, 1, 1, "SAME");
  EXPECT_EQ(p.pad_top, 1);
  EXPECT_EQ(p.pad_left, 1);
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<double> w = {1, 0, 0, 0, 0, 0, 0, 0, 2};  // taps at (-1,-1) and (+1,+1)
  EXPECT_THAT(conv(p, x, w), ElementsAre(10, 12, 0, 16, 19, 2, 0, 4, 5));
}

TEST(Conv2DReference, StridedSame) {
  const ConvParams p = conv_params(1, 3, 3, 1, 2, 2, 1, 2, 1, "SAME");
  ASSERT_EQ(p.oh, 2);
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<double> w = {1, 2, 3, 4};
  EXPECT_THAT(conv(p, x, w), ElementsAre(37, 21, 23, 9));
}

TEST(Conv2DReference, DilatedValid) {
  const ConvParams p = conv_params(1, 4, 4, 1, 2, 2, 1, 1, 2, "VALID");
  ASSERT_EQ(p.oh, 2);
  std::vector<double> x(16);
  for (int i = 0; i < 16; ++i) x[i] = i + 1;
  // y[0][0] = x[0][0] + x[0][2] + x[2][0] + x[2][2] = 1 + 3 + 9 + 11
  EXPECT_THAT(conv(p, x, {1, 1, 1, 1}), ElementsAre(24, 28, 40, 44));
}

TEST(Conv2DReference, NonSquareKeepsHeightAndWidthApart) {
  const ConvParams p = conv_params(1, 2, 3, 1, 1, 2, 1, 1, 1, "VALID");
  ASSERT_EQ(p.oh, 2);
  ASSERT_EQ(p.ow, 2);
  EXPECT_THAT(conv(p, {1, 2, 3, 4, 5, 6}, {10, 1}), ElementsAre(12, 23, 45, 56));
}

TEST(Conv2DReference, FilterIsHWIO) {
  const ConvParams p = conv_params(1, 1, 1, 2, 1, 1, 3, 1, 1, "VALID");
  // w[in][out]: in 0 → {1, 2, 3}, in 1 → {4, 5, 6}; y[o] = 1·w[0][o] + 2·w[1][o]
  EXPECT_THAT(conv(p, {1, 2}, {1, 2, 3, 4, 5, 6}), ElementsAre(9, 12, 15));
}

TEST(Conv2DReference, BatchAndChannelsIndependent) {
  // Batch 2, 2 in channels, 2 out channels, 1x1 kernel: each pixel is a 2x2 matmul.
  const ConvParams p = conv_params(2, 1, 2, 2, 1, 1, 2, 1, 1, "VALID");
  const std::vector<double> x = {1, 0, 0, 1, 2, 3, -1, 1};
  const std::vector<double> w = {1, 2, 3, 4};
  EXPECT_THAT(conv(p, x, w), ElementsAre(1, 2, 3, 4, 11, 16, 2, 2));
}

struct SizeCase {
  int64_t in, k, stride, dilation;
  int64_t same_out, same_pad_before, valid_out;  // valid_out 0: VALID is an error
};

// Expected values worked out by hand from TF's documented formulas.
const SizeCase kSizeCases[] = {
    {7, 3, 1, 1, 7, 1, 5},       {7, 3, 2, 1, 4, 1, 3},  {8, 3, 2, 1, 4, 0, 3},
    {5, 3, 1, 2, 5, 2, 1},       {10, 4, 3, 1, 4, 1, 3}, {1, 5, 1, 1, 1, 2, 0},
    {5, 1, 3, 1, 2, 0, 2},       {6, 2, 2, 1, 3, 0, 3},  {9, 3, 2, 3, 5, 3, 2},
    {224, 7, 2, 1, 112, 2, 109}, {4, 2, 1, 1, 4, 0, 3},  {3, 3, 3, 2, 1, 1, 0},
};

TEST(Conv2DReference, OutputSizesMatchTensorFlow) {
  for (const SizeCase& rows : kSizeCases) {
    // Width takes a different case, so a height/width mix-up shows.
    const SizeCase& cols = kSizeCases[(&rows - kSizeCases + 1) % std::size(kSizeCases)];
    SCOPED_TRACE("rows in=" + std::to_string(rows.in) + " k=" + std::to_string(rows.k) +
                 " cols in=" + std::to_string(cols.in) + " k=" + std::to_string(cols.k));
    const ConvParams same =
        make_conv2d_params("conv2d", 1, rows.in, cols.in, 1, rows.k, cols.k, 1, rows.stride,
                           cols.stride, rows.dilation, cols.dilation, "SAME");
    EXPECT_EQ(same.oh, rows.same_out);
    EXPECT_EQ(same.pad_top, rows.same_pad_before);
    EXPECT_EQ(same.ow, cols.same_out);
    EXPECT_EQ(same.pad_left, cols.same_pad_before);
    if (rows.valid_out == 0 || cols.valid_out == 0) {
      EXPECT_THROW(
          make_conv2d_params("conv2d", 1, rows.in, cols.in, 1, rows.k, cols.k, 1, rows.stride,
                             cols.stride, rows.dilation, cols.dilation, "VALID"),
          InvalidArgument);
      continue;
    }
    const ConvParams valid =
        make_conv2d_params("conv2d", 1, rows.in, cols.in, 1, rows.k, cols.k, 1, rows.stride,
                           cols.stride, rows.dilation, cols.dilation, "VALID");
    EXPECT_EQ(valid.oh, rows.valid_out);
    EXPECT_EQ(valid.ow, cols.valid_out);
    EXPECT_EQ(valid.pad_top, 0);
    EXPECT_EQ(valid.pad_left, 0);
    if (rows.dilation == 1 && cols.dilation == 1) {
      const PoolParams pool = make_pool2d_params("max_pool2d", 1, rows.in, cols.in, 1, rows.k,
                                                 cols.k, rows.stride, cols.stride, "SAME");
      EXPECT_EQ(pool.oh, rows.same_out);
      EXPECT_EQ(pool.pad_top, rows.same_pad_before);
      EXPECT_EQ(pool.ow, cols.same_out);
      EXPECT_EQ(pool.pad_left, cols.same_pad_before);
    }
  }
}

TEST(Conv2DReference, KernelLargerThanValidInputNamesOpAndSizes) {
  try {
    make_conv2d_params("conv2d", 1, 3, 3, 1, 4, 2, 1, 1, 1, 1, 1, "VALID");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("conv2d"));
    EXPECT_THAT(e.message(), HasSubstr("input height 3"));
    EXPECT_THAT(e.message(), HasSubstr("kernel height 4"));
    EXPECT_THAT(e.message(), HasSubstr("dilation 1"));
  }
  try {
    make_pool2d_params("max_pool2d", 1, 6, 3, 1, 2, 5, 1, 1, "VALID");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("max_pool2d"));
    EXPECT_THAT(e.message(), HasSubstr("input width 3"));
    EXPECT_THAT(e.message(), HasSubstr("kernel width 5"));
  }
}

TEST(Conv2DReference, DilationCanMakeValidEmpty) {
  try {
    make_conv2d_params("conv2d", 1, 5, 5, 1, 3, 3, 1, 1, 1, 3, 1, "VALID");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("dilation 3"));
    EXPECT_THAT(e.message(), HasSubstr("dilated kernel height 7"));
  }
}

TEST(Conv2DReference, RejectsBadArguments) {
  EXPECT_THROW(make_conv2d_params("conv2d", 1, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, "same"),
               InvalidArgument);
  EXPECT_THROW(make_conv2d_params("conv2d", 1, 3, 3, 1, 2, 2, 1, 0, 1, 1, 1, "SAME"),
               InvalidArgument);
  EXPECT_THROW(make_conv2d_params("conv2d", 1, 3, 3, 1, 2, 2, 1, 1, 1, 1, 0, "SAME"),
               InvalidArgument);
  EXPECT_THROW(make_conv2d_params("conv2d", -1, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, "SAME"),
               InvalidArgument);
  EXPECT_THROW(make_conv2d_params("conv2d", 1, 0, 3, 1, 2, 2, 1, 1, 1, 1, 1, "SAME"),
               InvalidArgument);
  EXPECT_THROW(make_pool2d_params("avg_pool2d", 1, 3, 3, 1, 0, 2, 1, 1, "SAME"), InvalidArgument);
}

// Shapes that exercise strides, dilations, both paddings, odd sizes and several channels.
std::vector<ConvParams> adjoint_cases() {
  return {
      conv_params(2, 5, 4, 3, 3, 2, 4, 1, 1, "SAME"),
      conv_params(2, 7, 6, 2, 3, 3, 3, 2, 1, "SAME"),
      conv_params(1, 8, 7, 3, 2, 3, 2, 3, 1, "VALID"),
      conv_params(2, 9, 8, 2, 3, 2, 3, 1, 2, "SAME"),
      conv_params(1, 9, 9, 1, 3, 3, 2, 2, 2, "VALID"),
      make_conv2d_params("conv2d", 2, 6, 10, 2, 2, 4, 3, 2, 1, 1, 3, "SAME"),
  };
}

TEST(Conv2DReference, BackwardIsTheAdjointOfForward) {
  uint32_t seed = 1;
  for (const ConvParams& p : adjoint_cases()) {
    const std::vector<double> x = random_values(input_size(p), seed++);
    const std::vector<double> w = random_values(filter_size(p), seed++);
    const std::vector<double> dy = random_values(output_size(p), seed++);
    // NaN in the outputs checks they are fully overwritten.
    std::vector<double> dx(input_size(p), std::numeric_limits<double>::quiet_NaN());
    std::vector<double> dw(filter_size(p), std::numeric_limits<double>::quiet_NaN());
    conv_backward_input(p, dy.data(), w.data(), dx.data());
    conv_backward_filter(p, x.data(), dy.data(), dw.data());
    const double forward = dot(conv(p, x, w), dy);
    EXPECT_NEAR(dot(x, dx), forward, 1e-10 * std::max(1.0, std::abs(forward)));
    EXPECT_NEAR(dot(w, dw), forward, 1e-10 * std::max(1.0, std::abs(forward)));
  }
}

TEST(Conv2DReference, BackwardMatchesCentralDifferences) {
  const double eps = 1e-5;
  uint32_t seed = 100;
  for (const ConvParams& p : adjoint_cases()) {
    std::vector<double> x = random_values(input_size(p), seed++);
    std::vector<double> w = random_values(filter_size(p), seed++);
    const std::vector<double> dy = random_values(output_size(p), seed++);
    std::vector<double> dx(input_size(p));
    std::vector<double> dw(filter_size(p));
    conv_backward_input(p, dy.data(), w.data(), dx.data());
    conv_backward_filter(p, x.data(), dy.data(), dw.data());
    // d<conv(x, w), dy>/dv for every element v of x and w.
    auto numeric = [&](double& v) {
      const double saved = v;
      v = saved + eps;
      const double plus = dot(conv(p, x, w), dy);
      v = saved - eps;
      const double minus = dot(conv(p, x, w), dy);
      v = saved;
      return (plus - minus) / (2 * eps);
    };
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(numeric(x[i]), dx[i], 1e-8) << "x " << i;
    for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(numeric(w[i]), dw[i], 1e-8) << "w " << i;
  }
}

TEST(Conv2DReference, FloatMatchesDouble) {
  const ConvParams p = conv_params(2, 7, 6, 3, 3, 3, 4, 2, 1, "SAME");
  const std::vector<double> x = random_values(input_size(p), 7);
  const std::vector<double> w = random_values(filter_size(p), 8);
  const std::vector<double> y = conv(p, x, w);
  const std::vector<float> xf(x.begin(), x.end());
  const std::vector<float> wf(w.begin(), w.end());
  std::vector<float> yf(y.size());
  conv_forward(p, xf.data(), wf.data(), yf.data());
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(yf[i], y[i], 1e-5);
}

std::vector<double> max_pool(const PoolParams& p, const std::vector<double>& x) {
  std::vector<double> y(p.n * p.oh * p.ow * p.c);
  max_pool_forward(p, x.data(), y.data());
  return y;
}

std::vector<double> avg_pool(const PoolParams& p, const std::vector<double>& x) {
  std::vector<double> y(p.n * p.oh * p.ow * p.c);
  avg_pool_forward(p, x.data(), y.data());
  return y;
}

TEST(Pool2DReference, MaxValidHandComputed) {
  const PoolParams p = make_pool2d_params("max_pool2d", 1, 3, 3, 1, 2, 2, 1, 1, "VALID");
  EXPECT_THAT(max_pool(p, {1, 5, 2, 3, 4, 9, 8, 0, 7}), ElementsAre(5, 9, 8, 9));
}

TEST(Pool2DReference, MaxPaddingNeverWins) {
  // SAME with a 3x3 window pads by 1 all round; all inputs are negative.
  const PoolParams p = make_pool2d_params("max_pool2d", 1, 2, 2, 1, 3, 3, 1, 1, "SAME");
  ASSERT_EQ(p.pad_top, 1);
  EXPECT_THAT(max_pool(p, {-4, -3, -2, -1}), ElementsAre(-1, -1, -1, -1));
}

TEST(Pool2DReference, MaxPropagatesNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const PoolParams p = make_pool2d_params("max_pool2d", 1, 1, 4, 1, 1, 2, 1, 2, "VALID");
  const std::vector<double> y = max_pool(p, {1, nan, nan, 2});
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_TRUE(std::isnan(y[1]));
}

TEST(Pool2DReference, MaxBackwardGoesToFirstMaximum) {
  // All equal: every window's gradient goes to its top-left element.
  const PoolParams p = make_pool2d_params("max_pool2d", 1, 3, 3, 1, 2, 2, 1, 1, "VALID");
  const std::vector<double> x(9, 1.0);
  const std::vector<double> dy = {1, 2, 3, 4};
  std::vector<double> dx(9, std::numeric_limits<double>::quiet_NaN());
  max_pool_backward(p, x.data(), dy.data(), dx.data());
  EXPECT_THAT(dx, ElementsAre(1, 2, 0, 3, 4, 0, 0, 0, 0));
}

TEST(Pool2DReference, MaxBackwardSkipsPadding) {
  const PoolParams p = make_pool2d_params("max_pool2d", 1, 2, 2, 1, 3, 3, 1, 1, "SAME");
  const std::vector<double> x = {-4, -3, -2, -1};
  const std::vector<double> dy = {1, 10, 100, 1000};
  std::vector<double> dx(4);
  max_pool_backward(p, x.data(), dy.data(), dx.data());
  EXPECT_THAT(dx, ElementsAre(0, 0, 0, 1111));
}

TEST(Pool2DReference, AvgCountsOnlyValidElements) {
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  // 2x2, stride 2, SAME on 3x3: pad 1 after; edge windows hold 2 real elements, the corner 1.
  const PoolParams strided = make_pool2d_params("avg_pool2d", 1, 3, 3, 1, 2, 2, 2, 2, "SAME");
  EXPECT_THAT(avg_pool(strided, x), ElementsAre(3, 4.5, 7.5, 9));
  const PoolParams same = make_pool2d_params("avg_pool2d", 1, 3, 3, 1, 3, 3, 1, 1, "SAME");
  EXPECT_THAT(avg_pool(same, x), ElementsAre(3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7));
}

TEST(Pool2DReference, AvgBackwardHandComputed) {
  const PoolParams p = make_pool2d_params("avg_pool2d", 1, 3, 3, 1, 2, 2, 2, 2, "SAME");
  const std::vector<double> dy = {4, 2, 6, 5};
  std::vector<double> dx(9, std::numeric_limits<double>::quiet_NaN());
  avg_pool_backward(p, dy.data(), dx.data());
  EXPECT_THAT(dx, ElementsAre(1, 1, 1, 1, 1, 1, 3, 3, 5));
}

TEST(Pool2DReference, ChannelsAndBatchIndependent) {
  const PoolParams p = make_pool2d_params("max_pool2d", 2, 1, 2, 2, 1, 2, 1, 1, "VALID");
  EXPECT_THAT(max_pool(p, {1, 8, 3, 2, -1, -5, -2, -6}), ElementsAre(3, 8, -1, -5));
}

std::vector<PoolParams> pool_cases(const char* op) {
  return {
      make_pool2d_params(op, 2, 5, 6, 3, 2, 2, 2, 2, "SAME"),
      make_pool2d_params(op, 1, 7, 5, 2, 3, 3, 2, 2, "SAME"),
      make_pool2d_params(op, 2, 6, 6, 2, 3, 2, 1, 2, "VALID"),
      make_pool2d_params(op, 1, 4, 5, 1, 3, 3, 1, 1, "SAME"),
      make_pool2d_params(op, 1, 7, 7, 2, 2, 3, 3, 2, "VALID"),
  };
}

TEST(Pool2DReference, BackwardMatchesCentralDifferences) {
  const double eps = 1e-6;
  uint32_t seed = 200;
  for (bool is_max : {true, false}) {
    for (const PoolParams& p : pool_cases(is_max ? "max_pool2d" : "avg_pool2d")) {
      // Distinct random values keep every max away from a tie, where the gradient has a kink.
      std::vector<double> x = random_values(p.n * p.h * p.w * p.c, seed++);
      const std::vector<double> dy = random_values(p.n * p.oh * p.ow * p.c, seed++);
      auto pool = [&] { return is_max ? max_pool(p, x) : avg_pool(p, x); };
      std::vector<double> dx(x.size());
      if (is_max) {
        max_pool_backward(p, x.data(), dy.data(), dx.data());
      } else {
        avg_pool_backward(p, dy.data(), dx.data());
        EXPECT_NEAR(dot(x, dx), dot(pool(), dy), 1e-10);  // linear: backward is the adjoint
      }
      for (size_t i = 0; i < x.size(); ++i) {
        const double saved = x[i];
        x[i] = saved + eps;
        const double plus = dot(pool(), dy);
        x[i] = saved - eps;
        const double minus = dot(pool(), dy);
        x[i] = saved;
        EXPECT_NEAR((plus - minus) / (2 * eps), dx[i], 1e-8)
            << (is_max ? "max" : "avg") << " " << i;
      }
    }
  }
}

TEST(Pool2DReference, FloatMatchesDouble) {
  const PoolParams p = make_pool2d_params("avg_pool2d", 2, 5, 6, 3, 3, 3, 2, 2, "SAME");
  const std::vector<double> x = random_values(p.n * p.h * p.w * p.c, 9);
  const std::vector<float> xf(x.begin(), x.end());
  std::vector<float> yf(p.n * p.oh * p.ow * p.c);
  avg_pool_forward(p, xf.data(), yf.data());
  const std::vector<double> y = avg_pool(p, x);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(yf[i], y[i], 1e-6);
  max_pool_forward(p, xf.data(), yf.data());
  const std::vector<double> ym = max_pool(p, x);
  for (size_t i = 0; i < ym.size(); ++i) EXPECT_EQ(yf[i], static_cast<float>(ym[i]));
}

}  // namespace
}  // namespace weft::ops::internal
