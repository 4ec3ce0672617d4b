// What BackupAndRestore costs (issue: fault recovery): the MLP `weft train` trains, 100 steps of
// batch 128 per fit() call (one epoch), with a backup at the end of it (what --save-freq 100
// adds per 100 steps) against the same fit without; and one backup alone, with the state's size,
// for the cost per MB. Backups go to a directory under the system's temporary directory.
#include <unistd.h>

#include <filesystem>

#include "fit_model.h"
#include "ratio.h"
#include "weft/nn/models.h"
#include "weft/train/callbacks.h"
#include "weft/train/checkpoint.h"

namespace {

constexpr int64_t kBatch = 128;
constexpr int64_t kSteps = 100;

std::string backup_dir() {
  return (std::filesystem::temp_directory_path() /
          ("weft_backup_bench_" + std::to_string(::getpid())))
      .string();
}

void fit(benchmark::State& state, bool backup) {
  weft::nn::Model model = weft::nn::models::mlp();
  weft::data::Dataset ds = weft::bench::compile_with_data(model, kBatch, kSteps, {});
  std::vector<weft::train::Callback> callbacks;
  if (backup) callbacks.push_back(weft::train::BackupAndRestore(backup_dir()));
  model.fit(ds, {.epochs = 1, .callbacks = callbacks, .verbose = 0});  // warms up
  for (auto _ : state) model.fit(ds, {.epochs = 1, .callbacks = callbacks, .verbose = 0});
  std::filesystem::remove_all(backup_dir());
}
void fit_without_backup(benchmark::State& state) { fit(state, false); }
void fit_with_backup(benchmark::State& state) { fit(state, true); }

// One save of the model and the optimizer (its slots too), as BackupAndRestore writes it.
void one_backup(benchmark::State& state) {
  weft::nn::Model model = weft::nn::models::mlp();
  weft::data::Dataset ds = weft::bench::compile_with_data(model, kBatch, 2, {});
  model.fit(ds, {.epochs = 1, .verbose = 0});  // builds the model and Adam's slots
  weft::optim::Optimizer optimizer = model.optimizer();
  weft::train::Checkpoint ckpt({{"model", &model}, {"optimizer", &optimizer}}, backup_dir(), 2);
  int64_t step = 0;
  for (auto _ : state) ckpt.save(++step);
  double bytes = 0;
  for (const auto& vars : {model.tracked_variables(), optimizer.tracked_variables()}) {
    for (const auto& [name, v] : vars) {
      bytes += static_cast<double>(v.value().numel()) * weft::dtype_size(v.dtype());
    }
  }
  state.counters["state_MB"] = bytes / 1e6;
  // (iterations x MB / 1000) per second, inverted: milliseconds per MB.
  state.counters["ms_per_MB"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * bytes / 1e9,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  std::filesystem::remove_all(backup_dir());
}

BENCHMARK(fit_without_backup)->UseRealTime()->MinTime(1.0);
BENCHMARK(fit_with_backup)->UseRealTime()->MinTime(1.0);
BENCHMARK(one_backup)->UseRealTime()->MinTime(1.0);

}  // namespace

int main(int argc, char** argv) {
  return weft::bench::run(argc, argv,
                          {{"MLP 100 steps with one backup (--save-freq 100) vs without",
                            "fit_with_backup/min_time:1.000/real_time",
                            "fit_without_backup/min_time:1.000/real_time", 1, 1, "report"}},
                          /*repetitions=*/5);
}
