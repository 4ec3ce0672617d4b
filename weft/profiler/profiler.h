// tf.profiler.experimental.start / stop / Profile: captures this process's trace events (steps,
// input, collectives split into waiting and transfer, checkpoints, and at host_tracer_level 2
// every op) into LOGDIR/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<task>.trace.json.gz, Chrome trace
// JSON that TensorBoard's trace viewer, Perfetto and `weft report` read (docs/profiler.md).
//
//   weft::profiler::start("logs", {.host_tracer_level = 2});
//   model.fit(ds, {.epochs = 1});
//   std::string run = weft::profiler::stop();  // logs/plugins/profile/2026_12_04_05_10_00
//
//   { weft::profiler::Profile p("logs"); ... }  // the same, as a scope
#pragma once

#include <string>

namespace weft::profiler {

// tf.profiler.experimental.ProfilerOptions (weft has no Python or device tracers).
struct ProfilerOptions {
  // 1: steps, input, collectives, checkpoints, optimizer updates; 2: and every op; 3: verbose.
  int host_tracer_level = 2;
  // Events begin this long after start() (0: at once).
  int delay_ms = 0;
  // weft's: the trace file's name (empty: this host's name, as TensorFlow names it).
  std::string task{};
};

// Starts capturing. FailedPrecondition when a capture is already running, naming its logdir (or
// the profiler server's capture); InvalidArgument for a level outside 1-3 or a negative delay.
void start(const std::string& logdir, const ProfilerOptions& options = {});
// Stops capturing and, with save, writes the trace; returns the run directory written (empty
// without save). FailedPrecondition when no capture is running.
std::string stop(bool save = true);

// start() in its constructor, stop() in its destructor (tf.profiler.experimental.Profile).
class Profile {
 public:
  explicit Profile(const std::string& logdir, const ProfilerOptions& options = {});
  ~Profile();
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;
};

}  // namespace weft::profiler
