#include "weft/ops/conv.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
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

struct ConvCase {
  Shape x, w;  // NHWC, HWIO
  Size2 strides;
  const char* padding;
  Size2 dilations;
};

std::string describe(const ConvCase& c) {
  return "x " + shape_str(c.x) + " w " + shape_str(c.w) + " strides " +
         std::to_string(c.strides[0]) + "," + std::to_string(c.strides[1]) + " " + c.padding +
         " dilations " + std::to_string(c.dilations[0]) + "," + std::to_string(c.dilations[1]);
}

const ConvCase kConvCases[] = {
    {{2, 7, 5, 3}, {3, 3, 3, 4}, {1, 1}, "SAME", {1, 1}},
    {{2, 7, 5, 3}, {3, 3, 3, 4}, {1, 1}, "VALID", {1, 1}},
    {{1, 8, 8, 2}, {2, 2, 2, 3}, {1, 1}, "SAME", {1, 1}},  // even kernel: padding goes after
    {{2, 9, 7, 3}, {3, 2, 3, 5}, {2, 2}, "SAME", {1, 1}},
    {{2, 9, 7, 3}, {3, 2, 3, 5}, {2, 3}, "VALID", {1, 1}},
    {{1, 11, 10, 2}, {3, 3, 2, 2}, {1, 1}, "SAME", {2, 2}},
    {{1, 11, 10, 2}, {3, 2, 2, 2}, {1, 1}, "VALID", {2, 3}},
    {{1, 12, 11, 2}, {3, 3, 2, 3}, {2, 2}, "SAME", {2, 1}},
    {{3, 5, 6, 1}, {5, 6, 1, 2}, {1, 1}, "VALID", {1, 1}},   // kernel covers the whole input
    {{1, 4, 4, 16}, {1, 1, 16, 8}, {1, 1}, "SAME", {1, 1}},  // pointwise
};

// Every element of `a` against `b` with a tolerance relative to `scale` (>= 1).
void expect_close(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  std::vector<double> u = a.to_vector<double>(), v = b.to_vector<double>();
  double scale = 1;
  for (double e : v) scale = std::max(scale, std::fabs(e));
  for (size_t i = 0; i < u.size(); ++i) {
    ASSERT_NEAR(u[i], v[i], tol * scale) << what << " element " << i;
  }
}

// float32 inputs, and the same values in float64.
std::pair<Tensor, Tensor> f32_and_f64(const Shape& shape, uint64_t seed) {
  Tensor f = uniform(shape, seed, -1, 1, kFloat32);
  return {f, cast(f, kFloat64)};
}

TEST(Conv2D, Float32MatchesFloat64Reference) {
  uint64_t seed = 1;
  for (const ConvCase& c : kConvCases) {
    auto [x32, x64] = f32_and_f64(c.x, seed++);
    auto [w32, w64] = f32_and_f64(c.w, seed++);
    Tensor y32 = conv2d(x32, w32, c.strides, c.padding, c.dilations);
    Tensor y64 = conv2d(x64, w64, c.strides, c.padding, c.dilations);
    EXPECT_EQ(y32.dtype(), kFloat32);
    EXPECT_EQ(y64.dtype(), kFloat64);
    expect_close(y32, y64, 1e-5, describe(c));
  }
}

TEST(Conv2D, OutputShapesFollowTensorFlow) {
  Tensor x = zeros({2, 7, 5, 3});
  EXPECT_EQ(conv2d(x, zeros({3, 3, 3, 4}), {1, 1}, "SAME").shape(), Shape({2, 7, 5, 4}));
  EXPECT_EQ(conv2d(x, zeros({3, 3, 3, 4}), {1, 1}, "VALID").shape(), Shape({2, 5, 3, 4}));
  EXPECT_EQ(conv2d(x, zeros({3, 3, 3, 4}), {2, 2}, "SAME").shape(), Shape({2, 4, 3, 4}));
  EXPECT_EQ(conv2d(x, zeros({3, 3, 3, 4}), {2, 2}, "VALID").shape(), Shape({2, 3, 2, 4}));
  EXPECT_EQ(conv2d(x, zeros({3, 2, 3, 1}), {1, 1}, "VALID", {2, 2}).shape(), Shape({2, 3, 3, 1}));
}

