// Dense against NumPy (scripts/make_nn_goldens.py, group "dense"): output and gradients w.r.t.
// input, kernel and bias; plus naming, freezing, the Functional API and bad input.
#include "weft/nn/dense.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/ops/creation.h"
#include "weft/testing/nn_goldens.h"

namespace weft::nn {
namespace {

using ::testing::HasSubstr;

const testing::NnGoldens& dense_goldens() {
  static const testing::NnGoldens g("dense");
  return g;
}

TEST(DenseGolden, TanhWithBias) {
  testing::check_layer(dense_goldens(), "dense_tanh", Dense(3, "tanh"));
}

TEST(DenseGolden, Rank3InputWithoutBias) {
  testing::check_layer(dense_goldens(), "dense_rank3_nobias", Dense(4, "", {.use_bias = false}));
}

TEST(Dense, WeightsAreNamedAfterTheLayer) {
  Dense dense(3, "relu", {.name = "classifier"});
  dense(ones({2, 5}));
  std::vector<Variable> vars = dense.variables();
  ASSERT_EQ(vars.size(), 2u);
  EXPECT_EQ(vars[0].name(), "classifier/kernel");
  EXPECT_EQ(vars[0].shape(), (Shape{5, 3}));
  EXPECT_EQ(vars[1].name(), "classifier/bias");
  EXPECT_THAT(Dense(2).name(), ::testing::MatchesRegex("dense(_[0-9]+)?"));
}

TEST(Dense, SetTrainableFalseRemovesItsTrainableVariables) {
  Dense dense(3);
  dense(ones({2, 5}));
  EXPECT_EQ(dense.trainable_variables().size(), 2u);
  dense.set_trainable(false);
  EXPECT_TRUE(dense.trainable_variables().empty());
  EXPECT_EQ(dense.non_trainable_variables().size(), 2u);
  EXPECT_EQ(dense.variables().size(), 2u);
  dense.set_trainable(true);
  EXPECT_EQ(dense.trainable_variables().size(), 2u);
}

TEST(Dense, FunctionalShapes) {
  KerasTensor in = Input({7});
  KerasTensor out = Dense(4)(in);
  EXPECT_EQ(out.shape(), (Shape{-1, 4}));
}

TEST(DenseErrors, DifferentFeatureSizeAfterBuildingNamesLayerAndShapes) {
  Dense dense(3, "", {.name = "head"});
  dense(ones({2, 4}));
  try {
    dense(ones({2, 5}));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("Dense \"head\""));
    EXPECT_THAT(e.message(), HasSubstr("(2, 5)"));
    EXPECT_THAT(e.message(), HasSubstr("(batch, 4)"));
  }
}

TEST(DenseErrors, UnknownActivationOrInitializerNamesTheLayer) {
  try {
    Dense(3, "relux", {.name = "d1"});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("Dense \"d1\""));
    EXPECT_THAT(e.message(), HasSubstr("relux"));
  }
  try {
    Dense(3, "", {.kernel_initializer = "glorot_unifrom", .name = "d2"});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("Dense \"d2\""));
    EXPECT_THAT(e.message(), HasSubstr("kernel_initializer"));
    EXPECT_THAT(e.message(), HasSubstr("glorot_unifrom"));
  }
}

TEST(DenseErrors, Rank1InputNamesTheLayer) {
  try {
    Dense(3, "", {.name = "d3"})(ones({4}));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("Dense \"d3\""));
    EXPECT_THAT(e.message(), HasSubstr("(4,)"));
  }
}

}  // namespace
}  // namespace weft::nn
