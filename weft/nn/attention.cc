#include "weft/nn/attention.h"

#include <array>
#include <atomic>
#include <cmath>
#include <utility>

#include "weft/nn/internal/layer_util.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/linalg.h"
#include "weft/ops/nn.h"
#include "weft/ops/random.h"
#include "weft/ops/shape_ops.h"

namespace weft::nn {
namespace {

using internal::layer_label;
using internal::mask_scores;

// The arguments of a call that are not tensors. invoke passes tensors and `training` only, so
// MultiHeadAttention::call and Attention::call set them on this thread for the length of theirs.
struct CallFlags {
  bool causal = false;
  bool return_scores = false;
};
thread_local CallFlags t_flags;

class CallFlagsScope {
 public:
  explicit CallFlagsScope(CallFlags flags) : saved_(std::exchange(t_flags, flags)) {}
  ~CallFlagsScope() { t_flags = saved_; }
  CallFlagsScope(const CallFlagsScope&) = delete;
  CallFlagsScope& operator=(const CallFlagsScope&) = delete;

 private:
  CallFlags saved_;
};

// Where value, key and mask are among the inputs {query, value, key, mask}: key defaults to the
// value, and one input is self-attention (query = value = key).
struct Roles {
  size_t value, key;
  bool has_mask;
};
Roles roles(size_t inputs) {
  size_t value = inputs > 1 ? 1 : 0;
  return {value, inputs > 2 ? 2 : value, inputs > 3};
}

std::vector<Shape> shapes_of(const std::vector<Tensor>& xs) {
  std::vector<Shape> out;
  for (const Tensor& x : xs) out.push_back(x.shape());
  return out;
}

// (t, s) bool, true where j <= i: aligned top-left, as Keras's `causal` and band_part masks.
Tensor causal_mask(int64_t t, int64_t s) {
  return less_equal(expand_dims(arange(0, s, 1, kInt64), 0),
                    expand_dims(arange(0, t, 1, kInt64), 1));
}

Tensor both(const Tensor& mask, const Tensor& other) {
  return mask.defined() ? logical_and(mask, other) : other;
}

// What the two layers share: the input checks, a dropout rate and its keyed masks.
class AttentionBase : public LayerImpl {
 public:
  AttentionBase(std::string class_name, const std::string& name, const std::string& dtype,
                double dropout, std::optional<int64_t> seed, size_t max_inputs)
      : LayerImpl(std::move(class_name), name, dtype),
        dropout_(dropout),
        seed_option_(seed),
        seed_(seed ? Seed{*seed, -13} : Seed{}),
        max_inputs_(max_inputs) {
    WEFT_CHECK(dropout >= 0 && dropout < 1, InvalidArgument)
        << layer_label(*this) << ": dropout must be in [0, 1), got " << dropout;
  }
  // call_multi checks every input: steps may change from call to call, masks take several shapes.
  size_t checked_inputs() const override { return 0; }
  ConfigDict get_config() const override {
    return LayerImpl::get_config().set("dropout", dropout_).set("seed", seed_option_);
  }

 protected:
  // Inputs of rank 3 with one batch size, the value and key with the same steps.
  void check_inputs(const std::vector<Shape>& s) const {
    const bool takes_mask = max_inputs_ == 4;  // MultiHeadAttention
    WEFT_CHECK(!s.empty() && s.size() <= max_inputs_, InvalidArgument)
        << layer_label(*this) << " takes "
        << (takes_mask ? "{query, value, key, attention_mask}" : "{query, value, key}")
        << " (all but the query optional), got " << s.size() << " inputs";
    Roles r = roles(s.size());
    const std::array<std::pair<const char*, size_t>, 3> inputs{
        {{"query", 0}, {"value", r.value}, {"key", r.key}}};
    for (const auto& [what, i] : inputs) {
      WEFT_CHECK(s[i].size() == 3, InvalidArgument)
          << layer_label(*this) << ": " << what << " has shape " << shape_str(s[i])
          << "; expected rank 3, (batch, steps, features)"
          << (takes_mask ? " (only the default attention_axes is supported)" : "");
    }
    WEFT_CHECK(s[r.value][0] == s[0][0] && s[r.key][0] == s[0][0] && s[r.key][1] == s[r.value][1],
               InvalidArgument)
        << layer_label(*this) << ": query " << shape_str(s[0]) << ", value "
        << shape_str(s[r.value]) << " and key " << shape_str(s[r.key])
        << " must have one batch size, and the value and key the same steps";
  }
  void draw_seed() {
    if (!seed_option_) seed_ = random::next_seed();
  }
  // Keras's inverted dropout of attention probabilities when training, keyed as Dropout's masks.
  Tensor drop(const Tensor& probs, bool training) {
    if (!training || dropout_ == 0 || probs.numel() == 0) return probs;
    Tensor u = internal::keyed_uniform(seed_, calls_, probs.shape(), probs.numel() / probs.dim(0));
    Tensor kept = greater_equal(u, Tensor::scalar(dropout_, kFloat32));
    return mul(mul(probs, cast(kept, probs.dtype())), 1.0 / (1.0 - dropout_));
  }
  // {output}, and the scores when call() asks.
  static std::vector<Tensor> outputs(const Tensor& y, const Tensor& scores) {
    if (t_flags.return_scores) return {y, scores};
    return {y};
  }

