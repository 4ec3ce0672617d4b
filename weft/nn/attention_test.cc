// MultiHeadAttention and Attention against NumPy (scripts/make_nn_goldens.py, group "attention":
// Keras's TF 2.4 computation and its backward pass by hand, in float64): outputs, scores and the
// gradients of inputs and weights, with and without biases, value_dim != key_dim, output_shape,
// a separate key, padding and causal masks, T != S; the learned scale, `causal`, value and query
// masks. Then finite differences, Keras's weight names, shapes and Glorot fans, dropout (off at
// inference, keyed by seed, step and example), fully masked rows (the mean of the values),
// bfloat16, configs, a saved model, and errors that name the layer.
#include "weft/nn/attention.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "weft/nn/saving.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/linalg.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/testing/nn_goldens.h"

namespace weft::nn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

const testing::NnGoldens& attention_goldens() {
  static const testing::NnGoldens g("attention");
  return g;
}
Tensor load(const std::string& name, const std::string& array) {
  return attention_goldens().load(name, array);
}
Tensor load_or_none(const std::string& name, const std::string& array) {
  return attention_goldens().has(name, array) ? load(name, array) : Tensor();
}

using Run =
    std::function<AttentionResult(const Tensor& query, const Tensor& value, const Tensor& key)>;

// Runs `layer` through `run` on the case's query, value and key (when it has one), with the
// case's weights, and checks the output, the scores and the gradients of sum(y * dy) with
// respect to the inputs and every weight.
void expect_matches_numpy(const std::string& name, const Layer& layer, const Run& run) {
  SCOPED_TRACE(name);
  Tensor q = load(name, "query"), v = load(name, "value"), k = load_or_none(name, "key");
  run(q, v, k);  // builds
  std::vector<Variable> vars = layer.variables();
  size_t golden_weights = 0;
  while (attention_goldens().has(name, testing::indexed("w", golden_weights))) ++golden_weights;
  ASSERT_EQ(vars.size(), golden_weights);
  for (size_t i = 0; i < vars.size(); ++i) vars[i].assign(load(name, testing::indexed("w", i)));
  std::vector<Tensor> sources{q, v};
  if (k.defined()) sources.push_back(k);
  const size_t first_weight = sources.size();
  for (const Variable& var : vars) sources.push_back(var.value());
  GradientTape tape;
  tape.watch(std::vector<Tensor>{q, v});
  if (k.defined()) tape.watch(k);
  AttentionResult r = run(q, v, k);
  std::vector<Tensor> grads = tape.gradient(sum(mul(r.output, load(name, "dy"))), sources);
  EXPECT_TRUE(testing::all_close(r.output, load(name, "y"))) << "output";
  EXPECT_TRUE(testing::all_close(r.scores, load(name, "scores"))) << "scores";
  EXPECT_TRUE(testing::all_close(grads[0], load(name, "dquery"))) << "d query";
  EXPECT_TRUE(testing::all_close(grads[1], load(name, "dvalue"))) << "d value";
  if (k.defined()) {
    EXPECT_TRUE(testing::all_close(grads[2], load(name, "dkey"))) << "d key";
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    Tensor want = load(name, testing::indexed("dw", i)), got = grads[first_weight + i];
    if (vars[i].name().ends_with("key/bias")) {
      // Zero in exact arithmetic (a softmax ignores a shift of a row's scores): rounding only.
      EXPECT_LT(max(abs(want)).item<double>(), 1e-14);
      EXPECT_LT(max(abs(got)).item<double>(), 1e-14);
    } else {
      EXPECT_TRUE(testing::all_close(got, want)) << "d " << vars[i].name();
    }
  }
}

