// One training step of the DTensor tutorial (examples/tutorial_mlp.h: MLP 784-700-500-10, its
// hand-written Adam, batch 128) against the time the step's GEMMs alone take on raw oneDNN: three
// forward products, three weight gradients and two input gradients. ratio = GEMM time / step time
// (1.0 would mean everything but the GEMMs is free). Reported here; the Keras-style training issue
// raises the bar.
#include "../examples/tutorial_mlp.h"
#include "onednn_kernels.h"
#include "ratio.h"

namespace {

constexpr int64_t kBatch = 128;

void tutorial_step(benchmark::State& state) {
  tutorial::Mlp model;
  tutorial::Adam optimizer(model.trainable_variables());
  weft::Tensor x = weft::stateless_random_uniform({kBatch, 784}, {5, 6});
  weft::Tensor y = weft::stateless_random_uniform({kBatch}, {7, 8}, 0, 10, weft::kInt64);
  for (auto _ : state) benchmark::DoNotOptimize(tutorial::train_step(model, x, y, optimizer));
}

void step_gemms_onednn(benchmark::State& state) {
  weft::bench::Kernels k;
  weft::bench::add_mlp_gemms(k, kBatch);
  k.run();
  for (auto _ : state) k.run();
}

BENCHMARK(tutorial_step)->UseRealTime()->MinTime(0.5);
BENCHMARK(step_gemms_onednn)->UseRealTime()->MinTime(0.5);

}  // namespace

int main(int argc, char** argv) {
  return weft::bench::run(
      argc, argv,
      {{"tutorial step (batch 128) vs its GEMMs alone", "tutorial_step/min_time:0.500/real_time",
        "step_gemms_onednn/min_time:0.500/real_time", 1, 1, "report (GEMM time / step time)"}});
}
