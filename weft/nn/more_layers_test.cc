// The everyday layers against NumPy (scripts/make_nn_goldens.py, group "more_layers": outputs by
// plain loops) and their gradients against finite differences in float64: Conv1D (causal,
// strided), grouped Conv2D, Conv2DTranspose, DepthwiseConv2D, SeparableConv2D, 1-D and global
// pooling, the activation layers, UpSampling2D, ZeroPadding2D, Cropping2D, Permute,
// RepeatVector, the merge layers, Normalization, Rescaling, Lambda and the noise layers; then
// each layer's config round trip.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

#include "weft/distribute/strategy.h"
#include "weft/nn/activation_layers.h"
#include "weft/nn/conv.h"
#include "weft/nn/core_layers.h"
#include "weft/nn/merging.h"
#include "weft/nn/pooling.h"
#include "weft/nn/preprocessing.h"
#include "weft/nn/reshaping.h"
#include "weft/nn/saving.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/testing/nn_goldens.h"

namespace weft::nn {
namespace {

const testing::NnGoldens& more_layers_goldens() {
  static const testing::NnGoldens g("more_layers");
  return g;
}

// Each golden case's layer, made with a dtype policy ("" or "float64").
using Factory = std::function<Layer(const std::string& dtype)>;

const std::map<std::string, Factory>& layer_cases() {
  static const std::map<std::string, Factory> m = {
      {"conv1d_causal",
       [](const std::string& d) {
         return Conv1D(4, 3, {.padding = "causal", .dilation_rate = 2, .dtype = d});
       }},
      {"conv1d_same_strided",
       [](const std::string& d) {
         return Conv1D(2, 3, {.strides = 2, .padding = "same", .dtype = d});
       }},
      {"conv2d_grouped",
       [](const std::string& d) {
         return Conv2D(6, {3, 3}, {.padding = "same", .groups = 2, .dtype = d});
       }},
      {"transpose_same",
       [](const std::string& d) {
         return Conv2DTranspose(4, {3, 3}, {.strides = {2, 2}, .padding = "same", .dtype = d});
       }},
      {"transpose_valid",
       [](const std::string& d) {
         return Conv2DTranspose(2, {2, 3}, {.strides = {2, 1}, .dtype = d});
       }},
      {"depthwise",
       [](const std::string& d) {
         return DepthwiseConv2D({3, 3}, {.depth_multiplier = 2, .dtype = d});
       }},
      {"separable",
       [](const std::string& d) {
         return SeparableConv2D(
             4, {3, 3}, {.strides = {2, 2}, .padding = "same", .depth_multiplier = 2, .dtype = d});
       }},
      {"maxpool1d", [](const std::string& d) { return MaxPooling1D(2, {.dtype = d}); }},
      {"avgpool1d_same",
       [](const std::string& d) {
         return AveragePooling1D(3, {.strides = 2, .padding = "same", .dtype = d});
       }},
      {"global_max_1d", [](const std::string& d) { return GlobalMaxPooling1D({.dtype = d}); }},
      {"global_avg_1d", [](const std::string& d) { return GlobalAveragePooling1D({.dtype = d}); }},
      {"global_max_2d", [](const std::string& d) { return GlobalMaxPooling2D({.dtype = d}); }},
      {"leaky_relu", [](const std::string& d) { return LeakyReLU(0.2, {.dtype = d}); }},
      {"elu", [](const std::string& d) { return ELU(0.7, {.dtype = d}); }},
      {"relu_options",
       [](const std::string& d) {
         return ReLU({.max_value = 0.6, .negative_slope = 0.1, .threshold = 0.2, .dtype = d});
       }},
      {"softmax_axis1", [](const std::string& d) { return Softmax(1, {.dtype = d}); }},
      {"prelu",
       [](const std::string& d) {
         return PReLU({.alpha_initializer = "ones", .shared_axes = {1}, .dtype = d});
       }},
      {"upsampling_nearest",
       [](const std::string& d) {
         return UpSampling2D({2, 3}, {.dtype = d});
       }},
      {"upsampling_bilinear",
       [](const std::string& d) {
         return UpSampling2D({2, 2}, {.interpolation = "bilinear", .dtype = d});
       }},
      {"zero_padding",
       [](const std::string& d) {
         return ZeroPadding2D({{{1, 2}, {0, 1}}}, {.dtype = d});
       }},
      {"cropping",
       [](const std::string& d) {
         return Cropping2D({{{1, 0}, {1, 2}}}, {.dtype = d});
       }},
      {"permute",
       [](const std::string& d) {
         return Permute({2, 3, 1}, {.dtype = d});
       }},
      {"repeat_vector", [](const std::string& d) { return RepeatVector(3, {.dtype = d}); }},
  };
  return m;
}

class MoreLayerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(MoreLayerGolden, OutputMatchesNumPyAndGradientsMatchDifferences) {
  const std::string& name = GetParam();
  testing::check_layer(more_layers_goldens(), name, layer_cases().at(name)(""));
  Layer f64 = layer_cases().at(name)("float64");
  Tensor x = more_layers_goldens().load(name, "x");
  f64(x);  // builds; then the golden weights, so kinks (max, relu) sit where NumPy's do
  std::vector<Variable> vars = f64.variables();
  for (size_t i = 0; i < vars.size(); ++i) {
    vars[i].assign(more_layers_goldens().load(name, testing::indexed("w", i)));
  }
  EXPECT_TRUE(testing::layer_gradient_check(f64, x));
}

INSTANTIATE_TEST_SUITE_P(All, MoreLayerGolden, ::testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (const auto& [name, f] : layer_cases()) names.push_back(name);
                           return names;
                         }()),
                         [](const auto& info) { return info.param; });

