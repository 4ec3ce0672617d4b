// Model::fit timed as `weft train` runs it (Adam 1e-3, sparse cross-entropy from logits,
// accuracy), shared by fit_bench and mixed_precision_bench.
#pragma once

#include <benchmark/benchmark.h>

#include "weft/core/storage.h"
#include "weft/data/dataset.h"
#include "weft/nn/losses.h"
#include "weft/nn/model.h"
#include "weft/ops/random.h"
#include "weft/optim/adam.h"

namespace weft::bench {

// Compiles `model` in `strategy`'s scope and returns `steps` in-memory batches of random 28x28x1
// images and labels (`batch` is the global batch).
inline data::Dataset compile_with_data(nn::Model& model, int64_t batch, int64_t steps,
                                       const distribute::Strategy& strategy) {
  {
    auto scope = strategy.scope();
    model.compile(optim::Adam({.learning_rate = 1e-3}),
                  nn::losses::SparseCategoricalCrossentropy({.from_logits = true}), {"accuracy"});
  }
  Tensor x = stateless_random_uniform({steps * batch, 28, 28, 1}, {1, 2});
  Tensor y = stateless_random_uniform({steps * batch}, {3, 4}, 0, 10, kInt64);
  return data::Dataset::from_tensor_slices({x, y}).batch(batch);
}

// fit() over compile_with_data's batches, one epoch per iteration, under `strategy`. Reports
// examples/s and the peak bytes weft's allocator held while this model trained (data included).
inline void fit_model(benchmark::State& state, nn::Model model, int64_t batch, int64_t steps,
                      const distribute::Strategy& strategy = distribute::Strategy()) {
  data::Dataset ds = compile_with_data(model, batch, steps, strategy);
  Storage::reset_peak_bytes_in_use();
  model.fit(ds, {.epochs = 1, .verbose = 0});  // builds, warms the primitive caches
  for (auto _ : state) model.fit(ds, {.epochs = 1, .verbose = 0});
  state.counters["examples/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * steps * batch), benchmark::Counter::kIsRate);
  state.counters["peak_MiB"] =
      static_cast<double>(Storage::peak_bytes_in_use()) / (1024.0 * 1024.0);
}

}  // namespace weft::bench
