// Keras's advanced activation layers: LeakyReLU, PReLU (a learned slope), ELU, ReLU (with
// max_value, negative_slope and threshold) and Softmax over an axis.
//
//   weft::nn::LeakyReLU leaky(0.2);
//   weft::nn::ReLU relu6({.max_value = 6.0});
//   weft::nn::PReLU prelu({.shared_axes = {1, 2}});    // one slope per channel of an image
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "weft/nn/core_layers.h"
#include "weft/nn/layer.h"

namespace weft::nn {

// x for x > 0, alpha x otherwise.
class LeakyReLU : public Layer {
 public:
  static LeakyReLU from_config(const ConfigDict& config);
  explicit LeakyReLU(double alpha = 0.3, LayerOptions options = {});
};

// x for x > 0, alpha (exp(x) - 1) otherwise.
class ELU : public Layer {
 public:
  static ELU from_config(const ConfigDict& config);
  explicit ELU(double alpha = 1.0, LayerOptions options = {});
};

struct ReLUOptions {
  std::optional<double> max_value{};  // outputs are capped at it
  double negative_slope = 0;          // below the threshold: negative_slope (x - threshold)
  double threshold = 0;
  std::string dtype{};
  std::string name{};
};
class ReLU : public Layer {
 public:
  static ReLU from_config(const ConfigDict& config);
  explicit ReLU(ReLUOptions options = {});
};

class Softmax : public Layer {
 public:
  static Softmax from_config(const ConfigDict& config);
  explicit Softmax(int64_t axis = -1, LayerOptions options = {});
};

struct PReLUOptions {
  std::string alpha_initializer = "zeros";
  // Axes (1-based, batch excluded as Keras counts them from the input's first non-batch axis = 1)
  // along which one slope is shared.
  std::vector<int64_t> shared_axes{};
  std::string dtype{};
  std::string name{};
};
// x for x > 0, alpha x otherwise, alpha a weight of the input's shape (batch excluded) with
// shared_axes set to 1.
class PReLU : public Layer {
 public:
  static PReLU from_config(const ConfigDict& config);
  explicit PReLU(PReLUOptions options = {});
};

}  // namespace weft::nn
