// The processes of a cluster, joined: the training tasks in rank order (the chief, then the
// workers), the coordination service (on the first task) with this task's client, and a
// communicator over the tasks: TCP from TF_CONFIG, or MPI under mpirun. MultiWorkerMirroredStrategy
// and DTensor's meshes across processes (weft/dtensor) both start from one.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "weft/distribute/cluster/cluster_resolver.h"
#include "weft/distribute/collective/communicator.h"
#include "weft/distribute/coordination/client.h"
#include "weft/distribute/coordination/service.h"

namespace weft::distribute {

// TF_CONFIG's cluster when it is set; else mpirun's ranks (an empty cluster: the connection asks
// MPI); else the Slurm job step's tasks; else one process.
std::unique_ptr<cluster_resolver::ClusterResolver> default_cluster_resolver();

struct ClusterConnectionOptions {
  // What joins, for messages ("MultiWorkerMirroredStrategy").
  std::string who = "the cluster";
  // The control plane; an empty token is read from WEFT_CLUSTER_TOKEN.
  coordination::CoordinationOptions coordination;
  // Each wait of a collective (0: collective::kDefaultTimeout).
  double timeout_seconds = 0;
  // How long a task waits at start for the chief's service and the other tasks.
  std::chrono::milliseconds startup_timeout{std::chrono::minutes(10)};
  // The ports the collectives' connections listen on (0: a port the OS picks).
  int first_data_port = 0, last_data_port = 0;
};

class ClusterConnection {
 public:
  // The cluster `resolver` describes (one process when it is empty and mpirun started none):
  // connects this task to the others and returns once every task has connected.
  ClusterConnection(const cluster_resolver::ClusterResolver& resolver,
                    ClusterConnectionOptions options);
  // Leaves the cluster: a shutdown the others wait for, or, while an error unwinds, a report so
  // that they do not wait for this task.
  ~ClusterConnection();
  ClusterConnection(const ClusterConnection&) = delete;
  ClusterConnection& operator=(const ClusterConnection&) = delete;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(tasks_.size()); }
  const std::string& task() const { return task_; }
  const std::vector<std::string>& tasks() const { return tasks_; }
  // Null in one process.
  collective::Communicator* communicator() const { return comm_.get(); }
  // Null in one process and under mpirun.
  coordination::CoordinationClient* client() const { return client_.get(); }

  // Tells the other tasks that this one failed with `message`.
  void report_error(const std::string& message) const;
  // The task whose failure the coordination service reported, when another one; else "".
  std::string failed_peer() const;

 private:
  void connect(const ClusterSpec& cluster);

  ClusterConnectionOptions options_;
  std::vector<std::string> tasks_;
  std::string task_ = "worker:0";
  int rank_ = 0;
  std::unique_ptr<coordination::CoordinationService> service_;
  std::unique_ptr<coordination::CoordinationClient> client_;
  std::unique_ptr<collective::Communicator> comm_;  // TCP (TF_CONFIG) or MPI (mpirun)
};

}  // namespace weft::distribute