TEST(MoreLayers, ShapesFollowKeras) {
  EXPECT_EQ(Conv2DTranspose(3, {3, 3}, {.strides = {2, 2}})(ones({1, 4, 5, 2})).shape(),
            (Shape{1, 9, 11, 3}));
  EXPECT_EQ(Conv1D(5, 4, {.padding = "causal"})(ones({2, 6, 3})).shape(), (Shape{2, 6, 5}));
  EXPECT_EQ(DepthwiseConv2D({3, 3}, {.padding = "same", .depth_multiplier = 3})(ones({1, 4, 4, 2}))
                .shape(),
            (Shape{1, 4, 4, 6}));
  KerasTensor in = Input({10, 8});
  EXPECT_EQ(GlobalMaxPooling1D()(in).shape(), (Shape{-1, 8}));
  EXPECT_EQ(MaxPooling1D(3)(in).shape(), (Shape{-1, 3, 8}));
  EXPECT_EQ(Permute({2, 1})(in).shape(), (Shape{-1, 8, 10}));
}

TEST(MergeLayers, ElementwiseByHand) {
  Tensor a = testing::uniform({2, 3}, 1), b = testing::uniform({2, 3}, 2),
         c = testing::uniform({2, 3}, 3);
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(),
                      cv = c.to_vector<double>();
  auto check = [&](const Layer& layer, std::vector<Tensor> xs,
                   const std::function<double(size_t)>& want) {
    SCOPED_TRACE(layer.impl().class_name());
    std::vector<double> got = layer(xs)[0].to_vector<double>();
    ASSERT_EQ(got.size(), 6u);
    for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(got[i], want(i), 1e-15);
    EXPECT_TRUE(testing::gradient_check([&](const auto& ys) { return layer(ys)[0]; }, xs));
  };
  check(Subtract(), {a, b}, [&](size_t i) { return av[i] - bv[i]; });
  check(Multiply(), {a, b, c}, [&](size_t i) { return av[i] * bv[i] * cv[i]; });
  check(Average(), {a, b, c}, [&](size_t i) { return (av[i] + bv[i] + cv[i]) / 3; });
  check(Maximum(), {a, b, c}, [&](size_t i) { return std::max({av[i], bv[i], cv[i]}); });
  check(Minimum(), {a, b}, [&](size_t i) { return std::min(av[i], bv[i]); });
  EXPECT_THROW(Subtract()(std::vector<Tensor>{a, b, c}), InvalidArgument);
}

