// The one capture a process runs at a time, shared by profiler::start/stop, fit's profiled steps
// and the profiler server: it starts the recorder (weft/core/trace_me.h) and, when stopped, gives
// its events as a TaskTrace for the caller to write or send.
#pragma once

#include <string>

#include "weft/profiler/profiler.h"
#include "weft/profiler/trace_file.h"

namespace weft::profiler::internal {

// `owner` names who runs it in the refusal a second start gets ("profiler::start(\"logs\")");
// `logdir` is where it is to be written (empty: it is sent, not written).
void start_session(const ProfilerOptions& options, const std::string& owner,
                   const std::string& logdir = "");
// FailedPrecondition when none runs; *logdir gets the session's.
TaskTrace stop_session(std::string* logdir = nullptr);

}  // namespace weft::profiler::internal
