// tf.distribute.cluster_resolver.TFConfigClusterResolver: the cluster and this process's task,
// read from TF_CONFIG exactly as TensorFlow reads it (SPEC §4):
//
//   TF_CONFIG='{"cluster": {"worker": ["host1:2222", "host2:2222"]},
//               "task": {"type": "worker", "index": 1}}'
//
//   weft::distribute::cluster_resolver::TFConfigClusterResolver resolver;
//   resolver.task_type();  // "worker"
//   resolver.task_id();    // 1
//   resolver.is_chief();   // false: without a "chief" job, worker 0 is the chief
//
// An unset or empty TF_CONFIG is a single process (an empty cluster, no task). Anything else that
// is malformed throws InvalidArgument naming the field: JSON errors with their byte offset, a
// missing "cluster" or "task", an unknown job or task type, an index that is not an integer, is
// negative or is out of range, an empty job, an invalid or duplicate address. There is no silent
// fall-back to a single process.
#pragma once

#include <string>

#include "weft/distribute/cluster/cluster_resolver.h"

namespace weft::distribute::cluster_resolver {

class TFConfigClusterResolver : public ClusterResolver {
 public:
  // Reads the TF_CONFIG environment variable.
  TFConfigClusterResolver();
  // Parses `tf_config` (TF_CONFIG's text); errors name `source`.
  static TFConfigClusterResolver from_json(const std::string& tf_config,
                                           const std::string& source = "TF_CONFIG");

  const ClusterSpec& cluster_spec() const override { return cluster_; }
  const std::string& task_type() const override { return task_type_; }
  int task_id() const override { return task_id_; }
  // TF_CONFIG's optional "rpc_layer" and "environment" (e.g. "grpc", "cloud"); empty if absent.
  const std::string& rpc_layer() const { return rpc_layer_; }
  const std::string& environment() const { return environment_; }
  // Whether this task is the chief: the "chief" task, or worker 0 in a cluster without one. A
  // single process is its own chief.
  bool is_chief() const;
  // The cluster's training tasks (chief and workers), which take part in collectives.
  int num_workers() const;

 private:
  struct Unread {};
  explicit TFConfigClusterResolver(Unread) {}  // a single process, TF_CONFIG not read
  ClusterSpec cluster_;
  std::string task_type_;
  int task_id_ = 0;
  std::string rpc_layer_;
  std::string environment_;
};

}  // namespace weft::distribute::cluster_resolver
