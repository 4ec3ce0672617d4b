// weft::bench::run (bench/ratio.cc) as a user runs it: matmul_bench in one process prints Google
// Benchmark's table and the ratio of medians; with --weft_processes=N it runs N worker processes
// of itself and prints the median of their ratios with the range. Timings are not judged here
// (ARCHITECTURE.md: timing goals live in benchmarks), only that the figures hang together.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <regex>
#include <string>

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Output {
  int exit_code;
  std::string text;  // stdout and stderr
};

Output matmul_bench(const std::string& args, const std::string& env) {
  std::string cmd = env + " " + WEFT_BINARY_DIR + "/bench/matmul_bench " + args + " 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << cmd;
  if (pipe == nullptr) return {-1, ""};
  Output out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.text.append(buf, n);
  int status = ::pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// A short run of one float32 shape (both sides, 2 repetitions each) in `processes` processes.
Output short_run(int processes, const std::string& env = "", const std::string& more = "") {
  return matmul_bench(
      "--benchmark_filter=128/784/700/0 --benchmark_repetitions=2 --weft_processes=" +
          std::to_string(processes) + " " + more,
      env);
}

const char* const kRatioLine =
    R"(matmul f32 128/784/700 weft vs oneDNN +([0-9.]+) us +([0-9.]+) us +([0-9.]+) +)";

TEST(BenchRatio, OneProcessPrintsTheTableAndTheRatioOfMedians) {
  Output out = short_run(1);
  ASSERT_EQ(out.exit_code, 0) << out.text;
  EXPECT_THAT(out.text, HasSubstr("weft_matmul/128/784/700/0/min_time:0.050/real_time_median"));
  EXPECT_THAT(out.text, HasSubstr("ratio (medians, same run)"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out.text, m, std::regex(std::string(kRatioLine) + ">= 0.95")))
      << out.text;
  double subject = std::stod(m[1]), reference = std::stod(m[2]), ratio = std::stod(m[3]);
  EXPECT_GT(subject, 0);
  EXPECT_GT(reference, 0);
  // Both sides do the same work: the ratio is reference time / subject time.
  EXPECT_NEAR(ratio, reference / subject, 0.002);
}

TEST(BenchRatio, WorkerProcessesGiveTheMedianRatioAndItsRange) {
  Output out = short_run(3);
  ASSERT_EQ(out.exit_code, 0) << out.text;
  for (const char* line : {"process 1 of 3", "process 2 of 3", "process 3 of 3"}) {
    EXPECT_THAT(out.text, HasSubstr(line));
  }
  EXPECT_THAT(out.text, HasSubstr("ratio (median of 3 processes, each one run)"));
  // The workers' tables go nowhere; only the ratios are printed.
  EXPECT_THAT(out.text, Not(HasSubstr("real_time_median")));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      out.text, m, std::regex(std::string(kRatioLine) + "([0-9.]+)-([0-9.]+) +>= 0.95")))
      << out.text;
  double ratio = std::stod(m[3]), lo = std::stod(m[4]), hi = std::stod(m[5]);
  EXPECT_GT(lo, 0);
  EXPECT_LE(lo, ratio);
  EXPECT_LE(ratio, hi);
}

TEST(BenchRatio, AWorkerThatCannotReportIsAnErrorNamingWhy) {
  Output out = short_run(2, "TMPDIR=/nonexistent/weft");
  EXPECT_EQ(out.exit_code, 1) << out.text;
  EXPECT_THAT(
      out.text,
      HasSubstr("weft bench: cannot use the temporary directory (TMPDIR=/nonexistent/weft)"));
  EXPECT_THAT(out.text, Not(HasSubstr("ratio (median")));
}

TEST(BenchRatio, ABadProcessCountIsRefused) {
  for (const char* count : {"0", "two", "3x", ""}) {
    Output out = matmul_bench(std::string("--weft_processes=") + count, "");
    EXPECT_EQ(out.exit_code, 1) << count << ": " << out.text;
    EXPECT_THAT(out.text, HasSubstr("--weft_processes expects a count from 1 to 1000, got '" +
                                    std::string(count) + "'"));
  }
}

TEST(BenchRatio, AListingRunsInOneProcessAndComparesNothing) {
  Output list = short_run(3, "", "--benchmark_list_tests");
  ASSERT_EQ(list.exit_code, 0) << list.text;
  EXPECT_THAT(list.text, HasSubstr("onednn_matmul/128/784/700/0/min_time:0.050/real_time"));
  EXPECT_THAT(list.text, Not(HasSubstr("process 1 of 3")));
  EXPECT_THAT(list.text, Not(HasSubstr("ratio (")));
  Output all = matmul_bench("--benchmark_list_tests", "");  // no filter: still nothing missing
  EXPECT_EQ(all.exit_code, 0) << all.text;
  EXPECT_THAT(all.text, Not(HasSubstr("missing benchmark")));
}

TEST(BenchRatio, AFailingWorkerIsShownWithItsOutput) {
  // Only the workers run Google Benchmark, so only they reject an output file they cannot open.
  Output out = short_run(2, "", "--benchmark_out=/nonexistent/weft/out.json");
  EXPECT_EQ(out.exit_code, 1) << out.text;
  EXPECT_THAT(out.text, HasSubstr("invalid file name: '/nonexistent/weft/out.json'"));
  EXPECT_THAT(out.text, HasSubstr("a worker process of"));
  EXPECT_THAT(out.text, HasSubstr("exited with status 1 (its output is above)"));
  EXPECT_THAT(out.text, Not(HasSubstr("process 2 of 2")));
}

}  // namespace
