// The 3-D layers (Conv3D, MaxPooling3D, AveragePooling3D, GlobalAveragePooling3D,
// GlobalMaxPooling3D, SpatialDropout3D) against NumPy (scripts/make_nn_goldens.py, group
// "layers_3d"): outputs and gradients for valid/same padding, strides, dilation, groups and tied
// maxima; names, shapes, saved configs and bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "weft/nn/conv.h"
#include "weft/nn/core_layers.h"
#include "weft/nn/pooling.h"
#include "weft/nn/saving.h"
#include "weft/ops/creation.h"
#include "weft/testing/error_message.h"
#include "weft/testing/nn_goldens.h"

namespace weft::nn {
namespace {

using ::testing::HasSubstr;
using testing::invalid_argument_message;

const testing::NnGoldens& layers_3d_goldens() {
  static const testing::NnGoldens g("layers_3d");
  return g;
}

TEST(Conv3DGolden, ValidWithBias) {
  testing::check_layer(layers_3d_goldens(), "conv3d_valid", Conv3D(4, {2, 3, 2}));
}

TEST(Conv3DGolden, SameStridedTanh) {
  testing::check_layer(
      layers_3d_goldens(), "conv3d_same_strided",
      Conv3D(2, {3, 3, 3}, {.strides = {2, 1, 2}, .padding = "same", .activation = "tanh"}));
}

TEST(Conv3DGolden, DilatedWithoutBias) {
  testing::check_layer(layers_3d_goldens(), "conv3d_dilated_nobias",
                       Conv3D(3, {2, 2, 3}, {.dilation_rate = {2, 1, 2}, .use_bias = false}));
}

TEST(Conv3DGolden, Grouped) {
  testing::check_layer(layers_3d_goldens(), "conv3d_grouped",
                       Conv3D(6, {2, 2, 2}, {.padding = "same", .groups = 2}));
}

TEST(Pooling3DGolden, MaxValid) {
  testing::check_layer(layers_3d_goldens(), "maxpool3d_valid", MaxPooling3D());
}

// Whole-number inputs: most windows hold tied maxima, and the gradient goes to the first in
// (depth, height, width) order.
TEST(Pooling3DGolden, MaxSameStridedWithTies) {
  testing::check_layer(layers_3d_goldens(), "maxpool3d_same_strided",
                       MaxPooling3D({3, 3, 2}, {.strides = {2, 2, 1}, .padding = "same"}));
}

TEST(Pooling3DGolden, AverageValid) {
  testing::check_layer(layers_3d_goldens(), "avgpool3d_valid", AveragePooling3D({2, 2, 3}));
}

TEST(Pooling3DGolden, AverageSameCountsOnlyTheInput) {
  testing::check_layer(layers_3d_goldens(), "avgpool3d_same",
                       AveragePooling3D({3, 2, 3}, {.strides = {2, 1, 2}, .padding = "same"}));
}

TEST(Pooling3DGolden, Global) {
  testing::check_layer(layers_3d_goldens(), "global_avg_3d", GlobalAveragePooling3D());
  testing::check_layer(layers_3d_goldens(), "global_max_3d", GlobalMaxPooling3D());
}

TEST(Layers3D, KerasNamesShapesAndConfigs) {
  Conv3D conv(8, {3, 3, 3}, {.padding = "same", .groups = 2});
  EXPECT_THAT(conv.name(), ::testing::MatchesRegex("conv3d(_[0-9]+)?"));
  EXPECT_EQ(conv(ones({2, 4, 6, 5, 4})).shape(), (Shape{2, 4, 6, 5, 8}));
  ASSERT_EQ(conv.variables().size(), 2u);
  EXPECT_EQ(conv.variables()[0].shape(), (Shape{3, 3, 3, 2, 8}));
  EXPECT_EQ(MaxPooling3D()(ones({1, 4, 6, 5, 3})).shape(), (Shape{1, 2, 3, 2, 3}));
  EXPECT_EQ(
      AveragePooling3D({2, 2, 2}, {.strides = {1, 1, 1}, .padding = "same"})(ones({1, 3, 3, 3, 2}))
          .shape(),
      (Shape{1, 3, 3, 3, 2}));
  EXPECT_EQ(GlobalMaxPooling3D()(ones({2, 3, 4, 5, 6})).shape(), (Shape{2, 6}));
  KerasTensor in = Input({5, 9, 9, 2});
  KerasTensor out = Conv3D(4, {3, 3, 3}, {.strides = {1, 2, 2}})(in);
  EXPECT_EQ(out.shape(), (Shape{-1, 3, 4, 4, 4}));
  EXPECT_EQ(GlobalAveragePooling3D()(MaxPooling3D({1, 2, 2})(out)).shape(), (Shape{-1, 4}));

  // Saved configs hold Keras's fields (three sizes) and load back to the same config.
  const std::vector<Layer> layers{
      Conv3D(4, {2, 3, 1}, {.strides = {1, 2, 1}, .padding = "same", .activation = "relu"}),
      Conv3D(6, {1, 1, 1}, {.dilation_rate = {2, 1, 3}, .groups = 3, .use_bias = false}),
      MaxPooling3D({2, 1, 2}, {.strides = {1, 1, 2}, .padding = "same"}),
      AveragePooling3D(),
      GlobalAveragePooling3D(),
      GlobalMaxPooling3D(),
      SpatialDropout3D(0.3, {.seed = 5}),
  };
  for (const Layer& l : layers) {
    ConfigDict c = serialize(l);
    Layer again = deserialize(ConfigDict::from_json(c.to_json()));
    EXPECT_EQ(serialize(again).to_json(), c.to_json()) << l.impl().class_name();
  }
  ConfigDict c = serialize(layers[0]);
  EXPECT_THAT(c.to_json(), HasSubstr("\"kernel_size\":[2,3,1]"));
  EXPECT_THAT(c.to_json(), HasSubstr("\"strides\":[1,2,1]"));
}

TEST(Layers3D, SpatialDropout3DDropsWholeChannels) {
  Tensor x = ones({32, 3, 4, 5, 8});
  SpatialDropout3D drop(0.25, {.seed = 3});
  std::vector<float> v = drop(x, /*training=*/true).to_vector<float>();
  int dropped = 0;
  for (int64_t n = 0; n < 32; ++n) {
    for (int64_t c = 0; c < 8; ++c) {
      float first = v[n * 60 * 8 + c];
      EXPECT_TRUE(first == 0.0f || std::fabs(first - 1 / 0.75f) < 1e-6);
      for (int64_t i = 0; i < 60; ++i) ASSERT_EQ(v[(n * 60 + i) * 8 + c], first);
      dropped += first == 0.0f;
    }
  }
  EXPECT_NEAR(dropped / 256.0, 0.25, 0.11);  // 256 draws: 4 standard deviations is 0.108
  EXPECT_EQ(drop(x, false).to_vector<float>(), x.to_vector<float>());
}

TEST(Layers3DErrors, NameTheLayerAndWhatWasExpected) {
  std::string m = invalid_argument_message([] {
    Conv3D(4, {3, 3, 3}, {.name = "v1"})(ones({2, 5, 5, 1}));
  });
  EXPECT_THAT(m, HasSubstr("Conv3D \"v1\""));
  EXPECT_THAT(m, HasSubstr("(batch, depth, height, width, channels)"));
  m = invalid_argument_message([] { Conv3D(4, {3, 3, 3}, {.name = "v2"})(ones({1, 2, 5, 5, 1})); });
  EXPECT_THAT(
      m, HasSubstr("Conv3D \"v2\": input of shape (1, 2, 5, 5, 1) is smaller than the kernel"));
  m = invalid_argument_message([] { Conv3D(4, {3, 0, 3}, {.name = "v3"}); });
  EXPECT_THAT(m, HasSubstr("Conv3D \"v3\": kernel_size must be positive, got {3, 0, 3}"));
  m = invalid_argument_message([] {
    Conv3D(4, {3, 3, 3}, {.strides = {2, 1, 1}, .dilation_rate = {1, 1, 2}});
  });
  EXPECT_THAT(m, HasSubstr("strides {2, 1, 1}, dilation_rate {1, 1, 2}"));
  m = invalid_argument_message([] {
    MaxPooling3D({2, 2, 2}, {.name = "p1"})(ones({1, 1, 4, 4, 1}));
  });
  EXPECT_THAT(m, HasSubstr("MaxPooling3D \"p1\": input of shape (1, 1, 4, 4, 1) is smaller than "
                           "the pool {2, 2, 2}"));
  m = invalid_argument_message([] {
    SpatialDropout3D(0.5, {.name = "d1"})(ones({1, 4, 4, 1}), true);
  });
  EXPECT_THAT(m, HasSubstr("SpatialDropout3D \"d1\""));
  EXPECT_THAT(m, HasSubstr("rank 5"));
}

}  // namespace
}  // namespace weft::nn
