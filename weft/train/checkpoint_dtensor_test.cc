// Checkpoints of DVariables in global coordinates: each distinct block is written once, and a
// restore reads the stored pieces that overlap its own blocks, on any mesh and layout. A
// data-parallel model on 8 devices restores into a tensor-parallel one on 4 (and back), with its
// Adam slots, and training continues from the same loss.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "weft/autodiff/tape.h"
#include "weft/checkpoint/checkpoint_io.h"
#include "weft/core/config.h"
#include "weft/dtensor/clients.h"
#include "weft/dtensor/dtensor.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/linalg.h"
#include "weft/ops/nn.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/optim/adam.h"
#include "weft/testing/dtensor_clients.h"
#include "weft/train/checkpoint.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using dtensor::Layout;
using dtensor::Mesh;

// A two-layer MLP whose weights are DVariables laid out by `specs` (w1, b1, w2, b2).
class LaidOutMlp : public Trackable {
 public:
  LaidOutMlp(const Mesh& mesh, const std::vector<std::vector<std::string>>& specs, int64_t seed) {
    const std::vector<Shape> shapes{{12, 8}, {8}, {8, 4}, {4}};
    for (size_t i = 0; i < shapes.size(); ++i) {
      Tensor init = stateless_random_uniform(shapes[i], {seed, static_cast<int64_t>(i)}, -1, 1);
      vars_.push_back(dtensor::DVariable(dtensor::copy_to_mesh(init, Layout(specs[i], mesh)),
                                         "w" + std::to_string(i)));
    }
  }
  std::vector<std::pair<std::string, Variable>> tracked_variables() const override {
    std::vector<std::pair<std::string, Variable>> out;
    for (const Variable& v : vars_) out.emplace_back(v.name(), v);
    return out;
  }
  const std::vector<Variable>& vars() const { return vars_; }
  Tensor loss(const Tensor& x, const Tensor& y) const {
    Tensor h = relu(add(matmul(x, vars_[0]), vars_[1]));
    return mean(sparse_softmax_cross_entropy_with_logits(y, add(matmul(h, vars_[2]), vars_[3])));
  }
  // One step of `adam`; returns the loss before it.
  double step(optim::Adam& adam, const Tensor& x, const Tensor& y) const {
    GradientTape tape;
    Tensor l = loss(x, y);
    std::vector<Tensor> g = tape.gradient(l, vars_);
    optim::GradsAndVars gv;
    for (size_t i = 0; i < vars_.size(); ++i) gv.emplace_back(g[i], vars_[i]);
    adam.apply_gradients(gv);
    return l.item<double>();
  }

 private:
  std::vector<Variable> vars_;
};

std::vector<float> global_values(const Tensor& t) {
  return dtensor::relayout(
             t, Layout::replicated(dtensor::fetch_layout(t).mesh(), static_cast<int>(t.rank())))
      .to_vector<float>();
}

class DTensorCheckpoint : public weft::testing::LogicalDevices {
 protected:
  void SetUp() override {
    LogicalDevices::SetUp();
    // One directory for the clients of `weft launch`, which are its children.
    const int owner = weft::testing::dtensor_test_clients() > 1 ? ::getppid() : ::getpid();
    dir_ =
        (fs::temp_directory_path() / ("weft_dtensor_checkpoint_" + std::to_string(owner))).string();
    remove_dir();
  }
  void TearDown() override {
    remove_dir();
    LogicalDevices::TearDown();
  }
  // Removes dir_, which the clients share: one removes it while the others wait.
  void remove_dir() const {
    weft::testing::clients_barrier();
    if (dtensor::client_id() == 0) fs::remove_all(dir_);
    weft::testing::clients_barrier();
  }
  std::string dir_;
};

