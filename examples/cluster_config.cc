// The cluster and this process's task, from TF_CONFIG as TensorFlow reads it. docs/distributed.md
// quotes it; CI runs it with the TF_CONFIG below, and with a malformed one.
#include <weft/weft.h>

#include <iostream>

int main() {
  try {
    // TF_CONFIG='{"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"]},
    //             "task": {"type": "worker", "index": 1}}'
    weft::distribute::cluster_resolver::TFConfigClusterResolver resolver;
    std::cout << resolver.task_type() << " " << resolver.task_id() << "\n";
    std::cout << (resolver.is_chief() ? "chief" : "not chief") << "\n";
    std::cout << resolver.cluster_spec().task_address("worker", 0) << "\n";
  } catch (const weft::InvalidArgument& e) {
    std::cout << e.what() << "\n";  // e.g. TF_CONFIG: task.index 2 is out of range: ...
    return 1;
  }
}
