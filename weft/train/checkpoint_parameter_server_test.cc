// A train::Checkpoint of variables that live on parameter servers (ParameterServerStrategy, its
// tasks on threads of this process over real gRPC): each ps task writes the shards it holds, the
// optimizer's slots included (they live beside their variables), and the chief the rest, into one
// checkpoint of the format a single process reads; a cluster with another number of ps tasks and
// other shards restores it, and so does one process without a strategy. Both then take the same
// next step, bit for bit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <future>

#include "weft/autodiff/tape.h"
#include "weft/checkpoint/checkpoint_io.h"
#include "weft/checkpoint/trackable.h"
#include "weft/distribute/cluster/local_ports.h"
#include "weft/distribute/parameter_server/cluster_coordinator.h"
#include "weft/distribute/parameter_server/parameter_server_strategy.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/linalg.h"
#include "weft/ops/reduce.h"
#include "weft/optim/adam.h"
#include "weft/testing/ps_cluster.h"
#include "weft/train/checkpoint.h"

namespace weft::train {
namespace {

namespace ds = weft::distribute;

Tensor iota(const Shape& shape, float start) {
  std::vector<float> v(static_cast<size_t>(num_elements(shape)));
  for (auto& x : v) x = start++;
  return Tensor::from_vector(v, shape);
}

std::pair<Tensor, Tensor> batch(int i) {
  return {mul(iota({4, 5}, static_cast<float>(i)), 0.1f), iota({4, 2}, 0.5f)};
}

optim::GradsAndVars mse_step(const Variable& kernel, const Variable& bias, const Tensor& x,
                             const Tensor& y) {
  GradientTape tape;
  Tensor loss = mean(square(sub(add(matmul(x, kernel), bias), y)));
  std::vector<Tensor> g = tape.gradient(loss, {kernel, bias});
  return {{g[0], kernel}, {g[1], bias}};
}

// The kernel and bias a checkpoint saves under "model/".
struct Weights : Trackable {
  std::optional<Variable> kernel, bias;
  std::vector<std::pair<std::string, Variable>> tracked_variables() const override {
    return {{"kernel", *kernel}, {"bias", *bias}};
  }
};

// Everything saved, in one list: the kernel, the bias, Adam's iterations, then each variable's m
// and v.
std::vector<float> everything(const Weights& w, const optim::Adam& adam) {
  std::vector<float> out;
  auto append = [&](const Tensor& t) {
    for (float x : cast(t, kFloat32).to_vector<float>()) out.push_back(x);
  };
  append(*w.kernel);
  append(*w.bias);
  append(adam.iterations().value());
  for (const Variable* v : {&*w.kernel, &*w.bias}) {
    for (const char* slot : {"m", "v"}) append(adam.get_slot(*v, slot).value());
  }
  return out;
}

// Runs a cluster of a chief, one worker and `ps` ps tasks (shards of at most `max_shard_bytes`)
// whose worker trains with Adam as "<name>": the chief makes the variables (from `k0`, `b0`) and
// the optimizer in the strategy's scope, builds the optimizer's slots, and calls chief(...).
void run_cluster(
    int ps, int64_t max_shard_bytes, const std::string& name, const Tensor& k0, const Tensor& b0,
    const std::function<void(ds::ClusterCoordinator&, Weights&, optim::Adam&)>& chief) {
  ds::ReservedLocalPorts ports(static_cast<size_t>(2 + ps));
  std::promise<void> registered;
  std::shared_future<void> registered_future = registered.get_future().share();
  auto run_task = [&](const std::string& task) {
    ds::ParameterServerOptions options = testing::ps_test_options();
    options.variable_partitioner = ds::MaxSizePartitioner{max_shard_bytes, std::nullopt};
    // Made before the strategy, so that they outlive its worker service's thread.
    Weights w;
    std::optional<optim::Adam> adam;
    ds::ParameterServerStrategy strategy = testing::ps_strategy(ports, task, 1, ps, options);
    {
      auto scope = strategy.scope();
      w.kernel.emplace(strategy.is_chief() ? k0 : zeros({5, 2}), "kernel");
      w.bias.emplace(strategy.is_chief() ? b0 : zeros({2}), "bias");
      adam.emplace(optim::AdamOptions{.learning_rate = 0.05});
    }
    if (strategy.task() == "worker:0") {
      ds::register_function(name, [&](const ds::ClosureArgs& args) {
        adam->apply_gradients(mse_step(*w.kernel, *w.bias, args.tensor(0), args.tensor(1)));
        return std::vector<Tensor>{};
      });
      registered.set_value();
    }
    if (!strategy.is_chief()) return strategy.join();
    registered_future.wait();
    adam->build({*w.kernel, *w.bias});
    ds::ClusterCoordinator coordinator(strategy);
    chief(coordinator, w, *adam);
  };
  std::vector<std::future<void>> running;
  running.push_back(std::async(std::launch::async, run_task, "chief:0"));
  running.push_back(std::async(std::launch::async, run_task, "worker:0"));
  for (int i = 0; i < ps; ++i) {
    running.push_back(std::async(std::launch::async, run_task, "ps:" + std::to_string(i)));
  }
  for (auto& r : running) r.get();
}

TEST(ParameterServerCheckpoint, SavedOnTwoPsRestoresOnThreeAndInOneProcess) {
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "ps_checkpoint_test").string();
  std::filesystem::remove_all(dir);
  const Tensor k0 = iota({5, 2}, 1.0f), b0 = iota({2}, -1.0f);

