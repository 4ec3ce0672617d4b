// `weft report`: where each step's time went on each worker, from a profile run's traces
// (trace_file.h), as one self-contained HTML page (no network): per step a stacked bar per worker
// in the categories below, the step's straggler (the last worker into its collectives) and
// bottleneck, each worker's count of last arrivals and the share of its time spent waiting for
// input (TensorFlow's overview page says it so), and the training curves beside them.
//
//   std::string run = weft::profiler::newest_run("logs");   // logs[/train]/plugins/profile/<run>
//   weft::profiler::TraceReport r = weft::profiler::analyze_trace(weft::profiler::load_run(run));
//   std::string page = weft::profiler::report_html(r, curves, run);
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace weft::profiler {

// The categories a step's time is cut into, in the bars' order.
inline constexpr std::array<const char*, 7> kStepCategories = {
    "compute", "input", "collective wait", "collective transfer", "checkpoint", "host", "other"};

// One worker's part of one step: its length and each category's share of it (microseconds; the
// categories add up to the length).
struct WorkerStep {
  bool present = false;  // the worker's trace holds this step, whole
  double total_us = 0;
  std::map<std::string, double> category_us;
};

struct StepReport {
  int64_t step_num = 0;
  std::vector<WorkerStep> workers;  // by task, in the trace's order
  // The task last into most of the step's collectives (-1: no collective was made by two
  // tasks), how late it was there in all (the sum over those collectives of its entry after the
  // first task's), and the category taking most of the step on it (waiting excepted).
  int straggler = -1;
  double straggler_lateness_us = 0;
  std::string bottleneck;
};

struct TraceReport {
  std::vector<std::string> tasks;
  std::vector<StepReport> steps;     // by step_num
  std::vector<int> last_arrivals;    // by task: the steps it was the straggler of
  std::vector<double> input_share;   // by task: input time / step time over its steps
  std::vector<double> mean_step_us;  // by task
};

// Cuts every marked step ("train" events with step_num, as fit and profiler::Trace make them) of
// every task into categories. A step's time is what the innermost event says at each instant, on
// the step's own thread and its first replica's: ops and replica steps are compute, the input
// pipeline input, a collective's wait (or a wait for the other replicas, or for the coordination
// service) collective wait, the rest of a collective collective transfer (a wait for the
// communication thread is what that thread does then), checkpoints checkpoint, the step's own
// thread between events host, anything else other. InvalidArgument when `trace_json` is not a
// trace, or holds no marked step.
TraceReport analyze_trace(const std::string& trace_json);

// A training curve: `tag`'s values by step (epoch_loss, ...), from the run's event files.
struct Curve {
  std::string name;  // "train/epoch_loss"
  std::vector<std::pair<int64_t, double>> points;
};

// The page. Its data is also in it as JSON (<script id="weft-report-data">), for tools.
std::string report_html(const TraceReport& report, const std::vector<Curve>& curves,
                        const std::string& title);

// The newest run directory under LOGDIR/plugins/profile and LOGDIR/train/plugins/profile (runs
// are named by time). FailedPrecondition naming both places when there is none.
std::string newest_run(const std::string& logdir);
// A run's merged trace: cluster.trace.json.gz, else its one task's trace. FailedPrecondition when
// it holds neither; DataLoss for a file that is not gzip.
std::string load_run(const std::string& run_dir);

}  // namespace weft::profiler
