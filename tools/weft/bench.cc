// `weft bench allreduce [--json] [--workers N]`: weft's all-reduce against Gloo's own algorithms
// and MPI_Allreduce between processes, in the same processes on the same buffers, from 4 KiB to
// 64 MiB (--implementations: only those). Without TF_CONFIG or mpirun it starts itself as a local
// cluster (under mpirun when weft has MPI, else `weft launch -n N`); in a cluster each process is a
// rank and the chief prints, per size and algorithm, the median time of one all-reduce and its bus
// bandwidth (2 (P - 1) / P x bytes / time, NCCL's measure: the bytes each rank's links carry).
#include "tools/weft/bench.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tools/weft/commands.h"
#include "tools/weft/flags.h"
#include "weft/core/errors.h"
#include "weft/distribute/cluster/tf_config.h"
#include "weft/distribute/collective/mpi/communicator.h"
#include "weft/distribute/collective/tcp/communicator.h"
#include "weft/distribute/coordination/client.h"
#include "weft/distribute/coordination/service.h"

namespace weft::cli {
namespace {

namespace collective = distribute::collective;
namespace coordination = distribute::coordination;
using Clock = std::chrono::steady_clock;

struct BenchFlags {
  bool json = false;
  int workers = 2;
  std::size_t min_bytes = 4 << 10, max_bytes = 64 << 20;
  std::vector<std::string> implementations;  // empty: every one
  std::string output;                        // where the chief writes the results (stdout if empty)
};

struct Row {
  std::size_t bytes;
  std::string implementation;
  double seconds;  // median of one all-reduce
};

// `mpi`, when run under mpirun: MPI_Allreduce is measured too, on the same buffers.
std::vector<Row> measure(collective::Communicator& comm, collective::MpiCommunicator* mpi,
                         const BenchFlags& f) {
  std::vector<Row> rows;
  const std::pair<const char*, collective::Implementation> impls[] = {
      {"AUTO", collective::Implementation::AUTO},
      {"RECURSIVE_DOUBLING", collective::Implementation::RECURSIVE_DOUBLING},
      {"RING", collective::Implementation::RING},
      {"SHARED_MEMORY", collective::Implementation::SHARED_MEMORY},
      {"GLOO_RING", collective::Implementation::GLOO_RING},
      {"GLOO_HALVING_DOUBLING", collective::Implementation::GLOO_HALVING_DOUBLING},
      {"MPI_Allreduce", collective::Implementation::AUTO}};
  std::vector<float> buffer(f.max_bytes / sizeof(float), 1.0f);
  for (std::size_t bytes = f.min_bytes; bytes <= f.max_bytes; bytes *= 4) {
    int64_t n = static_cast<int64_t>(bytes / sizeof(float));
    for (const auto& entry : impls) {
      const std::string name = entry.first;
      const collective::Implementation impl = entry.second;
      collective::CommunicationOptions options;
      options.implementation = impl;
      auto once = [&] {
        if (name == "MPI_Allreduce") {
          mpi->raw_all_reduce(buffer.data(), static_cast<std::size_t>(n), kFloat32);
        } else {
          comm.all_reduce(buffer.data(), {n}, kFloat32, collective::Reduction::SUM, options);
        }
      };
      if (name == "MPI_Allreduce" && mpi == nullptr) continue;
      if (!f.implementations.empty() &&
          std::find(f.implementations.begin(), f.implementations.end(), name) ==
              f.implementations.end()) {
        continue;
      }
      for (int i = 0; i < 3; ++i) once();
      // Every rank runs as many iterations as rank 0 decides: about 0.3 s, at least 5.
      std::vector<double> times;
      auto start = Clock::now();
      for (;;) {
        auto t0 = Clock::now();
        once();
        times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        int64_t more =
            times.size() < 5 || std::chrono::duration<double>(Clock::now() - start).count() < 0.3;
        comm.broadcast(&more, {1}, kInt64, 0, {});
        if (!more) break;
      }
      std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
      rows.push_back({bytes, name, times[times.size() / 2]});
      // Sums of ones grow each call; start each size from ones again.
      std::fill(buffer.begin(), buffer.end(), 1.0f);
    }
  }
  return rows;
}

void print(const std::vector<Row>& rows, int ranks, bool json, std::FILE* out) {
  double factor = 2.0 * (ranks - 1) / ranks;
  if (json) {
    nlohmann::json doc = nlohmann::json::array();
    for (const Row& r : rows) {
      doc.push_back({{"bytes", r.bytes},
                     {"implementation", r.implementation},
                     {"ranks", ranks},
                     {"median_seconds", r.seconds},
                     {"bus_bandwidth_gbps", factor * r.bytes / r.seconds / 1e9}});
    }
    std::fprintf(out, "%s\n", doc.dump(2).c_str());
    return;
  }
  std::fprintf(out, "all-reduce of float32 between %d processes: median time, bus bandwidth\n",
               ranks);
  std::fprintf(out, "%10s  %-24s %12s %10s\n", "bytes", "implementation", "time (us)", "GB/s");
  for (const Row& r : rows) {
    std::fprintf(out, "%10zu  %-24s %12.1f %10.3f\n", r.bytes, r.implementation.c_str(),
                 r.seconds * 1e6, factor * r.bytes / r.seconds / 1e9);
  }
}

// Runs the benchmark as a local cluster: under mpirun when weft has MPI and mpirun is installed
// (so MPI_Allreduce is measured too), else under weft launch. The chief writes the results to a
// temporary file this process copies to --output or prints (the launchers prefix or interleave
// the ranks' output).
int self_launch(const BenchFlags& f, const std::vector<std::string>& self_args) {
  std::FILE* to = f.output.empty() ? stdout : std::fopen(f.output.c_str(), "w");
  WEFT_CHECK(to != nullptr, Unavailable)
      << "weft bench: cannot write " << f.output << ": " << std::strerror(errno);
  const std::string program = self_program();
  std::string command;
  if (collective::mpi_available() && std::system("command -v mpirun > /dev/null 2>&1") == 0) {
    command = "mpirun --oversubscribe --bind-to core:overload-allowed -np " +
              std::to_string(f.workers) + (::geteuid() == 0 ? " --allow-run-as-root" : "") + " " +
              program;
  } else {
    command = program + " launch -n " + std::to_string(f.workers) + " -- " + program;
  }
  for (const auto& a : self_args) command += " '" + a + "'";
  int status = 0;
  const std::string results = run_with_output_file(command, status);
  std::fwrite(results.data(), 1, results.size(), to);
  if (to != stdout) std::fclose(to);
  return status;
}

int bench_allreduce(const BenchFlags& f, const std::vector<std::string>& self_args) {
  distribute::cluster_resolver::TFConfigClusterResolver resolver;
  const bool under_mpirun = collective::mpi_world_size_from_environment() > 1;
  if (resolver.cluster_spec().empty() && !under_mpirun) return self_launch(f, self_args);

  std::unique_ptr<collective::MpiCommunicator> mpi;
  std::vector<std::string> tasks;
  int rank = 0;
  std::string chief, token;
  if (resolver.cluster_spec().empty()) {
    // Under mpirun: rank 0 serves the coordination service on 127.0.0.1 at a port the OS picks
    // and tells the others where, and the token, through MPI.
    mpi = std::make_unique<collective::MpiCommunicator>();
    rank = mpi->rank();
    for (int r = 0; r < mpi->size(); ++r) tasks.push_back("worker:" + std::to_string(r));
  } else {
    WEFT_CHECK(resolver.task_type() == "worker", InvalidArgument)
        << "weft bench allreduce runs on worker tasks (a cluster of workers only)";
    for (int i = 0; i < resolver.cluster_spec().num_tasks("worker"); ++i) {
      tasks.push_back("worker:" + std::to_string(i));
    }
    rank = resolver.task_id();
    chief = resolver.cluster_spec().task_address("worker", 0);
    const char* t = std::getenv(coordination::kTokenEnvironmentVariable);
    token = t != nullptr ? t : "";
  }
  coordination::CoordinationOptions co;
  std::unique_ptr<coordination::CoordinationService> service;
  if (mpi) {
    std::vector<int32_t> shared(128, 0);  // "address token" as bytes
    if (rank == 0) {
      co.token = std::to_string(std::random_device{}()) + std::to_string(std::random_device{}());
      service = std::make_unique<coordination::CoordinationService>("127.0.0.1:0", tasks, co);
      std::string text = service->address() + " " + co.token;
      std::memcpy(shared.data(), text.data(), std::min(text.size(), shared.size() * 4 - 1));
    }
    mpi->broadcast(shared.data(), {static_cast<int64_t>(shared.size())}, kInt32, 0, {});
    std::istringstream(std::string(reinterpret_cast<const char*>(shared.data()))) >> chief >>
        co.token;
  } else {
    co.token = token;
    if (rank == 0) service = std::make_unique<coordination::CoordinationService>(chief, tasks, co);
  }
  coordination::CoordinationClient client(tasks[static_cast<size_t>(rank)], tasks[0], chief, co);
  client.connect(std::chrono::seconds(60));
  // Each rank listens on its own task's host (127.0.0.1 under mpirun).
  const std::string host =
      mpi ? "127.0.0.1"
          : distribute::listen_host(resolver.cluster_spec().task_address("worker", rank));
  collective::TcpCommunicator comm(client, tasks, rank, host);
  std::vector<Row> rows = measure(comm, mpi.get(), f);
  if (rank == 0) {
    std::FILE* out = f.output.empty() ? stdout : std::fopen(f.output.c_str(), "w");
    WEFT_CHECK(out != nullptr, Unavailable) << "weft bench: cannot write " << f.output;
    print(rows, comm.size(), f.json, out);
    if (out != stdout) std::fclose(out);
  }
  client.shutdown(std::chrono::seconds(30));
  if (service) service->wait_for_tasks_to_leave(std::chrono::seconds(10));
  return 0;
}

}  // namespace

std::string run_with_output_file(const std::string& command, int& status) {
  char file[] = "/tmp/weft-bench-XXXXXX";
  int fd = ::mkstemp(file);
  WEFT_CHECK(fd >= 0, Unavailable) << "weft bench: cannot make a temporary file";
  ::close(fd);
  int raw = std::system((command + " --output " + file).c_str());
  status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 1;
  std::string text;
  if (std::FILE* in = std::fopen(file, "r")) {
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof(buf), in)) text.append(buf, n);
    std::fclose(in);
  }
  ::unlink(file);
  return text;
}

