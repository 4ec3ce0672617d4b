#include "weft/train/internal/step_profiler.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "weft/core/errors.h"
#include "weft/core/tensor.h"
#include "weft/core/trace_me.h"
#include "weft/profiler/internal/session.h"
#include "weft/profiler/trace_file.h"

namespace weft::nn::internal {
namespace {

// Bytes as int64 words (the collectives carry no bytes), and back.
Tensor words_of(const std::string& bytes) {
  std::vector<int64_t> words((bytes.size() + 7) / 8, 0);
  if (!bytes.empty()) std::memcpy(words.data(), bytes.data(), bytes.size());
  return Tensor::from_vector(words);
}

bool in_cluster(const distribute::StrategyImpl& strategy) {
  return strategy.num_local_replicas() != strategy.num_replicas_in_sync();
}

}  // namespace

std::vector<int64_t> clock_offsets_to_chief(const distribute::StrategyImpl& strategy, int rounds) {
  if (!in_cluster(strategy)) return {0};
  // least[j]: the least (this worker's receive time - worker j's send time) seen.
  std::vector<int64_t> least;
  for (int k = 0; k < rounds; ++k) {
    std::vector<int64_t> sent =
        strategy.all_gather_across_workers(Tensor::from_vector<int64_t>({trace_now_ns()}))
            .to_vector<int64_t>();
    const int64_t received = trace_now_ns();
    if (least.empty()) least.assign(sent.size(), INT64_MAX);
    for (size_t j = 0; j < sent.size(); ++j) least[j] = std::min(least[j], received - sent[j]);
  }
  // delay[i][j] = least of worker i for worker j ≈ clock_i - clock_j + latency.
  const std::vector<int64_t> all =
      strategy.all_gather_across_workers(Tensor::from_vector(least)).to_vector<int64_t>();
  const size_t n = least.size();
  std::vector<int64_t> offsets(n, 0);
  for (size_t i = 1; i < n; ++i) {
    const int64_t i_from_chief = all[i * n], chief_from_i = all[i];
    offsets[i] = -(i_from_chief - chief_from_i) / 2;  // clock_chief - clock_i
  }
  return offsets;
}

StepProfiler::StepProfiler(const std::vector<Callback>& callbacks,
                           const distribute::StrategyImpl& strategy)
    : strategy_(strategy) {
  for (const Callback& c : callbacks) {
    if ((steps_ = c.impl().profile_steps())) break;
  }
}

StepProfiler::~StepProfiler() {
  if (!running_) return;
  try {
    profiler::internal::stop_session();
  } catch (...) {
  }
}

void StepProfiler::before_step(int64_t batch) {
  if (!steps_ || batch != steps_->first) return;
  profiler::ProfilerOptions options;
  options.task = strategy_.task();
  profiler::internal::start_session(options, "fit's profiled steps (TensorBoard profile_batch)");
  running_ = true;
}

void StepProfiler::after_step(int64_t batch) {
  if (running_ && batch == steps_->last) write();
}

void StepProfiler::end() {
  if (running_) write();
}

void StepProfiler::write() {
  running_ = false;
  profiler::TaskTrace trace = profiler::internal::stop_session();
  const std::vector<int64_t> offsets = clock_offsets_to_chief(strategy_);
  const size_t me = static_cast<size_t>(strategy_.first_local_replica() /
                                        std::max(1, strategy_.num_local_replicas()));
  trace.clock_offset_ns = offsets.at(std::min(me, offsets.size() - 1));
  std::vector<std::string> warnings;
  const std::string mine = trace.task + '\n' + profiler::task_trace_json(trace, &warnings);
  for (const std::string& w : warnings) std::fprintf(stderr, "weft: profiler: %s\n", w.c_str());
  // Every worker's to the chief: lengths, then the bytes.
  const std::vector<int64_t> lengths = strategy_
                                           .all_gather_across_workers(Tensor::from_vector<int64_t>(
                                               {static_cast<int64_t>(mine.size())}))
                                           .to_vector<int64_t>();
  const std::vector<int64_t> words =
      strategy_.all_gather_across_workers(words_of(mine)).to_vector<int64_t>();
  if (strategy_.first_local_replica() != 0) return;
  std::vector<std::string> tasks, jsons;
  const char* at = reinterpret_cast<const char*>(words.data());
  for (int64_t length : lengths) {
    std::string both(at, static_cast<size_t>(length));
    at += (length + 7) / 8 * 8;
    const size_t cut = both.find('\n');
    tasks.push_back(both.substr(0, cut));
    jsons.push_back(both.substr(cut + 1));
  }
  const std::string run = profiler::new_run_directory(steps_->log_dir);
  profiler::write_traces(run, tasks, jsons);
  std::fprintf(stderr, "weft: profiled steps %lld-%lld of %zu worker(s) into %s\n",
               static_cast<long long>(steps_->first), static_cast<long long>(steps_->last),
               tasks.size(), run.c_str());
}

}  // namespace weft::nn::internal
