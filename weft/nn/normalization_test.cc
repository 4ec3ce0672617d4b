// BatchNormalization and LayerNormalization against NumPy (scripts/make_nn_goldens.py, group
// "normalization"): outputs and gradients w.r.t. input, gamma and beta (through the batch
// statistics when training), the moving statistics after a training call, freezing, and bad axes.
#include "weft/nn/normalization.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/nn/activations.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/testing/nn_goldens.h"

namespace weft::nn {
namespace {

using ::testing::HasSubstr;

const testing::NnGoldens& normalization_goldens() {
  static const testing::NnGoldens g("normalization");
  return g;
}

void expect_moving_statistics(const Layer& bn, const std::string& name) {
  std::vector<Variable> vars = bn.variables();
  ASSERT_EQ(vars.size(), 4u);
  EXPECT_TRUE(testing::all_close(vars[2], normalization_goldens().load(name, "moving_mean_after")))
      << "moving_mean";
  EXPECT_TRUE(
      testing::all_close(vars[3], normalization_goldens().load(name, "moving_variance_after")))
      << "moving_variance";
}

TEST(BatchNormalizationGolden, Training2DUsesBatchStatisticsAndUpdatesMovingOnes) {
  BatchNormalization bn({.momentum = 0.9});
  testing::check_layer(normalization_goldens(), "bn_train_2d", bn, /*training=*/true);
  expect_moving_statistics(bn, "bn_train_2d");
}

TEST(BatchNormalizationGolden, Training4DChannelsFirst) {
  BatchNormalization bn({.axis = 1, .momentum = 0.9});
  testing::check_layer(normalization_goldens(), "bn_train_4d_axis1", bn, /*training=*/true);
  expect_moving_statistics(bn, "bn_train_4d_axis1");
}

TEST(BatchNormalizationGolden, InferenceUsesMovingStatisticsAndLeavesThem) {
  BatchNormalization bn({.momentum = 0.9});
  testing::check_layer(normalization_goldens(), "bn_inference", bn, /*training=*/false);
  std::vector<Variable> vars = bn.variables();
  EXPECT_TRUE(testing::all_close(vars[2], normalization_goldens().load("bn_inference", "w2")));
  EXPECT_TRUE(testing::all_close(vars[3], normalization_goldens().load("bn_inference", "w3")));
}

TEST(LayerNormalizationGolden, LastAxis) {
  testing::check_layer(normalization_goldens(), "ln_last", LayerNormalization());
}

TEST(LayerNormalizationGolden, MiddleAxis) {
  testing::check_layer(normalization_goldens(), "ln_axis1", LayerNormalization({.axis = 1}));
}

TEST(BatchNormalization, WeightsTrainableAndNot) {
  BatchNormalization bn({.name = "bn"});
  bn(ones({2, 3}));
  std::vector<Variable> vars = bn.variables();
  ASSERT_EQ(vars.size(), 4u);
  EXPECT_EQ(vars[0].name(), "bn/gamma");
  EXPECT_EQ(vars[1].name(), "bn/beta");
  EXPECT_EQ(vars[2].name(), "bn/moving_mean");
  EXPECT_EQ(vars[3].name(), "bn/moving_variance");
  EXPECT_EQ(bn.trainable_variables().size(), 2u);
  EXPECT_EQ(bn.non_trainable_variables().size(), 2u);
  EXPECT_EQ(vars[3].value().to_vector<float>(), std::vector<float>(3, 1.0f));

  BatchNormalization plain({.center = false, .scale = false});
  plain(ones({2, 3}));
  EXPECT_EQ(plain.variables().size(), 2u);
  EXPECT_TRUE(plain.trainable_variables().empty());
  EXPECT_THAT(plain.name(), ::testing::MatchesRegex("batch_normalization(_[0-9]+)?"));
}

TEST(BatchNormalization, FrozenLayerRunsInInferenceModeEvenWhenTraining) {
  BatchNormalization bn({.momentum = 0.5});
  Tensor x = normalization_goldens().load("bn_train_2d", "x");
  Tensor inference = bn(x, false);
  bn.set_trainable(false);
  EXPECT_TRUE(bn.trainable_variables().empty());
  EXPECT_EQ(bn.non_trainable_variables().size(), 4u);
  Tensor frozen = bn(x, true);
  EXPECT_EQ(frozen.to_vector<double>(), inference.to_vector<double>());
  EXPECT_EQ(bn.variables()[2].value().to_vector<float>(), std::vector<float>(4, 0.0f));
  bn.set_trainable(true);
  bn(x, true);
  EXPECT_NE(bn.variables()[2].value().to_vector<float>(), std::vector<float>(4, 0.0f));
}

TEST(BatchNormalization, MovingUpdatesAreNotRecorded) {
  BatchNormalization bn;
  Tensor x = normalization_goldens().load("bn_train_2d", "x");
  bn(x, false);
  GradientTape tape;
  tape.watch(x);
  Tensor loss = sum(bn(x, true));
  // Only the normalised output feeds the loss; the sum of a normalised batch per feature is
  // beta * n, so the input gradient is zero and beta's is n.
  std::vector<Tensor> g = tape.gradient(loss, std::vector<Tensor>{x, bn.variables()[1].value()});
  for (double v : g[0].to_vector<double>()) EXPECT_NEAR(v, 0, 1e-9);
  EXPECT_EQ(g[1].to_vector<float>(), std::vector<float>(4, 6.0f));
}

// .activation applies the activation to the normalised output: "relu" inside the training kernel,
// anything else after it; in inference after the moving-statistics normalisation.
TEST(BatchNormalization, ActivationAppliesToTheOutputInBothModes) {
  Tensor x = normalization_goldens().load("bn_train_2d", "x");
  for (const char* name : {"relu", "tanh"}) {
    BatchNormalization plain({.momentum = 0.5}), activated({.momentum = 0.5, .activation = name});
    for (bool training : {true, false}) {
      Tensor expected = activations::get(name)(plain(x, training));
      Tensor y = activated(x, training);
      std::vector<double> a = y.to_vector<double>(), b = expected.to_vector<double>();
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << name << " " << i;
    }
    // Same moving statistics afterwards: the activation does not touch them.
    EXPECT_EQ(activated.variables()[2].value().to_vector<float>(),
              plain.variables()[2].value().to_vector<float>());
  }
  EXPECT_THAT([] { BatchNormalization({.activation = "rleu", .name = "bn_act"}); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("bn_act")));
}

TEST(Normalization, HalfInputsComputeInFloat32AndKeepTheirDtype) {
  // Each result is the float32 computation on the same inputs, rounded once to the half type.
  for (DType half : {kBFloat16, kFloat16}) {
    Tensor x = cast(normalization_goldens().load("bn_train_2d", "x"), half);
    Tensor x32 = cast(x, kFloat32);
    Tensor bn = BatchNormalization()(x, true);
    EXPECT_EQ(bn.dtype(), half);
    EXPECT_EQ(bn.to_vector<float>(), cast(BatchNormalization()(x32, true), half).to_vector<float>())
        << half;
    Tensor ln = LayerNormalization()(x);
    EXPECT_EQ(ln.dtype(), half);
    EXPECT_EQ(ln.to_vector<float>(), cast(LayerNormalization()(x32), half).to_vector<float>())
        << half;
  }
}

TEST(NormalizationErrors, AxisOutOfRangeNamesLayerAndShape) {
  try {
    BatchNormalization({.axis = 2, .name = "bn_bad"})(ones({4, 3}));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("BatchNormalization \"bn_bad\""));
    EXPECT_THAT(e.message(), HasSubstr("(4, 3)"));
  }
  EXPECT_THROW(BatchNormalization({.axis = 0})(ones({4, 3})), InvalidArgument);
  EXPECT_THROW(LayerNormalization({.axis = -3})(ones({4, 3})), InvalidArgument);
  EXPECT_THROW(LayerNormalization()(ones({4})), InvalidArgument);
  EXPECT_THROW(BatchNormalization({.epsilon = 0}), InvalidArgument);
  EXPECT_THROW(BatchNormalization({.momentum = 1.5}), InvalidArgument);
  EXPECT_THROW(LayerNormalization({.gamma_initializer = "one"}), InvalidArgument);
}

TEST(NormalizationErrors, OtherFeatureCountAfterBuilding) {
  LayerNormalization ln({.name = "ln"});
  ln(ones({2, 5}));
  try {
    ln(ones({2, 6}));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("LayerNormalization \"ln\""));
    EXPECT_THAT(e.message(), HasSubstr("(2, 6)"));
  }
}

}  // namespace
}  // namespace weft::nn
