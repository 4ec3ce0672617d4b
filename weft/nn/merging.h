// Layers that merge several inputs (keras.layers.Concatenate, Add), for the Functional API.
//
//   weft::nn::KerasTensor merged = weft::nn::Concatenate()({a, b})[0];
#pragma once

#include "weft/nn/layer.h"

namespace weft::nn {

class Concatenate : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static Concatenate from_config(const ConfigDict& config);
  explicit Concatenate(int64_t axis = -1, const std::string& name = "");
};

class Add : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static Add from_config(const ConfigDict& config);
  explicit Add(const std::string& name = "");
};

}  // namespace weft::nn
