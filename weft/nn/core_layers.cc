#include "weft/nn/core_layers.h"

#include <atomic>
#include <cmath>

#include "weft/nn/internal/layer_util.h"
#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft::nn {
namespace {

using internal::layer_label;

class FlattenImpl : public LayerImpl {
 public:
  explicit FlattenImpl(const LayerOptions& options)
      : LayerImpl("Flatten", options.name, options.dtype) {}
  Tensor call(const Tensor& x, bool training) override {
    int64_t features = 1;
    for (int64_t i = 1; i < x.rank(); ++i) features *= x.dim(i);
    return reshape(x, {x.dim(0), features});
  }
};

class ReshapeImpl : public LayerImpl {
 public:
  ReshapeImpl(Shape target, const LayerOptions& options)
      : LayerImpl("Reshape", options.name, options.dtype), target_(std::move(target)) {
    int unknown = 0;
    for (int64_t d : target_) {
      WEFT_CHECK(d > 0 || d == -1, InvalidArgument)
          << layer_label(*this) << ": target_shape " << shape_str(target_)
          << " may hold positive sizes and one -1, got " << d;
      unknown += d == -1;
    }
    WEFT_CHECK(unknown <= 1, InvalidArgument)
        << layer_label(*this) << ": target_shape " << shape_str(target_) << " has more than one -1";
  }

  void build(const Shape& input_shape) override {
    int64_t in = 1, known = 1;
    for (size_t i = 1; i < input_shape.size(); ++i) in *= input_shape[i];
    for (int64_t d : target_) known *= d == -1 ? 1 : d;
    bool has_unknown = std::find(target_.begin(), target_.end(), -1) != target_.end();
    WEFT_CHECK(has_unknown ? in % known == 0 : in == known, InvalidArgument)
        << layer_label(*this) << ": cannot reshape an input of shape " << shape_str(input_shape)
        << " (" << in << " values per example) to target_shape " << shape_str(target_);
    resolved_ = target_;
    for (int64_t& d : resolved_) {
      if (d == -1) d = in / known;
    }
    resolved_.insert(resolved_.begin(), 0);
  }

  ConfigDict get_config() const override {
    return LayerImpl::get_config().set("target_shape", std::vector<int64_t>(target_));
  }

  Tensor call(const Tensor& x, bool training) override {
    Shape shape = resolved_;
    shape[0] = x.dim(0);
    return reshape(x, shape);
  }

 private:
  Shape target_;
  Shape resolved_;  // batch slot first, then target_ with -1 resolved
};

class ActivationImpl : public LayerImpl {
 public:
  ActivationImpl(std::string activation, ActivationOptions options)
      : LayerImpl("Activation", options.name, options.dtype),
        activation_name_(std::move(activation)),
        activation_(internal::activation_for(*this, activation_name_)) {}
  bool supports_masking() const override { return true; }
  // The input arrives cast to the policy's compute dtype (LayerImpl::invoke).
  Tensor call(const Tensor& x, bool training) override { return activation_(x); }
  std::string describe() const override { return activation_name_; }
  ConfigDict get_config() const override {
    return LayerImpl::get_config().set("activation", activation_name_);
  }

 private:
  std::string activation_name_;
  activations::Activation activation_;
};

// Dropout, SpatialDropout1D/2D/3D and GaussianNoise: training-time noise whose draws are keyed by
// the layer's seed, the step and each example's place in the global batch.
enum class Noise { kDropout, kSpatial1D, kSpatial2D, kSpatial3D, kGaussian };

const char* noise_class(Noise k) {
  switch (k) {
    case Noise::kDropout:
      return "Dropout";
    case Noise::kSpatial1D:
      return "SpatialDropout1D";
    case Noise::kSpatial2D:
      return "SpatialDropout2D";
    case Noise::kSpatial3D:
      return "SpatialDropout3D";
    case Noise::kGaussian:
      return "GaussianNoise";
  }
  return "";
}

class NoiseImpl : public LayerImpl {
 public:
  bool supports_masking() const override { return true; }
  bool any_size(size_t) const override { return true; }  // elementwise, as Keras's (no input_spec)
  NoiseImpl(Noise kind, double rate, const DropoutOptions& options)
      : LayerImpl(noise_class(kind), options.name, options.dtype),
        kind_(kind),
        rate_(rate),
        seed_(options.seed ? Seed{*options.seed, -1} : Seed{}),
        seeded_(options.seed.has_value()) {
    if (kind == Noise::kGaussian) {
      WEFT_CHECK(rate >= 0 && std::isfinite(rate), InvalidArgument)
          << layer_label(*this) << ": stddev must be non-negative, got " << rate;
    } else {
      WEFT_CHECK(rate >= 0 && rate < 1, InvalidArgument)
          << layer_label(*this) << ": rate must be in [0, 1), got " << rate;
    }
  }

