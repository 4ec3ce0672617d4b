// keras.layers.Dense: activation(x @ kernel + bias) over the last axis of x.
//
//   weft::nn::Dense hidden(700, "relu");
//   weft::nn::Dense logits(10, "", {.kernel_initializer = "he_normal"});
//   weft::nn::Dense decayed(10, "", {.kernel_regularizer = weft::nn::regularizers::l2(1e-4)});
#pragma once

#include <string>

#include "weft/dtensor/layout.h"
#include "weft/nn/layer.h"
#include "weft/nn/regularizers.h"

namespace weft::nn {

struct DenseOptions {
  bool use_bias = true;
  std::string kernel_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  Regularizer kernel_regularizer{};  // weft/nn/regularizers.h; by name or object
  Regularizer bias_regularizer{};
  Regularizer activity_regularizer{};
  Constraint kernel_constraint{};
  Constraint bias_constraint{};
  std::string dtype{};  // a policy name (weft/precision/policy.h); empty: the global policy
  std::string name{};
  // Keras's DTensor layers: the kernel (and bias) as DVariables laid out so (weft/dtensor). An
  // empty bias layout with a kernel layout is the kernel's without its first axis, as the DTensor
  // tutorial lays its biases. Not part of get_config.
  dtensor::Layout kernel_layout{};
  dtensor::Layout bias_layout{};
};

class Dense : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static Dense from_config(const ConfigDict& config);
  explicit Dense(int64_t units, const std::string& activation = "", DenseOptions options = {});
};

}  // namespace weft::nn
