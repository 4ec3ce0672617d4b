#include "weft/nn/model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "weft/nn/core_layers.h"
#include "weft/nn/dense.h"
#include "weft/nn/merging.h"
#include "weft/nn/saving.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/optim/adam.h"
#include "weft/optim/sgd.h"

namespace weft::nn {
namespace {

// Two Gaussian blobs, labels 0/1: a model that learns anything separates them.
data::Dataset blobs(int64_t n, int64_t batch) {
  Tensor x = stateless_random_normal({n, 4}, {1, 2});
  Tensor y = cast(greater(sum(x, {1}), 0.0), kInt64);
  return data::Dataset::from_tensor_slices({x, y}).batch(batch);
}

TEST(Model, SequentialFitLowersLossAndEvaluates) {
  random::set_seed(7);
  Sequential model({Dense(16, "relu"), Dense(2)});
  model.compile(optim::Adam({.learning_rate = 0.01}),
                losses::SparseCategoricalCrossentropy({.from_logits = true}), {"accuracy"});
  History h = model.fit(blobs(512, 32), {.epochs = 5, .verbose = 0});
  ASSERT_EQ(h.epoch.size(), 5u);
  EXPECT_LT(h.history["loss"].back(), h.history["loss"].front());
  auto result = model.evaluate(blobs(512, 64));
  EXPECT_GT(result["accuracy"], 0.9);
  EXPECT_EQ(model.optimizer().iterations().value().item<int64_t>(), 5 * 16);
}

TEST(Model, ValidationLogsAndHistory) {
  random::set_seed(1);
  Sequential model({Dense(8, "relu"), Dense(2)});
  model.compile(optim::Adam(), losses::SparseCategoricalCrossentropy({.from_logits = true}),
                {"accuracy"});
  History h =
      model.fit(blobs(128, 32), {.epochs = 2, .validation_data = blobs(64, 32), .verbose = 0});
  EXPECT_EQ(h.history.count("val_loss"), 1u);
  EXPECT_EQ(h.history.count("val_accuracy"), 1u);
  ASSERT_EQ(h.history["val_loss"].size(), 2u);
  ASSERT_EQ(h.history["loss"].size(), 2u);
  EXPECT_EQ(h.epoch, (std::vector<int>{0, 1}));
  // The last epoch's validation logs are those of the trained model on the validation data.
  std::map<std::string, double> after = model.evaluate(blobs(64, 32));
  EXPECT_DOUBLE_EQ(h.history["val_loss"].back(), after["loss"]);
  EXPECT_DOUBLE_EQ(h.history["val_accuracy"].back(), after["accuracy"]);
  EXPECT_GT(h.history["val_loss"].front(), 0.0);
  EXPECT_LT(h.history["loss"].back(), h.history["loss"].front());
}

TEST(Model, FunctionalTwoInputsMatchesManualComputation) {
  KerasTensor a = Input({3}), b = Input({2});
  Dense da(4), db(4), head(1);
  KerasTensor merged = Concatenate()({da(a), db(b)})[0];
  KerasTensor out = head(merged);
  Model model({a, b}, {out});
  EXPECT_EQ(merged.shape(), (Shape{-1, 8}));
  EXPECT_EQ(out.shape(), (Shape{-1, 1}));
  Tensor xa = stateless_random_normal({5, 3}, {1, 1}), xb = stateless_random_normal({5, 2}, {2, 2});
  Tensor got = model({xa, xb})[0];
  Tensor expected = head(concat({da(xa), db(xb)}, -1));
  EXPECT_EQ(got.to_vector<float>(), expected.to_vector<float>());
  EXPECT_EQ(model.layers().size(), 4u);
  EXPECT_EQ(model.trainable_variables().size(), 6u);
  std::ostringstream summary;
  model.summary(summary);
  EXPECT_THAT(summary.str(), ::testing::HasSubstr("Total params: 37"));  // 16 + 12 + 9
  EXPECT_THAT(summary.str(), ::testing::HasSubstr("(None, 8)"));
  EXPECT_THAT(
      [&] {
        model({xa, xa});
      },
      ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("input 1 has shape (5, 3)")));
}

TEST(Model, FingerprintChangesWithWeightsAndMatchesForEqualWeights) {
  random::set_seed(3);
  Sequential m1({Dense(3)});
  m1(ones({1, 2}));
  random::set_seed(3);
  Sequential m2({Dense(3)});
  m2(ones({1, 2}));
  EXPECT_EQ(m1.weights_fingerprint().size(), 32u);
  std::vector<Variable> v1 = m1.variables(), v2 = m2.variables();
  EXPECT_EQ(v1[0].value().to_vector<float>(), v2[0].value().to_vector<float>());
  EXPECT_EQ(m1.weights_fingerprint(), m2.weights_fingerprint());  // equal weights, equal digests
  std::string before = m1.weights_fingerprint();
  v1[1].assign_add(ones({3}));
  EXPECT_NE(m1.weights_fingerprint(), before);
  EXPECT_NE(m1.weights_fingerprint(), m2.weights_fingerprint());
  v2[1].assign_add(ones({3}));  // the same change to the other: equal again
  EXPECT_EQ(m1.weights_fingerprint(), m2.weights_fingerprint());
}

// Names, checkpoint keys and initial values follow the model's structure: the same model made
// twice in one process, with other layers made in between, is the same model.
TEST(Model, NamesAndInitialValuesFollowTheModelsStructure) {
  auto make = [] {
    return Sequential({Dense(4, "relu"), Dense(3, "", {.name = "logits"}), Dense(2), Dropout(0.5)});
  };
  random::set_seed(5);
  Sequential a = make();
  Dense(7)(ones({1, 2}));  // a layer in no model draws from the process-wide sequence
  Sequential b = make();
  a(ones({1, 3}));
  b(ones({1, 3}));
  std::vector<std::string> names;
  for (const auto& [key, v] : a.tracked_variables()) names.push_back(key);
  EXPECT_THAT(names, ::testing::ElementsAre("dense/kernel", "dense/bias", "logits/kernel",
                                            "logits/bias", "dense_1/kernel", "dense_1/bias"));
  EXPECT_EQ(a.layers()[3].name(), "dropout");
  EXPECT_EQ(a.weights_fingerprint(), b.weights_fingerprint());
  // Different places draw different values.
  EXPECT_NE(a.variables()[0].value().to_vector<float>()[0],
            a.variables()[4].value().to_vector<float>()[0]);
  // Another global seed, other values.
  random::set_seed(6);
  Sequential c = make();
  c(ones({1, 3}));
  EXPECT_NE(c.weights_fingerprint(), a.weights_fingerprint());
  // A Functional model's layers build when they are called on Inputs, before the model exists:
  // they keep names unique in the process.
  KerasTensor in = Input({3});
  Model f(in, Dense(2)(Dense(4)(in)));
  EXPECT_THAT(f.layers()[0].name(), ::testing::MatchesRegex("dense(_[0-9]+)?"));
  EXPECT_NE(f.layers()[0].name(), f.layers()[1].name());
}

TEST(Model, FreezingALayerRemovesItsTrainableVariables) {
  Dense frozen(3), live(2);
  Sequential model({frozen, live});
  model(ones({1, 4}));
  EXPECT_EQ(model.trainable_variables().size(), 4u);
  frozen.set_trainable(false);
  EXPECT_EQ(model.trainable_variables().size(), 2u);
  EXPECT_EQ(model.variables().size(), 4u);
}

TEST(Model, BadInputNamesTheProblem) {
  Sequential model({Dense(2)});
  EXPECT_THAT([&] { model.fit(blobs(8, 4), {.verbose = 0}); },
              ::testing::ThrowsMessage<FailedPrecondition>(::testing::HasSubstr("compile")));
  model(ones({1, 4}));
  EXPECT_THAT(
      [&] {
        model(ones({1, 5}));
      },
      ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("input 0 has shape (1, 5)")));
  // Logs are keyed by name: two metrics of one name would mix their values.
  EXPECT_THAT(
      [&] {
        model.compile(optim::SGD(0.1), losses::MeanSquaredError(),
                      std::vector<std::string>{"accuracy", "accuracy"});
      },
      ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("are named \"accuracy\"")));
}

