#include "weft/ops/rnn.h"

#include "weft/autodiff/tape.h"
#include "weft/core/op_scope.h"
#include "weft/core/storage.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/onednn/onednn.h"

namespace weft {
namespace {

void check_shape(const char* what, const Tensor& t, const Shape& expected) {
  WEFT_CHECK(t.defined() && t.shape() == expected, InvalidArgument)
      << "rnn: " << what << " has shape " << (t.defined() ? shape_str(t.shape()) : "undefined")
      << ", expected " << shape_str(expected);
}

// The forward pass's operands, contiguous in the dtypes oneDNN takes, and its outputs.
struct RnnTensors {
  Tensor x, h0, c0, kernel, recurrent, bias, y, h, c;
  onednn::RnnForwardBuffers buffers() const {
    return {x.raw_data(),      h0.raw_data(),        c0.defined() ? c0.raw_data() : nullptr,
            kernel.raw_data(), recurrent.raw_data(), bias.raw_data(),
            y.raw_data(),      h.raw_data(),         c.defined() ? c.raw_data() : nullptr};
  }
};

Tensor f32(const Tensor& t) { return contiguous(cast(t, kFloat32)); }

// What a forward pass leaves for its backward pass. oneDNN's backward pass uses up the workspace,
// so a second gradient of the same forward (a persistent tape) runs the forward pass again.
struct Saved {
  RnnTensors t;
  std::shared_ptr<Storage> workspace;
  bool used = false;
};

std::vector<Tensor> rnn_backward(const onednn::RnnParams& p, Saved& saved,
                                 const autodiff::Grads& g) {
  const bool lstm = p.cell == RnnCell::kLSTM;
  const int64_t gu = rnn_gates(p.cell) * p.units;
  Tensor dy = f32(g[0]), dh = f32(g[1]), dc = lstm ? f32(g[2]) : Tensor();
  Tensor dx = Tensor::empty({p.batch, p.steps, p.features}, kFloat32);
  Tensor dh0 = Tensor::empty({p.batch, p.units}, kFloat32);
  Tensor dc0 = lstm ? Tensor::empty({p.batch, p.units}, kFloat32) : Tensor();
  Tensor dkernel = Tensor::empty({p.features, gu}, kFloat32);
  Tensor drecurrent = Tensor::empty({p.units, gu}, kFloat32);
  Tensor dbias = Tensor::empty({rnn_bias_gates(p.cell) * p.units}, kFloat32);
  RnnTensors t = saved.t;
  if (saved.used) {
    t.y = Tensor::empty(t.y.shape(), t.y.dtype());
    t.h = Tensor::empty(t.h.shape(), t.h.dtype());
    if (lstm) t.c = Tensor::empty(t.c.shape(), kFloat32);
    saved.workspace = onednn::rnn_forward(t.x.dtype(), p, t.buffers(), true);
  }
  saved.used = true;
  onednn::rnn_backward(t.x.dtype(), p, t.buffers(),
                       {dy.raw_data(), dh.raw_data(), lstm ? dc.raw_data() : nullptr, dx.raw_data(),
                        dh0.raw_data(), lstm ? dc0.raw_data() : nullptr, dkernel.raw_data(),
                        drecurrent.raw_data(), dbias.raw_data()},
                       *saved.workspace);
  const DType dt = t.x.dtype();
  return {cast(dx, dt), cast(dh0, dt), dc0, cast(dkernel, dt), cast(drecurrent, dt), dbias};
}

}  // namespace

int64_t rnn_gates(RnnCell cell) {
  return cell == RnnCell::kLSTM ? 4 : cell == RnnCell::kGRU ? 3 : 1;
}
int64_t rnn_bias_gates(RnnCell cell) { return cell == RnnCell::kSimple ? 1 : 4; }

bool rnn_supported(DType dtype) {
  return (dtype == kFloat32 || dtype == kBFloat16) && onednn::supports(dtype);
}

std::vector<Tensor> rnn(RnnCell cell, const Tensor& x_in, const Tensor& h0_in, const Tensor& c0_in,
                        const Tensor& kernel_in, const Tensor& recurrent_in,
                        const Tensor& bias_in) {
  WEFT_CHECK(x_in.defined() && x_in.rank() == 3, InvalidArgument)
      << "rnn: the input must be (batch, steps, features), got "
      << (x_in.defined() ? "shape " + shape_str(x_in.shape()) : "an undefined tensor");
  const DType dt = x_in.dtype();
  WEFT_CHECK(rnn_supported(dt), InvalidArgument)
      << "rnn: computes in float32 or bfloat16 (where oneDNN has it), got " << dt;
  const bool lstm = cell == RnnCell::kLSTM;
  WEFT_CHECK(recurrent_in.defined() && recurrent_in.rank() == 2, InvalidArgument)
      << "rnn: the recurrent kernel must be (units, gates * units)";
  onednn::RnnParams p{cell, x_in.dim(1), x_in.dim(0), x_in.dim(2), recurrent_in.dim(0)};
  const int64_t gu = rnn_gates(cell) * p.units;
  check_shape("h0", h0_in, {p.batch, p.units});
  if (lstm) check_shape("c0", c0_in, {p.batch, p.units});
  check_shape("kernel", kernel_in, {p.features, gu});
  check_shape("recurrent kernel", recurrent_in, {p.units, gu});
  check_shape("bias", bias_in, {rnn_bias_gates(cell) * p.units});
  WEFT_CHECK(p.steps > 0, InvalidArgument)
      << "rnn: the input " << shape_str(x_in.shape()) << " has no steps";
  OpScope op("rnn", x_in, h0_in, c0_in, kernel_in, recurrent_in, bias_in);
  if (op.spmd()) {  // per example: x, h0 and c0 cut along the batch alike, the weights whole
    SpmdRule rule{SpmdRule::Kind::kBatch};
    rule.axes = {1, 2};
    return op.run_all(
        rule, {x_in, h0_in, c0_in, kernel_in, recurrent_in, bias_in},
        [cell](const SpmdArgs& c) { return rnn(cell, c[0], c[1], c[2], c[3], c[4], c[5]); });
  }
  if (p.batch == 0) {
    // No examples (a replica's share of a short last batch): empty outputs, and gradients of
    // zeros for the weights.
    std::vector<Tensor> outputs{zeros({0, p.steps, p.units}, dt), zeros({0, p.units}, dt)};
    if (lstm) outputs.push_back(zeros({0, p.units}, dt));
    std::vector<Tensor> inputs{x_in, h0_in, c0_in, kernel_in, recurrent_in, bias_in};
    if (!lstm) inputs.erase(inputs.begin() + 2);
    if (autodiff::is_recording()) {
      autodiff::record("rnn", inputs, outputs, [inputs](const autodiff::Grads&) {
        std::vector<Tensor> d;
        for (const Tensor& t : inputs) d.push_back(zeros_like(t));
        return d;
      });
    }
    return outputs;
  }

  // The operands as recorded (cast to the layer's dtypes), then contiguous for oneDNN.
  std::vector<Tensor> inputs{x_in,
                             cast(h0_in, dt),
                             lstm ? cast(c0_in, kFloat32) : Tensor(),
                             cast(kernel_in, dt),
                             cast(recurrent_in, dt),
                             cast(bias_in, kFloat32)};
  RnnTensors t{contiguous(inputs[0]),
               contiguous(inputs[1]),
               lstm ? contiguous(inputs[2]) : Tensor(),
               contiguous(inputs[3]),
               contiguous(inputs[4]),
               contiguous(inputs[5]),
               Tensor::empty({p.batch, p.steps, p.units}, dt),
               Tensor::empty({p.batch, p.units}, dt),
               lstm ? Tensor::empty({p.batch, p.units}, kFloat32) : Tensor()};
  const bool recording = autodiff::is_recording();
  std::shared_ptr<Storage> workspace = onednn::rnn_forward(dt, p, t.buffers(), recording);
  std::vector<Tensor> outputs{t.y, t.h};
  if (lstm) outputs.push_back(t.c);
  if (recording) {
    if (!lstm) inputs.erase(inputs.begin() + 2);
    auto saved = std::make_shared<Saved>(Saved{t, std::move(workspace)});
    autodiff::record("rnn", inputs, outputs, [p, saved](const autodiff::Grads& g) {
      std::vector<Tensor> d = rnn_backward(p, *saved, g);
      if (p.cell != RnnCell::kLSTM) d.erase(d.begin() + 2);
      if (autodiff::is_recording()) {  // a tape that would differentiate these gradients
        const RnnTensors& t = saved->t;
        autodiff::record("rnn_grad", {g[0], g[1], t.x, t.h0, t.kernel, t.recurrent, t.bias}, d,
                         [](const autodiff::Grads&) -> std::vector<Tensor> {
                           WEFT_FAIL(FailedPrecondition)
                               << "rnn: the gradient of oneDNN's recurrent layer is not "
                                  "differentiable; compute in float64 (weft's own ops) for "
                                  "second derivatives";
                           return {};
                         });
      }
      return d;
    });
  }
  if (lstm && dt != kFloat32) outputs[2] = cast(outputs[2], dt);
  return outputs;
}

}  // namespace weft
