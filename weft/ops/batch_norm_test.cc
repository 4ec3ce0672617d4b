#include "weft/ops/batch_norm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "weft/autodiff/tape.h"
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

using testing::gradient_check;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using testing::uniform;

// The definition, from reductions and broadcasting: features on `axis`, statistics over the rest.
Tensor reference_bn(const Tensor& x, const Tensor& gamma, const Tensor& beta, int64_t axis,
                    double eps) {
  Axes others;
  Shape param(x.rank(), 1);
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (i != axis) others.push_back(i);
  }
  param[axis] = x.shape()[axis];
  Tensor centered = sub(x, mean(x, others, true));
  Tensor var = mean(square(centered), others, true);
  return add(mul(mul(centered, rsqrt(add(var, eps))), reshape(gamma, param)), reshape(beta, param));
}

void expect_close(const Tensor& a, const Tensor& b, double tol) {
  ASSERT_EQ(a.shape(), b.shape());
  std::vector<double> u = a.to_vector<double>(), v = b.to_vector<double>();
  for (size_t i = 0; i < u.size(); ++i) ASSERT_NEAR(u[i], v[i], tol) << "element " << i;
}

TEST(BatchNormTraining, MatchesTheDefinitionOnEitherAxis) {
  for (int64_t axis : {3, 1}) {  // channels last (inner 1) and channels first (inner > 1)
    Tensor x = uniform({5, 4, 3, 6}, 1, -2, 3);
    int64_t c = x.shape()[axis];
    Tensor gamma = uniform({c}, 2, 0.5, 1.5), beta = uniform({c}, 3);
    BatchNormResult r = batch_norm_training(x, gamma, beta, axis, 1e-3);
    expect_close(r.y, reference_bn(x, gamma, beta, axis, 1e-3), 1e-12);
    Axes others;
    for (int64_t i = 0; i < 4; ++i) {
      if (i != axis) others.push_back(i);
    }
    expect_close(r.mean, mean(x, others), 1e-12);
    expect_close(r.variance, mean(square(sub(x, mean(x, others, true))), others), 1e-12);
  }
}

TEST(BatchNormTraining, NumericalGradientsFloat64) {
  for (int64_t axis : {-1, 1}) {
    EXPECT_TRUE(gradient_check(
        [axis](const std::vector<Tensor>& in) {
          return batch_norm_training(in[0], in[1], in[2], axis, 1e-3).y;
        },
        {uniform({4, 3, 5}, 4, -2, 2), uniform({axis == 1 ? 3 : 5}, 5, 0.5, 1.5),
         uniform({axis == 1 ? 3 : 5}, 6)},
        // Its gradient is one fused kernel: forward mode refuses it (forward_test.cc).
        {.check_forward = false}));
  }
}

TEST(BatchNormTraining, Float32AgreesWithFloat64) {
  Tensor x = uniform({16, 7, 7, 8}, 7, -3, 3), gamma = uniform({8}, 8), beta = uniform({8}, 9);
  Tensor dy = uniform({16, 7, 7, 8}, 10);
  auto run = [&](DType t) {
    Tensor xt = cast(x, t), gt = cast(gamma, t), bt = cast(beta, t);
    GradientTape tape;
    tape.watch({xt, gt, bt});
    Tensor y = batch_norm_training(xt, gt, bt, -1, 1e-3).y;
    std::vector<Tensor> g = tape.gradient(y, std::vector<Tensor>{xt, gt, bt}, cast(dy, t));
    return std::vector<Tensor>{y, g[0], g[1], g[2]};
  };
  std::vector<Tensor> f32 = run(kFloat32), f64 = run(kFloat64);
  for (size_t i = 0; i < f32.size(); ++i) expect_close(f32[i], f64[i], 2e-4);
}

TEST(BatchNormTraining, BitIdenticalAcrossThreadCounts) {
  Tensor x = stateless_random_uniform({64, 28, 28, 32}, {1, 2}, -1, 1);
  Tensor gamma = stateless_random_uniform({32}, {3, 4}, 0.5, 1.5);
  Tensor beta = stateless_random_uniform({32}, {5, 6}, -1, 1);
  Tensor dy = stateless_random_uniform({64, 28, 28, 32}, {7, 8}, -1, 1);
  EXPECT_EQ(
      testing::thread_count_differences(
          [&] {
            GradientTape tape;
            tape.watch({x, gamma, beta});
            BatchNormResult r = batch_norm_training(x, gamma, beta, -1, 1e-3);
            std::vector<Tensor> g = tape.gradient(r.y, std::vector<Tensor>{x, gamma, beta}, dy);
            return std::vector<Tensor>{r.y, r.mean, r.variance, g[0], g[1], g[2]};
          },
          {"y", "mean", "variance", "dx", "dgamma", "dbeta"}),
      "");
}