// Keras's compile(weighted_metrics=...): `metrics` ignore the sample weights, weighted metrics
// weigh each example by its weight; a weighted metric named as an unweighted one is logged as
// "weighted_<name>", alone it keeps its name; a saved model compiles back with the same names.
TEST(Model, WeightedMetricsTakeTheSampleWeights) {
  random::set_seed(4);
  Tensor x = stateless_random_normal({40, 4}, {8, 1});
  Tensor y = cast(greater(sum(x, {1}), 0.0), kInt64);
  Tensor w = add(stateless_random_uniform({40}, {8, 2}), 0.1);
  data::Dataset ds = data::Dataset::from_tensor_slices({x, y, w}).batch(16);
  Sequential model({Dense(2)});
  model.compile(optim::SGD(0.1), losses::SparseCategoricalCrossentropy({.from_logits = true}),
                std::vector<std::string>{"accuracy"}, std::vector<std::string>{"accuracy"});
  std::map<std::string, double> logs = model.evaluate(ds);
  std::vector<int64_t> predicted = argmax(model(x), 1).to_vector<int64_t>();
  std::vector<int64_t> labels = y.to_vector<int64_t>();
  std::vector<float> weights = w.to_vector<float>();
  double hits = 0, weighted_hits = 0, weight_sum = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    double hit = predicted[i] == labels[i] ? 1.0 : 0.0;
    hits += hit;
    weighted_hits += hit * weights[i];
    weight_sum += weights[i];
  }
  ASSERT_EQ(logs.count("weighted_accuracy"), 1u);
  EXPECT_NEAR(logs["accuracy"], hits / 40, 1e-12);
  EXPECT_NEAR(logs["weighted_accuracy"], weighted_hits / weight_sum, 1e-6);
  EXPECT_NE(logs["accuracy"], logs["weighted_accuracy"]);

  const std::string dir = ::testing::TempDir() + "/weft_weighted_metrics_model";
  model.save(dir);
  std::map<std::string, double> loaded = load_model(dir).evaluate(ds);
  EXPECT_EQ(loaded, logs);
  std::filesystem::remove_all(dir);

  Sequential alone({Dense(2)});
  alone.compile(optim::SGD(0.1), losses::SparseCategoricalCrossentropy({.from_logits = true}),
                std::vector<std::string>{}, std::vector<std::string>{"accuracy"});
  alone(x);
  for (size_t i = 0; i < 2; ++i)
    alone.layers()[0].variables()[i].assign(model.layers()[0].variables()[i]);
  std::map<std::string, double> only = alone.evaluate(ds);
  EXPECT_EQ(only.count("weighted_accuracy"), 0u);
  EXPECT_NEAR(only["accuracy"], weighted_hits / weight_sum, 1e-6);
}

