#include "weft/nn/recurrent.h"

#include <atomic>

#include "weft/nn/activations.h"
#include "weft/nn/internal/layer_util.h"
#include "weft/nn/saving.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/linalg.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/rnn.h"
#include "weft/ops/shape_ops.h"

namespace weft::nn {
namespace {

using internal::layer_label;

using Cell = RnnCell;

const char* cell_class(Cell c) {
  return c == Cell::kLSTM ? "LSTM" : c == Cell::kGRU ? "GRU" : "SimpleRNN";
}

// Columns [k units, (k + 1) units) of x's last axis.
Tensor gate(const Tensor& x, int64_t k, int64_t units) {
  std::vector<Slice> s(static_cast<size_t>(x.rank()));
  s.back() = Slice{k * units, (k + 1) * units};
  return slice(x, s);
}

// The steps of (batch, steps, ...) in reverse order.
Tensor reverse_steps(const Tensor& x) { return gather(x, arange(x.dim(1) - 1, -1, -1, kInt64), 1); }

class RNNImpl : public LayerImpl {
 public:
  RNNImpl(Cell cell, int64_t units, RNNOptions o)
      : LayerImpl(cell_class(cell), o.name, o.dtype),
        cell_(cell),
        units_(units),
        o_(std::move(o)),
        activation_(internal::activation_for(*this, o_.activation)),
        recurrent_activation_(internal::activation_for(*this, o_.recurrent_activation)),
        kernel_init_(internal::initializer_for(*this, "kernel_initializer", o_.kernel_initializer)),
        recurrent_init_(
            internal::initializer_for(*this, "recurrent_initializer", o_.recurrent_initializer)),
        bias_init_(internal::initializer_for(*this, "bias_initializer", o_.bias_initializer)),
        seed_(o_.seed ? Seed{*o_.seed, -7} : Seed{}) {
    WEFT_CHECK(units > 0, InvalidArgument)
        << layer_label(*this) << ": units must be positive, got " << units;
    WEFT_CHECK(
        o_.dropout >= 0 && o_.dropout < 1 && o_.recurrent_dropout >= 0 && o_.recurrent_dropout < 1,
        InvalidArgument)
        << layer_label(*this) << ": dropout (" << o_.dropout << ") and recurrent_dropout ("
        << o_.recurrent_dropout << ") must be in [0, 1)";
    set_activity_regularizer(o_.activity_regularizer);
  }

  const RNNOptions& options() const { return o_; }
  Cell cell() const { return cell_; }
  int64_t units() const { return units_; }
  int64_t num_states() const { return cell_ == Cell::kLSTM ? 2 : 1; }
  bool supports_masking() const override { return o_.return_sequences; }
  bool any_size(size_t axis) const override { return axis == 0; }

  // Initial states are optional inputs, checked by call_multi.
  size_t checked_inputs() const override { return 1; }

  void build_multi(const std::vector<Shape>& shapes) override {
    internal::check_rank(*this, shapes[0], 3, "(batch, steps, features)");
    const int64_t g = rnn_gates(cell_) * units_;
    constexpr auto kNone = VariableAggregation::NONE;
    kernel_ = add_weight("kernel", {shapes[0][2], g}, kernel_init_, true, {}, kNone,
                         o_.kernel_regularizer, o_.kernel_constraint);
    recurrent_kernel_ = add_weight("recurrent_kernel", {units_, g}, recurrent_init_, true, {},
                                   kNone, o_.recurrent_regularizer, o_.recurrent_constraint);
    if (o_.use_bias) {
      Initializer init = bias_init_;
      Shape shape{g};
      if (cell_ == Cell::kLSTM && o_.unit_forget_bias) {
        const int64_t u = units_;
        init = [base = bias_init_, u](const Shape& s, DType t) {
          Tensor b = base(s, t);
          return add(b, cast(concat({zeros({u}), ones({u}), zeros({2 * u})}, 0), t));
        };
      }
      if (cell_ == Cell::kGRU && o_.reset_after) shape = {2, g};
      bias_ =
          add_weight("bias", shape, init, true, {}, kNone, o_.bias_regularizer, o_.bias_constraint);
    }
    if (!o_.seed) seed_ = random::next_seed();
  }

