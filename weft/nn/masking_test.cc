// Keras's masks (TF 2.4): which layers pass a mask on, merge it, consume it or drop it (the table
// in docs/training.md), and a compiled model's use of its output's mask (compile_utils.apply_mask):
// the mask weighs the loss (SUM_OVER_BATCH_SIZE: the weighted sum over every step, padded ones
// included in the divisor) and the compiled metrics (a mean over the unmasked steps). References
// are float64 loops over the same weights and inputs, written from Keras's formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "weft/nn/activation_layers.h"
#include "weft/nn/attention.h"
#include "weft/nn/conv.h"
#include "weft/nn/core_layers.h"
#include "weft/nn/dense.h"
#include "weft/nn/merging.h"
#include "weft/nn/model.h"
#include "weft/nn/normalization.h"
#include "weft/nn/pooling.h"
#include "weft/nn/recurrent.h"
#include "weft/nn/reshaping.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/random.h"
#include "weft/ops/shape_ops.h"
#include "weft/optim/sgd.h"

namespace weft::nn {
namespace {

constexpr int64_t kB = 4, kT = 5, kVocab = 7, kDim = 3, kClasses = 4;

// Ids with padding (0) at the end of three of the four sequences, and labels at every step.
Tensor padded_ids() {
  return Tensor::from_vector(std::vector<int64_t>{3, 1, 4, 0, 0,  //
                                                  2, 6, 5, 1, 3,  //
                                                  5, 0, 0, 0, 0,  //
                                                  1, 1, 2, 6, 0},
                             {kB, kT});
}
Tensor step_labels(int64_t padded_label) {
  std::vector<int64_t> y{1, 0, 3, 9, 9, 2, 2, 1, 0, 3, 3, 9, 9, 9, 9, 0, 1, 2, 3, 9};
  for (int64_t& v : y) v = v == 9 ? padded_label : v;
  return Tensor::from_vector(y, {kB, kT});
}

std::vector<double> as_doubles(const Tensor& t) { return cast(t, kFloat64).to_vector<double>(); }

// Keras's sparse crossentropy from logits and its softmax, in float64, for one step's logits.
struct StepLoss {
  double loss;
  std::vector<double> p;  // softmax
};
StepLoss crossentropy(const double* z, int64_t label) {
  double top = z[0];
  for (int64_t c = 1; c < kClasses; ++c) top = std::max(top, z[c]);
  std::vector<double> p(kClasses);
  double total = 0;
  for (int64_t c = 0; c < kClasses; ++c) total += p[c] = std::exp(z[c] - top);
  for (double& v : p) v /= total;
  return {-std::log(p[label]), p};
}

// Embedding(mask_zero) -> Dense logits, one SGD step through train_on_batch: the loss it logs,
// its accuracy and every weight after the step match Keras's masked loss computed by hand:
// L = sum_bt m_bt * ce_bt / (B * T), accuracy = sum_bt m_bt * hit_bt / sum_bt m_bt.
TEST(Masking, CompiledLossMetricsAndStepWeighMaskedStepsZero) {
  random::set_seed(11);
  Embedding embed(kVocab, kDim, {.mask_zero = true});
  Dense head(kClasses);
  Sequential model({embed, head});
  const double lr = 0.5;
  model.compile(optim::SGD({.learning_rate = lr}),
                losses::SparseCategoricalCrossentropy({.from_logits = true}), {"accuracy"});
  Tensor ids = padded_ids(), y = step_labels(2);
  model(ids);  // builds
  std::vector<double> e = as_doubles(embed.variables()[0]), w = as_doubles(head.variables()[0]),
                      b = as_doubles(head.variables()[1]);
  std::vector<int64_t> id = ids.to_vector<int64_t>(), label = y.to_vector<int64_t>();

  double loss = 0, hits = 0, unmasked = 0;
  std::vector<double> de(e.size()), dw(w.size()), db(b.size());
  for (int64_t s = 0; s < kB * kT; ++s) {
    const double* x = &e[id[s] * kDim];
    std::vector<double> z(b);
    for (int64_t c = 0; c < kClasses; ++c)
      for (int64_t k = 0; k < kDim; ++k) z[c] += x[k] * w[k * kClasses + c];
    if (id[s] == 0) continue;  // masked: weighs 0 in the loss, its gradient and the metric
    auto [l, p] = crossentropy(z.data(), label[s]);
    loss += l / (kB * kT);
    int64_t best = std::max_element(z.begin(), z.end()) - z.begin();
    hits += best == label[s];
    unmasked += 1;
    for (int64_t c = 0; c < kClasses; ++c) {
      double dz = (p[c] - (c == label[s])) / (kB * kT);
      db[c] += dz;
      for (int64_t k = 0; k < kDim; ++k) {
        dw[k * kClasses + c] += x[k] * dz;
        de[id[s] * kDim + k] += w[k * kClasses + c] * dz;
      }
    }
  }
  std::map<std::string, double> logs = model.train_on_batch({ids, y});
  EXPECT_NEAR(logs["loss"], loss, 1e-6);
  EXPECT_NEAR(logs["accuracy"], hits / unmasked, 1e-12);
  auto expect_stepped = [&](const Variable& v, const std::vector<double>& before,
                            const std::vector<double>& grad) {
    std::vector<double> after = as_doubles(v);
    for (size_t i = 0; i < after.size(); ++i)
      EXPECT_NEAR(after[i], before[i] - lr * grad[i], 1e-6) << v.name() << "[" << i << "]";
  };
  expect_stepped(embed.variables()[0], e, de);
  expect_stepped(head.variables()[0], w, dw);
  expect_stepped(head.variables()[1], b, db);
  // evaluate weighs the same way: on the stepped weights, padded steps' labels change nothing.
  data::Dataset one = data::Dataset::from_tensors({ids, y});
  data::Dataset other = data::Dataset::from_tensors({ids, step_labels(0)});
  EXPECT_EQ(model.evaluate(one), model.evaluate(other));
}

// The model, Embedding(mask_zero) -> LSTM(return_sequences) -> Dense: the labels of
// padded steps change neither the loss and accuracy fit reports nor the weights it trains, and
// evaluate's loss and accuracy are Keras's masked ones over the model's own predictions.
TEST(Masking, SequenceModelIgnoresPaddedStepsInFitAndEvaluate) {
  auto train = [](int64_t padded_label) {
    random::set_seed(5);
    Sequential model({Embedding(kVocab, kDim, {.mask_zero = true}),
                      LSTM(6, {.return_sequences = true}), Dense(kClasses)});
    model.compile(optim::SGD({.learning_rate = 0.3}),
                  losses::SparseCategoricalCrossentropy({.from_logits = true}), {"accuracy"});
    data::Dataset ds =
        data::Dataset::from_tensor_slices({padded_ids(), step_labels(padded_label)}).batch(2);
    History h = model.fit(ds, {.epochs = 2, .verbose = 0});
    return std::make_pair(model, h);
  };
  auto [a, ha] = train(2);
  auto [b, hb] = train(0);
  EXPECT_EQ(a.weights_fingerprint(), b.weights_fingerprint());
  EXPECT_EQ(ha.history["loss"], hb.history["loss"]);
  EXPECT_EQ(ha.history["accuracy"], hb.history["accuracy"]);

  Tensor ids = padded_ids(), y = step_labels(2);
  std::vector<double> z = as_doubles(a(ids));
  std::vector<int64_t> id = ids.to_vector<int64_t>(), label = y.to_vector<int64_t>();
  double loss = 0, hits = 0, unmasked = 0;
  for (int64_t s = 0; s < kB * kT; ++s) {
    if (id[s] == 0) continue;
    const double* zs = &z[s * kClasses];
    loss += crossentropy(zs, label[s]).loss / (kB * kT);
    hits += std::max_element(zs, zs + kClasses) - zs == label[s];
    unmasked += 1;
  }
  std::map<std::string, double> got = a.evaluate(data::Dataset::from_tensors({ids, y}));
  EXPECT_NEAR(got["loss"], loss, 1e-6);
  EXPECT_NEAR(got["accuracy"], hits / unmasked, 1e-12);
}

// ---- the mask audit ---------------------------------------------------------------------------

// (2, 4, 3) features whose steps carry the mask [[1, 1, 0, 0], [1, 0, 1, 1]].
Tensor step_mask() {
  return Tensor::from_vector(std::vector<bool>{true, true, false, false, true, false, true, true},
                             {2, 4});
}
Tensor masked_features(int64_t seed = 1) {
  return with_keras_mask(stateless_random_normal({2, 4, 3}, {seed, 2}), step_mask());
}

// Keras 2.4's supports_masking: these layers pass a (batch, steps) mask on unchanged.
TEST(Masking, LayersThatSupportMaskingPassItOn) {
  std::map<std::string, Layer> passing{
      {"Dense", Dense(5)},
      {"Activation", Activation("tanh")},
      {"Dropout", Dropout(0.5)},
      {"SpatialDropout1D", SpatialDropout1D(0.5)},
      {"GaussianNoise", GaussianNoise(0.1)},
      {"BatchNormalization", BatchNormalization()},
      {"LayerNormalization", LayerNormalization()},
      {"LeakyReLU", LeakyReLU()},
      {"PReLU", PReLU()},
      {"ELU", ELU()},
      {"ReLU", ReLU()},
      {"Softmax", Softmax()},
      {"TimeDistributed", TimeDistributed(Dense(2))},
      {"SimpleRNN", SimpleRNN(2, {.return_sequences = true})},
      {"GRU", GRU(2, {.return_sequences = true})},
      {"LSTM", LSTM(2, {.return_sequences = true})},
      {"Bidirectional", Bidirectional(LSTM(2, {.return_sequences = true}))},
  };
  for (auto& [name, layer] : passing) {
    for (bool training : {false, true}) {
      Tensor y = layer(masked_features(), training);
      ASSERT_TRUE(keras_mask(y).defined()) << name;
      EXPECT_EQ(keras_mask(y).to_vector<bool>(), step_mask().to_vector<bool>()) << name;
    }
  }
}

// Keras 2.4's layers without supports_masking, and those whose output has no steps, drop it.
TEST(Masking, OtherLayersDropIt) {
  std::map<std::string, Layer> dropping{
      {"Conv1D", Conv1D(2, 2)},
      {"MaxPooling1D", MaxPooling1D()},
      {"AveragePooling1D", AveragePooling1D()},
      {"GlobalMaxPooling1D", GlobalMaxPooling1D()},
      {"GlobalAveragePooling1D", GlobalAveragePooling1D()},
      {"Flatten", Flatten()},
      {"Reshape", Reshape({12})},
      {"Permute", Permute({2, 1})},
      {"LSTM (last output)", LSTM(2)},
      {"Lambda", Lambda([](const Tensor& x) { return mul(x, 2.0); })},
  };
  for (auto& [name, layer] : dropping) {
    EXPECT_FALSE(keras_mask(layer(masked_features())).defined()) << name;
  }
  // A recurrent layer's states carry none; Bidirectional's two unmerged sequences both do.
  std::vector<Tensor> with_states = LSTM(
      2, {.return_sequences = true, .return_state = true})(std::vector<Tensor>{masked_features()});
  ASSERT_EQ(with_states.size(), 3u);
  EXPECT_TRUE(keras_mask(with_states[0]).defined());
  EXPECT_FALSE(keras_mask(with_states[1]).defined());
  EXPECT_FALSE(keras_mask(with_states[2]).defined());
  std::vector<Tensor> unmerged =
      Bidirectional(LSTM(2, {.return_sequences = true}),
                    {.merge_mode = "none"})(std::vector<Tensor>{masked_features()});
  ASSERT_EQ(unmerged.size(), 2u);
  for (const Tensor& y : unmerged) {
    ASSERT_TRUE(keras_mask(y).defined());
    EXPECT_EQ(keras_mask(y).to_vector<bool>(), step_mask().to_vector<bool>());
  }
  // MultiHeadAttention reads only its attention_mask argument in TF 2.4; Attention passes the
  // query's mask on.
  Tensor q = masked_features(3), v = stateless_random_normal({2, 4, 3}, {4, 4});
  EXPECT_FALSE(keras_mask(MultiHeadAttention(1, 2)(std::vector<Tensor>{q, v})[0]).defined());
  Tensor attended = Attention()(std::vector<Tensor>{q, v})[0];
  ASSERT_TRUE(keras_mask(attended).defined());
  EXPECT_EQ(keras_mask(attended).to_vector<bool>(), step_mask().to_vector<bool>());
}

// Keras's _Merge.compute_mask: a step is kept where every masked input keeps it; Concatenate
// spreads each mask over its input's features (all true without one) before joining them; Dot
// drops masks.
TEST(Masking, MergingLayersCombineMasks) {
  Tensor other_mask = Tensor::from_vector(
      std::vector<bool>{true, false, true, false, true, true, true, false}, {2, 4});
  Tensor a = masked_features(1);
  Tensor b = with_keras_mask(stateless_random_normal({2, 4, 3}, {2, 2}), other_mask);
  Tensor plain = stateless_random_normal({2, 4, 3}, {3, 3});
  const std::vector<bool> both{true, false, false, false, true, false, true, false};
  for (Layer merge : {Layer(Add()), Layer(Multiply()), Layer(Average()), Layer(Subtract()),
                      Layer(Maximum()), Layer(Minimum()), Layer(Concatenate())}) {
    Tensor y = merge(std::vector<Tensor>{a, b})[0];
    ASSERT_TRUE(keras_mask(y).defined()) << merge.name();
    EXPECT_EQ(keras_mask(y).to_vector<bool>(), both) << merge.name();
    Tensor half = merge(std::vector<Tensor>{a, plain})[0];
    EXPECT_EQ(keras_mask(half).to_vector<bool>(), step_mask().to_vector<bool>()) << merge.name();
    EXPECT_FALSE(keras_mask(merge(std::vector<Tensor>{plain, plain})[0]).defined()) << merge.name();
  }
  // Along the steps, the steps' masks follow one another.
  Tensor steps = Concatenate(1)(std::vector<Tensor>{a, plain})[0];
  ASSERT_EQ(keras_mask(steps).shape(), (Shape{2, 8}));
  EXPECT_EQ(keras_mask(steps).to_vector<bool>(),
            (std::vector<bool>{1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1}));
  EXPECT_FALSE(keras_mask(Dot(2)(std::vector<Tensor>{a, b})[0]).defined());
}

// GlobalAveragePooling1D averages only the steps kept: sum(x * mask) / sum(mask) per sequence (a
// sequence with every step masked gives NaN, as Keras's 0 / 0), and leaves no mask; padding a
// sequence with Embedding's id 0 then changes nothing.
TEST(Masking, GlobalAveragePooling1DAveragesTheStepsKept) {
  Tensor x = masked_features();
  Tensor y = GlobalAveragePooling1D()(x);
  EXPECT_FALSE(keras_mask(y).defined());
  std::vector<double> xv = as_doubles(x), yv = as_doubles(y);
  std::vector<bool> m = step_mask().to_vector<bool>();
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t c = 0; c < 3; ++c) {
      double total = 0, kept = 0;
      for (int64_t t = 0; t < 4; ++t) {
        if (!m[n * 4 + t]) continue;
        total += xv[(n * 4 + t) * 3 + c];
        kept += 1;
      }
      EXPECT_NEAR(yv[n * 3 + c], total / kept, 1e-6) << n << ", " << c;
    }
  }
  Tensor none_kept = with_keras_mask(copy(x), zeros({2, 4}, kBool));
  for (double v : as_doubles(GlobalAveragePooling1D()(none_kept))) EXPECT_TRUE(std::isnan(v));

