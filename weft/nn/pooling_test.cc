// Pooling layers against NumPy (scripts/make_nn_goldens.py, group "pooling"): outputs and input
// gradients for valid and same padding (same averages only elements inside the input).
#include "weft/nn/pooling.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/ops/creation.h"
#include "weft/testing/nn_goldens.h"

namespace weft::nn {
namespace {

using ::testing::HasSubstr;

const testing::NnGoldens& pooling_goldens() {
  static const testing::NnGoldens g("pooling");
  return g;
}

TEST(PoolingGolden, MaxValidDefaultStrides) {
  testing::check_layer(pooling_goldens(), "max_valid", MaxPooling2D());
}

TEST(PoolingGolden, MaxSameStrided) {
  testing::check_layer(pooling_goldens(), "max_same_strided",
                       MaxPooling2D({3, 3}, {.strides = {2, 2}, .padding = "same"}));
}

TEST(PoolingGolden, AverageValid) {
  testing::check_layer(pooling_goldens(), "avg_valid", AveragePooling2D({2, 2}));
}

TEST(PoolingGolden, AverageSameExcludesPadding) {
  testing::check_layer(pooling_goldens(), "avg_same",
                       AveragePooling2D({3, 3}, {.strides = {2, 1}, .padding = "same"}));
}

TEST(PoolingGolden, GlobalAverage) {
  testing::check_layer(pooling_goldens(), "global_avg", GlobalAveragePooling2D());
}

TEST(Pooling, KerasNamesAndNoWeights) {
  MaxPooling2D max_pool;
  AveragePooling2D avg_pool;
  GlobalAveragePooling2D gap;
  EXPECT_THAT(max_pool.name(), ::testing::MatchesRegex("max_pooling2d(_[0-9]+)?"));
  EXPECT_THAT(avg_pool.name(), ::testing::MatchesRegex("average_pooling2d(_[0-9]+)?"));
  EXPECT_THAT(gap.name(), ::testing::MatchesRegex("global_average_pooling2d(_[0-9]+)?"));
  EXPECT_EQ(max_pool(ones({1, 5, 5, 2})).shape(), (Shape{1, 2, 2, 2}));
  EXPECT_TRUE(max_pool.variables().empty());
  KerasTensor out = gap(Input({7, 7, 3}));
  EXPECT_EQ(out.shape(), (Shape{-1, 3}));
}

TEST(PoolingErrors, Rank3InputNamesLayerAndShape) {
  try {
    MaxPooling2D({2, 2}, {.name = "p1"})(ones({2, 4, 4}));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("MaxPooling2D \"p1\""));
    EXPECT_THAT(e.message(), HasSubstr("(2, 4, 4)"));
  }
  EXPECT_THROW(GlobalAveragePooling2D()(ones({2, 4})), InvalidArgument);
}

TEST(PoolingErrors, BadOptions) {
  EXPECT_THROW(AveragePooling2D({2, 2}, {.padding = "causal"}), InvalidArgument);
  EXPECT_THROW(MaxPooling2D({0, 2}), InvalidArgument);
  try {
    MaxPooling2D({3, 3}, {.name = "p2"})(ones({1, 2, 5, 1}));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("MaxPooling2D \"p2\""));
    EXPECT_THAT(e.message(), HasSubstr("(1, 2, 5, 1)"));
  }
}

}  // namespace
}  // namespace weft::nn
