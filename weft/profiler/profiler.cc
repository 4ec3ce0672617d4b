#include "weft/profiler/profiler.h"

#include <cstdio>
#include <mutex>
#include <optional>

#include "weft/core/errors.h"
#include "weft/core/file_io.h"
#include "weft/core/trace_me.h"
#include "weft/profiler/internal/session.h"
#include "weft/profiler/trace_file.h"

namespace weft::profiler {
namespace internal {
namespace {

struct Session {
  std::string owner;
  std::string logdir;
  ProfilerOptions options;
  int64_t start_ns = 0;
};

std::mutex session_mu;
std::optional<Session> session;  // guarded by session_mu

}  // namespace

void start_session(const ProfilerOptions& options, const std::string& owner,
                   const std::string& logdir) {
  std::lock_guard lock(session_mu);
  WEFT_CHECK(!session, FailedPrecondition)
      << owner << ": a profile is already being captured, by " << session->owner
      << "; stop it first (one capture at a time)";
  WEFT_CHECK(options.host_tracer_level >= 1 && options.host_tracer_level <= 3, InvalidArgument)
      << owner << ": host_tracer_level " << options.host_tracer_level << "; expected 1, 2 or 3";
  WEFT_CHECK(options.delay_ms >= 0, InvalidArgument)
      << owner << ": delay_ms " << options.delay_ms << " is negative";
  start_tracing(options.host_tracer_level);
  session = Session{owner, logdir, options, trace_now_ns() + int64_t{options.delay_ms} * 1'000'000};
}

TaskTrace stop_session(std::string* logdir) {
  std::lock_guard lock(session_mu);
  WEFT_CHECK(session.has_value(), FailedPrecondition)
      << "profiler::stop: no profile is being captured; call profiler::start first";
  TaskTrace trace;
  trace.capture = stop_tracing();
  trace.task = session->options.task.empty() ? io::host_name() : session->options.task;
  trace.start_ns = session->start_ns;
  trace.end_ns = std::max(trace_now_ns(), trace.start_ns);
  trace.host_tracer_level = session->options.host_tracer_level;
  if (logdir) *logdir = session->logdir;
  session.reset();
  return trace;
}

}  // namespace internal

void start(const std::string& logdir, const ProfilerOptions& options) {
  WEFT_CHECK(!logdir.empty(), InvalidArgument) << "profiler::start: logdir is empty";
  internal::start_session(options, "profiler::start(\"" + logdir + "\")", logdir);
}

std::string stop(bool save) {
  std::string logdir;
  TaskTrace trace = internal::stop_session(&logdir);
  if (!save) return "";
  WEFT_CHECK(!logdir.empty(), FailedPrecondition)
      << "profiler::stop: the capture running was not started by profiler::start; its owner "
         "writes it";
  std::vector<std::string> warnings;
  std::string json = task_trace_json(trace, &warnings);
  for (const std::string& w : warnings) std::fprintf(stderr, "weft: profiler: %s\n", w.c_str());
  std::string run = new_run_directory(logdir);
  write_traces(run, {trace.task}, {json});
  return run;
}

Profile::Profile(const std::string& logdir, const ProfilerOptions& options) {
  start(logdir, options);
}
Profile::~Profile() {
  try {
    stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft: profiler: the profile was not written: %s\n", e.what());
  }
}

}  // namespace weft::profiler