// The golden cases' layers, in float64.
MultiHeadAttention mha(int64_t heads, int64_t key_dim, MultiHeadAttentionOptions o = {}) {
  o.dtype = "float64";
  return MultiHeadAttention(heads, key_dim, o);
}
Run with_mask(const MultiHeadAttention& layer, const Tensor& mask, bool causal = false) {
  return [=](const Tensor& q, const Tensor& v, const Tensor& k) {
    return layer.call(q, v, {.key = k, .attention_mask = mask, .use_causal_mask = causal});
  };
}

TEST(MultiHeadAttention, MatchesNumPyWithAndWithoutBias) {
  MultiHeadAttention basic = mha(2, 3);
  expect_matches_numpy("mha_basic", basic, with_mask(basic, Tensor()));
  MultiHeadAttention nobias = mha(3, 2, {.use_bias = false});
  expect_matches_numpy("mha_nobias", nobias, with_mask(nobias, Tensor()));
}

TEST(MultiHeadAttention, ValueDimOutputShapeKeyAndPaddingMaskMatchNumPy) {
  const std::string name = "mha_key_padding";
  MultiHeadAttention layer = mha(2, 3, {.value_dim = 4, .output_shape = 7});
  expect_matches_numpy(name, layer, with_mask(layer, load(name, "mask")));
  EXPECT_EQ(load(name, "mask").shape(), (Shape{2, 1, 5}));
  // The layer path, as a model calls it: {query, value, key, mask}, the output only.
  std::vector<Tensor> out =
      layer({load(name, "query"), load(name, "value"), load(name, "key"), load(name, "mask")});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(testing::all_close(out[0], load(name, "y")));
}

TEST(MultiHeadAttention, CausalMasksMatchNumPyGivenOrAskedFor) {
  // T = 4 queries over S = 3 steps; the (T, S) mask is lower-triangular, aligned top-left.
  MultiHeadAttention given = mha(2, 2);
  expect_matches_numpy("mha_causal", given, with_mask(given, load("mha_causal", "mask")));
  MultiHeadAttention asked = mha(2, 2);
  expect_matches_numpy("mha_causal", asked, with_mask(asked, Tensor(), /*causal=*/true));
  // use_causal_mask ANDs with a padding mask: the golden mask's last row is the padding alone.
  const std::string name = "mha_causal_padding";
  Tensor padding = slice(load(name, "mask"), {Slice{}, Slice{4, 5}});
  MultiHeadAttention both = mha(2, 3);
  expect_matches_numpy(name, both, with_mask(both, padding, /*causal=*/true));
  MultiHeadAttention numeric = mha(2, 3);  // a 0/1 float mask works as a bool one
  expect_matches_numpy(name, numeric, with_mask(numeric, cast(load(name, "mask"), kFloat64)));
}

TEST(Attention, ScaleMatchesNumPy) {
  Attention layer({.use_scale = true, .dtype = "float64"});
  expect_matches_numpy("attention_scale", layer,
                       [&](const Tensor& q, const Tensor& v, const Tensor& k) {
                         return layer.call(q, v, {.key = k});
                       });
  EXPECT_EQ(layer.variables()[0].name(), layer.name() + "/scale");
}

TEST(Attention, CausalWithValueAndQueryMasksMatchesNumPy) {
  const std::string name = "attention_causal_masks";
  Tensor query_mask = load(name, "query_mask"), value_mask = load(name, "value_mask");
  Tensor output_mask;
  Attention layer({.causal = true, .dtype = "float64"});
  expect_matches_numpy(name, layer, [&](const Tensor& q, const Tensor& v, const Tensor& k) {
    AttentionResult r =
        layer.call(with_keras_mask(q, query_mask), with_keras_mask(v, value_mask), {.key = k});
    output_mask = keras_mask(r.output);
    return r;
  });
  ASSERT_TRUE(output_mask.defined());
  EXPECT_EQ(output_mask.to_vector<bool>(), query_mask.to_vector<bool>());
  // The same by the per-call flag.
  Attention flagged({.dtype = "float64"});
  expect_matches_numpy(name, flagged, [&](const Tensor& q, const Tensor& v, const Tensor& k) {
    return flagged.call(with_keras_mask(q, query_mask), with_keras_mask(v, value_mask),
                        {.key = k, .use_causal_mask = true});
  });
}

