// fit in a cluster of two workers (on threads of one process, meeting through a real
// coordination service and real collectives on 127.0.0.1): an error on one worker between the
// steps, where no collective is under way, reaches the other worker with its task and message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "weft/core/errors.h"
#include "weft/distribute/cluster/local_ports.h"
#include "weft/distribute/multi_worker_mirrored_strategy.h"
#include "weft/nn/dense.h"
#include "weft/nn/model.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/optim/sgd.h"
#include "weft/train/callbacks.h"

namespace weft::nn {
namespace {

using testing::HasSubstr;

TEST(FitInACluster, AnErrorBetweenStepsReachesTheOtherWorkerWithItsMessage) {
  std::string addresses;
  for (int port : distribute::unused_local_ports(2)) {
    addresses += std::string(addresses.empty() ? "" : ", ") + "\"127.0.0.1:" +
                 std::to_string(port) + "\"";
  }
  Tensor x = stateless_random_normal({32, 4}, {5, 1});
  Tensor y = argmax(slice(x, {Slice{}, Slice{0, 3}}), -1);
  auto worker = [&](int w) -> std::string {
    auto resolver = distribute::cluster_resolver::TFConfigClusterResolver::from_json(
        "{\"cluster\": {\"worker\": [" + addresses + "]}, \"task\": {\"type\": \"worker\", "
        "\"index\": " + std::to_string(w) + "}}");
    distribute::MultiWorkerOptions options;
    options.coordination.token = "test-token";
    options.communication.timeout_seconds = 30;  // a bound if the error never arrives
    distribute::MultiWorkerMirroredStrategy strategy(resolver, options);
    Sequential model;
    {
      auto scope = strategy.scope();
      model = Sequential({Dense(3)});
      model.compile(optim::SGD(0.1), losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    std::vector<std::string>{});
    }
    // Worker 1 fails at the end of the first epoch (a callback, as a backup that cannot be
    // written would); worker 0 goes on into the second epoch's first all-reduce.
    train::LambdaCallback fails({.on_epoch_end = [w](int, Logs&) {
      if (w == 1) WEFT_FAIL(Unavailable) << "worker 1's disk is full";
    }});
    try {
      model.fit(data::Dataset::from_tensor_slices({x, y}).batch(8),
                {.epochs = 3, .callbacks = {fails}, .verbose = 0});
    } catch (const Error& e) {
      return e.what();
    }
    return "fit returned";
  };
  auto first = std::async(std::launch::async, worker, 0);
  auto second = std::async(std::launch::async, worker, 1);
  std::string on_worker0 = first.get(), on_worker1 = second.get();
  EXPECT_THAT(on_worker1, HasSubstr("worker 1's disk is full"));
  EXPECT_THAT(on_worker0, HasSubstr("task worker:1 failed: "));
  EXPECT_THAT(on_worker0, HasSubstr("worker 1's disk is full"));
}

}  // namespace
}  // namespace weft::nn
