#include "ratio.h"

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace weft::bench {
namespace {

// Console output as usual, plus the median real time of every benchmark, in seconds.
class MedianCollector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.aggregate_name == "median") {
        medians[r.run_name.str()] =
            r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> medians;
};

}  // namespace

int run(int argc, char** argv, const std::vector<Ratio>& ratios, int repetitions) {
  std::vector<std::string> args(argv, argv + argc);
  auto has = [&](const std::string& flag) {
    for (const auto& a : args) {
      if (a.rfind(flag, 0) == 0) return true;
    }
    return false;
  };
  if (!has("--benchmark_repetitions")) {
    args.push_back("--benchmark_repetitions=" + std::to_string(repetitions));
  }
  if (!has("--benchmark_enable_random_interleaving")) {
    args.push_back("--benchmark_enable_random_interleaving=true");
  }
  if (!has("--benchmark_report_aggregates_only")) {
    args.push_back("--benchmark_report_aggregates_only=true");
  }
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  int n = static_cast<int>(cargs.size());
  benchmark::Initialize(&n, cargs.data());
  MedianCollector reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  int status = 0;
  std::printf("\n%-52s %12s %12s %8s  %s\n", "ratio (medians, same run)", "subject", "reference",
              "ratio", "goal");
  for (const Ratio& r : ratios) {
    auto s = reporter.medians.find(r.subject), f = reporter.medians.find(r.reference);
    if (s == reporter.medians.end() || f == reporter.medians.end()) {
      if (!has("--benchmark_filter")) {
        std::printf("%-52s missing benchmark %s or %s\n", r.title.c_str(), r.subject.c_str(),
                    r.reference.c_str());
        status = 1;
      }
      continue;
    }
    double ratio = (r.subject_work / s->second) / (r.reference_work / f->second);
    std::printf("%-52s %10.3f us %10.3f us %8.3f  %s\n", r.title.c_str(), s->second * 1e6,
                f->second * 1e6, ratio, r.goal.c_str());
  }
  return status;
}

}  // namespace weft::bench