TEST(MultiHeadAttention, GradientsMatchFiniteDifferences) {
  // One input is self-attention: the input and all eight weights through one check.
  Tensor x = testing::uniform({2, 3, 5}, 1);
  EXPECT_TRUE(testing::layer_gradient_check(
      mha(2, 3, {.value_dim = 2, .output_shape = 4, .bias_initializer = "random_normal"}), x));
  // Query, value and key, under a padding mask and a causal one.
  Tensor q = testing::uniform({2, 4, 3}, 2), v = testing::uniform({2, 5, 2}, 3),
         k = testing::uniform({2, 5, 4}, 4);
  Tensor padding = Tensor::from_vector<bool>({1, 1, 0, 1, 0, 1, 1, 1, 1, 0}, {2, 1, 5});
  MultiHeadAttention layer = mha(2, 3);
  EXPECT_TRUE(testing::gradient_check(
      [&](const std::vector<Tensor>& xs) {
        return layer
            .call(xs[0], xs[1], {.key = xs[2], .attention_mask = padding, .use_causal_mask = true})
            .output;
      },
      {q, v, k}));
}

TEST(Attention, GradientsMatchFiniteDifferences) {
  EXPECT_TRUE(testing::layer_gradient_check(
      Attention({.use_scale = true, .causal = true, .dtype = "float64"}),
      testing::uniform({2, 4, 3}, 5)));
  Tensor q = testing::uniform({2, 3, 4}, 6), v = testing::uniform({2, 5, 2}, 7),
         k = testing::uniform({2, 5, 4}, 8);
  Tensor value_mask = Tensor::from_vector<bool>({1, 0, 1, 1, 0, 1, 1, 1, 1, 1}, {2, 5});
  Tensor query_mask = Tensor::from_vector<bool>({1, 1, 0, 0, 1, 1}, {2, 3});
  Attention layer({.use_scale = true, .dtype = "float64"});
  EXPECT_TRUE(testing::gradient_check(
      [&](const std::vector<Tensor>& xs) {
        return layer(
            {with_keras_mask(xs[0], query_mask), with_keras_mask(xs[1], value_mask), xs[2]})[0];
      },
      {q, v, k}));
}

TEST(MultiHeadAttention, WeightsHaveKerasNamesShapesAndGlorotFans) {
  random::set_seed(1);
  MultiHeadAttention layer(4, 8, {.name = "mha"});
  Tensor y = layer({ones({1, 2, 32}), ones({1, 3, 16})})[0];
  EXPECT_EQ(y.shape(), (Shape{1, 2, 32}));  // the query's features
  std::vector<Variable> v = layer.variables();
  ASSERT_EQ(v.size(), 8u);
  const std::vector<std::pair<std::string, Shape>> want = {
      {"mha/query/kernel", {32, 4, 8}},
      {"mha/query/bias", {4, 8}},
      {"mha/key/kernel", {16, 4, 8}},
      {"mha/key/bias", {4, 8}},
      {"mha/value/kernel", {16, 4, 8}},
      {"mha/value/bias", {4, 8}},
      {"mha/attention_output/kernel", {4, 8, 32}},
      {"mha/attention_output/bias", {32}}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(v[i].name(), want[i].first);
    EXPECT_EQ(v[i].value().shape(), want[i].second) << want[i].first;
  }
  // EinsumDense's fans from the 3-D kernels: sqrt(6 / (D (N + H))) and sqrt(6 / (N (Hv + E))),
  // not a (D, N H) matrix's; the largest of 1024 or more draws is within 5% of the limit.
  auto largest = [](const Variable& w) { return max(abs(w.value())).item<float>(); };
  const double q_limit = std::sqrt(6.0 / (32 * (4 + 8))), out_limit = std::sqrt(6.0 / (4 * 40));
  EXPECT_LE(largest(v[0]), q_limit);
  EXPECT_GT(largest(v[0]), 0.95 * q_limit);
  EXPECT_LE(largest(v[6]), out_limit);
  EXPECT_GT(largest(v[6]), 0.95 * out_limit);
  EXPECT_EQ(max(abs(v[1].value())).item<float>(), 0.0f);
  EXPECT_EQ(
      MultiHeadAttention(2, 3, {.output_shape = 6})({Input({4, 5}), Input({7, 2})})[0].shape(),
      (Shape{-1, 4, 6}));
}