 private:
  double dropout_;
  std::optional<int64_t> seed_option_;
  Seed seed_;
  size_t max_inputs_;
  std::atomic<uint64_t> calls_{0};
};

// ---- MultiHeadAttention -------------------------------------------------------------------------

const std::array<const char*, 4> kProjections = {"query", "key", "value", "attention_output"};

class MultiHeadAttentionImpl : public AttentionBase {
 public:
  MultiHeadAttentionImpl(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions o)
      : AttentionBase("MultiHeadAttention", o.name, o.dtype, o.dropout, o.seed, 4),
        heads_(num_heads),
        key_dim_(key_dim),
        value_dim_(o.value_dim.value_or(key_dim)),
        o_(std::move(o)),
        kernel_init_(internal::initializer_for(*this, "kernel_initializer", o_.kernel_initializer)),
        bias_init_(internal::initializer_for(*this, "bias_initializer", o_.bias_initializer)) {
    WEFT_CHECK(heads_ > 0 && key_dim_ > 0 && value_dim_ > 0 && o_.output_shape.value_or(1) > 0,
               InvalidArgument)
        << layer_label(*this) << ": num_heads (" << heads_ << "), key_dim (" << key_dim_
        << "), value_dim (" << value_dim_ << ") and output_shape (" << o_.output_shape.value_or(1)
        << ") must be positive";
  }

  void build_multi(const std::vector<Shape>& shapes) override {
    check_inputs(shapes);
    Roles r = roles(shapes.size());
    features_ = {shapes[0][2], shapes[r.key][2], shapes[r.value][2]};
    const int64_t out = o_.output_shape.value_or(shapes[0][2]);
    // Keras's EinsumDense kernels: (D, heads, dim) for the projections, (heads, value_dim, E) for
    // the output; their Glorot fans follow from these 3-D shapes.
    const std::array<Shape, 4> kernels{
        Shape{features_[0], heads_, key_dim_}, Shape{features_[1], heads_, key_dim_},
        Shape{features_[2], heads_, value_dim_}, Shape{heads_, value_dim_, out}};
    for (size_t i = 0; i < 4; ++i) {
      const std::string name = kProjections[i];
      kernels_[i] = add_weight(name + "/kernel", kernels[i], kernel_init_);
      Shape bias = i < 3 ? Shape{kernels[i][1], kernels[i][2]} : Shape{out};
      if (o_.use_bias) biases_[i] = add_weight(name + "/bias", bias, bias_init_);
    }
    draw_seed();
  }

  std::vector<Tensor> call_multi(const std::vector<Tensor>& xs, bool training) override {
    check(xs);
    Roles r = roles(xs.size());
    const Tensor &query = xs[0], &value = xs[r.value];
    const int64_t n = query.dim(0), t = query.dim(1), s = value.dim(1);
    // The query is scaled after its bias, by the reciprocal, as Keras.
    Tensor q = mul(project(query, 0, key_dim_), 1.0 / std::sqrt(static_cast<double>(key_dim_)));
    Tensor scores = matmul(q, project(xs[r.key], 1, key_dim_), false, true);  // (B, N, T, S)
    Tensor mask = r.has_mask ? xs[3] : Tensor();
    if (t_flags.causal) mask = both(mask, causal_mask(t, s));
    if (mask.defined()) {
      while (mask.rank() < 4) mask = expand_dims(mask, -3);  // at the heads axis, as Keras
      scores = mask_scores(scores, mask);
    }
    Tensor probs = softmax(scores, -1);
    Tensor context = matmul(drop(probs, training), project(value, 2, value_dim_));
    context = reshape(transpose(context, {0, 2, 1, 3}), {n, t, heads_ * value_dim_});
    Tensor out_kernel = cast_variable(kernels_[3]);
    Tensor y = matmul(context, reshape(out_kernel, {heads_ * value_dim_, out_kernel.dim(2)}));
    if (o_.use_bias) y = add(y, cast_variable(biases_[3]));
    return outputs(y, probs);
  }

