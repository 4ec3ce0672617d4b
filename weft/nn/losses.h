// Keras losses. A Loss maps (y_true, y_pred) to the mean over the batch of per-example losses
// (Keras's SUM_OVER_BATCH_SIZE reduction), computed in float32 or float64 whatever the prediction
// dtype (mixed precision computes losses in float32).
//
//   weft::nn::losses::SparseCategoricalCrossentropy loss_fn({.from_logits = true});
//   weft::Tensor loss = loss_fn(labels, logits);
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
  using PerExample = std::function<Tensor(const Tensor& y_true, const Tensor& y_pred)>;
  Loss(std::string name, PerExample per_example);
  // A built-in loss: its options as a config, for from_config (a saved model's compile settings).
  Loss(std::string name, PerExample per_example, ConfigDict config);
  // Mean over the batch of per_example(y_true, y_pred).
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred) const;
  // One loss per example (shape: y_pred's without its last axis).
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

struct CrossentropyOptions {
  bool from_logits = false;
};

// Integer labels (batch) or (batch, 1) against class scores (batch, classes).
struct SparseCategoricalCrossentropy : Loss {
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
struct MeanSquaredError : Loss {
  MeanSquaredError();
};
struct MeanAbsoluteError : Loss {
  MeanAbsoluteError();
};
struct Huber : Loss {
  explicit Huber(double delta = 1.0);
};

// By Keras name ("sparse_categorical_crossentropy", "mse", ...); InvalidArgument otherwise.
Loss get(const std::string& name);
// The built-in loss `name` (a Loss's name()) with the options of `config` (its get_config()).
Loss from_config(const std::string& name, const ConfigDict& config);

}  // namespace weft::nn::losses
