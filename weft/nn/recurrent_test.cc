// SimpleRNN, LSTM and GRU against NumPy (scripts/make_nn_goldens.py, group "recurrent": Keras's
// cells step by step): sequences and last outputs, masks with go_backwards and return_state,
// initial states, Bidirectional over a mask; gradients by finite differences in float64 (masks
// included); bfloat16 within its precision; Embedding(mask_zero) and Masking feeding an LSTM;
// TimeDistributed; dropout keyed by step; configs.
#include "weft/nn/recurrent.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/nn/core_layers.h"
#include "weft/nn/dense.h"
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

const testing::NnGoldens& recurrent_goldens() {
  static const testing::NnGoldens g("recurrent");
  return g;
}

Layer make(const std::string& cell, RNNOptions o) {
  if (cell == "lstm") return LSTM(4, o);
  if (cell == "gru") return GRU(3, o);
  return SimpleRNN(4, o);
}

// Builds `layer` on x and assigns the golden weights (to every copy, for Bidirectional).
void load_weights(const Layer& layer, const std::string& cell, const Tensor& x) {
  layer(std::vector<Tensor>{x});
  std::vector<Variable> vars = layer.variables();
  for (size_t i = 0; i < vars.size(); ++i) {
    vars[i].assign(recurrent_goldens().load(cell, testing::indexed("w", i % 3)));
  }
}

Tensor masked(const Tensor& x, const std::string& cell) {
  return with_keras_mask(copy(x), recurrent_goldens().load(cell, "mask"));
}

class Recurrent : public ::testing::TestWithParam<std::string> {};

TEST_P(Recurrent, SequencesAndLastOutputsMatchNumPy) {
  const std::string& cell = GetParam();
  testing::check_layer(recurrent_goldens(), cell, make(cell, {.return_sequences = true}));
  Layer last = make(cell, {});
  Tensor x = recurrent_goldens().load(cell, "x");
  load_weights(last, cell, x);
  EXPECT_TRUE(testing::all_close(last(x), recurrent_goldens().load(cell, "last")));
}

TEST_P(Recurrent, MaskedBackwardsWithStatesMatchesNumPy) {
  const std::string& cell = GetParam();
  Tensor x = recurrent_goldens().load(cell, "x");
  Layer layer = make(cell, {.return_sequences = true, .return_state = true, .go_backwards = true});
  load_weights(layer, cell, x);
  std::vector<Tensor> out = layer(std::vector<Tensor>{masked(x, cell)});
  ASSERT_EQ(out.size(), cell == "lstm" ? 3u : 2u);
  EXPECT_TRUE(testing::all_close(out[0], recurrent_goldens().load(cell, "masked_backwards_seq")));
  for (size_t k = 1; k < out.size(); ++k) {
    EXPECT_TRUE(testing::all_close(
        out[k], recurrent_goldens().load(cell, testing::indexed("masked_backwards_state", k - 1))));
  }
  // The last output is the last unmasked step's.
  Layer last = make(cell, {.go_backwards = true});
  load_weights(last, cell, x);
  EXPECT_TRUE(testing::all_close(last(masked(x, cell)),
                                 recurrent_goldens().load(cell, "masked_backwards_last")));
}

TEST_P(Recurrent, InitialStatesAreExtraInputs) {
  const std::string& cell = GetParam();
  Tensor x = recurrent_goldens().load(cell, "x");
  Layer layer = make(cell, {});
  load_weights(layer, cell, x);
  std::vector<Tensor> in{x, recurrent_goldens().load(cell, "initial0")};
  if (cell == "lstm") in.push_back(recurrent_goldens().load(cell, "initial1"));
  EXPECT_TRUE(
      testing::all_close(layer(in)[0], recurrent_goldens().load(cell, "from_initial_last")));
}

TEST_P(Recurrent, BidirectionalOverAMaskZeroesMaskedOutputs) {
  const std::string& cell = GetParam();
  Tensor x = recurrent_goldens().load(cell, "x");
  Bidirectional bi(make(cell, {.return_sequences = true}));
  load_weights(bi, cell, x);
  EXPECT_TRUE(
      testing::all_close(bi(masked(x, cell)), recurrent_goldens().load(cell, "bidirectional")));
}

