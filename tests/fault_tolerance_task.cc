// A worker or ps task of fault_tolerance_test's clusters (a real process the test starts, kills
// and starts again): its role from TF_CONFIG, the test's directory from WEFT_FT_DIR. It makes the
// model's variables in the strategy's scope, registers its functions, writes DIR/ready.PID and
// serves until the chief is done (exit 0) or has failed (exit 1, the error on stderr).
#include <cstdio>
#include <cstdlib>

#include "fault_tolerance_model.h"

int main() {
  const char* dir = std::getenv("WEFT_FT_DIR");
  if (dir == nullptr) {
    std::fprintf(stderr, "fault_tolerance_task: set WEFT_FT_DIR (and TF_CONFIG)\n");
    return 2;
  }
  try {
    fault_tolerance::dist::ParameterServerStrategy strategy(
        fault_tolerance::dist::cluster_resolver::TFConfigClusterResolver{},
        fault_tolerance::options());
    fault_tolerance::Model model(strategy);
    fault_tolerance::register_functions(model, dir);
    std::ofstream(fault_tolerance::ready_marker(dir, getpid())) << strategy.task() << "\n";
    std::fprintf(stderr, "fault_tolerance_task: %s serves\n", strategy.task().c_str());
    strategy.join();
    std::fprintf(stderr, "fault_tolerance_task: %s is done\n", strategy.task().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fault_tolerance_task: %s\n", e.what());
    return 1;
  }
}
