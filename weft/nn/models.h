// The models `weft train` trains (SPEC §3), for programs and benchmarks that want the same: each
// takes 28x28x1 images (Fashion-MNIST) and gives 10 logits.
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

// The image's rows as a sequence: 28 steps of 28 features into LSTM(128), then Dense(10) on its
// last output.
Sequential lstm();

// A small vision transformer: the image cut into 16 patches of 7x7 pixels, each a token (Dense(64)
// plus a learned position embedding); two pre-norm encoder blocks, each self-attention
// (MultiHeadAttention, 4 heads of 16) and a feed-forward block (Dense(128, gelu), Dense(64)), both
// around a residual connection; LayerNormalization, the mean over the tokens, Dense(10).
Model transformer();

}  // namespace weft::nn::models
