// Trace files: a task's events as Chrome trace JSON (valid in the format, nested per thread,
// events outside the window dropped), several tasks merged on one clock with flows linking one
// collective's events, gzip, and TensorBoard's run directories.
#include "weft/profiler/trace_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "weft/core/errors.h"
#include "weft/testing/chrome_trace.h"

namespace weft::profiler {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TraceEvent event(std::string name, int64_t start, int64_t end, uint32_t thread,
                 TraceCategory category = TraceCategory::kOther,
                 std::vector<std::pair<std::string, std::string>> stats = {}) {
  TraceEvent e;
  e.name = std::move(name);
  e.start_ns = start;
  e.end_ns = end;
  e.thread = thread;
  e.category = category;
  e.stats = std::move(stats);
  return e;
}

std::vector<json> events_named(const json& doc, const std::string& name) {
  std::vector<json> found;
  for (const json& e : doc["traceEvents"]) {
    if (e.value("name", "") == name) found.push_back(e);
  }
  return found;
}

TaskTrace two_threads(const std::string& task, int64_t base, int64_t offset) {
  TaskTrace t;
  t.task = task;
  t.start_ns = base;
  t.end_ns = base + 100'000;
  t.clock_offset_ns = offset;
  t.capture.threads = {{0, "main"}, {1, "replica 0"}};
  t.capture.events = {
      event("train", base + 1'000, base + 90'000, 0, TraceCategory::kStep,
            {{"step_num", "7"}, {"_r", "1"}}),
      event("Iterator::next", base + 2'000, base + 5'000, 0, TraceCategory::kInput),
      event("all_reduce", base + 10'000, base + 40'000, 1, TraceCategory::kCollective,
            {{"id", "ring#3"}, {"bytes", "4096"}, {"implementation_name", "RING"}}),
      event("wait", base + 10'000, base + 25'000, 1, TraceCategory::kCollectiveWait,
            {{"id", "ring#3"}}),
      // Overlaps the all_reduce on its thread without nesting: shown on a row of its own.
      event("odd \"quoted\"", base + 30'000, base + 50'000, 1),
      // Outside the window: dropped.
      event("before", base - 5'000, base - 1'000, 0),
  };
  return t;
}

TEST(TraceFile, ATasksTraceIsValidChromeTraceJson) {
  std::vector<std::string> warnings;
  const json doc = json::parse(task_trace_json(two_threads("worker:0", 5'000'000, 0), &warnings));
  EXPECT_THAT(warnings, IsEmpty());
  EXPECT_THAT(weft::testing::chrome_trace_problems(doc), IsEmpty()) << doc.dump(1);
  EXPECT_EQ(doc["displayTimeUnit"], "ns");
  EXPECT_EQ(doc["otherData"]["task"], "worker:0");
  EXPECT_EQ(events_named(doc, "before").size(), 0u);
  const std::vector<json> train = events_named(doc, "train");
  ASSERT_EQ(train.size(), 1u);
  EXPECT_EQ(train[0]["ph"], "X");
  EXPECT_EQ(train[0]["cat"], "step");
  EXPECT_DOUBLE_EQ(train[0]["ts"].get<double>(), 1.0);  // microseconds from the window's start
  EXPECT_DOUBLE_EQ(train[0]["dur"].get<double>(), 89.0);
  EXPECT_EQ(train[0]["args"]["step_num"], "7");
  const std::vector<json> all_reduce = events_named(doc, "all_reduce");
  ASSERT_EQ(all_reduce.size(), 1u);
  EXPECT_EQ(all_reduce[0]["args"]["bytes"], "4096");
  EXPECT_EQ(events_named(doc, "wait")[0]["tid"], all_reduce[0]["tid"]);
  const std::vector<json> odd = events_named(doc, "odd \"quoted\"");
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_NE(odd[0]["tid"], all_reduce[0]["tid"]);
  // Processes and threads are named.
  std::set<std::string> names;
  for (const json& m : events_named(doc, "thread_name")) names.insert(m["args"]["name"]);
  EXPECT_EQ(names, (std::set<std::string>{"main", "replica 0", "replica 0 (overlapping)"}));
  EXPECT_EQ(events_named(doc, "process_name")[0]["args"]["name"], "worker:0");
}

TEST(TraceFile, MergedTasksShareOneClockAndFlowsLinkACollectivesEvents) {
  // worker:1's clock runs 3 ms ahead of the reference: its offset brings it back.
  const std::string a = task_trace_json(two_threads("worker:0", 5'000'000, 0));
  const std::string b = task_trace_json(two_threads("worker:1", 8'000'000, -3'000'000));
  const json merged = json::parse(merge_trace_jsons({a, b}));
  EXPECT_THAT(weft::testing::chrome_trace_problems(merged), IsEmpty()) << merged.dump(1);
  ASSERT_EQ(merged["otherData"]["tasks"].size(), 2u);
  EXPECT_EQ(merged["otherData"]["tasks"][1]["clock_offset_ns"], -3'000'000);
  const std::vector<json> steps = events_named(merged, "train");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_NE(steps[0]["pid"], steps[1]["pid"]);
  EXPECT_NEAR(steps[0]["ts"].get<double>(), steps[1]["ts"].get<double>(), 1e-6);
  // One flow for the all_reduce both made: a start and an end, one in each process.
  const std::vector<json> flow = events_named(merged, "ring#3");
  ASSERT_EQ(flow.size(), 2u);
  EXPECT_EQ(flow[0]["ph"], "s");
  EXPECT_EQ(flow[1]["ph"], "f");
  EXPECT_NE(flow[0]["pid"], flow[1]["pid"]);

  EXPECT_THAT(weft::testing::chrome_trace_problems(json::parse(R"({"traceEvents": [
      {"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
      {"ph": "X", "pid": 1, "tid": 1, "ts": 5, "dur": 10},
      {"ph": "B", "pid": 1, "tid": 2, "ts": 0},
      {"ph": "s", "pid": 1, "tid": 1, "ts": 1, "id": 4},
      {"ph": "X", "pid": 1, "tid": 3, "ts": 0}, {"pid": 1}]})")),
              ::testing::SizeIs(5));  // the checker finds what is wrong

  try {
    merge_trace_jsons({a, "{\"traceEvents\": []}"});
    FAIL() << "a trace without otherData was merged";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("trace 1 is not a task's trace"));
  }
}

