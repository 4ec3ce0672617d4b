// Saved models, as Keras's model.save(path) and load_model(path): a directory holding
// `model.json` (the architecture as each layer's get_config(), the compile settings, a format
// version and a CRC32C of the rest) and `variables/`, a checkpoint (SPEC §5) of the model's
// weights and the optimizer's state. Sequential and Functional models, nested ones included.
//
//   model.save("/models/fashion");                      // the chief only, under a strategy
//   weft::nn::Model loaded = weft::nn::load_model("/models/fashion");
//   weft::Tensor logits = loaded.predict(x);            // the same bits as model.predict(x)
//
// A layer class of your own is saved through its get_config() and made again by the factory
// registered under its class name (Keras's custom_objects):
//
//   weft::nn::register_layer("Scale", [](const weft::ConfigDict& c) {
//     return weft::nn::Layer(std::make_shared<ScaleImpl>(c.get_double("factor")));
//   });
//
// load_model applies the config's name, trainable and dtype to what a factory returns.
#pragma once

#include <functional>
#include <string>

#include "weft/core/config_dict.h"
#include "weft/nn/model.h"

namespace weft::nn {

// The saved-model format this weft writes; it reads this version and older ones.
inline constexpr int kSavedModelFormatVersion = 1;
inline constexpr const char* kSavedModelFileName = "model.json";
inline constexpr const char* kSavedModelVariablesDir = "variables";

using LayerFactory = std::function<Layer(const ConfigDict& config)>;

// Makes `factory` the way to load layers of `class_name` (LayerImpl's class name). A later
// registration replaces an earlier one; InvalidArgument for an empty name, an empty factory, or
// the name of a built-in layer.
void register_layer(const std::string& class_name, LayerFactory factory);

// {"class_name": ..., "config": get_config()}: a layer or model as a saved model holds it
// (tf.keras.layers.serialize), and back. deserialize throws InvalidArgument naming an unknown
// class and what to do about it.
ConfigDict serialize(const Layer& layer);
Layer deserialize(const ConfigDict& config);

struct LoadOptions {
  // Compile the model with the saved optimizer (and its state), loss and metrics, when the saved
  // model has them.
  bool compile = true;
};

// Loads a saved model. Variables are made in the strategy in scope (load under another strategy's
// scope() to train or predict under it). Refused, naming the file: a directory without
// model.json (FailedPrecondition); a damaged file or checkpoint (DataLoss); a newer format
// (FailedPrecondition); an unknown layer class or a bad field (InvalidArgument).
Model load_model(const std::string& dir, const LoadOptions& options = {});

}  // namespace weft::nn
