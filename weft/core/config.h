// weft's few global settings: thread count, op determinism and the default precision policy
// (ARCHITECTURE principle 5: no other global switches). Environment: WEFT_NUM_THREADS,
// WEFT_DETERMINISTIC or TF_DETERMINISTIC_OPS (1/true or 0/false), WEFT_DATA_DIR; read once at
// start-up.
//
//   weft::config::set_num_threads(2);   // oneDNN and weft's own kernels alike
#pragma once

#include <string>

namespace weft::config {

// Threads used by every kernel; n >= 1. Default: all cores (or WEFT_NUM_THREADS).
void set_num_threads(int n);
int num_threads();
// Number of cores this process may run on.
int hardware_threads();

// Where datasets are read from: WEFT_DATA_DIR, else Debian's /usr/share/datasets (SPEC §6).
std::string data_dir();

void enable_op_determinism();
void disable_op_determinism();
bool op_determinism_enabled();

// The name of the global mixed-precision policy, "float32" at start-up. Set it through
// weft::mixed_precision::set_global_policy, which checks the name.
void set_default_policy(const std::string& name);
std::string default_policy();

}  // namespace weft::config
