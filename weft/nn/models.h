// The two models `weft train` trains (SPEC §3), for programs and benchmarks that want the same:
// both take 28x28x1 images (Fashion-MNIST) and give 10 logits.
//
//   weft::nn::Model model = weft::nn::models::mlp();
//   model.compile(weft::optim::Adam(), weft::nn::losses::SparseCategoricalCrossentropy(
//                                          {.from_logits = true}), {"accuracy"});
#pragma once

#include "weft/nn/model.h"

namespace weft::nn::models {

// The DTensor tutorial's MLP: Flatten, Dense(700, relu), Dense(500, relu), Dense(10).
Sequential mlp();

// A small convolutional net with batch normalization: twice a 3x3 convolution (32, then 64
// filters), 2x2 max pooling and batch normalization with ReLU; then Dense(128) with batch
// normalization and ReLU, and Dense(10).
Sequential cnn();

}  // namespace weft::nn::models
