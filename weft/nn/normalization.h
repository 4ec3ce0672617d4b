// keras.layers.BatchNormalization and LayerNormalization: x normalised to zero mean and unit
// variance, then scaled by gamma and shifted by beta (per feature along `axis`).
// BatchNormalization normalises with the batch's statistics over every axis but `axis` while
// training, and keeps moving averages of them (non-trainable weights) for inference; a layer
// set_trainable(false) always runs in inference mode, as in Keras 2. LayerNormalization
// normalises each example over `axis`. Half-precision inputs are normalised in float32.
//
//   weft::nn::BatchNormalization bn;                       // features on the last axis
//   weft::Tensor y = bn(x, /*training=*/true);             // also updates moving_mean/variance
//   weft::nn::LayerNormalization ln({.epsilon = 1e-6});
#pragma once

#include <string>

#include "weft/nn/layer.h"

namespace weft::nn {

struct BatchNormalizationOptions {
  int64_t axis = -1;  // the feature axis
  // moving = moving * momentum + batch statistic * (1 - momentum); the batch variance is the
  // biased one (divided by the number of values), as Keras's non-fused implementation.
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;  // add beta
  bool scale = true;   // multiply by gamma
  std::string beta_initializer = "zeros";
  std::string gamma_initializer = "ones";
  std::string moving_mean_initializer = "zeros";
  std::string moving_variance_initializer = "ones";
  // Applied to the normalised output, by Keras name ("" for none). "relu" runs inside the
  // training kernel (as TensorFlow's remapper fuses FusedBatchNorm with Relu): a following
  // Activation("relu") layer costs two more passes over the activations, forward and backward.
  std::string activation{};
  std::string dtype{};  // a policy name (weft/precision/policy.h); empty: the global policy
  std::string name{};
};

class BatchNormalization : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static BatchNormalization from_config(const ConfigDict& config);
  // Weights: gamma (if scale), beta (if center), then moving_mean and moving_variance (not
  // trainable), each of shape (features,).
  explicit BatchNormalization(BatchNormalizationOptions options = {});
};

// tf.keras.layers.experimental.SyncBatchNormalization: while training under a strategy, the
// mean and variance are those of the whole global batch, all-reduced across replicas (forward
// and backward), instead of each replica's slice; every replica then makes the same moving-
// statistics update. On one replica it computes what BatchNormalization does. A replica with
// no rows (a global batch smaller than the replica count) still takes part. A model with it
// trains each replica's rows in one pass, without --deterministic's micro-batches (whose count
// per replica differs): with --deterministic a run repeats its bits at a given replica count,
// and different replica counts agree to rounding.
class SyncBatchNormalization : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static SyncBatchNormalization from_config(const ConfigDict& config);
  explicit SyncBatchNormalization(BatchNormalizationOptions options = {});
};

struct LayerNormalizationOptions {
  int64_t axis = -1;  // the axis normalised over
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  std::string beta_initializer = "zeros";
  std::string gamma_initializer = "ones";
  std::string dtype{};  // a policy name (weft/precision/policy.h); empty: the global policy
  std::string name{};
};

class LayerNormalization : public Layer {
 public:
  // The layer get_config() describes (weft/nn/saving.h).
  static LayerNormalization from_config(const ConfigDict& config);
  // Weights: gamma (if scale), then beta (if center), each of shape (input_shape[axis],).
  explicit LayerNormalization(LayerNormalizationOptions options = {});
};

}  // namespace weft::nn
