// The profiler across workers, with real processes: `weft launch -n 2 -- weft train --strategy
// multi_worker --profile-steps A:B --logdir D` leaves both workers' traces of steps A..B and the
// merged one, valid Chrome trace JSON, each collective split into its wait and its transfer and
// linked across the workers by a flow, the clocks' offset measured; `weft profile` captures a
// running job's workers from outside through `weft launch --profiler-port`, with the job's token
// only; `weft report` cuts each step into categories that add up to the step time the job
// measures itself, names the worker slowed in its input pipeline the straggler, and its page,
// rendered by headless Chromium, shows it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

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
  json doc = json::parse(weft::gzip_decompress(gz, file.string()));
  EXPECT_THAT(weft::testing::chrome_trace_problems(doc), IsEmpty()) << file;
  return doc;
}

// `weft report`'s page and the data in it.
struct Page {
  std::string html;
  json data;
};
Page report(const fs::path& logdir, const fs::path& out) {
  Result r = run("report " + logdir.string() + " --out " + out.string());
  EXPECT_EQ(r.status, 0) << r.output;
  std::ifstream in(out);
  Page page;
  page.html.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  const std::string open = "<script type=\"application/json\" id=\"weft-report-data\">";
  const size_t from = page.html.find(open);
  const size_t to = page.html.find("</script>", from);
  EXPECT_NE(from, std::string::npos) << page.html.substr(0, 2000);
  if (from != std::string::npos) {
    page.data = json::parse(page.html.substr(from + open.size(), to - from - open.size()));
  }
  return page;
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
  Result r =
      shell("timeout 300 " + std::string(WEFT_BINARY_DIR) +
            "/weft launch -n 2 -- weft train --strategy multi_worker --dataset " +
            (dir_ / "data").string() +
            " --batch-size 64 --epochs 1 --quiet --profile-steps 3:6 --logdir " + logdir.string());
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
    EXPECT_EQ(waits, calls) << worker;    // every call's wait for its peers
    EXPECT_GE(inputs, 4) << worker;
    EXPECT_TRUE(threads.count("replica 0")) << worker;
    EXPECT_EQ(doc["otherData"]["task"],
              std::string(worker) == "worker_0" ? "worker:0" : "worker:1");
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

  // `weft report D` finds the run under D/train and writes the page into it, with the steps of
  // both workers and the training curve of the job's event files.
  const Page page = report(logdir, runs[0] / "report.html");
  EXPECT_EQ(page.data["tasks"], json({"worker:0", "worker:1"}));
  std::vector<int64_t> step_nums;
  for (const json& step : page.data["steps"]) {
    step_nums.push_back(step["step_num"]);
    for (const json& w : step["workers"]) EXPECT_GT(w["total_us"].get<double>(), 0);
  }
  EXPECT_EQ(step_nums, (std::vector<int64_t>{3, 4, 5, 6}));
  std::set<std::string> curves;
  for (const json& c : page.data["curves"]) curves.insert(c["name"]);
  EXPECT_TRUE(curves.count("train/epoch_loss")) << page.data["curves"].dump();
}

