#include "weft/core/trace_me.h"

#include <pthread.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "weft/core/errors.h"

namespace weft {
namespace internal {
std::atomic<int> trace_level{0};
}  // namespace internal

namespace {

// One thread's events. The thread appends under its own lock (uncontended but for a collection);
// a collection swaps the events out.
struct ThreadBuffer {
  std::mutex mu;
  std::vector<TraceEvent> events;
  uint32_t thread = 0;
  std::string name;
};

// Every thread's buffer, and the events of threads that have ended.
struct Registry {
  std::mutex mu;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  uint32_t next_thread = 0;
};

Registry& registry() {
  static Registry* r = new Registry;  // outlives every thread's buffer
  return *r;
}

ThreadBuffer& this_threads_buffer() {
  // Registered at the thread's first event; the registry keeps it (and its events) after the
  // thread ends.
  thread_local std::shared_ptr<ThreadBuffer> buffer = [] {
    auto b = std::make_shared<ThreadBuffer>();
    char name[64] = {};
    if (pthread_getname_np(pthread_self(), name, sizeof name) == 0) b->name = name;
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    // Ended threads whose buffers hold nothing go (a process that makes many threads and never
    // records would otherwise keep one per thread); stop_tracing collects the others'.
    std::erase_if(r.buffers, [](const std::shared_ptr<ThreadBuffer>& old) {
      if (old.use_count() != 1) return false;
      std::lock_guard old_lock(old->mu);
      return old->events.empty();
    });
    b->thread = r.next_thread++;
    r.buffers.push_back(b);
    return b;
  }();
  return *buffer;
}

void append(TraceEvent event) {
  ThreadBuffer& buffer = this_threads_buffer();
  event.thread = buffer.thread;
  std::lock_guard lock(buffer.mu);
  buffer.events.push_back(std::move(event));
}

}  // namespace

const char* trace_category_name(TraceCategory category) {
  switch (category) {
    case TraceCategory::kOther: return "other";
    case TraceCategory::kStep: return "step";
    case TraceCategory::kInput: return "input";
    case TraceCategory::kCompute: return "compute";
    case TraceCategory::kOp: return "op";
    case TraceCategory::kCollective: return "collective";
    case TraceCategory::kCollectiveWait: return "collective_wait";
    case TraceCategory::kCheckpoint: return "checkpoint";
    case TraceCategory::kCoordination: return "coordination";
    case TraceCategory::kHost: return "host";
  }
  return "other";
}

int64_t trace_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void TraceMe::begin(std::string name, TraceCategory category) {
  event_.emplace();
  event_->name = std::move(name);
  event_->category = category;
  event_->start_ns = trace_now_ns();
}

void TraceMe::end() {
  event_->end_ns = trace_now_ns();
  append(std::move(*event_));
}

void record_trace_event(TraceEvent event, int level) {
  if (trace_active(level)) append(std::move(event));
}

void set_trace_thread_name(const std::string& name) {
  ThreadBuffer& buffer = this_threads_buffer();
  std::lock_guard lock(buffer.mu);
  buffer.name = name;
}

void start_tracing(int level) {
  WEFT_CHECK(level >= 1 && level <= 3, InvalidArgument)
      << "tracing: host tracer level " << level << "; expected 1, 2 or 3";
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  const int running = internal::trace_level.load();
  WEFT_CHECK(running == 0, FailedPrecondition)
      << "tracing: already recording (at level " << running << "); stop it first";
  for (const auto& b : r.buffers) {  // events from before this start are not this session's
    std::lock_guard buffer_lock(b->mu);
    b->events.clear();
  }
  internal::trace_level.store(level);
}

TraceCapture stop_tracing() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  internal::trace_level.store(0);
  TraceCapture all;
  for (const auto& b : r.buffers) {
    std::vector<TraceEvent> events;
    {
      std::lock_guard buffer_lock(b->mu);
      events.swap(b->events);
      if (!events.empty()) all.threads[b->thread] = b->name;
    }
    for (TraceEvent& e : events) all.events.push_back(std::move(e));
  }
  // Buffers of ended threads are no longer needed.
  std::erase_if(r.buffers,
                [](const std::shared_ptr<ThreadBuffer>& b) { return b.use_count() == 1; });
  return all;
}

}  // namespace weft