TEST_P(Recurrent, GradientsMatchFiniteDifferencesWithAndWithoutAMask) {
  const std::string& cell = GetParam();
  Tensor x = recurrent_goldens().load(cell, "x");
  Layer f64 = make(cell, {.return_sequences = true, .dtype = "float64"});
  load_weights(f64, cell, x);
  EXPECT_TRUE(testing::layer_gradient_check(f64, x));
  Tensor mask = recurrent_goldens().load(cell, "mask");
  Layer back = make(cell, {.go_backwards = true, .dtype = "float64"});
  load_weights(back, cell, x);
  EXPECT_TRUE(testing::gradient_check(
      [&](const std::vector<Tensor>& xs) { return back(with_keras_mask(xs[0], mask)); }, {x}));
}

TEST_P(Recurrent, BFloat16WithinItsPrecision) {
  const std::string& cell = GetParam();
  Tensor x = recurrent_goldens().load(cell, "x");
  Layer bf16 = make(cell, {.return_sequences = true, .dtype = "mixed_bfloat16"});
  load_weights(bf16, cell, x);
  Tensor y = bf16(x);
  EXPECT_EQ(y.dtype(), kBFloat16);
  EXPECT_TRUE(testing::all_close(cast(y, kFloat64), recurrent_goldens().load(cell, "y"), 2e-2));
}

// The layer's outputs, and the gradients of a weighted sum of them with respect to the input, the
// initial states and the weights. An all-true mask sends the layer down the step-by-step path;
// without one, float32 and bfloat16 layers run on oneDNN's primitives.
std::vector<Tensor> outputs_and_gradients(const Layer& layer, const std::vector<Tensor>& in,
                                          bool masked) {
  GradientTape tape(/*persistent=*/true);
  tape.watch(in);
  std::vector<Tensor> xs = in;
  if (masked) xs[0] = with_keras_mask(copy(xs[0]), ones({xs[0].dim(0), xs[0].dim(1)}, kBool));
  std::vector<Tensor> out = layer(xs, true);
  Tensor loss = zeros({});
  for (size_t k = 0; k < out.size(); ++k) {
    Tensor w = testing::uniform(out[k].shape(), 20 + k, -1, 1, kFloat32);
    loss = add(loss, sum(mul(cast(out[k], kFloat32), w)));
  }
  std::vector<Tensor> grads = tape.gradient(loss, in);
  std::vector<Tensor> weight_grads = tape.gradient(loss, layer.variables());
  out.insert(out.end(), grads.begin(), grads.end());
  out.insert(out.end(), weight_grads.begin(), weight_grads.end());
  return out;
}

