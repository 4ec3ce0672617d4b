// conv3d, max_pool3d and avg_pool3d: float32 (oneDNN's 3-D primitives) against the float64
// reference loops, depth 1 against the 2-D ops, hand-computed values, numerical gradients, and
// max_pool3d's two-pass composite against the direct 3-D reference on ties and NaNs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/core/errors.h"
#include "weft/ops/cast.h"
#include "weft/ops/conv.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/internal/conv_reference.h"
#include "weft/ops/math.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/testing/gradient_check.h"

namespace weft {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using testing::gradient_check;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using testing::uniform;

struct Conv3DCase {
  Shape x, w;  // NDHWC, DHWIO
  Size3 strides;
  const char* padding;
  Size3 dilations;
};

std::string describe(const Conv3DCase& c) {
  return "x " + shape_str(c.x) + " w " + shape_str(c.w) + " strides " +
         std::to_string(c.strides[0]) + "," + std::to_string(c.strides[1]) + "," +
         std::to_string(c.strides[2]) + " " + c.padding;
}

const Conv3DCase kConv3DCases[] = {
    {{2, 4, 5, 4, 3}, {2, 3, 2, 3, 4}, {1, 1, 1}, "VALID", {1, 1, 1}},
    {{2, 5, 4, 6, 2}, {3, 3, 3, 2, 2}, {2, 1, 2}, "SAME", {1, 1, 1}},
    {{1, 5, 6, 5, 2}, {2, 2, 3, 2, 3}, {1, 1, 1}, "VALID", {2, 1, 2}},
    {{1, 6, 5, 5, 2}, {2, 3, 2, 2, 3}, {2, 2, 1}, "SAME", {1, 2, 1}},
    {{2, 3, 4, 4, 4}, {2, 2, 2, 2, 6}, {1, 1, 1}, "SAME", {1, 1, 1}},  // 2 groups
};

void expect_close_3d(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  std::vector<double> u = a.to_vector<double>(), v = b.to_vector<double>();
  double scale = 1;
  for (double e : v) scale = std::max(scale, std::fabs(e));
  for (size_t i = 0; i < u.size(); ++i) ASSERT_NEAR(u[i], v[i], tol * scale) << what << " " << i;
}

TEST(Conv3D, Float32OnOneDnnMatchesTheFloat64Reference) {
  uint64_t seed = 1;
  for (const Conv3DCase& c : kConv3DCases) {
    Tensor x = uniform(c.x, seed++, -1, 1, kFloat32), w = uniform(c.w, seed++, -1, 1, kFloat32);
    Tensor y32 = conv3d(x, w, c.strides, c.padding, c.dilations);
    Tensor y64 = conv3d(cast(x, kFloat64), cast(w, kFloat64), c.strides, c.padding, c.dilations);
    EXPECT_EQ(y32.dtype(), kFloat32);
    expect_close_3d(y32, y64, 1e-5, describe(c));
    // Both gradients too.
    Tensor g = uniform(y64.shape(), seed++, -1, 1, kFloat32);
    auto grads = [&](const Tensor& xt, const Tensor& wt, const Tensor& gt) {
      GradientTape tape;
      tape.watch(xt);
      tape.watch(wt);
      return tape.gradient(conv3d(xt, wt, c.strides, c.padding, c.dilations), {xt, wt}, gt);
    };
    std::vector<Tensor> g32 = grads(x, w, g);
    std::vector<Tensor> g64 = grads(cast(x, kFloat64), cast(w, kFloat64), cast(g, kFloat64));
    expect_close_3d(g32[0], g64[0], 1e-5, describe(c) + " dx");
    expect_close_3d(g32[1], g64[1], 1e-5, describe(c) + " dw");
  }
}

TEST(Conv3D, OfDepthOneIsConv2D) {
  Tensor x = uniform({2, 6, 5, 3}, 20, -1, 1, kFloat32),
         w = uniform({3, 2, 3, 4}, 21, -1, 1, kFloat32);
  for (DType t : {kFloat32, kFloat64}) {
    Tensor y3 = conv3d(expand_dims(cast(x, t), 1), expand_dims(cast(w, t), 0), {1, 2, 1}, "SAME",
                       {1, 1, 2});
    Tensor y2 = conv2d(cast(x, t), cast(w, t), {2, 1}, "SAME", {1, 2});
    expect_close_3d(squeeze(y3, {1}), y2, t == kFloat64 ? 1e-15 : 1e-6, std::string(dtype_name(t)));
  }
}

TEST(Conv3D, HandComputed) {
  // A 2x2x2 volume of 1..8 and a 2x2x2 filter of ones, VALID: the sum; a filter with a single 1
  // at (1, 0, 1): the value there.
  Tensor x = reshape(Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}), {1, 2, 2, 2, 1});
  EXPECT_THAT(conv3d(x, ones({2, 2, 2, 1, 1})).to_vector<float>(), ElementsAre(36));
  std::vector<float> one_tap(8, 0);
  one_tap[4 + 1] = 1;  // (1, 0, 1)
  Tensor tap = reshape(Tensor::from_vector<float>(one_tap), {2, 2, 2, 1, 1});
  EXPECT_THAT(conv3d(x, tap).to_vector<float>(), ElementsAre(6));
  // SAME with stride 2 over depth 3: TF pads 1 after (out 2 planes).
  EXPECT_EQ(conv3d(zeros({1, 3, 4, 4, 1}), zeros({2, 2, 2, 1, 2}), {2, 2, 2}, "SAME").shape(),
            Shape({1, 2, 2, 2, 2}));
}

