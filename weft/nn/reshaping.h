// Keras's reshaping layers: UpSampling2D (nearest or bilinear), ZeroPadding2D, Cropping2D over
// (batch, height, width, channels); Permute and RepeatVector.
//
//   weft::nn::UpSampling2D up({2, 2});                        // (n, 7, 7, c) -> (n, 14, 14, c)
//   weft::nn::ZeroPadding2D pad({{1, 1}, {2, 2}});            // rows, then columns
//   weft::nn::Permute swap({2, 1});                           // (n, a, b) -> (n, b, a)
//   weft::nn::RepeatVector repeat(5);                         // (n, f) -> (n, 5, f)
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "weft/nn/core_layers.h"
#include "weft/nn/layer.h"
#include "weft/ops/conv.h"

namespace weft::nn {

struct UpSampling2DOptions {
  // "nearest" repeats each pixel; "bilinear" interpolates with half-pixel centres
  // (tf.image.resize, as Keras's layer).
  std::string interpolation = "nearest";
  std::string dtype{};
  std::string name{};
};
class UpSampling2D : public Layer {
 public:
  static UpSampling2D from_config(const ConfigDict& config);
  explicit UpSampling2D(Size2 size = {2, 2}, UpSampling2DOptions options = {});
};

// {{top, bottom}, {left, right}}
using Padding2D = std::array<std::pair<int64_t, int64_t>, 2>;

class ZeroPadding2D : public Layer {
 public:
  static ZeroPadding2D from_config(const ConfigDict& config);
  explicit ZeroPadding2D(Padding2D padding = {{{1, 1}, {1, 1}}}, LayerOptions options = {});
};

class Cropping2D : public Layer {
 public:
  static Cropping2D from_config(const ConfigDict& config);
  explicit Cropping2D(Padding2D cropping = {{{0, 0}, {0, 0}}}, LayerOptions options = {});
};

// Permutes the axes after the batch: dims is a permutation of 1..rank-1 (Keras counts from 1).
class Permute : public Layer {
 public:
  static Permute from_config(const ConfigDict& config);
  explicit Permute(std::vector<int64_t> dims, LayerOptions options = {});
};

// (batch, features) -> (batch, n, features).
class RepeatVector : public Layer {
 public:
  static RepeatVector from_config(const ConfigDict& config);
  explicit RepeatVector(int64_t n, LayerOptions options = {});
};

}  // namespace weft::nn
