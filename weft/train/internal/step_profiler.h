// fit's profiled steps (TensorBoard's profile_batch, `weft train --profile-steps`): every worker
// captures the same steps; the workers' clocks are compared over their collectives, and the chief
// writes every worker's trace and the merged one under the callback's log_dir/plugins/profile/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "weft/distribute/strategy.h"
#include "weft/nn/callback.h"

namespace weft::nn::internal {

class StepProfiler {
 public:
  // Profiles the steps the first callback with profile_steps() names (none: nothing at all).
  StepProfiler(const std::vector<Callback>& callbacks, const distribute::StrategyImpl& strategy);
  // A capture fit leaves by an exception is dropped.
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  // Around the run's batch `batch` (counted from 1 across epochs, as Keras's profile_batch).
  void before_step(int64_t batch);
  void after_step(int64_t batch);
  // At the end of training: a capture still running (fewer steps than profile_batch's last) is
  // written.
  void end();

 private:
  void write();

  std::optional<CallbackImpl::ProfileSteps> steps_;
  const distribute::StrategyImpl& strategy_;
  bool running_ = false;
};

// Each worker's clock offset to the chief's (add it to the worker's steady-clock times), from
// `rounds` all-gathers of the workers' clocks: half the difference of the least delays seen in
// each direction (NTP's estimate; the error is at most half the round trip's asymmetry). Called
// by every worker at once; {0} in one process.
std::vector<int64_t> clock_offsets_to_chief(const distribute::StrategyImpl& strategy,
                                            int rounds = 16);

}  // namespace weft::nn::internal