TEST(Conv3D, Errors) {
  EXPECT_THAT(
      [] {
        conv3d(zeros({1, 4, 4, 1}), zeros({2, 2, 2, 1, 1}));
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("conv3d: input must have rank 5")));
  EXPECT_THAT(
      [] {
        conv3d(zeros({1, 4, 4, 4, 3}), zeros({2, 2, 2, 2, 1}));
      },
      ThrowsMessage<InvalidArgument>(
          AllOf(HasSubstr("conv3d: input has 3 channels"), HasSubstr("DHWIO"))));
  EXPECT_THAT(
      [] {
        conv3d(zeros({1, 1, 4, 4, 1}), zeros({2, 2, 2, 1, 1}));
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("conv3d: output depth would be empty")));
}

TEST(Conv3DGradient, NumericalFloat64) {
  const Conv3DCase small[] = {
      {{1, 3, 4, 3, 2}, {2, 2, 2, 2, 2}, {1, 1, 1}, "VALID", {1, 1, 1}},
      {{1, 4, 3, 4, 1}, {3, 2, 2, 1, 2}, {2, 1, 2}, "SAME", {1, 1, 1}},
      {{1, 5, 4, 3, 2}, {2, 2, 2, 1, 2}, {1, 1, 1}, "VALID", {2, 1, 1}},  // 2 groups, dilated
  };
  uint64_t seed = 30;
  for (const Conv3DCase& c : small) {
    EXPECT_TRUE(gradient_check(
        [c](const auto& xs) { return conv3d(xs[0], xs[1], c.strides, c.padding, c.dilations); },
        {uniform(c.x, seed++), uniform(c.w, seed++)}))
        << describe(c);
  }
}

struct Pool3DCase {
  Shape x;
  Size3 ksize, strides;
  const char* padding;
};
const Pool3DCase kPool3DCases[] = {
    {{2, 4, 6, 5, 3}, {2, 2, 2}, {2, 2, 2}, "VALID"},
    {{2, 5, 5, 4, 2}, {3, 3, 2}, {2, 2, 1}, "SAME"},
    {{1, 5, 4, 5, 2}, {3, 2, 3}, {2, 1, 2}, "SAME"},
    {{1, 3, 3, 3, 1}, {3, 3, 3}, {1, 1, 1}, "VALID"},
};

// The direct 3-D reference loops (float64) on x's values: the pooled values and the gradient of
// sum(y * dy).
std::pair<std::vector<double>, std::vector<double>> reference_max_pool3d(const Tensor& x,
                                                                         const Tensor& dy,
                                                                         const Pool3DCase& c) {
  auto p = ops::internal::make_pool3d_params("ref", x.dim(0), x.dim(1), x.dim(2), x.dim(3),
                                             x.dim(4), c.ksize, c.strides, c.padding);
  std::vector<double> xv = x.to_vector<double>(), dyv = dy.to_vector<double>();
  std::vector<double> y(dyv.size()), dx(xv.size());
  ops::internal::max_pool_forward<double>(p, xv.data(), y.data());
  ops::internal::max_pool_backward<double>(p, xv.data(), dyv.data(), dx.data());
  return {y, dx};
}

