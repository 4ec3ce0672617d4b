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

#include "weft/core/errors.h"
#include "weft/distribute/cluster/local_ports.h"
#include "weft/distribute/cluster/tf_config.h"
#include "weft/distribute/parameter_server/cluster_coordinator.h"
#include "weft/ops/creation.h"

namespace weft::distribute {
namespace {

using ::testing::HasSubstr;

const char* kTasks[] = {"chief:0", "worker:0", "worker:1", "ps:0", "ps:1"};

// TF_CONFIG for task `task` of the cluster at `ports` (in kTasks' order).
std::string tf_config(const ReservedLocalPorts& ports, const std::string& task) {
  auto quoted = [&](int i) { return "\"" + ports.address(i) + "\""; };
  const std::string type = task.substr(0, task.find(':'));
  const std::string index = task.substr(task.find(':') + 1);
  return R"({"cluster": {"chief": [)" + quoted(0) + R"(], "worker": [)" + quoted(1) + ", " +
         quoted(2) + R"(], "ps": [)" + quoted(3) + ", " + quoted(4) + R"(]}, "task": {"type": ")" +
         type + R"(", "index": )" + index + "}}";
}

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
  auto run_task = [&](const std::string& task) {
    auto resolver = cluster_resolver::TFConfigClusterResolver::from_json(tf_config(ports, task));
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
      // The chief's coordinator runs closures on the strategy's workers.
      ClusterCoordinator coordinator(strategy);
      EXPECT_EQ(coordinator.num_workers(), 2);
      auto answer = register_function(
          "test/answer", [](const ClosureArgs&) { return std::vector<Tensor>{full({1}, 42.0f)}; });
      std::vector<RemoteValue> answers;
      for (int i = 0; i < 6; ++i) answers.push_back(coordinator.schedule(answer));
      coordinator.join();
      for (auto& a : answers) EXPECT_EQ(a.fetch()[0].to_vector<float>(), std::vector<float>{42});
    } else {
      if (strategy.task().rfind("worker", 0) == 0) {
        assigned_future.wait();
        seen.small = small->value().to_vector<float>();
        seen.sharded = sharded->value().to_vector<float>();
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
}

// The chief's failure reaches a worker waiting in join(), naming the chief.
TEST(ParameterServerStrategy, AWorkerInJoinHearsThatTheChiefFailed) {
  ReservedLocalPorts ports(5);
  auto run_task = [&](const std::string& task) -> std::string {
    auto resolver = cluster_resolver::TFConfigClusterResolver::from_json(tf_config(ports, task));
    ParameterServerStrategy strategy(resolver, options());
    if (strategy.is_chief()) {
      strategy.extended().report_error("Internal: the coordinator crashed");
      return "";
    }
    try {
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

}  // namespace
}  // namespace weft::distribute