  ConfigDict get_config() const override {
    ConfigDict c =
        LayerImpl::get_config().set(kind_ == Noise::kGaussian ? "stddev" : "rate", rate_);
    return seeded_ ? c.set("seed", seed_[0]) : c.set("seed", nullptr);
  }

  // Without a seed of its own, the layer draws one when it is built: in its model's SeedScope.
  void build(const Shape& shape) override {
    if (kind_ == Noise::kSpatial1D) {
      internal::check_rank(*this, shape, 3, "(batch, steps, channels)");
    } else if (kind_ == Noise::kSpatial2D) {
      internal::check_rank(*this, shape, 4, "(batch, height, width, channels)");
    } else if (kind_ == Noise::kSpatial3D) {
      internal::check_rank(*this, shape, 5, "(batch, depth, height, width, channels)");
    }
    if (!seeded_) seed_ = random::next_seed();
  }

  Tensor call(const Tensor& x, bool training) override {
    if (!training || rate_ == 0 || x.numel() == 0) return x;
    WEFT_CHECK(is_floating(x.dtype()) && x.rank() >= 1, InvalidArgument)
        << layer_label(*this) << ": expected a floating input with a batch axis, got " << x.dtype()
        << " of shape " << shape_str(x.shape());
    if (kind_ == Noise::kGaussian) {
      // Box-Muller on two uniform draws per element.
      Shape twice = x.shape();
      twice[0] *= 2;
      Tensor u = uniform(twice, 2);
      Tensor u1 = slice(u, {Slice{0, x.dim(0)}}), u2 = slice(u, {Slice{x.dim(0), 2 * x.dim(0)}});
      Tensor radius = sqrt(mul(log(maximum(u1, 1e-12)), -2.0));
      Tensor z = mul(radius, cos(mul(u2, 2 * M_PI)));
      return add(x, cast(mul(z, rate_), x.dtype()));
    }
    // The mask has one value per example and channel for the spatial kinds (Keras's noise_shape).
    Shape mask_shape = x.shape();
    if (kind_ != Noise::kDropout) {
      for (int64_t a = 1; a + 1 < x.rank(); ++a) mask_shape[a] = 1;
    }
    Tensor keep = greater_equal(uniform(mask_shape, 1), Tensor::scalar(rate_, kFloat32));
    return mul(mul(x, cast(keep, x.dtype())), 1.0 / (1.0 - rate_));
  }

 private:
  // Uniform draws of `shape` (its first axis the examples; `per_example` rows of draws each),
  // keyed by seed, step and example (internal::keyed_uniform).
  Tensor uniform(const Shape& shape, int64_t per_example) {
    int64_t example_size = num_elements(shape) / shape[0] * per_example;
    if (per_example == 1) return internal::keyed_uniform(seed_, calls_, shape, example_size);
    // Several draws per example: the example's block, laid out as `per_example` stacked copies.
    Shape one = shape;
    one[0] /= per_example;
    Shape blocks{one[0], per_example};
    blocks.insert(blocks.end(), one.begin() + 1, one.end());
    Tensor u = internal::keyed_uniform(seed_, calls_, blocks, example_size);
    std::vector<int64_t> perm(blocks.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    std::swap(perm[0], perm[1]);
    return reshape(transpose(u, perm), shape);
  }

  Noise kind_;
  double rate_;  // GaussianNoise: the standard deviation
  Seed seed_;
  bool seeded_;
  std::atomic<uint64_t> calls_{0};
};

class LambdaImpl : public LayerImpl {
 public:
  LambdaImpl(Lambda::Fn fn, const LayerOptions& options)
      : LayerImpl("Lambda", options.name, options.dtype), fn_(std::move(fn)) {
    WEFT_CHECK(fn_ != nullptr, InvalidArgument) << layer_label(*this) << ": the function is empty";
  }
  Tensor call(const Tensor& x, bool training) override { return fn_(x, training); }

