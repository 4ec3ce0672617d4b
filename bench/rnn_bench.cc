// A training step's LSTM layer (batch 128, 28 steps of 28 features, as `weft train --model lstm`
// reads Fashion-MNIST, into 128 units; every step's output): nn::LSTM's forward and backward
// passes under a GradientTape against the same two primitives on raw oneDNN, made once, with the
// weights already in their layouts. ratio = oneDNN time / weft time; goal >= 0.8.
#include "onednn_kernels.h"
#include "ratio.h"
#include "weft/autodiff/tape.h"
#include "weft/nn/recurrent.h"
#include "weft/ops/random.h"

namespace {

constexpr int64_t kBatch = 128, kSteps = 28, kFeatures = 28, kUnits = 128;

void weft_lstm(benchmark::State& state) {
  weft::nn::LSTM lstm(kUnits, {.return_sequences = true});
  weft::Tensor x = weft::stateless_random_uniform({kBatch, kSteps, kFeatures}, {1, 2}, -1, 1);
  weft::Tensor dy = weft::stateless_random_uniform({kBatch, kSteps, kUnits}, {3, 4}, -1, 1);
  lstm(x);
  std::vector<weft::Variable> weights = lstm.variables();
  for (auto _ : state) {
    weft::GradientTape tape;
    tape.watch(x);
    weft::Tensor y = lstm(x, true);
    benchmark::DoNotOptimize(tape.gradient(y, weights, dy));
  }
}

void onednn_lstm(benchmark::State& state) {
  weft::bench::Kernels k;
  k.lstm(kSteps, kBatch, kFeatures, kUnits);
  k.run();
  for (auto _ : state) k.run();
}

BENCHMARK(weft_lstm)->UseRealTime()->MinTime(0.5);
BENCHMARK(onednn_lstm)->UseRealTime()->MinTime(0.5);

}  // namespace

int main(int argc, char** argv) {
  return weft::bench::run(argc, argv,
                          {{"LSTM layer fwd+bwd (128 x 28 x 28 -> 128) vs raw oneDNN",
                            "weft_lstm/min_time:0.500/real_time",
                            "onednn_lstm/min_time:0.500/real_time", 1, 1, ">= 0.8"}});
}
