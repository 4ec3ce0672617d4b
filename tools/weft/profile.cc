// `weft profile --hosts grpc://h:p,... --logdir D --duration-ms N`: captures the trace of every
// task of a running job through their profiler servers (weft train --profiler-port; weft launch
// --profiler-port prints the list), as TensorFlow's profiler client does, and writes each task's
// and the merged trace under D/plugins/profile/<run>/ (docs/profiler.md). The cluster token is
// the job's, from WEFT_CLUSTER_TOKEN.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "tools/weft/commands.h"
#include "tools/weft/flags.h"
#include "weft/distribute/coordination/options.h"
#include "weft/profiler/client.h"

namespace weft::cli {

void add_profile(CLI::App& app) {
  struct ProfileFlags {
    std::string hosts, logdir, tls_cert, tls_key, tls_ca;
    int duration_ms = 2000;
    int host_tracer_level = 2;
    int delay_ms = 200;
    int num_tracing_attempts = 3;
  };
  auto flags = std::make_shared<ProfileFlags>();
  auto* cmd = app.add_subcommand(
      "profile", "Capture a running job's trace on every task (weft train --profiler-port)");
  cmd->add_option("--hosts", flags->hosts,
                  "the tasks' profiler servers, grpc://host:port,... (weft launch "
                  "--profiler-port prints them)")
      ->required();
  cmd->add_option("--logdir", flags->logdir, "the traces go to LOGDIR/plugins/profile/<run>/")
      ->required();
  cmd->add_option("--duration-ms", flags->duration_ms, "how long to capture")
      ->check(in_range(1, 600000));
  cmd->add_option("--host-tracer-level", flags->host_tracer_level,
                  "1: steps, input, collectives; 2: and every op; 3: verbose")
      ->check(in_range(1, 3));
  cmd->add_option("--delay-ms", flags->delay_ms,
                  "the common start, this long after the clocks are measured")
      ->check(in_range(0, 60000));
  cmd->add_option("--num-tracing-attempts", flags->num_tracing_attempts,
                  "attempts while a task is unreachable or busy")
      ->check(in_range(1, 100));
  cmd->add_option("--tls-cert", flags->tls_cert, "this client's certificate (PEM)");
  cmd->add_option("--tls-key", flags->tls_key, "the certificate's private key");
  cmd->add_option("--tls-ca", flags->tls_ca, "the CA that signed the tasks' certificates");
  cmd->callback([flags] {
    const char* token = std::getenv(distribute::coordination::kTokenEnvironmentVariable);
    const std::string run =
        profiler::client::trace(flags->hosts, flags->logdir, flags->duration_ms,
                                {.num_tracing_attempts = flags->num_tracing_attempts,
                                 .host_tracer_level = flags->host_tracer_level,
                                 .delay_ms = flags->delay_ms,
                                 .token = token ? token : "",
                                 .tls = {flags->tls_cert, flags->tls_key, flags->tls_ca}});
    std::set<std::string> files;
    for (const auto& f : std::filesystem::directory_iterator(run)) {
      files.insert(f.path().filename().string());
    }
    std::string list;
    for (const std::string& f : files) list += (list.empty() ? "" : ", ") + f;
    std::printf("weft profile: %s: %s\n", run.c_str(), list.c_str());
  });
}

}  // namespace weft::cli
