// Metrics against NumPy (scripts/make_nn_goldens.py, groups "metrics" and "more_metrics"): each
// accumulates two batches (weighted, for the second group) and its result is compared with
// NumPy's over both; reset, names, replicas' partials and Keras's choice of accuracy.
#include "weft/nn/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"
#include "weft/ops/shape_ops.h"
#include "weft/testing/nn_goldens.h"

namespace weft::nn::metrics {
namespace {

const testing::NnGoldens& metrics_goldens() {
  static const testing::NnGoldens g("metrics");
  return g;
}

double expected(const std::string& name, const std::string& value) {
  return metrics_goldens().load(name, value).item<double>();
}

// Updates `metric` with the two golden batches of case `name`; returns its result.
double run(Metric metric, const std::string& name) {
  metric.reset_state();
  for (int i = 0; i < 2; ++i) {
    std::string k = std::to_string(i);
    metric.update_state(metrics_goldens().load(name, "y_true" + k),
                        metrics_goldens().load(name, "y_pred" + k));
  }
  return metric.result();
}

TEST(MetricsGolden, SparseCategoricalAccuracy) {
  EXPECT_DOUBLE_EQ(run(SparseCategoricalAccuracy(), "sparse"),
                   expected("sparse", "sparse_categorical_accuracy"));
}

TEST(MetricsGolden, SparseTopKCountsTiesAsIn) {
  EXPECT_DOUBLE_EQ(run(SparseTopKCategoricalAccuracy(2), "sparse"), expected("sparse", "top2"));
  EXPECT_DOUBLE_EQ(run(SparseTopKCategoricalAccuracy(), "sparse"), expected("sparse", "top5"));
  EXPECT_DOUBLE_EQ(expected("sparse", "top5"), 1.0);
}

TEST(MetricsGolden, CategoricalAccuracy) {
  EXPECT_DOUBLE_EQ(run(CategoricalAccuracy(), "categorical"),
                   expected("categorical", "categorical_accuracy"));
}

TEST(MetricsGolden, BinaryAccuracy) {
  EXPECT_DOUBLE_EQ(run(BinaryAccuracy(), "binary"), expected("binary", "binary_accuracy"));
}

TEST(MetricsGolden, Accuracy) {
  EXPECT_DOUBLE_EQ(run(Accuracy(), "exact"), expected("exact", "accuracy"));
}

TEST(MetricsGolden, MeanWeighsEveryValue) {
  Mean mean;
  mean.update_state(metrics_goldens().load("mean", "values0"));
  mean.update_state(metrics_goldens().load("mean", "values1"));
  EXPECT_NEAR(mean.result(), expected("mean", "mean"), 1e-12);
  mean.reset_state();
  EXPECT_EQ(mean.result(), 0.0);
}

TEST(MetricsGolden, KerasAccuracyFollowsTheShapes) {
  // metrics=["accuracy"]: sparse labels, one-hot labels and binary scores each get their own.
  EXPECT_DOUBLE_EQ(run(get("accuracy"), "sparse"),
                   expected("sparse", "sparse_categorical_accuracy"));
  EXPECT_DOUBLE_EQ(run(get("acc", "categorical_crossentropy"), "categorical"),
                   expected("categorical", "categorical_accuracy"));
  EXPECT_DOUBLE_EQ(run(get("accuracy", "binary_crossentropy"), "binary"),
                   expected("binary", "binary_accuracy"));
  EXPECT_EQ(get("accuracy").name(), "accuracy");
}

TEST(Metrics, ByKerasName) {
  EXPECT_EQ(get("sparse_categorical_accuracy").name(), "sparse_categorical_accuracy");
  EXPECT_EQ(get("categorical_accuracy").name(), "categorical_accuracy");
  EXPECT_EQ(get("binary_accuracy").name(), "binary_accuracy");
  EXPECT_EQ(get("sparse_top_k_categorical_accuracy").name(), "sparse_top_k_categorical_accuracy");
  EXPECT_THROW(get("f1"), InvalidArgument);
}

TEST(MetricsErrors, LabelsThatDoNotFit) {
  Tensor preds = metrics_goldens().load("categorical", "y_pred0");  // (6, 3)
  EXPECT_THROW(
      CategoricalAccuracy().update_state(metrics_goldens().load("sparse", "y_true0"), preds),
      InvalidArgument);
  EXPECT_THROW(
      SparseCategoricalAccuracy().update_state(preds, metrics_goldens().load("sparse", "y_pred1")),
      InvalidArgument);
}

// ---- weighted batches of the other metrics (group "more_metrics") ----------------------------

const testing::NnGoldens& more_metrics() {
  static const testing::NnGoldens g("more_metrics");
  return g;
}

double more_expected(const std::string& name, const std::string& value) {
  return more_metrics().load(name, value).item<double>();
}

// Updates `metric` with the two golden batches of case `name`, weighted unless `weighted` is
// false; returns its result.
double run_more(Metric metric, const std::string& name, bool weighted = true) {
  metric.reset_state();
  for (int i = 0; i < 2; ++i) {
    std::string k = std::to_string(i);
    metric.update_state(more_metrics().load(name, "y_true" + k),
                        more_metrics().load(name, "y_pred" + k),
                        weighted ? more_metrics().load(name, "w" + k) : Tensor());
  }
  return metric.result();
}

// Two weighted batches (the "more_metrics" goldens) of one kind of labels and predictions:
// "binary" (labels 0 or 1 against probabilities, (b, 1)), "regression" (any values, (b, 3)),
// "one_hot" (one-hot labels against softmax scores, (b, 5)) and "sparse" (the same scores against
// the labels' class ids).
struct Batch {
  Tensor y_true, y_pred, sample_weight;
};
std::vector<Batch> batches_of(const std::string& inputs) {
  const char* c = inputs == "binary"       ? "binary_weighted"
                  : inputs == "regression" ? "regression"
                                           : "classes";
  std::vector<Batch> out;
  for (int i = 0; i < 2; ++i) {
    std::string k = std::to_string(i);
    out.push_back({more_metrics().load(c, (inputs == "sparse" ? "ids" : "y_true") + k),
                   more_metrics().load(c, "y_pred" + k), more_metrics().load(c, "w" + k)});
  }
  return out;
}

// Resets `metric`, updates it with `batches` and returns its result.
double result_over(Metric metric, const std::vector<Batch>& batches) {
  metric.reset_state();
  for (const Batch& b : batches) metric.update_state(b.y_true, b.y_pred, b.sample_weight);
  return metric.result();
}

TEST(MoreMetricsGolden, ConfusionCountsPrecisionAndRecallWeighted) {
  const char* c = "binary_weighted";
  EXPECT_NEAR(run_more(TruePositives(), c), more_expected(c, "tp"), 1e-9);
  EXPECT_NEAR(run_more(FalsePositives(), c), more_expected(c, "fp"), 1e-9);
  EXPECT_NEAR(run_more(TrueNegatives(), c), more_expected(c, "tn"), 1e-9);
  EXPECT_NEAR(run_more(FalseNegatives(), c), more_expected(c, "fn"), 1e-9);
  EXPECT_NEAR(run_more(Precision(), c), more_expected(c, "precision"), 1e-12);
  EXPECT_NEAR(run_more(Recall(), c), more_expected(c, "recall"), 1e-12);
  // class_id picks one column of (N, 3) scores.
  EXPECT_NEAR(run_more(Precision({.class_id = 1}), "class_id", false),
              more_expected("class_id", "precision"), 1e-12);
  EXPECT_NEAR(run_more(Recall({.class_id = 1}), "class_id", false),
              more_expected("class_id", "recall"), 1e-12);
}

TEST(MoreMetricsGolden, AUCOfEveryCurveAndSummation) {
  const char* c = "binary_weighted";
  for (auto [curve, curve_name] :
       {std::pair{AUCCurve::ROC, "ROC"}, std::pair{AUCCurve::PR, "PR"}}) {
    for (auto [method, method_name] : {std::pair{AUCSummation::INTERPOLATION, "interpolation"},
                                       std::pair{AUCSummation::MINORING, "minoring"},
                                       std::pair{AUCSummation::MAJORING, "majoring"}}) {
      SCOPED_TRACE(std::string(curve_name) + " " + method_name);
      double got = run_more(AUC({.curve = curve, .summation_method = method}), c);
      EXPECT_NEAR(got, more_expected(c, std::string("auc_") + curve_name + "_" + method_name),
                  1e-12);
    }
  }
  // 200 thresholds come close to the exact (rank) ROC AUC.
  EXPECT_NEAR(run_more(AUC(), c), more_expected(c, "auc_exact"), 5e-3);
  // Perfectly ranked predictions: 1.
  AUC perfect;
  perfect.update_state(Tensor::from_vector(std::vector<double>{0, 0, 1, 1}),
                       Tensor::from_vector(std::vector<double>{0.1, 0.3, 0.6, 0.9}));
  EXPECT_NEAR(perfect.result(), 1.0, 1e-12);
}

TEST(MoreMetricsGolden, RegressionMetricsWeighted) {
  const char* c = "regression";
  EXPECT_NEAR(run_more(MeanSquaredError(), c), more_expected(c, "mse"), 1e-12);
  EXPECT_NEAR(run_more(MeanAbsoluteError(), c), more_expected(c, "mae"), 1e-12);
  EXPECT_NEAR(run_more(MeanAbsolutePercentageError(), c), more_expected(c, "mape"), 1e-9);
  EXPECT_NEAR(run_more(RootMeanSquaredError(), c), more_expected(c, "rmse"), 1e-12);
  EXPECT_NEAR(run_more(LogCoshError(), c), more_expected(c, "logcosh"), 1e-12);
  EXPECT_NEAR(run_more(CosineSimilarity(), c), more_expected(c, "cosine"), 1e-12);
  EXPECT_NEAR(run_more(get("mse"), c, false), more_expected(c, "mse_unweighted"), 1e-12);
  EXPECT_EQ(get("mse").name(), "mse");
  EXPECT_EQ(get("mae").name(), "mae");
}

TEST(MoreMetricsGolden, ClassScores) {
  const char* c = "classes";
  EXPECT_NEAR(run_more(TopKCategoricalAccuracy(2), c, false), more_expected(c, "top2"), 1e-12);
  EXPECT_NEAR(run_more(TopKCategoricalAccuracy(2), c), more_expected(c, "top2_weighted"), 1e-12);
  EXPECT_NEAR(run_more(CategoricalCrossentropy(), c, false), more_expected(c, "cce"), 1e-6);
  SparseCategoricalAccuracy sparse;
  SparseCategoricalCrossentropy sparse_ce;
  for (int i = 0; i < 2; ++i) {
    std::string k = std::to_string(i);
    Tensor ids = more_metrics().load(c, "ids" + k), scores = more_metrics().load(c, "y_pred" + k);
    sparse.update_state(ids, scores, more_metrics().load(c, "w" + k));
    sparse_ce.update_state(ids, scores);
  }
  EXPECT_NEAR(sparse.result(), more_expected(c, "sparse_accuracy_weighted"), 1e-12);
  EXPECT_NEAR(sparse_ce.result(), more_expected(c, "cce"), 1e-6);
}

TEST(MoreMetricsGolden, TopKCountsLabelsOutsideTheClassesAsMisses) {
  SparseTopKCategoricalAccuracy top(5);
  top.update_state(Tensor::from_vector<int64_t>({0, -1, 3}),
                   Tensor::from_vector<float>({1, 2, 3, 1, 2, 3, 1, 2, 3}, {3, 3}));
  EXPECT_NEAR(top.result(), 1.0 / 3, 1e-12);
}

TEST(MoreMetricsGolden, MeanIoUSkipsClassesThatNeverOccur) {
  EXPECT_NEAR(run_more(MeanIoU(4), "iou"), more_expected("iou", "mean_iou"), 1e-12);
}

TEST(MoreMetricsGolden, SumAndWeightedMean) {
  Sum total;
  Mean mean;
  for (int i = 0; i < 2; ++i) {
    std::string k = std::to_string(i);
    total.update_state(more_metrics().load("sums", "values" + k),
                       more_metrics().load("sums", "w" + k));
    mean.update_state(more_metrics().load("sums", "values" + k),
                      more_metrics().load("sums", "w" + k));
  }
  EXPECT_NEAR(total.result(), more_expected("sums", "sum"), 1e-12);
  EXPECT_NEAR(mean.result(), more_expected("sums", "mean"), 1e-12);
}

TEST(Metrics, PartialsFromReplicasAddUpToOneUpdate) {
  // What a strategy does: each replica's partial of its rows, merged in order.
  const char* c = "binary_weighted";
  AUC whole, merged;
  Tensor t = more_metrics().load(c, "y_true0"), p = more_metrics().load(c, "y_pred0"),
         w = more_metrics().load(c, "w0");
  whole.update_state(t, p, w);
  Partial a =
      whole.partial(slice(t, {Slice{0, 15}}), slice(p, {Slice{0, 15}}), slice(w, {Slice{0, 15}}));
  Partial b = whole.partial(slice(t, {Slice{15, 40}}), slice(p, {Slice{15, 40}}),
                            slice(w, {Slice{15, 40}}));
  Partial sum_of_parts;
  sum_of_parts += Partial{};
  sum_of_parts += a;
  sum_of_parts += b;
  merged.merge_state(sum_of_parts);
  EXPECT_EQ(merged.result(), whole.result());
  EXPECT_THROW(merged.merge_state(Partial{{1.0, 2.0}}), InvalidArgument);
}

TEST(Metrics, EveryKerasName) {
  for (const char* name : {"accuracy",
                           "binary_accuracy",
                           "categorical_accuracy",
                           "sparse_categorical_accuracy",
                           "top_k_categorical_accuracy",
                           "sparse_top_k_categorical_accuracy",
                           "mse",
                           "mae",
                           "mape",
                           "msle",
                           "binary_crossentropy",
                           "categorical_crossentropy",
                           "sparse_categorical_crossentropy",
                           "kld",
                           "cosine_similarity",
                           "poisson",
                           "logcosh",
                           "hinge",
                           "squared_hinge",
                           "categorical_hinge",
                           "AUC",
                           "Precision",
                           "Recall",
                           "RootMeanSquaredError",
                           "TruePositives",
                           "TrueNegatives",
                           "FalsePositives",
                           "FalseNegatives"}) {
    EXPECT_NO_THROW(get(name)) << name;
  }
  EXPECT_EQ(get("AUC").name(), "auc");
  EXPECT_EQ(get("RootMeanSquaredError").name(), "root_mean_squared_error");
  // A saved model names its metrics; the default names resolve again.
  EXPECT_EQ(get(get("Precision").name()).name(), "precision");

  // Each name (and alias) gives the metric of its class: the same result, over the same two
  // weighted batches, as that class made directly. Functions keep the string given as their name,
  // classes their default name, and "accuracy" picks the accuracy that fits the labels.
  struct Case {
    const char* name;
    Metric direct;
    const char* inputs;         // a kind of labels and predictions, see batches_of()
    const char* expected_name;  // the metric's name
  };
  const Case cases[] = {
      {"accuracy", BinaryAccuracy(), "binary", "accuracy"},
      {"accuracy", CategoricalAccuracy(), "one_hot", "accuracy"},
      {"accuracy", SparseCategoricalAccuracy(), "sparse", "accuracy"},
      {"acc", SparseCategoricalAccuracy(), "sparse", "accuracy"},
      {"binary_accuracy", BinaryAccuracy(), "binary", "binary_accuracy"},
      {"categorical_accuracy", CategoricalAccuracy(), "one_hot", "categorical_accuracy"},
      {"sparse_categorical_accuracy", SparseCategoricalAccuracy(), "sparse",
       "sparse_categorical_accuracy"},
      {"top_k_categorical_accuracy", TopKCategoricalAccuracy(), "one_hot",
       "top_k_categorical_accuracy"},
      {"sparse_top_k_categorical_accuracy", SparseTopKCategoricalAccuracy(), "sparse",
       "sparse_top_k_categorical_accuracy"},
      {"mse", MeanSquaredError(), "regression", "mse"},
      {"mean_squared_error", MeanSquaredError(), "regression", "mean_squared_error"},
      {"mae", MeanAbsoluteError(), "regression", "mae"},
      {"mean_absolute_error", MeanAbsoluteError(), "regression", "mean_absolute_error"},
      {"mape", MeanAbsolutePercentageError(), "regression", "mape"},
      {"mean_absolute_percentage_error", MeanAbsolutePercentageError(), "regression",
       "mean_absolute_percentage_error"},
      {"msle", MeanSquaredLogarithmicError(), "one_hot", "msle"},
      {"mean_squared_logarithmic_error", MeanSquaredLogarithmicError(), "one_hot",
       "mean_squared_logarithmic_error"},
      {"binary_crossentropy", BinaryCrossentropy(), "binary", "binary_crossentropy"},
      {"categorical_crossentropy", CategoricalCrossentropy(), "one_hot",
       "categorical_crossentropy"},
      {"sparse_categorical_crossentropy", SparseCategoricalCrossentropy(), "sparse",
       "sparse_categorical_crossentropy"},
      {"kld", KLDivergence(), "one_hot", "kld"},
      {"kl_divergence", KLDivergence(), "one_hot", "kl_divergence"},
      {"kullback_leibler_divergence", KLDivergence(), "one_hot", "kullback_leibler_divergence"},
      {"cosine_similarity", CosineSimilarity(), "regression", "cosine_similarity"},
      {"poisson", Poisson(), "one_hot", "poisson"},
      {"logcosh", LogCoshError(), "regression", "logcosh"},
      {"hinge", Hinge(), "binary", "hinge"},
      {"squared_hinge", SquaredHinge(), "binary", "squared_hinge"},
      {"categorical_hinge", CategoricalHinge(), "one_hot", "categorical_hinge"},
      {"AUC", AUC(), "binary", "auc"},
      {"auc", AUC(), "binary", "auc"},
      {"Precision", Precision(), "binary", "precision"},
      {"precision", Precision(), "binary", "precision"},
      {"Recall", Recall(), "binary", "recall"},
      {"recall", Recall(), "binary", "recall"},
      {"RootMeanSquaredError", RootMeanSquaredError(), "regression", "root_mean_squared_error"},
      {"root_mean_squared_error", RootMeanSquaredError(), "regression", "root_mean_squared_error"},
      {"TruePositives", TruePositives(), "binary", "true_positives"},
      {"true_positives", TruePositives(), "binary", "true_positives"},
      {"TrueNegatives", TrueNegatives(), "binary", "true_negatives"},
      {"true_negatives", TrueNegatives(), "binary", "true_negatives"},
      {"FalsePositives", FalsePositives(), "binary", "false_positives"},
      {"false_positives", FalsePositives(), "binary", "false_positives"},
      {"FalseNegatives", FalseNegatives(), "binary", "false_negatives"},
      {"false_negatives", FalseNegatives(), "binary", "false_negatives"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.name) + " on " + c.inputs);
    Metric from_name = get(c.name);
    EXPECT_EQ(from_name.name(), c.expected_name);
    std::vector<Batch> batches = batches_of(c.inputs);
    EXPECT_DOUBLE_EQ(result_over(from_name, batches), result_over(c.direct, batches));
  }
}

// Keras's AUC(multi_label=True): one curve per label column, the result the mean of their areas
// (weighted by label_weights); each column's area is the single-label AUC of that column, sample
// weights applying to every label of their row. Without multi_label, label_weights weigh each
// column's points of the one curve.
TEST(Metrics, MultiLabelAUCAveragesEachLabelsArea) {
  Tensor p = stateless_random_uniform({64, 3}, {9, 1});
  Tensor y =
      cast(greater(add(p, stateless_random_uniform({64, 3}, {9, 2}, -0.5, 0.5)), 0.5), kFloat32);
  Tensor w = stateless_random_uniform({64}, {9, 3});
  for (AUCCurve curve : {AUCCurve::ROC, AUCCurve::PR}) {
    std::vector<double> per_label;
    for (int64_t j = 0; j < 3; ++j) {
      AUC one({.curve = curve});
      one.update_state(slice(y, {Slice{}, Slice{j, j + 1}}), slice(p, {Slice{}, Slice{j, j + 1}}),
                       w);
      per_label.push_back(one.result());
    }
    AUC multi({.curve = curve, .multi_label = true, .num_labels = 3});
    multi.update_state(slice(y, {Slice{0, 40}}), slice(p, {Slice{0, 40}}),
                       slice(w, {Slice{0, 40}}));
    multi.update_state(slice(y, {Slice{40, 64}}), slice(p, {Slice{40, 64}}),
                       slice(w, {Slice{40, 64}}));
    EXPECT_NEAR(multi.result(), (per_label[0] + per_label[1] + per_label[2]) / 3, 1e-12);
    AUC weighted(
        {.curve = curve, .multi_label = true, .num_labels = 3, .label_weights = {1, 0, 3}});
    weighted.update_state(y, p, w);
    EXPECT_NEAR(weighted.result(), (per_label[0] + 3 * per_label[2]) / 4, 1e-12);
  }
  // One curve over every value, the columns weighted: as sample weights of that shape.
  AUC columns({.label_weights = {1, 0.5, 2}});
  columns.update_state(y, p, w);
  AUC reference;
  Tensor lw = Tensor::from_vector(std::vector<double>{1, 0.5, 2});
  reference.update_state(y, p, mul(expand_dims(cast(w, kFloat64), -1), lw));
  EXPECT_NEAR(columns.result(), reference.result(), 1e-12);
  EXPECT_THAT([] { AUC({.multi_label = true}); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  ::testing::HasSubstr("multi_label needs num_labels")));
  EXPECT_THAT([&] { AUC({.multi_label = true, .num_labels = 2}).update_state(y, p); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  ::testing::HasSubstr("multi_label predictions must be (batch, 2), got (64, 3)")));
}

// Keras's Precision/Recall(thresholds, top_k, class_id) as metrics_utils computes them, in
// float64: entries outside each row's top_k become NEG_INF (-1e10; ties: the lower index stays),
// then class_id takes a column, and a prediction is positive when strictly above a threshold.
std::vector<double> keras_precision_recall(const std::vector<double>& y,
                                           const std::vector<double>& p,
                                           const std::vector<double>& w, int64_t width,
                                           std::vector<double> thresholds, int top_k, int class_id,
                                           bool recall) {
  std::vector<double> filtered = p;
  if (top_k > 0) {
    for (size_t row = 0; row < p.size(); row += width) {
      for (int64_t j = 0; j < width; ++j) {
        int64_t better = 0;  // entries that tf.math.top_k puts before this one
        for (int64_t i = 0; i < width; ++i)
          better += p[row + i] > p[row + j] || (p[row + i] == p[row + j] && i < j);
        if (better >= top_k) filtered[row + j] = -1e10;
      }
    }
  }
  if (thresholds.empty()) thresholds = {top_k > 0 ? -1e10 : 0.5};
  std::vector<double> out;
  for (double t : thresholds) {
    double tp = 0, other = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      if (class_id >= 0 && static_cast<int64_t>(i) % width != class_id) continue;
      bool positive = filtered[i] > t, label = y[i] != 0;
      tp += label && positive ? w[i / width] : 0;
      other += (recall ? label && !positive : !label && positive) ? w[i / width] : 0;
    }
    out.push_back(tp + other > 0 ? tp / (tp + other) : 0);
  }
  return out;
}

