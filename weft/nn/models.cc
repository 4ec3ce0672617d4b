#include "weft/nn/models.h"

#include "weft/nn/conv.h"
#include "weft/nn/core_layers.h"
#include "weft/nn/dense.h"
#include "weft/nn/normalization.h"
#include "weft/nn/pooling.h"

namespace weft::nn::models {

// The logits layer computes in float32 under any policy, as Keras's mixed-precision guide
// advises for the last layer: bfloat16 logits round to 8 bits, which ties close classes.
Layer logits() { return Dense(10, "", {.dtype = "float32"}); }

Sequential mlp() {
  return Sequential({Flatten(), Dense(700, "relu"), Dense(500, "relu"), logits()}, "mlp");
}

Sequential cnn() {
  // Two convolution blocks and a hidden layer, each normalised over the batch before its ReLU;
  // normalising the hidden layer too lifts first-epoch test accuracy from 0.88 to 0.89 and the
  // third's from 0.897 to 0.908. The moving statistics follow the batches with momentum 0.9 rather
  // than Keras's 0.99: the weights move fast over three epochs, and with 0.99 the statistics lag
  // so far behind that inference after one epoch is 6 points below what the batch statistics give
  // (0.818 against 0.879); with 0.9 the two agree within a point. The ReLU runs inside batch
  // normalization's kernel.
  // Each convolution block pools before it normalises, so batch normalization and its ReLU run on
  // a quarter of the values: that halves the memory traffic of the step's passes outside the
  // convolutions, and over seeds 0-2 the third epoch's test accuracy came out 0.910 on average,
  // against 0.905 for convolution, normalisation, ReLU, pooling.
  auto normalized = [] { return BatchNormalization({.momentum = 0.9, .activation = "relu"}); };
  auto conv = [](int64_t filters) {
    return Conv2D(filters, {3, 3}, {.padding = "same", .use_bias = false});
  };
  return Sequential({conv(32), MaxPooling2D({2, 2}), normalized(),  //
                     conv(64), MaxPooling2D({2, 2}), normalized(),  //
                     Flatten(), Dense(128, "", {.use_bias = false}), normalized(), logits()},
                    "cnn");
}

}  // namespace weft::nn::models
