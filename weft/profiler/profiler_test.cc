// profiler::start / stop / Profile in one process: the run's file in TensorBoard's layout, with
// the ops at host level 2 and not at 1, user Trace events and step markers; one capture at a
// time, the second refused naming the first.
#include "weft/profiler/profiler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "weft/core/errors.h"
#include "weft/ops/elementwise.h"
#include "weft/profiler/trace.h"
#include "weft/profiler/trace_file.h"
#include "weft/testing/chrome_trace.h"

namespace weft::profiler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class Profiler : public ::testing::Test {
 protected:
  void SetUp() override {
    logdir_ = fs::path(::testing::TempDir()) / ("profiler_" + std::to_string(getpid()));
    fs::remove_all(logdir_);
  }
  void TearDown() override { fs::remove_all(logdir_); }
  // The run directory's trace of `task`, checked against the format.
  json read_trace(const std::string& run, const std::string& task) {
    std::ifstream in(fs::path(run) / trace_file_name(task), std::ios::binary);
    EXPECT_TRUE(in.good()) << run << " has no trace of " << task;
    std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    json doc = json::parse(gzip_decompress(gz, run));
    EXPECT_THAT(weft::testing::chrome_trace_problems(doc), IsEmpty());
    return doc;
  }
  static int count(const json& doc, const std::string& name) {
    int n = 0;
    for (const json& e : doc["traceEvents"]) n += e.value("name", "") == name && e["ph"] == "X";
    return n;
  }
  fs::path logdir_;
};

TEST_F(Profiler, StopWritesTheRunsTraceWithOpsAtLevelTwo) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3});
  for (int level : {1, 2}) {
    start(logdir_.string(), {.host_tracer_level = level, .task = "solo"});
    for (int64_t s = 1; s <= 3; ++s) {
      Trace step("train", {.step_num = s});
      Trace mine("my_work", {.stats = {{"k", "v"}}});
      relu(add(a, a));
    }
    const std::string run = stop();
    EXPECT_EQ(fs::path(run).parent_path(), logdir_ / "plugins" / "profile");
    const json doc = read_trace(run, "solo");
    EXPECT_EQ(count(doc, "train"), 3);
    EXPECT_EQ(count(doc, "my_work"), 3);
    EXPECT_EQ(count(doc, "add"), level == 2 ? 3 : 0) << "level " << level;
    EXPECT_EQ(doc["otherData"]["host_tracer_level"], level);
    for (const json& e : doc["traceEvents"]) {
      if (e.value("name", "") == "train") {
        EXPECT_EQ(e["cat"], "step");
        EXPECT_EQ(e["args"]["_r"], "1");
      }
      if (e.value("name", "") == "my_work") {
        EXPECT_EQ(e["args"]["k"], "v");
      }
    }
  }
  // Nothing is recorded once stopped.
  EXPECT_FALSE(trace_active(1));
}

TEST_F(Profiler, OneCaptureAtATimeTheSecondRefusedNamingTheFirst) {
  start(logdir_.string());
  try {
    start("elsewhere");
    FAIL() << "a second start was accepted";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("profiler::start(\"elsewhere\")"));
    EXPECT_THAT(e.what(), HasSubstr("already being captured, by profiler::start(\"" +
                                    logdir_.string() + "\")"));
  }
  EXPECT_EQ(stop(/*save=*/false), "");
  EXPECT_FALSE(fs::exists(logdir_ / "plugins"));
  try {
    stop();
    FAIL() << "stop without a capture was accepted";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("no profile is being captured"));
  }
  EXPECT_THROW(start(logdir_.string(), {.host_tracer_level = 4}), InvalidArgument);
  EXPECT_THROW(start(logdir_.string(), {.delay_ms = -1}), InvalidArgument);
  EXPECT_THROW(start(""), InvalidArgument);
}

TEST_F(Profiler, AProfileScopeWritesWhenItEndsAndDelayedEventsAreLeftOut) {
  {
    Profile p(logdir_.string(), {.host_tracer_level = 1, .delay_ms = 200, .task = "t"});
    { Trace early("early"); }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    { Trace late("late"); }
  }
  ASSERT_TRUE(fs::exists(logdir_ / "plugins" / "profile"));
  std::string run = fs::directory_iterator(logdir_ / "plugins" / "profile")->path().string();
  const json doc = read_trace(run, "t");
  EXPECT_EQ(count(doc, "early"), 0);
  EXPECT_EQ(count(doc, "late"), 1);
}

}  // namespace
}  // namespace weft::profiler
