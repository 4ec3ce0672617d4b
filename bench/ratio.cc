#include "ratio.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

extern char** environ;

namespace weft::bench {
namespace {

// Median real time of every benchmark that ran, in seconds, by name.
using Medians = std::map<std::string, double>;

// Console output as usual, plus the medians.
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
  Medians medians;
};

// The first argument starting with `prefix`.
std::vector<std::string>::const_iterator find_flag(const std::vector<std::string>& args,
                                                   const std::string& prefix) {
  return std::find_if(args.begin(), args.end(),
                      [&](const std::string& a) { return a.rfind(prefix, 0) == 0; });
}
bool has_flag(const std::vector<std::string>& args, const std::string& prefix) {
  return find_flag(args, prefix) != args.end();
}

// The value of `--name=value`, removed from `args` (Google Benchmark would not know it).
std::optional<std::string> take_flag(std::vector<std::string>& args, const std::string& name) {
  std::string prefix = "--" + name + "=";
  auto it = find_flag(args, prefix);
  if (it == args.end()) return std::nullopt;
  std::string value = it->substr(prefix.size());
  args.erase(it);
  return value;
}

// `args` as a C argument vector, ending in a null pointer.
std::vector<char*> c_args(std::vector<std::string>& args) {
  std::vector<char*> c;
  for (auto& a : args) c.push_back(a.data());
  c.push_back(nullptr);
  return c;
}

// Whether the command line asks Google Benchmark for output of its own (help or a listing); that
// runs in this one process, where the user sees it, and nothing is measured.
bool own_output(const std::vector<std::string>& args) {
  return has_flag(args, "--help") || has_flag(args, "--benchmark_list_tests");
}

// Runs the registered benchmarks in this process.
Medians run_here(std::vector<std::string> args, int repetitions) {
  if (!has_flag(args, "--benchmark_repetitions")) {
    args.push_back("--benchmark_repetitions=" + std::to_string(repetitions));
  }
  if (!has_flag(args, "--benchmark_enable_random_interleaving")) {
    args.push_back("--benchmark_enable_random_interleaving=true");
  }
  if (!has_flag(args, "--benchmark_report_aggregates_only")) {
    args.push_back("--benchmark_report_aggregates_only=true");
  }
  std::vector<char*> cargs = c_args(args);
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, cargs.data());
  MedianCollector reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return reporter.medians;
}

// A new empty file in the temporary directory; "" (after saying why) if none can be made.
std::string temp_file(const char* what) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (ec) {
    const char* tmpdir = std::getenv("TMPDIR");
    std::fprintf(stderr, "weft bench: cannot use the temporary directory (TMPDIR=%s): %s\n",
                 tmpdir ? tmpdir : "", ec.message().c_str());
    return "";
  }
  std::string path = (dir / "weft_bench_XXXXXX").string();
  int fd = mkstemp(path.data());
  if (fd < 0) {
    std::fprintf(stderr, "weft bench: cannot make a %s file %s: %s\n", what, path.c_str(),
                 std::strerror(errno));
    return "";
  }
  close(fd);
  return path;
}

// Runs this binary again with `args` and reads back its medians. Its console output goes to a log
// that is shown only if it fails; then nullopt, after saying how it failed.
std::optional<Medians> run_worker(std::vector<std::string> args) {
  std::string results = temp_file("results"), log = results.empty() ? "" : temp_file("log");
  std::error_code ignored;
  if (log.empty()) {
    if (!results.empty()) std::filesystem::remove(results, ignored);
    return std::nullopt;
  }
  args.push_back("--weft_results=" + results);
  std::vector<char*> cargs = c_args(args);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  int err = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  if (err == 0) {
    pid_t r;
    while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    if (r != pid) err = errno;
  }
  std::optional<Medians> medians;
  if (err != 0) {
    std::fprintf(stderr, "weft bench: cannot run %s again: %s\n", args[0].c_str(),
                 std::strerror(err));
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ifstream in(log);
    std::fprintf(stderr, "%s", std::string(std::istreambuf_iterator<char>(in), {}).c_str());
    std::fprintf(stderr, "weft bench: a worker process of %s %s %d (its output is above)\n",
                 args[0].c_str(),
                 WIFSIGNALED(status) ? "was killed by signal" : "exited with status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  } else {
    medians.emplace();
    std::ifstream in(results);
    std::string name;
    double seconds;
    while (in >> seconds && std::getline(in >> std::ws, name)) (*medians)[name] = seconds;
    if (!in.eof()) {
      std::fprintf(stderr, "weft bench: cannot read the results file %s of a worker of %s\n",
                   results.c_str(), args[0].c_str());
      medians.reset();
    }
  }
  std::filesystem::remove(results, ignored);
  std::filesystem::remove(log, ignored);
  return medians;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 == 1 ? v[h] : (v[h - 1] + v[h]) / 2;
}

}  // namespace