TEST(MergeLayers, DotMatchesNumPy) {
  Tensor x0 = more_layers_goldens().load("dot_2d", "x0"),
         x1 = more_layers_goldens().load("dot_2d", "x1");
  EXPECT_TRUE(testing::all_close(Dot(1)({x0, x1})[0], more_layers_goldens().load("dot_2d", "y")));
  EXPECT_TRUE(testing::all_close(Dot(1, {.normalize = true})({x0, x1})[0],
                                 more_layers_goldens().load("dot_2d", "y_normalized")));
  Tensor s0 = more_layers_goldens().load("dot_3d", "x0"),
         s1 = more_layers_goldens().load("dot_3d", "x1");
  Dot dot({2, 2});
  EXPECT_TRUE(testing::all_close(dot({s0, s1})[0], more_layers_goldens().load("dot_3d", "y")));
  EXPECT_TRUE(testing::gradient_check([&](const auto& xs) { return dot(xs)[0]; }, {s0, s1}));
  EXPECT_TRUE(testing::gradient_check(
      [](const auto& xs) { return Dot(1, {.normalize = true})(xs)[0]; }, {x0, x1}));
  EXPECT_THROW(Dot(1)(std::vector<Tensor>{s0, x1}), InvalidArgument);
}

TEST(Normalization, AdaptMatchesNumPyFromATensorOrABatchedDataset) {
  Tensor data = more_layers_goldens().load("normalization", "data");
  Tensor x = more_layers_goldens().load("normalization", "x");
  Normalization whole;
  whole.adapt(data);
  EXPECT_TRUE(testing::all_close(whole(x), more_layers_goldens().load("normalization", "y"), 1e-6));
  Normalization batched;
  batched.adapt(data::Dataset::from_tensor_slices(data).batch(7));  // 40 rows: 7 x 5 + 5
  std::vector<Variable> v = batched.variables();
  batched(x);
  v = batched.variables();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_TRUE(testing::all_close(cast(v[0].value(), kFloat64),
                                 more_layers_goldens().load("normalization", "mean"), 1e-6));
  EXPECT_TRUE(testing::all_close(cast(v[1].value(), kFloat64),
                                 more_layers_goldens().load("normalization", "variance"), 1e-6));
  EXPECT_EQ(v[2].value().item<int64_t>(), 40);
  EXPECT_FALSE(v[0].trainable());
  // Given statistics instead of adapt.
  Normalization given(
      {.mean = std::vector<double>{1, 2, 3}, .variance = std::vector<double>{4, 4, 4}});
  std::vector<double> y =
      given(Tensor::from_vector(std::vector<double>{3, 2, 1}, {1, 3})).to_vector<double>();
  EXPECT_THAT(y, ::testing::ElementsAre(1.0, 0.0, -1.0));
}

TEST(Rescaling, ScalesAndOffsetsAndTakesIntegers) {
  Tensor x = Tensor::from_vector(std::vector<int32_t>{0, 255, 51}, {1, 3});
  std::vector<float> y = Rescaling(1.0 / 127.5, -1)(x).to_vector<float>();
  EXPECT_THAT(y, ::testing::Pointwise(::testing::FloatNear(1e-6), {-1.0f, 1.0f, -0.6f}));
}

TEST(Lambda, CallsTheFunctionWithTrainingAndHasNoWeights) {
  Lambda twice([](const Tensor& x) { return mul(x, 2.0); });
  EXPECT_EQ(twice(Tensor::from_vector(std::vector<double>{1.5})).item<double>(), 3.0);
  EXPECT_TRUE(twice.variables().empty());
  Lambda noisy([](const Tensor& x, bool training) { return training ? add(x, 1.0) : x; }, {});
  EXPECT_EQ(noisy(Tensor::from_vector(std::vector<double>{1.0}), true).item<double>(), 2.0);
  EXPECT_EQ(noisy(Tensor::from_vector(std::vector<double>{1.0}), false).item<double>(), 1.0);
  EXPECT_THROW(Lambda(std::function<Tensor(const Tensor&)>()), InvalidArgument);
}

