// tf.profiler.experimental.Trace: an event of the user's own in the profile, and the way a
// training step is marked (step_num, as TensorFlow's `Trace("train", step_num=s, _r=1)`); the
// report lines the workers' steps up by it. Costs one atomic load when no profile is captured.
//
//   for (int64_t s = 0; s < steps; ++s) {
//     weft::profiler::Trace step("train", {.step_num = s});
//     ...
//   }
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "weft/core/trace_me.h"

namespace weft::profiler {

struct TraceOptions {
  // Marks a step: the event's category is "step" and it carries step_num and _r = 1.
  std::optional<int64_t> step_num{};
  std::vector<std::pair<std::string, std::string>> stats{};  // more "args"
  int level = 1;  // the host tracer level from which it is recorded
};

class Trace {
 public:
  explicit Trace(const std::string& name, const TraceOptions& options = {})
      : trace_(name, options.level,
               options.step_num ? TraceCategory::kStep : TraceCategory::kOther) {
    if (!trace_.recording()) return;
    if (options.step_num) {
      trace_.stat("step_num", std::to_string(*options.step_num));
      trace_.stat("_r", "1");
    }
    for (const auto& [k, v] : options.stats) trace_.stat(k, v);
  }

 private:
  TraceMe trace_;
};

}  // namespace weft::profiler