  std::vector<Tensor> call_multi(const std::vector<Tensor>& xs, bool training) override {
    WEFT_CHECK(xs.size() == 1 || static_cast<int64_t>(xs.size()) == 1 + num_states(),
               InvalidArgument)
        << layer_label(*this) << " takes its input and, optionally, " << num_states()
        << " initial state(s); got " << xs.size() << " tensors";
    for (size_t i = 1; i < xs.size(); ++i) {
      WEFT_CHECK(xs[i].rank() == 2 && xs[i].dim(0) == xs[0].dim(0) && xs[i].dim(1) == units_,
                 InvalidArgument)
          << layer_label(*this) << ": initial state " << i - 1 << " has shape "
          << shape_str(xs[i].shape()) << ", expected (" << xs[0].dim(0) << ", " << units_ << ")";
    }
    Tensor x = xs[0];
    Tensor mask = keras_mask(x);
    const int64_t n = x.dim(0), steps = x.dim(1), u = units_;
    DType dtype = x.dtype();
    std::vector<Tensor> state;
    for (int64_t k = 0; k < num_states(); ++k) {
      state.push_back(xs.size() > 1 ? cast(xs[1 + k], dtype) : zeros({n, u}, dtype));
    }
    if (o_.go_backwards) {
      x = reverse_steps(x);
      if (mask.defined()) mask = reverse_steps(mask);
    }
    // One dropout mask per sequence (Keras's implementation 2), keyed as Dropout's draws.
    Tensor recurrent_keep;
    if (training && o_.dropout > 0) {
      x = mul(x, expand_dims(keep(dtype, {n, x.dim(2)}, 0, o_.dropout), 1));
    }
    if (training && o_.recurrent_dropout > 0) {
      recurrent_keep = keep(dtype, {n, u}, 1, o_.recurrent_dropout);
    }
    Tensor w = cast_variable(kernel_), uk = cast_variable(recurrent_kernel_);
    Tensor b = o_.use_bias ? cast_variable(bias_) : Tensor();
    Tensor input_bias = b, recurrent_bias;
    if (b.defined() && cell_ == Cell::kGRU && o_.reset_after) {
      input_bias = squeeze(slice(b, {Slice{0, 1}}), {0});
      recurrent_bias = squeeze(slice(b, {Slice{1, 2}}), {0});
    }
    Tensor sequence, output;
    if (!mask.defined() && !recurrent_keep.defined() && fits_onednn(dtype)) {
      std::vector<Tensor> r = rnn(cell_, x, state[0], num_states() > 1 ? state[1] : Tensor(), w, uk,
                                  onednn_bias(input_bias, recurrent_bias));
      sequence = r[0];
      output = r[1];
      state.assign(r.begin() + 1, r.end());
    } else {
      // The inputs' part of every gate, for all steps in one product.
      Tensor projected = matmul(reshape(x, {n * steps, x.dim(2)}), w);
      if (input_bias.defined()) projected = add(projected, input_bias);
      projected = reshape(projected, {n, steps, rnn_gates(cell_) * u});
      std::vector<Tensor> outputs;
      output = zeros({n, u}, dtype);
      for (int64_t t = 0; t < steps; ++t) {
        Tensor xp = squeeze(slice(projected, {Slice{}, Slice{t, t + 1}}), {1});
        std::vector<Tensor> next = step(xp, state, uk, recurrent_bias, recurrent_keep);
        Tensor y = next[0];
        next.erase(next.begin());  // the states
        if (mask.defined()) {
          Tensor m = expand_dims(squeeze(slice(mask, {Slice{}, Slice{t, t + 1}}), {1}), 1);
          Tensor held = o_.zero_output_for_mask ? zeros_like(y) : output;
          for (size_t k = 0; k < next.size(); ++k) next[k] = where(m, next[k], state[k]);
          y = where(m, y, held);
        }
        state = std::move(next);
        output = y;
        if (o_.return_sequences) outputs.push_back(y);
      }
      if (o_.return_sequences) sequence = stack(outputs, 1);
    }
    Tensor result = o_.return_sequences ? sequence : output;
    if (o_.return_sequences && mask.defined()) {
      with_keras_mask(result, o_.go_backwards ? reverse_steps(mask) : mask);
    }
    std::vector<Tensor> out{result};
    if (o_.return_state) out.insert(out.end(), state.begin(), state.end());
    return out;
  }

