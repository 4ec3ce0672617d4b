// Flatten, Reshape, Activation and Embedding against NumPy (scripts/make_nn_goldens.py, group
// "core"): outputs and gradients. Dropout's training/inference behaviour and determinism, the
// Activation dtype option, a Functional chain's shapes, and bad input.
#include "weft/nn/core_layers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "weft/nn/conv.h"
#include "weft/nn/dense.h"
#include "weft/nn/pooling.h"
#include "weft/nn/recurrent.h"
#include "weft/nn/saving.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/nn.h"
#include "weft/ops/random.h"
#include "weft/testing/error_message.h"
#include "weft/testing/gradient_check.h"
#include "weft/testing/nn_goldens.h"

namespace weft::nn {
namespace {

using ::testing::HasSubstr;
using testing::invalid_argument_message;

const testing::NnGoldens& core_layers_goldens() {
  static const testing::NnGoldens g("core");
  return g;
}

TEST(CoreGolden, Flatten) { testing::check_layer(core_layers_goldens(), "flatten", Flatten()); }

TEST(CoreGolden, ReshapeInfersMinusOne) {
  testing::check_layer(core_layers_goldens(), "reshape", Reshape({4, -1}));
}

TEST(CoreGolden, Softmax) {
  testing::check_layer(core_layers_goldens(), "softmax", Activation("softmax"));
}

TEST(CoreGolden, Relu) { testing::check_layer(core_layers_goldens(), "relu", Activation("relu")); }

TEST(CoreGolden, EmbeddingGathersRowsAndScattersGradients) {
  testing::check_layer(core_layers_goldens(), "embedding", Embedding(7, 5));
}

TEST(Flatten, Shapes) {
  EXPECT_EQ(Flatten()(ones({3, 2, 2, 5})).shape(), (Shape{3, 20}));
  EXPECT_EQ(Flatten()(ones({3, 4})).shape(), (Shape{3, 4}));
  EXPECT_EQ(Flatten()(ones({0, 4, 2})).shape(), (Shape{0, 8}));
}

TEST(ReshapeErrors, IncompatibleTargetNamesLayerAndShapes) {
  std::string m = invalid_argument_message([] {
    Reshape({5, -1}, {.name = "r1"})(ones({2, 3, 4}));
  });
  EXPECT_THAT(m, HasSubstr("Reshape \"r1\""));
  EXPECT_THAT(m, HasSubstr("(2, 3, 4)"));
  EXPECT_THAT(m, HasSubstr("(5, -1)"));
  EXPECT_THAT(invalid_argument_message([] { Reshape({7})(ones({2, 3, 2})); }), HasSubstr("(7,)"));
  EXPECT_THAT(invalid_argument_message([] { Reshape({-1, -1}); }), HasSubstr("more than one -1"));
  EXPECT_THROW(Reshape({0, 3}), InvalidArgument);
}

TEST(Activation, DtypeOptionCastsTheInputFirst) {
  Tensor x = core_layers_goldens().load("softmax", "x");  // float64
  Tensor y = Activation("softmax", {.dtype = "float32"})(x);
  EXPECT_EQ(y.dtype(), kFloat32);
  EXPECT_TRUE(testing::all_close(y, core_layers_goldens().load("softmax", "y")));
  Tensor y16 = Activation("softmax", {.dtype = "float32"})(cast(x, kBFloat16));
  EXPECT_EQ(y16.dtype(), kFloat32);
  EXPECT_EQ(Activation("softmax")(cast(x, kBFloat16)).dtype(), kBFloat16);
}

// Every Keras activation by name, against its float64 formula (keras/activations.py, TF's split
// at 0 for elu and selu), with the tape's gradient against central differences, and its dtype
// kept; an LSTM whose gates are hard_sigmoid (the TF 1.x default many saved configs carry)
// builds and trains, on the step-by-step path (oneDNN's cells have sigmoid gates only).
TEST(Activation, EveryKerasNameMatchesItsFormulaAndGradient) {
  const double alpha = 1.6732632423543772848170429916717;
  const double scale = 1.0507009873554804934193349852946;
  const std::map<std::string, std::function<double(double)>> formulas = {
      {"elu", [](double x) { return x < 0 ? std::expm1(x) : x; }},
      {"selu", [&](double x) { return scale * (x < 0 ? alpha * std::expm1(x) : x); }},
      {"softplus", [](double x) { return std::log1p(std::exp(x)); }},
      {"softsign", [](double x) { return x / (std::fabs(x) + 1); }},
      {"swish", [](double x) { return x / (1 + std::exp(-x)); }},
      {"hard_sigmoid", [](double x) { return std::clamp(0.2 * x + 0.5, 0.0, 1.0); }},
      {"exponential", [](double x) { return std::exp(x); }}};
  const std::vector<double> xs = {-30, -3, -1, -0.5, -1e-3, 0, 1e-3, 0.5, 1, 3, 30};
  for (const auto& [name, f] : formulas) {
    SCOPED_TRACE(name);
    std::vector<double> got =
        Activation(name)(Tensor::from_vector(xs, {1, 11})).to_vector<double>();
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = f(xs[i]);
      EXPECT_NEAR(got[i], want, 1e-14 * std::max(1.0, std::fabs(want))) << "at " << xs[i];
    }
    activations::Activation fn = activations::get(name);
    EXPECT_TRUE(testing::gradient_check([&](const std::vector<Tensor>& in) { return fn(in[0]); },
                                        {testing::uniform({4, 5}, 11, -3.5, 3.5)}));
    EXPECT_EQ(fn(ones({2}, kFloat32)).dtype(), kFloat32);
  }
  // d/dx at 0 as TensorFlow's kernels give it: elu 1, selu its scale, softplus 1/2.
  for (const auto& [name, slope] :
       std::vector<std::pair<std::string, double>>{
           {"elu", 1}, {"selu", scale}, {"softplus", 0.5}}) {
    Tensor zero = zeros({1}, kFloat64);
    GradientTape tape;
    tape.watch(zero);
    Tensor y = activations::get(name)(zero);
    EXPECT_DOUBLE_EQ(tape.gradient(y, zero).item<double>(), slope) << name;
  }

