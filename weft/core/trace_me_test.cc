// The profiler's recorder: nothing when off, levels, nesting, stats, every thread's events (an
// ended thread's too), and one session at a time.
#include "weft/core/trace_me.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "weft/core/errors.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

const TraceEvent* find(const std::vector<TraceEvent>& events, const std::string& name) {
  for (const TraceEvent& e : events) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

TEST(TraceMe, RecordsNothingWhenOff) {
  {
    TraceMe t("off", 1);
    EXPECT_FALSE(t.recording());
    t.stat("ignored", "1");
  }
  start_tracing(1);
  EXPECT_TRUE(stop_tracing().events.empty());
}

TEST(TraceMe, RecordsItsLevelNestedWithStats) {
  start_tracing(1);
  {
    TraceMe outer("step", 1);
    outer.stat("step_num", "7");
    TraceMe op("matmul", 2);  // above the session's level
    EXPECT_FALSE(op.recording());
    { TraceMe inner(std::string("all_reduce"), 1); }
  }
  std::vector<TraceEvent> events = stop_tracing().events;
  ASSERT_EQ(events.size(), 2u);
  const TraceEvent* step = find(events, "step");
  const TraceEvent* inner = find(events, "all_reduce");
  ASSERT_NE(step, nullptr);
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(events[0].name, "all_reduce");  // in the order they ended
  EXPECT_LE(step->start_ns, inner->start_ns);
  EXPECT_LE(inner->start_ns, inner->end_ns);
  EXPECT_LE(inner->end_ns, step->end_ns);
  ASSERT_EQ(step->stats.size(), 1u);
  EXPECT_EQ(step->stats[0], (std::pair<std::string, std::string>{"step_num", "7"}));
  EXPECT_EQ(step->thread, inner->thread);
  EXPECT_TRUE(stop_tracing().events.empty());  // collected once
}

TEST(TraceMe, CollectsEveryThreadsEventsAnEndedThreadsToo) {
  start_tracing(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([t] {
      TraceMe a("thread " + std::to_string(t), 2);
      TraceMe b(std::string("op"), 2);
    });
  }
  for (std::thread& t : threads) t.join();  // ended before the collection
  { TraceMe here("caller", 1); }
  std::vector<TraceEvent> events = stop_tracing().events;
  ASSERT_EQ(events.size(), 7u);
  std::set<uint32_t> ids;
  for (const TraceEvent& e : events) ids.insert(e.thread);
  EXPECT_EQ(ids.size(), 4u);
  for (int t = 0; t < 3; ++t) EXPECT_NE(find(events, "thread " + std::to_string(t)), nullptr);
}

TEST(TraceMe, KeepsCategoriesThreadNamesAndEventsRecordedElsewhere) {
  start_tracing(1);
  std::thread named([] {
    set_trace_thread_name("replica 3");
    TraceMe t("compute", 1, TraceCategory::kCompute);
  });
  named.join();
  TraceEvent wait;
  wait.name = "wait";
  wait.category = TraceCategory::kCollectiveWait;
  wait.start_ns = 10;
  wait.end_ns = 20;
  record_trace_event(wait, 1);
  record_trace_event(wait, 2);  // above the session's level
  TraceCapture capture = stop_tracing();
  ASSERT_EQ(capture.events.size(), 2u);
  const TraceEvent* compute = find(capture.events, "compute");
  const TraceEvent* recorded = find(capture.events, "wait");
  ASSERT_NE(compute, nullptr);
  ASSERT_NE(recorded, nullptr);
  EXPECT_EQ(compute->category, TraceCategory::kCompute);
  EXPECT_STREQ(trace_category_name(recorded->category), "collective_wait");
  EXPECT_EQ(recorded->end_ns - recorded->start_ns, 10);
  EXPECT_EQ(capture.threads.at(compute->thread), "replica 3");
  EXPECT_EQ(capture.threads.count(recorded->thread), 1u);
  EXPECT_NE(compute->thread, recorded->thread);
}

TEST(TraceMe, OneSessionAtATimeAtALevelItKnows) {
  start_tracing(3);
  try {
    start_tracing(1);
    FAIL() << "a second start was accepted";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("already recording (at level 3)"));
  }
  stop_tracing();
  EXPECT_THROW(start_tracing(4), InvalidArgument);
  EXPECT_THROW(start_tracing(0), InvalidArgument);
  EXPECT_FALSE(trace_active(1));
}

}  // namespace
}  // namespace weft
