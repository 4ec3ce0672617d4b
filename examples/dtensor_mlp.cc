// The DTensor tutorial (seed 002) as it reads: 8 logical CPUs, a mesh {"batch": 8}, replicated
// weights made with call_with_layout, the hand-written Adam on DVariables, batches packed cut
// along "batch", 3 epochs of Fashion-MNIST at batch 128 with the tutorial's per-epoch lines. Then
// where the tutorial points next: tensor parallel on {"model": 4} (the first kernel's columns and
// the second's rows cut, as Megatron: one all-reduce per pair of layers) and 2-D on
// {"batch": 2, "model": 4}. Each run ends with "<run>: test accuracy A". The data-parallel run
// first checks its first step against the one-device model of examples/tutorial_mlp.h. Under
// `weft launch -n 2` each process is a client holding 4 of the 8 devices.
//
//   ./dtensor_mlp [--epochs N] [--runs data,tensor,2d] [--batch-devices 8] [--data-dir DIR]
//   weft launch -n 2 -- ./dtensor_mlp
#include <weft/weft.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tutorial_mlp.h"

namespace dtensor = weft::dtensor;

namespace {

// The tutorial's DenseLayer: DVariables made with call_with_layout, the bias laid out as the
// kernel without its first axis.
class DenseLayer {
 public:
  DenseLayer(int64_t in_dim, int64_t out_dim, const dtensor::Layout& weight_layout, bool relu)
      : relu_(relu) {
    double xavier_lim = std::sqrt(6.0) / std::sqrt(static_cast<double>(in_dim + out_dim));
    w_ = dtensor::DVariable(dtensor::call_with_layout(
        [&] {
          return weft::stateless_random_uniform({in_dim, out_dim}, {22, 23}, -xavier_lim,
                                                xavier_lim);
        },
        weight_layout));
    dtensor::Layout bias_layout = weight_layout.delete_axes({0});
    b_ = dtensor::DVariable(
        dtensor::call_with_layout([&] { return weft::zeros({out_dim}); }, bias_layout));
  }
  weft::Tensor operator()(const weft::Tensor& x) const {
    weft::Tensor z = weft::add(weft::matmul(x, w_), b_);
    return relu_ ? weft::relu(z) : z;
  }
  std::vector<dtensor::DVariable> variables() const { return {w_, b_}; }