int run(int argc, char** argv, const std::vector<Ratio>& ratios, int repetitions, int processes) {
  std::vector<std::string> args(argv, argv + argc);
  if (auto n = take_flag(args, "weft_processes")) {
    char* end = nullptr;
    long value = std::strtol(n->c_str(), &end, 10);
    if (n->empty() || *end != '\0' || value < 1 || value > 1000) {
      std::fprintf(stderr,
                   "weft bench: --weft_processes expects a count from 1 to 1000, got '%s'\n",
                   n->c_str());
      return 1;
    }
    processes = static_cast<int>(value);
  }
  if (auto results = take_flag(args, "weft_results")) {  // a worker of a multi-process run
    std::ofstream out(*results);
    out.precision(17);
    for (const auto& [name, seconds] : run_here(args, repetitions)) {
      out << seconds << ' ' << name << '\n';
    }
    out.close();
    if (!out) {
      std::fprintf(stderr, "weft bench: cannot write the results file %s: %s\n", results->c_str(),
                   std::strerror(errno));
      return 1;
    }
    return 0;
  }

  if (own_output(args)) {  // help or a listing: nothing runs, so there is nothing to compare
    run_here(args, repetitions);
    return 0;
  }
  std::vector<Medians> runs;
  if (processes <= 1) {
    runs.push_back(run_here(args, repetitions));
  } else {
    for (int i = 0; i < processes; ++i) {
      std::fprintf(stderr, "process %d of %d\n", i + 1, processes);
      std::optional<Medians> m = run_worker(args);
      if (!m) return 1;
      runs.push_back(std::move(*m));
    }
  }

  int status = 0;
  std::string heading = runs.size() == 1 ? "ratio (medians, same run)"
                                         : "ratio (median of " + std::to_string(runs.size()) +
                                               " processes, each one run)";
  std::printf("\n%-52s %12s %12s %8s %13s  %s\n", heading.c_str(), "subject", "reference", "ratio",
              "range", "goal");
  for (const Ratio& r : ratios) {
    std::vector<double> subject, reference, ratio;
    for (const Medians& m : runs) {
      auto s = m.find(r.subject), f = m.find(r.reference);
      if (s == m.end() || f == m.end()) continue;
      subject.push_back(s->second);
      reference.push_back(f->second);
      ratio.push_back((r.subject_work / s->second) / (r.reference_work / f->second));
    }
    if (ratio.empty()) {
      if (!has_flag(args, "--benchmark_filter")) {
        std::printf("%-52s missing benchmark %s or %s\n", r.title.c_str(), r.subject.c_str(),
                    r.reference.c_str());
        status = 1;
      }
      continue;
    }
    auto [lo, hi] = std::minmax_element(ratio.begin(), ratio.end());
    char range[32] = "";
    if (ratio.size() > 1) std::snprintf(range, sizeof range, "%.3f-%.3f", *lo, *hi);
    std::printf("%-52s %10.3f us %10.3f us %8.3f %13s  %s\n", r.title.c_str(),
                median(subject) * 1e6, median(reference) * 1e6, median(ratio), range,
                r.goal.c_str());
  }
  return status;
}

}  // namespace weft::bench
