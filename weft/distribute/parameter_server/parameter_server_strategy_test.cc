// ParameterServerStrategy with its five tasks (a chief, two workers, two ps tasks) on threads of
// this process, each with its own TF_CONFIG, over real gRPC on 127.0.0.1: variables made in the
// chief's scope live on the ps tasks (round-robin, or cut by a partitioner into shards), every
// task reads the chief's values from there, an assignment on the chief is written through, the
// workers and ps tasks serve until the chief is done, and a cluster without a ps job is refused.
// (Real processes under weft launch are the command-line tests'.)
#include "weft/distribute/parameter_server/parameter_server_strategy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <latch>

#include "weft/autodiff/tape.h"
#include "weft/core/errors.h"
#include "weft/distribute/cluster/local_ports.h"
#include "weft/distribute/cluster/tf_config.h"
#include "weft/distribute/parameter_server/cluster_coordinator.h"
#include "weft/distribute/parameter_server/sharded_variable.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/linalg.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/optim/adam.h"
#include "weft/testing/ps_cluster.h"

namespace weft::distribute {
namespace {

using ::testing::HasSubstr;

// The tasks of a cluster of 2 workers and 2 ps tasks, in testing::ps_tf_config's port order.
const char* kTasks[] = {"chief:0", "worker:0", "worker:1", "ps:0", "ps:1"};

ParameterServerOptions options() {
  ParameterServerOptions o;
  o.coordination.token = "0123456789abcdef";
  o.startup_timeout = std::chrono::seconds(30);
  o.variable_partitioner = MaxSizePartitioner{24, std::nullopt};  // at most 3 rows of 2 floats
  return o;
}

Tensor iota(const Shape& shape, float start) {
  std::vector<float> v(static_cast<size_t>(num_elements(shape)));
  for (auto& x : v) x = start++;
  return Tensor::from_vector(v, shape);
}

// What one task's variables read as: the small one, then the sharded one.
struct Seen {
  std::vector<float> small, sharded;
};

TEST(ParameterServerStrategy, VariablesLiveOnThePsTasksAndEveryTaskReadsTheChiefsValues) {
  ReservedLocalPorts ports(5);
  std::promise<void> assigned;
  std::shared_future<void> assigned_future = assigned.get_future().share();
  std::latch workers_read(2);  // the chief ends the job only after the workers have read
  auto run_task = [&](const std::string& task) {
    auto resolver = cluster_resolver::TFConfigClusterResolver::from_json(
        testing::ps_tf_config(ports, task, 2, 2));
    ParameterServerStrategy strategy(resolver, options());
    EXPECT_EQ(strategy.task(), task);
    EXPECT_EQ(strategy.num_workers(), 2);
    EXPECT_EQ(strategy.num_ps(), 2);
    EXPECT_EQ(strategy.name(), "parameter_server");
    std::optional<Variable> small, sharded;
    {
      auto scope = strategy.scope();
      // Every task makes them with its own initial values: the chief's are the ones kept.
      const float start = strategy.is_chief() ? 1.0f : 100.0f;
      small.emplace(iota({3}, start), "small");
      sharded.emplace(iota({5, 2}, start), "sharded");  // 3 + 2 rows on ps:1 and ps:0
    }
    Seen seen;
    if (strategy.is_chief()) {
      seen.small = small->value().to_vector<float>();
      small->assign(iota({3}, 40.0f));
      sharded->assign_add(full({5, 2}, 1000.0f));
      assigned.set_value();
      seen.sharded = sharded->value().to_vector<float>();
      // TF's ShardedVariable: its shards and their tasks, and lookups that read only the rows
      // they need, each from its shard's task.
      ShardedVariable view(*sharded);
      EXPECT_EQ(view.num_shards(), 2);
      if (view.num_shards() == 2) {
        EXPECT_EQ(view.shards()[0].first_row, 0);
        EXPECT_EQ(view.shards()[0].shape, (Shape{3, 2}));
        EXPECT_EQ(view.shards()[1].first_row, 3);
        EXPECT_EQ(view.shards()[1].shape, (Shape{2, 2}));
        EXPECT_NE(view.shards()[0].task, view.shards()[1].task);
      }
      EXPECT_EQ(view.read_value().to_vector<float>(), seen.sharded);
      const Tensor ids = Tensor::from_vector<int64_t>({4, 0, 4, 3, 2, 1}, {2, 3});
      const Tensor rows = embedding_lookup(*sharded, ids);
      EXPECT_EQ(rows.shape(), (Shape{2, 3, 2}));
      EXPECT_EQ(rows.to_vector<float>(), gather(sharded->value(), ids).to_vector<float>());
      EXPECT_EQ(embedding_lookup(*sharded, Tensor::from_vector<int32_t>({1})).to_vector<float>(),
                (std::vector<float>{1003, 1004}));
      EXPECT_THROW(embedding_lookup(*sharded, Tensor::from_vector<int64_t>({5})), InvalidArgument);
      EXPECT_TRUE(ShardedVariable::is(*small));
      Variable here(iota({2}, 0.0f), "here");  // made outside the scope
      EXPECT_FALSE(ShardedVariable::is(here));
      EXPECT_THROW(ShardedVariable{here}, InvalidArgument);
      // The chief's coordinator runs closures on the strategy's workers.
      ClusterCoordinator coordinator(strategy);
      EXPECT_EQ(coordinator.num_workers(), 2);
      auto answer = register_function(
          "test/answer", [](const ClosureArgs&) { return std::vector<Tensor>{full({1}, 42.0f)}; });
      std::vector<RemoteValue> answers;
      for (int i = 0; i < 6; ++i) answers.push_back(coordinator.schedule(answer));
      coordinator.join();
      for (auto& a : answers) EXPECT_EQ(a.fetch()[0].to_vector<float>(), std::vector<float>{42});
      workers_read.wait();
    } else {
      if (strategy.task().rfind("worker", 0) == 0) {
        assigned_future.wait();
        seen.small = small->value().to_vector<float>();
        seen.sharded = sharded->value().to_vector<float>();
        workers_read.count_down();
      }
      EXPECT_THROW(ClusterCoordinator{strategy}, FailedPrecondition);
      strategy.join();  // until the chief is done
    }
    return seen;
  };
  std::vector<std::future<Seen>> tasks;
  for (const char* t : kTasks) tasks.push_back(std::async(std::launch::async, run_task, t));
  std::vector<Seen> seen;
  for (auto& t : tasks) seen.push_back(t.get());
  EXPECT_EQ(seen[0].small, (std::vector<float>{1, 2, 3}));  // the chief's, pulled back
  std::vector<float> expected;
  for (int i = 1; i <= 10; ++i) expected.push_back(1000.0f + static_cast<float>(i));
  EXPECT_EQ(seen[0].sharded, expected);
  for (int w : {1, 2}) {
    EXPECT_EQ(seen[static_cast<size_t>(w)].small, (std::vector<float>{40, 41, 42}));
    EXPECT_EQ(seen[static_cast<size_t>(w)].sharded, expected);
  }
}

// A linear model's step on a batch (x, y): the mean squared error, and its gradients.
std::pair<Tensor, optim::GradsAndVars> mse_step(const Variable& kernel, const Variable& bias,
                                                const Tensor& x, const Tensor& y) {
  GradientTape tape;
  Tensor loss = mean(square(sub(add(matmul(x, kernel), bias), y)));
  std::vector<Tensor> g = tape.gradient(loss, {kernel, bias});
  return {loss, {{g[0], kernel}, {g[1], bias}}};
}

// Training through closures: a worker's step (Optimizer::apply_gradients on variables that live
// on the ps tasks, the kernel cut into two shards) is staged there and applied at the closure's
// commit. With one worker the closures run one after another, so the variables and Adam's
// iterations end as the same Adam run in one process leaves them, bit for bit. A closure that
// fails after its step has that step and its assignment dropped; one that returns has its
// assignment applied once. A closure of two steps trains as two steps in one process, its second
// step reading its first's update.
TEST(ParameterServerStrategy, ClosuresTrainTheVariablesOnThePsTasksAsOneProcessWould) {
  ReservedLocalPorts ports(4);
  const char* tasks[] = {"chief:0", "worker:0", "ps:0", "ps:1"};
  const Tensor k0 = iota({5, 2}, 1.0f), b0 = iota({2}, -1.0f);
  auto batch = [](int i) {
    return std::pair{mul(iota({4, 5}, static_cast<float>(i)), 0.1f), iota({4, 2}, 0.5f)};
  };
  std::promise<void> registered;
  std::shared_future<void> registered_future = registered.get_future().share();
  std::vector<float> sync_step;  // the kernel after the synchronous step
  std::vector<float> two_steps;  // the kernel and bias after the closure of two steps
  auto run_task = [&](const std::string& task) -> std::vector<float> {
    auto resolver = cluster_resolver::TFConfigClusterResolver::from_json(
        testing::ps_tf_config(ports, task, /*workers=*/1, /*ps=*/2));
    // Made before the strategy, so that they outlive its worker service's thread, which runs the
    // closures that use them (its end is what ThreadSanitizer sees ordered before theirs).
    std::optional<Variable> kernel, bias, counter;
    std::optional<optim::Adam> adam;
    ParameterServerStrategy strategy(resolver, options());
    {
      auto scope = strategy.scope();
      kernel.emplace(strategy.is_chief() ? k0 : zeros({5, 2}), "kernel");
      bias.emplace(strategy.is_chief() ? b0 : zeros({2}), "bias");
      counter.emplace(Tensor::scalar(0.0, kFloat32), "counter", /*trainable=*/false);
      adam.emplace(optim::AdamOptions{.learning_rate = 0.05});  // iterations on a ps task too
    }
    if (strategy.task() == "worker:0") {
      register_function("test/train_step", [&](const ClosureArgs& args) {
        auto [loss, gv] = mse_step(*kernel, *bias, args.tensor(0), args.tensor(1));
        adam->apply_gradients(gv);
        return std::vector<Tensor>{loss};
      });
      register_function("test/step_then_fail", [&](const ClosureArgs& args) -> std::vector<Tensor> {
        adam->apply_gradients(mse_step(*kernel, *bias, args.tensor(0), args.tensor(1)).second);
        counter->assign_add(Tensor::scalar(1.0, kFloat32));
        throw InvalidArgument("the step after it failed");
      });
      // Half of a batch's step, its loss the sum of its squared errors over the whole batch's count
      // (synchronous training).
      register_function("test/half_step", [&](const ClosureArgs& args) {
        GradientTape tape;
        Tensor errors = square(sub(add(matmul(args.tensor(0), *kernel), *bias), args.tensor(1)));
        Tensor loss = div(sum(errors), static_cast<double>(args.tensor(2).item<int64_t>()));
        std::vector<Tensor> g = tape.gradient(loss, {*kernel, *bias});
        adam->apply_gradients({{g[0], *kernel}, {g[1], *bias}});
        return std::vector<Tensor>{};
      });
      // Two steps in one closure (as steps_per_execution makes): each counts an iteration.
      register_function("test/two_steps", [&](const ClosureArgs& args) {
        for (int i = 0; i < 4; i += 2) {
          adam->apply_gradients(
              mse_step(*kernel, *bias, args.tensor(i), args.tensor(i + 1)).second);
        }
        return std::vector<Tensor>{};
      });
      // An assignment in a closure is applied with the closure, once.
      register_function("test/count", [&](const ClosureArgs&) {
        counter->assign_add(Tensor::scalar(1.0, kFloat32));
        return std::vector<Tensor>{};
      });
      registered.set_value();
    }
    if (!strategy.is_chief()) {
      strategy.join();
      return {};
    }
    registered_future.wait();
    ClusterCoordinator coordinator(strategy);
    std::vector<RemoteValue> losses;
    for (int i = 0; i < 5; ++i) {
      auto [x, y] = batch(i);
      losses.push_back(coordinator.schedule(RemoteFunction{"test/train_step"}, {x, y}));
    }
    coordinator.join();
    EXPECT_EQ(adam->iterations().value().item<int64_t>(), 5);
    std::vector<float> trained = kernel->value().to_vector<float>();
    for (float b : bias->value().to_vector<float>()) trained.push_back(b);
    auto [x, y] = batch(9);
    coordinator.schedule(RemoteFunction{"test/step_then_fail"}, {x, y});
    EXPECT_THAT([&] { coordinator.join(); },
                ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("the step after it failed")));
    EXPECT_EQ(adam->iterations().value().item<int64_t>(), 5);
    std::vector<float> after = kernel->value().to_vector<float>();
    for (float b : bias->value().to_vector<float>()) after.push_back(b);
    EXPECT_EQ(after, trained) << "the failed closure's step was applied";
    EXPECT_EQ(counter->value().item<float>(), 0.0f)
        << "the failed closure's assignment was applied";
    for (int i = 0; i < 3; ++i) coordinator.schedule(RemoteFunction{"test/count"});
    coordinator.join();
    EXPECT_EQ(counter->value().item<float>(), 3.0f);
    // Two steps in one closure: the second reads the first's update (applied to the worker's
    // copy as the ps tasks apply it at the commit), so they train as two steps in one process.
    coordinator.schedule(RemoteFunction{"test/two_steps"},
                         {batch(6).first, batch(6).second, batch(7).first, batch(7).second});
    coordinator.join();
    EXPECT_EQ(adam->iterations().value().item<int64_t>(), 7);
    two_steps = kernel->value().to_vector<float>();
    for (float b : bias->value().to_vector<float>()) two_steps.push_back(b);

    // A synchronous step: the two halves of batch 5, staged and committed together, make one
    // Adam step on the whole batch (up to the order of the sums); aborted, they make none.
    const Tensor x5 = batch(5).first, y5 = batch(5).second;  // (a lambda below reads them)
    const Tensor elements = Tensor::scalar(8, kInt64);  // the whole batch's: the mean's divisor
    auto halves = [&] {
      std::vector<RemoteValue> parts;
      for (int64_t lo : {0, 2}) {
        parts.push_back(coordinator.schedule(
            RemoteFunction{"test/half_step"},
            {slice(x5, {Slice{lo, lo + 2}}), slice(y5, {Slice{lo, lo + 2}}), elements},
            {.commit = false}));
      }
      for (auto& p : parts) p.fetch();
      return parts;
    };
    coordinator.abort_staged(halves());
    EXPECT_EQ(adam->iterations().value().item<int64_t>(), 7);
    EXPECT_EQ(kernel->value().to_vector<float>(),
              std::vector<float>(two_steps.begin(), two_steps.begin() + 10));
    std::vector<RemoteValue> parts = halves();
    EXPECT_THROW(coordinator.commit_together({parts[0], losses[0]}), FailedPrecondition);
    coordinator.commit_together(parts);
    EXPECT_EQ(adam->iterations().value().item<int64_t>(), 8);
    sync_step = kernel->value().to_vector<float>();
    for (const auto& loss : losses) trained.push_back(loss.fetch()[0].item<float>());
    return trained;
  };
  std::vector<std::future<std::vector<float>>> running;
  for (const char* t : tasks) running.push_back(std::async(std::launch::async, run_task, t));
  std::vector<float> trained = running[0].get();
  for (size_t i = 1; i < running.size(); ++i) running[i].get();

