// `weft bench ps [--workers 1,2,4,8] [--ps 2] [--bytes ...] [--train-epochs 1] [--json]`: what a
// parameter-server step costs, beside an all-reduce of the same bytes, and what parameter-server
// training gives against multi_worker's.
//
// For each number of workers it starts a local cluster (`weft launch --ps K -n N`) of itself. Each
// task makes one variable per size in --bytes (float32, cut over the K ps tasks by a
// FixedShardsPartitioner), and the chief's ClusterCoordinator runs closures of a step: pull the
// variable (the closure's snapshot), apply a zero gradient with SGD (pushed to the ps tasks and
// committed there). A round is 4 closures per worker, scheduled at once and joined; a step's time
// is the median round's over 4, the time in which every worker pulls and pushes the variable once.
// Its bandwidth is workers x 2 x bytes over that time. The 0-byte row is a closure that touches
// no variable (dispatch only); the 4-byte one is the null step (pull, push and commit of one
// float). Beside each row, `weft bench allreduce` of the same bytes between as many processes
// (AUTO, and RING, weft's TCP ring). Then `weft train --model mlp` on --dataset, under
// `weft launch --ps 2 -n 2 -- ... --strategy parameter_server` and `weft launch -n 2 -- ...
// --strategy multi_worker`: the training examples per second of each (median of --train-runs) and
// their ratio.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tools/weft/bench.h"
#include "tools/weft/commands.h"
#include "tools/weft/flags.h"
#include "weft/core/errors.h"
#include "weft/distribute/cluster/tf_config.h"
#include "weft/distribute/parameter_server/cluster_coordinator.h"
#include "weft/distribute/parameter_server/parameter_server_strategy.h"
#include "weft/ops/creation.h"
#include "weft/optim/sgd.h"

namespace weft::cli {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct PsBenchFlags {
  bool json = false;
  std::vector<int> workers{1, 2, 4, 8};
  int ps = 2;
  std::vector<int64_t> bytes{0, 4, 64 << 10, 1 << 20, 16 << 20};
  int train_epochs = 1;  // 0: no training comparison
  int train_runs = 1;
  std::string dataset = "fashion_mnist";
  std::string output;
};

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// In a cluster of `weft launch --ps K -n N`: every task makes the variables and registers the
// step; the workers and ps tasks serve; the chief times the rounds and writes JSON rows to
// f.output.
void run_in_cluster(const PsBenchFlags& f) {
  distribute::cluster_resolver::TFConfigClusterResolver resolver;
  distribute::ParameterServerOptions options;
  options.variable_partitioner =
      distribute::FixedShardsPartitioner{resolver.cluster_spec().num_tasks("ps")};
  // Made before the strategy, so that they outlive its worker service, which runs the step.
  std::vector<Variable> variables;
  std::vector<Tensor> zero_gradients;
  std::optional<optim::SGD> sgd;
  distribute::ParameterServerStrategy strategy(resolver, options);
  {
    auto scope = strategy.scope();
    for (int64_t b : f.bytes) {
      if (b == 0) continue;
      variables.emplace_back(zeros({b / 4}), "bench/" + std::to_string(b));
      zero_gradients.push_back(zeros({b / 4}));
    }
    sgd.emplace();
  }
  // Argument 0: the variable's index, or -1 for none.
  auto step =
      distribute::register_function("weft_bench/ps_step", [&](const distribute::ClosureArgs& args) {
        const int64_t i = args.tensor(0).item<int64_t>();
        if (i >= 0) {
          const Variable& v = variables[static_cast<size_t>(i)];
          [[maybe_unused]] Tensor pulled = v.value();
          sgd->apply_gradients({{zero_gradients[static_cast<size_t>(i)], v}});
        }
        return std::vector<Tensor>{};
      });
  if (!strategy.is_chief()) {
    strategy.join();
    return;
  }
  distribute::ClusterCoordinator coordinator(strategy);
  const int workers = strategy.num_workers();
  json rows = json::array();
  int64_t index = 0;
  for (int64_t b : f.bytes) {
    const Tensor arg = Tensor::scalar(b == 0 ? -1 : index++, kInt64);
    auto round = [&] {
      for (int k = 0; k < 4 * workers; ++k) coordinator.schedule(step, {arg});
      coordinator.join();
    };
    round();  // warm-up: connections, first pulls
    std::vector<double> times;
    const auto start = Clock::now();
    while (times.size() < 5 || std::chrono::duration<double>(Clock::now() - start).count() < 0.5) {
      const auto t0 = Clock::now();
      round();
      times.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / 4);
    }
    const double seconds = median(times);
    rows.push_back({{"workers", workers},
                    {"ps", strategy.num_ps()},
                    {"bytes", b},
                    {"step_seconds", seconds},
                    {"gbps", workers * 2.0 * static_cast<double>(b) / seconds / 1e9}});
  }
  std::FILE* out = std::fopen(f.output.c_str(), "w");
  WEFT_CHECK(out != nullptr, Unavailable) << "weft bench ps: cannot write " << f.output;
  std::fprintf(out, "%s\n", rows.dump().c_str());
  std::fclose(out);
}

