// A parameter server: the service a `ps` task runs (DISTRIBUTED.md §5). It holds variables (and
// their optimizer slots) that the coordinator created on it, answers pulls of their values, and
// stages pushes under a closure id until the coordinator commits the closure (every staged
// gradient applied by the optimizer's per-variable update, every staged value assigned) or
// aborts it. A committed id is remembered, so a commit sent again is dropped: an update is
// applied exactly once however often a closure is retried. An aborted id is remembered too: a
// push of it that arrives later (its run was given up while it went on) is dropped.
//
//   weft::distribute::parameter_server::ParameterServer ps("127.0.0.1:0", "ps:0", {.token = t});
//   ps.address();  // "127.0.0.1:40123": port 0 asked the OS for a free port
//
// It listens only on the address it is given (the task's own, from TF_CONFIG), with
// SO_REUSEPORT (as the coordination service: `weft launch` holds the port until then), checks the
// cluster token of every call before it parses the request, refuses a message over
// kMaxMessageBytes (RESOURCE_EXHAUSTED), and speaks TLS with `options.tls`. Clients: ps_client.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/core/tensor.h"
#include "weft/distribute/parameter_server/options.h"

namespace weft::distribute::parameter_server {

class ParameterServer {
 public:
  // Serves task `task` ("ps:0") on `address` ("host:port"). InvalidArgument for an empty token;
  // Unavailable when the address cannot be bound.
  ParameterServer(const std::string& address, std::string task, ServiceOptions options);
  ~ParameterServer();
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  // "host:port" with the port actually bound.
  std::string address() const;
  int port() const;
  const std::string& task() const;
  // Drawn at start; every answer carries it.
  uint64_t incarnation() const;

  // What it holds now. InvalidArgument for a variable it does not hold.
  std::vector<VariableSpec> variables() const;
  Tensor value(uint64_t id) const;
  // The variable's optimizer slots, in the optimizer's order (none without an optimizer).
  std::vector<Tensor> slots(uint64_t id) const;
  // Whether closure `closure_id` was committed here, and how many closures have staged pushes
  // not yet committed or aborted.
  bool applied(uint64_t closure_id) const;
  std::size_t staged_closures() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::distribute::parameter_server
