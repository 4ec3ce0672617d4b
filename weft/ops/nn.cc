#include "weft/ops/nn.h"

#include <algorithm>
#include <cmath>

#include "weft/autodiff/tape.h"
#include "weft/core/op_scope.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/onednn/onednn.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft {
namespace {

// softmax's SPMD rule: the class axis whole on each device.
SpmdRule along_axis(int64_t axis) {
  SpmdRule rule{SpmdRule::Kind::kAlongAxis};
  rule.axes = {axis};
  return rule;
}

}  // namespace

Tensor log_softmax(const Tensor& logits, int64_t axis) {
  WEFT_CHECK(logits.defined(), InvalidArgument) << "log_softmax: logits are undefined";
  WEFT_CHECK(is_floating(logits.dtype()), InvalidArgument)
      << "log_softmax: logits must be floating point, got " << logits.dtype();
  axis = normalize_axis("log_softmax", axis, logits.rank());
  OpScope op("log_softmax", logits);
  if (op.spmd()) {
    return op.run(along_axis(axis), {logits},
                  [axis](const SpmdArgs& c) { return log_softmax(c[0], axis); });
  }
  // Shift by the (constant) maximum before taking logsumexp: x - max is exact near the maximum,
  // whereas x - logsumexp(x) rounds at the scale of |x| (1e-4 off for float32 logits of 1000).
  Tensor m = stop_gradient(max(logits, {axis}, true));
  Tensor shifted = sub(logits, where(equal(abs(m), INFINITY), zeros_like(m), m));
  return sub(shifted, logsumexp(shifted, {axis}, true));
}

Tensor l2_normalize(const Tensor& x, int64_t axis, double epsilon) {
  WEFT_CHECK(x.defined() && is_floating(x.dtype()), InvalidArgument)
      << "l2_normalize: expected a floating tensor";
  axis = normalize_axis("l2_normalize", axis, x.rank());
  return mul(x, rsqrt(maximum(sum(square(x), {axis}, true), epsilon)));
}

namespace {

Tensor softmax_grad(const Tensor& y, const Tensor& dy);

// Softmax over the last axis on oneDNN's kernel: one pass forward and one backward, where the
// composition exp(log_softmax(x)) takes a dozen of each (MultiHeadAttention's scores).
Tensor fused_softmax(const Tensor& x_in) {
  Tensor x = contiguous(x_in);
  const int64_t cols = x.dim(-1), rows = cols == 0 ? 0 : x.numel() / cols;
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  if (rows > 0) onednn::softmax_forward(x.dtype(), rows, cols, x.raw_data(), y.raw_data());
  if (autodiff::is_recording()) {
    autodiff::record("softmax", {x_in}, {y}, [y](const autodiff::Grads& g) {
      return std::vector<Tensor>{softmax_grad(y, g[0])};
    });
  }
  return y;
}

// dx = y * (dy - sum(dy * y)) along the last axis: oneDNN's kernel, or, when a tape records the
// gradient itself (second derivatives), weft's ops.
Tensor softmax_grad(const Tensor& y, const Tensor& dy_in) {
  Tensor dy = contiguous(cast(dy_in, y.dtype()));
  if (autodiff::is_recording()) return mul(y, sub(dy, sum(mul(dy, y), {-1}, true)));
  Tensor dx = Tensor::empty(y.shape(), y.dtype());
  const int64_t cols = y.dim(-1), rows = cols == 0 ? 0 : y.numel() / cols;
  if (rows > 0) {
    onednn::softmax_backward(y.dtype(), rows, cols, y.raw_data(), dy.raw_data(), dx.raw_data());
  }
  return dx;
}

}  // namespace

Tensor softmax(const Tensor& logits, int64_t axis) {
  WEFT_CHECK(logits.defined(), InvalidArgument) << "softmax: logits are undefined";
  WEFT_CHECK(is_floating(logits.dtype()), InvalidArgument)
      << "softmax: logits must be floating point, got " << logits.dtype();
  axis = normalize_axis("softmax", axis, logits.rank());
  OpScope op("softmax", logits);
  if (op.spmd()) {
    return op.run(along_axis(axis), {logits},
                  [axis](const SpmdArgs& c) { return softmax(c[0], axis); });
  }
  const DType t = logits.dtype();
  if (axis == logits.rank() - 1 && (t == kFloat32 || t == kBFloat16) && onednn::supports(t)) {
    return fused_softmax(logits);
  }
  return exp(log_softmax(logits, axis));
}

Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits) {
  constexpr const char* kOp = "sparse_softmax_cross_entropy_with_logits";
  WEFT_CHECK(labels.defined() && logits.defined(), InvalidArgument) << kOp << ": undefined input";
  OpScope op(kOp, labels, logits);
  if (op.spmd()) {
    return op.run({SpmdRule::Kind::kSparseCrossEntropy}, {labels, logits}, [](const SpmdArgs& c) {
      return sparse_softmax_cross_entropy_with_logits(c[0], c[1]);
    });
  }
  WEFT_CHECK(logits.rank() >= 1 && is_floating(logits.dtype()), InvalidArgument)
      << kOp << ": logits must be floating point with rank >= 1, got " << logits.dtype() << " "
      << shape_str(logits.shape());
  WEFT_CHECK(labels.dtype() == kInt32 || labels.dtype() == kInt64, InvalidArgument)
      << kOp << ": labels must be int32 or int64, got " << labels.dtype();
  Shape expected(logits.shape().begin(), logits.shape().end() - 1);
  WEFT_CHECK(labels.shape() == expected, InvalidArgument)
      << kOp << ": labels have shape " << shape_str(labels.shape()) << "; logits of shape "
      << shape_str(logits.shape()) << " need labels of shape " << shape_str(expected);
  int64_t classes = logits.dim(-1);
  std::vector<int64_t> values = labels.to_vector<int64_t>();
  auto bad =
      std::find_if(values.begin(), values.end(), [&](int64_t v) { return v < 0 || v >= classes; });
  WEFT_CHECK(bad == values.end(), InvalidArgument)
      << kOp << ": label " << (bad == values.end() ? 0 : *bad) << " at position "
      << (bad - values.begin()) << " is outside [0, " << classes << ")";
  Tensor picked = one_hot(labels, classes, 1, 0, logits.dtype());
  return neg(sum(mul(picked, log_softmax(logits)), {-1}));
}

}  // namespace weft