TEST(Pool3D, MaxPoolIsTheDirectReferenceWithItsTieAndNaNRules) {
  uint64_t seed = 40;
  for (const Pool3DCase& c : kPool3DCases) {
    // Values from {0, 1, 2, 3}: most windows hold tied maxima; a NaN in one plane.
    Tensor x = floor(uniform(c.x, seed++, 0, 4, kFloat64));
    std::vector<double> xv = x.to_vector<double>();
    xv[xv.size() / 2] = std::numeric_limits<double>::quiet_NaN();
    x = reshape(Tensor::from_vector(xv), c.x);
    for (DType t : {kFloat64, kFloat32}) {
      Tensor xt = cast(x, t);
      GradientTape tape;
      tape.watch(xt);
      Tensor y = max_pool3d(xt, c.ksize, c.strides, c.padding);
      Tensor dy = cast(uniform(y.shape(), seed++, -1, 1, kFloat64), t);
      Tensor dx = tape.gradient(y, xt, dy);
      auto [y_ref, dx_ref] = reference_max_pool3d(x, cast(dy, kFloat64), c);
      std::vector<double> yv = y.to_vector<double>(), dxv = dx.to_vector<double>();
      ASSERT_EQ(yv.size(), y_ref.size());
      for (size_t i = 0; i < yv.size(); ++i) {
        ASSERT_TRUE(yv[i] == y_ref[i] || (std::isnan(yv[i]) && std::isnan(y_ref[i])))
            << dtype_name(t) << " y " << i;
      }
      for (size_t i = 0; i < dxv.size(); ++i) {
        ASSERT_NEAR(dxv[i], dx_ref[i], t == kFloat64 ? 0 : 1e-6) << dtype_name(t) << " dx " << i;
      }
    }
  }
}

TEST(Pool3D, AvgPoolFloat32OnOneDnnMatchesTheFloat64Reference) {
  uint64_t seed = 60;
  for (const Pool3DCase& c : kPool3DCases) {
    Tensor x = uniform(c.x, seed++, -1, 1, kFloat32);
    Tensor y32 = avg_pool3d(x, c.ksize, c.strides, c.padding);
    Tensor y64 = avg_pool3d(cast(x, kFloat64), c.ksize, c.strides, c.padding);
    EXPECT_EQ(y32.dtype(), kFloat32);
    expect_close_3d(y32, y64, 1e-6, c.padding);
    Tensor g = uniform(y64.shape(), seed++, -1, 1, kFloat32);
    auto grad = [&](const Tensor& xt, const Tensor& gt) {
      GradientTape tape;
      tape.watch(xt);
      return tape.gradient(avg_pool3d(xt, c.ksize, c.strides, c.padding), xt, gt);
    };
    expect_close_3d(grad(x, g), grad(cast(x, kFloat64), cast(g, kFloat64)), 1e-6, c.padding);
  }
}

TEST(Pool3D, HandComputed) {
  Tensor x = reshape(Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}), {1, 2, 2, 2, 1});
  EXPECT_THAT(max_pool3d(x, {2, 2, 2}, {1, 1, 1}).to_vector<float>(), ElementsAre(8));
  EXPECT_THAT(avg_pool3d(x, {2, 2, 2}, {1, 1, 1}).to_vector<float>(), ElementsAre(4.5));
  // SAME, stride 2, window 3 over 2: one window per axis, over the whole volume (no padding
  // counted in the average, none winning the max of negatives).
  EXPECT_THAT(avg_pool3d(x, {3, 3, 3}, {2, 2, 2}, "SAME").to_vector<float>(), ElementsAre(4.5));
  EXPECT_THAT(max_pool3d(neg(x), {3, 3, 3}, {2, 2, 2}, "SAME").to_vector<float>(), ElementsAre(-1));
  EXPECT_THAT(
      [&] {
        max_pool3d(x, {3, 1, 1}, {1, 1, 1});
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("max_pool3d: output depth would be empty")));
  EXPECT_THAT(
      [&] {
        avg_pool3d(squeeze(x, {0}), {1, 1, 1}, {1, 1, 1});
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("avg_pool3d: input must have rank 5")));
}

TEST(Pool3DGradient, NumericalFloat64) {
  uint64_t seed = 80;
  for (const Pool3DCase& c : kPool3DCases) {
    EXPECT_TRUE(gradient_check(
        [c](const auto& xs) { return avg_pool3d(xs[0], c.ksize, c.strides, c.padding); },
        {uniform(c.x, seed++)}))
        << c.padding;
    EXPECT_TRUE(gradient_check(
        [c](const auto& xs) { return max_pool3d(xs[0], c.ksize, c.strides, c.padding); },
        {uniform(c.x, seed++)}))
        << c.padding;
  }
}

}  // namespace
}  // namespace weft
