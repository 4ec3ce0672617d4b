// tf.distribute.cluster_resolver.ClusterResolver: where a cluster's tasks are and which one this
// process is. TFConfigClusterResolver (tf_config.h) reads TF_CONFIG; SlurmClusterResolver
// (slurm.h) reads the environment srun gives each task.
#pragma once

#include <string>

#include "weft/distribute/cluster/cluster_spec.h"

namespace weft::distribute::cluster_resolver {

class ClusterResolver {
 public:
  virtual ~ClusterResolver() = default;
  // Empty for a single process.
  virtual const ClusterSpec& cluster_spec() const = 0;
  // "chief", "worker", "ps" or "evaluator"; empty for a single process.
  virtual const std::string& task_type() const = 0;
  virtual int task_id() const = 0;
};

}  // namespace weft::distribute::cluster_resolver
