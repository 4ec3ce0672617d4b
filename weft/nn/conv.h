// Keras's convolution layers over channels-last inputs, each with bias and activation:
// Conv1D (batch, steps, channels), over (batch, height, width, channels) Conv2D (optionally
// grouped), Conv2DTranspose, DepthwiseConv2D and SeparableConv2D, and Conv3D over (batch, depth,
// height, width, channels). Padding is Keras's "valid" or "same" (Conv1D also "causal": the
// output at step t sees inputs up to t only); strides and dilation_rate are {height, width}
// ({depth, height, width} for Conv3D).
//
//   weft::nn::Conv2D conv(32, {3, 3}, {.padding = "same", .activation = "relu"});
//   weft::Tensor y = conv(images);   // (batch, 28, 28, 1) -> (batch, 28, 28, 32)
//   weft::nn::Conv1D causal(16, 3, {.padding = "causal", .dilation_rate = 2});
//   weft::nn::Conv2DTranspose up(8, {3, 3}, {.strides = {2, 2}, .padding = "same"});
#pragma once

#include <string>

#include "weft/nn/layer.h"
#include "weft/nn/regularizers.h"
#include "weft/ops/conv.h"

namespace weft::nn {

struct Conv2DOptions {
  Size2 strides = {1, 1};
  std::string padding = "valid";
  // Strides above 1 together with a dilation above 1 are rejected, as in Keras.
  Size2 dilation_rate = {1, 1};
  // Input channels are cut into `groups` groups, each convolved with filters / groups filters.
  int64_t groups = 1;
  std::string activation{};
  bool use_bias = true;
  std::string kernel_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  Regularizer kernel_regularizer{};  // weft/nn/regularizers.h
  Regularizer bias_regularizer{};
  Regularizer activity_regularizer{};
  Constraint kernel_constraint{};
  Constraint bias_constraint{};
  std::string dtype{};  // a policy name (weft/precision/policy.h); empty: the global policy
  std::string name{};
};

class Conv2D : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static Conv2D from_config(const ConfigDict& config);
  // Weights: kernel (kh, kw, input channels / groups, filters), then bias (filters).
  Conv2D(int64_t filters, Size2 kernel_size, Conv2DOptions options = {});
};

struct Conv3DOptions {
  Size3 strides = {1, 1, 1};  // {depth, height, width}
  std::string padding = "valid";
  Size3 dilation_rate = {1, 1, 1};
  int64_t groups = 1;
  std::string activation{};
  bool use_bias = true;
  std::string kernel_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  Regularizer kernel_regularizer{};  // weft/nn/regularizers.h
  Regularizer bias_regularizer{};
  Regularizer activity_regularizer{};
  Constraint kernel_constraint{};
  Constraint bias_constraint{};
  std::string dtype{};
  std::string name{};
};

// Over (batch, depth, height, width, channels) volumes (video, scans), on oneDNN's 3-D
// convolution. Weights: kernel (kd, kh, kw, input channels / groups, filters), then bias.
class Conv3D : public Layer {
 public:
  static Conv3D from_config(const ConfigDict& config);
  Conv3D(int64_t filters, Size3 kernel_size, Conv3DOptions options = {});
};

struct Conv1DOptions {
  int64_t strides = 1;
  std::string padding = "valid";  // or "same", "causal"
  int64_t dilation_rate = 1;
  int64_t groups = 1;
  std::string activation{};
  bool use_bias = true;
  std::string kernel_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  Regularizer kernel_regularizer{};  // weft/nn/regularizers.h
  Regularizer bias_regularizer{};
  Regularizer activity_regularizer{};
  Constraint kernel_constraint{};
  Constraint bias_constraint{};
  std::string dtype{};
  std::string name{};
};

class Conv1D : public Layer {
 public:
  static Conv1D from_config(const ConfigDict& config);
  // Weights: kernel (kernel_size, input channels / groups, filters), then bias (filters).
  Conv1D(int64_t filters, int64_t kernel_size, Conv1DOptions options = {});
};

// The transpose of Conv2D (a learned upsampling): output height h * stride for "same",
// h * stride + max(k - stride, 0) for "valid" (k the dilated kernel), as Keras. Weights: kernel
// (kh, kw, filters, input channels), then bias (filters). options.groups must be 1.
class Conv2DTranspose : public Layer {
 public:
  static Conv2DTranspose from_config(const ConfigDict& config);
  Conv2DTranspose(int64_t filters, Size2 kernel_size, Conv2DOptions options = {});
};

struct DepthwiseConv2DOptions {
  Size2 strides = {1, 1};
  std::string padding = "valid";
  int64_t depth_multiplier = 1;  // outputs per input channel
  Size2 dilation_rate = {1, 1};
  std::string activation{};
  bool use_bias = true;
  std::string depthwise_initializer = "glorot_uniform";
  std::string pointwise_initializer = "glorot_uniform";  // SeparableConv2D's 1x1 kernel
  std::string bias_initializer = "zeros";
  Regularizer depthwise_regularizer{};  // weft/nn/regularizers.h
  Regularizer pointwise_regularizer{};  // SeparableConv2D's
  Regularizer bias_regularizer{};
  Regularizer activity_regularizer{};
  Constraint depthwise_constraint{};
  Constraint pointwise_constraint{};
  Constraint bias_constraint{};
  std::string dtype{};
  std::string name{};
};

// Each input channel convolved with its own depth_multiplier filters. Weights: depthwise_kernel
// (kh, kw, channels, depth_multiplier), then bias (channels * depth_multiplier).
class DepthwiseConv2D : public Layer {
 public:
  static DepthwiseConv2D from_config(const ConfigDict& config);
  explicit DepthwiseConv2D(Size2 kernel_size, DepthwiseConv2DOptions options = {});
};

// A depthwise convolution, then a 1x1 convolution to `filters` channels. Weights:
// depthwise_kernel (kh, kw, channels, depth_multiplier), pointwise_kernel (1, 1, channels *
// depth_multiplier, filters), then bias (filters).
class SeparableConv2D : public Layer {
 public:
  static SeparableConv2D from_config(const ConfigDict& config);
  SeparableConv2D(int64_t filters, Size2 kernel_size, DepthwiseConv2DOptions options = {});
};

}  // namespace weft::nn