  ConfigDict get_config() const override {
    ConfigDict c = AttentionBase::get_config();
    c.set("num_heads", heads_).set("key_dim", key_dim_).set("value_dim", value_dim_);
    c.set("use_bias", o_.use_bias).set("output_shape", o_.output_shape);
    c.set("attention_axes", nullptr);
    c.set("kernel_initializer", o_.kernel_initializer);
    return c.set("bias_initializer", o_.bias_initializer);
  }

 private:
  // The checks of check_inputs, the features the layer was built for, and the mask's shape.
  void check(const std::vector<Tensor>& xs) const {
    check_inputs(shapes_of(xs));
    Roles r = roles(xs.size());
    const std::array<std::pair<const char*, size_t>, 3> inputs{
        {{"query", 0}, {"key", r.key}, {"value", r.value}}};
    for (size_t k = 0; k < 3; ++k) {
      const auto& [what, i] = inputs[k];
      WEFT_CHECK(xs[i].dim(2) == features_[k], InvalidArgument)
          << layer_label(*this) << ": " << what << " has shape " << shape_str(xs[i].shape())
          << ", but the layer was built for " << features_[k] << " " << what << " features";
    }
    if (!r.has_mask) return;
    const Shape& m = xs[3].shape();
    const Shape full{xs[0].dim(0), xs[0].dim(1), xs[r.value].dim(1)};
    bool fits = m.size() == 2 || m.size() == 3;
    for (size_t a = 0; fits && a < m.size(); ++a) {
      int64_t want = full[a + 3 - m.size()];
      fits = m[a] == want || m[a] == 1;
    }
    WEFT_CHECK(fits, InvalidArgument)
        << layer_label(*this) << ": attention_mask has shape " << shape_str(m)
        << ", which does not broadcast to (batch, T, S) = " << shape_str(full)
        << "; expected (T, S), (batch, T, S) or (batch, 1, S)";
  }

  // x (B, L, D) through projection i: (B, heads, L, dim).
  Tensor project(const Tensor& x, size_t i, int64_t dim) const {
    Tensor y = matmul(x, reshape(cast_variable(kernels_[i]), {x.dim(2), heads_ * dim}));
    if (o_.use_bias) y = add(y, reshape(cast_variable(biases_[i]), {heads_ * dim}));
    return transpose(reshape(y, {x.dim(0), x.dim(1), heads_, dim}), {0, 2, 1, 3});
  }

  int64_t heads_, key_dim_, value_dim_;
  MultiHeadAttentionOptions o_;
  Initializer kernel_init_, bias_init_;
  std::array<int64_t, 3> features_{};  // of the query, key and value
  std::array<Variable, 4> kernels_, biases_;
};

// ---- Attention ----------------------------------------------------------------------------------

class AttentionImpl : public AttentionBase {
 public:
  explicit AttentionImpl(const AttentionOptions& o)
      : AttentionBase("Attention", o.name, o.dtype, o.dropout, o.seed, 3),
        use_scale_(o.use_scale),
        causal_(o.causal) {}
  bool supports_masking() const override { return true; }

  void build_multi(const std::vector<Shape>& shapes) override {
    check_inputs(shapes);
    if (use_scale_) scale_ = add_weight("scale", {}, initializers::ones());
    draw_seed();
  }