  ConfigDict get_config() const override {
    ConfigDict c = LayerImpl::get_config();
    c.set("units", units_).set("activation", o_.activation);
    if (cell_ != Cell::kSimple) c.set("recurrent_activation", o_.recurrent_activation);
    c.set("use_bias", o_.use_bias).set("kernel_initializer", o_.kernel_initializer);
    c.set("recurrent_initializer", o_.recurrent_initializer);
    c.set("bias_initializer", o_.bias_initializer);
    internal::set_config_fn(c, "kernel_regularizer", o_.kernel_regularizer);
    internal::set_config_fn(c, "recurrent_regularizer", o_.recurrent_regularizer);
    internal::set_config_fn(c, "bias_regularizer", o_.bias_regularizer);
    internal::set_config_fn(c, "kernel_constraint", o_.kernel_constraint);
    internal::set_config_fn(c, "recurrent_constraint", o_.recurrent_constraint);
    internal::set_config_fn(c, "bias_constraint", o_.bias_constraint);
    if (cell_ == Cell::kLSTM) c.set("unit_forget_bias", o_.unit_forget_bias);
    if (cell_ == Cell::kGRU) c.set("reset_after", o_.reset_after);
    c.set("dropout", o_.dropout).set("recurrent_dropout", o_.recurrent_dropout);
    c.set("return_sequences", o_.return_sequences).set("return_state", o_.return_state);
    c.set("go_backwards", o_.go_backwards);
    if (o_.zero_output_for_mask) c.set("zero_output_for_mask", true);
    c.set("seed", o_.seed);
    return c;
  }

 private:
  // Whether weft::rnn (oneDNN's primitives) computes this layer: its cells' activations, the
  // GRU's reset_after, and a dtype oneDNN has. Masks and recurrent dropout step with weft's ops.
  bool fits_onednn(DType dtype) const {
    return rnn_supported(dtype) && o_.activation == "tanh" &&
           (cell_ == Cell::kSimple || o_.recurrent_activation == "sigmoid") &&
           (cell_ != Cell::kGRU || o_.reset_after);
  }

  // The bias as oneDNN's cells take it: zeros without one; for the GRU, [b_z, b_r] of both
  // Keras biases added, then the candidate's input and recurrent parts.
  Tensor onednn_bias(const Tensor& input_bias, const Tensor& recurrent_bias) const {
    const int64_t u = units_;
    if (!input_bias.defined()) return zeros({rnn_bias_gates(cell_) * u}, kFloat32);
    if (cell_ != Cell::kGRU) return input_bias;
    return concat(
        {add(slice(input_bias, {Slice{0, 2 * u}}), slice(recurrent_bias, {Slice{0, 2 * u}})),
         gate(input_bias, 2, u), gate(recurrent_bias, 2, u)},
        0);
  }

