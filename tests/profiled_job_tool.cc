// A program for profiler_cli_test: a MultiWorkerMirroredStrategy fit in which one worker waits in
// its input pipeline before every batch (a slow disk, a slow preprocessing step), profiled.
//
//   weft launch -n 2 -- profiled_job_tool LOGDIR SLOW DELAY_MS STEPS A:B
//   weft launch -n 2 --profiler-port 0 -- profiled_job_tool LOGDIR SLOW DELAY_MS STEPS serve
//
// Worker SLOW sleeps DELAY_MS in a map() of its pipeline for each batch. With A:B, steps A..B are
// profiled into LOGDIR (TensorBoard's profile_batch); with "serve", every worker serves the
// profiler (TensorFlow's server.start) at WEFT_PROFILER_PORT for `weft profile`, and prints
// "training" once 20 steps are done. Each worker prints the step times as a user measures them,
// the ends of its steps (on_train_batch_end) on its own clock: "step ends us: T1 T2 …" (step k
// ends at Tk, and runs from T(k-1)), so that a test compares the report with the same steps the
// profile holds.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "weft/weft.h"

namespace {

using namespace weft;
using Clock = std::chrono::steady_clock;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: profiled_job_tool LOGDIR SLOW DELAY_MS STEPS A:B|serve\n");
    return 2;
  }
  try {
    const std::string logdir = argv[1];
    const int slow = std::atoi(argv[2]);
    const int delay_ms = std::atoi(argv[3]);
    const int64_t steps = std::atoll(argv[4]);
    const std::string mode = argv[5];
    const bool serve = mode == "serve";
    int64_t first = 0, last = 0;  // the profiled steps
    if (!serve)
      std::sscanf(mode.c_str(), "%lld:%lld", reinterpret_cast<long long*>(&first),
                  reinterpret_cast<long long*>(&last));

    distribute::MultiWorkerMirroredStrategy strategy;
    const bool slow_here = strategy.worker_index() == slow;
    if (serve) {
      const char* port = std::getenv("WEFT_PROFILER_PORT");
      const char* token = std::getenv("WEFT_CLUSTER_TOKEN");
      profiler::server::start(port ? std::atoi(port) : 0,
                              {.task = strategy.task(),
                               .token = token ? token : "",
                               .publish_to = strategy.extended().coordination_client()});
    }
    Tensor x = stateless_random_normal({steps * 64, 32}, {7, 1});
    Tensor y = cast(stateless_random_uniform({steps * 64}, {7, 2}, 0, 10), kInt64);
    data::Dataset ds = data::Dataset::from_tensor_slices({x, y}).batch(64).map(
        [slow_here, delay_ms](const data::Element& batch) {
          if (slow_here) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
          return batch;
        });
    nn::Sequential model;
    {
      auto scope = strategy.scope();
      model = nn::Sequential({nn::Dense(64, "relu"), nn::Dense(10)});
      model.compile(optim::SGD(0.01),
                    nn::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    std::vector<std::string>{});
    }
    std::vector<Clock::time_point> ends;  // of steps 1, 2, …
    auto step_ends = [&](int64_t batch, const nn::Logs&) {
      ends.push_back(Clock::now());
      if (serve && batch + 1 == 20) {
        std::printf("training\n");
        std::fflush(stdout);
      }
    };
    train::Callback timer = train::LambdaCallback({.on_batch_end = step_ends});
    std::vector<train::Callback> callbacks = {timer};
    if (!serve) callbacks.push_back(train::TensorBoard(logdir, {.profile_batch = {first, last}}));
    model.fit(ds, {.epochs = 1, .callbacks = callbacks, .verbose = 0});
    if (serve) profiler::server::stop();
    std::string line = "step ends us:";
    for (const Clock::time_point& t : ends) {
      line += " " + std::to_string(
                        std::chrono::duration_cast<std::chrono::microseconds>(t - ends[0]).count());
    }
    std::printf("%s\n", line.c_str());
  } catch (const Error& e) {
    std::fprintf(stderr, "profiled_job_tool: %s\n", e.what());
    return 1;
  }
  return 0;
}
