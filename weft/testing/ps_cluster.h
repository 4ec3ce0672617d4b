// TF_CONFIG text for a parameter-server cluster on ports the OS picked (local_ports.h), for
// tests: the chief at the first port, then the workers, then the ps tasks. Header-only.
//
//   ReservedLocalPorts ports(5);
//   std::string config = weft::testing::ps_tf_config(ports, "worker:1", 2, 2);
#pragma once

#include <string>

#include "weft/distribute/cluster/local_ports.h"

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

}  // namespace weft::testing