  // One step of the cell: {output, states...}.
  std::vector<Tensor> step(const Tensor& xp, const std::vector<Tensor>& state, const Tensor& uk,
                           const Tensor& recurrent_bias, const Tensor& recurrent_keep) const {
    const int64_t u = units_;
    Tensor h = recurrent_keep.defined() ? mul(state[0], recurrent_keep) : state[0];
    switch (cell_) {
      case Cell::kSimple: {
        Tensor y = activation_(add(xp, matmul(h, uk)));
        return {y, y};
      }
      case Cell::kLSTM: {
        Tensor z = add(xp, matmul(h, uk));
        Tensor i = recurrent_activation_(gate(z, 0, u)), f = recurrent_activation_(gate(z, 1, u));
        Tensor g = activation_(gate(z, 2, u)), o = recurrent_activation_(gate(z, 3, u));
        Tensor c = add(mul(f, state[1]), mul(i, g));
        Tensor y = mul(o, activation_(c));
        return {y, y, c};
      }
      case Cell::kGRU: {
        Tensor candidate;
        Tensor z, r;
        if (o_.reset_after) {
          Tensor hu = matmul(h, uk);
          if (recurrent_bias.defined()) hu = add(hu, recurrent_bias);
          z = recurrent_activation_(add(gate(xp, 0, u), gate(hu, 0, u)));
          r = recurrent_activation_(add(gate(xp, 1, u), gate(hu, 1, u)));
          candidate = activation_(add(gate(xp, 2, u), mul(r, gate(hu, 2, u))));
        } else {
          Tensor zr = matmul(h, slice(uk, {Slice{}, Slice{0, 2 * u}}));
          z = recurrent_activation_(add(gate(xp, 0, u), gate(zr, 0, u)));
          r = recurrent_activation_(add(gate(xp, 1, u), gate(zr, 1, u)));
          candidate = activation_(
              add(gate(xp, 2, u), matmul(mul(r, h), slice(uk, {Slice{}, Slice{2 * u, 3 * u}}))));
        }
        Tensor y = add(mul(z, state[0]), mul(sub(1.0, z), candidate));
        return {y, y};
      }
    }
    return {};
  }

  // A keep mask scaled by 1 / (1 - rate), one value per (example, feature), keyed by the seed,
  // the step and each example's place in the global batch, as Dropout's.
  Tensor keep(DType dtype, const Shape& shape, int64_t which, double rate) {
    Tensor u = internal::keyed_uniform(seed_, calls_, shape, shape[1], /*streams=*/2,
                                       static_cast<uint64_t>(which));
    Tensor kept = greater_equal(u, Tensor::scalar(rate, kFloat32));
    return mul(cast(kept, dtype), 1.0 / (1.0 - rate));
  }

