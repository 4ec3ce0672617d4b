// weft's few global settings: thread count (and per-thread budgets), op determinism, OpenMP's
// wait policy and the default precision policy (ARCHITECTURE principle 5: no other global
// switches). Environment: WEFT_NUM_THREADS, WEFT_DETERMINISTIC or TF_DETERMINISTIC_OPS (1/true or
// 0/false), WEFT_DATA_DIR; read once at start-up.
//
//   weft::config::set_num_threads(2);   // oneDNN and weft's own kernels alike
//   { weft::config::ThreadBudget one(1); ... }   // this thread's kernels use 1 thread meanwhile
#pragma once

#include <string>
#include <vector>

namespace weft::config {

// The process-wide thread count: every kernel uses it on a thread without a budget; n >= 1.
// Default: all cores (or WEFT_NUM_THREADS).
void set_num_threads(int n);
// Threads the calling thread's kernels use: its ThreadBudget if one is in scope, else the
// process-wide count.
int num_threads();

// While it lives, kernels called on this thread use `n` threads (n >= 1), whatever the
// process-wide count: a strategy's replica threads get their share of the cores, input-pipeline
// threads one. Budgets nest; each restores the one before it.
class ThreadBudget {
 public:
  explicit ThreadBudget(int n);
  ~ThreadBudget();
  ThreadBudget(const ThreadBudget&) = delete;
  ThreadBudget& operator=(const ThreadBudget&) = delete;

 private:
  int previous_;
};
// Number of cores this process may run on.
int hardware_threads();

// Logical CPU devices, as tf.config.set_logical_device_configuration splits the CPU: N devices
// named "/job:localhost/replica:0/task:0/device:CPU:0" ... ":N-1", which MirroredStrategy
// places replicas on (they share the process's cores). Default 1; n >= 1.
void set_logical_cpu_devices(int n);
int logical_cpu_devices();
// The devices' full names (tf.config.list_logical_devices("CPU")).
std::vector<std::string> list_logical_devices();
// The full names of the logical CPU devices `names` gives, in order, each in any of TensorFlow's
// spellings, in any case ("CPU:1", "/cpu:1", "/device:CPU:1",
// "/job:localhost/replica:0/task:0/device:CPU:1"); every logical device when `names` is empty.
// InvalidArgument, its message starting with `who`, for a name that is no CPU device's, a device
// that does not exist, or one given twice.
std::vector<std::string> resolve_logical_devices(const std::vector<std::string>& names,
                                                 const std::string& who);

// Where datasets are read from: WEFT_DATA_DIR, else Debian's /usr/share/datasets (SPEC §6).
std::string data_dir();

// How long an idle OpenMP thread spins before it sleeps, as libgomp's GOMP_SPINCOUNT. libgomp's
// default (300000 spins) is the fastest on an idle machine but halves throughput when other work
// competes for the cores (the input pipeline's thread, replicas, other processes); sleeping at
// once (OMP_WAIT_POLICY=PASSIVE) costs a wake-up per parallel region; 30000 spins keeps most of
// both (figures in docs/benchmarks.md). libgomp reads its policy once, when it loads, so weft
// applies this before it does (weft/core/openmp_wait_policy.cc), in every program linked with
// weft; OMP_WAIT_POLICY or GOMP_SPINCOUNT in the environment win.
inline constexpr long kOpenMPSpinCount = 30000;
// The policy in the environment, as libgomp read it: "GOMP_SPINCOUNT=30000",
// "OMP_WAIT_POLICY=passive", ... or "libgomp's default".
std::string openmp_wait_policy();

// Under op determinism, a training step cuts its global batch into this many micro-batches,
// computes each one's gradient (and batch statistics) separately and sums them in one fixed tree,
// so that 1, 2, 4 or 8 replicas, on threads or in processes, give the same bits (DISTRIBUTED.md
// §2): the replica counts whose shares split that tree agree, and fit refuses the others (3 of
// 8; 3 of 3 agree). Fewer micro-batches cost less (larger products). n >= 1.
inline constexpr int kDefaultMicroBatches = 8;
void set_micro_batches(int n);
int micro_batches();

void enable_op_determinism();
void disable_op_determinism();
bool op_determinism_enabled();

// The name of the global mixed-precision policy, "float32" at start-up. Set it through
// weft::mixed_precision::set_global_policy, which checks the name.
void set_default_policy(const std::string& name);
std::string default_policy();

}  // namespace weft::config