  std::vector<Tensor> call_multi(const std::vector<Tensor>& xs, bool training) override {
    check_inputs(shapes_of(xs));
    Roles r = roles(xs.size());
    const Tensor &query = xs[0], &value = xs[r.value], &key = xs[r.key];
    WEFT_CHECK(query.dim(2) == key.dim(2), InvalidArgument)
        << layer_label(*this) << ": query " << shape_str(query.shape()) << " and key "
        << shape_str(key.shape()) << " must have the same features";
    Tensor query_mask = keras_mask(query), value_mask = keras_mask(value);
    check_mask("query", query_mask, query);
    check_mask("value", value_mask, value);
    Tensor scores = matmul(query, key, false, true);  // (B, Tq, Tv)
    if (use_scale_) scores = mul(scores, cast_variable(scale_));
    Tensor mask = value_mask.defined() ? expand_dims(value_mask, 1) : Tensor();
    if (causal_ || t_flags.causal) mask = both(mask, causal_mask(query.dim(1), value.dim(1)));
    if (mask.defined()) scores = mask_scores(scores, mask);
    Tensor weights = drop(softmax(scores, -1), training);
    Tensor y = matmul(weights, value);
    if (query_mask.defined()) y = mul(y, cast(expand_dims(query_mask, -1), y.dtype()));
    return outputs(y, weights);
  }

  ConfigDict get_config() const override {
    return AttentionBase::get_config().set("use_scale", use_scale_).set("causal", causal_);
  }

 private:
  void check_mask(const char* what, const Tensor& mask, const Tensor& x) const {
    const Shape steps{x.dim(0), x.dim(1)};
    WEFT_CHECK(!mask.defined() || mask.shape() == steps, InvalidArgument)
        << layer_label(*this) << ": the " << what << "'s mask has shape " << shape_str(mask.shape())
        << "; expected (batch, steps) = " << shape_str(steps);
  }

  bool use_scale_, causal_;
  Variable scale_;
};

}  // namespace

MultiHeadAttention::MultiHeadAttention(int64_t num_heads, int64_t key_dim,
                                       MultiHeadAttentionOptions options)
    : Layer(std::make_shared<MultiHeadAttentionImpl>(num_heads, key_dim, std::move(options))) {}

AttentionResult MultiHeadAttention::call(const Tensor& query, const Tensor& value,
                                         const MultiHeadAttentionCall& args) const {
  std::vector<Tensor> xs{query, value};
  if (args.key.defined() || args.attention_mask.defined()) {
    xs.push_back(args.key.defined() ? args.key : value);
  }
  if (args.attention_mask.defined()) xs.push_back(args.attention_mask);
  CallFlagsScope flags({.causal = args.use_causal_mask, .return_scores = true});
  std::vector<Tensor> out = impl().invoke(xs, args.training);
  return {out[0], out[1]};
}

MultiHeadAttention MultiHeadAttention::from_config(const ConfigDict& c) {
  if (!c.is_null("attention_axes")) {
    std::vector<int64_t> axes = c.get_ints("attention_axes");
    WEFT_CHECK(axes == std::vector<int64_t>{1} || axes == std::vector<int64_t>{-2}, InvalidArgument)
        << "MultiHeadAttention config: only the default attention_axes (the steps of (batch, "
           "steps, features) inputs) is supported";
  }
  MultiHeadAttentionOptions o;
  o.value_dim = c.get_optional_int("value_dim");
  o.dropout = c.get_double("dropout", 0);
  o.use_bias = c.get_bool("use_bias", true);
  o.output_shape = c.get_optional_int("output_shape");
  o.kernel_initializer = c.get_string("kernel_initializer", o.kernel_initializer);
  o.bias_initializer = c.get_string("bias_initializer", o.bias_initializer);
  o.seed = c.get_optional_int("seed");
  return internal::configured(MultiHeadAttention(c.get_int("num_heads"), c.get_int("key_dim"), o),
                              c);
}

Attention::Attention(AttentionOptions options) : Layer(std::make_shared<AttentionImpl>(options)) {}

AttentionResult Attention::call(const Tensor& query, const Tensor& value,
                                const AttentionCall& args) const {
  std::vector<Tensor> xs{query, value};
  if (args.key.defined()) xs.push_back(args.key);
  CallFlagsScope flags({.causal = args.use_causal_mask, .return_scores = true});
  std::vector<Tensor> out = impl().invoke(xs, args.training);
  return {out[0], out[1]};
}

Attention Attention::from_config(const ConfigDict& c) {
  return internal::configured(Attention({.use_scale = c.get_bool("use_scale", false),
                                         .causal = c.get_bool("causal", false),
                                         .dropout = c.get_double("dropout", 0),
                                         .seed = c.get_optional_int("seed")}),
                              c);
}

}  // namespace weft::nn
