#include "weft/nn/activations.h"

#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/math.h"
#include "weft/ops/nn.h"

namespace weft::nn::activations {
namespace {

// Keras 2.4's definitions (keras/activations.py, keras/backend.py), made of differentiable ops so
// that the tape gives their gradients. A branch that where() drops is computed on a clamped input,
// so that it stays finite (its gradient, multiplied by 0, must not be inf or NaN).
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

// x where `cond`, else 0.
Tensor only_where(const Tensor& cond, const Tensor& x) { return where(cond, x, zeros_like(x)); }

// alpha (e^x - 1) for x < 0, x from 0 on (tf.nn.elu's split, so that the gradient at 0 is 1).
Tensor elu(const Tensor& x, double alpha) {
  Tensor negative = less(x, 0);
  return where(negative, mul(sub(exp(only_where(negative, x)), 1), alpha), x);
}

// log(1 + e^x), as x + log(1 + e^-x) for x > 0; its gradient is sigmoid(x).
Tensor softplus(const Tensor& x) {
  Tensor positive = greater(x, 0);
  Tensor above = only_where(positive, x), below = sub(x, above);
  return where(positive, add(above, log1p(exp(neg(above)))), log1p(exp(below)));
}

}  // namespace

Activation get(const std::string& name) {
  if (name.empty() || name == "linear") return [](const Tensor& x) { return x; };
  if (name == "relu") return [](const Tensor& x) { return relu(x); };
  if (name == "sigmoid") return [](const Tensor& x) { return sigmoid(x); };
  if (name == "tanh") return [](const Tensor& x) { return tanh(x); };
  if (name == "gelu") return [](const Tensor& x) { return gelu(x); };
  if (name == "softmax") return [](const Tensor& x) { return softmax(x); };
  if (name == "log_softmax") return [](const Tensor& x) { return log_softmax(x); };
  if (name == "elu") return [](const Tensor& x) { return elu(x, 1.0); };
  if (name == "selu") {
    return [](const Tensor& x) { return mul(elu(x, kSeluAlpha), kSeluScale); };
  }
  if (name == "softplus") return [](const Tensor& x) { return softplus(x); };
  if (name == "softsign") return [](const Tensor& x) { return div(x, add(abs(x), 1)); };
  if (name == "swish") return [](const Tensor& x) { return mul(x, sigmoid(x)); };
  // Keras's piecewise-linear sigmoid: clip(0.2 x + 0.5, 0, 1).
  if (name == "hard_sigmoid") {
    return [](const Tensor& x) { return clip(add(mul(x, 0.2), 0.5), 0, 1); };
  }
  if (name == "exponential") return [](const Tensor& x) { return exp(x); };
  WEFT_FAIL(InvalidArgument) << "unknown activation \"" << name
                             << "\"; expected one of relu, sigmoid, tanh, gelu, softmax, "
                                "log_softmax, elu, selu, softplus, softsign, swish, "
                                "hard_sigmoid, exponential, linear";
  return {};
}

}  // namespace weft::nn::activations