TEST(AttentionDropout, OffAtInferenceAndKeyedBySeedStepAndExample) {
  Tensor q = testing::uniform({4, 3, 6}, 9, -1, 1, kFloat32),
         v = testing::uniform({4, 5, 6}, 10, -1, 1, kFloat32);
  MultiHeadAttention dropped(2, 4, {.dropout = 0.5, .seed = 7});
  MultiHeadAttention plain(2, 4);
  Tensor inference = dropped({q, v})[0];
  plain({q, v});
  std::vector<Variable> a = dropped.variables(), b = plain.variables();
  for (size_t i = 0; i < a.size(); ++i) b[i].assign(a[i].value());
  EXPECT_EQ(inference.to_vector<float>(), plain({q, v})[0].to_vector<float>());
  auto at_step = [&](int64_t step) {
    random::ExampleKeyScope key({.step = step, .first_example = 0});
    return dropped({q, v}, /*training=*/true)[0].to_vector<float>();
  };
  EXPECT_EQ(at_step(3), at_step(3));
  EXPECT_NE(at_step(3), at_step(4));
  EXPECT_NE(at_step(3), inference.to_vector<float>());

  // Attention returns the weights after dropout: zero or (1 / Tv) / (1 - rate), since a zero
  // query attends uniformly.
  Attention att({.dropout = 0.25, .seed = 5});
  Tensor zq = zeros({64, 8, 4}), zv = testing::uniform({64, 16, 4}, 11, -1, 1, kFloat32);
  EXPECT_EQ(att.call(zq, zv).scores.to_vector<float>(), std::vector<float>(64 * 8 * 16, 1.0f / 16));
  std::vector<float> w = att.call(zq, zv, {.training = true}).scores.to_vector<float>();
  int dropped_count = 0;
  for (float e : w) {
    dropped_count += e == 0.0f;
    if (e != 0.0f) {
      EXPECT_NEAR(e, 1.0 / 16 / 0.75, 1e-7);
    }
  }
  EXPECT_NEAR(dropped_count / 8192.0, 0.25, 0.03);  // 8192 draws: 6 standard deviations
  // In a step, examples 4 and 5 get the same masks computed with the batch or alone.
  Tensor all, part;
  {
    random::ExampleKeyScope key({.step = 2, .first_example = 0});
    all = att.call(zq, zv, {.training = true}).scores;
  }
  {
    random::ExampleKeyScope key({.step = 2, .first_example = 4});
    part = att.call(slice(zq, {Slice{4, 6}}), slice(zv, {Slice{4, 6}}), {.training = true}).scores;
  }
  EXPECT_EQ(slice(all, {Slice{4, 6}}).to_vector<float>(), part.to_vector<float>());
}

