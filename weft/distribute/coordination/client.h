// A task's link to the coordination service (service.h), as TensorFlow's coordination service
// agent: it registers the task (with an incarnation id drawn at start), sends heartbeats, holds a
// watch call open so the service learns at once when this process dies and this process learns at
// once when another task fails, and offers the service's key-value store and barriers.
//
//   CoordinationClient client("worker:1", "worker:0", "10.0.0.1:2222", {.token = token});
//   client.connect(std::chrono::seconds(60));         // waits for the service to come up
//   client.insert_key_value("gloo/rank1", address);
//   std::string a = client.get_key_value("gloo/rank0", std::chrono::seconds(30));
//   client.wait_at_barrier("step 1", std::chrono::seconds(30));
//   client.shutdown(std::chrono::seconds(30));        // meets every task at the end, then leaves
//
// Errors: a wait that passes its deadline throws DeadlineExceeded; once any task of the cluster
// has failed, every call throws Unavailable("task worker:0 failed: <its error>"); a refused token
// throws FailedPrecondition. A recoverable task that the service declared lost (for missed
// heartbeats, say) hears its own failure the same way.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/distribute/coordination/options.h"

namespace weft::distribute::coordination {

class CoordinationClient {
 public:
  // `task` is this task's name ("worker:1"); the service runs in task `service_task` at
  // `service_address`. Nothing is sent until connect().
  CoordinationClient(std::string task, std::string service_task, std::string service_address,
                     CoordinationOptions options);
  // Leaves the cluster if connected (without waiting for the others).
  ~CoordinationClient();
  CoordinationClient(const CoordinationClient&) = delete;
  CoordinationClient& operator=(const CoordinationClient&) = delete;

  // Registers with the service, retrying until it answers or `timeout` passes (the chief may
  // start after the workers), then starts the heartbeat and the watch.
  void connect(std::chrono::milliseconds timeout);

  void insert_key_value(const std::string& key, const std::string& value);
  // Waits until the key is set, at most `timeout`.
  std::string get_key_value(const std::string& key, std::chrono::milliseconds timeout);
  std::optional<std::string> try_get_key_value(const std::string& key);
  // Removes the key and every key under it ("key/..."), as TensorFlow's DeleteKeyValue.
  void delete_key_value(const std::string& key);
  // Waits until every participant has reached the barrier `id`, at most `timeout`: the `tasks`
  // named (this one among them; every caller names the same ones), or every task of the cluster
  // when none are. DeadlineExceeded names the tasks that did not come; FailedPrecondition names a
  // participant that was lost or has left.
  void wait_at_barrier(const std::string& id, std::chrono::milliseconds timeout,
                       const std::vector<std::string>& tasks = {});
  // Every task's state (connected, lost with why, left), as the service sees it now.
  TaskStates task_states();
  // Waits until the states change after `after_generation` (a TaskStates::generation), at most
  // `timeout`, and returns them (as they are, when the wait ends without a change).
  TaskStates wait_for_task_states(uint64_t after_generation, std::chrono::milliseconds timeout);
  // Tells the cluster this task failed: every other task's waits end naming it and `message`.
  // Only the first report of a task is sent.
  void report_error(const std::string& message);

  // The first failure of the cluster this client learned of, empty while there is none.
  std::string failure() const;
  // The task that failure names ("worker:1"), empty while there is none.
  std::string failed_task() const;
  // Calls fn(failure) once, on a client thread, when this client learns that the cluster failed
  // (at once if it already knows). Collectives use it to end their waits.
  void on_failure(std::function<void(const std::string&)> fn);

  // Meets every task at a last barrier (so that the service's host does not stop serving while
  // others still need it), then leaves.
  void shutdown(std::chrono::milliseconds timeout);

  const std::string& task() const;
  const CoordinationOptions& options() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::distribute::coordination
