// Keras's regularizers and constraints: each formula against a float64 loop; a layer's penalties
// as model.losses, added once per global batch to the training loss fit minimises and reports;
// constraints applied after each update; names, configs and saved models; and a model using every
// regularizer, constraint and named activation training under MirroredStrategy (--deterministic)
// to the bits it trains to alone, before and after a save and load.
#include "weft/nn/regularizers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "weft/core/config.h"
#include "weft/distribute/mirrored_strategy.h"
#include "weft/nn/conv.h"
#include "weft/nn/core_layers.h"
#include "weft/nn/dense.h"
#include "weft/nn/model.h"
#include "weft/nn/pooling.h"
#include "weft/nn/recurrent.h"
#include "weft/nn/saving.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/optim/sgd.h"

namespace weft::nn {
namespace {

std::vector<double> as_doubles(const Tensor& t) { return cast(t, kFloat64).to_vector<double>(); }

TEST(Regularizers, PenaltiesAreKerasFormulas) {
  Tensor x = stateless_random_normal({3, 4}, {1, 1});
  double abs_sum = 0, square_sum = 0;
  for (double v : as_doubles(x)) {
    abs_sum += std::abs(v);
    square_sum += v * v;
  }
  EXPECT_NEAR(regularizers::l1(0.3)(x).item<double>(), 0.3 * abs_sum, 1e-5);
  EXPECT_NEAR(regularizers::l2(0.2)(x).item<double>(), 0.2 * square_sum, 1e-5);
  EXPECT_NEAR(regularizers::l1_l2(0.3, 0.2)(x).item<double>(), 0.3 * abs_sum + 0.2 * square_sum,
              1e-5);
  // Names take Keras's default factor, 0.01; configs are Keras's.
  EXPECT_NEAR(Regularizer("l2")(x).item<double>(), 0.01 * square_sum, 1e-6);
  EXPECT_NEAR(Regularizer("l1_l2")(x).item<double>(), 0.01 * (abs_sum + square_sum), 1e-6);
  EXPECT_EQ(regularizers::l2(0.2).serialize().to_json(),
            R"({"class_name":"L2","config":{"l2":0.2}})");
  EXPECT_EQ(Regularizer::deserialize(regularizers::l1_l2(0.3, 0.2).serialize())(x).item<double>(),
            regularizers::l1_l2(0.3, 0.2)(x).item<double>());
  EXPECT_THAT([] { Regularizer("l3"); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  ::testing::HasSubstr("unknown regularizer \"l3\"; known names: l1, l1_l2, l2")));
  ConfigDict custom = ConfigDict().set("class_name", "Odd").set("config", ConfigDict());
  EXPECT_THAT([&] { Regularizer::deserialize(custom); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  ::testing::HasSubstr("weft::nn::register_regularizer(\"Odd\", factory)")));
}

// Column norms over axis 0 of a (3, 4) matrix, from a float64 loop.
std::vector<double> column_norms(const std::vector<double>& w) {
  std::vector<double> n(4, 0.0);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) n[c] += w[r * 4 + c] * w[r * 4 + c];
  for (double& v : n) v = std::sqrt(v);
  return n;
}

TEST(Constraints, ProjectionsAreKerasFormulas) {
  Tensor w = mul(stateless_random_normal({3, 4}, {2, 2}), 2.0);
  std::vector<double> wv = as_doubles(w), norm = column_norms(wv);
  auto check = [&](const Constraint& k, auto expected_scale, const char* what) {
    std::vector<double> got = as_doubles(k(w));
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 4; ++c) {
        EXPECT_NEAR(got[r * 4 + c], wv[r * 4 + c] * expected_scale(c, wv[r * 4 + c]), 1e-5)
            << what << " [" << r << ", " << c << "]";
      }
    }
  };
  const double eps = 1e-7;
  check(
      constraints::max_norm(1.5),
      [&](int c, double) { return std::min(norm[c], 1.5) / (eps + norm[c]); }, "max_norm");
  check(
      constraints::min_max_norm(2.0, 2.5, 0.5),
      [&](int c, double) {
        double clipped = std::clamp(norm[c], 2.0, 2.5);
        return (0.5 * clipped + 0.5 * norm[c]) / (eps + norm[c]);
      },
      "min_max_norm");
  check(
      constraints::non_neg(), [](int, double v) { return v >= 0 ? 1.0 : 0.0; }, "non_neg");
  check(
      Constraint("unit_norm"), [&](int c, double) { return 1.0 / (eps + norm[c]); }, "unit_norm");
  // Several axes: a conv kernel's filters have unit norm over (kh, kw, in).
  Tensor kernel = stateless_random_normal({2, 2, 3, 5}, {3, 3});
  Tensor unit = constraints::unit_norm({0, 1, 2})(kernel);
  std::vector<double> n = as_doubles(sqrt(sum(square(unit), {0, 1, 2})));
  for (double v : n) EXPECT_NEAR(v, 1.0, 1e-5);
  EXPECT_EQ(constraints::max_norm(3, {0, 1, 2}).serialize().to_json(),
            R"({"class_name":"MaxNorm","config":{"axis":[0,1,2],"max_value":3.0}})");
  EXPECT_EQ(constraints::non_neg().serialize().to_json(), R"({"class_name":"NonNeg","config":{}})");
}

