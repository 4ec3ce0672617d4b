// Keras pooling layers over NHWC inputs: MaxPooling2D and AveragePooling2D (windows of pool_size,
// strides defaulting to pool_size, "valid" or "same" padding; "same" averages only the elements
// inside the input, as TensorFlow), GlobalAveragePooling2D and GlobalMaxPooling2D (over height and
// width); their 1-D forms over (batch, steps, channels) and 3-D forms over (batch, depth, height,
// width, channels).
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
// The maximum over height and width: (n, h, w, c) -> (n, c).
class GlobalMaxPooling2D : public Layer {
 public:
  static GlobalMaxPooling2D from_config(const ConfigDict& config);
  explicit GlobalMaxPooling2D(GlobalPooling2DOptions options = {});
};

// Over (batch, depth, height, width, channels): windows of pool_size {depth, height, width}.
struct Pooling3DOptions {
  Size3 strides = {0, 0, 0};  // {0, 0, 0}: pool_size
  std::string padding = "valid";
  std::string dtype{};
  std::string name{};
};
class MaxPooling3D : public Layer {
 public:
  static MaxPooling3D from_config(const ConfigDict& config);
  explicit MaxPooling3D(Size3 pool_size = {2, 2, 2}, Pooling3DOptions options = {});
};
class AveragePooling3D : public Layer {
 public:
  static AveragePooling3D from_config(const ConfigDict& config);
  explicit AveragePooling3D(Size3 pool_size = {2, 2, 2}, Pooling3DOptions options = {});
};
// The mean and the maximum over depth, height and width: (n, d, h, w, c) -> (n, c).
class GlobalAveragePooling3D : public Layer {
 public:
  static GlobalAveragePooling3D from_config(const ConfigDict& config);
  explicit GlobalAveragePooling3D(GlobalPooling2DOptions options = {});
};
class GlobalMaxPooling3D : public Layer {
 public:
  static GlobalMaxPooling3D from_config(const ConfigDict& config);
  explicit GlobalMaxPooling3D(GlobalPooling2DOptions options = {});
};

// Over steps of (batch, steps, channels): windows of pool_size, strides defaulting to it.
struct Pooling1DOptions {
  int64_t strides = 0;  // 0: pool_size
  std::string padding = "valid";
  std::string dtype{};
  std::string name{};
};
class MaxPooling1D : public Layer {
 public:
  static MaxPooling1D from_config(const ConfigDict& config);
  explicit MaxPooling1D(int64_t pool_size = 2, Pooling1DOptions options = {});
};
class AveragePooling1D : public Layer {
 public:
  static AveragePooling1D from_config(const ConfigDict& config);
  explicit AveragePooling1D(int64_t pool_size = 2, Pooling1DOptions options = {});
};
// The mean and the maximum over steps: (n, steps, c) -> (n, c).
class GlobalAveragePooling1D : public Layer {
 public:
  static GlobalAveragePooling1D from_config(const ConfigDict& config);
  explicit GlobalAveragePooling1D(GlobalPooling2DOptions options = {});
};
class GlobalMaxPooling1D : public Layer {
 public:
  static GlobalMaxPooling1D from_config(const ConfigDict& config);
  explicit GlobalMaxPooling1D(GlobalPooling2DOptions options = {});
};

}  // namespace weft::nn
