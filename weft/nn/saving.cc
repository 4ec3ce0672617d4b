#include "weft/nn/saving.h"

#include <sys/stat.h>
#include <unistd.h>

#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "weft/autodiff/tape.h"
#include "weft/checkpoint/checkpoint_io.h"
#include "weft/checkpoint/trackable.h"
#include "weft/core/crc32c.h"
#include "weft/core/errors.h"
#include "weft/core/file_io.h"
#include "weft/nn/activation_layers.h"
#include "weft/nn/attention.h"
#include "weft/nn/conv.h"
#include "weft/nn/core_layers.h"
#include "weft/nn/dense.h"
#include "weft/nn/merging.h"
#include "weft/nn/normalization.h"
#include "weft/nn/pooling.h"
#include "weft/nn/preprocessing.h"
#include "weft/nn/recurrent.h"
#include "weft/nn/reshaping.h"
#include "weft/ops/creation.h"
#include "weft/version.h"

namespace weft::nn {
namespace {

constexpr const char* kFormatName = "weft-saved-model";

template <typename L>
LayerFactory built_in() {
  return [](const ConfigDict& c) -> Layer { return L::from_config(c); };
}

Layer sequential_from_config(const ConfigDict& c);
Layer functional_from_config(const ConfigDict& c);

const std::map<std::string, LayerFactory>& built_in_layers() {
  static const std::map<std::string, LayerFactory> layers{
      {"TimeDistributed", built_in<TimeDistributed>()},
      {"SimpleRNN", built_in<SimpleRNN>()},
      {"Masking", built_in<Masking>()},
      {"LSTM", built_in<LSTM>()},
      {"GRU", built_in<GRU>()},
      {"Bidirectional", built_in<Bidirectional>()},
      {"Activation", built_in<Activation>()},
      {"Add", built_in<Add>()},
      {"Attention", built_in<Attention>()},
      {"Average", built_in<Average>()},
      {"AveragePooling1D", built_in<AveragePooling1D>()},
      {"AveragePooling2D", built_in<AveragePooling2D>()},
      {"AveragePooling3D", built_in<AveragePooling3D>()},
      {"BatchNormalization", built_in<BatchNormalization>()},
      {"Concatenate", built_in<Concatenate>()},
      {"Conv1D", built_in<Conv1D>()},
      {"Conv2D", built_in<Conv2D>()},
      {"Conv2DTranspose", built_in<Conv2DTranspose>()},
      {"Conv3D", built_in<Conv3D>()},
      {"Cropping2D", built_in<Cropping2D>()},
      {"Dense", built_in<Dense>()},
      {"DepthwiseConv2D", built_in<DepthwiseConv2D>()},
      {"Dot", built_in<Dot>()},
      {"Dropout", built_in<Dropout>()},
      {"ELU", built_in<ELU>()},
      {"Embedding", built_in<Embedding>()},
      {"PositionEmbedding", built_in<PositionEmbedding>()},
      {"Flatten", built_in<Flatten>()},
      {"Functional", functional_from_config},
      {"GaussianNoise", built_in<GaussianNoise>()},
      {"GlobalAveragePooling1D", built_in<GlobalAveragePooling1D>()},
      {"GlobalAveragePooling2D", built_in<GlobalAveragePooling2D>()},
      {"GlobalAveragePooling3D", built_in<GlobalAveragePooling3D>()},
      {"GlobalMaxPooling1D", built_in<GlobalMaxPooling1D>()},
      {"GlobalMaxPooling2D", built_in<GlobalMaxPooling2D>()},
      {"GlobalMaxPooling3D", built_in<GlobalMaxPooling3D>()},
      {"LayerNormalization", built_in<LayerNormalization>()},
      {"LeakyReLU", built_in<LeakyReLU>()},
      {"MaxPooling1D", built_in<MaxPooling1D>()},
      {"MaxPooling2D", built_in<MaxPooling2D>()},
      {"MaxPooling3D", built_in<MaxPooling3D>()},
      {"Maximum", built_in<Maximum>()},
      {"Minimum", built_in<Minimum>()},
      {"MultiHeadAttention", built_in<MultiHeadAttention>()},
      {"Multiply", built_in<Multiply>()},
      {"Normalization", built_in<Normalization>()},
      {"PReLU", built_in<PReLU>()},
      {"Permute", built_in<Permute>()},
      {"ReLU", built_in<ReLU>()},
      {"RepeatVector", built_in<RepeatVector>()},
      {"Rescaling", built_in<Rescaling>()},
      {"Reshape", built_in<Reshape>()},
      {"SeparableConv2D", built_in<SeparableConv2D>()},
      {"Sequential", sequential_from_config},
      {"Softmax", built_in<Softmax>()},
      {"SpatialDropout1D", built_in<SpatialDropout1D>()},
      {"SpatialDropout2D", built_in<SpatialDropout2D>()},
      {"SpatialDropout3D", built_in<SpatialDropout3D>()},
      {"Subtract", built_in<Subtract>()},
      {"SyncBatchNormalization", built_in<SyncBatchNormalization>()},
      {"UpSampling2D", built_in<UpSampling2D>()},
      {"ZeroPadding2D", built_in<ZeroPadding2D>()},
  };
  return layers;
}

struct CustomLayers {
  std::mutex mu;
  std::map<std::string, LayerFactory> factories;
};
CustomLayers& custom_layers() {
  static CustomLayers registry;
  return registry;
}

// ---- Functional graphs ---------------------------------------------------------------------

// A reference to one output of a layer call ({"layer", "node", "tensor"}) or to an input
// ({"input"}), as the graph's config holds it.
struct GraphNames {
  std::map<const KerasTensor::Node*, std::string> inputs;  // input node -> its name
  std::map<const KerasTensor::Node*, int64_t> node_index;  // call -> its index among its layer's
};

ConfigDict reference(const KerasTensor& t, const GraphNames& names) {
  const KerasTensor::Node* n = t.node().get();
  if (!n->layer.defined()) return ConfigDict().set("input", names.inputs.at(n));
  return ConfigDict()
      .set("layer", n->layer.name())
      .set("node", names.node_index.at(n))
      .set("tensor", static_cast<int64_t>(t.index()));
}

ConfigDict functional_config(const ModelImpl& m, ConfigDict c) {
  GraphNames names;
  std::set<std::string> used;
  std::vector<ConfigDict> input_layers;
  for (const KerasTensor& in : m.inputs()) {
    std::string name = in.node()->name.empty() ? "input" : in.node()->name;
    name = unique_name(in.node()->name.empty() ? "input_" + std::to_string(used.size() + 1) : name,
                       used);
    names.inputs[in.node().get()] = name;
    Shape shape(in.shape().begin() + 1, in.shape().end());
    input_layers.push_back(ConfigDict()
                               .set("name", name)
                               .set("shape", std::vector<int64_t>(shape))
                               .set("dtype", std::string(dtype_name(in.dtype()))));
  }
  // Every layer call, inputs before the calls that use them (depth first from the outputs).
  std::vector<const KerasTensor::Node*> order;
  std::set<const KerasTensor::Node*> seen;
  std::function<void(const KerasTensor::Node*)> visit = [&](const KerasTensor::Node* n) {
    if (!seen.insert(n).second || !n->layer.defined()) return;
    for (const KerasTensor& in : n->inputs) visit(in.node().get());
    order.push_back(n);
  };
  for (const KerasTensor& out : m.outputs()) visit(out.node().get());
  std::map<const LayerImpl*, int64_t> calls;
  std::map<std::string, const LayerImpl*> by_name;
  std::vector<ConfigDict> layers, nodes;
  for (const KerasTensor::Node* n : order) {
    const LayerImpl* layer = n->layer.impl_ptr().get();
    auto [it, fresh] = by_name.emplace(layer->name(), layer);
    WEFT_CHECK(it->second == layer, InvalidArgument)
        << "Model \"" << m.name() << "\": two different layers are named \"" << layer->name()
        << "\"; a saved model needs unique layer names";
    WEFT_CHECK(!fresh || used.count(layer->name()) == 0, InvalidArgument)
        << "Model \"" << m.name() << "\": layer \"" << layer->name()
        << "\" has the name of an input";
    if (fresh) layers.push_back(serialize(n->layer));
    names.node_index[n] = calls[layer]++;
    std::vector<ConfigDict> inbound;
    for (const KerasTensor& in : n->inputs) inbound.push_back(reference(in, names));
    nodes.push_back(ConfigDict().set("layer", layer->name()).set("inbound", inbound));
  }
  std::vector<ConfigDict> outputs;
  for (const KerasTensor& out : m.outputs()) outputs.push_back(reference(out, names));
  return c.set("layers", layers)
      .set("input_layers", input_layers)
      .set("nodes", nodes)
      .set("output_layers", outputs);
}

Layer functional_from_config(const ConfigDict& c) {
  std::map<std::string, KerasTensor> inputs;
  std::vector<KerasTensor> input_list;
  for (const ConfigDict& in : c.get_dicts("input_layers")) {
    std::string name = in.get_string("name");
    KerasTensor t = Input(in.get_ints("shape"), dtype_from_name(in.get_string("dtype")), name);
    inputs.emplace(name, t);
    input_list.push_back(t);
  }
  std::map<std::string, Layer> layers;
  for (const ConfigDict& l : c.get_dicts("layers")) {
    Layer layer = deserialize(l);
    layers.emplace(layer.name(), layer);
  }
  std::map<std::string, std::vector<std::vector<KerasTensor>>> calls;
  auto resolve = [&](const ConfigDict& ref) -> KerasTensor {
    if (ref.has("input")) {
      auto it = inputs.find(ref.get_string("input"));
      WEFT_CHECK(it != inputs.end(), InvalidArgument)
          << "a node refers to input \"" << ref.get_string("input") << "\", which is not one";
      return it->second;
    }
    std::string layer = ref.get_string("layer");
    int64_t node = ref.get_int("node"), tensor = ref.get_int("tensor");
    auto it = calls.find(layer);
    WEFT_CHECK(it != calls.end() && node >= 0 && node < static_cast<int64_t>(it->second.size()) &&
                   tensor >= 0 && tensor < static_cast<int64_t>(it->second[node].size()),
               InvalidArgument)
        << "a node refers to output " << tensor << " of call " << node << " of layer \"" << layer
        << "\", which comes later or does not exist";
    return it->second[node][tensor];
  };
  for (const ConfigDict& n : c.get_dicts("nodes")) {
    std::string name = n.get_string("layer");
    auto it = layers.find(name);
    WEFT_CHECK(it != layers.end(), InvalidArgument)
        << "a node calls layer \"" << name << "\", which is not among the model's layers";
    std::vector<KerasTensor> args;
    for (const ConfigDict& ref : n.get_dicts("inbound")) args.push_back(resolve(ref));
    calls[name].push_back(it->second(args));
  }
  std::vector<KerasTensor> outputs;
  for (const ConfigDict& ref : c.get_dicts("output_layers")) outputs.push_back(resolve(ref));
  Model model(input_list, outputs, c.get_string("name", ""));
  model.impl().restore_base_config(c);
  return model;
}

Layer sequential_from_config(const ConfigDict& c) {
  std::vector<Layer> layers;
  for (const ConfigDict& l : c.get_dicts("layers")) layers.push_back(deserialize(l));
  Sequential model(layers, c.get_string("name", ""));
  model.impl().restore_base_config(c);
  return model;
}

// ---- model.json ----------------------------------------------------------------------------

// The file's text: `body` with its CRC32C (over body's compact JSON) added.
std::string with_checksum(ConfigDict body) {
  uint32_t crc = crc32c(body.to_json().data(), body.to_json().size());
  return body.set("crc32c", static_cast<int64_t>(crc)).to_json(1) + "\n";
}

ConfigDict read_model_file(const std::string& dir) {
  std::string path = dir + "/" + kSavedModelFileName;
  struct stat st {};
  WEFT_CHECK(::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode), FailedPrecondition)
      << "load_model: " << dir << " is not a directory";
  WEFT_CHECK(::access(path.c_str(), F_OK) == 0, FailedPrecondition)
      << "load_model: " << dir << " is not a saved model: it has no " << kSavedModelFileName;
  std::string text = io::read_whole_file(path);
  try {
    ConfigDict file = ConfigDict::from_json(text);
    WEFT_CHECK(file.get_string("format") == kFormatName, DataLoss)
        << path << " is not a weft saved model (format \"" << file.get_string("format") << "\")";
    int64_t format_version = file.get_int("format_version");
    WEFT_CHECK(format_version <= kSavedModelFormatVersion, FailedPrecondition)
        << path << " has saved-model format version " << format_version << ", newer than the "
        << kSavedModelFormatVersion << " this weft (" << weft::version()
        << ") reads; load it with the weft that saved it ("
        << file.get_string("weft_version", "unknown") << ") or a newer one";
    int64_t stored = file.get_int("crc32c");
    std::string body = ConfigDict(file).erase("crc32c").to_json();
    uint32_t crc = crc32c(body.data(), body.size());
    WEFT_CHECK(crc == stored, DataLoss) << path << " is damaged: its contents have CRC32C " << crc
                                        << ", the file records " << stored;
    return file;
  } catch (const InvalidArgument& e) {
    WEFT_FAIL(DataLoss) << path << " is damaged: " << e.message();
  }
  return {};
}

}  // namespace

