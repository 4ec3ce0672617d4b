// Profiling training (docs/profiler.md): TensorBoard's profile_batch captures steps of fit, and
// profiler::start/stop (or a Profile scope) captures anything, with Trace marking the steps of a
// custom loop. The traces go to LOGDIR/.../plugins/profile/<run>/; open them in Perfetto
// (ui.perfetto.dev), chrome://tracing or TensorBoard's profile plugin.
//
//   ./profiling [LOGDIR]    (default: profiling_logs)
#include <weft/weft.h>

#include <cstdio>
#include <filesystem>

int main(int argc, char** argv) {
  const std::string logdir = argc > 1 ? argv[1] : "profiling_logs";
  try {
    weft::Tensor x = weft::stateless_random_normal({512, 8}, {1, 2});
    weft::Tensor y = weft::sum(x, {1}, /*keepdims=*/true);
    weft::data::Dataset ds = weft::data::Dataset::from_tensor_slices({x, y}).batch(32);
    weft::nn::Sequential model({weft::nn::Dense(16, "relu"), weft::nn::Dense(1)});
    model.compile(weft::optim::Adam(1e-2), weft::nn::losses::MeanSquaredError(),
                  std::vector<std::string>{});

    // 1. fit: steps 3 to 5 of the run (counted from 1 across epochs, as Keras's profile_batch),
    // into LOGDIR/train/plugins/profile/<run>/<host>.trace.json.gz.
    model.fit(ds, {.epochs = 1,
                   .callbacks = {weft::train::TensorBoard(logdir, {.profile_batch = {3, 5}})},
                   .verbose = 0});

    // 2. A custom loop, profiled as a scope, each step marked with its number.
    weft::optim::Adam optimizer(1e-2);
    weft::nn::losses::MeanSquaredError loss_fn;
    std::string run;
    weft::profiler::start(logdir, {.host_tracer_level = 1});
    int64_t step = 0;
    for (const weft::data::Element& batch : ds) {
      weft::profiler::Trace trace("train", {.step_num = ++step});
      weft::GradientTape tape;
      weft::Tensor loss = loss_fn(batch[1], model(batch[0], /*training=*/true));
      optimizer.minimize(loss, model.trainable_variables(), tape);
    }
    run = weft::profiler::stop();
    int files = 0;
    for (const auto& f : std::filesystem::directory_iterator(run)) files += f.is_regular_file();
    std::printf("custom loop: %lld steps profiled into %s (%d file)\n",
                static_cast<long long>(step), run.c_str(), files);
  } catch (const weft::Error& e) {
    std::fprintf(stderr, "profiling: %s\n", e.what());
    return 1;
  }
  return 0;
}