// Runs `command` (its output to stderr) and parses the JSON it wrote to its --output.
json run_for_json(const std::string& command) {
  int status = 0;
  const std::string text = run_with_output_file(command + " 1>&2", status);
  WEFT_CHECK(status == 0 && !text.empty(), Internal)
      << "weft bench ps: `" << command << "` failed (exit status " << status << ")";
  return json::parse(text);
}

// The all-reduce of each size (AUTO and RING) between `workers` processes, beside its row.
void add_allreduce(json& row, const std::string& program) {
  const int workers = row["workers"].get<int>();
  const int64_t bytes = row["bytes"].get<int64_t>();
  if (workers < 2 || bytes < 4) return;
  const std::string size = std::to_string(bytes);
  json measured = run_for_json(program + " bench allreduce --json --workers " +
                               std::to_string(workers) + " --min-bytes " + size + " --max-bytes " +
                               size + " --implementations AUTO,RING");
  for (const json& m : measured) {
    const std::string name =
        m["implementation"] == "AUTO" ? "allreduce_seconds" : "allreduce_ring_seconds";
    row[name] = m["median_seconds"];
  }
}

// `weft train --model mlp` under `launch`, `runs` times: the median training examples per second
// and test accuracy.
json train(const PsBenchFlags& f, const std::string& program, const std::string& launch,
           const std::string& strategy) {
  std::vector<double> speeds, accuracies;
  for (int r = 0; r < f.train_runs; ++r) {
    const std::string metrics = "/tmp/weft-bench-ps-" + std::to_string(::getpid()) + ".json";
    const std::string command = program + " launch " + launch + " -- " + program +
                                " train --model mlp --quiet --dataset '" + f.dataset +
                                "' --epochs " + std::to_string(f.train_epochs) + " --strategy " +
                                strategy + " --metrics-json " + metrics + " 1>&2";
    const int raw = std::system(command.c_str());
    std::FILE* in = std::fopen(metrics.c_str(), "r");
    WEFT_CHECK(raw == 0 && in != nullptr, Internal)
        << "weft bench ps: `" << command << "` failed (status " << raw << ")";
    json m = json::parse(in);
    std::fclose(in);
    std::remove(metrics.c_str());
    speeds.push_back(m["train_examples_per_sec"].get<double>());
    accuracies.push_back(m["test_accuracy"].get<double>());
  }
  return {
      {"command", "weft launch " + launch + " -- weft train --model mlp --strategy " + strategy},
      {"examples_per_second", median(speeds)},
      {"test_accuracy", median(accuracies)}};
}