// ---- registry and (de)serialization ----------------------------------------------------------

void register_layer(const std::string& class_name, LayerFactory factory) {
  WEFT_CHECK(!class_name.empty() && factory, InvalidArgument)
      << "register_layer: a class name and a factory are needed";
  WEFT_CHECK(!built_in_layers().count(class_name), InvalidArgument)
      << "register_layer: \"" << class_name << "\" is a built-in layer; give yours another name";
  CustomLayers& r = custom_layers();
  std::lock_guard lock(r.mu);
  r.factories[class_name] = std::move(factory);
}

ConfigDict serialize(const Layer& layer) {
  return ConfigDict()
      .set("class_name", layer.impl().class_name())
      .set("config", layer.impl().get_config());
}

Layer deserialize(const ConfigDict& config) {
  std::string kind = config.get_string("class_name");
  ConfigDict c = config.get_dict("config");
  LayerFactory factory;
  if (auto it = built_in_layers().find(kind); it != built_in_layers().end()) {
    factory = it->second;
  } else {
    CustomLayers& r = custom_layers();
    std::lock_guard lock(r.mu);
    auto custom = r.factories.find(kind);
    WEFT_CHECK(custom != r.factories.end(), InvalidArgument)
        << "unknown layer class \"" << kind << "\" (layer \"" << c.get_string("name", "?")
        << "\"): register it with weft::nn::register_layer(\"" << kind
        << "\", factory) before loading";
    factory = custom->second;
  }
  Layer layer = factory(c);
  WEFT_CHECK(layer.defined(), InvalidArgument)
      << "the factory of layer class \"" << kind << "\" returned an empty layer";
  if (!layer.impl().built()) layer.impl().restore_base_config(c);
  return layer;
}

