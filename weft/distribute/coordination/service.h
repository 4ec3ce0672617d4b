// The coordination service (DISTRIBUTED.md §3): the chief serves it over gRPC, every task of the
// cluster (the chief included) talks to it through a CoordinationClient (client.h). It offers a
// key-value store whose reads wait with a deadline, barriers, heartbeats, incarnation ids, and
// error propagation: when a task reports an error, misses its heartbeats, restarts or loses its
// connection, every other task's pending wait ends with "task worker:1 failed: <why>" and every
// later call answers the same. A task of a recoverable job (options.recoverable_jobs, as
// parameter-server clusters have for "worker" and "ps") is lost instead, which is a task state
// the others may watch (task_states()), and may come back as a new process.
//
//   weft::distribute::coordination::CoordinationService service(
//       "127.0.0.1:0", {"worker:0", "worker:1"}, {.token = token});
//   service.address();  // "127.0.0.1:40123": port 0 asked the OS for a free port
//
// The service listens only on the address it is given (the task's own address in TF_CONFIG), and
// checks the cluster token of every call before it parses the request. It binds the address with
// SO_REUSEPORT, so that a launcher may hold the port until then (local_ports.h).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "weft/distribute/coordination/options.h"

namespace weft::distribute::coordination {

class CoordinationService {
 public:
  // Serves `tasks` (names such as "worker:1") on `address` ("host:port"; port 0 picks a free
  // one). InvalidArgument for an empty token, no tasks or a task named twice; Unavailable when the
  // address cannot be bound.
  CoordinationService(const std::string& address, std::vector<std::string> tasks,
                      CoordinationOptions options);
  // Stops serving; pending calls end with an error.
  ~CoordinationService();
  CoordinationService(const CoordinationService&) = delete;
  CoordinationService& operator=(const CoordinationService&) = delete;

  // "host:port" with the port actually bound.
  std::string address() const;
  int port() const;
  // Waits until every task has left (CoordinationClient::shutdown) or was lost (a recoverable
  // task), or the cluster has failed, at most `timeout`; true when every task left or was lost.
  bool wait_for_tasks_to_leave(std::chrono::milliseconds timeout);
  // The cluster's first failure ("task worker:1 failed: ..."), empty while there is none.
  std::string failure() const;
  // Every task's state now.
  TaskStates task_states() const;
  // Waits until the service holds a call of `task` ("worker:1") to `method` that waits for its
  // answer ("Get" of a key not yet set, "Barrier" not yet full, "Watch", "GetTaskStates" for a
  // change), at most `timeout`; true
  // when it does. Lets a test act once a call is known to be waiting, instead of sleeping.
  // InvalidArgument for another method.
  bool wait_for_pending_call(const std::string& task, const std::string& method,
                             std::chrono::milliseconds timeout);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::distribute::coordination
