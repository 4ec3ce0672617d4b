// Stateless random tensors, as tf.random.stateless_*: the values are a pure function of the shape,
// the two-integer seed and the dtype (Philox4x32-10, counter-based), never of thread timing or
// thread count.
//
//   weft::Tensor w = weft::stateless_random_uniform({784, 700}, {22, 23}, -0.07, 0.07);
#pragma once

#include <array>
#include <optional>
#include <string>

#include "weft/core/tensor.h"

namespace weft {

using Seed = std::array<int64_t, 2>;

// [minval, maxval); floating dtypes and int32/int64.
Tensor stateless_random_uniform(const Shape& shape, Seed seed, double minval = 0, double maxval = 1,
                                DType dtype = kFloat32);
// Elements [offset, offset + numel) of the stream stateless_random_uniform draws from `seed`, in
// row-major order: a slice of a larger draw, made without the rest (Dropout draws each example's
// mask at its place in the global batch, however the batch is cut among replicas).
Tensor stateless_random_uniform_slice(const Shape& shape, Seed seed, int64_t offset,
                                      double minval = 0, double maxval = 1, DType dtype = kFloat32);
Tensor stateless_random_normal(const Shape& shape, Seed seed, double mean = 0, double stddev = 1,
                               DType dtype = kFloat32);
// Normal values re-drawn until within two standard deviations of the mean.
Tensor stateless_truncated_normal(const Shape& shape, Seed seed, double mean = 0, double stddev = 1,
                                  DType dtype = kFloat32);

namespace random {
// The global seed (tf.random.set_seed): resets the sequence next_seed() draws from. Default 0.
void set_seed(int64_t seed);
// A fresh seed for an op or initializer given none: (global seed, n) for the n-th call since
// set_seed. Deterministic for a program that makes the same calls in the same order. Inside a
// SeedScope it is the scope's sequence instead.
Seed next_seed();

// While it lives, next_seed() on this thread draws from a sequence keyed by `key` instead of the
// process-wide counter: (global seed, hash(key) + n) for the n-th draw in the scope. A model's
// layers build inside one keyed by their path in the model ("dense_1", "block/conv2d"), so a
// model gets the same initial weights and Dropout seeds whatever else the process made before,
// in every process of a cluster and on every replica.
class SeedScope {
 public:
  explicit SeedScope(const std::string& key);
  ~SeedScope();
  SeedScope(const SeedScope&) = delete;
  SeedScope& operator=(const SeedScope&) = delete;

 private:
  SeedScope* previous_;
  uint64_t key_hash_;
  int64_t draws_ = 0;
  friend Seed next_seed();
};

// Where training-time random draws (Dropout's masks) are keyed on this thread: the training step
// and the index, in that step's global batch, of the first example this thread computes. A
// distribution strategy sets it for each replica and micro-batch, so that an example's draws
// depend on (seed, step, global example index) only: not on how the batch is cut, nor on which
// replica runs first, and the same again after a resume. Outside a strategy's step there is none.
struct ExampleKey {
  int64_t step = 0;
  int64_t first_example = 0;
};
std::optional<ExampleKey> example_key();
class ExampleKeyScope {
 public:
  explicit ExampleKeyScope(ExampleKey key);
  ~ExampleKeyScope();
  ExampleKeyScope(const ExampleKeyScope&) = delete;
  ExampleKeyScope& operator=(const ExampleKeyScope&) = delete;

 private:
  std::optional<ExampleKey> previous_;
};
}  // namespace random

}  // namespace weft