// bfloat16 and float16 inputs are normalised in float32 with float32 gamma and beta: y and dx
// are the float32 results of the same (rounded) inputs, rounded once; statistics and parameter
// gradients stay float32.
TEST(BatchNormTraining, HalfInputsComputeInFloat32) {
  for (DType half : {kBFloat16, kFloat16}) {
    Tensor x = cast(uniform({64, 5, 5, 8}, 11), half);
    Tensor dy = cast(uniform({64, 5, 5, 8}, 12), half);
    Tensor gamma = cast(uniform({8}, 13), kFloat32), beta = cast(uniform({8}, 14), kFloat32);
    auto run = [&](const Tensor& xin, const Tensor& dyin) {
      GradientTape tape;
      tape.watch({xin, gamma, beta});
      BatchNormResult r = batch_norm_training(xin, gamma, beta, -1, 1e-3);
      std::vector<Tensor> g = tape.gradient(r.y, std::vector<Tensor>{xin, gamma, beta}, dyin);
      return std::vector<Tensor>{r.y, r.mean, r.variance, g[0], g[1], g[2]};
    };
    std::vector<Tensor> h = run(x, dy);
    std::vector<Tensor> f = run(cast(x, kFloat32), cast(dy, kFloat32));
    EXPECT_EQ(h[0].dtype(), half);
    EXPECT_EQ(h[3].dtype(), half);
    for (int k : {1, 2, 4, 5}) EXPECT_EQ(h[k].dtype(), kFloat32) << k;
    for (int k : {0, 3}) {
      EXPECT_EQ(
          max(abs(sub(cast(h[k], kFloat32), cast(cast(f[k], half), kFloat32)))).item<double>(), 0)
          << dtype_name(half) << " output " << k;
    }
    for (int k : {1, 2, 4, 5}) {
      EXPECT_LT(max(abs(sub(h[k], f[k]))).item<double>(), 1e-4) << dtype_name(half) << " " << k;
    }
  }
}

// The fused ReLU is ReLU applied to the op's output, forward and backward: the same values and
// the same gradients as the two ops recorded one after the other.
TEST(BatchNormTraining, FusedReluIsReluOfTheOutput) {
  for (int64_t axis : {3, 1}) {
    Tensor x = uniform({6, 4, 3, 5}, 21, -2, 2);
    int64_t c = x.shape()[axis];
    Tensor gamma = uniform({c}, 22, 0.5, 1.5), beta = uniform({c}, 23, -0.5, 0.5);
    Tensor dy = uniform(x.shape(), 24);
    auto run = [&](bool fused) {
      GradientTape tape;
      tape.watch({x, gamma, beta});
      Tensor y = fused ? batch_norm_training(x, gamma, beta, axis, 1e-3, true).y
                       : relu(batch_norm_training(x, gamma, beta, axis, 1e-3).y);
      std::vector<Tensor> g = tape.gradient(y, std::vector<Tensor>{x, gamma, beta}, dy);
      return std::vector<Tensor>{y, g[0], g[1], g[2]};
    };
    std::vector<Tensor> fused = run(true), separate = run(false);
    double zeros =
        mean(cast(equal(fused[0], Tensor::scalar(0, kFloat64)), kFloat64)).item<double>();
    EXPECT_GT(zeros, 0.3) << "the test should cut about half the values";
    EXPECT_LT(zeros, 0.7);
    for (size_t k = 0; k < fused.size(); ++k) expect_close(fused[k], separate[k], 1e-12);
  }
}

// Both moments come from one pass about a shift, so a mean far larger than the spread (pixels
// in 0..255, say) does not cancel the variance away in float32.
TEST(BatchNormTraining, Float32MomentsOfALargeMean) {
  Tensor x64 = add(uniform({256, 9}, 25, -1, 1), Tensor::scalar(1000, kFloat64));
  Tensor g = ones({9}, kFloat32), b = zeros({9}, kFloat32);
  BatchNormResult r = batch_norm_training(cast(x64, kFloat32), g, b, -1, 1e-3);
  Tensor x32 = cast(cast(x64, kFloat32), kFloat64);  // the values the op saw
  expect_close(cast(r.mean, kFloat64), mean(x32, {0}), 1e-4);
  expect_close(cast(r.variance, kFloat64), mean(square(sub(x32, mean(x32, {0}, true))), {0}), 1e-4);
}

TEST(BatchNormTraining, Errors) {
  Tensor x = uniform({4, 3}, 1), g = uniform({3}, 2);
  EXPECT_THAT([&] { batch_norm_training(x, uniform({4}, 2), g, -1, 1e-3); },
              ThrowsMessage<InvalidArgument>(HasSubstr("gamma and beta must be (3,)")));
  EXPECT_THAT([&] { batch_norm_training(cast(x, kInt32), g, g, -1, 1e-3); },
              ThrowsMessage<InvalidArgument>(HasSubstr("expected a floating input")));
  EXPECT_THAT([&] { batch_norm_training(cast(x, kBFloat16), cast(g, kBFloat16), g, -1, 1e-3); },
              ThrowsMessage<InvalidArgument>(HasSubstr("(3,) float32")));
  EXPECT_THAT([&] { batch_norm_training(uniform({3}, 1), g, g, 0, 1e-3); },
              ThrowsMessage<InvalidArgument>(HasSubstr("rank >= 2")));
  EXPECT_THAT([&] { batch_norm_training(x, g, g, 2, 1e-3); },
              ThrowsMessage<OutOfRange>(HasSubstr("batch_norm_training: axis 2")));
  EXPECT_THAT([&] { batch_norm_training(x, g, g, -1, 0); },
              ThrowsMessage<InvalidArgument>(HasSubstr("epsilon must be positive")));
}

TEST(BatchNormGradient, SecondDerivativesAreUndefinedNotWrong) {
  // batch_norm_training's backward is one fused kernel that records nothing (docs/autodiff.md):
  // a derivative of its gradient comes back undefined, as cumprod's does, never as a value that
  // silently leaves the kernel's part out.
  Tensor x = uniform({4, 3}, 7), gamma = uniform({3}, 8, 0.5, 1.5), beta = uniform({3}, 9);
  GradientTape outer;
  outer.watch(x);
  Tensor dx;
  {
    GradientTape inner;
    inner.watch(x);
    Tensor y = batch_norm_training(x, gamma, beta, -1, 1e-3).y;
    dx = inner.gradient(sum(mul(y, y)), x);
  }
  ASSERT_TRUE(dx.defined());
  EXPECT_GT(max(abs(dx)).item<double>(), 0.0);
  EXPECT_FALSE(outer.gradient(sum(dx), x).defined());
}

}  // namespace
}  // namespace weft
