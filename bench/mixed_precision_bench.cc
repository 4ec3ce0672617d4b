// Mixed bfloat16 against float32 training throughput: Model::fit of the two models `weft train`
// trains (weft/nn/models.h) at batch 256, built under the "mixed_bfloat16" policy (bfloat16
// compute on AMX, float32 variables) and under "float32". ratio = bf16 examples/s / f32
// examples/s; goals >= 1.5 for the MLP and >= 2.0 for the CNN.
#include "fit_model.h"
#include "ratio.h"
#include "weft/nn/models.h"
#include "weft/precision/policy.h"

namespace {

constexpr int64_t kBatch = 256;
constexpr int64_t kSteps = 12;  // batches per fit() call

// Args: 0 for the MLP, 1 for the CNN.
void fit(benchmark::State& state, const char* policy) {
  weft::nn::Model model = [&] {
    weft::mixed_precision::PolicyScope scope(policy);
    return state.range(0) == 0 ? weft::nn::models::mlp() : weft::nn::models::cnn();
  }();
  weft::bench::fit_model(state, model, kBatch, kSteps);
}
void fit_f32(benchmark::State& state) { fit(state, "float32"); }
void fit_bf16(benchmark::State& state) { fit(state, "mixed_bfloat16"); }

BENCHMARK(fit_f32)->Arg(0)->Arg(1)->UseRealTime()->MinTime(1.0);
BENCHMARK(fit_bf16)->Arg(0)->Arg(1)->UseRealTime()->MinTime(1.0);

}  // namespace

int main(int argc, char** argv) {
  return weft::bench::run(
      argc, argv,
      {{"MLP fit (batch 256) bf16 vs f32", "fit_bf16/0/min_time:1.000/real_time",
        "fit_f32/0/min_time:1.000/real_time", 1, 1, ">= 1.5"},
       {"CNN fit (batch 256) bf16 vs f32", "fit_bf16/1/min_time:1.000/real_time",
        "fit_f32/1/min_time:1.000/real_time", 1, 1, ">= 2.0"}});
}
