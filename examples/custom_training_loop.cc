// The DTensor tutorial's training loop (seed 002), in C++ on one process: an MLP 784-700-500-10
// with Xavier-uniform weights from stateless_uniform seed (22, 23), its hand-written Adam, batch
// 128, 3 epochs on Fashion-MNIST, printing each epoch's train/test loss and accuracy.
//
//   ./custom_training_loop [--epochs N] [--data-dir DIR]
#include <weft/weft.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tutorial_mlp.h"

int main(int argc, char** argv) {
  int epochs = 3;
  std::string data_dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--epochs") == 0) epochs = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--data-dir") == 0) data_dir = argv[i + 1];
  }
  try {
    auto data = weft::data::load_fashion_mnist(data_dir);
    auto [train_x, train_y] = tutorial::preprocess(data.train_images, data.train_labels);
    auto [test_x, test_y] = tutorial::preprocess(data.test_images, data.test_labels);
    const int64_t batch_size = 128;

    tutorial::Mlp mlp_model;
    tutorial::Adam optimizer(mlp_model.trainable_variables());
    auto as_is = [](const weft::Tensor& x, const weft::Tensor& y) { return std::pair{x, y}; };
    tutorial::run_epochs(epochs, mlp_model, optimizer, {train_x, train_y}, {test_x, test_y},
                         batch_size, as_is);
  } catch (const weft::Error& e) {
    std::fprintf(stderr, "custom_training_loop: %s\n", e.what());
    return 1;
  }
  return 0;
}
