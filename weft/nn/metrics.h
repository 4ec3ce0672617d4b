// Keras metrics: stateful accumulators updated batch by batch, read with result() and cleared with
// reset_state(). A Metric is a handle; copies share state, and updates from several threads are
// safe. A metric's state is a few sums (a mean's: its weighted values' sum and the weights' sum;
// AUC's: four weighted counts per threshold). A strategy's replicas each compute the sums their
// rows add with partial() and the strategy merges them in replica order (merge_state), so
// results do not depend on timing.
//
//   weft::nn::metrics::SparseCategoricalAccuracy acc;
//   acc.update_state(labels, probabilities);
//   weft::nn::metrics::AUC auc({.curve = weft::nn::metrics::AUCCurve::PR});
//   auc.update_state(labels, probabilities, sample_weight);
//   double so_far = acc.result();
//
// Labels and predictions follow the losses' label-shape rules (weft/nn/losses.h), and a
// sample_weight weighs each example (or each value) as a loss's does.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "weft/core/tensor.h"

namespace weft::nn::metrics {

// What a batch (or a replica's share of one) adds to a metric's state; partials add element by
// element (an empty one adds nothing).
struct Partial {
  std::vector<double> sums;
  Partial& operator+=(const Partial& o);
};

class Metric {
 public:
  struct Spec {
    std::string name;
    size_t state_size = 2;
    // The sums one batch adds (state_size of them); sample_weight may be undefined.
    std::function<std::vector<double>(const Tensor& y_true, const Tensor& y_pred,
                                      const Tensor& sample_weight)>
        batch;
    // The metric's value from its sums; by default sums[0] / sums[1] (0 while sums[1] is 0).
    std::function<double(const std::vector<double>& sums)> result;
    // Instead of result, for a metric with several values: every value from the sums.
    std::function<std::vector<double>(const std::vector<double>& sums)> results{};
  };
  explicit Metric(Spec spec);
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {});
  // What update_state would add for this batch, without adding it.
  Partial partial(const Tensor& y_true, const Tensor& y_pred,
                  const Tensor& sample_weight = {}) const;
  void merge_state(const Partial& partial);
  // The metric's value; a metric with several values (Precision and Recall with a list of
  // thresholds) refuses, naming results().
  double result() const;
  // Every value: one per threshold for the counts at thresholds, Precision and Recall; one for
  // every other metric.
  std::vector<double> results() const;
  void reset_state();
  const std::string& name() const { return impl_->spec.name; }
  // Renames the metric (every handle on it): compile names a weighted metric "weighted_<name>"
  // when its name is taken, as Keras does.
  void set_name(const std::string& name) { impl_->spec.name = name; }
  size_t state_size() const { return impl_->spec.state_size; }

 private:
  struct Impl {
    Spec spec;
    mutable std::mutex mu;
    std::vector<double> sums;
  };
  std::shared_ptr<Impl> impl_;
};

// ---- means of values, and of per-example values of (y_true, y_pred) --------------------------

// The weighted mean of the values passed to update_state(values, sample_weight).
class Mean : public Metric {
 public:
  explicit Mean(const std::string& name = "mean");
  void update_state(const Tensor& values, const Tensor& sample_weight = {});
};
// The weighted sum of the values passed to update_state(values, sample_weight).
class Sum : public Metric {
 public:
  explicit Sum(const std::string& name = "sum");
  void update_state(const Tensor& values, const Tensor& sample_weight = {});
};
// Fraction of elements where y_pred == y_true.
struct Accuracy : Metric {
  explicit Accuracy(const std::string& name = "accuracy");
};
// Fraction of elements where (y_pred > threshold) == y_true: labels in {0, 1}, probabilities.
struct BinaryAccuracy : Metric {
  explicit BinaryAccuracy(const std::string& name = "binary_accuracy", double threshold = 0.5);
};
// Fraction of examples whose arg-max prediction is the arg-max of the one-hot label.
struct CategoricalAccuracy : Metric {
  explicit CategoricalAccuracy(const std::string& name = "categorical_accuracy");
};
// Fraction of examples whose arg-max prediction is the integer label.
struct SparseCategoricalAccuracy : Metric {
  explicit SparseCategoricalAccuracy(const std::string& name = "sparse_categorical_accuracy");
};
// Fraction of examples whose label is among the k highest scores (tf.math.in_top_k: ties at the
// boundary count as in); integer labels, or one-hot labels for TopKCategoricalAccuracy.
struct SparseTopKCategoricalAccuracy : Metric {
  explicit SparseTopKCategoricalAccuracy(
      int k = 5, const std::string& name = "sparse_top_k_categorical_accuracy");
};
struct TopKCategoricalAccuracy : Metric {
  explicit TopKCategoricalAccuracy(int k = 5,
                                   const std::string& name = "top_k_categorical_accuracy");
};
// The means of the losses of the same names (weft/nn/losses.h), per example.
struct MeanSquaredError : Metric {
  explicit MeanSquaredError(const std::string& name = "mean_squared_error");
};
struct MeanAbsoluteError : Metric {
  explicit MeanAbsoluteError(const std::string& name = "mean_absolute_error");
};
struct MeanAbsolutePercentageError : Metric {
  explicit MeanAbsolutePercentageError(const std::string& name = "mean_absolute_percentage_error");
};
struct MeanSquaredLogarithmicError : Metric {
  explicit MeanSquaredLogarithmicError(const std::string& name = "mean_squared_logarithmic_error");
};
// The square root of the mean squared error over every value.
struct RootMeanSquaredError : Metric {
  explicit RootMeanSquaredError(const std::string& name = "root_mean_squared_error");
};
struct BinaryCrossentropy : Metric {
  explicit BinaryCrossentropy(const std::string& name = "binary_crossentropy",
                              bool from_logits = false, double label_smoothing = 0);
};
struct CategoricalCrossentropy : Metric {
  explicit CategoricalCrossentropy(const std::string& name = "categorical_crossentropy",
                                   bool from_logits = false, double label_smoothing = 0);
};
struct SparseCategoricalCrossentropy : Metric {
  explicit SparseCategoricalCrossentropy(
      const std::string& name = "sparse_categorical_crossentropy", bool from_logits = false);
};
struct KLDivergence : Metric {
  explicit KLDivergence(const std::string& name = "kullback_leibler_divergence");
};
// The cosine of the angle between y_true and y_pred along the last axis (1: aligned).
struct CosineSimilarity : Metric {
  explicit CosineSimilarity(const std::string& name = "cosine_similarity");
};
struct Poisson : Metric {
  explicit Poisson(const std::string& name = "poisson");
};
struct LogCoshError : Metric {
  explicit LogCoshError(const std::string& name = "logcosh");
};
struct Hinge : Metric {
  explicit Hinge(const std::string& name = "hinge");
};
struct SquaredHinge : Metric {
  explicit SquaredHinge(const std::string& name = "squared_hinge");
};
struct CategoricalHinge : Metric {
  explicit CategoricalHinge(const std::string& name = "categorical_hinge");
};