  optim::Adam local(optim::AdamOptions{.learning_rate = 0.05});
  Variable kernel(k0, "kernel"), bias(b0, "bias");
  std::vector<float> losses;
  for (int i = 0; i < 5; ++i) {
    auto [x, y] = batch(i);
    auto [loss, gv] = mse_step(kernel, bias, x, y);
    local.apply_gradients(gv);
    losses.push_back(loss.item<float>());
  }
  // The variables, then each closure's loss (computed on the values the closures before it left).
  std::vector<float> expected = kernel.value().to_vector<float>();
  for (float b : bias.value().to_vector<float>()) expected.push_back(b);
  for (float l : losses) expected.push_back(l);
  EXPECT_EQ(trained, expected);
  for (int b : {6, 7}) {
    local.apply_gradients(mse_step(kernel, bias, batch(b).first, batch(b).second).second);
  }
  std::vector<float> after_two = kernel.value().to_vector<float>();
  for (float b : bias.value().to_vector<float>()) after_two.push_back(b);
  EXPECT_EQ(two_steps, after_two);
  auto [x5, y5] = batch(5);
  local.apply_gradients(mse_step(kernel, bias, x5, y5).second);
  std::vector<float> one_step = kernel.value().to_vector<float>();
  ASSERT_EQ(sync_step.size(), one_step.size());
  for (size_t i = 0; i < one_step.size(); ++i) EXPECT_NEAR(sync_step[i], one_step[i], 1e-6) << i;
}

TEST(ParameterServerStrategy, AClusterWithoutPsTasksOrAStrangersTaskIsRefused) {
  auto resolver = cluster_resolver::TFConfigClusterResolver::from_json(
      R"({"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]},
          "task": {"type": "chief", "index": 0}})");
  try {
    ParameterServerStrategy strategy(resolver, options());
    FAIL() << "a cluster without ps tasks was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("TF_CONFIG's cluster has no \"ps\" job"));
  }
  auto evaluator = cluster_resolver::TFConfigClusterResolver::from_json(
      R"({"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"],
          "evaluator": ["127.0.0.1:4"]}, "task": {"type": "evaluator", "index": 0}})");
  EXPECT_THROW(ParameterServerStrategy(evaluator, options()), InvalidArgument);
  // A staleness bound below 0, or for synchronous training, is refused before anything starts.
  auto chief = cluster_resolver::TFConfigClusterResolver::from_json(
      R"({"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]},
          "task": {"type": "chief", "index": 0}})");
  ParameterServerOptions bad = options();
  bad.max_staleness = -1;
  EXPECT_THAT([&] { ParameterServerStrategy strategy(chief, bad); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  HasSubstr("max_staleness must be at least 0, got -1")));
  bad.max_staleness = 2;
  bad.synchronous = true;
  EXPECT_THAT([&] { ParameterServerStrategy strategy(chief, bad); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  HasSubstr("max_staleness bounds asynchronous training")));
  // Backup workers are for synchronous training, and leave at least one worker a part.
  ParameterServerOptions backups = options();
  backups.backup_workers = 1;
  EXPECT_THAT([&] { ParameterServerStrategy strategy(chief, backups); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr(
                  "backup_workers = 1 is for synchronous training (synchronous = true); it must "
                  "be at least 0 and fewer than the 1 workers")));
  backups.synchronous = true;
  EXPECT_THAT([&] { ParameterServerStrategy strategy(chief, backups); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  HasSubstr("backup_workers = 1; it must be at least 0 and fewer than the 1 "
                            "workers, which leaves the rest each step's parts")));
  backups.backup_workers = -1;
  EXPECT_THROW(ParameterServerStrategy(chief, backups), InvalidArgument);
}