TEST(Conv2D, HandComputed) {
  // A 3x3 single-channel image and a 2x2 filter, VALID.
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  Tensor w = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2, 1, 1});
  EXPECT_THAT(conv2d(x, w).to_vector<float>(), ElementsAre(37, 47, 67, 77));
  EXPECT_THAT(conv2d(cast(x, kFloat64), cast(w, kFloat64)).to_vector<double>(),
              ElementsAre(37, 47, 67, 77));
}

TEST(Conv2D, NonContiguousInputs) {
  Tensor base = uniform({2, 3, 6, 5}, 30, -1, 1, kFloat32);  // NCHW-like, viewed as NHWC
  Tensor x = transpose(base, {0, 2, 3, 1});                  // (2, 6, 5, 3)
  Tensor w = transpose(uniform({4, 3, 3, 3}, 31, -1, 1, kFloat32), {1, 2, 3, 0});
  ASSERT_FALSE(x.is_contiguous());
  expect_close(conv2d(x, w, {1, 1}, "SAME"),
               conv2d(cast(x, kFloat64), cast(w, kFloat64), {1, 1}, "SAME"), 1e-5, "views");
}

TEST(Conv2D, Errors) {
  Tensor x = zeros({1, 5, 5, 3});
  EXPECT_THAT(
      [&] {
        conv2d(x, zeros({3, 3, 2, 4}));
      },
      ThrowsMessage<InvalidArgument>(
          AllOf(HasSubstr("conv2d"), HasSubstr("(1, 5, 5, 3)"), HasSubstr("(3, 3, 2, 4)"))));
  EXPECT_THAT(
      [&] {
        conv2d(zeros({5, 5, 3}), zeros({3, 3, 3, 4}));
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("rank 4"), HasSubstr("(5, 5, 3)"))));
  EXPECT_THAT(
      [&] {
        conv2d(x, zeros({3, 3, 3, 4}), {1, 1}, "FULL");
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("FULL")));
  EXPECT_THAT(
      [&] {
        conv2d(x, zeros({7, 3, 3, 4}), {1, 1}, "VALID");
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("empty")));
  EXPECT_THAT(
      [&] {
        conv2d(cast(x, kInt32), zeros({3, 3, 3, 4}));
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("floating point")));
}

TEST(Conv2DGradient, NumericalFloat64) {
  uint64_t seed = 40;
  for (const ConvCase& c : kConvCases) {
    EXPECT_TRUE(gradient_check(
        [c](const auto& xs) { return conv2d(xs[0], xs[1], c.strides, c.padding, c.dilations); },
        {uniform(c.x, seed++), uniform(c.w, seed++)}))
        << describe(c);
  }
  // A few more small cases covering strides, dilation and SAME padding together.
  const ConvCase small[] = {
      {{1, 5, 4, 2}, {3, 3, 2, 2}, {2, 2}, "SAME", {1, 1}},
      {{2, 6, 5, 1}, {2, 2, 1, 2}, {1, 2}, "SAME", {2, 1}},
      {{1, 6, 6, 2}, {2, 3, 2, 1}, {2, 1}, "VALID", {1, 2}},
  };
  for (const ConvCase& c : small) {
    EXPECT_TRUE(gradient_check(
        [c](const auto& xs) { return conv2d(xs[0], xs[1], c.strides, c.padding, c.dilations); },
        {uniform(c.x, seed++), uniform(c.w, seed++)}))
        << describe(c);
  }
}

TEST(Conv2DGradient, SecondDerivatives) {
  EXPECT_TRUE(second_derivative_check(
      [](const auto& xs) {
        return square(conv2d(xs[0], xs[1], {2, 1}, "SAME"));
      },
      {uniform({1, 5, 4, 2}, 50), uniform({2, 3, 2, 2}, 51)}));
}