void print_table(const json& doc, std::FILE* out) {
  std::fprintf(out,
               "parameter-server steps (pull + push + commit of a float32 variable over %d ps "
               "tasks), beside all-reduce of the same bytes; medians\n",
               doc["steps"].empty() ? 0 : doc["steps"][0]["ps"].get<int>());
  std::fprintf(out, "%7s %10s %12s %10s %16s %16s\n", "workers", "bytes", "step (us)", "GB/s",
               "allreduce (us)", "TCP ring (us)");
  for (const json& r : doc["steps"]) {
    auto us = [&](const char* key) {
      return r.contains(key) ? std::to_string(static_cast<int64_t>(r[key].get<double>() * 1e6))
                             : std::string("-");
    };
    std::fprintf(out, "%7d %10lld %12.1f %10.3f %16s %16s\n", r["workers"].get<int>(),
                 static_cast<long long>(r["bytes"].get<int64_t>()),
                 r["step_seconds"].get<double>() * 1e6, r["gbps"].get<double>(),
                 us("allreduce_seconds").c_str(), us("allreduce_ring_seconds").c_str());
  }
  if (doc.contains("training")) {
    const json& t = doc["training"];
    for (const char* s : {"parameter_server", "multi_worker"}) {
      std::fprintf(out, "%s: %.0f examples/s, test accuracy %.4f (%s)\n", s,
                   t[s]["examples_per_second"].get<double>(), t[s]["test_accuracy"].get<double>(),
                   t[s]["command"].get<std::string>().c_str());
    }
    std::fprintf(out, "parameter_server / multi_worker: %.3f\n", t["ratio"].get<double>());
  }
}

void bench_ps(const PsBenchFlags& f) {
  if (!distribute::cluster_resolver::TFConfigClusterResolver{}.cluster_spec().empty()) {
    WEFT_CHECK(!f.output.empty(), InvalidArgument)
        << "weft bench ps in a cluster writes its rows to --output";
    run_in_cluster(f);
    return;
  }
  std::FILE* to = f.output.empty() ? stdout : std::fopen(f.output.c_str(), "w");
  WEFT_CHECK(to != nullptr, Unavailable) << "weft bench: cannot write " << f.output;
  for (int64_t b : f.bytes) {
    WEFT_CHECK(b % 4 == 0, InvalidArgument)
        << "weft bench ps: --bytes " << b << " is not a whole number of float32 values";
  }
  const std::string program = self_program();
  std::string bytes;
  for (int64_t b : f.bytes) bytes += (bytes.empty() ? "" : ",") + std::to_string(b);
  json doc = {{"steps", json::array()}};
  for (int workers : f.workers) {
    json rows =
        run_for_json(program + " launch --ps " + std::to_string(f.ps) + " -n " +
                     std::to_string(workers) + " -- " + program + " bench ps --bytes " + bytes);
    for (json& row : rows) {
      add_allreduce(row, program);
      doc["steps"].push_back(row);
    }
  }
  if (f.train_epochs > 0) {
    json ps = train(f, program, "--ps 2 -n 2", "parameter_server");
    json mw = train(f, program, "-n 2", "multi_worker");
    doc["training"] = {{"parameter_server", ps},
                       {"multi_worker", mw},
                       {"ratio", ps["examples_per_second"].get<double>() /
                                     mw["examples_per_second"].get<double>()}};
  }
  if (f.json) {
    std::fprintf(to, "%s\n", doc.dump(2).c_str());
  } else {
    print_table(doc, to);
  }
  if (to != stdout) std::fclose(to);
}

}  // namespace

void add_bench_ps(CLI::App& bench) {
  auto flags = std::make_shared<PsBenchFlags>();
  auto* cmd = bench.add_subcommand(
      "ps", "parameter-server steps against all-reduce, and PS training against multi_worker");
  cmd->add_flag("--json", flags->json, "print JSON instead of a table");
  cmd->add_option("--workers", flags->workers, "the numbers of workers, comma-separated")
      ->delimiter(',')
      ->check(in_range(1, 64));
  cmd->add_option("--ps", flags->ps, "ps tasks")->check(in_range(1, 16));
  cmd->add_option("--bytes", flags->bytes,
                  "the variables' sizes, comma-separated (0: a closure that touches none)")
      ->delimiter(',')
      ->check(in_range(0, 1LL << 30));
  cmd->add_option("--train-epochs", flags->train_epochs,
                  "epochs of the training comparison (0: none)")
      ->check(in_range(0, 100));
  cmd->add_option("--train-runs", flags->train_runs, "runs of each training, their median")
      ->check(in_range(1, 20));
  cmd->add_option("--dataset", flags->dataset, "the training comparison's data (as weft train's)");
  cmd->add_option("--output", flags->output, "write the results to this file");
  cmd->callback([flags] { bench_ps(*flags); });
}

}  // namespace weft::cli
