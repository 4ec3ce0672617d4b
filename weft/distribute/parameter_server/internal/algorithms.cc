#include "weft/distribute/parameter_server/internal/algorithms.h"

#include <map>
#include <mutex>

#include "weft/core/config_dict.h"
#include "weft/core/errors.h"

namespace weft::distribute::parameter_server::internal {

const optim::Optimizer::Algorithm& algorithm_of(const std::string& config) {
  struct Known {
    std::mutex mu;
    std::map<std::string, optim::Optimizer> by_algorithm;  // by the algorithm's own config
    std::map<std::string, const optim::Optimizer::Algorithm*> by_config;
  };
  static Known* known = new Known;  // never destroyed: servers may outlive static destruction
  std::lock_guard lock(known->mu);
  if (auto it = known->by_config.find(config); it != known->by_config.end()) return *it->second;
  optim::Optimizer o;
  try {
    o = optim::deserialize(ConfigDict::from_json(config));
  } catch (const Error& e) {
    throw InvalidArgument("the optimizer config cannot be read: " + std::string(e.what()));
  }
  auto [it, made] = known->by_algorithm.emplace(o.algorithm().get_config().to_json(), o);
  const optim::Optimizer::Algorithm* algorithm = &it->second.algorithm();
  known->by_config.emplace(config, algorithm);
  return *algorithm;
}

}  // namespace weft::distribute::parameter_server::internal