TEST_P(Recurrent, OneDnnPrimitivesGiveTheStepByStepNumbers) {
  const std::string& cell = GetParam();
  struct Case {
    RNNOptions options;
    bool initial_states;
  };
  std::vector<Case> cases = {
      {{.return_sequences = true, .return_state = true}, false},
      {{.return_state = true, .go_backwards = true}, true},
      {{.use_bias = false, .return_sequences = true}, true},
      {{.return_sequences = true, .dtype = "mixed_bfloat16"}, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.options.dtype + (c.options.go_backwards ? " go_backwards" : "") +
                 (c.initial_states ? " initial states" : ""));
    Tensor x = testing::uniform({3, 7, 5}, 30, -1, 1, kFloat32);
    std::vector<Tensor> in{x};
    Layer fused = make(cell, c.options), stepped = make(cell, c.options);
    if (c.initial_states) {
      int64_t units = cell == "gru" ? 3 : 4;
      for (int k = 0; k < (cell == "lstm" ? 2 : 1); ++k) {
        in.push_back(testing::uniform({3, units}, 31 + k, -1, 1, kFloat32));
      }
    }
    fused(in);
    stepped(in);
    std::vector<Variable> a = fused.variables(), b = stepped.variables();
    for (size_t i = 0; i < a.size(); ++i) b[i].assign(a[i].value());
    std::vector<Tensor> want = outputs_and_gradients(stepped, in, true);
    std::vector<Tensor> got = outputs_and_gradients(fused, in, false);
    ASSERT_EQ(got.size(), want.size());
    const double rtol = c.options.dtype.empty() ? 1e-5 : 2e-2;
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_TRUE(testing::all_close(cast(got[k], kFloat64), cast(want[k], kFloat64), rtol))
          << "output or gradient " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cells, Recurrent, ::testing::Values("simple", "lstm", "gru"),
                         [](const auto& info) { return info.param; });

TEST(GRU, ResetBeforeMatchesNumPy) {
  testing::check_layer(recurrent_goldens(), "gru_reset_before",
                       GRU(3, {.reset_after = false, .return_sequences = true}));
}

TEST(Masks, EmbeddingMaskZeroSkipsPaddingAsIfItWereNotThere) {
  random::set_seed(4);
  Embedding embed(10, 6, {.mask_zero = true});
  LSTM lstm(5);
  Tensor padded = Tensor::from_vector<int64_t>({3, 5, 7, 0, 0, 2, 9, 4, 1, 0}, {2, 5});
  Tensor y = lstm(embed(padded));
  Tensor first = lstm(embed(Tensor::from_vector<int64_t>({3, 5, 7}, {1, 3})));
  Tensor second = lstm(embed(Tensor::from_vector<int64_t>({2, 9, 4, 1}, {1, 4})));
  EXPECT_TRUE(testing::all_close(slice(y, {Slice{0, 1}}), first, 1e-6));
  EXPECT_TRUE(testing::all_close(slice(y, {Slice{1, 2}}), second, 1e-6));
  EXPECT_EQ(keras_mask(embed(padded)).to_vector<bool>(),
            (std::vector<bool>{1, 1, 1, 0, 0, 1, 1, 1, 1, 0}));
}

TEST(Masks, MaskingZeroesMaskedStepsAndDenseAndDropoutPassTheMaskOn) {
  Tensor x = Tensor::from_vector<float>({1, 2, 0, 0, 3, 4, 5, 6}, {1, 4, 2});
  Tensor y = Masking(0)(x);
  EXPECT_EQ(keras_mask(y).to_vector<bool>(), (std::vector<bool>{1, 0, 1, 1}));
  Tensor z = Dropout(0.5)(Dense(3)(y));
  EXPECT_EQ(keras_mask(z).to_vector<bool>(), (std::vector<bool>{1, 0, 1, 1}));
  EXPECT_FALSE(keras_mask(Flatten()(y)).defined());

  // A mask value other than zero, so that the zeroing shows: step 1 is all -1, masked and zeroed;
  // step 2 has a single -1 and is kept whole (Keras masks a step when all its features match).
  Tensor v = Tensor::from_vector<float>({1, 2, -1, -1, 3, -1, 5, 6}, {1, 4, 2});
  Tensor masked = Masking(-1)(v);
  EXPECT_EQ(keras_mask(masked).to_vector<bool>(), (std::vector<bool>{1, 0, 1, 1}));
  EXPECT_EQ(masked.to_vector<float>(), (std::vector<float>{1, 2, 0, 0, 3, -1, 5, 6}));
  auto step = [](const Tensor& t, int64_t i) { return slice(t, {Slice{}, Slice{i, i + 1}}); };
  // Dense and Dropout (at inference) compute every step as they would without the mask; the
  // masked step's zeros give Dense's bias.
  Dense dense(3, "", {.bias_initializer = "ones"});
  Tensor d = Dropout(0.5)(dense(masked));
  EXPECT_EQ(keras_mask(d).to_vector<bool>(), (std::vector<bool>{1, 0, 1, 1}));
  Tensor unmasked = dense(v);
  for (int64_t i : {0, 2, 3}) EXPECT_TRUE(testing::all_close(step(d, i), step(unmasked, i), 1e-6));
  EXPECT_EQ(step(d, 1).to_vector<float>(), (std::vector<float>{1, 1, 1}));
  // An LSTM after it skips the masked step, as if the sequence were {1, 2}, {3, -1}, {5, 6}, and
  // its output sequence carries step 0's output through the masked step, as Keras's does.
  random::set_seed(6);
  LSTM lstm(5, {.return_sequences = true});
  Tensor seq = lstm(masked);
  Tensor skipped = lstm(Tensor::from_vector<float>({1, 2, 3, -1, 5, 6}, {1, 3, 2}));
  EXPECT_EQ(step(seq, 1).to_vector<float>(), step(seq, 0).to_vector<float>());
  for (int64_t i : {0, 2, 3}) {
    EXPECT_TRUE(testing::all_close(step(seq, i), step(skipped, i == 0 ? 0 : i - 1), 1e-5))
        << "step " << i;
  }
}

TEST(TimeDistributed, AppliesTheLayerToEveryStep) {
  Tensor x = testing::uniform({2, 5, 3}, 8, -1, 1, kFloat32);
  Dense dense(4);
  TimeDistributed td(dense);
  Tensor y = td(x);
  ASSERT_EQ(y.shape(), (Shape{2, 5, 4}));
  EXPECT_TRUE(testing::all_close(y, reshape(dense(reshape(x, {10, 3})), {2, 5, 4}), 1e-6));
  EXPECT_EQ(td.variables().size(), 2u);
}

TEST(Recurrent, DropoutIsKeyedAndOffAtInference) {
  Tensor x = testing::uniform({4, 6, 3}, 9, -1, 1, kFloat32);
  LSTM lstm(5, {.dropout = 0.3, .recurrent_dropout = 0.3, .seed = 11});
  LSTM plain(5, {.seed = 11});
  Tensor inference = lstm(x, false);
  plain(x);
  std::vector<Variable> a = lstm.variables(), b = plain.variables();
  for (size_t i = 0; i < a.size(); ++i) b[i].assign(a[i].value());
  EXPECT_TRUE(testing::all_close(inference, plain(x), 1e-7));
  Tensor t1, t2;
  {
    random::ExampleKeyScope key({.step = 3, .first_example = 0});
    t1 = lstm(x, true);
  }
  {
    random::ExampleKeyScope key({.step = 3, .first_example = 0});
    t2 = lstm(x, true);
  }
  EXPECT_EQ(t1.to_vector<float>(), t2.to_vector<float>());
  EXPECT_NE(t1.to_vector<float>(), inference.to_vector<float>());
}

TEST(Recurrent, OneDnnGradientsRepeatButDoNotDifferentiateAgain) {
  Tensor x = testing::uniform({2, 4, 3}, 12, -1, 1, kFloat32);
  LSTM lstm(5, {.return_sequences = true});
  {
    GradientTape tape(/*persistent=*/true);
    tape.watch(x);
    Tensor loss = sum(mul(lstm(x), lstm(x)));
    Tensor first = tape.gradient(loss, x), second = tape.gradient(loss, x);
    EXPECT_EQ(first.to_vector<float>(), second.to_vector<float>());
  }
  GradientTape outer;
  outer.watch(x);
  Tensor dx;
  {
    GradientTape inner;
    inner.watch(x);
    dx = inner.gradient(sum(lstm(x)), x);
  }
  EXPECT_THAT([&] { outer.gradient(sum(dx), x); },
              ::testing::ThrowsMessage<FailedPrecondition>(::testing::HasSubstr("float64")));
}

TEST(Recurrent, ConfigsRoundTrip) {
  std::vector<Layer> layers = {
      LSTM(8, {.dropout = 0.1, .return_sequences = true, .go_backwards = true, .seed = 3}),
      GRU(4, {.reset_after = false, .return_state = true}),
      SimpleRNN(2, {.activation = "relu"}),
      Bidirectional(LSTM(3, {.return_sequences = true}), {.merge_mode = "sum"}),
      Masking(-1),
      TimeDistributed(Dense(5)),
  };
  for (const Layer& l : layers) {
    ConfigDict c = serialize(l);
    EXPECT_EQ(serialize(deserialize(ConfigDict::from_json(c.to_json()))).to_json(), c.to_json())
        << l.impl().class_name();
  }
}

TEST(RecurrentErrors, ShapesAndOptionsNameTheLayer) {
  EXPECT_THAT(
      [] {
        LSTM(4, {.name = "l1"})(ones({2, 3}));
      },
      ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("LSTM \"l1\"")));
  EXPECT_THROW(GRU(0), InvalidArgument);
  EXPECT_THROW(LSTM(2, {.dropout = 1.0}), InvalidArgument);
  EXPECT_THROW(Bidirectional(Dense(3)), InvalidArgument);
  EXPECT_THAT(
      [] {
        LSTM(4)(std::vector<Tensor>{ones({2, 3, 5}), ones({2, 3})});
      },
      ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("initial state")));
}

}  // namespace
}  // namespace weft::nn