  random::set_seed(2);
  Sequential model(
      {Embedding(kVocab, kDim, {.mask_zero = true}), GlobalAveragePooling1D(), Dense(2)});
  Tensor short_ids = Tensor::from_vector(std::vector<int64_t>{3, 1, 4, 5, 2, 6}, {2, 3});
  Tensor padded = Tensor::from_vector(std::vector<int64_t>{3, 1, 4, 0, 0, 5, 2, 6, 0, 0}, {2, 5});
  std::vector<double> a = as_doubles(model(short_ids)), b = as_doubles(model(padded));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6);
}

// Softmax over the steps (inputs of the mask's shape) gives masked steps nothing, as Keras's
// Softmax(inputs, mask); over wider inputs it passes the mask on and computes as without it.
TEST(Masking, SoftmaxOverStepsHidesMaskedSteps) {
  Tensor scores = with_keras_mask(stateless_random_normal({2, 4}, {6, 6}), step_mask());
  std::vector<double> s = as_doubles(scores), p = as_doubles(Softmax()(scores));
  std::vector<bool> m = step_mask().to_vector<bool>();
  for (int64_t n = 0; n < 2; ++n) {
    double total = 0;
    for (int64_t t = 0; t < 4; ++t) total += m[n * 4 + t] ? std::exp(s[n * 4 + t]) : 0.0;
    for (int64_t t = 0; t < 4; ++t) {
      double expected = m[n * 4 + t] ? std::exp(s[n * 4 + t]) / total : 0.0;
      EXPECT_NEAR(p[n * 4 + t], expected, 1e-6) << n << ", " << t;
    }
  }
  Tensor wide = masked_features();
  EXPECT_EQ(Softmax()(wide).to_vector<float>(),
            Softmax()(stateless_random_normal({2, 4, 3}, {1, 2})).to_vector<float>());
}

}  // namespace
}  // namespace weft::nn