TEST(AttentionMasks, AFullyMaskedRowAttendsUniformlyAsKeras) {
  // -1e9 is added, not -inf: in float32 every score of the row rounds to -1e9, and the output is
  // the mean of the values rather than NaN.
  Tensor q = testing::uniform({2, 3, 4}, 12, -1, 1, kFloat32),
         v = testing::uniform({2, 5, 4}, 13, -1, 1, kFloat32);
  Tensor none = Tensor::from_vector<bool>({0, 0, 0, 0, 0, 1, 1, 0, 1, 1}, {2, 5});
  Tensor y = Attention()({q, with_keras_mask(copy(v), none)})[0];
  Tensor mean_v = broadcast_to(mean(v, {1}, true), {2, 3, 4});
  EXPECT_TRUE(testing::all_close(slice(y, {Slice{0, 1}}), slice(mean_v, {Slice{0, 1}}), 1e-6));
  EXPECT_FALSE(testing::all_close(slice(y, {Slice{1, 2}}), slice(mean_v, {Slice{1, 2}}), 1e-3));

  MultiHeadAttention layer(2, 3);
  AttentionResult r = layer.call(q, v, {.attention_mask = reshape(none, {2, 1, 5})});
  std::vector<float> scores = slice(r.scores, {Slice{0, 1}}).to_vector<float>();
  for (float s : scores) EXPECT_NEAR(s, 0.2f, 1e-7);
  // So example 0's output is the output projection of the mean value projection.
  std::vector<Variable> w = layer.variables();
  Tensor values = add(matmul(v, reshape(w[4].value(), {4, 6})), reshape(w[5].value(), {6}));
  Tensor expected =
      add(matmul(mean(values, {1}), reshape(w[6].value(), {6, 4})), w[7].value());  // (2, 4)
  for (int64_t t = 0; t < 3; ++t) {
    EXPECT_TRUE(testing::all_close(reshape(slice(r.output, {Slice{0, 1}, Slice{t, t + 1}}), {4}),
                                   reshape(slice(expected, {Slice{0, 1}}), {4}), 1e-5));
  }
}

TEST(MultiHeadAttention, BFloat16WithinItsPrecision) {
  const std::string name = "mha_key_padding";
  MultiHeadAttention layer(2, 3, {.value_dim = 4, .output_shape = 7, .dtype = "mixed_bfloat16"});
  Tensor q = load(name, "query"), v = load(name, "value"), k = load(name, "key");
  Tensor mask = load(name, "mask");
  layer.call(q, v, {.key = k});
  std::vector<Variable> vars = layer.variables();
  for (size_t i = 0; i < vars.size(); ++i) vars[i].assign(load(name, testing::indexed("w", i)));
  AttentionResult r = layer.call(q, v, {.key = k, .attention_mask = mask});
  EXPECT_EQ(r.output.dtype(), kBFloat16);
  EXPECT_EQ(vars[0].value().dtype(), kFloat32);
  EXPECT_TRUE(testing::all_close(cast(r.output, kFloat64), load(name, "y"), 2e-2));
}

TEST(Attention, ConfigsRoundTrip) {
  std::vector<Layer> layers = {
      MultiHeadAttention(4, 8,
                         {.value_dim = 3,
                          .dropout = 0.1,
                          .use_bias = false,
                          .output_shape = 5,
                          .kernel_initializer = "he_normal",
                          .seed = 3}),
      MultiHeadAttention(2, 2),
      Attention({.use_scale = true, .causal = true, .dropout = 0.2, .seed = 4}),
      Attention(),
  };
  for (const Layer& l : layers) {
    ConfigDict c = serialize(l);
    EXPECT_EQ(serialize(deserialize(ConfigDict::from_json(c.to_json()))).to_json(), c.to_json())
        << l.impl().class_name();
  }
  ConfigDict mha = serialize(layers[1]).get_dict("config");
  EXPECT_EQ(mha.get_int("value_dim"), 2);  // resolved, as Keras's
  EXPECT_TRUE(mha.is_null("attention_axes"));
  EXPECT_TRUE(mha.is_null("output_shape"));
  mha.set("attention_axes", std::vector<int64_t>{1});
  EXPECT_EQ(MultiHeadAttention::from_config(mha).impl().class_name(), "MultiHeadAttention");
  mha.set("attention_axes", std::vector<int64_t>{1, 2});
  EXPECT_THAT([&] { MultiHeadAttention::from_config(mha); },
              ThrowsMessage<InvalidArgument>(HasSubstr("attention_axes")));
}

