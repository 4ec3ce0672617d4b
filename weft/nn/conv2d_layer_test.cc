// Conv2D (conv.h) against NumPy (scripts/make_nn_goldens.py, group "conv"): outputs and gradients
// w.r.t. input, kernel and bias for valid/same padding, strides and dilation; plus bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/nn/conv.h"
#include "weft/ops/creation.h"
#include "weft/testing/error_message.h"
#include "weft/testing/nn_goldens.h"

namespace weft::nn {
namespace {

using ::testing::HasSubstr;
using testing::invalid_argument_message;

const testing::NnGoldens& conv2d_layer_goldens() {
  static const testing::NnGoldens g("conv");
  return g;
}

TEST(Conv2DGolden, ValidWithBias) {
  testing::check_layer(conv2d_layer_goldens(), "conv_valid", Conv2D(4, {3, 2}));
}

TEST(Conv2DGolden, SameStridedTanh) {
  testing::check_layer(
      conv2d_layer_goldens(), "conv_same_strided",
      Conv2D(2, {3, 3}, {.strides = {2, 2}, .padding = "same", .activation = "tanh"}));
}

TEST(Conv2DGolden, DilatedWithoutBias) {
  testing::check_layer(conv2d_layer_goldens(), "conv_dilated_nobias",
                       Conv2D(3, {2, 3}, {.dilation_rate = {2, 2}, .use_bias = false}));
}

TEST(Conv2DGolden, SameDilatedSigmoid) {
  testing::check_layer(
      conv2d_layer_goldens(), "conv_same_dilated",
      Conv2D(2, {3, 3}, {.padding = "SAME", .dilation_rate = {2, 1}, .activation = "sigmoid"}));
}

TEST(Conv2DLayer, KerasNamesShapesAndFreezing) {
  Conv2D conv(8, {3, 3}, {.padding = "same"});
  EXPECT_THAT(conv.name(), ::testing::MatchesRegex("conv2d(_[0-9]+)?"));
  Tensor y = conv(ones({2, 6, 5, 3}));
  EXPECT_EQ(y.shape(), (Shape{2, 6, 5, 8}));
  std::vector<Variable> vars = conv.variables();
  ASSERT_EQ(vars.size(), 2u);
  EXPECT_EQ(vars[0].name(), conv.name() + "/kernel");
  EXPECT_EQ(vars[0].shape(), (Shape{3, 3, 3, 8}));
  EXPECT_EQ(vars[1].shape(), (Shape{8}));
  conv.set_trainable(false);
  EXPECT_TRUE(conv.trainable_variables().empty());
  EXPECT_EQ(conv.non_trainable_variables().size(), 2u);
}

TEST(Conv2DLayer, FunctionalShapes) {
  KerasTensor in = Input({9, 9, 2});
  KerasTensor out = Conv2D(4, {3, 3}, {.strides = {2, 2}})(in);
  EXPECT_EQ(out.shape(), (Shape{-1, 4, 4, 4}));
}

TEST(Conv2DErrors, Rank3InputNamesLayerAndShape) {
  std::string m = invalid_argument_message([] {
    Conv2D(4, {3, 3}, {.name = "c1"})(ones({2, 5, 5}));
  });
  EXPECT_THAT(m, HasSubstr("Conv2D \"c1\""));
  EXPECT_THAT(m, HasSubstr("(2, 5, 5)"));
  EXPECT_THAT(m, HasSubstr("rank 4"));
}

TEST(Conv2DErrors, OtherChannelCountAfterBuilding) {
  Conv2D conv(4, {3, 3}, {.name = "c2"});
  conv(ones({1, 5, 5, 3}));
  std::string m = invalid_argument_message([&] { conv(ones({1, 5, 5, 2})); });
  EXPECT_THAT(m, HasSubstr("Conv2D \"c2\""));
  EXPECT_THAT(m, HasSubstr("(1, 5, 5, 2)"));
  EXPECT_THAT(m, HasSubstr("(batch, 5, 5, 3)"));
}

TEST(Conv2DErrors, StridesWithDilationRejected) {
  std::string m = invalid_argument_message([] {
    Conv2D(4, {3, 3}, {.strides = {2, 1}, .dilation_rate = {1, 2}});
  });
  EXPECT_THAT(m, HasSubstr("dilation_rate"));
}

TEST(Conv2DErrors, BadOptionsNameTheLayer) {
  EXPECT_THAT(invalid_argument_message([] {
                Conv2D(4, {3, 3}, {.padding = "full", .name = "c3"});
              }),
              HasSubstr("Conv2D \"c3\": padding must be \"valid\" or \"same\", got \"full\""));
  std::string m = invalid_argument_message([] {
    Conv2D(4, {3, 3}, {.activation = "swishy", .name = "c4"});
  });
  EXPECT_THAT(m, HasSubstr("Conv2D \"c4\""));
  EXPECT_THAT(m, HasSubstr("swishy"));
  m = invalid_argument_message([] {
    Conv2D(4, {3, 3}, {.bias_initializer = "zero", .name = "c5"});
  });
  EXPECT_THAT(m, HasSubstr("Conv2D \"c5\": bias_initializer"));
  EXPECT_THAT(invalid_argument_message([] { Conv2D(0, {3, 3}); }), HasSubstr("filters"));
}

TEST(Conv2DErrors, InputSmallerThanKernel) {
  std::string m = invalid_argument_message([] {
    Conv2D(4, {5, 5}, {.name = "c6"})(ones({1, 4, 8, 1}));
  });
  EXPECT_THAT(m, HasSubstr("Conv2D \"c6\""));
  EXPECT_THAT(m, HasSubstr("(1, 4, 8, 1)"));
}

}  // namespace
}  // namespace weft::nn