TEST(TraceFile, RunDirectoriesAndFilesAreTensorBoards) {
  const std::filesystem::path logdir =
      std::filesystem::path(::testing::TempDir()) / ("trace_file_" + std::to_string(getpid()));
  std::filesystem::remove_all(logdir);
  const std::string run = new_run_directory(logdir.string());
  const std::string again = new_run_directory(logdir.string());
  EXPECT_TRUE(
      std::regex_match(run, std::regex(".*/plugins/profile/20[0-9]{2}(_[0-9]{2}){5}(_[0-9]+)?")))
      << run;
  EXPECT_NE(run, again);
  const std::string a = task_trace_json(two_threads("worker:0", 5'000'000, 0));
  const std::string b = task_trace_json(two_threads("worker:1", 5'000'000, 0));
  write_traces(run, {"worker:0", "worker:1"}, {a, b});
  for (const char* file :
       {"worker_0.trace.json.gz", "worker_1.trace.json.gz", "cluster.trace.json.gz"}) {
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(run) / file)) << file;
  }
  std::ifstream in(std::filesystem::path(run) / "worker_1.trace.json.gz", std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(gzip_decompress(gz, "worker_1"), b);
  EXPECT_EQ(trace_file_name("worker:1/x y"), "worker_1_x_y.trace.json.gz");
  try {
    gzip_decompress(gz.substr(0, gz.size() / 2), "half.gz");
    FAIL() << "half a gzip stream was read";
  } catch (const DataLoss& e) {
    EXPECT_THAT(e.what(), HasSubstr("half.gz"));
  }
  EXPECT_THROW(gzip_decompress("plain text", "plain"), DataLoss);
  std::filesystem::remove_all(logdir);
}

}  // namespace
}  // namespace weft::profiler
