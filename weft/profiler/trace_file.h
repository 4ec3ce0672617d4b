// Profiles as files: the Chrome trace event format (what chrome://tracing, Perfetto and
// TensorBoard's trace viewer read), in TensorBoard's layout LOGDIR/plugins/profile/<run>/, one
// `<task>.trace.json.gz` per task and, for several, `cluster.trace.json.gz` merged.
//
//   profiler::TaskTrace t{.task = "worker:0", .capture = stop_tracing(), ...};
//   std::string json = profiler::task_trace_json(t);         // one task
//   std::string merged = profiler::merge_trace_jsons({a, b});  // several, aligned
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weft/core/gzip.h"
#include "weft/core/trace_me.h"

namespace weft::profiler {

// At most this many events per task are written (the earliest); more are dropped with a warning.
inline constexpr std::size_t kMaxEventsPerTask = 1'000'000;
// Past this size a task's trace is written with a warning: trace viewers slow down.
inline constexpr std::size_t kLargeTraceBytes = std::size_t{256} << 20;

// One task's capture: its events on its own steady clock, the window captured, and the offset to
// add to its times to get the reference clock's (the client's, or the chief's; 0 on one host).
struct TaskTrace {
  std::string task;  // "worker:1"; a host name outside a cluster
  TraceCapture capture;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t clock_offset_ns = 0;
  int host_tracer_level = 1;
};

// One task's trace as Chrome trace JSON: `M` process and thread names, an `X` event per recorded
// event ("cat" its category, "args" its stats), times in microseconds from the window's start,
// and in "otherData" the task, its window on its own clock and its clock offset. Events outside
// the window are dropped, as are those past kMaxEventsPerTask; an event that overlaps another on
// its thread without nesting goes to a thread of its own. `warnings` gets why anything was dropped.
std::string task_trace_json(const TaskTrace& trace, std::vector<std::string>* warnings = nullptr);

// Several tasks' traces (task_trace_json's) as one: a process per task in the given order, times
// on the reference clock from the earliest window's start, and flow events linking the tasks'
// events of one collective call (equal "id" args), from the first to enter it to the last.
// InvalidArgument naming the input that is not such a trace.
std::string merge_trace_jsons(const std::vector<std::string>& task_jsons);

// "worker:1" → "worker_1.trace.json.gz"; characters other than letters, digits, '-', '.' and
// '_' become '_'.
std::string trace_file_name(const std::string& task);
// A new run directory, LOGDIR/plugins/profile/YYYY_MM_DD_HH_MM_SS (UTC, as TensorFlow's; a
// suffix _1, _2, ... when it exists), created.
std::string new_run_directory(const std::string& logdir);
// Writes each task's JSON gzipped into `run_dir` (trace_file_name), and with more than one
// cluster.trace.json.gz, merged; `tasks` names them in order.
void write_traces(const std::string& run_dir, const std::vector<std::string>& tasks,
                  const std::vector<std::string>& task_jsons);


}  // namespace weft::profiler
