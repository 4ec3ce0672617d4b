// tf.profiler.experimental.server.start: a task's profiler service, which `weft profile` (and
// profiler::client::trace) reaches to capture the task's trace from outside the job. It listens on
// the task's own host only, checks the cluster token (WEFT_CLUSTER_TOKEN) before it reads a
// request, speaks TLS with the cluster's --tls-* files, and runs one capture at a time.
//
//   weft::profiler::server::start(6009, {.task = "worker:0", .token = token});
//   ... train ...   (the server stops when the process ends, or with stop())
#pragma once

#include <string>

#include "weft/distribute/coordination/options.h"

namespace weft::profiler::server {

struct ServerOptions {
  std::string task;                // named in the traces it gives ("worker:0"); empty: host name
  std::string host = "127.0.0.1";  // the task's own address: the only one it listens on
  std::string token;               // the cluster token (required)
  distribute::coordination::TlsOptions tls;
};

// Starts serving on host:port (port 0: one the OS picks); returns the port bound.
// FailedPrecondition when this process already serves one; InvalidArgument for an empty token;
// Unavailable when the address cannot be bound.
int start(int port, const ServerOptions& options);
// Stops the server (a capture in progress ends first); nothing when none runs.
void stop();
// "host:port" of the running server; empty when none runs.
std::string address();

}  // namespace weft::profiler::server
