// keras.layers.Conv2D: a 2-D convolution over NHWC inputs with an HWIO kernel, plus bias and
// activation. Padding is Keras's "valid" or "same"; strides and dilation_rate are {height, width}.
//
//   weft::nn::Conv2D conv(32, {3, 3}, {.padding = "same", .activation = "relu"});
//   weft::Tensor y = conv(images);   // (batch, 28, 28, 1) -> (batch, 28, 28, 32)
#pragma once

#include <string>

#include "weft/nn/layer.h"
#include "weft/ops/conv.h"

namespace weft::nn {

struct Conv2DOptions {
  Size2 strides = {1, 1};
  std::string padding = "valid";
  // Strides above 1 together with a dilation above 1 are rejected, as in Keras.
  Size2 dilation_rate = {1, 1};
  std::string activation{};
  bool use_bias = true;
  std::string kernel_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  std::string dtype{};  // a policy name (weft/precision/policy.h); empty: the global policy
  std::string name{};
};

class Conv2D : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static Conv2D from_config(const ConfigDict& config);
  // Weights: kernel (kh, kw, input channels, filters), then bias (filters).
  Conv2D(int64_t filters, Size2 kernel_size, Conv2DOptions options = {});
};

}  // namespace weft::nn
