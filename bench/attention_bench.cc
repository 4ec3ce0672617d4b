// Self-attention as a training step computes it: MultiHeadAttention (4 heads of 64 over 256
// features, batch 32, 128 steps) forward and backward under a GradientTape, against its GEMMs
// alone on raw oneDNN: the four projections (query, key, value, output) and the two batched
// products of the attention (scores, then the weighted values), each forward and with both
// gradients. ratio = GEMM time / weft time (1.0 would mean the softmax, scaling, transposes and
// bias adds were free); goal >= 0.7.
#include "onednn_kernels.h"
#include "ratio.h"
#include "weft/autodiff/tape.h"
#include "weft/nn/attention.h"
#include "weft/ops/random.h"

namespace {

constexpr int64_t kBatch = 32, kSteps = 128, kFeatures = 256, kHeads = 4, kHeadDim = 64;

void weft_attention(benchmark::State& state) {
  weft::nn::MultiHeadAttention mha(kHeads, kHeadDim);
  weft::Tensor x = weft::stateless_random_uniform({kBatch, kSteps, kFeatures}, {1, 2}, -1, 1);
  weft::Tensor dy = weft::stateless_random_uniform({kBatch, kSteps, kFeatures}, {3, 4}, -1, 1);
  mha(x);
  for (auto _ : state) {
    weft::GradientTape tape;
    tape.watch(x);
    weft::Tensor y = mha(x, true);
    benchmark::DoNotOptimize(tape.gradient(y, mha.variables(), dy));
  }
}

void attention_gemms(benchmark::State& state) {
  weft::bench::Kernels k;
  const int64_t rows = kBatch * kSteps, width = kHeads * kHeadDim, bh = kBatch * kHeads;
  for (int p = 0; p < 4; ++p) {  // a projection: forward, input gradient, weight gradient
    k.matmul(rows, kFeatures, width);
    k.matmul(rows, width, kFeatures, false, true);
    k.matmul(kFeatures, rows, width, true);
  }
  // scores = q k^T and its gradients for q and k
  k.batched_matmul(bh, kSteps, kHeadDim, kSteps, false, true);
  k.batched_matmul(bh, kSteps, kSteps, kHeadDim);
  k.batched_matmul(bh, kSteps, kSteps, kHeadDim, true);
  // context = probs v and its gradients for probs and v
  k.batched_matmul(bh, kSteps, kSteps, kHeadDim);
  k.batched_matmul(bh, kSteps, kHeadDim, kSteps, false, true);
  k.batched_matmul(bh, kSteps, kSteps, kHeadDim, true);
  k.run();
  for (auto _ : state) k.run();
}

BENCHMARK(weft_attention)->UseRealTime()->MinTime(0.5);
BENCHMARK(attention_gemms)->UseRealTime()->MinTime(0.5);

}  // namespace

int main(int argc, char** argv) {
  return weft::bench::run(argc, argv,
                          {{"MultiHeadAttention fwd+bwd (32 x 128 x 256, 4 heads) vs its GEMMs",
                            "weft_attention/min_time:0.500/real_time",
                            "attention_gemms/min_time:0.500/real_time", 1, 1, ">= 0.7"}});
}
