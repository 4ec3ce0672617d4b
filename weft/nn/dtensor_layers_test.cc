// Keras's DTensor layers: a Dense whose kernel and bias are DVariables laid out on a mesh, trained
// by a Keras optimizer, against the same layer on one device.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/autodiff/tape.h"
#include "weft/core/config.h"
#include "weft/dtensor/dtensor.h"
#include "weft/nn/dense.h"
#include "weft/ops/creation.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/optim/sgd.h"
#include "weft/testing/dtensor_clients.h"

namespace weft::nn {
namespace {

class DTensorLayers : public weft::testing::LogicalDevices {
 protected:
  DTensorLayers() : LogicalDevices(4) {}
};

TEST_F(DTensorLayers, ADenseLaysOutItsKernelAndBiasAndTrainsAsOnOneDevice) {
  dtensor::Mesh mesh = dtensor::create_mesh({{"batch", 2}, {"model", 2}});
  const std::string u = dtensor::kUnsharded;
  dtensor::Layout kernel_layout({u, "model"}, mesh);
  Dense local(6, "relu", {.kernel_initializer = "ones", .bias_initializer = "ones"});
  Dense laid(
      6, "relu",
      {.kernel_initializer = "ones", .bias_initializer = "ones", .kernel_layout = kernel_layout});
  Tensor x = stateless_random_uniform({8, 4}, {1, 2}, -1, 1);
  Tensor dx = dtensor::copy_to_mesh(x, dtensor::Layout({"batch", u}, mesh));
  optim::SGD sgd_local(optim::SGDOptions{.learning_rate = 0.1});
  optim::SGD sgd_laid(optim::SGDOptions{.learning_rate = 0.1});
  for (int step = 0; step < 2; ++step) {
    for (auto [layer, input, sgd] : {std::tuple{&local, x, &sgd_local}, {&laid, dx, &sgd_laid}}) {
      GradientTape tape;
      Tensor loss = sum((*layer)(input));
      std::vector<Variable> vars = layer->trainable_variables();
      std::vector<Tensor> g = tape.gradient(loss, vars);
      optim::GradsAndVars gv;
      for (size_t i = 0; i < g.size(); ++i) gv.emplace_back(g[i], vars[i]);
      sgd->apply_gradients(gv);
    }
  }
  std::vector<Variable> w = laid.trainable_variables();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(dtensor::fetch_layout(w[0].value()), kernel_layout);
  EXPECT_EQ(dtensor::fetch_layout(w[1].value()), kernel_layout.delete_axes({0}));
  for (size_t i = 0; i < w.size(); ++i) {
    Tensor whole = dtensor::relayout(
        w[i].value(), dtensor::Layout::replicated(mesh, static_cast<int>(w[i].value().rank())));
    std::vector<float> got = whole.to_vector<float>();
    std::vector<float> want = local.trainable_variables()[i].value().to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-6) << i << " " << k;
  }
}

}  // namespace
}  // namespace weft::nn
