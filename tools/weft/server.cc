// `weft server`: serves the ps task TF_CONFIG names, as TensorFlow's tf.distribute.Server does
// for a parameter server, until the chief of its cluster is done. A ps task runs no code of the
// program (the chief creates the variables on it and the coordinator commits the workers'
// updates there), so the weft command can serve it on a host that has no copy of the program:
//
//   TF_CONFIG='{"cluster": {...}, "task": {"type": "ps", "index": 0}}' weft server
//
// The chief and the workers run the program itself (its functions are registered by name:
// weft train --strategy parameter_server, or your own), so `weft server` refuses their tasks.
#include <csignal>
#include <string>

#include "tools/weft/commands.h"
#include "tools/weft/flags.h"
#include "weft/core/errors.h"
#include "weft/distribute/cluster/tf_config.h"
#include "weft/distribute/parameter_server/parameter_server_strategy.h"

namespace weft::cli {

void add_server(CLI::App& app) {
  struct ServerFlags {
    double startup_timeout = 0;  // 0: the strategy's default
    std::string tls_cert, tls_key, tls_ca;
  };
  auto flags = std::make_shared<ServerFlags>();
  auto* cmd = app.add_subcommand(
      "server",
      "Serve this ps task of a parameter-server cluster (TF_CONFIG) until its chief ends");
  cmd->add_option("--startup-timeout", flags->startup_timeout,
                  "seconds to wait at start for the chief and the other tasks (default 600)")
      ->check(positive_number())
      ->default_str("");
  cmd->add_option("--tls-cert", flags->tls_cert, "this task's certificate (PEM)");
  cmd->add_option("--tls-key", flags->tls_key, "the certificate's private key");
  cmd->add_option("--tls-ca", flags->tls_ca,
                  "the CA that signed every task's certificate (mutual TLS)");
  cmd->callback([flags] {
    distribute::cluster_resolver::TFConfigClusterResolver resolver;
    WEFT_CHECK(!resolver.cluster_spec().empty(), InvalidArgument)
        << "weft server: TF_CONFIG names no cluster (weft launch --ps K -n N sets it for each "
           "task)";
    WEFT_CHECK(resolver.task_type() == "ps", InvalidArgument)
        << "weft server serves ps tasks; this is " << resolver.task_type() << ":"
        << resolver.task_id()
        << ", which runs the program itself (its functions are registered by name: weft train "
           "--strategy parameter_server, or your own)";
    distribute::ParameterServerOptions options;
    set_cluster_options(flags->startup_timeout, flags->tls_cert, flags->tls_key, flags->tls_ca,
                        options);
    // As weft train's ps tasks: a preempted chief backs up through this task before it ends it.
    std::signal(SIGTERM, SIG_IGN);
    distribute::ParameterServerStrategy strategy(resolver, options);
    strategy.join();
  });
}

}  // namespace weft::cli
