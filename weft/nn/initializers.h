// Weight initializers by Keras name: glorot_uniform (Keras's default for kernels), he_normal,
// zeros, ones, random_normal. Values are stateless random draws: an initializer made with a seed
// gives the same tensor every time; one made without draws its seed from weft::random's global
// sequence, so a program that builds the same layers in the same order gets the same weights.
//
//   weft::nn::Initializer init = weft::nn::initializers::get("he_normal");
//   weft::Tensor w = init({784, 700}, weft::kFloat32);
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "weft/core/tensor.h"
#include "weft/ops/random.h"

namespace weft::nn {

using Initializer = std::function<Tensor(const Shape& shape, DType dtype)>;

namespace initializers {

Initializer zeros();
Initializer ones();
Initializer constant(double value);
// U(-limit, limit), limit = sqrt(6 / (fan_in + fan_out)).
Initializer glorot_uniform(std::optional<Seed> seed = std::nullopt);
// Truncated normal with stddev sqrt(2 / fan_in), as Keras.
Initializer he_normal(std::optional<Seed> seed = std::nullopt);
Initializer random_normal(double mean = 0.0, double stddev = 0.05,
                          std::optional<Seed> seed = std::nullopt);
Initializer random_uniform(double minval = -0.05, double maxval = 0.05,
                           std::optional<Seed> seed = std::nullopt);
// By Keras name; InvalidArgument listing the known names otherwise.
// A (reshaped) matrix with orthonormal columns (or rows, when it has fewer rows), times gain:
// Keras's default for recurrent kernels.
Initializer orthogonal(double gain = 1.0, std::optional<Seed> seed = std::nullopt);
Initializer get(const std::string& name);

// Keras's fan computation: for a conv kernel (kh, kw, in, out) the receptive field multiplies.
std::pair<double, double> fans(const Shape& shape);

}  // namespace initializers
}  // namespace weft::nn