TEST(Conv2DGradient, Float32AgreesWithFloat64) {
  uint64_t seed = 60;
  for (const ConvCase& c : kConvCases) {
    auto [x32, x64] = f32_and_f64(c.x, seed++);
    auto [w32, w64] = f32_and_f64(c.w, seed++);
    Shape y_shape = conv2d(x64, w64, c.strides, c.padding, c.dilations).shape();
    auto [g32, g64] = f32_and_f64(y_shape, seed++);
    auto grads = [&](const Tensor& x, const Tensor& w, const Tensor& g) {
      GradientTape tape;
      tape.watch({x, w});
      Tensor y = conv2d(x, w, c.strides, c.padding, c.dilations);
      return tape.gradient(y, std::vector<Tensor>{x, w}, g);
    };
    auto a = grads(x32, w32, g32), b = grads(x64, w64, g64);
    EXPECT_EQ(a[0].dtype(), kFloat32);
    expect_close(a[0], b[0], 1e-5, "dx " + describe(c));
    expect_close(a[1], b[1], 1e-5, "dw " + describe(c));
  }
}

// ---- grouped, depthwise, transposed and 1-D convolutions ------------------------------------

// A grouped convolution is each group's channels convolved with its filters, concatenated.
Tensor grouped_by_hand(const Tensor& x, const Tensor& w, int64_t groups, Size2 strides,
                       const char* padding, Size2 dilations) {
  int64_t ci = x.dim(3) / groups, co = w.dim(3) / groups;
  std::vector<Tensor> parts;
  for (int64_t g = 0; g < groups; ++g) {
    Tensor xg = slice(x, {Slice{}, Slice{}, Slice{}, Slice{g * ci, (g + 1) * ci}});
    Tensor wg = slice(w, {Slice{}, Slice{}, Slice{}, Slice{g * co, (g + 1) * co}});
    parts.push_back(conv2d(xg, wg, strides, padding, dilations));
  }
  return concat(parts, 3);
}

TEST(GroupedConv2D, IsEachGroupConvolvedAloneInFloat32AndFloat64) {
  struct Case {
    Shape x, w;
    int64_t groups;
    Size2 strides;
    const char* padding;
    Size2 dilations;
  };
  const Case cases[] = {{{2, 6, 5, 4}, {3, 3, 2, 6}, 2, {1, 1}, "SAME", {1, 1}},
                        {{1, 7, 7, 6}, {3, 2, 2, 6}, 3, {2, 1}, "VALID", {1, 1}},
                        {{2, 8, 6, 4}, {2, 2, 1, 8}, 4, {1, 1}, "SAME", {2, 1}}};
  uint64_t seed = 300;
  for (const Case& c : cases) {
    auto [x32, x64] = f32_and_f64(c.x, seed++);
    auto [w32, w64] = f32_and_f64(c.w, seed++);
    Tensor want = grouped_by_hand(x64, w64, c.groups, c.strides, c.padding, c.dilations);
    expect_close(conv2d(x64, w64, c.strides, c.padding, c.dilations), want, 1e-12, "float64");
    expect_close(conv2d(x32, w32, c.strides, c.padding, c.dilations), want, 1e-5, "float32");
    EXPECT_TRUE(gradient_check(
        [c](const auto& xs) { return conv2d(xs[0], xs[1], c.strides, c.padding, c.dilations); },
        {uniform(c.x, seed++), uniform(c.w, seed++)}));
    // oneDNN's grouped gradients agree with the reference loops.
    auto grads = [&](const Tensor& x, const Tensor& w) {
      GradientTape tape;
      tape.watch({x, w});
      Tensor y = conv2d(x, w, c.strides, c.padding, c.dilations);
      return tape.gradient(mul(y, y), std::vector<Tensor>{x, w});
    };
    auto a = grads(x32, w32), b = grads(x64, w64);
    expect_close(a[0], b[0], 1e-5, "dx");
    expect_close(a[1], b[1], 1e-5, "dw");
  }
  EXPECT_THAT(
      [] {
        conv2d(zeros({1, 4, 4, 6}), zeros({3, 3, 4, 2}));
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("6 channels")));
  EXPECT_THAT(
      [] {
        conv2d(zeros({1, 4, 4, 6}), zeros({3, 3, 2, 4}));
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("groups")));
}

