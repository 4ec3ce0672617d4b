// The model of TensorFlow's parameter-server fault-tolerance tests (fault_tolerance_test_base.py's
// Model), shared by the chief (fault_tolerance_test.cc, the test process) and the worker and ps
// tasks (fault_tolerance_task.cc, real processes it starts): every task makes the same variables
// in the strategy's scope and registers the same functions by name (SPEC §2).
//
// train_fn reads two per-worker iterators, multiplies them into `w` (w.assign_add), and while
// the file DIR/infinite exists does it again (TF's do_infinite_step: a closure that runs until
// the test lets it end; it writes DIR/looping.PID once it loops), then adds 1 to `iterations`.
// Both additions are staged under the closure's run and applied at its commit, so `iterations`
// counts each closure that completed exactly once, whichever workers were killed meanwhile.
#pragma once

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "weft/distribute/cluster/tf_config.h"
#include "weft/distribute/parameter_server/cluster_coordinator.h"
#include "weft/distribute/parameter_server/parameter_server_strategy.h"
#include "weft/distribute/parameter_server/remote_functions.h"
#include "weft/weft.h"

namespace fault_tolerance {

namespace fs = std::filesystem;
namespace dist = weft::distribute;

inline constexpr const char* kToken = "0123456789abcdef";

// Every task's options: the cluster token, and 30 s for the tasks to meet.
inline dist::ParameterServerOptions options() {
  dist::ParameterServerOptions o;
  o.coordination.token = kToken;
  o.startup_timeout = std::chrono::seconds(30);
  return o;
}

struct Model {
  explicit Model(const dist::ParameterServerStrategy& strategy) {
    auto scope = strategy.scope();
    w = weft::Variable(weft::stateless_random_uniform({10, 10}, {1, 2}, 0.0, 0.02), "w");
    iterations = weft::Variable(weft::Tensor::scalar(0, weft::kInt64), "iterations");
    v = weft::Variable(weft::Tensor::scalar(0, weft::kInt32), "v");
  }
  weft::Variable w, iterations, v;
};

// Whether train_fn and long_function loop (the file DIR/infinite exists).
inline bool infinite(const fs::path& dir) { return fs::exists(dir / "infinite"); }

// The marker a task leaves once its model is built and its functions registered: DIR/ready.PID.
inline fs::path ready_marker(const fs::path& dir, pid_t pid) {
  return dir / ("ready." + std::to_string(pid));
}

// The marker a task's looping closure leaves: DIR/looping.PID.
inline fs::path looping_marker(const fs::path& dir, pid_t pid) {
  return dir / ("looping." + std::to_string(pid));
}

struct Functions {
  dist::DatasetFunction dataset_fn;
  dist::RemoteFunction train_fn, normal_function, error_function, long_function, worker_fn,
      trivial_function;
};

// Registers the functions over `model` (in every task: the chief's names, the workers' bodies);
// `dir` is the test's directory.
inline Functions register_functions(const Model& model, const fs::path& dir) {
  using weft::Tensor;
  Functions f;
  f.dataset_fn = dist::register_dataset_function("ft/dataset_fn", [](const dist::InputContext&) {
    Tensor data = weft::stateless_random_uniform({1, 10, 10}, {3, 4}, 0.0, 0.02);
    return weft::data::Dataset::from_tensors({data}).repeat();
  });
  f.train_fn = dist::register_function("ft/train_fn", [model, dir](const dist::ClosureArgs& args) {
    weft::Variable w = model.w, iterations = model.iterations;
    auto step = [&] {
      Tensor x = weft::matmul(weft::squeeze((*args.iterator(0).next())[0]), w.value());
      x = weft::matmul(weft::squeeze((*args.iterator(1).next())[0]), x);
      x = weft::matmul(weft::full({10, 10}, 0.01f), x);
      w.assign_add(x);
    };
    step();
    for (bool marked = false; infinite(dir);) {
      if (!marked) std::ofstream(looping_marker(dir, getpid())) << "train_fn\n";
      marked = true;
      step();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    iterations.assign_add(Tensor::scalar(1, weft::kInt64));
    return std::vector<Tensor>{};
  });
  auto product = [] {
    return weft::matmul(weft::stateless_random_uniform({2, 10}, {5, 6}),
                        weft::stateless_random_uniform({10, 2}, {7, 8}));
  };
  f.normal_function = dist::register_function("ft/normal_function", [product](const auto&) {
    return std::vector<Tensor>{weft::mean(product())};
  });
  // TF's check_ops.assert_non_positive on a positive sum.
  f.error_function = dist::register_function("ft/error_function", [product](const auto&) {
    const float s = weft::sum(product()).template item<float>();
    WEFT_CHECK(s <= 0, InvalidArgument) << "assert_non_positive: the sum " << s << " is positive";
    return std::vector<Tensor>{};
  });
  // Runs while DIR/infinite exists (at most 60 s), leaving the looping marker.
  f.long_function = dist::register_function("ft/long_function", [dir](const auto&) {
    std::ofstream(looping_marker(dir, getpid())) << "long_function\n";
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    Tensor x = weft::zeros({10, 10});
    while (infinite(dir) && std::chrono::steady_clock::now() < end) {
      x = weft::add(x, weft::full({10, 10}, 1.0f));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::vector<Tensor>{x};
  });
  f.worker_fn = dist::register_function("ft/worker_fn", [model](const auto&) {
    Tensor v = model.v.value();
    return std::vector<Tensor>{weft::add(v, Tensor::scalar(1, weft::kInt32)),
                               weft::sub(v, Tensor::scalar(1, weft::kInt32))};
  });
  f.trivial_function = dist::register_function("ft/trivial_function", [model](const auto&) {
    return std::vector<Tensor>{
        weft::add(model.iterations.value(), Tensor::scalar(1, weft::kInt64))};
  });
  return f;
}

}  // namespace fault_tolerance
