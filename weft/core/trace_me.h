// The profiler's recorder (issue 45; TensorFlow's TraceMe): an event is a name, a start and an
// end on the steady clock, and stats, recorded into a buffer of the thread it happened on.
// Recording is off unless a session runs (weft/profiler/ starts and stops it); off, a TraceMe
// costs one relaxed atomic load. Host levels as TensorFlow's host_tracer_level: 1 the
// user-visible steps and collectives, 2 ops as well, 3 verbose. A category says what kind of
// time an event is (the report's bars: docs/profiler.md).
//
//   {
//     weft::TraceMe trace("all_reduce", 1, weft::TraceCategory::kCollective);
//     trace.stat("bytes", std::to_string(bytes));
//     ...
//   }
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weft {

// What kind of time an event is: its "cat" in the trace file.
enum class TraceCategory : uint8_t {
  kOther,
  kStep,            // a training step (fit's "train", profiler::Trace with a step_num)
  kInput,           // waiting for the input pipeline
  kCompute,         // a replica's forward and backward pass, the optimizer's update
  kOp,              // one op (level 2)
  kCollective,      // a collective call: its transfer, once its peers have arrived
  kCollectiveWait,  // within a collective, or a meeting of replicas: waiting for the others
  kCheckpoint,      // writing or restoring a checkpoint
  kCoordination,    // waiting on the coordination service (barriers, keys)
  kHost,            // the framework's own work between the above (callbacks, splitting batches)
};
const char* trace_category_name(TraceCategory category);

struct TraceEvent {
  std::string name;
  TraceCategory category = TraceCategory::kOther;
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
  explicit TraceMe(const char* name, int level = 1,
                   TraceCategory category = TraceCategory::kOther) {
    if (trace_active(level)) begin(name, category);
  }
  TraceMe(const std::string& name, int level, TraceCategory category = TraceCategory::kOther) {
    if (trace_active(level)) begin(name, category);
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
  void begin(std::string name, TraceCategory category);
  void end();
  // Made only while recording: off, an op's TraceMe constructs and destroys nothing but a flag.
  std::optional<TraceEvent> event_;
};

// Records an event whose times were taken elsewhere (a collective's wait, measured inside it),
// on the calling thread, when events of `level` are recorded.
void record_trace_event(TraceEvent event, int level);

// Names the calling thread in traces ("replica 0"); a thread not named here is shown by its
// system name (pthread_setname_np) as it was at its first event.
void set_trace_thread_name(const std::string& name);

// Starts recording at `level` (1-3): events of every thread from now on. FailedPrecondition if
// recording is already on; InvalidArgument for another level.
void start_tracing(int level);
// What a session recorded: every thread's events, each thread's in the order they ended
// (threads that ended meanwhile included), and the names of the threads, by number.
struct TraceCapture {
  std::vector<TraceEvent> events;
  std::map<uint32_t, std::string> threads;
};
// Stops recording and returns what was recorded since start_tracing.
TraceCapture stop_tracing();

}  // namespace weft