  Tensor x = stateless_random_normal({16, 5, 3}, {4, 2});
  Tensor y = cast(greater(sum(x, {1, 2}), 0), kInt64);
  Sequential model({LSTM(6, {.recurrent_activation = "hard_sigmoid"}), Dense(2)});
  model.compile(optim::Adam(0.05), losses::SparseCategoricalCrossentropy({.from_logits = true}),
                std::vector<std::string>{});
  train::History h = model.fit(data::Dataset::from_tensor_slices({x, y}).batch(8),
                               {.epochs = 10, .verbose = 0});
  EXPECT_LT(h.history["loss"].back(), 0.5 * h.history["loss"].front());
}

TEST(ActivationErrors, UnknownNameOrDtypeNamesTheLayer) {
  std::string m = invalid_argument_message([] { Activation("softmaxx", {.name = "a1"}); });
  EXPECT_THAT(m, HasSubstr("Activation \"a1\""));
  EXPECT_THAT(m, HasSubstr("softmaxx"));
  m = invalid_argument_message([] { Activation("relu", {.dtype = "float33", .name = "a2"}); });
  EXPECT_THAT(m, HasSubstr("Activation \"a2\""));
  EXPECT_THAT(m, HasSubstr("float33"));
  EXPECT_THAT(invalid_argument_message([] { Activation("relu", {.dtype = "int32"}); }),
              HasSubstr("floating"));
}

TEST(Dropout, IdentityAtInference) {
  Tensor x = stateless_random_normal({4, 6}, {1, 2}, 0, 1, kFloat64);
  Dropout drop(0.5, {.seed = 1});
  EXPECT_EQ(drop(x).to_vector<double>(), x.to_vector<double>());
  EXPECT_EQ(drop(x, false).to_vector<double>(), x.to_vector<double>());
  EXPECT_EQ(Dropout(0.0)(x, true).to_vector<double>(), x.to_vector<double>());
}

TEST(Dropout, TrainingZeroesAboutRateAndScalesTheRest) {
  const double rate = 0.4;
  Dropout drop(rate, {.seed = 42});
  Tensor x = ones({50, 40}, kFloat64);
  GradientTape tape;
  tape.watch(x);
  Tensor y = drop(x, true);
  Tensor dx = tape.gradient(sum(y), x);
  EXPECT_EQ(y.dtype(), kFloat64);
  int zeros_count = 0;
  for (double v : y.to_vector<double>()) {
    if (v == 0) {
      ++zeros_count;
    } else {
      EXPECT_DOUBLE_EQ(v, 1 / (1 - rate));
    }
  }
  EXPECT_NEAR(zeros_count / 2000.0, rate, 0.05);
  // The gradient is the same mask, scaled the same way.
  EXPECT_EQ(dx.to_vector<double>(), y.to_vector<double>());
  EXPECT_EQ(drop(ones({2, 40}), true).dtype(), kFloat32);
}

TEST(Dropout, DeterministicForASeedAndCallSequence) {
  Tensor x = ones({20, 30});
  Dropout a(0.5, {.seed = 42}), b(0.5, {.seed = 42}), c(0.5, {.seed = 43});
  std::vector<float> a1 = a(x, true).to_vector<float>(), a2 = a(x, true).to_vector<float>();
  EXPECT_EQ(b(x, true).to_vector<float>(), a1);
  EXPECT_EQ(b(x, true).to_vector<float>(), a2);
  EXPECT_NE(a1, a2);  // every call draws a new mask
  EXPECT_NE(c(x, true).to_vector<float>(), a1);
  a(x, false);  // inference calls draw nothing
  EXPECT_EQ(a(x, true).to_vector<float>(), b(x, true).to_vector<float>());
}

TEST(Dropout, UnseededLayersFollowTheGlobalSeed) {
  Tensor x = ones({10, 10});
  random::set_seed(7);
  std::vector<float> first = Dropout(0.3)(x, true).to_vector<float>();
  std::vector<float> second = Dropout(0.3)(x, true).to_vector<float>();
  EXPECT_NE(first, second);
  random::set_seed(7);
  EXPECT_EQ(Dropout(0.3)(x, true).to_vector<float>(), first);
  EXPECT_EQ(Dropout(0.3)(x, true).to_vector<float>(), second);
}

TEST(DropoutErrors, RateOutOfRange) {
  EXPECT_THAT(invalid_argument_message([] { Dropout(1.0, {.name = "dr"}); }),
              HasSubstr("Dropout \"dr\": rate must be in [0, 1), got 1"));
  EXPECT_THROW(Dropout(-0.1), InvalidArgument);
  // Built on 5 steps, it takes 3 (a sequence model generating text one step at a time).
  Dropout drop(0.5);
  drop(ones({2, 5, 4}));
  EXPECT_EQ(drop(ones({2, 3, 4})).shape(), (Shape{2, 3, 4}));
}

TEST(Embedding, ShapesWeightsAndFloatIds) {
  // A random table, so that every gathered row can be told from every other.
  Embedding embed(10, 3, {.embeddings_initializer = "random_uniform", .name = "emb"});
  std::vector<int32_t> id_list{1, 2, 9, 0, 4, 4};
  Tensor ids = Tensor::from_vector<int32_t>(id_list, {2, 3});
  Tensor y = embed(ids);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 3}));
  ASSERT_EQ(embed.variables().size(), 1u);
  EXPECT_EQ(embed.variables()[0].name(), "emb/embeddings");
  EXPECT_EQ(embed.variables()[0].shape(), (Shape{10, 3}));
  std::vector<float> table = embed.variables()[0].value().to_vector<float>();
  std::vector<float> got = y.to_vector<float>();
  for (size_t i = 0; i < id_list.size(); ++i) {
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(got[i * 3 + k], table[id_list[i] * 3 + k]) << "id " << id_list[i];
    }
  }
  EXPECT_NE(table[1 * 3], table[2 * 3]);  // the rows differ
  EXPECT_EQ(embed(cast(ids, kFloat32)).to_vector<float>(), got);
  KerasTensor out = embed(Input({3}, kInt64));
  EXPECT_EQ(out.shape(), (Shape{-1, 3, 3}));
}

