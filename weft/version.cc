#include "weft/version.h"

#include "weft/core/config.h"
#include "weft/ops/onednn/onednn.h"

namespace weft {

std::string version() { return WEFT_VERSION; }

std::string build_info() {
  std::string s;
  s += "weft: " + version() + "\n";
  s += "oneDNN: " + onednn::version() + "\n";
  s += "cpu isa: " + onednn::cpu_isa() + "\n";
  s += "threads: " + std::to_string(config::num_threads()) + " of " +
       std::to_string(config::hardware_threads()) + " cores\n";
  s += "openmp wait policy: " + config::openmp_wait_policy() + "\n";
  s += "deterministic ops: " + std::string(config::op_determinism_enabled() ? "on" : "off") + "\n";
  s += "backends: onednn (matmul, conv, pooling)\n";
  return s;
}

}  // namespace weft
