// Mixed-precision policies: names, the global policy, and layers computing in the policy's
// compute dtype with float32 variables and float32 gradients.
#include "weft/precision/policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/autodiff/tape.h"
#include "weft/nn/conv.h"
#include "weft/nn/core_layers.h"
#include "weft/nn/dense.h"
#include "weft/nn/losses.h"
#include "weft/nn/model.h"
#include "weft/nn/normalization.h"
#include "weft/nn/pooling.h"
#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/optim/adam.h"
#include "weft/optim/sgd.h"
#include "weft/testing/error_message.h"

namespace weft::mixed_precision {
namespace {

using ::testing::HasSubstr;

TEST(Policy, NamesGiveComputeAndVariableDtypes) {
  EXPECT_EQ(Policy("float32").compute_dtype(), kFloat32);
  EXPECT_EQ(Policy("float32").variable_dtype(), kFloat32);
  EXPECT_EQ(Policy("mixed_bfloat16").compute_dtype(), kBFloat16);
  EXPECT_EQ(Policy("mixed_bfloat16").variable_dtype(), kFloat32);
  EXPECT_EQ(Policy("mixed_float16").compute_dtype(), kFloat16);
  EXPECT_EQ(Policy("mixed_float16").variable_dtype(), kFloat32);
  EXPECT_EQ(Policy("float64").variable_dtype(), kFloat64);
  EXPECT_EQ(Policy("bfloat16").variable_dtype(), kBFloat16);
}

TEST(Policy, UnknownNamesAreRefusedWithTheName) {
  for (const char* bad : {"mixed_float64", "int32", ""}) {
    std::string msg = testing::invalid_argument_message([&] { Policy p(bad); });
    EXPECT_THAT(msg, HasSubstr("\"" + std::string(bad) + "\"")) << msg;
    EXPECT_THAT(msg, HasSubstr("mixed_bfloat16")) << msg;
  }
  std::string msg =
      testing::invalid_argument_message([] { nn::Dense d(4, "", {.dtype = "fp8", .name = "d"}); });
  EXPECT_THAT(msg, HasSubstr("Dense \"d\": dtype")) << msg;
}

TEST(Policy, GlobalPolicyIsTakenByLayersConstructedUnderIt) {
  EXPECT_EQ(global_policy().name(), "float32");
  nn::Dense before(3);
  {
    PolicyScope scope("mixed_bfloat16");
    EXPECT_EQ(global_policy().name(), "mixed_bfloat16");
    nn::Dense during(3);
    EXPECT_EQ(during.dtype_policy().name(), "mixed_bfloat16");
  }
  EXPECT_EQ(global_policy().name(), "float32");
  EXPECT_EQ(before.dtype_policy().name(), "float32");
}

// Dense under mixed_bfloat16: bfloat16 output, float32 kernel, float32 gradients, and values
// within bfloat16 rounding of the float32 layer with the same weights.
TEST(Policy, DenseComputesInBfloat16WithFloat32Variables) {
  Tensor x = stateless_random_normal({8, 16}, {1, 2});
  nn::Dense mixed(4, "relu", {.dtype = "mixed_bfloat16"});
  nn::Dense full(4, "relu");
  Tensor y = mixed(x);
  full(x);
  for (size_t i = 0; i < 2; ++i) full.variables()[i].assign(mixed.variables()[i].value());
  EXPECT_EQ(y.dtype(), kBFloat16);
  for (const Variable& v : mixed.variables()) EXPECT_EQ(v.dtype(), kFloat32) << v.name();
  Tensor err = max(abs(sub(cast(y, kFloat32), full(x))));
  EXPECT_LT(err.item<double>(), 0.05);
  EXPECT_GT(max(abs(cast(y, kFloat32))).item<double>(), 0.5);

  GradientTape tape;
  Tensor loss = sum(cast(mixed(x), kFloat32));
  std::vector<Tensor> grads = tape.gradient(loss, mixed.trainable_variables());
  ASSERT_EQ(grads.size(), 2u);
  for (const Tensor& g : grads) {
    ASSERT_TRUE(g.defined());
    EXPECT_EQ(g.dtype(), kFloat32);
    EXPECT_GT(sum(abs(g)).item<double>(), 0);
  }
}

TEST(Policy, Float32ActivationAfterMixedLayersComputesInFloat32) {
  PolicyScope scope("mixed_bfloat16");
  nn::Sequential model({nn::Conv2D(4, {3, 3}, {.padding = "same"}), nn::BatchNormalization(),
                        nn::MaxPooling2D({2, 2}), nn::Flatten(), nn::Dense(10),
                        nn::Activation("softmax", {.dtype = "float32"})});
  Tensor x = stateless_random_uniform({2, 8, 8, 1}, {3, 4});
  Tensor y = model(x, /*training=*/true);
  EXPECT_EQ(y.dtype(), kFloat32);
  EXPECT_NEAR(sum(y).item<double>(), 2.0, 1e-5);  // float32 softmax rows sum to one
  for (const Variable& v : model.variables()) EXPECT_EQ(v.dtype(), kFloat32) << v.name();
  std::vector<nn::Layer> layers = model.layers();
  EXPECT_EQ(layers[0](x).dtype(), kBFloat16);
}

// A weighted layer given dtype "float32" in a mixed_bfloat16 model computes exactly what it
// computes in float32: its bfloat16 input is widened (exactly), its weights are not narrowed, and
// its weight gradients are float32. The loss on its logits is computed in float32 too.
TEST(Policy, Float32DenseInMixedModelComputesExactlyAsInFloat32) {
  Tensor x = cast(stateless_random_normal({4, 6}, {7, 8}), kBFloat16);
  Tensor labels = Tensor::from_vector<int64_t>({0, 2, 1, 2}, {4});
  nn::Dense reference(3);
  reference(cast(x, kFloat32));  // builds it
  PolicyScope scope("mixed_bfloat16");
  nn::Dense dense(3, "", {.dtype = "float32"});
  dense(x);
  std::vector<Variable> vars = dense.trainable_variables(),
                        ref_vars = reference.trainable_variables();
  ASSERT_EQ(vars.size(), 2u);
  for (size_t i = 0; i < vars.size(); ++i) {
    EXPECT_EQ(vars[i].dtype(), kFloat32);
    vars[i].assign(stateless_random_normal(vars[i].shape(), {9, static_cast<int64_t>(i)}));
    ref_vars[i].assign(vars[i].value());
  }
  nn::losses::SparseCategoricalCrossentropy loss_fn({.from_logits = true});
  auto loss_and_grads = [&](nn::Dense& layer, const Tensor& input, std::vector<Variable>& v) {
    GradientTape tape;
    Tensor logits = layer(input);
    EXPECT_EQ(logits.dtype(), kFloat32);
    Tensor loss = loss_fn(labels, logits);
    EXPECT_EQ(loss.dtype(), kFloat32);
    std::vector<Tensor> grads = tape.gradient(loss, v);
    grads.insert(grads.begin(), loss);
    return grads;
  };
  std::vector<Tensor> mixed = loss_and_grads(dense, x, vars);
  std::vector<Tensor> f32 = loss_and_grads(reference, cast(x, kFloat32), ref_vars);
  for (size_t i = 0; i < mixed.size(); ++i) {
    EXPECT_EQ(mixed[i].dtype(), kFloat32);
    EXPECT_EQ(max(abs(sub(mixed[i], f32[i]))).item<double>(), 0.0) << "output " << i;
  }
  EXPECT_EQ(nn::Dense(3)(x).dtype(), kBFloat16);  // the policy's own layers compute in bfloat16
}

// Keras: compile wraps the optimizer in a dynamic LossScaleOptimizer under mixed_float16, once;
// an optimizer used on its own is not changed behind its user's back (a custom loop wraps its
// own, as in Keras).
TEST(Policy, MixedFloat16AddsLossScalingInCompileOnly) {
  PolicyScope scope("mixed_float16");
  nn::Sequential model({nn::Dense(2)});
  optim::Adam adam(1e-3);
  model.compile(adam, nn::losses::MeanSquaredError(), std::vector<std::string>{});
  EXPECT_TRUE(model.optimizer().has_loss_scale());

  optim::SGD sgd(0.1);
  Variable w(Tensor::scalar(1.0f, kFloat32), "w");
  GradientTape tape;
  Tensor loss = mul(square(cast(cast(w.value(), kFloat16), kFloat32)), 0.25);
  sgd.minimize(loss, {w}, tape);
  EXPECT_FALSE(sgd.has_loss_scale());
  EXPECT_NEAR(w.value().item<double>(), 0.95, 1e-6);  // d(loss)/dw = w / 2
}

TEST(Policy, Float32PolicyKeepsTheInputsDtype) {
  // Without a policy of their own, layers compute in their inputs' dtype (float64 checks).
  nn::Dense d(3);
  Tensor x = cast(stateless_random_normal({2, 4}, {5, 6}), kFloat64);
  EXPECT_EQ(d(x).dtype(), kFloat64);
  EXPECT_EQ(d.variables()[0].dtype(), kFloat32);
}

}  // namespace
}  // namespace weft::mixed_precision
