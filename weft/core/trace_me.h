// The profiler's recorder (issue 45; TensorFlow's TraceMe): an event is a name, a start and an
// end on the steady clock, and stats, recorded into a buffer of the thread it happened on.
// Recording is off unless a session runs (weft/profiler/ starts and stops it); off, a TraceMe
// costs one relaxed atomic load. Host levels as TensorFlow's host_tracer_level: 1 the
// user-visible steps and collectives, 2 ops as well, 3 verbose.
//
//   {
//     weft::TraceMe trace("all_reduce", 1);  // recorded when the level is 1 or more
//     trace.stat("bytes", std::to_string(bytes));
//     ...
//   }
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weft {

struct TraceEvent {
  std::string name;
  int64_t start_ns = 0;  // steady clock
  int64_t end_ns = 0;
  uint32_t thread = 0;  // a number per thread, in the order threads first recorded
  std::vector<std::pair<std::string, std::string>> stats;
};

namespace internal {
extern std::atomic<int> trace_level;  // 0: off
}  // namespace internal

// Whether events of `level` are recorded now.
inline bool trace_active(int level) {
  return internal::trace_level.load(std::memory_order_relaxed) >= level;
}
int64_t trace_now_ns();

class TraceMe {
 public:
  explicit TraceMe(const char* name, int level = 1) {
    if (trace_active(level)) begin(name);
  }
  TraceMe(const std::string& name, int level) {
    if (trace_active(level)) begin(name);
  }
  ~TraceMe() {
    if (event_) end();
  }
  TraceMe(const TraceMe&) = delete;
  TraceMe& operator=(const TraceMe&) = delete;

  bool recording() const { return event_.has_value(); }
  // A stat of the event (kept only while recording).
  void stat(std::string key, std::string value) {
    if (event_) event_->stats.emplace_back(std::move(key), std::move(value));
  }

 private:
  void begin(std::string name);
  void end();
  // Made only while recording: off, an op's TraceMe constructs and destroys nothing but a flag.
  std::optional<TraceEvent> event_;
};

// Starts recording at `level` (1-3): events of every thread from now on. FailedPrecondition if
// recording is already on; InvalidArgument for another level.
void start_tracing(int level);
// Stops recording; returns every thread's events since start_tracing, each thread's in the order
// they ended (threads that ended meanwhile included).
std::vector<TraceEvent> stop_tracing();

}  // namespace weft
