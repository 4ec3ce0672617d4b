// Keras's core layers without weights (Flatten, Reshape, Activation, Dropout, SpatialDropout1D/2D,
// GaussianNoise, Lambda) and Embedding.
//
//   weft::nn::Flatten flat;                                    // (n, 7, 7, 32) -> (n, 1568)
//   weft::nn::Reshape to_image({28, 28, 1});                   // batch dimension excluded; -1 ok
//   weft::nn::Activation probs("softmax", {.dtype = "float32"});
//   weft::nn::Dropout drop(0.5, {.seed = 42});                 // active only when training
//   weft::nn::Embedding embed(10000, 64);                      // int ids (n, t) -> (n, t, 64)
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "weft/nn/layer.h"
#include "weft/nn/regularizers.h"

namespace weft::nn {

struct LayerOptions {
  std::string dtype{};  // a policy name (weft/precision/policy.h); empty: the global policy
  std::string name{};
};

// (batch, d1, d2, ...) -> (batch, d1 * d2 * ...).
class Flatten : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static Flatten from_config(const ConfigDict& config);
  explicit Flatten(LayerOptions options = {});
};

// (batch, ...) -> (batch, target_shape...); one entry of target_shape may be -1 (inferred).
class Reshape : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static Reshape from_config(const ConfigDict& config);
  explicit Reshape(Shape target_shape, LayerOptions options = {});
};

struct ActivationOptions {
  // A policy name ("float32", ...): the input is cast to its compute dtype before the
  // activation, so a softmax after bfloat16 layers runs in float32. Empty: the global policy.
  std::string dtype{};
  std::string name{};
};

// An activation by Keras name ("relu", "softmax", ...) as a layer.
class Activation : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static Activation from_config(const ConfigDict& config);
  explicit Activation(const std::string& activation, ActivationOptions options = {});
};

struct DropoutOptions {
  // Masks are stateless Philox draws keyed by this seed, the training step and each example's
  // index in the global batch (in a strategy's step, fit's included), so they do not depend on
  // how the batch is cut among replicas and survive a resume; a call outside a step counts as the
  // next step of this layer. Default: random::next_seed() when the layer is built (which, in a
  // model, follows the model's structure).
  std::optional<int64_t> seed{};
  std::string dtype{};  // a policy name (weft/precision/policy.h); empty: the global policy
  std::string name{};
};

// Inverted dropout: while training, each element is zeroed with probability `rate` and the rest
// are scaled by 1 / (1 - rate); at inference the layer is the identity. rate is in [0, 1).
class Dropout : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static Dropout from_config(const ConfigDict& config);
  explicit Dropout(double rate, DropoutOptions options = {});
};

// Dropout of whole channels: one draw per example and channel, for (batch, steps, channels)
// (1D), (batch, height, width, channels) (2D) and (batch, depth, height, width, channels) (3D)
// inputs; otherwise as Dropout.
class SpatialDropout1D : public Layer {
 public:
  static SpatialDropout1D from_config(const ConfigDict& config);
  explicit SpatialDropout1D(double rate, DropoutOptions options = {});
};
class SpatialDropout2D : public Layer {
 public:
  static SpatialDropout2D from_config(const ConfigDict& config);
  explicit SpatialDropout2D(double rate, DropoutOptions options = {});
};
class SpatialDropout3D : public Layer {
 public:
  static SpatialDropout3D from_config(const ConfigDict& config);
  explicit SpatialDropout3D(double rate, DropoutOptions options = {});
};

// Adds zero-mean Gaussian noise of standard deviation `stddev` while training (the identity at
// inference); draws keyed as Dropout's.
class GaussianNoise : public Layer {
 public:
  static GaussianNoise from_config(const ConfigDict& config);
  explicit GaussianNoise(double stddev, DropoutOptions options = {});
};

// A C++ callable as a layer (keras.layers.Lambda): call(x) = fn(x), or fn(x, training). It has
// no weights. A model holding one saves its config but not the function: to load it, register a
// factory for "Lambda" with weft::nn::register_layer (weft/nn/saving.h).
class Lambda : public Layer {
 public:
  using Fn = std::function<Tensor(const Tensor& x, bool training)>;
  explicit Lambda(std::function<Tensor(const Tensor& x)> fn, LayerOptions options = {});
  Lambda(Fn fn, LayerOptions options);
};

struct EmbeddingOptions {
  std::string embeddings_initializer = "random_uniform";
  // Id 0 is padding: the output carries a mask of the ids that are not 0 (keras_mask), which
  // recurrent layers skip.
  bool mask_zero = false;
  Regularizer embeddings_regularizer{};  // weft/nn/regularizers.h
  Regularizer activity_regularizer{};
  Constraint embeddings_constraint{};
  std::string dtype{};  // a policy name (weft/precision/policy.h); empty: the global policy
  std::string name{};
};

// Looks integer ids in [0, input_dim) up in an (input_dim, output_dim) table: (batch, ...) ->
// (batch, ..., output_dim). Floating ids are truncated to integers, as Keras casts them.
class Embedding : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static Embedding from_config(const ConfigDict& config);
  Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options = {});
};

struct PositionEmbeddingOptions {
  std::string initializer = "glorot_uniform";
  std::string dtype{};
  std::string name{};
};

// A learned embedding of each step's position, as keras_nlp's PositionEmbedding (TF 2.4 has none;
// Keras's ViT and Transformer examples write one): (batch, steps, features) -> the embeddings of
// positions 0 .. steps - 1, (steps, features) broadcast over the batch, for the caller to add.
// steps may be at most sequence_length.
class PositionEmbedding : public Layer {
 public:
  static PositionEmbedding from_config(const ConfigDict& config);
  explicit PositionEmbedding(int64_t sequence_length, PositionEmbeddingOptions options = {});
};

}  // namespace weft::nn
