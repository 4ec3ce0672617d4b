// What the parameter-server cluster's gRPC servers (ParameterServer, WorkerService) and their
// clients (ParameterServerClient, ClusterCoordinator) set up alike: a server on the task's own
// address with the message limit and keepalive pings allowed, a channel that pings and reconnects
// quickly, and the incarnation each server draws.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <string>

#include "weft/distribute/parameter_server/options.h"

namespace weft::distribute::parameter_server::internal {

struct Serving {
  std::unique_ptr<grpc::Server> server;
  std::string address;  // "host:port" with the port bound
  int port = 0;
};

// Serves `service` on `address` (port 0: one the OS picks) for `what` ("parameter server ps:0"):
// InvalidArgument for an empty token, Unavailable when the address cannot be bound.
Serving serve(const std::string& address, grpc::Service* service, const ServiceOptions& options,
              const std::string& what);

// A channel to `address` with the message limit, keepalive pings every 10 s (a lost server is
// noticed between calls) and reconnection within a second (TensorFlow caps its backoff at 1 s).
std::shared_ptr<grpc::Channel> open_channel(const std::string& address,
                                            const ServiceOptions& options);

// A random number drawn once per server, sent in every answer.
uint64_t draw_incarnation();

}  // namespace weft::distribute::parameter_server::internal
