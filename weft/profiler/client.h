// tf.profiler.experimental.client.trace: captures the traces of running tasks from outside them,
// through the profiler server each runs (server.h), and writes them with the merged trace under
// LOGDIR/plugins/profile/<run>/ (no shared disk assumed: the traces come back over the calls).
// The tasks start at one instant: the client measures each server's clock by pings (the least
// round trip of 16) and asks each to start at the common instant on its own clock; it pings again
// at the end, and the trace's clock offset is the mean of the two.
//
//   std::string run = weft::profiler::client::trace("grpc://10.0.0.1:6009,grpc://10.0.0.2:6009",
//                                                   "logs", 2000, {.token = token});
#pragma once

#include <string>

#include "weft/distribute/coordination/options.h"

namespace weft::profiler::client {

struct TraceOptions {
  // Attempts before giving up when a task is unreachable or already capturing.
  int num_tracing_attempts = 3;
  int host_tracer_level = 2;
  // The common start: this long after the pings (time for the requests to arrive).
  int delay_ms = 200;
  std::string token;  // the cluster token (required)
  distribute::coordination::TlsOptions tls{};
};

// Captures `duration_ms` of every task of `service_addr` ("grpc://host:port,..." or
// "host:port,...") and returns the run directory written. InvalidArgument for a malformed list,
// duration or level; FailedPrecondition when a task refuses the call (a wrong token); Unavailable
// when a task cannot be reached in num_tracing_attempts attempts, naming it.
std::string trace(const std::string& service_addr, const std::string& logdir, int duration_ms,
                  const TraceOptions& options = {});

}  // namespace weft::profiler::client
