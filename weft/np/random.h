// weft::np::random: NumPy's random functions on weft's Philox streams. The seedless functions
// draw from the global sequence np::random::seed (tf.random.set_seed) resets, as TF's
// tnp.random: reproducible for a seed and a call order, but not the numbers NumPy's Mersenne
// Twister would give. The overloads taking a seed are pure functions of (shape, seed).
//
//   np::random::seed(7);
//   weft::Tensor u = np::random::rand({2, 3});          // uniform [0, 1), float64
//   weft::Tensor k = np::random::randint(0, 10, {5});   // int64
#pragma once

#include <cstdint>

#include "weft/core/tensor.h"

namespace weft::np::random {

void seed(int64_t s);
Tensor rand(const Shape& shape);
Tensor randn(const Shape& shape);
Tensor random(const Shape& size);
Tensor standard_normal(const Shape& size);
Tensor uniform(double low = 0, double high = 1, const Shape& size = {});
// Integers in [low, high).
Tensor randint(int64_t low, int64_t high, const Shape& size = {}, DType dtype = kInt64);
// Poisson counts with mean lam (int64): Knuth's product of uniforms below lam = 10, Hörmann's
// transformed rejection (PTRS) above.
Tensor poisson(double lam = 1.0, const Shape& size = {});

// Standard normal / uniform [low, high) float64 samples, a pure function of (shape, seed).
Tensor randn(const Shape& shape, uint64_t seed);
Tensor uniform(double low, double high, const Shape& shape, uint64_t seed);

}  // namespace weft::np::random
