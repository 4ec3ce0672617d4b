// The meshes and layouts of TensorFlow's DTensor tutorial (seed 002), and where it points next:
// a mesh of 8 logical CPUs, the data sharded along the batch, the weights replicated or cut along
// a "model" dimension, on 1-D and 2-D meshes. docs/dtensor.md quotes it; CI runs it.
#include <weft/weft.h>

#include <iostream>
#include <string>

namespace dtensor = weft::dtensor;

int main() {
  weft::config::set_logical_cpu_devices(8);  // the tutorial's DEVICES

  // mesh = dtensor.create_mesh([("batch", 8)], devices=DEVICES)
  dtensor::Mesh mesh = dtensor::create_mesh({{"batch", 8}});
  // weight_layout = dtensor.Layout([dtensor.UNSHARDED, dtensor.UNSHARDED], mesh)
  dtensor::Layout weight_layout({dtensor::kUnsharded, dtensor::kUnsharded}, mesh);
  // bias_layout = weight_layout.delete([0])
  dtensor::Layout bias_layout = weight_layout.delete_axes({0});
  // repack_batch's layouts: the images and the labels cut along the batch
  dtensor::Layout x_layout({"batch", dtensor::kUnsharded}, mesh);
  dtensor::Layout y_layout({"batch"}, mesh);
  std::cout << "data parallel: each device holds x "
            << weft::shape_str(x_layout.local_shape({128, 784})) << ", y "
            << weft::shape_str(y_layout.local_shape({128})) << ", kernel "
            << weft::shape_str(weight_layout.local_shape({784, 700})) << ", bias "
            << weft::shape_str(bias_layout.local_shape({700})) << "\n";

  // Tensor parallel: the first kernel's columns and the second's rows cut along "model".
  dtensor::Mesh model_mesh =
      dtensor::create_mesh({{"model", 4}}, {"CPU:0", "CPU:1", "CPU:2", "CPU:3"});
  dtensor::Layout first({dtensor::kUnsharded, "model"}, model_mesh);
  dtensor::Layout second({"model", dtensor::kUnsharded}, model_mesh);
  std::cout << "tensor parallel: kernels " << weft::shape_str(first.local_shape({784, 700}))
            << " and " << weft::shape_str(second.local_shape({700, 500})) << "\n";

  // 2-D: the batch cut in 2, the kernel's columns in 4; device 6 is batch 1, model 2.
  dtensor::Mesh grid = dtensor::create_mesh({{"batch", 2}, {"model", 4}});
  dtensor::Layout kernel = dtensor::Layout::inner_sharded(grid, "model", 2);
  std::cout << "2-D: device 6 at batch " << grid.local_device_locations()[6].at("batch")
            << ", model " << grid.local_device_locations()[6].at("model")
            << ", its block from column " << kernel.offsets({784, 700}, 6)[1] << "\n";
  std::cout << kernel.to_string() << "\n";
  std::cout << (dtensor::Layout::from_string(kernel.to_string()) == kernel ? "read back equal"
                                                                           : "differs")
            << "\n";

  // 8 devices do not divide the 700 columns of the tutorial's first kernel.
  try {
    dtensor::Layout::inner_sharded(mesh, "batch", 2).local_shape({784, 700});
  } catch (const weft::InvalidArgument& e) {
    std::cout << e.what() << "\n";
  }

  // DTensors: a batch of images cut along "batch", a replicated kernel, and one layer's forward
  // pass and gradient, written as on one device.
  weft::Tensor images = weft::stateless_random_uniform({128, 784}, {1, 2});
  weft::Tensor x = dtensor::copy_to_mesh(images, x_layout);
  auto init = [] { return weft::stateless_random_uniform({784, 10}, {22, 23}, -0.1, 0.1); };
  dtensor::DVariable w(dtensor::call_with_layout(init, weight_layout));
  weft::GradientTape tape;
  weft::Tensor logits = weft::matmul(x, w);
  weft::Tensor loss = weft::mean(weft::square(logits));
  weft::Tensor grad = tape.gradient(loss, {w})[0];
  auto specs = [](const weft::Tensor& t) {
    std::string text;
    dtensor::Layout layout = dtensor::fetch_layout(t);
    for (const std::string& s : layout.sharding_specs()) {
      text += (text.empty() ? "" : ",") + s;
    }
    return text;
  };
  std::cout << "logits: " << specs(logits) << ", kernel gradient: " << specs(grad) << "\n";
  // The same step on one device.
  weft::Variable w1(init());
  weft::GradientTape tape1;
  weft::Tensor loss1 = weft::mean(weft::square(weft::matmul(images, w1)));
  weft::Tensor grad1 = tape1.gradient(loss1, {w1})[0];
  double err = weft::max(weft::abs(weft::sub(grad, grad1))).item<double>();
  std::cout << "loss " << loss.item<float>() << " on 8 devices, " << loss1.item<float>()
            << " on one; gradients differ by at most " << (err < 1e-6 ? "1e-6" : "more") << "\n";

  // Input: DTensorDataset batches a dataset and lays each batch out, each device keeping its rows.
  weft::Tensor labels =
      weft::cast(weft::stateless_random_uniform({128}, {3, 4}, 0, 10), weft::kInt64);
  dtensor::DTensorDataset train(weft::data::Dataset::from_tensor_slices({images, labels}).repeat(2),
                                mesh, {x_layout, y_layout}, /*global_batch_size=*/128);
  int batches = 0;
  for (const weft::data::Element& batch : train) {
    if (batches++ == 0) {
      std::cout << "DTensorDataset: batches of " << weft::shape_str(batch[0].shape()) << ", "
                << specs(batch[0]) << ", device 0 holds "
                << weft::shape_str(dtensor::unpack(batch[0])[0].shape());
    }
  }
  std::cout << ", " << batches << " batches\n";
}