TEST(NoiseLayers, SpatialDropoutDropsWholeChannels) {
  Tensor x = ones({64, 5, 7, 16});
  SpatialDropout2D drop(0.25, {.seed = 3});
  Tensor y = drop(x, /*training=*/true);
  std::vector<float> v = y.to_vector<float>();
  int dropped = 0;
  for (int64_t n = 0; n < 64; ++n) {
    for (int64_t c = 0; c < 16; ++c) {
      float first = v[((n * 5 + 0) * 7 + 0) * 16 + c];
      EXPECT_TRUE(first == 0.0f || std::fabs(first - 1 / 0.75f) < 1e-6);
      for (int64_t i = 0; i < 35; ++i) ASSERT_EQ(v[(n * 35 + i) * 16 + c], first);
      dropped += first == 0.0f;
    }
  }
  EXPECT_NEAR(dropped / 1024.0, 0.25, 0.05);  // 1024 draws: 4 standard deviations is 0.054
  EXPECT_EQ(drop(x, false).to_vector<float>(), x.to_vector<float>());
  Tensor z = SpatialDropout1D(0.5, {.seed = 4})(ones({8, 6, 4}), true);
  std::vector<float> zv = z.to_vector<float>();
  for (int64_t n = 0; n < 8; ++n) {
    for (int64_t c = 0; c < 4; ++c) {
      for (int64_t t = 1; t < 6; ++t) ASSERT_EQ(zv[(n * 6 + t) * 4 + c], zv[n * 24 + c]);
    }
  }
}

TEST(NoiseLayers, GaussianNoiseHasTheStandardDeviationAndIsKeyedByExample) {
  GaussianNoise noise(0.5, {.seed = 9});
  Tensor x = zeros({400, 50});
  std::vector<float> v = noise(x, true).to_vector<float>();
  double mean = 0, sq = 0;
  for (float e : v) {
    mean += e / v.size();
    sq += static_cast<double>(e) * e / v.size();
  }
  EXPECT_NEAR(mean, 0, 0.01);  // 20000 draws: sd of the mean 0.0035
  EXPECT_NEAR(std::sqrt(sq - mean * mean), 0.5, 0.01);
  EXPECT_EQ(noise(x, false).to_vector<float>(), x.to_vector<float>());
  // In a step, example i's noise is the same whether it is computed with the rest or alone.
  Tensor all, part;
  {
    random::ExampleKeyScope key({.step = 5, .first_example = 0});
    all = noise(zeros({6, 50}), true);
  }
  {
    random::ExampleKeyScope key({.step = 5, .first_example = 4});
    part = noise(zeros({2, 50}), true);
  }
  EXPECT_EQ(slice(all, {Slice{4, 6}}).to_vector<float>(), part.to_vector<float>());
}

TEST(MoreLayers, ConfigRoundTrips) {
  std::vector<Layer> layers = {
      Conv1D(4, 3, {.padding = "causal", .dilation_rate = 2}),
      Conv2D(6, {3, 3}, {.groups = 2}),
      Conv2DTranspose(4, {3, 3}, {.strides = {2, 2}, .padding = "same"}),
      DepthwiseConv2D({3, 3}, {.depth_multiplier = 2}),
      SeparableConv2D(4, {3, 3}, {.depth_multiplier = 2}),
      MaxPooling1D(3, {.strides = 2}),
      AveragePooling1D(2),
      GlobalMaxPooling1D(),
      GlobalAveragePooling1D(),
      GlobalMaxPooling2D(),
      LeakyReLU(0.2),
      ELU(0.5),
      ReLU({.max_value = 6.0}),
      Softmax(1),
      PReLU({.shared_axes = {1, 2}}),
      UpSampling2D({2, 3}, {.interpolation = "bilinear"}),
      ZeroPadding2D({{{1, 2}, {3, 4}}}),
      Cropping2D({{{1, 0}, {0, 2}}}),
      Permute({2, 1}),
      RepeatVector(4),
      Subtract(),
      Multiply(),
      Average(),
      Maximum(),
      Minimum(),
      Dot({2, 1}, {.normalize = true}),
      SpatialDropout1D(0.3, {.seed = 1}),
      SpatialDropout2D(0.2),
      GaussianNoise(0.1, {.seed = 2}),
      Normalization({.axis = 1}),
      Rescaling(0.5, 0.25),
  };
  for (const Layer& l : layers) {
    ConfigDict c = serialize(l);
    Layer again = deserialize(ConfigDict::from_json(c.to_json()));
    EXPECT_EQ(serialize(again).to_json(), c.to_json()) << l.impl().class_name();
  }
}

}  // namespace
}  // namespace weft::nn