TEST(Attention, ASavedModelPredictsTheSameAfterLoading) {
  random::set_seed(3);
  KerasTensor query = Input({3, 5}), value = Input({4, 6}), mask = Input({3, 4}, kBool);
  KerasTensor attended = MultiHeadAttention(2, 3)({query, value, value, mask})[0];
  KerasTensor out = Attention({.use_scale = true})({attended, query})[0];
  Model model({query, value, mask}, {out}, "attend");
  Tensor xq = testing::uniform({2, 3, 5}, 14, -1, 1, kFloat32),
         xv = testing::uniform({2, 4, 6}, 15, -1, 1, kFloat32);
  Tensor xm = Tensor::from_vector<bool>(std::vector<bool>(24, true), {2, 3, 4});
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("weft_attention_test_" + std::to_string(getpid()));
  model.save(dir.string());
  Model loaded = load_model(dir.string());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(loaded({xq, xv, xm})[0].to_vector<float>(), model({xq, xv, xm})[0].to_vector<float>());
  EXPECT_EQ(loaded.weights_fingerprint(), model.weights_fingerprint());
  EXPECT_EQ(loaded.variables().size(), 9u);
}

TEST(AttentionErrors, ShapesAndOptionsNameTheLayer) {
  auto throws = [](const std::function<void()>& f, const std::string& text) {
    EXPECT_THAT(f, ThrowsMessage<InvalidArgument>(HasSubstr(text)));
  };
  MultiHeadAttention m(2, 3, {.name = "mha_e"});
  throws(
      [&] {
        m({ones({2, 3, 4, 5}), ones({2, 3, 5})});
      },
      "MultiHeadAttention \"mha_e\": query has shape (2, 3, 4, 5); expected rank 3");
  throws([&] { m({ones({2, 3, 4}), ones({3, 5, 4})}); }, "must have one batch size");
  throws([&] { m({ones({2, 3, 4}), ones({2, 5, 4}), ones({2, 4, 4})}); }, "the same steps");
  throws(
      [&] {
        m({ones({2, 3, 4}), ones({2, 5, 4}), ones({2, 5, 4}), ones({2, 3, 4}, kBool)});
      },
      "attention_mask has shape (2, 3, 4), which does not broadcast to (batch, T, S)");
  m({ones({2, 3, 4}), ones({2, 5, 4})});  // builds for 4 query features
  throws([&] { m({ones({2, 3, 6}), ones({2, 5, 4})}); }, "built for 4 query features");
  throws(
      [&] {
        m.call(ones({2, 3, 4}), ones({2, 5, 4}), {.attention_mask = ones({5, 3})});
      },
      "MultiHeadAttention \"mha_e\": attention_mask");
  throws([] { MultiHeadAttention(0, 3); }, "num_heads (0)");
  throws([] { MultiHeadAttention(2, 3, {.dropout = 1.0}); }, "dropout must be in [0, 1)");

  Attention a({.name = "att"});
  throws([&] { a({ones({2, 3}), ones({2, 3, 4})}); }, "Attention \"att\": query has shape (2, 3)");
  throws([&] { a({ones({2, 3, 4}), ones({2, 5, 2}), ones({2, 5, 3})}); }, "the same features");
  throws(
      [&] {
        a({with_keras_mask(ones({2, 3, 4}), ones({2, 4}, kBool)), ones({2, 5, 4})});
      },
      "Attention \"att\": the query's mask has shape (2, 4); expected (batch, steps) = (2, 3)");
  throws(
      [&] {
        a({ones({2, 3, 4}), ones({2, 5, 4}), ones({2, 5, 4}), ones({2, 5, 4})});
      },
      "takes {query, value, key}");
}

}  // namespace
}  // namespace weft::nn