// ---- counts at thresholds: labels are positive when non-zero, predictions in [0, 1] ----------

// As Keras's `thresholds`, `top_k` and `class_id`. A prediction counts as positive when it is
// above a threshold (strictly); with several thresholds the metric has one value per threshold,
// in the order given (results(); fit logs them as "<name>[i]"), with one it has one value. Each
// threshold must be in [0, 1]; none means 0.5, or with top_k every value (-1e10, Keras's NEG_INF).
// top_k keeps only the k highest predictions of each row (the last axis; on ties the lower index
// first), the rest count as negative; class_id then takes one column.
struct ThresholdOptions {
  std::vector<double> thresholds{};
  int top_k = 0;      // > 0: only each row's k highest predictions can be positive
  int class_id = -1;  // >= 0: only that column of (batch, classes) labels and predictions
};
struct TruePositives : Metric {
  explicit TruePositives(ThresholdOptions options = {}, const std::string& name = "true_positives");
};
struct TrueNegatives : Metric {
  explicit TrueNegatives(ThresholdOptions options = {}, const std::string& name = "true_negatives");
};
struct FalsePositives : Metric {
  explicit FalsePositives(ThresholdOptions options = {},
                          const std::string& name = "false_positives");
};
struct FalseNegatives : Metric {
  explicit FalseNegatives(ThresholdOptions options = {},
                          const std::string& name = "false_negatives");
};
// TP / (TP + FP) and TP / (TP + FN); 0 while the denominator is 0.
struct Precision : Metric {
  explicit Precision(ThresholdOptions options = {}, const std::string& name = "precision");
};
struct Recall : Metric {
  explicit Recall(ThresholdOptions options = {}, const std::string& name = "recall");
};

// Area under the ROC or precision-recall curve, from weighted counts at num_thresholds evenly
// spaced thresholds, summed as Keras's AUC does (INTERPOLATION: trapezoids for ROC, Davis and
// Goadrich's interpolation for PR; MINORING/MAJORING: lower/upper Riemann sums).
enum class AUCCurve { ROC, PR };
enum class AUCSummation { INTERPOLATION, MINORING, MAJORING };
struct AUCOptions {
  int num_thresholds = 200;
  AUCCurve curve = AUCCurve::ROC;
  AUCSummation summation_method = AUCSummation::INTERPOLATION;
  // Multi-label data, (batch, num_labels) labels and predictions: one curve per label and the
  // mean of their areas (weighted by label_weights when given), as Keras's multi_label = True.
  // num_labels is Keras 2.5's argument (2.4 learns it from the first batch); weft needs it, since
  // a metric's state has a fixed size. Without multi_label, every value is one point of one
  // curve, and label_weights (one per column) weigh the columns' values.
  bool multi_label = false;
  int num_labels = 0;
  std::vector<double> label_weights{};
};
struct AUC : Metric {
  explicit AUC(AUCOptions options = {}, const std::string& name = "auc");
};

// Intersection over union of class ids (y_true and y_pred both integer class ids in
// [0, num_classes)), averaged over the classes that occur in either.
struct MeanIoU : Metric {
  explicit MeanIoU(int num_classes, const std::string& name = "mean_io_u");
};

// By Keras name: a function's name or alias ("mse", "mae", "mape", "msle", "binary_crossentropy",
// "top_k_categorical_accuracy", ...) or a class name ("AUC", "Precision", "Recall",
// "RootMeanSquaredError", ... and their snake_case forms "auc", "precision", ...); the metric is
// named by the string given for a function, by its default name for a class. "accuracy"/"acc"
// pick, as Keras does, the accuracy that fits each batch's shapes (keeping the name
// "accuracy"): binary when y_pred has one score per example (last axis 1, or rank 1), sparse
// categorical when y_true holds integer labels (one axis fewer than y_pred, or a last axis of 1),
// categorical (one-hot labels) otherwise. `loss_name` is not needed for that.
Metric get(const std::string& name, const std::string& loss_name = "");

}  // namespace weft::nn::metrics
