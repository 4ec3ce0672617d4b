// Layers that merge several inputs (keras.layers.Concatenate, Add, Subtract, Multiply, Average,
// Maximum, Minimum, Dot), for the Functional API.
//
//   weft::nn::KerasTensor merged = weft::nn::Concatenate()({a, b})[0];
#pragma once

#include <array>
#include <string>

#include "weft/nn/layer.h"

namespace weft::nn {

class Concatenate : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static Concatenate from_config(const ConfigDict& config);
  explicit Concatenate(int64_t axis = -1, const std::string& name = "");
};

// Elementwise merges of inputs of one shape (broadcasting as the ops do): the sum, the first
// minus the second (exactly two inputs), the product, the mean, the maximum and the minimum.
class Add : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static Add from_config(const ConfigDict& config);
  explicit Add(const std::string& name = "");
};
class Subtract : public Layer {
 public:
  static Subtract from_config(const ConfigDict& config);
  explicit Subtract(const std::string& name = "");
};
class Multiply : public Layer {
 public:
  static Multiply from_config(const ConfigDict& config);
  explicit Multiply(const std::string& name = "");
};
class Average : public Layer {
 public:
  static Average from_config(const ConfigDict& config);
  explicit Average(const std::string& name = "");
};
class Maximum : public Layer {
 public:
  static Maximum from_config(const ConfigDict& config);
  explicit Maximum(const std::string& name = "");
};
class Minimum : public Layer {
 public:
  static Minimum from_config(const ConfigDict& config);
  explicit Minimum(const std::string& name = "");
};

// The dot product of two inputs along `axes` (Keras counts the batch as axis 0): for (batch, d)
// inputs and axes {1, 1}, (batch, 1); for (batch, m, d) and (batch, n, d) with axes {2, 2},
// (batch, m, n). normalize: L2-normalise along the axes first (cosine similarity).
struct DotOptions {
  bool normalize = false;
  std::string name{};
};
class Dot : public Layer {
 public:
  static Dot from_config(const ConfigDict& config);
  explicit Dot(std::array<int64_t, 2> axes, DotOptions options = {});
  explicit Dot(int64_t axes, DotOptions options = {})
      : Dot(std::array<int64_t, 2>{axes, axes}, std::move(options)) {}
};

}  // namespace weft::nn