 private:
  dtensor::DVariable w_, b_;
  bool relu_;
};

using Mlp = tutorial::Sequential<DenseLayer>;

// The tutorial's Adam, its slots DVariables laid out as their variables.
using Adam = tutorial::Adam<dtensor::DVariable>;
dtensor::DVariable zeros_slot(const dtensor::DVariable& var, const std::string&) {
  auto zeros = [&] { return weft::zeros(var.shape()); };
  return dtensor::DVariable(dtensor::call_with_layout(zeros, var.layout()));
}

// repack_batch: the images and labels cut along "batch" (replicated on a mesh without one).
std::pair<weft::Tensor, weft::Tensor> repack_batch(const weft::Tensor& x, const weft::Tensor& y,
                                                   const dtensor::Mesh& mesh) {
  std::string batch = mesh.contains_dim("batch") ? "batch" : dtensor::kUnsharded;
  return {dtensor::copy_to_mesh(x, dtensor::Layout({batch, dtensor::kUnsharded}, mesh)),
          dtensor::copy_to_mesh(y, dtensor::Layout({batch}, mesh))};
}

struct Run {
  std::string name;
  dtensor::Mesh mesh;
  std::vector<std::vector<std::string>> kernels;  // each layer's kernel sharding specs
};

// The largest relative difference between the first step's loss and gradients on the mesh and
// on one device (tutorial_mlp.h's model, same seeds, same batch).
double first_step_difference(const Mlp& model, const weft::Tensor& x, const weft::Tensor& y,
                             const dtensor::Mesh& mesh) {
  tutorial::Mlp one_device;
  weft::GradientTape tape;
  weft::Tensor loss = tutorial::cross_entropy_loss(one_device(x), y);
  std::vector<weft::Tensor> want = tape.gradient(loss, one_device.trainable_variables());
  auto [dx, dy] = repack_batch(x, y, mesh);
  weft::GradientTape dtape;
  weft::Tensor dloss = tutorial::cross_entropy_loss(model(dx), dy);
  const std::vector<dtensor::DVariable> vars = model.trainable_variables();
  std::vector<weft::Tensor> got =
      dtape.gradient(dloss, std::vector<weft::Variable>(vars.begin(), vars.end()));
  auto relative = [](const weft::Tensor& a, const weft::Tensor& b) {
    double scale = std::max(1e-12, weft::max(weft::abs(b)).item<double>());
    return weft::max(weft::abs(weft::sub(a, b))).item<double>() / scale;
  };
  double worst = relative(dloss, loss);
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, relative(got[i], want[i]));
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  int epochs = 3;
  std::string data_dir, runs = "data,tensor,2d";
  int batch_devices = 8;  // the data-parallel mesh's size
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--epochs") == 0) epochs = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--runs") == 0) runs = argv[i + 1];
    if (std::strcmp(argv[i], "--data-dir") == 0) data_dir = argv[i + 1];
    if (std::strcmp(argv[i], "--batch-devices") == 0) batch_devices = std::atoi(argv[i + 1]);
  }
  try {
    // Alone, or one client of a cluster (`weft launch -n 2`: TF_CONFIG), each holding its share
    // of the tutorial's 8 DEVICES; the meshes span the clients.
    dtensor::initialize_accelerator_system();
    const int clients = dtensor::num_clients();
    weft::config::set_logical_cpu_devices(8 / clients);
    auto data = weft::data::load_fashion_mnist(data_dir);
    auto [train_x, train_y] = tutorial::preprocess(data.train_images, data.train_labels);
    auto [test_x, test_y] = tutorial::preprocess(data.test_images, data.test_labels);
    const int64_t batch_size = 128;
    const std::string u = dtensor::kUnsharded;
    // A mesh over the first devices (of each client).
    auto mesh = [clients](const std::vector<dtensor::MeshDimension>& dims) {
      int64_t size = 1;
      for (const auto& d : dims) size *= d.size;
      std::vector<std::string> devices;
      for (int64_t i = 0; i < size / clients; ++i) devices.push_back("CPU:" + std::to_string(i));
      return clients == 1 ? dtensor::create_mesh(dims, devices)
                          : dtensor::create_distributed_mesh(dims, "", devices);
    };
    std::vector<Run> all{
        {"data", mesh({{"batch", batch_devices}}), {{u, u}, {u, u}, {u, u}}},
        {"tensor", mesh({{"model", 4}}), {{u, "model"}, {"model", u}, {u, u}}},
        {"2d", mesh({{"batch", 2}, {"model", 4}}), {{u, "model"}, {"model", u}, {u, u}}},
    };
    const bool chief = dtensor::client_id() == 0;  // prints the epochs' lines
    for (const Run& run : all) {
      if (("," + runs + ",").find("," + run.name + ",") == std::string::npos) continue;
      auto layout = [&](size_t i) { return dtensor::Layout(run.kernels[i], run.mesh); };
      Mlp mlp_model({DenseLayer(784, 700, layout(0), true), DenseLayer(700, 500, layout(1), true),
                     DenseLayer(500, 10, layout(2), false)});
      if (run.name == "data") {
        weft::Slice rows{0, batch_size};
        double diff = first_step_difference(mlp_model, weft::slice(train_x, {rows}),
                                            weft::slice(train_y, {rows}), run.mesh);
        if (chief) {
          std::printf("data: first step, loss and gradients against one device: %s (%.1e)\n",
                      diff <= 1e-6 ? "equal to 1e-6" : "DIFFERENT", diff);
        }
      }
      Adam optimizer(mlp_model.trainable_variables(), zeros_slot);
      auto repack = [&](const weft::Tensor& x, const weft::Tensor& y) {
        return repack_batch(x, y, run.mesh);
      };
      const double test_accuracy =
          tutorial::run_epochs(epochs, mlp_model, optimizer, {train_x, train_y}, {test_x, test_y},
                               batch_size, repack, /*print=*/chief);
      std::printf("%s: test accuracy %.4f\n", run.name.c_str(), test_accuracy);  // every client
      std::fflush(stdout);
    }
    dtensor::shutdown_accelerator_system();
  } catch (const weft::Error& e) {
    std::fprintf(stderr, "dtensor_mlp: %s\n", e.what());
    return 1;
  }
  return 0;
}