TEST(PositionEmbedding, GivesEachStepItsRowForEveryExampleAndLearnsIt) {
  PositionEmbedding pos(6, {.name = "pos"});
  Tensor x = testing::uniform({2, 4, 3}, 5, -1, 1, kFloat32);
  GradientTape tape;
  Tensor y = pos(x);
  ASSERT_EQ(y.shape(), x.shape());
  ASSERT_EQ(pos.variables().size(), 1u);
  EXPECT_EQ(pos.variables()[0].name(), "pos/embeddings");
  EXPECT_EQ(pos.variables()[0].shape(), (Shape{6, 3}));
  std::vector<float> table = pos.variables()[0].value().to_vector<float>();
  std::vector<float> got = y.to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], table[i % 12]) << i;  // rows 0..3
  // Each used row's gradient sums the upstream gradient over the batch; rows 4, 5 get none.
  Tensor dy = testing::uniform({2, 4, 3}, 6, -1, 1, kFloat32);
  std::vector<float> g = tape.gradient(sum(mul(y, dy)), pos.variables())[0].to_vector<float>();
  std::vector<float> d = dy.to_vector<float>();
  for (size_t i = 0; i < 18; ++i) {
    EXPECT_FLOAT_EQ(g[i], i < 12 ? d[i] + d[i + 12] : 0.0f) << i;
  }
  EXPECT_EQ(pos(ones({1, 6, 3})).shape(), (Shape{1, 6, 3}));  // any steps up to sequence_length
  EXPECT_THROW(pos(ones({1, 7, 3})), InvalidArgument);
  EXPECT_THROW(PositionEmbedding(0), InvalidArgument);
  ConfigDict c = serialize(pos);
  EXPECT_EQ(serialize(deserialize(ConfigDict::from_json(c.to_json()))).to_json(), c.to_json());
}

