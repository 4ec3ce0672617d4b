// Keras metrics: stateful accumulators updated batch by batch, read with result() and cleared with
// reset_state(). A Metric is a handle; copies share state, and updates from several threads are
// safe. A strategy's replicas each compute their partial (sum of values, number of values) with
// partial() and the strategy merges them in replica order (merge_state), so results do not depend
// on timing.
//
//   weft::nn::metrics::SparseCategoricalAccuracy acc;
//   acc.update_state(labels, probabilities);
//   double so_far = acc.result();
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "weft/core/tensor.h"

namespace weft::nn::metrics {

// What a batch (or a replica's share of one) adds to a mean: the sum of its values and how many.
struct Partial {
  double total = 0, count = 0;
  Partial& operator+=(const Partial& o) {
    total += o.total;
    count += o.count;
    return *this;
  }
};

class Metric {
 public:
  struct Impl {
    virtual ~Impl() = default;
    // (sum of values, number of values) for one batch.
    virtual std::pair<double, double> batch(const Tensor& y_true, const Tensor& y_pred) = 0;
    std::string name;
    std::mutex mu;
    double total = 0, count = 0;
  };
  explicit Metric(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred);
  // What update_state would add for this batch, without adding it.
  Partial partial(const Tensor& y_true, const Tensor& y_pred) const;
  void merge_state(const Partial& partial);
  // The mean so far (0 before any update).
  double result() const;
  void reset_state();
  const std::string& name() const { return impl_->name; }

 private:
  std::shared_ptr<Impl> impl_;
};

// The running mean of the values passed to update_state(values).
class Mean : public Metric {
 public:
  explicit Mean(const std::string& name = "mean");
  void update_state(const Tensor& values);
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
// boundary count as in).
struct SparseTopKCategoricalAccuracy : Metric {
  explicit SparseTopKCategoricalAccuracy(
      int k = 5, const std::string& name = "sparse_top_k_categorical_accuracy");
};

// By Keras name. "accuracy"/"acc" pick, as Keras does, the accuracy that fits each batch's shapes
// (keeping the name "accuracy"): binary when y_pred has one score per example (last axis 1, or
// rank 1), sparse categorical when y_true holds integer labels (one axis fewer than y_pred, or a
// last axis of 1), categorical (one-hot labels) otherwise. `loss_name` is not needed for that.
Metric get(const std::string& name, const std::string& loss_name = "");

}  // namespace weft::nn::metrics
