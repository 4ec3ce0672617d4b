// Keras pooling layers over NHWC inputs: MaxPooling2D and AveragePooling2D (windows of pool_size,
// strides defaulting to pool_size, "valid" or "same" padding; "same" averages only the elements
// inside the input, as TensorFlow), and GlobalAveragePooling2D (the mean over height and width).
//
//   weft::nn::MaxPooling2D pool;                                  // 2x2 windows, stride 2
//   weft::nn::AveragePooling2D avg({3, 3}, {.strides = {1, 1}, .padding = "same"});
//   weft::nn::GlobalAveragePooling2D gap;                         // (n, h, w, c) -> (n, c)
#pragma once

#include <string>

#include "weft/nn/layer.h"
#include "weft/ops/conv.h"

namespace weft::nn {

struct Pooling2DOptions {
  Size2 strides = {0, 0};  // {0, 0}: pool_size, Keras's strides=None
  std::string padding = "valid";
  std::string dtype{};  // a policy name (weft/precision/policy.h); empty: the global policy
  std::string name{};
};

class MaxPooling2D : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static MaxPooling2D from_config(const ConfigDict& config);
  explicit MaxPooling2D(Size2 pool_size = {2, 2}, Pooling2DOptions options = {});
};

class AveragePooling2D : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static AveragePooling2D from_config(const ConfigDict& config);
  explicit AveragePooling2D(Size2 pool_size = {2, 2}, Pooling2DOptions options = {});
};

struct GlobalPooling2DOptions {
  std::string dtype{};  // a policy name (weft/precision/policy.h); empty: the global policy
  std::string name{};
};

class GlobalAveragePooling2D : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static GlobalAveragePooling2D from_config(const ConfigDict& config);
  explicit GlobalAveragePooling2D(GlobalPooling2DOptions options = {});
};

}  // namespace weft::nn
