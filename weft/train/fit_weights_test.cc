// fit and evaluate as Keras weighs examples: the epoch loss is the mean over examples (not over
// batches), a dataset's third component is a sample weight, class_weight scales each class's
// examples, validation data may carry weights, labels (N,) fit predictions (N, 1), and metrics
// by any Keras name. Values are derived here, in float64, from the model's own predictions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "weft/core/config.h"
#include "weft/distribute/mirrored_strategy.h"
#include "weft/nn/dense.h"
#include "weft/nn/model.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/optim/sgd.h"

namespace weft::nn {
namespace {

struct Data {
  Tensor x, y, w;
};

// n examples of 4 features, labels in {0, 1, 2}, weights in [0.2, 2).
Data make_data(int64_t n, int64_t seed) {
  Tensor x = stateless_random_normal({n, 4}, {seed, 1});
  Tensor y = argmax(slice(x, {Slice{}, Slice{0, 3}}), -1);
  Tensor w = add(mul(stateless_random_uniform({n}, {seed, 2}), 1.8), 0.2);
  return {x, y, cast(w, kFloat32)};
}

// A 3-class classifier whose weights do not move (learning rate 0), so every batch sees the
// same model and the logs can be computed from its predictions.
Sequential frozen_model(const std::vector<std::string>& metrics = {}) {
  random::set_seed(3);
  Sequential model({Dense(3)});
  model.compile(optim::SGD(0.0), losses::SparseCategoricalCrossentropy({.from_logits = true}),
                metrics);
  return model;
}

// Each example's loss under `model`, in float64.
std::vector<double> example_losses(Sequential& model, const Data& d) {
  Tensor logits = model.predict(d.x, 1000);
  return cast(losses::SparseCategoricalCrossentropy({.from_logits = true})
                  .per_example(d.y, cast(logits, kFloat64)),
              kFloat64)
      .to_vector<double>();
}

TEST(FitWeights, EpochLossIsTheMeanOverExamplesNotOverBatches) {
  // 10 examples in batches of 4, 4 and 2 (the case).
  Data d = make_data(10, 11);
  Sequential model = frozen_model();
  History h = model.fit(data::Dataset::from_tensor_slices({d.x, d.y}).batch(4), {.verbose = 0});
  std::vector<double> l = example_losses(model, d);
  double per_example = 0, batch_means = 0;
  for (int i = 0; i < 10; ++i) per_example += l[i] / 10;
  for (auto [lo, hi] : {std::pair{0, 4}, std::pair{4, 8}, std::pair{8, 10}}) {
    double s = 0;
    for (int i = lo; i < hi; ++i) s += l[i];
    batch_means += s / (hi - lo) / 3;
  }
  ASSERT_GT(std::abs(per_example - batch_means), 1e-3 * per_example)
      << "the data should tell the two apart";
  EXPECT_NEAR(h.history["loss"][0], per_example, 1e-6 * per_example);
  auto logs = model.evaluate(data::Dataset::from_tensor_slices({d.x, d.y}).batch(4));
  EXPECT_NEAR(logs["loss"], per_example, 1e-6 * per_example);
}

TEST(FitWeights, SampleWeightsScaleTheLossAndWeightedValidationData) {
  Data d = make_data(10, 12), v = make_data(7, 13);
  Sequential model = frozen_model();
  History h =
      model.fit(data::Dataset::from_tensor_slices({d.x, d.y, d.w}).batch(4),
                {.validation_data = data::Dataset::from_tensor_slices({v.x, v.y, v.w}).batch(3),
                 .verbose = 0});
  auto weighted_mean = [&](const Data& data, int64_t n) {
    std::vector<double> l = example_losses(model, data);
    std::vector<double> w = cast(data.w, kFloat64).to_vector<double>();
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += l[i] * w[i];
    return s / static_cast<double>(n);  // Keras: sum(l * w) / examples, not / sum(w)
  };
  EXPECT_NEAR(h.history["loss"][0], weighted_mean(d, 10), 1e-6);
  EXPECT_NEAR(h.history["val_loss"][0], weighted_mean(v, 7), 1e-6);
}

TEST(FitWeights, SampleWeightsScaleTheGradients) {
  // Weight 2 on every example trains as the unweighted loss at twice the learning rate.
  Data d = make_data(16, 14);
  auto train = [&](double lr, bool weighted) {
    random::set_seed(5);
    Sequential model({Dense(3)});
    model.compile(optim::SGD(lr), losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  std::vector<std::string>{});
    Tensor two = full({16}, 2.0, kFloat32);
    data::Dataset ds = weighted ? data::Dataset::from_tensor_slices({d.x, d.y, two})
                                : data::Dataset::from_tensor_slices({d.x, d.y});
    model.fit(ds.batch(8), {.epochs = 2, .verbose = 0});
    return cast(model.layers()[0].variables()[0].value(), kFloat64).to_vector<double>();
  };
  std::vector<double> a = train(0.05, true), b = train(0.1, false);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << i;
  std::vector<double> c = train(0.05, false);
  double moved = 0;
  for (size_t i = 0; i < a.size(); ++i) moved = std::max(moved, std::abs(a[i] - c[i]));
  EXPECT_GT(moved, 1e-3);  // and the weights did change the result
}

TEST(FitWeights, ClassWeightIsASampleWeightByLabelAndMultipliesOne) {
  Data d = make_data(24, 15);
  const std::map<int64_t, double> cw{{0, 1.0}, {1, 3.0}, {2, 0.5}};
  std::vector<int64_t> y = d.y.to_vector<int64_t>();
  std::vector<double> by_class, times_given;
  std::vector<double> given = cast(d.w, kFloat64).to_vector<double>();
  for (size_t i = 0; i < y.size(); ++i) {
    by_class.push_back(cw.at(y[i]));
    times_given.push_back(cw.at(y[i]) * given[i]);
  }
  auto train = [&](const data::Dataset& ds, const std::map<int64_t, double>& class_weight) {
    random::set_seed(6);
    Sequential model({Dense(3)});
    model.compile(optim::SGD(0.1), losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  std::vector<std::string>{});
    History h = model.fit(ds.batch(8), {.verbose = 0, .class_weight = class_weight});
    return std::pair{model.weights_fingerprint(), h.history["loss"][0]};
  };
  auto plain = data::Dataset::from_tensor_slices({d.x, d.y});
  auto a = train(plain, cw);
  auto b = train(data::Dataset::from_tensor_slices({d.x, d.y, Tensor::from_vector(by_class)}), {});
  EXPECT_EQ(a.first, b.first);
  EXPECT_EQ(a.second, b.second);
  auto c = train(data::Dataset::from_tensor_slices({d.x, d.y, d.w}), cw);
  auto e =
      train(data::Dataset::from_tensor_slices({d.x, d.y, Tensor::from_vector(times_given)}), {});
  EXPECT_EQ(c.first, e.first);
  EXPECT_NE(a.first, train(plain, {}).first);
  // One-hot labels pick their class by arg-max.
  auto onehot = data::Dataset::from_tensor_slices({d.x, one_hot(d.y, 3)});
  random::set_seed(6);
  Sequential cat({Dense(3)});
  cat.compile(optim::SGD(0.1), losses::CategoricalCrossentropy({.from_logits = true}),
              std::vector<std::string>{});
  cat.fit(onehot.batch(8), {.verbose = 0, .class_weight = cw});
  EXPECT_EQ(cat.weights_fingerprint(), a.first);
}

TEST(FitWeights, ClassWeightWithoutALabelsClassNamesIt) {
  Data d = make_data(8, 16);
  Sequential model = frozen_model();
  try {
    model.fit(data::Dataset::from_tensor_slices({d.x, d.y}).batch(8),
              {.verbose = 0, .class_weight = {{0, 1.0}, {1, 2.0}}});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), ::testing::HasSubstr("class_weight has no weight for class 2"));
  }
}