  // Two ps tasks, the kernel in shards of up to 3 rows: three steps, then a save.
  std::vector<float> saved;
  run_cluster(2, 24, "ckpt_test/train_on_two", k0, b0, [&](auto& coordinator, auto& w, auto& adam) {
    for (int i = 0; i < 3; ++i) {
      auto [x, y] = batch(i);
      coordinator.schedule(ds::RemoteFunction{"ckpt_test/train_on_two"}, {x, y});
    }
    coordinator.join();
    Checkpoint({{"model", &w}, {"optimizer", &adam}}, dir).save(3);
    saved = everything(w, adam);
  });
  ASSERT_EQ(saved[12], 3.0f) << "iterations";
  EXPECT_NE(saved[13], 0.0f) << "the kernel's m was not trained";
  // Each ps task wrote the shards it holds, as its own part of the checkpoint: the kernel's two
  // (3 and 2 rows), which the chief's part (data-00000) does not hold.
  const checkpoint::CheckpointIndex index = checkpoint::read_index(dir + "/ckpt-3");
  EXPECT_EQ(index.shards.size(), 3u);
  std::vector<std::pair<int64_t, std::string>> kernel;  // each slice's first row, and its file
  for (const checkpoint::TensorEntry& t : index.tensors) {
    if (t.path == "model/kernel") kernel.emplace_back(t.slice_offsets.at(0), t.shard);
  }
  std::sort(kernel.begin(), kernel.end());
  ASSERT_EQ(kernel.size(), 2u);
  EXPECT_EQ(kernel[0].first, 0);
  EXPECT_EQ(kernel[1].first, 3);
  EXPECT_NE(kernel[0].second, kernel[1].second);
  for (const auto& [row, file] : kernel) EXPECT_NE(file, "data-00000-of-00003");

  // Three ps tasks, the kernel in shards of one row, made from other values: restored, then one
  // more step.
  std::vector<float> restored, stepped;
  run_cluster(3, 8, "ckpt_test/train_on_three", zeros({5, 2}), zeros({2}),
              [&](auto& coordinator, auto& w, auto& adam) {
                Checkpoint({{"model", &w}, {"optimizer", &adam}}, dir).restore(dir + "/ckpt-3");
                restored = everything(w, adam);
                auto [x, y] = batch(3);
                coordinator.schedule(ds::RemoteFunction{"ckpt_test/train_on_three"}, {x, y});
                coordinator.join();
                stepped = everything(w, adam);
              });
  EXPECT_EQ(restored, saved);

  // One process, no strategy: the same values, and the same step.
  Weights w;
  w.kernel.emplace(zeros({5, 2}), "kernel");
  w.bias.emplace(zeros({2}), "bias");
  optim::Adam adam(optim::AdamOptions{.learning_rate = 0.05});
  adam.build({*w.kernel, *w.bias});
  Checkpoint({{"model", &w}, {"optimizer", &adam}}, dir).restore(dir + "/ckpt-3");
  EXPECT_EQ(everything(w, adam), saved);
  auto [x, y] = batch(3);
  adam.apply_gradients(mse_step(*w.kernel, *w.bias, x, y));
  EXPECT_EQ(stepped, everything(w, adam));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace weft::train