TEST(DepthwiseConv2D, EachChannelWithItsOwnFilters) {
  auto [x32, x64] = f32_and_f64({2, 6, 5, 3}, 310);
  auto [w32, w64] = f32_and_f64({3, 2, 3, 2}, 311);  // multiplier 2
  Tensor y = depthwise_conv2d(x64, w64, {1, 2}, "SAME");
  ASSERT_EQ(y.shape(), (Shape{2, 6, 3, 6}));
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t m = 0; m < 2; ++m) {
      Tensor xc = slice(x64, {Slice{}, Slice{}, Slice{}, Slice{c, c + 1}});
      Tensor wc = slice(w64, {Slice{}, Slice{}, Slice{c, c + 1}, Slice{m, m + 1}});
      expect_close(slice(y, {Slice{}, Slice{}, Slice{}, Slice{2 * c + m, 2 * c + m + 1}}),
                   conv2d(xc, wc, {1, 2}, "SAME"), 1e-12,
                   "channel " + std::to_string(c) + " multiplier " + std::to_string(m));
    }
  }
  expect_close(depthwise_conv2d(x32, w32, {1, 2}, "SAME"), y, 1e-5, "float32");
  EXPECT_TRUE(gradient_check(
      [](const auto& xs) {
        return depthwise_conv2d(xs[0], xs[1], {2, 1}, "VALID", {1, 1});
      },
      {uniform({1, 7, 5, 2}, 312), uniform({2, 3, 2, 3}, 313)}));
}

TEST(Conv2DTranspose, IsTheGradientOfConv2DWithRespectToItsInput) {
  struct Case {
    Shape x, w;  // w: (kh, kw, out, in)
    Size2 strides;
    const char* padding;
    Shape y;
  };
  const Case cases[] = {{{2, 3, 4, 5}, {3, 3, 2, 5}, {2, 2}, "SAME", {2, 6, 8, 2}},
                        {{1, 3, 3, 2}, {3, 2, 4, 2}, {2, 3}, "VALID", {1, 7, 9, 4}},
                        {{1, 4, 4, 3}, {2, 2, 3, 3}, {1, 1}, "VALID", {1, 5, 5, 3}},
                        // A kernel smaller than the stride: Keras's h * stride rows.
                        {{1, 3, 2, 2}, {1, 1, 2, 2}, {2, 2}, "VALID", {1, 6, 4, 2}}};
  uint64_t seed = 320;
  for (const Case& c : cases) {
    auto [x32, x64] = f32_and_f64(c.x, seed++);
    auto [w32, w64] = f32_and_f64(c.w, seed++);
    Tensor y = conv2d_transpose(x64, w64, c.strides, c.padding);
    ASSERT_EQ(y.shape(), c.y);
    // d/dz sum(conv2d(z, w) * x) is conv2d_transpose(x, w).
    Tensor z = zeros(c.y, kFloat64);
    GradientTape tape;
    tape.watch(z);
    Tensor dz = tape.gradient(sum(mul(conv2d(z, w64, c.strides, c.padding), x64)), z);
    expect_close(y, dz, 1e-12, "transpose as gradient");
    expect_close(conv2d_transpose(x32, w32, c.strides, c.padding), y, 1e-5, "float32");
    EXPECT_TRUE(gradient_check(
        [c](const auto& xs) { return conv2d_transpose(xs[0], xs[1], c.strides, c.padding); },
        {uniform(c.x, seed++), uniform(c.w, seed++)}));
  }
}