  Cell cell_;
  int64_t units_;
  RNNOptions o_;
  activations::Activation activation_, recurrent_activation_;
  Initializer kernel_init_, recurrent_init_, bias_init_;
  Seed seed_;
  std::atomic<uint64_t> calls_{0};
  Variable kernel_, recurrent_kernel_, bias_;
};

RNNOptions options_from_config(const ConfigDict& c) {
  RNNOptions o;
  o.activation = c.get_string("activation", o.activation);
  o.recurrent_activation = c.get_string("recurrent_activation", o.recurrent_activation);
  o.use_bias = c.get_bool("use_bias", o.use_bias);
  o.kernel_initializer = c.get_string("kernel_initializer", o.kernel_initializer);
  o.recurrent_initializer = c.get_string("recurrent_initializer", o.recurrent_initializer);
  o.bias_initializer = c.get_string("bias_initializer", o.bias_initializer);
  internal::read_kernel_bias_rules(c, o);
  o.recurrent_regularizer = internal::config_regularizer(c, "recurrent_regularizer");
  o.recurrent_constraint = internal::config_constraint(c, "recurrent_constraint");
  o.activity_regularizer = internal::config_regularizer(c, "activity_regularizer");
  o.unit_forget_bias = c.get_bool("unit_forget_bias", o.unit_forget_bias);
  o.reset_after = c.get_bool("reset_after", o.reset_after);
  o.dropout = c.get_double("dropout", 0);
  o.recurrent_dropout = c.get_double("recurrent_dropout", 0);
  o.return_sequences = c.get_bool("return_sequences", false);
  o.return_state = c.get_bool("return_state", false);
  o.go_backwards = c.get_bool("go_backwards", false);
  o.zero_output_for_mask = c.get_bool("zero_output_for_mask", false);
  o.seed = c.get_optional_int("seed");
  return o;
}

// ---- Bidirectional --------------------------------------------------------------------------

class BidirectionalImpl : public LayerImpl {
 public:
  BidirectionalImpl(const Layer& layer, BidirectionalOptions o)
      : LayerImpl("Bidirectional", o.name), merge_mode_(o.merge_mode) {
    auto* rnn = dynamic_cast<RNNImpl*>(&layer.impl());
    WEFT_CHECK(rnn != nullptr, InvalidArgument)
        << layer_label(*this) << ": wraps a SimpleRNN, LSTM or GRU, got a "
        << layer.impl().class_name();
    WEFT_CHECK(merge_mode_ == "concat" || merge_mode_ == "sum" || merge_mode_ == "mul" ||
                   merge_mode_ == "ave" || merge_mode_ == "none",
               InvalidArgument)
        << layer_label(*this) << ": merge_mode must be concat, sum, mul, ave or none, got \""
        << merge_mode_ << "\"";
    RNNOptions f = rnn->options();
    f.zero_output_for_mask = f.return_sequences;  // as Keras's Bidirectional
    f.name = "forward_" + layer.name();
    RNNOptions b = f;
    b.go_backwards = !f.go_backwards;
    b.name = "backward_" + layer.name();
    if (b.seed) b.seed = *b.seed + 1;
    forward_ = std::make_shared<RNNImpl>(rnn->cell(), rnn->units(), f);
    backward_ = std::make_shared<RNNImpl>(rnn->cell(), rnn->units(), b);
    wrapped_config_ = rnn->get_config();
  }
  bool supports_masking() const override { return forward_->options().return_sequences; }
  // The sequences carry the input's mask (both of them when not merged); the states none.
  std::vector<Tensor> compute_mask(const std::vector<Tensor>& xs) const override {
    std::vector<Tensor> masks = LayerImpl::compute_mask(xs);
    if (merge_mode_ == "none" && !masks.empty()) masks.push_back(masks[0]);
    return masks;
  }
  bool any_size(size_t axis) const override { return axis == 0; }
  std::vector<std::shared_ptr<LayerImpl>> sublayers() const override {
    return {forward_, backward_};
  }
  std::vector<Tensor> call_multi(const std::vector<Tensor>& xs, bool training) override {
    WEFT_CHECK(xs.size() == 1, InvalidArgument)
        << layer_label(*this) << " takes one input (initial states are not supported), got "
        << xs.size();
    std::vector<Tensor> f = Layer(forward_)(xs, training);
    std::vector<Tensor> b = Layer(backward_)(xs, training);
    Tensor fy = f[0], by = b[0];
    if (forward_->options().return_sequences) by = reverse_steps(by);
    std::vector<Tensor> out;
    if (merge_mode_ == "none") {
      out = {fy, by};
    } else if (merge_mode_ == "concat") {
      out = {concat({fy, by}, -1)};
    } else if (merge_mode_ == "sum") {
      out = {add(fy, by)};
    } else if (merge_mode_ == "mul") {
      out = {mul(fy, by)};
    } else {
      out = {mul(add(fy, by), 0.5)};
    }
    out.insert(out.end(), f.begin() + 1, f.end());
    out.insert(out.end(), b.begin() + 1, b.end());
    return out;
  }
  ConfigDict get_config() const override {
    ConfigDict c = LayerImpl::get_config();
    return c.set("merge_mode", merge_mode_)
        .set("layer",
             ConfigDict().set("class_name", forward_->class_name()).set("config", wrapped_config_));
  }

 private:
  std::string merge_mode_;
  std::shared_ptr<RNNImpl> forward_, backward_;
  ConfigDict wrapped_config_;
};

// ---- Masking and TimeDistributed --------------------------------------------------------------

class MaskingImpl : public LayerImpl {
 public:
  MaskingImpl(double value, const std::string& name) : LayerImpl("Masking", name), value_(value) {}
  bool any_size(size_t axis) const override { return axis == 0; }
  Tensor call(const Tensor& x, bool training) override {
    Tensor mask = any(not_equal(x, Tensor::scalar(value_, x.dtype())), {-1});
    return with_keras_mask(mul(x, cast(expand_dims(mask, -1), x.dtype())), mask);
  }
  ConfigDict get_config() const override {
    return LayerImpl::get_config().set("mask_value", value_);
  }

