// What the coordination service and its clients share: the cluster token, TLS files, heartbeat
// timing and the message size limit (weft/distribute/coordination/service.h, client.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weft::distribute::coordination {

// TLS for the control plane (`--tls-cert/--tls-key/--tls-ca`). With cert and key the service
// speaks TLS; with a CA as well it also requires every client to present a certificate that CA
// signed (mutual TLS). A client given a CA verifies the service's certificate against it, and
// presents its own cert and key when given them.
struct TlsOptions {
  std::string cert_file;
  std::string key_file;
  std::string ca_file;
  bool enabled() const { return !cert_file.empty() || !key_file.empty() || !ca_file.empty(); }
};

struct CoordinationOptions {
  // The cluster token every call carries (WEFT_CLUSTER_TOKEN; `weft launch` makes one). Required:
  // an empty token is refused.
  std::string token;
  TlsOptions tls;
  // Each task's heartbeat period, and how long the service waits for one before it declares the
  // task failed (a stopped process, a cut cable). A killed process is noticed at once, when its
  // connection breaks.
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds heartbeat_timeout{10000};
  // TensorFlow's recoverable_jobs: the jobs ("worker", "ps") whose tasks may fail and come back.
  // Such a task's failure (an error it reports, a broken connection, missed heartbeats, a new
  // process registering in its place) does not fail the cluster: the task is lost
  // (TaskState::kLost, with why), the others' waits go on, a barrier it takes part in fails
  // naming it, and a new process of the task may register again. Only the service reads it.
  std::vector<std::string> recoverable_jobs;
};

// Where a task of the cluster is, as the service sees it (TaskStates).
enum class TaskState { kUnregistered, kConnected, kLost, kLeft };
// "unregistered", "connected", "lost", "left".
const char* to_string(TaskState state);

struct TaskStatus {
  std::string task;  // "worker:1"
  TaskState state = TaskState::kUnregistered;
  uint64_t incarnation = 0;  // of the process registered last (0: none yet)
  std::string error;         // kLost: why
};

// Every task's state, in the order the service was given them.
struct TaskStates {
  uint64_t generation = 0;  // grows by one at each change of any task's state
  std::vector<TaskStatus> tasks;
  // The named task's status; InvalidArgument for a task not in the cluster.
  const TaskStatus& of(const std::string& task) const;
};

// Limits on what a call may carry; larger requests are refused naming the limit.
inline constexpr std::size_t kMaxKeyBytes = 1024;
inline constexpr std::size_t kMaxValueBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxMessageBytes = 2 * kMaxValueBytes;

// The environment variable that carries the token to every task.
inline constexpr const char* kTokenEnvironmentVariable = "WEFT_CLUSTER_TOKEN";

}  // namespace weft::distribute::coordination