TEST(Conv1D, IsConv2DOverOneRow) {
  auto [x32, x64] = f32_and_f64({2, 9, 3}, 330);
  auto [w32, w64] = f32_and_f64({3, 3, 4}, 331);
  Tensor y = conv1d(x64, w64, 2, "SAME");
  ASSERT_EQ(y.shape(), (Shape{2, 5, 4}));
  // Output t, filter f: sum over taps k and channels c of x[2t + k - 1, c] w[k, c, f].
  std::vector<double> x = x64.to_vector<double>(), w = w64.to_vector<double>(),
                      got = y.to_vector<double>();
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t t = 0; t < 5; ++t) {
      for (int64_t f = 0; f < 4; ++f) {
        double want = 0;
        for (int64_t k = 0; k < 3; ++k) {
          int64_t i = 2 * t + k - 1;
          if (i < 0 || i >= 9) continue;
          for (int64_t c = 0; c < 3; ++c) want += x[(b * 9 + i) * 3 + c] * w[(k * 3 + c) * 4 + f];
        }
        EXPECT_NEAR(got[(b * 5 + t) * 4 + f], want, 1e-12);
      }
    }
  }
  expect_close(conv1d(x32, w32, 2, "SAME"), y, 1e-5, "float32");
  EXPECT_TRUE(gradient_check([](const auto& xs) { return conv1d(xs[0], xs[1], 1, "VALID", 2); },
                             {uniform({2, 9, 3}, 332), uniform({3, 3, 2}, 333)}));
}

// Under op determinism the CNN's convolutions and pooling give bit-identical outputs and
// gradients at 1, 2 and 3 threads (oneDNN's filter gradient then runs on one thread).
TEST(Conv2DDeterminism, BitIdenticalAcrossThreadCountsUnderOpDeterminism) {
  config::enable_op_determinism();
  Tensor x = stateless_random_uniform({64, 14, 14, 32}, {1, 2}, -1, 1);
  Tensor w = stateless_random_uniform({3, 3, 32, 64}, {3, 4}, -0.1, 0.1);
  Tensor g = stateless_random_uniform({64, 7, 7, 64}, {5, 6}, -1, 1);
  EXPECT_EQ(testing::thread_count_differences(
                [&] {
                  GradientTape tape;
                  tape.watch({x, w});
                  Tensor y = max_pool2d(conv2d(x, w, {1, 1}, "SAME"), {2, 2}, {2, 2});
                  std::vector<Tensor> grads = tape.gradient(y, std::vector<Tensor>{x, w}, g);
                  return std::vector<Tensor>{y, grads[0], grads[1]};
                },
                {"y", "dx", "dw"}),
            "");
  config::disable_op_determinism();
}

// ---- pooling -----------------------------------------------------------------------------------

struct PoolCase {
  Shape x;
  Size2 ksize, strides;
  const char* padding;
};

std::string describe(const PoolCase& c) {
  return "x " + shape_str(c.x) + " ksize " + std::to_string(c.ksize[0]) + "," +
         std::to_string(c.ksize[1]) + " strides " + std::to_string(c.strides[0]) + "," +
         std::to_string(c.strides[1]) + " " + c.padding;
}

const PoolCase kPoolCases[] = {
    {{2, 6, 6, 3}, {2, 2}, {2, 2}, "VALID"}, {{2, 7, 5, 3}, {2, 2}, {2, 2}, "SAME"},
    {{1, 7, 5, 2}, {3, 3}, {1, 1}, "SAME"},  {{1, 7, 5, 2}, {3, 3}, {2, 2}, "SAME"},
    {{1, 9, 8, 2}, {3, 2}, {2, 1}, "VALID"}, {{2, 5, 5, 1}, {5, 5}, {1, 1}, "VALID"},
    {{1, 6, 7, 4}, {2, 3}, {3, 2}, "SAME"},
};

using PoolFn = Tensor (*)(const Tensor&, Size2, Size2, std::string_view);

TEST(Pool2D, Float32MatchesFloat64Reference) {
  uint64_t seed = 70;
  for (PoolFn op : {&max_pool2d, &avg_pool2d}) {
    for (const PoolCase& c : kPoolCases) {
      auto [x32, x64] = f32_and_f64(c.x, seed++);
      Tensor y32 = op(x32, c.ksize, c.strides, c.padding);
      Tensor y64 = op(x64, c.ksize, c.strides, c.padding);
      EXPECT_EQ(y32.dtype(), kFloat32);
      expect_close(y32, y64, op == &max_pool2d ? 0 : 1e-6, describe(c));
    }
  }
}