TEST(EmbeddingErrors, IdOutOfRangeNamesTheLayer) {
  Embedding embed(5, 2, {.name = "e1"});
  std::string m = invalid_argument_message([&] {
    embed(Tensor::from_vector<int64_t>({0, 5, 1}, {3, 1}));
  });
  EXPECT_THAT(m, HasSubstr("Embedding \"e1\""));
  EXPECT_THAT(m, HasSubstr("[0, 5)"));
  EXPECT_THAT(m, HasSubstr("(3, 1)"));
  EXPECT_THROW(embed(Tensor::from_vector<int64_t>({-1}, {1, 1})), InvalidArgument);
  EXPECT_THAT(invalid_argument_message(
                  [] { Embedding(5, 2, {.embeddings_initializer = "uniform", .name = "e2"}); }),
              HasSubstr("Embedding \"e2\": embeddings_initializer"));
}

TEST(Functional, SmallConvNetShapes) {
  KerasTensor in = Input({28, 28, 1});
  KerasTensor x = Conv2D(4, {3, 3}, {.activation = "relu"})(in);
  x = MaxPooling2D()(x);
  x = Dropout(0.25)(x);
  x = Flatten()(x);
  x = Dense(10)(x);
  KerasTensor out = Activation("softmax", {.dtype = "float32"})(x);
  EXPECT_EQ(out.shape(), (Shape{-1, 10}));
  EXPECT_EQ(out.dtype(), kFloat32);
  KerasTensor r = Reshape({-1, 2})(Input({3, 4}));
  EXPECT_EQ(r.shape(), (Shape{-1, 6, 2}));
}

}  // namespace
}  // namespace weft::nn
