// The service a `worker` task of a parameter-server cluster runs: the coordinator
// (cluster_coordinator.h) sends it closures, each a registered function's name and arguments
// (remote_functions.h), and gets back the function's outputs or its error. Closures run one at a
// time on the service's own thread (TensorFlow's workers run one closure at a time as well), which
// also makes and keeps this worker's per-worker datasets and their iterators.
//
//   weft::distribute::parameter_server::WorkerService worker("127.0.0.1:0", "worker:0", {.token =
//   t});
//
// It listens only on the address it is given, checks the cluster token before it parses a request,
// refuses a message over kMaxMessageBytes (RESOURCE_EXHAUSTED), speaks TLS with `options.tls`, and
// answers with its incarnation.
#pragma once

#include <memory>
#include <string>

#include "weft/distribute/parameter_server/options.h"

namespace weft::distribute::parameter_server {

class WorkerService {
 public:
  // InvalidArgument for an empty token; Unavailable when the address cannot be bound.
  WorkerService(const std::string& address, std::string task, ServiceOptions options);
  // Stops serving; a closure running finishes first.
  ~WorkerService();
  WorkerService(const WorkerService&) = delete;
  WorkerService& operator=(const WorkerService&) = delete;

  std::string address() const;
  int port() const;
  const std::string& task() const;
  uint64_t incarnation() const;
  // Closures run so far (whatever their outcome).
  int64_t closures_run() const;
  // Refuses every call from now on (UNAVAILABLE, "<task> is stopping": its coordinator runs the
  // closure elsewhere) and returns once the closure running, if any, has returned: a worker that
  // leaves the cluster finishes its closure first.
  void stop_taking_closures();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::distribute::parameter_server
