// weft::np::random: samples from weft's Philox streams.
#pragma once

#include <cstdint>

#include "weft/core/tensor.h"

namespace weft::np {

namespace random {
// Standard normal / uniform [low, high) float64 samples, a pure function of (shape, seed).
// weft's streams are its own (Philox), not NumPy's Mersenne Twister.
Tensor randn(const Shape& shape, uint64_t seed);
Tensor uniform(double low, double high, const Shape& shape, uint64_t seed);
}  // namespace random

}  // namespace weft::np
