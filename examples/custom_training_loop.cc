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
    for (int epoch = 0; epoch < epochs; ++epoch) {
      tutorial::Mean train_loss, train_acc, test_loss, test_acc;
      for (int64_t start = 0; start < train_x.dim(0); start += batch_size) {
        weft::Slice rows{start, start + batch_size};
        weft::Tensor x_batch = weft::slice(train_x, {rows}), y_batch = weft::slice(train_y, {rows});
        auto [batch_loss, batch_acc] = tutorial::train_step(mlp_model, x_batch, y_batch, optimizer);
        train_loss.add(batch_loss);
        train_acc.add(batch_acc);
      }
      for (int64_t start = 0; start < test_x.dim(0); start += batch_size) {
        weft::Slice rows{start, start + batch_size};
        weft::Tensor x_batch = weft::slice(test_x, {rows}), y_batch = weft::slice(test_y, {rows});
        weft::Tensor y_pred = mlp_model(x_batch);
        test_loss.add(tutorial::cross_entropy_loss(y_pred, y_batch));
        test_acc.add(tutorial::accuracy(y_pred, y_batch));
      }
      std::printf("Epoch: %d\n", epoch);
      std::printf("Training loss: %.3f, Training accuracy: %.3f\n", train_loss.result(),
                  train_acc.result());
      std::printf("Testing loss: %.3f, Testing accuracy: %.3f\n", test_loss.result(),
                  test_acc.result());
      std::fflush(stdout);
    }
  } catch (const weft::Error& e) {
    std::fprintf(stderr, "custom_training_loop: %s\n", e.what());
    return 1;
  }
  return 0;
}
