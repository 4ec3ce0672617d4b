// tf.distribute.cluster_resolver.SlurmClusterResolver: the cluster of a Slurm job step, read from
// the environment srun gives each task, as TensorFlow reads it: SLURM_PROCID (this task),
// SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST ("node[01-03,07]") and SLURM_STEP_TASKS_PER_NODE
// ("2(x3),1"); outside a step (in an sbatch script) SLURM_NTASKS, SLURM_JOB_NODELIST and
// SLURM_TASKS_PER_NODE. Tasks are numbered node by node (srun's block distribution); the task
// with local index i on a node listens at port_base + i. Every task is a worker unless `jobs`
// says otherwise:
//
//   srun -N 2 -n 4 weft train --strategy multi_worker   # WEFT_CLUSTER_TOKEN in the environment
//
//   weft::distribute::cluster_resolver::SlurmClusterResolver resolver;
//   resolver.cluster_spec();  // {"worker": ["node01:8888", "node01:8889", "node02:8888", ...]}
//   resolver.task_id();       // SLURM_PROCID
//
// Missing or malformed variables throw InvalidArgument naming the variable and what it held.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "weft/distribute/cluster/cluster_resolver.h"

namespace weft::distribute::cluster_resolver {

struct SlurmOptions {
  // The jobs and their task counts, filled in this order from task 0 (they must add up to the
  // step's tasks); empty: every task is a worker.
  std::vector<std::pair<std::string, int>> jobs;
  // The port of the first task on each node (TensorFlow's default); WEFT_SLURM_PORT_BASE, when
  // set, replaces the default.
  int port_base = 8888;
};

class SlurmClusterResolver : public ClusterResolver {
 public:
  // Reads this process's environment.
  explicit SlurmClusterResolver(SlurmOptions options = {});
  // Reads `environment` (variable -> value) instead.
  SlurmClusterResolver(const std::map<std::string, std::string>& environment,
                       SlurmOptions options);

  const ClusterSpec& cluster_spec() const override { return cluster_; }
  const std::string& task_type() const override { return task_type_; }
  int task_id() const override { return task_id_; }

  // Whether this process is a task of a Slurm job step of more than one task.
  static bool in_multi_task_step();

 private:
  ClusterSpec cluster_;
  std::string task_type_;
  int task_id_ = 0;
};

// Slurm's compressed host lists: "node[01-03,07],login" -> node01, node02, node03, node07, login.
// InvalidArgument (naming `variable`) for unbalanced brackets or a range that is not lo-hi.
std::vector<std::string> expand_hostlist(const std::string& list, const std::string& variable);
// Slurm's task counts per node: "2(x3),1" -> 2, 2, 2, 1.
std::vector<int> expand_tasks_per_node(const std::string& counts, const std::string& variable);

}  // namespace weft::distribute::cluster_resolver
