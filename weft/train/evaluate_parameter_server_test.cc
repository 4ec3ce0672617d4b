// Model::evaluate under ParameterServerStrategy, in one process with a thread per task (a
// chief, one worker, one ps task on 127.0.0.1): the worker evaluates, steps_per_execution batches
// per closure, and the chief adds up the partial logs, to what one process gets from the same
// weights.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "weft/distribute/cluster/local_ports.h"
#include "weft/distribute/parameter_server/parameter_server_strategy.h"
#include "weft/nn/dense.h"
#include "weft/nn/losses.h"
#include "weft/nn/model.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/optim/sgd.h"
#include "weft/testing/ps_cluster.h"

namespace weft::nn {
namespace {

namespace ds = weft::distribute;

// A model whose test step counts its runs.
class CountingModel : public Sequential {
 public:
  using Sequential::Sequential;
  PartialLogs test_step(const std::vector<Tensor>& batch) override {
    ++test_steps;
    return Sequential::test_step(batch);
  }
  std::atomic<int> test_steps{0};
};

void compile(Model& model, int64_t steps_per_execution) {
  model.compile(optim::SGD(0.1), losses::SparseCategoricalCrossentropy({.from_logits = true}),
                {"accuracy"}, {.steps_per_execution = steps_per_execution});
}

// Evaluates `data` (5 batches of `features` features) with steps_per_execution 2 on a chief, a
// worker and a ps task; checks that the worker ran each batch once and that the chief's logs are
// one process's from the same weights, bit for bit.
void expect_one_processs_logs(int64_t features) {
  const Tensor x = stateless_random_normal({40, features}, {7, 3});
  const Tensor y = argmax(slice(x, {Slice{}, Slice{0, 3}}), -1);
  const data::Dataset data = data::Dataset::from_tensor_slices({x, y}).batch(8);  // 5 batches
  ds::ReservedLocalPorts ports(3);
  std::map<std::string, int> test_steps;
  std::map<std::string, double> logs;
  std::vector<Tensor> weights;
  std::mutex mu;
  auto run_task = [&](const std::string& task) {
    ds::ParameterServerStrategy strategy = weft::testing::ps_strategy(ports, task, 1, 1);
    CountingModel model;
    {
      auto scope = strategy.scope();
      model.add(Dense(3));
      compile(model, /*steps_per_execution=*/2);
    }
    std::map<std::string, double> got = model.evaluate(data);
    std::lock_guard lock(mu);
    test_steps[task] = model.test_steps.load();
    if (strategy.is_chief()) {
      logs = got;
      for (const Variable& v : model.variables()) weights.push_back(v.value());
    } else {
      EXPECT_TRUE(got.empty()) << task;
    }
  };
  std::vector<std::future<void>> tasks;
  for (const char* task : {"chief:0", "worker:0", "ps:0"}) {
    tasks.push_back(std::async(std::launch::async, run_task, task));
  }
  for (auto& t : tasks) t.get();

  EXPECT_EQ(test_steps["worker:0"], 5);
  EXPECT_EQ(test_steps["chief:0"], 0);
  EXPECT_EQ(test_steps["ps:0"], 0);
  // One process, the chief's weights: the same loss and accuracy, bit for bit.
  Sequential local({Dense(3)});
  compile(local, 1);
  local(slice(x, {Slice{0, 1}}));
  ASSERT_EQ(local.variables().size(), weights.size());
  for (size_t i = 0; i < weights.size(); ++i) local.variables()[i].assign(weights[i]);
  const std::map<std::string, double> expected = local.evaluate(data);
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs, expected);
}

// Closures of two batches: 2, 2 and 1.
TEST(EvaluateOnParameterServers, TheWorkersEvaluateTheBatchesAndTheChiefAddsThemUp) {
  expect_one_processs_logs(4);
}

// Batches of 3.2 MB (8 rows of 100 000 floats): two would pass a message's 4 MiB of data, so
// each is a closure of its own.
TEST(EvaluateOnParameterServers, AClosureTakesNoMoreBatchesThanAMessageCarries) {
  expect_one_processs_logs(100000);
}

}  // namespace
}  // namespace weft::nn