// The text of `file` once `done` holds for it (checked every 50 ms, for at most `seconds`).
std::string wait_for(const fs::path& file, const std::function<bool(const std::string&)>& done,
                     int seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::string text;
  while (std::chrono::steady_clock::now() < until) {
    std::ifstream in(file);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (done(text)) return text;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << file << " never was as expected; it holds:\n" << text;
  return text;
}

std::string wait_for(const fs::path& file, const std::regex& pattern, int seconds) {
  return wait_for(
      file, [&](const std::string& text) { return std::regex_search(text, pattern); }, seconds);
}

TEST_F(ProfilerCli, ProfileCapturesARunningJobsWorkersWithItsTokenOnly) {
  // A job long enough to be captured in the middle (stopped once captured): 8 epochs of 200
  // steps, captured from its first epoch's start.
  write_dataset(dir_ / "data", 12800, 64);
  const std::string weft = std::string(WEFT_BINARY_DIR) + "/weft ";
  Result started = shell("cd " + dir_.string() + "; WEFT_CLUSTER_TOKEN=t0k3n timeout 300 " + weft +
                         "launch -n 2 --profiler-port 0 -- weft train --strategy multi_worker "
                         "--dataset data --batch-size 64 --epochs 8 > launch.log 2>&1 & "
                         "echo $!");
  const pid_t launcher = std::stoi(started.output);
  const std::string log = wait_for(dir_ / "launch.log", std::regex("Epoch 1/8"), 120);
  std::smatch hosts;
  ASSERT_TRUE(std::regex_search(log, hosts, std::regex("weft profile --hosts (\\S+)"))) << log;
  const std::string logdir = (dir_ / "logs").string();
  Result r =
      shell("WEFT_CLUSTER_TOKEN=t0k3n timeout 60 " + weft + "profile --hosts " + hosts[1].str() +
            " --logdir " + logdir + " --duration-ms 600 --host-tracer-level 1");
  // From outside the job: a wrong token, and none, are refused.
  Result wrong = shell("WEFT_CLUSTER_TOKEN=other timeout 60 " + weft + "profile --hosts " +
                       hosts[1].str() + " --logdir " + logdir + " --duration-ms 100");
  Result none = shell("env -u WEFT_CLUSTER_TOKEN timeout 60 " + weft + "profile --hosts " +
                      hosts[1].str() + " --logdir " + logdir + " --duration-ms 100");
  ::kill(launcher, SIGTERM);
  shell("timeout 60 sh -c 'while kill -0 " + std::to_string(launcher) +
        " 2>/dev/null; do sleep 0.1; done'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(wrong.status, 1);
  EXPECT_THAT(wrong.output, testing::HasSubstr("the call's cluster token is wrong"))
      << wrong.output;
  EXPECT_EQ(none.status, 1);
  EXPECT_THAT(none.output, testing::HasSubstr("the cluster token is empty")) << none.output;

  std::smatch run;
  ASSERT_TRUE(std::regex_search(r.output, run, std::regex("weft profile: (\\S+): (.*)")))
      << r.output;
  EXPECT_EQ(run[2].str(), "cluster.trace.json.gz, worker_0.trace.json.gz, worker_1.trace.json.gz");
  std::map<std::string, std::map<std::string, double>> step_start;  // worker → step → µs
  const json cluster = read_trace(fs::path(run[1].str()) / "cluster.trace.json.gz");
  for (const json& e : cluster["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "train") {
      step_start[std::to_string(e["pid"].get<int>())][e["args"]["step_num"]] = e["ts"];
    }
  }
  ASSERT_EQ(step_start.size(), 2u);
  // The workers' steps, on the client's clock: the same steps captured, each begun within a
  // few milliseconds on both (they meet in every step's all-reduce).
  int common = 0;
  for (const auto& [step, ts] : step_start["1"]) {
    if (!step_start["2"].count(step)) continue;
    ++common;
    EXPECT_LT(std::abs(ts - step_start["2"][step]), 20'000) << "step " << step;
  }
  EXPECT_GE(common, 5);
  for (const json& task : cluster["otherData"]["tasks"]) {
    EXPECT_LT(std::abs(task["clock_offset_ns"].get<int64_t>()), 2'000'000);
    const int64_t window = task["end_ns"].get<int64_t>() - task["start_ns"].get<int64_t>();
    EXPECT_GE(window, 600'000'000);
  }
}

// The ends of each worker's steps (µs on its own clock; step k at [k - 1]) that
// profiled_job_tool printed, by task: lines "[worker:N] step ends us: T1 T2 …".
std::map<std::string, std::vector<double>> step_ends(const std::string& output) {
  std::map<std::string, std::vector<double>> ends;
  const std::string mark = "] step ends us:";
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line) && !lines.eof();) {  // whole lines only
    const size_t at = line.find(mark);
    if (line.rfind("[worker:", 0) != 0 || at == std::string::npos) continue;
    std::istringstream in(line.substr(at + mark.size()));
    std::vector<double>& ts = ends[line.substr(1, at - 1)];
    for (double t; in >> t;) ts.push_back(t);
  }
  return ends;
}

// Each worker's mean step in the report, against the time between the ends of the same steps
// (and of the steps before them) as the job measured it.
void expect_steps_add_up(const json& data, const std::map<std::string, std::vector<double>>& ends) {
  for (size_t t = 0; t < data["tasks"].size(); ++t) {
    const std::string task = data["tasks"][t];
    ASSERT_TRUE(ends.count(task)) << task;
    const std::vector<double>& end = ends.at(task);
    double total = 0, measured = 0;
    int steps = 0;
    for (const json& step : data["steps"]) {
      const json& w = step["workers"][t];
      if (w.is_null()) continue;
      double sum = 0;
      for (const auto& [category, us] : w["category_us"].items()) sum += us.get<double>();
      EXPECT_NEAR(sum, w["total_us"].get<double>(), 1e-3 * w["total_us"].get<double>())
          << task << " step " << step["step_num"];
      const size_t k = step["step_num"].get<size_t>();
      ASSERT_TRUE(k >= 2 && k <= end.size()) << task << " step " << k;
      total += sum;
      measured += end[k - 1] - end[k - 2];
      ++steps;
    }
    ASSERT_GT(steps, 0) << task;
    std::printf("%s: report %.3f ms a step, the job's own measure %.3f, over %d steps\n",
                task.c_str(), total / steps / 1000, measured / steps / 1000, steps);
    EXPECT_NEAR(total / steps / 1000, measured / steps / 1000, 0.05 * measured / steps / 1000)
        << task << ": the report's step (ms) against the job's own measure of the same steps";
  }
}

TEST_F(ProfilerCli, ReportNamesTheWorkerSlowInItsInputTheStragglerInChromium) {
  // Worker 1 waits 50 ms in its input pipeline before each batch; steps 20-40 are profiled. (At
  // 20 ms, a step's compute under ASan took as long as the wait once, and was its bottleneck.)
  Result r = shell("cd " + dir_.string() + "; timeout 300 " + std::string(WEFT_BINARY_DIR) +
                   "/weft launch -n 2 -- " + WEFT_BINARY_DIR +
                   "/tests/profiled_job_tool logs 1 50 60 20:40");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::map<std::string, std::vector<double>> ends = step_ends(r.output);
  ASSERT_EQ(ends.size(), 2u) << r.output;
  const Page page = report(dir_ / "logs", dir_ / "report.html");
  const json& data = page.data;
  ASSERT_EQ(data["tasks"], json({"worker:0", "worker:1"}));
  ASSERT_EQ(data["steps"].size(), 21u);
  EXPECT_EQ(data["steps"][0]["step_num"], 20);
  expect_steps_add_up(data, ends);
  int slow_last = 0;
  for (const json& step : data["steps"]) {
    if (step["straggler"] != "worker:1") continue;
    ++slow_last;
    EXPECT_EQ(step["bottleneck"], "input") << step.dump();
  }
  EXPECT_GE(slow_last, 18) << data.dump();
  EXPECT_EQ(data["last_arrivals"][1], slow_last);
  EXPECT_GT(data["input_share"][1].get<double>(), 0.5);
  EXPECT_LT(data["input_share"][0].get<double>(), 0.1);
  // The fast worker spends its steps waiting for the slow one in the collectives.
  double waiting = 0;
  for (const json& step : data["steps"]) {
    waiting += step["workers"][0]["category_us"]["collective wait"].get<double>();
  }
  EXPECT_GT(waiting / 21, 10'000) << "µs a step";

  // The page as a browser shows it (headless Chromium, Debian's chromium).
  Result dom = shell(
      "timeout 120 chromium --headless --no-sandbox --disable-gpu "
      "--disable-dev-shm-usage --dump-dom file://" +
      (dir_ / "report.html").string() + " 2>/dev/null");
  ASSERT_EQ(dom.status, 0) << dom.output.substr(0, 2000);
  for (const char* shown :
       {"<h1>weft report</h1>", "Your program is HIGHLY input-bound", "on worker:1",
        "The straggler of most steps is <b>worker:1</b>", "<th>worker:0 (ms)</th>",
        "<th>worker:1 (ms)</th>", "collective wait", "collective transfer", "compute",
        "<td>40</td>", "id=\"steps\"", "<rect"}) {
    EXPECT_THAT(dom.output, testing::HasSubstr(shown));
  }
}

TEST_F(ProfilerCli, AProfileOfARunningJobAddsUpToTheStepTimeItMeasures) {
  const std::string weft = std::string(WEFT_BINARY_DIR) + "/weft ";
  Result started = shell("cd " + dir_.string() + "; WEFT_CLUSTER_TOKEN=t0k3n timeout 300 " + weft +
                         "launch -n 2 --profiler-port 0 -- " + WEFT_BINARY_DIR +
                         "/tests/profiled_job_tool logs 0 5 300 serve > job.log 2>&1 & echo $!");
  const pid_t launcher = std::stoi(started.output);
  const std::string log = wait_for(dir_ / "job.log", std::regex("training"), 120);
  std::smatch hosts;
  ASSERT_TRUE(std::regex_search(log, hosts, std::regex("weft profile --hosts (\\S+)"))) << log;
  Result r =
      shell("WEFT_CLUSTER_TOKEN=t0k3n timeout 60 " + weft + "profile --hosts " + hosts[1].str() +
            " --logdir " + (dir_ / "logs").string() + " --duration-ms 500 --host-tracer-level 1");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string done = wait_for(
      dir_ / "job.log", [](const std::string& log) { return step_ends(log).size() == 2; }, 120);
  shell("timeout 60 sh -c 'while kill -0 " + std::to_string(launcher) +
        " 2>/dev/null; do sleep 0.1; done'");
  const Page page = report(dir_ / "logs", dir_ / "report.html");
  ASSERT_EQ(page.data["tasks"].size(), 2u);
  EXPECT_GE(page.data["steps"].size(), 10u);
  expect_steps_add_up(page.data, step_ends(done));
}

}  // namespace