// The chief's failure reaches a worker waiting in join(), naming the chief.
TEST(ParameterServerStrategy, AWorkerInJoinHearsThatTheChiefFailed) {
  ReservedLocalPorts ports(5);
  auto run_task = [&](const std::string& task) -> std::string {
    auto resolver = cluster_resolver::TFConfigClusterResolver::from_json(
        testing::ps_tf_config(ports, task, 2, 2));
    // A task may hear it while it still joins the cluster (the chief can report before the
    // others' strategies are made): the same error, from the constructor.
    try {
      ParameterServerStrategy strategy(resolver, options());
      if (strategy.is_chief()) {
        strategy.extended().report_error("Internal: the coordinator crashed");
        return "";
      }
      strategy.join();
      return "join returned";
    } catch (const Unavailable& e) {
      return e.what();
    }
  };
  std::vector<std::future<std::string>> tasks;
  for (const char* t : kTasks) tasks.push_back(std::async(std::launch::async, run_task, t));
  for (size_t i = 1; i < tasks.size(); ++i) {
    EXPECT_THAT(tasks[i].get(), HasSubstr("task chief:0 failed: Internal: the coordinator crashed"))
        << kTasks[i];
  }
  tasks[0].get();
}

// put() keeps a value in 1 MiB pieces and get() puts it together on any task; every task has the
// chief's run id, and counts its own calls.
TEST(ParameterServerStrategy, ValuesOfAnySizeAreSharedAndEveryTaskKnowsTheRun) {
  ReservedLocalPorts ports(5);
  std::string large(coordination::kMaxValueBytes * 5 / 2, '\0');
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>(i * 7 + i / 4096);
  struct Got {
    std::string large, empty;
    uint64_t run = 0;
    int64_t first_call = -1, second_call = -1;
  };
  auto run_task = [&](const std::string& task) {
    auto resolver = cluster_resolver::TFConfigClusterResolver::from_json(
        testing::ps_tf_config(ports, task, 2, 2));
    ParameterServerStrategy strategy(resolver, options());
    Got got;
    got.run = strategy.run_id();
    got.first_call = strategy.next_call();
    got.second_call = strategy.next_call();
    if (strategy.is_chief()) {
      strategy.put("test/large", large);
      strategy.put("test/empty", "");
      // Every other task has read them before the chief ends the job.
      strategy.get("test/read/worker:0", std::chrono::seconds(30));
    } else {
      got.large = strategy.get("test/large", std::chrono::seconds(30));
      got.empty = strategy.get("test/empty", std::chrono::seconds(30));
      if (task == "worker:0") strategy.put("test/read/worker:0", "1");
      EXPECT_THROW(strategy.get("test/never", std::chrono::milliseconds(100)), DeadlineExceeded);
      strategy.join();
    }
    return got;
  };
  std::vector<std::future<Got>> tasks;
  for (const char* t : {"chief:0", "worker:0"}) {
    tasks.push_back(std::async(std::launch::async, run_task, t));
  }
  for (const char* t : {"worker:1", "ps:0", "ps:1"}) {
    tasks.push_back(std::async(std::launch::async, [&, t] {
      auto resolver = cluster_resolver::TFConfigClusterResolver::from_json(
          testing::ps_tf_config(ports, t, 2, 2));
      ParameterServerStrategy strategy(resolver, options());
      Got got;
      got.run = strategy.run_id();
      strategy.join();
      return got;
    }));
  }
  std::vector<Got> got;
  for (auto& t : tasks) got.push_back(t.get());
  EXPECT_NE(got[0].run, 0u);
  for (const Got& g : got) EXPECT_EQ(g.run, got[0].run);
  EXPECT_EQ(got[0].first_call, 0);
  EXPECT_EQ(got[0].second_call, 1);
  EXPECT_EQ(got[1].first_call, 0);
  EXPECT_TRUE(got[1].large == large) << "a value of " << got[1].large.size() << " bytes";
  EXPECT_EQ(got[1].empty, "");
}

}  // namespace
}  // namespace weft::distribute
