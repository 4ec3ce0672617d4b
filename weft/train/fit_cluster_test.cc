// fit in a cluster of workers on threads of one process, meeting through a real coordination
// service and real collectives on 127.0.0.1: an error on one worker between the steps reaches the
// others; workers that start from other weights are refused; a worker with no rows in a step
// makes the same collectives as the others; a step's collectives are counted; a pipeline that
// reads files is divided among the workers by file; otherwise each maps only its rows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/data/readers/records.h"
#include "weft/distribute/mirrored_strategy.h"
#include "weft/distribute/multi_worker_mirrored_strategy.h"
#include "weft/nn/conv.h"
#include "weft/nn/core_layers.h"
#include "weft/nn/dense.h"
#include "weft/nn/model.h"
#include "weft/nn/normalization.h"
#include "weft/nn/pooling.h"
#include "weft/ops/elementwise.h"
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

// A pipeline that reads files is divided among the workers by file (AUTO, as tf.data's
// auto-shard): each worker reads only its own files, a worker whose files run out trains on 0
// rows while the other goes on, and every worker ends with the weights of MirroredStrategy in
// one process trained on the same global batches (each worker's rows of a step side by side).
// experimental_distribute_dataset's steps count both workers' rows; FILE over a pipeline without
// files is refused.
TEST(FitInACluster, AFilePipelineIsDividedAmongTheWorkersByFile) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("weft_fit_by_file_" + std::to_string(getpid()));
  fs::create_directories(dir);
  // Five files of three lines "id,x0,x1,x2,x3,label": worker 0 reads files 0, 2, 4 (ids 0-2,
  // 6-8, 12-14), worker 1 files 1, 3 (ids 3-5, 9-11).
  Tensor x = stateless_random_normal({15, 4}, {5, 2});
  Tensor y = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 2, 1, 0, 0, 2, 1, 1, 0, 2, 2, 0, 1});
  const std::vector<float> xs = x.to_vector<float>();
  const std::vector<int64_t> ys = y.to_vector<int64_t>();
  for (int k = 0; k < 5; ++k) {
    std::ofstream out(dir / ("part-" + std::to_string(k) + ".csv"));
    out.precision(9);
    for (int i = 3 * k; i < 3 * k + 3; ++i) {
      out << i;
      for (int j = 0; j < 4; ++j) out << "," << xs[static_cast<size_t>(4 * i + j)];
      out << "," << ys[static_cast<size_t>(i)] << "\n";
    }
  }
  auto compiled = [](const distribute::Strategy& strategy) {
    auto scope = strategy.scope();
    Sequential model({Dense(3)});
    model.compile(optim::SGD(0.1), losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  std::vector<std::string>{});
    return model;
  };
  auto weights_of = [](const Sequential& model) {
    std::vector<float> all;
    for (const Variable& w : model.variables()) {
      std::vector<float> v = w.value().to_vector<float>();
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  struct Seen {
    std::vector<int64_t> ids;  // the lines this worker's fit read, in order
    int64_t steps = 0;
    std::vector<float> weights;
    std::vector<int64_t> global_batches, first_examples;  // experimental_distribute_dataset's
    std::string file_refused;
  };
  auto worker = [&](distribute::MultiWorkerMirroredStrategy& strategy, int) {
    Seen seen;
    std::mutex mu;
    bool recording = true;
    auto parse = [&](const data::Element& line) -> data::Element {
      std::istringstream in(data::as_string(line[0]));
      std::vector<double> v;
      for (std::string field; std::getline(in, field, ',');) v.push_back(std::stod(field));
      std::lock_guard<std::mutex> lock(mu);
      if (recording) seen.ids.push_back(static_cast<int64_t>(v[0]));
      return {Tensor::from_vector(std::vector<float>(v.begin() + 1, v.begin() + 5)),
              Tensor::scalar(static_cast<int64_t>(v[5]), kInt64)};
    };
    data::Dataset ds =
        data::text_line_dataset(data::list_files((dir / "*.csv").string(), /*shuffle=*/false))
            .map(parse)
            .batch(4);
    Sequential model = compiled(strategy);
    train::LambdaCallback count({.on_batch_end = [&](int64_t, const Logs&) { ++seen.steps; }});
    model.fit(ds, {.epochs = 2, .callbacks = {count}, .verbose = 0});
    seen.weights = weights_of(model);
    {
      std::lock_guard<std::mutex> lock(mu);
      recording = false;
    }
    distribute::DistributedDataset divided = strategy.experimental_distribute_dataset(ds);
    for (const distribute::DistributedElement& step : divided) {
      seen.global_batches.push_back(step.slices[0].global_batch_size);
      seen.first_examples.push_back(step.slices[0].first_example);
    }
    data::Options file;
    file.experimental_distribute.auto_shard_policy = data::AutoShardPolicy::FILE;
    try {
      strategy.experimental_distribute_dataset(data::Dataset::range(8).batch(4).with_options(file));
    } catch (const InvalidArgument& e) {
      seen.file_refused = e.what();
    }
    return seen;
  };
  distribute::MultiWorkerOptions options;
  options.communication.timeout_seconds = 30;
  std::vector<Seen> seen = weft::testing::on_local_workers<Seen>(2, options, worker);
  fs::remove_all(dir);

  using Ids = std::vector<int64_t>;
  const Ids mine0{0, 1, 2, 6, 7, 8, 12, 13, 14}, mine1{3, 4, 5, 9, 10, 11};
  auto twice = [](Ids ids) {
    ids.insert(ids.end(), ids.begin(), ids.end());
    return ids;
  };
  EXPECT_EQ(seen[0].ids, twice(mine0));
  EXPECT_EQ(seen[1].ids, twice(mine1));
  // Steps of 2 + 2, 2 + 2, 2 + 2, 2 + 0 and 1 + 0 rows, in each of the 2 epochs.
  EXPECT_EQ(seen[0].steps, 10);
  EXPECT_EQ(seen[1].steps, 10);
  EXPECT_EQ(seen[0].global_batches, (Ids{4, 4, 4, 2, 1}));
  EXPECT_EQ(seen[1].global_batches, (Ids{4, 4, 4, 2, 1}));
  EXPECT_EQ(seen[0].first_examples, (Ids{0, 0, 0, 0, 0}));
  EXPECT_EQ(seen[1].first_examples, (Ids{2, 2, 2, 2, 1}));
  for (const Seen& s : seen) {
    EXPECT_THAT(s.file_refused, HasSubstr("cannot be divided by file"));
    EXPECT_THAT(s.file_refused, HasSubstr("from_tensor_slices"));
  }
  // The same global batches in one process: 2 replicas, each step's rows in worker order.
  const Ids order{0, 1, 3, 4, 2, 6, 5, 9, 7, 8, 10, 11, 12, 13, 14};
  Tensor idx = Tensor::from_vector(order);
  auto rows = [&](int64_t lo, int64_t hi) {
    Tensor i = slice(idx, {Slice{lo, hi}});
    return data::Dataset::from_tensor_slices({gather(x, i, 0), gather(y, i, 0)});
  };
  data::Dataset global =
      rows(0, 12).batch(4).concatenate(rows(12, 14).batch(2)).concatenate(rows(14, 15).batch(1));
  config::set_logical_cpu_devices(2);
  Sequential reference = compiled(distribute::MirroredStrategy());
  reference.fit(global, {.epochs = 2, .verbose = 0});
  config::set_logical_cpu_devices(1);
  const std::vector<float> expected = weights_of(reference);
  ASSERT_EQ(seen[0].weights.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(seen[0].weights[i], expected[i], 1e-5) << "weight element " << i;
  }
  EXPECT_EQ(seen[1].weights, seen[0].weights);
}

// Under DATA (AUTO over a pipeline without files) every worker reads every global batch and
// keeps its rows; over batch() over map() it maps only those, so the map runs once per example
// in the cluster, and the weights are those of one process with as many replicas.
TEST(FitInACluster, UnderDataEachWorkerMapsOnlyItsRows) {
  Tensor x = stateless_random_normal({12, 4}, {5, 3});
  Tensor y = argmax(slice(x, {Slice{}, Slice{0, 3}}), -1);
  auto train = [&](const distribute::Strategy& strategy, int* mapped) {
    Sequential model;
    {
      auto scope = strategy.scope();
      model = Sequential({Dense(3)});
      model.compile(optim::SGD(0.1), losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    std::vector<std::string>{});
    }
    auto counted = [mapped](const data::Element& e) {
      ++*mapped;
      return data::Element{mul(e[0], 2.0), e[1]};
    };
    model.fit(data::Dataset::from_tensor_slices({x, y}).map(counted).batch(4),
              {.epochs = 2, .verbose = 0});
    std::vector<float> all;
    for (const Variable& w : model.variables()) {
      std::vector<float> v = w.value().to_vector<float>();
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  distribute::MultiWorkerOptions options;
  options.communication.timeout_seconds = 30;
  struct Trained {
    std::vector<float> weights;
    int mapped = 0;
  };
  auto trained = weft::testing::on_local_workers<Trained>(
      2, options, [&](distribute::MultiWorkerMirroredStrategy& strategy, int) {
        Trained t;
        t.weights = train(strategy, &t.mapped);
        return t;
      });
  config::set_logical_cpu_devices(2);
  int mapped_in_one_process = 0;
  std::vector<float> one_process = train(distribute::MirroredStrategy(), &mapped_in_one_process);
  config::set_logical_cpu_devices(1);
  EXPECT_EQ(mapped_in_one_process, 24);  // 12 examples, 2 epochs
  for (const Trained& t : trained) {
    EXPECT_EQ(t.mapped, 12);  // its 6 rows of each epoch's 12
    ASSERT_EQ(t.weights.size(), one_process.size());
    for (size_t i = 0; i < one_process.size(); ++i) {
      EXPECT_NEAR(t.weights[i], one_process[i], 1e-5) << "weight element " << i;
    }
  }
  EXPECT_EQ(trained[1].weights, trained[0].weights);
}

}  // namespace
}  // namespace weft::nn
