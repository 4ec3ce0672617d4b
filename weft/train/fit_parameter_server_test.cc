// Model::fit under ParameterServerStrategy, in one process with a thread per task (a chief,
// workers and a ps task on 127.0.0.1): the workers read the training batches themselves, at the
// positions the chief's closures carry, and a worker whose dataset differs from the chief's fails
// the fit naming itself instead of training on other data. (The real-process fault tests are
// tools/weft/ps_cli_test.cc's.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "weft/distribute/cluster/local_ports.h"
#include "weft/distribute/parameter_server/parameter_server_strategy.h"
#include "weft/nn/dense.h"
#include "weft/nn/losses.h"
#include "weft/nn/model.h"
#include "weft/ops/digest.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/optim/sgd.h"
#include "weft/testing/ps_cluster.h"

namespace weft::nn {
namespace {

namespace ds = weft::distribute;

// A model whose train step records the digest of each batch it trains on.
class RecordingModel : public Sequential {
 public:
  using Sequential::Sequential;
  PartialLogs train_step(const std::vector<Tensor>& batch) override {
    {
      std::lock_guard lock(mu);
      trained.push_back(digest64(batch));
    }
    return Sequential::train_step(batch);
  }
  std::mutex mu;
  std::vector<uint64_t> trained;
};

// 60 rows of 4 features drawn with `key`, their class the largest of the first 3.
data::Dataset rows(uint64_t shuffle_seed, int64_t key = 7) {
  const Tensor x = stateless_random_normal({60, 4}, {key, 3});
  const Tensor y = argmax(slice(x, {Slice{}, Slice{0, 3}}), -1);
  return data::Dataset::from_tensor_slices({x, y}).shuffle(60, shuffle_seed).batch(8);
}

struct ClusterRun {
  std::map<std::string, std::vector<uint64_t>> trained;  // per task
  std::map<std::string, std::string> errors;             // per task, what its fit threw
};

// Fits for 3 epochs (8 batches each, the last of 4 rows) on a chief, `workers` workers and a ps
// task; every task reads rows(1) but `other`, which reads `other_rows`. Then, with `then`, every
// task fits one epoch of it.
ClusterRun fit_on_a_cluster(int workers, const std::string& other = "",
                            const data::Dataset& other_rows = rows(1),
                            const std::optional<data::Dataset>& then = std::nullopt) {
  ds::ReservedLocalPorts ports(static_cast<size_t>(2 + workers));
  ClusterRun run;
  std::mutex mu;
  auto run_task = [&](const std::string& task) {
    ds::ParameterServerStrategy strategy = weft::testing::ps_strategy(ports, task, workers, 1);
    RecordingModel model;
    {
      auto scope = strategy.scope();
      model.add(Dense(3));
      model.compile(optim::SGD(0.1), losses::SparseCategoricalCrossentropy({.from_logits = true}));
    }
    std::string error;
    try {
      model.fit(task == other ? other_rows : rows(1), {.epochs = 3, .verbose = 0});
      if (then) model.fit(*then, {.epochs = 1, .verbose = 0});
    } catch (const Error& e) {
      error = e.what();
    }
    std::lock_guard lock(mu);
    run.trained[task] = model.trained;
    if (!error.empty()) run.errors[task] = error;
  };
  std::vector<std::string> tasks = {"chief:0", "ps:0"};
  for (int w = 0; w < workers; ++w) tasks.push_back("worker:" + std::to_string(w));
  std::vector<std::future<void>> running;
  for (const std::string& task : tasks) {
    running.push_back(std::async(std::launch::async, run_task, task));
  }
  for (auto& t : running) t.get();
  return run;
}

// The worker trains on the batches the chief's closures name, read from its own dataset: every
// batch of the three passes exactly once, those one process's fit reads. (One worker: the
// workers of one process share the registered train step, and so one model; two real workers
// reading past each other's batches are ps_cli_test's, input_positions_test's the reading.)
TEST(FitOnParameterServers, TheWorkersReadTheBatchesTheChiefsClosuresName) {
  const ClusterRun run = fit_on_a_cluster(1);
  EXPECT_THAT(run.errors, ::testing::IsEmpty());
  std::vector<uint64_t> expected;
  data::Dataset::Iterator it = rows(1).repeat().begin();
  for (int i = 0; i < 3 * 8; ++i) expected.push_back(digest64(*it.next()));
  EXPECT_THAT(run.trained.at("worker:0"), ::testing::UnorderedElementsAreArray(expected));
  EXPECT_THAT(run.trained.at("chief:0"), ::testing::IsEmpty());
}

// A worker serves the chief's program from its first fit, whose dataset it holds: a later fit's
// closures carry their batches, and train on them.
TEST(FitOnParameterServers, ALaterFitOfTheProgramSendsItsBatchesWithTheClosures) {
  // Unshuffled: the tasks of this process share its passes' numbers, and so their orders.
  const Tensor x = stateless_random_normal({60, 4}, {8, 3});
  const data::Dataset later =
      data::Dataset::from_tensor_slices({x, argmax(slice(x, {Slice{}, Slice{0, 3}}), -1)}).batch(8);
  const ClusterRun run = fit_on_a_cluster(1, "", rows(1), later);
  EXPECT_THAT(run.errors, ::testing::IsEmpty());
  std::vector<uint64_t> expected;
  data::Dataset::Iterator it = rows(1).repeat().begin();
  for (int i = 0; i < 3 * 8; ++i) expected.push_back(digest64(*it.next()));
  for (const data::Element& batch : later) expected.push_back(digest64(batch));
  EXPECT_THAT(run.trained.at("worker:0"), ::testing::UnorderedElementsAreArray(expected));
}

// A worker whose pipeline differs (another shuffle seed) cannot take the chief's iterator state;
// one whose rows differ in the same pipeline reads other batches at the chief's positions. Either
// way its first closure fails naming it, and so does the chief's fit, before any step trains.
TEST(FitOnParameterServers, AWorkerWhoseDatasetDiffersFromTheChiefsFailsTheFitNamingIt) {
  const std::vector<std::pair<data::Dataset, std::string>> cases = {
      {rows(2), "fit: worker:0 cannot read the chief's training data"},
      {rows(1, /*key=*/8), "fit: worker:0 read another batch 0 (lineage "}};
  for (const auto& [other, error] : cases) {
    const ClusterRun run = fit_on_a_cluster(1, "worker:0", other);
    ASSERT_TRUE(run.errors.count("chief:0")) << error;
    EXPECT_THAT(run.errors.at("chief:0"), ::testing::HasSubstr(error));
    EXPECT_THAT(run.errors.at("chief:0"),
                ::testing::HasSubstr("every task must build the same training dataset"));
    EXPECT_THAT(run.trained.at("worker:0"), ::testing::IsEmpty());
  }
}

}  // namespace
}  // namespace weft::nn
