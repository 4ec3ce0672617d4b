// Model::fit throughput for the two models `weft train` trains (weft/nn/models.h, batch 128, Adam,
// sparse cross-entropy, accuracy), against the bound their GEMM-like kernels set: the same
// matmuls and convolutions of one training step run back to back on raw oneDNN, in the layouts
// oneDNN prefers and with nothing else in between. ratio = GEMM time per step / fit time per step
// (1.0 would mean everything but the GEMMs is free; the goal is >= 0.6). Each benchmark also
// reports examples/s and the peak bytes weft's allocator held while that model trained
// (Storage::peak_bytes_in_use). It runs with the OpenMP wait policy the environment gives.
#include "fit_model.h"
#include "onednn_kernels.h"
#include "ratio.h"
#include "weft/nn/models.h"

namespace {

constexpr int64_t kBatch = 128;
constexpr int64_t kSteps = 20;  // batches per fit() call

void fit_mlp(benchmark::State& state) {
  weft::bench::fit_model(state, weft::nn::models::mlp(), kBatch, kSteps);
}
void fit_cnn(benchmark::State& state) {
  weft::bench::fit_model(state, weft::nn::models::cnn(), kBatch, kSteps);
}

// MLP 784-700-500-10: three forward products, three weight gradients, two input gradients.
void mlp_gemms(benchmark::State& state) {
  weft::bench::Kernels k;
  weft::bench::add_mlp_gemms(k, kBatch);
  k.run();
  for (auto _ : state) k.run();
}

// The CNN: conv 1->32 at 28x28 (forward, filter gradient), conv 32->64 at 14x14 (forward, data
// and filter gradients), Dense 3136->128 and 128->10 (forward, weight and input gradients).
void cnn_gemms(benchmark::State& state) {
  weft::bench::Kernels k;
  k.conv3x3(kBatch, 1, 28, 32, false);
  k.conv3x3(kBatch, 32, 14, 64, true);
  k.matmul(kBatch, 3136, 128);
  k.matmul(kBatch, 128, 10);
  k.matmul(128, kBatch, 10, true);
  k.matmul(kBatch, 10, 128, false, true);
  k.matmul(3136, kBatch, 128, true);
  k.matmul(kBatch, 128, 3136, false, true);
  k.run();
  for (auto _ : state) k.run();
}

BENCHMARK(fit_mlp)->UseRealTime()->MinTime(1.0);
BENCHMARK(mlp_gemms)->UseRealTime()->MinTime(0.5);
BENCHMARK(fit_cnn)->UseRealTime()->MinTime(2.0);
BENCHMARK(cnn_gemms)->UseRealTime()->MinTime(0.5);

}  // namespace

int main(int argc, char** argv) {
  // ratio = (kSteps / fit time) / (1 / GEMM time) = GEMM time per step / fit time per step.
  return weft::bench::run(
      argc, argv,
      {{"MLP fit (batch 128) vs its GEMMs alone", "fit_mlp/min_time:1.000/real_time",
        "mlp_gemms/min_time:0.500/real_time", kSteps, 1, ">= 0.6"},
       {"CNN fit (batch 128) vs its GEMMs alone", "fit_cnn/min_time:2.000/real_time",
        "cnn_gemms/min_time:0.500/real_time", kSteps, 1, ">= 0.6"}});
}
