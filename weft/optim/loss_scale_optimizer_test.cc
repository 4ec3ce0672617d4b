// LossScaleOptimizer: float16 gradients that underflow without scaling train with it; a
// non-finite step is skipped and halves the scale; the scale grows after finite steps; the
// custom-loop API and checkpoint names.
#include "weft/optim/loss_scale_optimizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "weft/autodiff/tape.h"
#include "weft/nn/dense.h"
#include "weft/nn/losses.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/optim/sgd.h"
#include "weft/testing/error_message.h"

namespace weft::mixed_precision {
namespace {

using ::testing::HasSubstr;

// Regression targets of size 1e-5 over a batch of 1024: d(MSE)/d(prediction) is about
// 2 * 1e-5 / 1024 = 2e-8 per element, below float16's smallest subnormal (6e-8), so a float16
// layer's backward pass rounds it to zero.
struct TinyRegression {
  Tensor x = stateless_random_uniform({1024, 8}, {7, 1}, 0.5, 1.0);
  Tensor y = mul(sum(x, {-1}, /*keepdims=*/true), 1e-5 / 8);

  // Mean squared error after `steps` of SGD on a float16 Dense(1) with float32 variables.
  double train(optim::Optimizer optimizer, int steps) const {
    nn::Dense layer(1, "",
                    {.use_bias = false, .kernel_initializer = "zeros", .dtype = "mixed_float16"});
    nn::losses::Loss mse = nn::losses::MeanSquaredError();
    for (int i = 0; i < steps; ++i) {
      GradientTape tape;
      Tensor loss = mse(y, layer(x));
      optimizer.minimize(loss, layer.trainable_variables(), tape);
    }
    return mse(y, layer(x)).item<double>();
  }
};

TEST(LossScaleOptimizer, Float16GradientsThatUnderflowTrainWithScaling) {
  TinyRegression problem;
  double untrained = mean(square(problem.y)).item<double>();
  double lr = 0.1;
  double plain = problem.train(optim::SGD(lr), 20);
  double scaled = problem.train(LossScaleOptimizer(optim::SGD(lr)), 20);
  EXPECT_DOUBLE_EQ(plain, untrained) << "without scaling every float16 gradient is zero";
  EXPECT_LT(scaled, 0.05 * untrained);
}

TEST(LossScaleOptimizer, NonFiniteStepIsSkippedAndHalvesTheScale) {
  LossScaleOptimizer opt(optim::SGD(0.5), {.dynamic_growth_steps = 3});
  EXPECT_TRUE(opt.dynamic());
  EXPECT_DOUBLE_EQ(opt.loss_scale(), 32768);
  Variable w(Tensor::from_vector<float>({1, 2}, {2}), "w");
  Tensor inf = Tensor::from_vector<float>({1, std::numeric_limits<float>::infinity()}, {2});
  opt.apply_gradients({{inf, w}});
  EXPECT_EQ(w.value().to_vector<float>(), (std::vector<float>{1, 2})) << "the step was applied";
  EXPECT_EQ(opt.iterations().value().item<int64_t>(), 0);
  EXPECT_DOUBLE_EQ(opt.loss_scale(), 16384);
  Tensor nan = Tensor::from_vector<float>({std::nanf(""), 0}, {2});
  opt.apply_gradients({{nan, w}});
  EXPECT_DOUBLE_EQ(opt.loss_scale(), 8192);

  // Three finite steps in a row double it; the counter restarts.
  Tensor g = Tensor::from_vector<float>({1, 1}, {2});
  opt.apply_gradients({{g, w}});
  opt.apply_gradients({{g, w}});
  EXPECT_EQ(opt.dynamic_counter(), 2);
  EXPECT_DOUBLE_EQ(opt.loss_scale(), 8192);
  opt.apply_gradients({{g, w}});
  EXPECT_EQ(opt.dynamic_counter(), 0);
  EXPECT_DOUBLE_EQ(opt.loss_scale(), 16384);
  EXPECT_EQ(opt.iterations().value().item<int64_t>(), 3);
  EXPECT_EQ(w.value().to_vector<float>(), (std::vector<float>{-0.5f, 0.5f}));
}

TEST(LossScaleOptimizer, ScaleNeverDropsBelowOne) {
  LossScaleOptimizer opt(optim::SGD(0.1), {.initial_scale = 2});
  Variable w(Tensor::scalar(1.0f, kFloat32), "w");
  for (int i = 0; i < 3; ++i) {
    opt.apply_gradients({{Tensor::scalar(std::numeric_limits<float>::infinity(), kFloat32), w}});
  }
  EXPECT_DOUBLE_EQ(opt.loss_scale(), 1);
}

TEST(LossScaleOptimizer, FixedScaleNeverChanges) {
  LossScaleOptimizer opt(optim::SGD(0.1), {.dynamic = false, .initial_scale = 128});
  EXPECT_FALSE(opt.dynamic());
  Variable w(Tensor::scalar(1.0f, kFloat32), "w");
  for (int i = 0; i < 3; ++i) opt.apply_gradients({{Tensor::scalar(1.0f, kFloat32), w}});
  EXPECT_DOUBLE_EQ(opt.loss_scale(), 128);
  EXPECT_NEAR(w.value().item<double>(), 0.7, 1e-6);
}

TEST(LossScaleOptimizer, CustomLoopScalesAndUnscales) {
  LossScaleOptimizer opt(optim::SGD(0.1), {.initial_scale = 1024});
  Variable w(Tensor::scalar(3.0f, kFloat32), "w");
  GradientTape tape;
  Tensor loss = square(w.value());
  Tensor scaled = opt.get_scaled_loss(loss);
  EXPECT_DOUBLE_EQ(scaled.item<double>(), 9 * 1024);
  std::vector<Tensor> grads = tape.gradient(scaled, {w});
  EXPECT_DOUBLE_EQ(grads[0].item<double>(), 6 * 1024);
  std::vector<Tensor> unscaled = opt.get_unscaled_gradients({grads[0], Tensor()});
  EXPECT_DOUBLE_EQ(unscaled[0].item<double>(), 6);
  EXPECT_FALSE(unscaled[1].defined());
  opt.apply_gradients({{unscaled[0], w}});
  EXPECT_NEAR(w.value().item<double>(), 2.4, 1e-6);
}

TEST(LossScaleOptimizer, MinimizeGivesTheUnscaledGradientStep) {
  LossScaleOptimizer opt(optim::SGD(0.1));
  Variable w(Tensor::scalar(3.0f, kFloat32), "w");
  GradientTape tape;
  opt.minimize(square(w.value()), {w}, tape);
  EXPECT_NEAR(w.value().item<double>(), 2.4, 1e-6);
}

TEST(LossScaleOptimizer, StateIsCheckpointedUnderStableNames) {
  LossScaleOptimizer opt(optim::SGD(0.1));
  std::vector<std::string> names;
  for (const auto& [name, v] : opt.tracked_variables()) names.push_back(name);
  EXPECT_THAT(names, ::testing::ElementsAre("iterations", "loss_scale/current_loss_scale",
                                            "loss_scale/good_steps"));
}

TEST(LossScaleOptimizer, BadUseIsRefused) {
  optim::SGD sgd(0.1);
  LossScaleOptimizer once(sgd);
  EXPECT_TRUE(sgd.has_loss_scale()) << "the wrapper shares the inner optimizer's state";
  std::string msg = testing::invalid_argument_message([&] { LossScaleOptimizer twice(sgd); });
  EXPECT_THAT(msg, HasSubstr("already has loss scaling")) << msg;
  msg = testing::invalid_argument_message(
      [] { LossScaleOptimizer bad(optim::SGD(0.1), {.initial_scale = 0.5}); });
  EXPECT_THAT(msg, HasSubstr("initial_scale")) << msg;
  msg = testing::invalid_argument_message([] { LossScaleOptimizer::of(optim::SGD(0.1)); });
  EXPECT_THAT(msg, HasSubstr("no loss scaling")) << msg;
  EXPECT_DOUBLE_EQ(LossScaleOptimizer::of(sgd).loss_scale(), 32768);
}

}  // namespace
}  // namespace weft::mixed_precision
