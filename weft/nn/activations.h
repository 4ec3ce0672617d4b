// Activations by Keras name, for layers' `activation` arguments (and an RNN's
// `recurrent_activation`): "relu", "sigmoid", "tanh", "softmax", "log_softmax", "gelu", "elu",
// "selu", "softplus", "softsign", "swish", "hard_sigmoid", "exponential", "linear" (or "", the
// identity), as Keras 2.4 defines them, with their gradients.
#pragma once

#include <functional>
#include <string>

#include "weft/core/tensor.h"

namespace weft::nn::activations {

using Activation = std::function<Tensor(const Tensor&)>;

// InvalidArgument listing the known names for an unknown one.
Activation get(const std::string& name);

}  // namespace weft::nn::activations
