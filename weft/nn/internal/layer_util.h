// Helpers shared by the layers of weft/nn: name lookups whose errors name the layer, Keras's
// padding spelling, and the shape a per-channel parameter broadcasts to.
#pragma once

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
// A 1-D size as a config holds it, [n]; `fallback` when absent or null.
int64_t config_size1(const ConfigDict& config, const std::string& key, int64_t fallback);

// Throws InvalidArgument naming the layer unless `shape` (batch included) has rank `rank`.
void check_rank(const LayerImpl& layer, const Shape& shape, size_t rank, const char* layout);

}  // namespace weft::nn::internal
