// Functions a ClusterCoordinator schedules on workers (cluster_coordinator.h), registered by name
// in every process of the (same) program: a C++ closure cannot travel, so the coordinator sends
// the function's name and its arguments (SPEC §2). Register them before the strategy serves or
// schedules anything, in the same way on every task.
//
//   auto dataset_fn = weft::distribute::register_dataset_function(
//       "train_data", [](const weft::distribute::InputContext& context) { return make(context); });
//   auto train_step = weft::distribute::register_function(
//       "train_step", [](const weft::distribute::ClosureArgs& args) {
//         weft::data::Element batch = *args.iterator(0).next();
//         return std::vector<weft::Tensor>{step(batch)};
//       });
//
// A function gets its arguments (a tensor each, or this worker's iterator for a per-worker
// dataset) and returns tensors, which the coordinator's RemoteValue holds. An error it throws is
// the closure's: ClusterCoordinator::join raises it. Registering a name again replaces the
// function.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "weft/core/tensor.h"
#include "weft/data/dataset.h"
#include "weft/distribute/strategy.h"

namespace weft::distribute {

class ClosureArgs {
 public:
  struct Arg {
    Tensor tensor;
    data::Dataset::Iterator* iterator = nullptr;  // a per-worker dataset's, on this worker
  };
  explicit ClosureArgs(std::vector<Arg> args) : args_(std::move(args)) {}
  std::size_t size() const { return args_.size(); }
  // Argument i: InvalidArgument when there is none, or it is of the other kind.
  const Tensor& tensor(std::size_t i) const;
  data::Dataset::Iterator& iterator(std::size_t i) const;

 private:
  const Arg& at(std::size_t i) const;
  std::vector<Arg> args_;
};

using RemoteFunctionBody = std::function<std::vector<Tensor>(const ClosureArgs&)>;
using DatasetFunctionBody = std::function<data::Dataset(const InputContext&)>;

// What ClusterCoordinator::schedule and create_per_worker_dataset take: a registered name.
struct RemoteFunction {
  std::string name;
};
struct DatasetFunction {
  std::string name;
};

RemoteFunction register_function(const std::string& name, RemoteFunctionBody body);
DatasetFunction register_dataset_function(const std::string& name, DatasetFunctionBody body);

namespace internal {
// The registered function, or an empty one.
// The function registered under `name`, waiting up to `wait` for it to be; empty when none is.
RemoteFunctionBody find_function(const std::string& name, std::chrono::milliseconds wait);
DatasetFunctionBody find_dataset_function(const std::string& name, std::chrono::milliseconds wait);
}  // namespace internal

}  // namespace weft::distribute
