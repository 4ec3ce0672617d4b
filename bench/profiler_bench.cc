// What the profiler costs (issue 45), on the MLP `weft train` trains (batch 128, Adam, 100 steps
// per fit() call):
// - profiling on, at host_tracer_level 2 (every op recorded) and 1 (steps, input, optimizer), each
//   fit() inside profiler::start / stop(save = false), against the same fit not profiled;
// - profiling off: what the trace points cost when nothing captures. A build without them is not
//   at hand, so the cost is counted: the trace points one step passes (every event a level-3
//   capture of a fit records, per step) times what one trace point costs when off, against the
//   step's time. Both are measured in this process.
#include <unistd.h>

#include <filesystem>

#include "fit_model.h"
#include "ratio.h"
#include "weft/core/trace_me.h"
#include "weft/nn/models.h"
#include "weft/profiler/profiler.h"

namespace {

constexpr int64_t kBatch = 128;
constexpr int64_t kSteps = 100;
constexpr int64_t kPoints = 1'000'000;  // trace points per iteration of trace_points_off

std::string logdir() {
  return (std::filesystem::temp_directory_path() /
          ("weft_profiler_bench_" + std::to_string(::getpid())))
      .string();
}

void fit(benchmark::State& state, int level) {
  weft::nn::Model model = weft::nn::models::mlp();
  weft::data::Dataset ds = weft::bench::compile_with_data(model, kBatch, kSteps, {});
  model.fit(ds, {.epochs = 1, .verbose = 0});  // builds, warms the primitive caches
  for (auto _ : state) {
    if (level > 0) weft::profiler::start(logdir(), {.host_tracer_level = level});
    model.fit(ds, {.epochs = 1, .verbose = 0});
    if (level > 0) weft::profiler::stop(/*save=*/false);
  }
}
void fit_not_profiled(benchmark::State& state) { fit(state, 0); }
void fit_profiled_level_1(benchmark::State& state) { fit(state, 1); }
void fit_profiled_level_2(benchmark::State& state) { fit(state, 2); }

// kPoints trace points with nothing capturing, as an op's (level 2) and a step's (level 1).
void trace_points_off(benchmark::State& state) {
  for (auto _ : state) {
    for (int64_t i = 0; i < kPoints; i += 2) {
      weft::TraceMe op("add", 2, weft::TraceCategory::kOp);
      weft::TraceMe step("train", 1, weft::TraceCategory::kStep);
      benchmark::ClobberMemory();
    }
  }
}

// The trace points one step of the fit passes: the events a level-3 capture records, per step.
double trace_points_per_step() {
  weft::nn::Model model = weft::nn::models::mlp();
  weft::data::Dataset ds = weft::bench::compile_with_data(model, kBatch, kSteps, {});
  model.fit(ds, {.epochs = 1, .verbose = 0});
  weft::start_tracing(3);
  model.fit(ds, {.epochs = 1, .verbose = 0});
  const double points = static_cast<double>(weft::stop_tracing().events.size()) / kSteps;
  std::printf("trace points a step passes (a level-3 capture's events per step): %.0f\n", points);
  return points;
}

BENCHMARK(fit_not_profiled)->UseRealTime()->MinTime(1.0);
BENCHMARK(fit_profiled_level_1)->UseRealTime()->MinTime(1.0);
BENCHMARK(fit_profiled_level_2)->UseRealTime()->MinTime(1.0);
BENCHMARK(trace_points_off)->UseRealTime()->MinTime(0.2);

}  // namespace

int main(int argc, char** argv) {
  const double points = trace_points_per_step();
  // ratio = ((kPoints / points) steps' worth / points' time) / (steps / fit time): how many times
  // a step's own time is what its trace points cost, off (>= 100: they cost under 1%).
  return weft::bench::run(
      argc, argv,
      {{"MLP fit profiled at host_tracer_level 2 vs not profiled",
        "fit_profiled_level_2/min_time:1.000/real_time",
        "fit_not_profiled/min_time:1.000/real_time", 1, 1, ">= 0.95"},
       {"MLP fit profiled at host_tracer_level 1 vs not profiled",
        "fit_profiled_level_1/min_time:1.000/real_time",
        "fit_not_profiled/min_time:1.000/real_time", 1, 1, "reported"},
       {"profiling off: an MLP step vs its trace points' cost",
        "trace_points_off/min_time:0.200/real_time", "fit_not_profiled/min_time:1.000/real_time",
        static_cast<double>(kPoints) / points, kSteps, ">= 100"}},
      /*repetitions=*/5);
}
