// MirroredStrategy (tf.distribute.MirroredStrategy) on logical CPU devices: one replica per
// device, each a std::thread with its share of the cores. Replicas share one storage per
// variable; their gradients are summed in memory in one fixed order, and the optimizer applies
// them once per step.
//
//   weft::config::set_logical_cpu_devices(8);               // as the DTensor tutorial's 8 CPUs
//   weft::distribute::MirroredStrategy strategy;            // 8 replicas
//   weft::distribute::MirroredStrategy two({"/cpu:0", "/cpu:1"});
#pragma once

#include <string>
#include <vector>

#include "weft/distribute/strategy.h"

namespace weft::distribute {

class MirroredStrategy : public Strategy {
 public:
  // `devices`: logical CPU devices by name ("/cpu:1", "CPU:1", "/device:CPU:1" or the full
  // "/job:localhost/replica:0/task:0/device:CPU:1"), each at most once; empty: every logical
  // CPU device. InvalidArgument names a device that does not exist or repeats.
  explicit MirroredStrategy(const std::vector<std::string>& devices = {});
  // The devices' full names, one per replica.
  const std::vector<std::string>& devices() const;
};

}  // namespace weft::distribute
