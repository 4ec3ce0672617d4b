// Keras losses. A Loss maps (y_true, y_pred) to the mean over the batch of per-example losses
// (Keras's SUM_OVER_BATCH_SIZE reduction), each optionally scaled by a sample weight, computed in
// float32 or float64 whatever the prediction dtype (mixed precision computes losses in float32).
//
//   weft::nn::losses::SparseCategoricalCrossentropy loss_fn({.from_logits = true});
//   weft::Tensor loss = loss_fn(labels, logits);
//   weft::Tensor weighted = loss_fn(labels, logits, sample_weight);  // sum(l * w) / count(l)
//
// Label shapes follow Keras's fit: predictions of one value per example may be (N,) or (N, 1),
// and labels (N,) or (N, 1) against them; a label with a trailing axis of 1 fits predictions
// without it, and labels without the prediction's trailing axis of 1 get it (Keras's
// match_dtype_and_rank and squeeze_or_expand_dimensions). Other shapes must match exactly, except
// the sparse crossentropy's integer labels (one axis fewer than the class scores).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "weft/core/config_dict.h"
#include "weft/core/tensor.h"

namespace weft::nn::losses {

class Loss {
 public:
  // Called with y_true and y_pred already shaped by the label-shape rules above.
  using PerExample = std::function<Tensor(const Tensor& y_true, const Tensor& y_pred)>;
  Loss(std::string name, PerExample per_example);
  // A built-in loss: its options as a config, for from_config (a saved model's compile settings).
  Loss(std::string name, PerExample per_example, ConfigDict config);
  // sum(per_example(y_true, y_pred) * sample_weight) / number of per-example losses; without a
  // sample weight, their mean. sample_weight: see apply_sample_weight.
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred,
                    const Tensor& sample_weight = {}) const;
  // One loss per example (shape: y_pred's without its last axis; (N, T) for sequences of T steps).
  Tensor per_example(const Tensor& y_true, const Tensor& y_pred) const;
  const std::string& name() const { return state_->name; }
  // The options of a built-in loss; nullopt for one made from a function (it cannot be saved).
  const std::optional<ConfigDict>& get_config() const { return state_->config; }

 private:
  struct State {
    std::string name;
    PerExample fn;
    std::optional<ConfigDict> config;
  };
  std::shared_ptr<const State> state_;
};

// Keras's label-shape rules (above): y_true and y_pred, each reshaped to fit the other.
std::pair<Tensor, Tensor> match_label_shape(const Tensor& y_true, const Tensor& y_pred);

// losses × sample_weight. The weights are a scalar, one per example ((N,) or (N, 1)), or one per
// loss (per-step weights of a sequence, shape (N, T)); per-example weights apply to every step.
// InvalidArgument naming both shapes otherwise.
Tensor apply_sample_weight(const Tensor& losses, const Tensor& sample_weight);

struct CrossentropyOptions {
  bool from_logits = false;
  // Labels are pulled towards the uniform distribution: y (1 - s) + s / classes (binary: 2).
  double label_smoothing = 0;
};

// Integer labels (batch) or (batch, 1) against class scores (batch, classes).
struct SparseCategoricalCrossentropy : Loss {
  // label_smoothing must be 0: Keras has no such option for integer labels.
  explicit SparseCategoricalCrossentropy(CrossentropyOptions options = {});
};
// One-hot (or soft) labels against class scores, both (batch, classes).
struct CategoricalCrossentropy : Loss {
  explicit CategoricalCrossentropy(CrossentropyOptions options = {});
};
// Labels in {0, 1} (or [0, 1]) against probabilities or logits; mean over the last axis.
struct BinaryCrossentropy : Loss {
  explicit BinaryCrossentropy(CrossentropyOptions options = {});
};
// The regression losses, each the mean over the last axis.
struct MeanSquaredError : Loss {
  MeanSquaredError();
};
struct MeanAbsoluteError : Loss {
  MeanAbsoluteError();
};
// 100 |y - p| / max(|y|, 1e-7).
struct MeanAbsolutePercentageError : Loss {
  MeanAbsolutePercentageError();
};
// (log(1 + max(p, 1e-7)) - log(1 + max(y, 1e-7)))^2.
struct MeanSquaredLogarithmicError : Loss {
  MeanSquaredLogarithmicError();
};
struct Huber : Loss {
  explicit Huber(double delta = 1.0);
};
// log(cosh(p - y)), computed as x + softplus(-2x) - log 2 so that it does not overflow.
struct LogCosh : Loss {
  LogCosh();
};
// Distributions along the last axis: sum of y log(y / p), both clipped to [1e-7, 1].
struct KLDivergence : Loss {
  KLDivergence();
};
// p - y log(p + 1e-7).
struct Poisson : Loss {
  Poisson();
};
// Minus the cosine of the angle between y and p along `axis` (so that minimising aligns them).
struct CosineSimilarity : Loss {
  explicit CosineSimilarity(int axis = -1);
};
// Labels in {-1, 1} (labels all in {0, 1} are mapped to them): max(1 - y p, 0), and its square.
struct Hinge : Loss {
  Hinge();
};
struct SquaredHinge : Loss {
  SquaredHinge();
};
// One-hot labels: max(0, max((1 - y) p) - sum(y p) + 1).
struct CategoricalHinge : Loss {
  CategoricalHinge();
};

// By Keras name or alias ("sparse_categorical_crossentropy", "mse", "mae", "mape", "msle",
// "kld", "logcosh", ...); InvalidArgument listing them otherwise.
Loss get(const std::string& name);
// The built-in loss `name` (a Loss's name()) with the options of `config` (its get_config()).
Loss from_config(const std::string& name, const ConfigDict& config);

}  // namespace weft::nn::losses