 private:
  Lambda::Fn fn_;
};

class EmbeddingImpl : public LayerImpl {
 public:
  EmbeddingImpl(int64_t input_dim, int64_t output_dim, const EmbeddingOptions& options)
      : LayerImpl("Embedding", options.name, options.dtype),
        input_dim_(input_dim),
        output_dim_(output_dim),
        init_name_(options.embeddings_initializer),
        mask_zero_(options.mask_zero),
        init_(internal::initializer_for(*this, "embeddings_initializer",
                                        options.embeddings_initializer)),
        regularizer_(options.embeddings_regularizer),
        constraint_(options.embeddings_constraint) {
    WEFT_CHECK(input_dim > 0 && output_dim > 0, InvalidArgument)
        << layer_label(*this) << ": input_dim and output_dim must be positive, got " << input_dim
        << " and " << output_dim;
    set_activity_regularizer(options.activity_regularizer);
  }

  bool any_size(size_t) const override { return true; }  // ids of any shape
  ConfigDict get_config() const override {
    ConfigDict c = LayerImpl::get_config();
    c.set("input_dim", input_dim_).set("output_dim", output_dim_);
    c.set("embeddings_initializer", init_name_).set("mask_zero", mask_zero_);
    internal::set_config_fn(c, "embeddings_regularizer", regularizer_);
    return internal::set_config_fn(c, "embeddings_constraint", constraint_);
  }

  void build(const Shape& input_shape) override {
    embeddings_ = add_weight("embeddings", {input_dim_, output_dim_}, init_, true, {},
                             VariableAggregation::NONE, regularizer_, constraint_);
  }

  Tensor call(const Tensor& x, bool training) override {
    Tensor ids = x.dtype() == kInt32 || x.dtype() == kInt64 ? x : cast(x, kInt64);
    if (ids.numel() > 0) {
      int64_t lo = min(ids).item<int64_t>(), hi = max(ids).item<int64_t>();
      WEFT_CHECK(lo >= 0 && hi < input_dim_, InvalidArgument)
          << layer_label(*this) << ": ids must be in [0, " << input_dim_ << ") (input_dim), got "
          << (lo < 0 ? lo : hi) << " in an input of shape " << shape_str(x.shape());
    }
    Tensor y = gather(cast_variable(embeddings_), ids, 0);
    if (mask_zero_) with_keras_mask(y, not_equal(ids, Tensor::scalar(0, ids.dtype())));
    return y;
  }

 private:
  int64_t input_dim_, output_dim_;
  std::string init_name_;
  bool mask_zero_;
  Initializer init_;
  Regularizer regularizer_;
  Constraint constraint_;
  Variable embeddings_;
};

class PositionEmbeddingImpl : public LayerImpl {
 public:
  PositionEmbeddingImpl(int64_t sequence_length, const PositionEmbeddingOptions& o)
      : LayerImpl("PositionEmbedding", o.name, o.dtype),
        length_(sequence_length),
        init_name_(o.initializer),
        init_(internal::initializer_for(*this, "initializer", o.initializer)) {
    WEFT_CHECK(sequence_length > 0, InvalidArgument)
        << layer_label(*this) << ": sequence_length must be positive, got " << sequence_length;
  }
  bool any_size(size_t axis) const override { return axis <= 1; }  // up to length_ steps
  ConfigDict get_config() const override {
    return LayerImpl::get_config().set("sequence_length", length_).set("initializer", init_name_);
  }
  void build(const Shape& shape) override {
    internal::check_rank(*this, shape, 3, "(batch, steps, features)");
    embeddings_ = add_weight("embeddings", {length_, shape[2]}, init_);
  }
  Tensor call(const Tensor& x, bool training) override {
    WEFT_CHECK(x.dim(1) <= length_, InvalidArgument)
        << layer_label(*this) << ": " << x.dim(1) << " steps, more than sequence_length "
        << length_;
    Tensor e = slice(cast_variable(embeddings_), {Slice{0, x.dim(1)}});
    return broadcast_to(expand_dims(e, 0), x.shape());
  }

