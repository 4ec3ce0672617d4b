#include "weft/distribute/parameter_server/remote_functions.h"

#include <condition_variable>
#include <map>
#include <mutex>

#include "weft/core/errors.h"

namespace weft::distribute {
namespace {

struct Registry {
  std::mutex mu;
  std::condition_variable registered;
  std::map<std::string, RemoteFunctionBody> functions;
  std::map<std::string, DatasetFunctionBody> datasets;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: workers may look up during exit
  return *r;
}

}  // namespace

const ClosureArgs::Arg& ClosureArgs::at(std::size_t i) const {
  WEFT_CHECK(i < args_.size(), InvalidArgument)
      << "closure argument " << i << ": the closure has " << args_.size() << " arguments";
  return args_[i];
}

const Tensor& ClosureArgs::tensor(std::size_t i) const {
  const Arg& a = at(i);
  WEFT_CHECK(a.iterator == nullptr, InvalidArgument)
      << "closure argument " << i << " is a per-worker iterator, not a tensor";
  return a.tensor;
}

data::Dataset::Iterator& ClosureArgs::iterator(std::size_t i) const {
  const Arg& a = at(i);
  WEFT_CHECK(a.iterator != nullptr, InvalidArgument)
      << "closure argument " << i << " is a tensor, not a per-worker iterator";
  return *a.iterator;
}

RemoteFunction register_function(const std::string& name, RemoteFunctionBody body) {
  WEFT_CHECK(!name.empty() && body, InvalidArgument)
      << "register_function: a function needs a name and a body";
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.functions[name] = std::move(body);
  r.registered.notify_all();
  return {name};
}

DatasetFunction register_dataset_function(const std::string& name, DatasetFunctionBody body) {
  WEFT_CHECK(!name.empty() && body, InvalidArgument)
      << "register_dataset_function: a dataset function needs a name and a body";
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.datasets[name] = std::move(body);
  r.registered.notify_all();
  return {name};
}

namespace internal {

namespace {

// The entry of `map` under `name`, waiting up to `wait` for it; empty when there is none.
template <typename Body>
Body find_registered(std::map<std::string, Body>& map, const std::string& name,
                     std::chrono::milliseconds wait) {
  Registry& r = registry();
  std::unique_lock lock(r.mu);
  r.registered.wait_for(lock, wait, [&] { return map.count(name) != 0; });
  auto it = map.find(name);
  return it == map.end() ? Body{} : it->second;
}

}  // namespace

RemoteFunctionBody find_function(const std::string& name, std::chrono::milliseconds wait) {
  return find_registered(registry().functions, name, wait);
}

DatasetFunctionBody find_dataset_function(const std::string& name, std::chrono::milliseconds wait) {
  return find_registered(registry().datasets, name, wait);
}

}  // namespace internal
}  // namespace weft::distribute