ConfigDict ModelImpl::get_config() const {
  ConfigDict c = LayerImpl::get_config();
  if (class_name() == "Functional") return functional_config(*this, c);
  std::vector<ConfigDict> layers;
  for (const Layer& l : this->layers()) layers.push_back(serialize(l));
  return c.set("layers", layers);
}

}  // namespace weft::nn

// ---- save and load -------------------------------------------------------------------------

namespace weft::nn {
namespace {

// model.json's body: the format, the model, how to build it, and the compile settings.
ConfigDict model_file(const Model& model, const Model::SaveOptions& options) {
  ConfigDict file;
  file.set("format", kFormatName).set("format_version", kSavedModelFormatVersion);
  file.set("weft_version", weft::version()).set("model", serialize(model));
  std::vector<ConfigDict> shapes;
  for (const Shape& s : model.impl().built_input_shapes()) {
    shapes.push_back(ConfigDict().set("shape", std::vector<int64_t>(s)));
  }
  file.set("input_shapes", shapes);
  if (!options.include_optimizer || !model.compiled()) return file.set("compile", nullptr);
  const ModelImpl& m = model.model();
  WEFT_CHECK(m.loss->get_config().has_value(), InvalidArgument)
      << "Model::save: loss \"" << m.loss->name()
      << "\" is a function, which cannot be saved; save with include_optimizer = false and "
         "compile the loaded model yourself";
  // Weighted metrics by the names compile was given (without the "weighted_" it may have added).
  std::vector<std::string> metric_names, weighted_names;
  for (size_t i = 0; i < m.compiled_metrics.size(); ++i) {
    const bool weighted = i >= m.first_weighted_metric;
    std::string name = m.compiled_metrics[i].name();
    auto known = [&](const std::string& n) {
      try {
        metrics::get(n, m.loss->name());
        return true;
      } catch (const InvalidArgument&) {
        return false;
      }
    };
    if (weighted && !known(name) && name.rfind("weighted_", 0) == 0) name = name.substr(9);
    WEFT_CHECK(known(name), InvalidArgument)
        << "Model::save: metric \"" << m.compiled_metrics[i].name()
        << "\" has no Keras name weft knows, so it cannot be saved; save with include_optimizer "
           "= false";
    (weighted ? weighted_names : metric_names).push_back(name);
  }
  ConfigDict loss;
  loss.set("name", m.loss->name()).set("config", *m.loss->get_config());
  return file.set("compile", ConfigDict()
                                 .set("optimizer", m.optimizer.get_config())
                                 .set("loss", loss)
                                 .set("metrics", metric_names)
                                 .set("weighted_metrics", weighted_names));
}

void write_saved_model(const Model& model, const std::string& dir,
                       const Model::SaveOptions& options) {
  WEFT_CHECK(model.impl().built() || !model.inputs().empty(), FailedPrecondition)
      << "Model::save: model \"" << model.name()
      << "\" is not built yet; call it on a batch (or fit it) before saving";
  std::string text = with_checksum(model_file(model, options));
  std::vector<checkpoint::SavedTensor> tensors;
  std::map<std::string, std::string> state;
  checkpoint::NamedTrackables objects{{"model", &model}};
  if (options.include_optimizer && model.compiled())
    objects.emplace_back("optimizer", &model.optimizer());
  checkpoint::collect_trackables(objects, &tensors, &state);

  std::string parent = io::parent_directory(dir);
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  std::string tmp = dir + ".tmp-" + std::to_string(::getpid());
  std::filesystem::remove_all(tmp, ec);
  WEFT_CHECK(std::filesystem::create_directory(tmp, ec) && !ec, FailedPrecondition)
      << "Model::save: cannot create " << tmp << ": " << ec.message();
  try {
    checkpoint::write_checkpoint(tmp + "/" + kSavedModelVariablesDir, tensors, state);
    io::write_file_atomically(tmp + "/" + kSavedModelFileName, text);
    io::fsync_directory(tmp);
    io::rename_directory_replacing(tmp, dir);
  } catch (...) {
    std::filesystem::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace

void Model::save(const std::string& dir, const SaveOptions& options) const {
  const distribute::StrategyImpl& s = model().strategy.extended();
  int workers = s.num_replicas_in_sync() / s.num_local_replicas();
  bool chief = s.first_local_replica() == 0;
  if (workers == 1) return write_saved_model(*this, dir, options);
  // The chief writes; every worker learns whether it succeeded (and none returns before it has).
  std::exception_ptr failure;
  if (chief) {
    try {
      write_saved_model(*this, dir, options);
    } catch (...) {
      failure = std::current_exception();
    }
  }
  double failed =
      s.sum_across_workers(Tensor::scalar(failure ? 1.0 : 0.0, kFloat64)).item<double>();
  if (failure) std::rethrow_exception(failure);
  WEFT_CHECK(failed == 0, FailedPrecondition)
      << "Model::save: the chief failed to save the model to " << dir << " (its log says why)";
}

Model load_model(const std::string& dir, const LoadOptions& options) {
  ConfigDict file = read_model_file(dir);
  std::string path = dir + "/" + kSavedModelFileName;
  std::string variables = dir + "/" + kSavedModelVariablesDir;
  checkpoint::LoadedCheckpoint loaded = checkpoint::read_checkpoint(variables);
  // Slots exist once the optimizer has updated the variables (a model saved right after compile
  // has none).
  bool has_optimizer = false, has_slots = false;
  for (const auto& [key, value] : loaded.tensors) {
    if (key.rfind("optimizer/", 0) != 0) continue;
    has_optimizer = true;
    has_slots |= key != "optimizer/iterations" && key.rfind("optimizer/loss_scale/", 0) != 0;
  }
  Model model;
  try {
    Layer layer = deserialize(file.get_dict("model"));
    auto* impl = dynamic_cast<ModelImpl*>(&layer.impl());
    WEFT_CHECK(impl != nullptr, InvalidArgument)
        << "\"model\" holds a " << layer.impl().class_name() << " layer, not a model";
    model = Model(std::static_pointer_cast<ModelImpl>(layer.impl_ptr()));
    // A Sequential model builds on its first batch: one zero example of the saved shape.
    std::vector<Tensor> probes;
    for (const ConfigDict& s : file.get_dicts("input_shapes")) {
      Shape shape = s.get_ints("shape");
      shape.insert(shape.begin(), 1);
      probes.push_back(zeros(shape));
    }
    if (!model.impl().built() && model.inputs().empty()) {
      WEFT_CHECK(!probes.empty(), InvalidArgument) << "\"input_shapes\" is empty";
      autodiff::NoRecordScope no_record;
      model(probes, false);
    }
    if (options.compile && !file.is_null("compile")) {
      ConfigDict c = file.get_dict("compile");
      ConfigDict loss = c.get_dict("loss");
      model.compile(optim::deserialize(c.get_dict("optimizer")),
                    losses::from_config(loss.get_string("name"), loss.get_dict("config")),
                    c.get_strings("metrics"),
                    c.has("weighted_metrics") ? c.get_strings("weighted_metrics")
                                              : std::vector<std::string>{});
      optim::Optimizer optimizer = model.optimizer();
      if (has_slots) optimizer.build(model.trainable_variables());  // slots to restore into
    }
  } catch (const InvalidArgument& e) {
    WEFT_FAIL(InvalidArgument) << path << ": " << e.message();
  }
  std::vector<std::pair<std::string, Trackable*>> objects{{"model", &model}};
  optim::Optimizer optimizer = model.optimizer();
  if (model.compiled() && has_optimizer) objects.emplace_back("optimizer", &optimizer);
  checkpoint::restore_trackables(loaded, variables, objects);
  return model;
}

}  // namespace weft::nn