TEST_F(DTensorCheckpoint, DataParallelRestoresIntoTensorParallelAndBack) {
  const std::string u = dtensor::kUnsharded;
  Mesh batch = weft::testing::test_mesh({{"batch", 8}});
  Mesh model = weft::testing::test_mesh({{"model", 4}});
  const std::vector<std::vector<std::string>> replicated{{u, u}, {u}, {u, u}, {u}};
  const std::vector<std::vector<std::string>> megatron{{u, "model"}, {"model"}, {"model", u}, {u}};
  Tensor x = stateless_random_uniform({16, 12}, {5, 6}, -1, 1);
  Tensor y = cast(mul(add(stateless_random_uniform({16}, {7, 8}), 1.0), 1.99), kInt64);
  auto batch_x = dtensor::copy_to_mesh(x, Layout({"batch", u}, batch));
  auto batch_y = dtensor::copy_to_mesh(y, Layout({"batch"}, batch));
  auto model_x = dtensor::copy_to_mesh(x, Layout::replicated(model, 2));
  auto model_y = dtensor::copy_to_mesh(y, Layout::replicated(model, 1));

  for (bool data_first : {true, false}) {
    remove_dir();
    LaidOutMlp from(data_first ? batch : model, data_first ? replicated : megatron, 1);
    LaidOutMlp into(data_first ? model : batch, data_first ? megatron : replicated, 2);
    const Tensor& fx = data_first ? batch_x : model_x;
    const Tensor& fy = data_first ? batch_y : model_y;
    const Tensor& ix = data_first ? model_x : batch_x;
    const Tensor& iy = data_first ? model_y : batch_y;
    optim::Adam adam_from(optim::AdamOptions{.learning_rate = 0.01});
    optim::Adam adam_into(optim::AdamOptions{.learning_rate = 0.01});
    adam_into.build(into.vars());
    for (int s = 0; s < 2; ++s) from.step(adam_from, fx, fy);
    train::Checkpoint saver({{"model", &from}, {"optimizer", &adam_from}}, dir_);
    std::string saved = saver.save(2);
    // Each distinct block once: replicated weights whole, sharded ones in their 4 blocks.
    size_t entries = checkpoint::read_index(saved).tensors.size();
    EXPECT_EQ(entries, data_first ? 4u * 3 + 1 : 3u * (4 + 4 + 4 + 1) + 1) << "entries";

    train::Checkpoint restorer({{"model", &into}, {"optimizer", &adam_into}}, dir_);
    restorer.restore(saved);
    for (size_t i = 0; i < 4; ++i) {
      const Variable& a = from.vars()[i];
      const Variable& b = into.vars()[i];
      // The layout stays the restoring model's; the values are the saved ones, bit for bit.
      EXPECT_EQ(dtensor::fetch_layout(b.value()).mesh(), (data_first ? model : batch));
      EXPECT_EQ(global_values(b.value()), global_values(a.value())) << i;
      EXPECT_EQ(global_values(adam_into.get_slot(b, "m").value()),
                global_values(adam_from.get_slot(a, "m").value()))
          << i;
    }
    // Training continues from the same loss (the layouts round differently, so to 1e-6).
    double next_from = from.step(adam_from, fx, fy);
    double next_into = into.step(adam_into, ix, iy);
    EXPECT_NEAR(next_into, next_from, 1e-6 * std::abs(next_from)) << data_first;
  }
}

// A checkpoint that one process wrote, of a data-parallel model on a mesh of its own 4 devices,
// restores into a tensor-parallel model on {"model": 4}: across 2 processes under `weft launch`
// (DTensorCheckpointAcross2Clients), each holding 2 of its devices.
TEST_F(DTensorCheckpoint, OneProcessWritesAndTheClientsOfAMeshRestore) {
  const std::string u = dtensor::kUnsharded;
  const std::vector<std::string> first4{"CPU:0", "CPU:1", "CPU:2", "CPU:3"};
  Mesh own = dtensor::create_mesh({{"batch", 4}}, first4);  // this process's devices only
  Mesh model = weft::testing::test_mesh({{"model", 4}});
  Tensor x = stateless_random_uniform({16, 12}, {9, 6}, -1, 1);
  Tensor y = cast(mul(add(stateless_random_uniform({16}, {9, 8}), 1.0), 1.99), kInt64);
  // Every client trains the same model alone (seeded); client 0 alone saves it.
  LaidOutMlp from(own, {{u, u}, {u}, {u, u}, {u}}, 3);
  optim::Adam adam_from(optim::AdamOptions{.learning_rate = 0.01});
  Tensor fx = dtensor::copy_to_mesh(x, Layout({"batch", u}, own));
  Tensor fy = dtensor::copy_to_mesh(y, Layout({"batch"}, own));
  for (int s = 0; s < 2; ++s) from.step(adam_from, fx, fy);
  const std::string saved = dir_ + "/ckpt-2";
  if (dtensor::client_id() == 0) {
    train::Checkpoint saver({{"model", &from}, {"optimizer", &adam_from}}, dir_);
    ASSERT_EQ(saver.save(2), saved);
  }
  dtensor::barrier(model);

  LaidOutMlp into(model, {{u, "model"}, {"model"}, {"model", u}, {u}}, 4);
  optim::Adam adam_into(optim::AdamOptions{.learning_rate = 0.01});
  adam_into.build(into.vars());
  train::Checkpoint({{"model", &into}, {"optimizer", &adam_into}}, dir_).restore(saved);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(global_values(into.vars()[i].value()), global_values(from.vars()[i].value())) << i;
  }
  const double next_from = from.step(adam_from, fx, fy);
  const double next_into =
      into.step(adam_into, dtensor::copy_to_mesh(x, Layout::replicated(model, 2)),
                dtensor::copy_to_mesh(y, Layout::replicated(model, 1)));
  EXPECT_NEAR(next_into, next_from, 1e-6 * std::abs(next_from));
}

}  // namespace
}  // namespace weft