TEST(Pool2D, HandComputed) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  EXPECT_THAT(max_pool2d(x, {2, 2}, {1, 1}).to_vector<float>(), ElementsAre(5, 6, 8, 9));
  EXPECT_THAT(avg_pool2d(x, {2, 2}, {1, 1}).to_vector<float>(), ElementsAre(3, 4, 6, 7));
  // SAME with stride 2: windows hanging over the edge average only the pixels inside.
  EXPECT_THAT(avg_pool2d(x, {2, 2}, {2, 2}, "SAME").to_vector<float>(),
              ElementsAre(3, 4.5, 7.5, 9));
  EXPECT_THAT(max_pool2d(x, {2, 2}, {2, 2}, "SAME").to_vector<float>(), ElementsAre(5, 6, 8, 9));
  // Padding never wins a max, even over negative values.
  Tensor neg = cast(x, kFloat64) * -1.0;
  EXPECT_THAT(max_pool2d(neg, {3, 3}, {1, 1}, "SAME").to_vector<double>(),
              ElementsAre(-1, -1, -2, -1, -1, -2, -4, -4, -5));
  EXPECT_THAT(max_pool2d(cast(neg, kFloat32), {3, 3}, {1, 1}, "SAME").to_vector<float>(),
              ElementsAre(-1, -1, -2, -1, -1, -2, -4, -4, -5));
}

TEST(Pool2D, Errors) {
  EXPECT_THAT(
      [] {
        max_pool2d(zeros({4, 4, 1}), {2, 2}, {2, 2});
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("max_pool2d"), HasSubstr("rank 4"))));
  EXPECT_THAT(
      [] {
        avg_pool2d(zeros({1, 4, 4, 1}), {2, 2}, {2, 2}, "same");
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("avg_pool2d"), HasSubstr("same"))));
  EXPECT_THAT(
      [] {
        max_pool2d(zeros({1, 4, 4, 1}), {5, 1}, {1, 1});
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("empty")));
  EXPECT_THAT(
      [] {
        avg_pool2d(zeros({1, 4, 4, 1}), {0, 1}, {1, 1});
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("at least 1")));
}

TEST(Pool2DGradient, NumericalFloat64) {
  uint64_t seed = 80;
  for (PoolFn op : {&max_pool2d, &avg_pool2d}) {
    for (const PoolCase& c : kPoolCases) {
      EXPECT_TRUE(gradient_check(
          [op, c](const auto& xs) { return op(xs[0], c.ksize, c.strides, c.padding); },
          {uniform(c.x, seed++)}))
          << describe(c);
    }
  }
}

TEST(Pool2DGradient, MaxPoolSendsEachGradientToTheFirstMaximum) {
  Tensor x = Tensor::from_vector<double>({1, 7, 7, 2, 0, 3, 3, 3, 5}, {1, 3, 3, 1});
  for (DType t : {kFloat64, kFloat32}) {
    Tensor xt = cast(x, t);
    GradientTape tape;
    tape.watch(xt);
    Tensor g = tape.gradient(sum(max_pool2d(xt, {2, 2}, {1, 1})), xt);
    // Windows: {1,7,2,0} -> 7 at (0,1); {7,7,0,3} -> first 7 at (0,1); {2,0,3,3} -> first 3 at
    // (2,0); {0,3,3,5} -> 5.
    EXPECT_THAT(g.to_vector<double>(), ElementsAre(0, 2, 0, 0, 0, 0, 1, 0, 1)) << dtype_name(t);
  }
}

TEST(Pool2DGradient, AvgPoolSecondDerivative) {
  EXPECT_TRUE(second_derivative_check(
      [](const auto& xs) {
        return square(avg_pool2d(xs[0], {2, 3}, {1, 2}, "SAME"));
      },
      {uniform({1, 5, 5, 2}, 90)}));
}

