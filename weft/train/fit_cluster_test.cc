// fit in a cluster of workers on threads of one process, meeting through a real coordination
// service and real collectives on 127.0.0.1: an error on one worker between the steps reaches the
// others; workers that start from other weights are refused; a worker with no rows in a step
// makes the same collectives as the others; a step's collectives are counted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/distribute/mirrored_strategy.h"
#include "weft/distribute/multi_worker_mirrored_strategy.h"
#include "weft/nn/conv.h"
#include "weft/nn/core_layers.h"
#include "weft/nn/dense.h"
#include "weft/nn/model.h"
#include "weft/nn/normalization.h"
#include "weft/nn/pooling.h"
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

// A global batch with fewer rows than replicas leaves some worker with none in a step: that
// worker makes the same collective calls as the others (its BatchNormalization records updates
// of no weight), every worker ends with the same weights, and they are those of MirroredStrategy
// with as many replicas in one process (the moving statistics averaged over the replicas with
// rows only). Three rows in batches of 2 (the last batch has 1 row), on 2 and 3 workers; an
// MLP and a CNN, both with BatchNormalization.
TEST(FitInACluster, BatchNormalizationTrainsWhenAWorkerHasNoRowsInAStep) {
  struct Case {
    const char* name;
    Shape x_shape;
    std::function<Sequential()> build;
  };
  const std::vector<Case> cases = {
      {"mlp", {3, 4}, [] { return Sequential({Dense(4), BatchNormalization(), Dense(3)}); }},
      {"cnn", {3, 6, 6, 1}, [] {
         return Sequential({Conv2D(2, {3, 3}), BatchNormalization(), MaxPooling2D(), Flatten(),
                            Dense(3)});
       }}};
  Tensor y = Tensor::from_vector(std::vector<int64_t>{0, 2, 1});
  for (const Case& c : cases) {
    Tensor x = stateless_random_normal(c.x_shape, {7, 1});
    auto train = [&](const distribute::Strategy& strategy) {
      Sequential model;
      {
        auto scope = strategy.scope();
        model = c.build();
        model.compile(optim::SGD(0.1), losses::SparseCategoricalCrossentropy({.from_logits = true}),
                      std::vector<std::string>{});
      }
      model.fit(data::Dataset::from_tensor_slices({x, y}).batch(2), {.epochs = 2, .verbose = 0});
      std::vector<float> all;
      for (const Variable& w : model.variables()) {
        std::vector<float> v = w.value().to_vector<float>();
        all.insert(all.end(), v.begin(), v.end());
      }
      return all;
    };
    for (int workers : {2, 3}) {
      SCOPED_TRACE(std::string(c.name) + " on " + std::to_string(workers) + " workers");
      distribute::MultiWorkerOptions options;
      options.communication.timeout_seconds = 30;
      auto weights = weft::testing::on_local_workers<std::vector<float>>(
          workers, options,
          [&](distribute::MultiWorkerMirroredStrategy& strategy, int) { return train(strategy); });
      config::set_logical_cpu_devices(workers);
      std::vector<float> one_process = train(distribute::MirroredStrategy());
      config::set_logical_cpu_devices(1);
      ASSERT_EQ(weights[0].size(), one_process.size());
      for (size_t i = 0; i < one_process.size(); ++i) {
        EXPECT_NEAR(weights[0][i], one_process[i], 1e-5) << "weight element " << i;
      }
      for (const auto& w : weights) EXPECT_EQ(w, weights[0]);
    }
  }
}

// A step of a model with 50 BatchNormalization layers makes, across the workers, one
// all-reduce per gradient pack (one here: the pack size is above the gradients' size), one for
// the 100 moving statistics' updates and their counts, and one for the logs: with the gradients
// all-reduced during the backward pass, and after it (which learns the gradients' shapes at the
// first step only).
TEST(FitInACluster, AStepOfFiftyBatchNormalizationsMakesThreeAllReduces) {
  Tensor x = stateless_random_normal({8, 8}, {9, 1});
  Tensor y = argmax(slice(x, {Slice{}, Slice{0, 3}}), -1);
  for (bool overlap : {true, false}) {
    SCOPED_TRACE(overlap ? "during the backward pass" : "after it");
    distribute::MultiWorkerOptions options;
    options.communication.timeout_seconds = 30;
    options.communication.bytes_per_pack = 64 << 20;
    options.overlap_all_reduce = overlap;
    auto calls = weft::testing::on_local_workers<std::vector<uint64_t>>(
        2, options, [&](distribute::MultiWorkerMirroredStrategy& strategy, int) {
          Sequential model;
          {
            auto scope = strategy.scope();
            std::vector<Layer> layers;
            for (int i = 0; i < 50; ++i) {
              layers.push_back(Dense(8));
              layers.push_back(BatchNormalization());
            }
            layers.push_back(Dense(3));
            model = Sequential(layers);
            model(x);  // built in the scope: the variables start with the chief's values
            model.compile(optim::SGD(0.01),
                          losses::SparseCategoricalCrossentropy({.from_logits = true}),
                          std::vector<std::string>{});
          }
          std::vector<uint64_t> per_step;
          for (int step = 0; step < 2; ++step) {
            uint64_t before = strategy.collective_calls();
            model.train_on_batch({x, y});
            per_step.push_back(strategy.collective_calls() - before);
          }
          return per_step;
        });
    for (const auto& c : calls) {
      EXPECT_EQ(c[1], 3u);  // the first step's may learn layouts
    }
  }
}

}  // namespace
}  // namespace weft::nn
