// MirroredStrategy's throughput on the MLP `weft train` trains (weft/nn/models.h, Adam, sparse
// cross-entropy, accuracy), 20 in-memory batches per fit() call:
//   1. 2 replicas of 1 thread each (batch 128 per replica) against 1 replica on 1 thread (batch
//      128): how well replicas scale (goal >= 1.8, in examples/s);
//   2. the same 2 x 1 against the default strategy on 2 threads at the same global batch (256):
//      replicas against splitting each kernel across threads (goal >= 1.0);
//   3. --deterministic (8 micro-batches, one summation tree) against the default mode, both on
//      2 replicas at global batch 256: what determinism costs (goal: <= 15%, a ratio >= 0.87);
//   4. --deterministic with 2 micro-batches (one per replica: the same bits on 1 and 2 replicas
//      only) against the default mode: what determinism costs without the 8 micro-batches that
//      make 4 and 8 replicas agree too (reported);
//   5. the same 2 x 1 against two independent fits of 1 replica on 1 thread (batch 128 each)
//      running at once on two threads: the machine's own two-core scaling, which bounds row 1
//      (on a shared machine two busy cores can each run well below one busy core's speed), so
//      that this row is what the replicas' machinery costs;
//   6. those two independent fits against 1 replica on 1 thread: the ceiling of row 1 on this
//      machine, measured in the same run (reported).
#include <thread>

#include "fit_model.h"
#include "ratio.h"
#include "weft/core/config.h"
#include "weft/distribute/mirrored_strategy.h"
#include "weft/nn/models.h"

namespace {

constexpr int64_t kPerReplica = 128;
constexpr int64_t kSteps = 20;

weft::distribute::MirroredStrategy two_replicas() {
  weft::config::set_logical_cpu_devices(2);
  return weft::distribute::MirroredStrategy();
}

void default_1_thread(benchmark::State& state) {
  weft::config::ThreadBudget one(1);
  weft::bench::fit_model(state, weft::nn::models::mlp(), kPerReplica, kSteps);
}

void default_2_threads(benchmark::State& state) {
  weft::config::ThreadBudget two(2);
  weft::bench::fit_model(state, weft::nn::models::mlp(), 2 * kPerReplica, kSteps);
}

void mirrored_2x1(benchmark::State& state) {
  weft::bench::fit_model(state, weft::nn::models::mlp(), 2 * kPerReplica, kSteps, two_replicas());
}

void independent_2x1(benchmark::State& state) {
  std::vector<weft::nn::Model> models{weft::nn::models::mlp(), weft::nn::models::mlp()};
  std::vector<weft::data::Dataset> data;
  for (weft::nn::Model& m : models) {
    data.push_back(weft::bench::compile_with_data(m, kPerReplica, kSteps, {}));
  }
  auto fit_both = [&] {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < models.size(); ++i) {
      threads.emplace_back([&, i] {
        weft::config::ThreadBudget one(1);
        models[i].fit(data[i], {.epochs = 1, .verbose = 0});
      });
    }
    for (std::thread& t : threads) t.join();
  };
  fit_both();  // builds, warms the primitive caches
  for (auto _ : state) fit_both();
}

void mirrored_2x1_deterministic(benchmark::State& state) {
  weft::config::enable_op_determinism();
  weft::bench::fit_model(state, weft::nn::models::mlp(), 2 * kPerReplica, kSteps, two_replicas());
  weft::config::disable_op_determinism();
}

BENCHMARK(default_1_thread)->UseRealTime()->MinTime(1.0);
BENCHMARK(default_2_threads)->UseRealTime()->MinTime(1.0);
BENCHMARK(mirrored_2x1)->UseRealTime()->MinTime(1.0);
BENCHMARK(mirrored_2x1_deterministic)->UseRealTime()->MinTime(1.0);
BENCHMARK(independent_2x1)->UseRealTime()->MinTime(1.0);

void mirrored_2x1_deterministic_2_micro_batches(benchmark::State& state) {
  weft::config::enable_op_determinism();
  weft::config::set_micro_batches(2);
  weft::bench::fit_model(state, weft::nn::models::mlp(), 2 * kPerReplica, kSteps, two_replicas());
  weft::config::set_micro_batches(weft::config::kDefaultMicroBatches);
  weft::config::disable_op_determinism();
}
BENCHMARK(mirrored_2x1_deterministic_2_micro_batches)->UseRealTime()->MinTime(1.0);

}  // namespace

int main(int argc, char** argv) {
  // Work per fit() call: examples trained.
  const double one = kSteps * kPerReplica, two = 2 * one;
  return weft::bench::run(argc, argv,
                          {{"MLP mirrored 2 x 1 thread vs 1 replica x 1 thread",
                            "mirrored_2x1/min_time:1.000/real_time",
                            "default_1_thread/min_time:1.000/real_time", two, one, ">= 1.8"},
                           {"MLP mirrored 2 x 1 thread vs default on 2 threads (global batch 256)",
                            "mirrored_2x1/min_time:1.000/real_time",
                            "default_2_threads/min_time:1.000/real_time", two, two, ">= 1.0"},
                           {"MLP mirrored 2 x 1 deterministic vs default mode",
                            "mirrored_2x1_deterministic/min_time:1.000/real_time",
                            "mirrored_2x1/min_time:1.000/real_time", two, two, ">= 0.87"},
                           {"MLP mirrored 2 x 1 deterministic, 2 micro-batches, vs default mode",
                            "mirrored_2x1_deterministic_2_micro_batches/min_time:1.000/real_time",
                            "mirrored_2x1/min_time:1.000/real_time", two, two, "report"},
                           {"MLP mirrored 2 x 1 thread vs two independent 1 x 1 fits at once",
                            "mirrored_2x1/min_time:1.000/real_time",
                            "independent_2x1/min_time:1.000/real_time", two, two, "report"},
                           {"MLP two independent 1 x 1 fits at once vs 1 replica x 1 thread",
                            "independent_2x1/min_time:1.000/real_time",
                            "default_1_thread/min_time:1.000/real_time", two, one, "report"}},
                          /*repetitions=*/5);
}