// A linear Dense layer with a kernel, a bias and an activity regularizer, one SGD step on MSE: the
// reported loss is the data loss plus every penalty, and the step follows the gradient of that
// sum, computed here in float64 from Keras's formulas.
TEST(Regularizers, FitMinimisesAndReportsTheLossPlusPenalties) {
  const int64_t n = 6, in = 3, out = 2;
  const double lr = 0.1, k2 = 0.1, b1 = 0.2, a2 = 0.05;
  Dense dense(out, "",
              {.bias_initializer = "ones",
               .kernel_regularizer = regularizers::l2(k2),
               .bias_regularizer = regularizers::l1(b1),
               .activity_regularizer = regularizers::l2(a2)});
  Sequential model({dense});
  model.compile(optim::SGD(lr), losses::MeanSquaredError());
  Tensor x = stateless_random_normal({n, in}, {4, 1}),
         y = stateless_random_normal({n, out}, {4, 2});
  Tensor first = model(x);
  // model.losses: the activity penalty of that call, then the weights'.
  std::vector<Tensor> penalties = model.model().losses();
  ASSERT_EQ(penalties.size(), 3u);
  std::vector<double> w = as_doubles(dense.variables()[0]), b = as_doubles(dense.variables()[1]);
  std::vector<double> xv = as_doubles(x), yv = as_doubles(y);
  std::vector<double> yp(n * out), dyp(n * out);
  double data = 0, activity = 0, kernel = 0, bias = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < out; ++j) {
      double v = b[j];
      for (int64_t k = 0; k < in; ++k) v += xv[i * in + k] * w[k * out + j];
      yp[i * out + j] = v;
      double e = v - yv[i * out + j];
      data += e * e / (n * out);
      activity += a2 * v * v / n;
      dyp[i * out + j] = 2 * e / (n * out) + 2 * a2 * v / n;
    }
  }
  for (double v : w) kernel += k2 * v * v;
  for (double v : b) bias += b1 * std::abs(v);
  EXPECT_NEAR(penalties[0].item<double>(), activity, 1e-5);
  EXPECT_NEAR(penalties[1].item<double>(), kernel, 1e-5);
  EXPECT_NEAR(penalties[2].item<double>(), bias, 1e-5);
  EXPECT_NEAR(model.evaluate(data::Dataset::from_tensors({x, y}))["loss"],
              data + activity + kernel + bias, 1e-5);

  std::map<std::string, double> logs = model.train_on_batch({x, y});
  EXPECT_NEAR(logs["loss"], data + activity + kernel + bias, 1e-5);
  std::vector<double> w_after = as_doubles(dense.variables()[0]);
  std::vector<double> b_after = as_doubles(dense.variables()[1]);
  for (int64_t k = 0; k < in; ++k) {
    for (int64_t j = 0; j < out; ++j) {
      double g = 2 * k2 * w[k * out + j];
      for (int64_t i = 0; i < n; ++i) g += xv[i * in + k] * dyp[i * out + j];
      EXPECT_NEAR(w_after[k * out + j], w[k * out + j] - lr * g, 1e-5) << k << ", " << j;
    }
  }
  for (int64_t j = 0; j < out; ++j) {
    double g = b1 * (b[j] > 0 ? 1 : -1);
    for (int64_t i = 0; i < n; ++i) g += dyp[i * out + j];
    EXPECT_NEAR(b_after[j], b[j] - lr * g, 1e-5) << j;
  }
}

// The optimizer projects a constrained variable after its update: the weights equal those of
// the same model trained without constraints, then projected (one step).
TEST(Constraints, AppliedAfterEachUpdate) {
  Tensor x = stateless_random_normal({8, 4}, {5, 1}), y = stateless_random_normal({8, 3}, {5, 2});
  auto step = [&](const Constraint& kernel, const Constraint& bias) {
    random::set_seed(9);
    Dense dense(3, "",
                {.bias_initializer = "random_normal",
                 .kernel_constraint = kernel,
                 .bias_constraint = bias});
    Sequential model({dense});
    model.compile(optim::SGD(0.5), losses::MeanSquaredError());
    model.train_on_batch({x, y});
    return dense.variables();
  };
  std::vector<Variable> free = step({}, {});
  for (const auto& [kernel, bias] : std::vector<std::pair<Constraint, Constraint>>{
           {constraints::non_neg(), constraints::max_norm(0.1)},
           {constraints::unit_norm(), constraints::min_max_norm(0.5, 0.6, 0.7)}}) {
    std::vector<Variable> bound = step(kernel, bias);
    EXPECT_EQ(bound[0].value().to_vector<float>(), kernel(free[0].value()).to_vector<float>())
        << kernel.class_name();
    EXPECT_EQ(bound[1].value().to_vector<float>(), bias(free[1].value()).to_vector<float>())
        << bias.class_name();
  }
}

