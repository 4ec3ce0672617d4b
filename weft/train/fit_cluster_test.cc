// fit in a cluster of two workers (on threads of one process, meeting through a real
// coordination service and real collectives on 127.0.0.1): an error on one worker between the
// steps, where no collective is under way, reaches the other worker with its task and message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/errors.h"
#include "weft/distribute/multi_worker_mirrored_strategy.h"
#include "weft/nn/dense.h"
#include "weft/nn/model.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/optim/sgd.h"
#include "weft/testing/local_cluster.h"
#include "weft/train/callbacks.h"

namespace weft::nn {
namespace {

using ::testing::HasSubstr;

TEST(FitInACluster, AnErrorBetweenStepsReachesTheOtherWorkerWithItsMessage) {
  Tensor x = stateless_random_normal({32, 4}, {5, 1});
  Tensor y = argmax(slice(x, {Slice{}, Slice{0, 3}}), -1);
  distribute::MultiWorkerOptions options;
  options.communication.timeout_seconds = 30;  // a bound if the error never arrives
  auto worker = [&](distribute::MultiWorkerMirroredStrategy& strategy, int w) -> std::string {
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
  std::vector<std::string> messages =
      weft::testing::on_local_workers<std::string>(2, options, worker);
  const std::string &on_worker0 = messages[0], &on_worker1 = messages[1];
  EXPECT_THAT(on_worker1, HasSubstr("worker 1's disk is full"));
  EXPECT_THAT(on_worker0, HasSubstr("task worker:1 failed: "));
  EXPECT_THAT(on_worker0, HasSubstr("worker 1's disk is full"));
}

// A model built outside strategy.scope() keeps each worker's own initial weights; fit refuses
// to train them apart, on every worker, naming both digests. Built lazily by fit itself, in the
// scope, the weights start as the chief's and fit trains.
TEST(FitInACluster, WorkersThatStartFromOtherWeightsFailNamingBoth) {
  Tensor x = stateless_random_normal({16, 4}, {5, 1});
  Tensor y = argmax(slice(x, {Slice{}, Slice{0, 3}}), -1);
  auto worker = [&](distribute::MultiWorkerMirroredStrategy& strategy, int w,
                    bool built_outside) -> std::string {
    // Other initial weights on each worker, as different seeds would give.
    Sequential model({Dense(3, "", {.kernel_initializer = w == 0 ? "ones" : "zeros"})});
    if (built_outside) model(slice(x, {Slice{0, 1}}));
    {
      auto scope = strategy.scope();
      model.compile(optim::SGD(0.1), losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    std::vector<std::string>{});
    }
    try {
      model.fit(data::Dataset::from_tensor_slices({x, y}).batch(8), {.epochs = 1, .verbose = 0});
    } catch (const Error& e) {
      return e.what();
    }
    return "fit returned";
  };
  distribute::MultiWorkerOptions options;
  options.communication.timeout_seconds = 30;
  for (bool built_outside : {true, false}) {
    std::vector<std::string> messages = weft::testing::on_local_workers<std::string>(
        2, options, [&](distribute::MultiWorkerMirroredStrategy& s, int w) {
          return worker(s, w, built_outside);
        });
    for (const std::string& m : messages) {
      if (built_outside) {
        EXPECT_THAT(m, HasSubstr("fit: worker 1 starts from other weights than the chief"));
      } else {
        EXPECT_EQ(m, "fit returned");
      }
    }
  }
}

}  // namespace
}  // namespace weft::nn
