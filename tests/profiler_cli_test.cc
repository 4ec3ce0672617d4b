// The profiler across workers, with real processes: `weft launch -n 2 -- weft train --strategy
// multi_worker --profile-steps A:B --logdir D` leaves both workers' traces of steps A..B and the
// merged one, valid Chrome trace JSON, each collective split into its wait and its transfer and
// linked across the workers by a flow, the clocks' offset measured.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "cli_helpers.h"
#include "weft/profiler/trace_file.h"
#include "weft/testing/chrome_trace.h"

namespace {

using namespace weft_cli_test;
using nlohmann::json;
using testing::IsEmpty;

json read_trace(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  EXPECT_TRUE(in.good()) << file;
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json doc = json::parse(weft::profiler::gzip_decompress(gz, file.string()));
  EXPECT_THAT(weft::testing::chrome_trace_problems(doc), IsEmpty()) << file;
  return doc;
}

class ProfilerCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) / ("profiler_cli_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    write_dataset(dir_ / "data", 640, 64);  // 10 steps of 64
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ProfilerCli, TrainProfilesTheSameStepsOnEveryWorkerAndMergesThem) {
  const fs::path logdir = dir_ / "logs";
  Result r = shell("timeout 300 " + std::string(WEFT_BINARY_DIR) +
                   "/weft launch -n 2 -- weft train --strategy multi_worker --dataset " +
                   (dir_ / "data").string() +
                   " --batch-size 64 --epochs 1 --quiet --profile-steps 3:6 --logdir " +
                   logdir.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const fs::path profiles = logdir / "train" / "plugins" / "profile";
  std::vector<fs::path> runs;
  for (const auto& run : fs::directory_iterator(profiles)) runs.push_back(run.path());
  ASSERT_EQ(runs.size(), 1u) << r.output;
  EXPECT_THAT(r.output, testing::HasSubstr("weft: profiled steps 3-6 of 2 worker(s) into " +
                                           runs[0].string()));
  std::set<std::string> files;
  for (const auto& f : fs::directory_iterator(runs[0])) files.insert(f.path().filename());
  EXPECT_EQ(files, (std::set<std::string>{"worker_0.trace.json.gz", "worker_1.trace.json.gz",
                                          "cluster.trace.json.gz"}));

  std::map<std::string, std::set<std::string>> collective_ids;  // by worker
  for (const char* worker : {"worker_0", "worker_1"}) {
    const json doc = read_trace(runs[0] / (std::string(worker) + ".trace.json.gz"));
    std::set<std::string> steps, threads;
    int all_reduces = 0, calls = 0, waits = 0, inputs = 0;
    for (const json& e : doc["traceEvents"]) {
      if (e["ph"] == "M" && e["name"] == "thread_name") threads.insert(e["args"]["name"]);
      if (e["ph"] != "X") continue;
      if (e["name"] == "train") steps.insert(e["args"]["step_num"].get<std::string>());
      if (e["name"] == "Iterator::next") ++inputs;
      if (e["cat"] == "collective_wait" && e["name"] == "wait") ++waits;
      if (e["cat"] == "collective" && e.contains("args") && e["args"].contains("id")) ++calls;
      if (e["cat"] == "collective" && e["name"] == "all_reduce") {
        ++all_reduces;
        EXPECT_GT(std::stoll(e["args"]["bytes"].get<std::string>()), 0);
        EXPECT_FALSE(e["args"]["implementation_name"].get<std::string>().empty());
        collective_ids[worker].insert(e["args"]["id"]);
      }
    }
    EXPECT_EQ(steps, (std::set<std::string>{"3", "4", "5", "6"})) << worker;
    EXPECT_GE(all_reduces, 4) << worker;  // at least one a step
    EXPECT_EQ(waits, calls) << worker;  // every call's wait for its peers
    EXPECT_GE(inputs, 4) << worker;
    EXPECT_TRUE(threads.count("replica 0")) << worker;
    EXPECT_EQ(doc["otherData"]["task"], std::string(worker) == "worker_0" ? "worker:0" : "worker:1");
    // One host, one clock: the measured offset is small.
    EXPECT_LT(std::abs(doc["otherData"]["clock_offset_ns"].get<int64_t>()), 5'000'000) << worker;
  }
  // The same calls on both, by id; the merged trace links each with a flow.
  EXPECT_EQ(collective_ids["worker_0"], collective_ids["worker_1"]);
  const json cluster = read_trace(runs[0] / "cluster.trace.json.gz");
  std::set<int64_t> pids;
  size_t flows = 0;
  for (const json& e : cluster["traceEvents"]) {
    pids.insert(e["pid"].get<int64_t>());
    flows += e["ph"] == "s";
  }
  EXPECT_EQ(pids, (std::set<int64_t>{1, 2}));
  EXPECT_GE(flows, collective_ids["worker_0"].size());
}

}  // namespace