TEST(FitWeights, WeightedLossesUnderMirroredReplicasEqualOneReplicas) {
  Data d = make_data(20, 17);
  auto run = [&](int replicas) {
    config::set_logical_cpu_devices(replicas);
    distribute::MirroredStrategy strategy;
    Sequential model;
    {
      auto scope = strategy.scope();
      random::set_seed(8);
      model = Sequential({Dense(3)});
      model.compile(optim::SGD(0.1), losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    std::vector<std::string>{});
    }
    History h =
        model.fit(data::Dataset::from_tensor_slices({d.x, d.y, d.w}).batch(10), {.verbose = 0});
    config::set_logical_cpu_devices(1);
    return std::pair{h.history["loss"][0], model.layers()[0].variables()[0].value()};
  };
  auto [one_loss, one_kernel] = run(1);
  auto [two_loss, two_kernel] = run(2);
  EXPECT_NEAR(one_loss, two_loss, 1e-6);
  std::vector<double> a = cast(one_kernel, kFloat64).to_vector<double>(),
                      b = cast(two_kernel, kFloat64).to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << i;
}

TEST(FitLabelShapes, LabelsOfShapeNFitOneOutputPerExample) {
  // Keras accepts regression labels (N,) against a Dense(1) model's (N, 1) predictions.
  Tensor x = stateless_random_normal({64, 3}, {21, 1});
  Tensor y = sum(mul(x, Tensor::from_vector(std::vector<float>{1, -2, 0.5})), {1});  // (64,)
  random::set_seed(9);
  Sequential model({Dense(1)});
  model.compile(optim::SGD(0.1), losses::MeanSquaredError(), {"mae", "RootMeanSquaredError"});
  History h =
      model.fit(data::Dataset::from_tensor_slices({x, y}).batch(16), {.epochs = 20, .verbose = 0});
  EXPECT_LT(h.history["loss"].back(), 0.01 * h.history["loss"].front());
  // The metrics are named as Keras names them and agree with the predictions.
  auto logs = model.evaluate(data::Dataset::from_tensor_slices({x, y}).batch(64));
  std::vector<double> p = cast(model.predict(x), kFloat64).to_vector<double>();
  std::vector<double> t = cast(y, kFloat64).to_vector<double>();
  double mae = 0, mse = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    mae += std::abs(p[i] - t[i]) / 64;
    mse += (p[i] - t[i]) * (p[i] - t[i]) / 64;
  }
  EXPECT_NEAR(logs["mae"], mae, 1e-5);
  EXPECT_NEAR(logs["root_mean_squared_error"], std::sqrt(mse), 1e-5);
  EXPECT_NEAR(logs["loss"], mse, 1e-5);
}

TEST(FitMetrics, AUCPrecisionRecallInLogs) {
  Data d = make_data(50, 18);
  Tensor binary = cast(equal(d.y, 1), kFloat32);
  random::set_seed(10);
  Sequential model({Dense(1, "sigmoid")});
  model.compile(optim::SGD(0.0), losses::BinaryCrossentropy(), {"AUC", "Precision", "Recall"});
  auto logs = model.evaluate(data::Dataset::from_tensor_slices({d.x, binary}).batch(16));
  Tensor p = model.predict(d.x);
  metrics::AUC auc;
  metrics::Precision precision;
  metrics::Recall recall;
  for (metrics::Metric m :
       {metrics::Metric(auc), metrics::Metric(precision), metrics::Metric(recall)}) {
    m.update_state(binary, p);
  }
  EXPECT_NEAR(logs["auc"], auc.result(), 1e-12);
  EXPECT_NEAR(logs["precision"], precision.result(), 1e-12);
  EXPECT_NEAR(logs["recall"], recall.result(), 1e-12);
}

}  // namespace
}  // namespace weft::nn
