// Keras's preprocessing layers Normalization and Rescaling (keras.layers.experimental.
// preprocessing in TF 2.4).
//
//   weft::nn::Normalization norm;          // one mean and variance per feature (last axis)
//   norm.adapt(train_images);              // or a Dataset of them
//   weft::nn::Rescaling scale(1.0 / 255);  // x * scale + offset
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "weft/data/dataset.h"
#include "weft/nn/core_layers.h"
#include "weft/nn/layer.h"

namespace weft::nn {

struct NormalizationOptions {
  int64_t axis = -1;  // the axis that keeps its own statistics
  // Given statistics (one per entry of `axis`); otherwise adapt() computes them.
  std::optional<std::vector<double>> mean{}, variance{};
  std::string dtype{};
  std::string name{};
};

// (x - mean) / max(sqrt(variance), 1e-7), with mean and variance per entry of `axis`. Its
// non-trainable weights "mean", "variance" and "count" are saved with the model.
class Normalization : public Layer {
 public:
  static Normalization from_config(const ConfigDict& config);
  explicit Normalization(NormalizationOptions options = {});
  // Sets mean and variance (population) from `data` (batch first), or from every element of
  // `dataset` (its first component: a dataset of (x, y) adapts to x), in float64, one pass.
  void adapt(const Tensor& data) const;
  void adapt(const data::Dataset& dataset) const;
};

class Rescaling : public Layer {
 public:
  static Rescaling from_config(const ConfigDict& config);
  explicit Rescaling(double scale, double offset = 0, LayerOptions options = {});
};

}  // namespace weft::nn