// A metric with a value per threshold logs each as "<name>[i]" (Keras logs one array), and the
// values are the metric's over the whole evaluation.
TEST(Model, PrecisionAtSeveralThresholdsLogsEachValue) {
  random::set_seed(5);
  Tensor x = stateless_random_normal({30, 3}, {8, 3});
  Tensor y = cast(greater(sum(x, {1}), 0.0), kFloat32);
  data::Dataset ds = data::Dataset::from_tensor_slices({x, y}).batch(8);
  Sequential model({Dense(1, "sigmoid")});
  model.compile(optim::SGD(0.1), losses::BinaryCrossentropy(),
                std::vector<metrics::Metric>{metrics::Precision({.thresholds = {0.3, 0.6}}),
                                             metrics::Recall({.thresholds = {0.5}})});
  std::map<std::string, double> logs = model.evaluate(ds);
  metrics::Precision reference({.thresholds = {0.3, 0.6}});
  reference.update_state(reshape(y, {30, 1}), model(x));
  EXPECT_EQ(logs.count("precision"), 0u);
  ASSERT_EQ(logs.count("precision[0]"), 1u);
  ASSERT_EQ(logs.count("precision[1]"), 1u);
  EXPECT_NEAR(logs["precision[0]"], reference.results()[0], 1e-12);
  EXPECT_NEAR(logs["precision[1]"], reference.results()[1], 1e-12);
  EXPECT_NE(logs["precision[0]"], logs["precision[1]"]);
  EXPECT_EQ(logs.count("recall"), 1u);
}

}  // namespace
}  // namespace weft::nn
