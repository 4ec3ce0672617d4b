// A parameter-server cluster in one test process, on ports the OS picked (local_ports.h): its
// TF_CONFIG text (the chief at the first port, then the workers, then the ps tasks) and a task's
// strategy. Header-only.
//
//   ReservedLocalPorts ports(5);
//   std::string config = weft::testing::ps_tf_config(ports, "worker:1", 2, 2);
//   distribute::ParameterServerStrategy s = weft::testing::ps_strategy(ports, "worker:1", 2, 2);
#pragma once

#include <chrono>
#include <string>

#include "weft/distribute/cluster/local_ports.h"
#include "weft/distribute/cluster/tf_config.h"
#include "weft/distribute/parameter_server/parameter_server_strategy.h"

namespace weft::testing {

inline std::string ps_tf_config(const distribute::ReservedLocalPorts& ports,
                                const std::string& task, int workers, int ps) {
  auto list = [&](int from, int n) {
    std::string l;
    for (int i = from; i < from + n; ++i) {
      l += (l.empty() ? "\"" : ", \"") + ports.address(static_cast<size_t>(i)) + "\"";
    }
    return "[" + l + "]";
  };
  const std::string type = task.substr(0, task.find(':'));
  const std::string index = task.substr(task.find(':') + 1);
  return R"({"cluster": {"chief": )" + list(0, 1) + R"(, "worker": )" + list(1, workers) +
         R"(, "ps": )" + list(1 + workers, ps) + R"(}, "task": {"type": ")" + type +
         R"(", "index": )" + index + "}}";
}

// The options of a test cluster's tasks: the same token on every task, and 30 s for the tasks
// to meet.
inline distribute::ParameterServerOptions ps_test_options() {
  distribute::ParameterServerOptions options;
  options.coordination.token = "0123456789abcdef";
  options.startup_timeout = std::chrono::seconds(30);
  return options;
}

// Task `task`'s strategy in the cluster of ps_tf_config(ports, task, workers, ps).
inline distribute::ParameterServerStrategy ps_strategy(
    const distribute::ReservedLocalPorts& ports, const std::string& task, int workers, int ps,
    const distribute::ParameterServerOptions& options = ps_test_options()) {
  return distribute::ParameterServerStrategy(
      distribute::cluster_resolver::TFConfigClusterResolver::from_json(
          ps_tf_config(ports, task, workers, ps)),
      options);
}

}  // namespace weft::testing