struct LogicalDevices {
  explicit LogicalDevices(int n) { config::set_logical_cpu_devices(n); }
  ~LogicalDevices() { config::set_logical_cpu_devices(1); }
};

// Every regularizer (custom included), constraint and activation name (the LSTM's gates
// hard_sigmoid, its activation tanh) in one model over
// sequences: under --deterministic, MirroredStrategy on 2 replicas trains it to the bits one
// replica does; a saved and loaded copy keeps every setting and trains on to the same bits.
TEST(Regularizers, EveryRuleSavesLoadsAndTrainsAlikeUnderMirroredStrategy) {
  register_regularizer("ScaledSquares", [](const ConfigDict& c) {
    double k = c.get_double("k");
    return Regularizer(
        "ScaledSquares", [k](const Tensor& x) { return mul(sum(square(x)), k); },
        ConfigDict().set("k", k));
  });
  const Regularizer custom = Regularizer::deserialize(
      ConfigDict().set("class_name", "ScaledSquares").set("config", ConfigDict().set("k", 1e-3)));
  auto make = [&] {
    return Sequential({
        LSTM(6, {.recurrent_activation = "hard_sigmoid",
                 .kernel_regularizer = regularizers::l2(1e-3),
                 .recurrent_regularizer = "l1",
                 .kernel_constraint = constraints::max_norm(2),
                 .recurrent_constraint = constraints::unit_norm(),
                 .return_sequences = true}),
        Conv1D(5, 2,
               {.activation = "elu",
                .kernel_regularizer = regularizers::l1(1e-3),
                .bias_regularizer = "l2",
                .activity_regularizer = regularizers::l1_l2(1e-4, 1e-4),
                .bias_constraint = "non_neg"}),
        GlobalAveragePooling1D(),
        Dense(6, "selu",
              {.kernel_regularizer = custom,
               .kernel_constraint = constraints::min_max_norm(0.1, 1.5, 0.5)}),
        Dense(6, "softplus", {.activity_regularizer = "l2"}),
        Dense(6, "softsign"),
        Dense(6, "swish"),
        Dense(6, "hard_sigmoid"),
        Dense(6, "relu"),
        Dense(6, "gelu"),
        Dense(6, "tanh"),
        Dense(6, "sigmoid"),
        Dense(6, "linear"),
        Dense(6, "log_softmax"),
        Dense(6, "exponential", {.kernel_regularizer = "l1_l2"}),
        Dense(3, "softmax", {.bias_constraint = constraints::max_norm(0.5)}),
    });
  };
  Tensor x = stateless_random_normal({32, 5, 3}, {7, 1});
  Tensor y = cast(greater(sum(x, {1, 2}), 0.0), kInt64);
  data::Dataset ds = data::Dataset::from_tensor_slices({x, y}).batch(8);
  config::enable_op_determinism();
  auto train = [&](int replicas, Sequential& model) {
    LogicalDevices devices(replicas);
    distribute::MirroredStrategy strategy;
    random::set_seed(12);
    {
      auto scope = strategy.scope();
      model = make();
      model.compile(optim::SGD(0.05), losses::SparseCategoricalCrossentropy(),
                    std::vector<std::string>{});
    }
    History h = model.fit(ds, {.epochs = 2, .verbose = 0});
    EXPECT_TRUE(std::isfinite(h.history["loss"].back()));
    return model.weights_fingerprint();
  };
  Sequential alone, mirrored;
  const std::string bits = train(1, alone);
  EXPECT_EQ(train(2, mirrored), bits);

  const std::string dir = ::testing::TempDir() + "/weft_regularized_model";
  alone.save(dir);
  Model loaded = load_model(dir);
  EXPECT_EQ(loaded.weights_fingerprint(), bits);
  for (size_t i = 0; i < alone.layers().size(); ++i) {
    EXPECT_EQ(loaded.layers()[i].impl().get_config().to_json(),
              alone.layers()[i].impl().get_config().to_json())
        << i;
  }
  EXPECT_EQ(loaded.layers()[3].impl().get_config().get_dict("kernel_regularizer").to_json(),
            R"({"class_name":"ScaledSquares","config":{"k":0.001}})");
  // The loaded model trains on as the trained one does: the same penalties and projections.
  alone.fit(ds, {.epochs = 1, .verbose = 0});
  loaded.fit(ds, {.epochs = 1, .verbose = 0});
  EXPECT_EQ(loaded.weights_fingerprint(), alone.weights_fingerprint());
  EXPECT_NE(loaded.weights_fingerprint(), bits);
  config::disable_op_determinism();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace weft::nn