 private:
  int64_t length_;
  std::string init_name_;
  Initializer init_;
  Variable embeddings_;
};

}  // namespace

Flatten::Flatten(LayerOptions options) : Layer(std::make_shared<FlattenImpl>(options)) {}

Reshape::Reshape(Shape target_shape, LayerOptions options)
    : Layer(std::make_shared<ReshapeImpl>(std::move(target_shape), options)) {}

Activation::Activation(const std::string& activation, ActivationOptions options)
    : Layer(std::make_shared<ActivationImpl>(activation, std::move(options))) {}

Dropout::Dropout(double rate, DropoutOptions options)
    : Layer(std::make_shared<NoiseImpl>(Noise::kDropout, rate, options)) {}
SpatialDropout1D::SpatialDropout1D(double rate, DropoutOptions options)
    : Layer(std::make_shared<NoiseImpl>(Noise::kSpatial1D, rate, options)) {}
SpatialDropout2D::SpatialDropout2D(double rate, DropoutOptions options)
    : Layer(std::make_shared<NoiseImpl>(Noise::kSpatial2D, rate, options)) {}
SpatialDropout3D::SpatialDropout3D(double rate, DropoutOptions options)
    : Layer(std::make_shared<NoiseImpl>(Noise::kSpatial3D, rate, options)) {}
GaussianNoise::GaussianNoise(double stddev, DropoutOptions options)
    : Layer(std::make_shared<NoiseImpl>(Noise::kGaussian, stddev, options)) {}

Lambda::Lambda(std::function<Tensor(const Tensor&)> fn, LayerOptions options)
    : Lambda(fn ? Fn([fn](const Tensor& x, bool) { return fn(x); }) : Fn(), options) {}
Lambda::Lambda(Fn fn, LayerOptions options)
    : Layer(std::make_shared<LambdaImpl>(std::move(fn), options)) {}

Embedding::Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options)
    : Layer(std::make_shared<EmbeddingImpl>(input_dim, output_dim, options)) {}

Flatten Flatten::from_config(const ConfigDict& c) { return internal::configured(Flatten(), c); }

Reshape Reshape::from_config(const ConfigDict& c) {
  return internal::configured(Reshape(c.get_ints("target_shape")), c);
}

Activation Activation::from_config(const ConfigDict& c) {
  return internal::configured(Activation(c.get_string("activation")), c);
}

namespace {
template <typename L>
L noise_from_config(const ConfigDict& c, const char* amount) {
  DropoutOptions o;
  o.seed = c.get_optional_int("seed");
  return internal::configured(L(c.get_double(amount), o), c);
}
}  // namespace

Dropout Dropout::from_config(const ConfigDict& c) { return noise_from_config<Dropout>(c, "rate"); }
SpatialDropout1D SpatialDropout1D::from_config(const ConfigDict& c) {
  return noise_from_config<SpatialDropout1D>(c, "rate");
}
SpatialDropout2D SpatialDropout2D::from_config(const ConfigDict& c) {
  return noise_from_config<SpatialDropout2D>(c, "rate");
}
SpatialDropout3D SpatialDropout3D::from_config(const ConfigDict& c) {
  return noise_from_config<SpatialDropout3D>(c, "rate");
}
GaussianNoise GaussianNoise::from_config(const ConfigDict& c) {
  return noise_from_config<GaussianNoise>(c, "stddev");
}

PositionEmbedding::PositionEmbedding(int64_t sequence_length, PositionEmbeddingOptions o)
    : Layer(std::make_shared<PositionEmbeddingImpl>(sequence_length, o)) {}
PositionEmbedding PositionEmbedding::from_config(const ConfigDict& c) {
  return internal::configured(
      PositionEmbedding(c.get_int("sequence_length"),
                        {.initializer = c.get_string("initializer", "glorot_uniform")}),
      c);
}

Embedding Embedding::from_config(const ConfigDict& c) {
  EmbeddingOptions o;
  o.embeddings_initializer = c.get_string("embeddings_initializer", o.embeddings_initializer);
  o.mask_zero = c.get_bool("mask_zero", false);
  o.embeddings_regularizer = internal::config_regularizer(c, "embeddings_regularizer");
  o.embeddings_constraint = internal::config_constraint(c, "embeddings_constraint");
  return internal::configured(Embedding(c.get_int("input_dim"), c.get_int("output_dim"), o), c);
}

}  // namespace weft::nn