 private:
  double value_;
};

class TimeDistributedImpl : public LayerImpl {
 public:
  TimeDistributedImpl(const Layer& layer, const std::string& name)
      : LayerImpl("TimeDistributed", name), layer_(layer) {
    WEFT_CHECK(layer.defined(), InvalidArgument) << layer_label(*this) << ": the layer is empty";
  }
  bool supports_masking() const override { return true; }
  bool any_size(size_t axis) const override { return axis == 0; }
  std::vector<std::shared_ptr<LayerImpl>> sublayers() const override { return {layer_.impl_ptr()}; }
  void build(const Shape& shape) override {
    WEFT_CHECK(shape.size() >= 3, InvalidArgument)
        << layer_label(*this) << ": inputs must be (batch, steps, ...), got shape "
        << shape_str(shape);
  }
  Tensor call(const Tensor& x, bool training) override {
    Shape flat{x.dim(0) * x.dim(1)};
    flat.insert(flat.end(), x.shape().begin() + 2, x.shape().end());
    Tensor y = layer_(reshape(x, flat), training);
    Shape out{x.dim(0), x.dim(1)};
    out.insert(out.end(), y.shape().begin() + 1, y.shape().end());
    return reshape(y, out);
  }
  ConfigDict get_config() const override;

 private:
  Layer layer_;
};

}  // namespace

SimpleRNN::SimpleRNN(int64_t units, RNNOptions o)
    : Layer(std::make_shared<RNNImpl>(Cell::kSimple, units, std::move(o))) {}
LSTM::LSTM(int64_t units, RNNOptions o)
    : Layer(std::make_shared<RNNImpl>(Cell::kLSTM, units, std::move(o))) {}
GRU::GRU(int64_t units, RNNOptions o)
    : Layer(std::make_shared<RNNImpl>(Cell::kGRU, units, std::move(o))) {}

SimpleRNN SimpleRNN::from_config(const ConfigDict& c) {
  return internal::configured(SimpleRNN(c.get_int("units"), options_from_config(c)), c);
}
LSTM LSTM::from_config(const ConfigDict& c) {
  return internal::configured(LSTM(c.get_int("units"), options_from_config(c)), c);
}
GRU GRU::from_config(const ConfigDict& c) {
  return internal::configured(GRU(c.get_int("units"), options_from_config(c)), c);
}

Bidirectional::Bidirectional(const Layer& layer, BidirectionalOptions o)
    : Layer(std::make_shared<BidirectionalImpl>(layer, std::move(o))) {}

Bidirectional Bidirectional::from_config(const ConfigDict& c) {
  ConfigDict inner = c.get_dict("layer");
  std::string kind = inner.get_string("class_name");
  ConfigDict config = inner.get_dict("config");
  Layer layer;
  if (kind == "LSTM") {
    layer = LSTM::from_config(config);
  } else if (kind == "GRU") {
    layer = GRU::from_config(config);
  } else if (kind == "SimpleRNN") {
    layer = SimpleRNN::from_config(config);
  } else {
    WEFT_FAIL(InvalidArgument) << "Bidirectional config: wraps \"" << kind
                               << "\"; expected LSTM, GRU or SimpleRNN";
  }
  return internal::configured(
      Bidirectional(layer, {.merge_mode = c.get_string("merge_mode", "concat")}), c);
}

Masking::Masking(double mask_value, const std::string& name)
    : Layer(std::make_shared<MaskingImpl>(mask_value, name)) {}
Masking Masking::from_config(const ConfigDict& c) {
  return internal::configured(Masking(c.get_double("mask_value", 0)), c);
}

ConfigDict TimeDistributedImpl::get_config() const {
  return LayerImpl::get_config().set("layer", serialize(layer_));
}

TimeDistributed::TimeDistributed(const Layer& layer, const std::string& name)
    : Layer(std::make_shared<TimeDistributedImpl>(layer, name)) {}
TimeDistributed TimeDistributed::from_config(const ConfigDict& c) {
  return internal::configured(TimeDistributed(deserialize(c.get_dict("layer"))), c);
}

}  // namespace weft::nn