void add_bench(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks run by the weft command");
  bench->require_subcommand(1);
  auto flags = std::make_shared<BenchFlags>();
  auto* allreduce = bench->add_subcommand(
      "allreduce", "weft's all-reduce against Gloo's between local processes, 4 KiB to 64 MiB");
  allreduce->add_flag("--json", flags->json, "print JSON rows instead of a table");
  allreduce->add_option("--workers", flags->workers, "processes, when not run under a cluster")
      ->check(in_range(2, 64));
  allreduce->add_option("--min-bytes", flags->min_bytes, "smallest message")
      ->check(in_range(4, 1LL << 30));
  allreduce->add_option("--max-bytes", flags->max_bytes, "largest message")
      ->check(in_range(4, 1LL << 30));
  allreduce
      ->add_option("--implementations", flags->implementations,
                   "only these, comma-separated (AUTO, RING, GLOO_RING, MPI_Allreduce, ...)")
      ->delimiter(',')
      ->check(one_of({"AUTO", "RECURSIVE_DOUBLING", "RING", "SHARED_MEMORY", "GLOO_RING",
                      "GLOO_HALVING_DOUBLING", "MPI_Allreduce"}));
  allreduce->add_option("--output", flags->output, "write the results to this file");
  allreduce->callback([flags] {
    std::vector<std::string> args{"bench", "allreduce"};
    if (flags->json) args.push_back("--json");
    args.push_back("--min-bytes=" + std::to_string(flags->min_bytes));
    args.push_back("--max-bytes=" + std::to_string(flags->max_bytes));
    for (const auto& name : flags->implementations) args.push_back("--implementations=" + name);
    int code = bench_allreduce(*flags, args);
    if (code != 0) throw CLI::RuntimeError(code);
  });
  add_bench_ps(*bench);
}

}  // namespace weft::cli
