// tf.profiler.experimental.server.start: a task's profiler service, which `weft profile` (and
// profiler::client::trace) reaches to capture the task's trace from outside the job. It listens on
// the task's own host only, checks the cluster token (WEFT_CLUSTER_TOKEN) before it reads a
// request, speaks TLS with the cluster's --tls-* files, and runs one capture at a time.
//
//   weft::profiler::server::start(6009, {.task = "worker:0", .token = token});
//   ... train ...   (the server stops when the process ends, or with stop())
#pragma once

#include <string>

#include "weft/distribute/coordination/client.h"
#include "weft/distribute/coordination/options.h"

namespace weft::profiler::server {

// Where a task's server is published in the cluster's key-value store: this + the task
// ("weft/profiler/worker:1" = "grpc://10.0.0.2:6009").
inline constexpr const char* kAddressKeyPrefix = "weft/profiler/";

struct ServerOptions {
  std::string task;                // named in the traces it gives ("worker:0"); empty: host name
  std::string host = "127.0.0.1";  // the task's own address: the only one it listens on
  std::string token;               // the cluster token (required)
  distribute::coordination::TlsOptions tls{};
  // When set (a strategy's coordination_client()), the server's address is published under
  // kAddressKeyPrefix + task once it listens, for tools inside the job to find. Used at start only.
  distribute::coordination::CoordinationClient* publish_to = nullptr;
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
