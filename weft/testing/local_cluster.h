// A cluster of MultiWorkerMirroredStrategy workers on threads of this process, for tests: each
// builds its strategy from its own TF_CONFIG text (ports on 127.0.0.1 the OS picked, held until
// the workers are done so that no other process can take one first: local_ports.h), and they
// meet through a real coordination service and real collectives. Header-only.
//
//   auto sums = weft::testing::on_local_workers<double>(2, {}, [](auto& strategy, int worker) {
//     ...
//   });
#pragma once

#include <functional>
#include <future>
#include <string>
#include <vector>

#include "weft/distribute/cluster/local_ports.h"
#include "weft/distribute/multi_worker_mirrored_strategy.h"

namespace weft::testing {

// Runs fn(strategy, worker) for each of `workers` workers on its own thread, every strategy made
// with `options` (and a test token); returns what each returned, in worker order.
template <typename R>
std::vector<R> on_local_workers(
    int workers, distribute::MultiWorkerOptions options,
    const std::function<R(distribute::MultiWorkerMirroredStrategy&, int)>& fn) {
  distribute::ReservedLocalPorts ports(workers);  // until every worker has returned
  std::string addresses;
  for (int w = 0; w < workers; ++w) {
    addresses += std::string(addresses.empty() ? "" : ", ") + "\"" + ports.address(w) + "\"";
  }
  options.coordination.token = "test-token";
  std::vector<std::future<R>> futures;
  for (int w = 0; w < workers; ++w) {
    futures.push_back(std::async(std::launch::async, [&, w] {
      auto resolver = distribute::cluster_resolver::TFConfigClusterResolver::from_json(
          "{\"cluster\": {\"worker\": [" + addresses +
          "]}, \"task\": {\"type\": \"worker\", "
          "\"index\": " +
          std::to_string(w) + "}}");
      distribute::MultiWorkerMirroredStrategy strategy(resolver, options);
      return fn(strategy, w);
    }));
  }
  std::vector<R> out;
  for (auto& f : futures) out.push_back(f.get());
  return out;
}

}  // namespace weft::testing