TEST(Metrics, PrecisionAndRecallAtThresholdsTopKAndClassId) {
  // Keras's documented example: top_k=2 over four tied scores keeps the first two.
  Precision doc_example({.top_k = 2});
  doc_example.update_state(Tensor::from_vector(std::vector<float>{0, 0, 1, 1}),
                           Tensor::from_vector(std::vector<float>{1, 1, 1, 1}));
  EXPECT_EQ(doc_example.result(), 0.0);
  // (6, 4) scores with ties, in float64 so that thresholds compare exactly.
  const std::vector<double> p = {0.9, 0.1, 0.4, 0.4, 0.2, 0.2, 0.2, 0.7, 0.5,  0.5,  0.5, 0.5,
                                 0.0, 0.3, 0.8, 0.6, 1.0, 0.9, 0.1, 0.3, 0.25, 0.75, 0.6, 0.2};
  const std::vector<double> y = {1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1,
                                 0, 1, 1, 0, 1, 0, 0, 0, 0, 1, 1, 0};
  const std::vector<double> w = {1, 0.5, 2, 1, 0.25, 3};
  Tensor scores = reshape(Tensor::from_vector(p), {6, 4});
  Tensor labels = reshape(Tensor::from_vector(y), {6, 4});
  Tensor weights = Tensor::from_vector(w);
  struct Case {
    std::vector<double> thresholds;
    int top_k, class_id;
  };
  for (const Case& c : std::vector<Case>{{{}, 0, -1},
                                         {{0.7, 0.2, 0.5, 0.0, 1.0}, 0, -1},
                                         {{}, 1, -1},
                                         {{}, 2, -1},
                                         {{0.45, 0.1}, 2, -1},
                                         {{}, 2, 3},
                                         {{0.3, 0.6}, 3, 0},
                                         {{0.5}, 0, 2}}) {
    SCOPED_TRACE(::testing::Message() << "thresholds " << c.thresholds.size() << " top_k "
                                      << c.top_k << " class_id " << c.class_id);
    ThresholdOptions o{.thresholds = c.thresholds, .top_k = c.top_k, .class_id = c.class_id};
    Precision precision(o);
    Recall recall(o);
    // Two batches: the sums carry over.
    for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 4}, {4, 6}}) {
      Slice rows{begin, end};
      precision.update_state(slice(labels, {rows}), slice(scores, {rows}), slice(weights, {rows}));
      recall.update_state(slice(labels, {rows}), slice(scores, {rows}), slice(weights, {rows}));
    }
    std::vector<double> want_p =
        keras_precision_recall(y, p, w, 4, c.thresholds, c.top_k, c.class_id, false);
    std::vector<double> want_r =
        keras_precision_recall(y, p, w, 4, c.thresholds, c.top_k, c.class_id, true);
    ASSERT_EQ(precision.results().size(), std::max<size_t>(1, c.thresholds.size()));
    for (size_t i = 0; i < want_p.size(); ++i) {
      EXPECT_NEAR(precision.results()[i], want_p[i], 1e-12) << "threshold " << i;
      EXPECT_NEAR(recall.results()[i], want_r[i], 1e-12) << "threshold " << i;
    }
    if (want_p.size() == 1) {
      EXPECT_EQ(precision.result(), precision.results()[0]);
    }
  }
  // Several values: result() names results(); thresholds outside [0, 1] and a top_k wider than
  // the rows are refused.
  EXPECT_THAT(
      [] {
        Precision({.thresholds = {0.2, 0.8}}).result();
      },
      ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr(
          "metric \"precision\" has 2 values (one per threshold): read them with "
          "results()")));
  EXPECT_THAT(
      [] {
        Recall({.thresholds = {0.5, 1.5}});
      },
      ::testing::ThrowsMessage<InvalidArgument>(
          ::testing::HasSubstr("recall: thresholds must be in [0, 1], got 1.5")));
  EXPECT_THAT([&] { Precision({.top_k = 5}).update_state(labels, scores); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr(
                  "precision: top_k 5 is more than the 4 predictions per row of shape (6, 4)")));
}

TEST(MetricsErrors, ProbabilitiesOutOfRangeAndBadClassIds) {
  Tensor labels = Tensor::from_vector(std::vector<double>{0, 1});
  try {
    AUC().update_state(labels, Tensor::from_vector(std::vector<double>{0.5, 1.5}));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), ::testing::HasSubstr("auc: predictions must be in [0, 1]"));
    EXPECT_THAT(e.message(), ::testing::HasSubstr("1.5"));
  }
  EXPECT_THROW(Precision({.class_id = 3})
                   .update_state(more_metrics().load("class_id", "y_true0"),
                                 more_metrics().load("class_id", "y_pred0")),
               InvalidArgument);
  EXPECT_THROW(MeanIoU(2).update_state(more_metrics().load("iou", "y_true0"),
                                       more_metrics().load("iou", "y_pred0")),
               InvalidArgument);
}

}  // namespace
}  // namespace weft::nn::metrics
