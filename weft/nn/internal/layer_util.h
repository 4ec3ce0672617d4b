// Helpers shared by the layers of weft/nn: name lookups whose errors name the layer, Keras's
// padding spelling, and the shape a per-channel parameter broadcasts to.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "weft/nn/activations.h"
#include "weft/nn/initializers.h"
#include "weft/nn/layer.h"
#include "weft/ops/conv.h"

namespace weft::nn::internal {

// `Dense "dense_1"`: how error messages name a layer.
std::string layer_label(const LayerImpl& layer);

// activations::get / initializers::get, with the layer named in the InvalidArgument they throw.
activations::Activation activation_for(const LayerImpl& layer, const std::string& name);
Initializer initializer_for(const LayerImpl& layer, const std::string& argument,
                            const std::string& name);

// Keras's "valid" / "same" (any case) as the ops' "VALID" / "SAME"; InvalidArgument otherwise.
std::string op_padding(const LayerImpl& layer, const std::string& padding);

// `layer` with the name, trainable and dtype `config` holds: how every from_config ends.
template <typename L>
L configured(L layer, const ConfigDict& config) {
  layer.impl().restore_base_config(config);
  return layer;
}

// A {height, width} pair as a config holds it, [h, w]; and back, `fallback` when the field is
// absent or null (InvalidArgument unless it holds two integers).
std::vector<int64_t> config_pair(const Size2& s);
Size2 config_size2(const ConfigDict& config, const std::string& key, Size2 fallback);
// The last `rank` entries of a {depth, height, width} size, as users gave them: "{3, 3}" for a
// 2-D one.
std::string size_str(const Size3& s, int rank);
// A config's 3-D size: three integers (depth, height, width).
Size3 config_size3(const ConfigDict& config, const std::string& key, Size3 fallback);
// A 1-D size as a config holds it, [n]; `fallback` when absent or null.
int64_t config_size1(const ConfigDict& config, const std::string& key, int64_t fallback);

// Training-time uniform draws of `shape` keyed by a layer's seed, the step and each example's
// place in the global batch (Dropout's rule): in a strategy's step, example i at step s gets the
// draws [i * example_size, (i + 1) * example_size) of the stream keyed by (base, s), the same
// however the batch is cut among replicas and after a resume; outside one, the layer's call count
// (`calls`, incremented) takes the step's place. A layer drawing `streams` independent masks per
// step asks for stream 0, 1, ... of them.
Tensor keyed_uniform(Seed base, std::atomic<uint64_t>& calls, const Shape& shape,
                     int64_t example_size, uint64_t streams = 1, uint64_t stream = 0);

// A layer without weights that is a function of its input: `check` (optional) validates the
// input shape at build, `fn` computes, `config` adds the layer's options to its config;
// `masking`: whether it passes its input's mask on (supports_masking).
class FunctionLayerImpl : public LayerImpl {
 public:
  using Check = std::function<void(const LayerImpl&, const Shape&)>;
  using Fn = std::function<Tensor(const Tensor&)>;
  using Config = std::function<void(ConfigDict&)>;
  FunctionLayerImpl(std::string class_name, const std::string& name, const std::string& dtype,
                    Check check, Fn fn, Config config, bool masking = false)
      : LayerImpl(std::move(class_name), name, dtype),
        check_(std::move(check)),
        fn_(std::move(fn)),
        config_(std::move(config)),
        masking_(masking) {}
  void build(const Shape& input_shape) override {
    if (check_) check_(*this, input_shape);
  }
  bool supports_masking() const override { return masking_; }
  Tensor call(const Tensor& x, bool training) override { return fn_(x); }
  ConfigDict get_config() const override {
    ConfigDict c = LayerImpl::get_config();
    if (config_) config_(c);
    return c;
  }

 private:
  Check check_;
  Fn fn_;
  Config config_;
  bool masking_;
};

// A regularizer or constraint as a layer's config holds it under `key` (null for none), and
// back.
ConfigDict& set_config_fn(ConfigDict& config, const std::string& key, const Regularizer& r);
ConfigDict& set_config_fn(ConfigDict& config, const std::string& key, const Constraint& c);
Regularizer config_regularizer(const ConfigDict& config, const std::string& key);
Constraint config_constraint(const ConfigDict& config, const std::string& key);
// The kernel's and bias's regularizers and constraints a config holds, into options with Keras's
// field names (Dense, Conv1D, Conv2D, the recurrent layers).
template <typename Options>
void read_kernel_bias_rules(const ConfigDict& config, Options& o) {
  o.kernel_regularizer = config_regularizer(config, "kernel_regularizer");
  o.bias_regularizer = config_regularizer(config, "bias_regularizer");
  o.kernel_constraint = config_constraint(config, "kernel_constraint");
  o.bias_constraint = config_constraint(config, "bias_constraint");
}

// Keras's masked scores before a softmax: (1 - mask) times a large negative added (float16's
// lowest in float16), not -inf, so a fully masked row comes out uniform rather than NaN.
Tensor mask_scores(const Tensor& scores, const Tensor& mask);

// Throws InvalidArgument naming the layer unless `shape` (batch included) has rank `rank`.
void check_rank(const LayerImpl& layer, const Shape& shape, size_t rank, const char* layout);

}  // namespace weft::nn::internal
