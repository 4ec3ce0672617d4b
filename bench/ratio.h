// Benchmarks that report a ratio against a reference measured in the same process (ARCHITECTURE.md:
// the machine is shared and noisy, so only ratios hold). Each benchmark binary registers Google
// Benchmark cases as usual, then names pairs; after the run the median of each side is compared
// (in each of several processes, if asked, and then the median of their ratios is printed).
//
//   int main(int argc, char** argv) {
//     return weft::bench::run(argc, argv, {{"matmul 512^3", "weft/512", "onednn/512"}});
//   }
#pragma once

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

namespace weft::bench {

// ratio = (subject_work / median_time(subject)) / (reference_work / median_time(reference)):
// above 1 the subject gets more work done per second than the reference.
struct Ratio {
  std::string title;
  std::string subject;    // benchmark name, e.g. "weft_matmul/128/784/700"
  std::string reference;  // benchmark name
  double subject_work = 1;
  double reference_work = 1;
  std::string goal;  // e.g. ">= 0.95", printed beside the ratio
};

// Runs every registered benchmark (`repetitions` of each, randomly interleaved, unless the command
// line says otherwise), then prints one line per Ratio. Returns 0, or 1 if a named benchmark is
// missing, the command line is wrong or a worker process failed.
//
// With `processes` > 1 (or --weft_processes=N on the command line) the whole run is repeated in
// that many fresh processes of this binary, one after another. Each process measures both sides
// of every ratio, interleaved as above, and computes its own ratio; the line printed is the median
// of those ratios, with their range (and, for each side, the median of the processes' medians).
// Why: at a product of a few microseconds, which process ran moves a ratio by +-3% (not through
// its address layout: the spread stays with ASLR off), and two instances of the same side agree
// within a process; more processes sample that, where more repetitions in one process cannot.
// --help and --benchmark_list_tests run in one process, since their output is the point; a
// --benchmark_out file holds the last process's results.
int run(int argc, char** argv, const std::vector<Ratio>& ratios, int repetitions = 10,
        int processes = 1);

}  // namespace weft::bench