TEST(Pool2DGradient, Float32AgreesWithFloat64) {
  uint64_t seed = 100;
  for (PoolFn op : {&max_pool2d, &avg_pool2d}) {
    for (const PoolCase& c : kPoolCases) {
      auto [x32, x64] = f32_and_f64(c.x, seed++);
      Shape y_shape = op(x64, c.ksize, c.strides, c.padding).shape();
      auto [g32, g64] = f32_and_f64(y_shape, seed++);
      auto grad = [&](const Tensor& x, const Tensor& g) {
        GradientTape tape;
        tape.watch(x);
        return tape.gradient(op(x, c.ksize, c.strides, c.padding), x, g);
      };
      expect_close(grad(x32, g32), grad(x64, g64), 1e-6, describe(c));
    }
  }
}

TEST(HalfTypes, ConvAndPoolingRunInBFloat16AndFloat16) {
  auto [x32, x64] = f32_and_f64({1, 6, 5, 3}, 110);
  auto [w32, w64] = f32_and_f64({3, 3, 3, 2}, 111);
  Tensor ref = conv2d(x64, w64, {1, 1}, "SAME");
  Tensor ref_max = max_pool2d(x64, {2, 2}, {2, 2}, "SAME");
  Tensor ref_avg = avg_pool2d(x64, {2, 2}, {2, 2}, "SAME");
  for (DType t : {kBFloat16, kFloat16}) {
    double tol = t == kBFloat16 ? 2e-2 : 3e-3;
    Tensor x = cast(x32, t), w = cast(w32, t);
    Tensor y = conv2d(x, w, {1, 1}, "SAME");
    EXPECT_EQ(y.dtype(), t);
    expect_close(cast(y, kFloat64), ref, tol, "conv2d " + std::string(dtype_name(t)));
    expect_close(cast(max_pool2d(x, {2, 2}, {2, 2}, "SAME"), kFloat64), ref_max, tol, "max");
    expect_close(cast(avg_pool2d(x, {2, 2}, {2, 2}, "SAME"), kFloat64), ref_avg, tol, "avg");
    GradientTape tape;
    tape.watch({x, w});
    auto g = tape.gradient(sum(conv2d(x, w, {1, 1}, "SAME")), std::vector<Tensor>{x, w});
    EXPECT_EQ(g[0].dtype(), t);
    EXPECT_EQ(g[1].shape(), w.shape());
  }
}

// A one-channel bfloat16 input runs padded to four channels on AMX CPUs (conv.cc), unpadded
// elsewhere: either way the output and both gradients match float64 on the same bfloat16 values,
// and dx keeps one channel.
TEST(HalfTypes, OneChannelBFloat16MatchesFloat64) {
  uint64_t seed = 120;
  for (const ConvCase& c : {ConvCase{{3, 9, 7, 1}, {3, 3, 1, 5}, {1, 1}, "SAME", {1, 1}},
                            ConvCase{{2, 11, 10, 1}, {3, 2, 1, 33}, {2, 2}, "VALID", {1, 1}},
                            ConvCase{{2, 12, 11, 1}, {3, 3, 1, 4}, {1, 1}, "SAME", {2, 2}}}) {
    Tensor x = cast(uniform(c.x, seed++, -1, 1, kFloat32), kBFloat16);
    Tensor w = cast(uniform(c.w, seed++, -1, 1, kFloat32), kBFloat16);
    Shape y_shape = conv2d(x, w, c.strides, c.padding, c.dilations).shape();
    Tensor g = cast(uniform(y_shape, seed++, -1, 1, kFloat32), kBFloat16);
    auto run = [&](const Tensor& xs, const Tensor& ws, const Tensor& gs) {
      GradientTape tape;
      tape.watch({xs, ws});
      Tensor y = conv2d(xs, ws, c.strides, c.padding, c.dilations);
      std::vector<Tensor> d = tape.gradient(y, std::vector<Tensor>{xs, ws}, gs);
      return std::vector<Tensor>{y, d[0], d[1]};
    };
    std::vector<Tensor> got = run(x, w, g);
    std::vector<Tensor> want = run(cast(x, kFloat64), cast(w, kFloat64), cast(g, kFloat64));
    SCOPED_TRACE(describe(c));
    const char* names[] = {"y", "dx", "dw"};
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(got[i].dtype(), kBFloat16);
      expect_close(cast(got[i], kFloat64), want[i], 2e-2, names[i]);
    }
  }
}

}  // namespace
}  // namespace weft
