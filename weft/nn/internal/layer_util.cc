#include "weft/nn/internal/layer_util.h"

#include <algorithm>
#include <cctype>

#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"

namespace weft::nn::internal {

std::vector<int64_t> config_pair(const Size2& s) { return {s[0], s[1]}; }

Size2 config_size2(const ConfigDict& config, const std::string& key, Size2 fallback) {
  if (config.is_null(key)) return fallback;
  std::vector<int64_t> v = config.get_ints(key);
  WEFT_CHECK(v.size() == 2, InvalidArgument)
      << "config field \"" << key << "\": expected 2 integers (height, width), got " << v.size();
  return {v[0], v[1]};
}

std::string size_str(const Size3& s, int rank) {
  std::string out = "{";
  for (int i = 3 - rank; i < 3; ++i) out += std::to_string(s[i]) + (i < 2 ? ", " : "}");
  return out;
}

Size3 config_size3(const ConfigDict& config, const std::string& key, Size3 fallback) {
  if (config.is_null(key)) return fallback;
  std::vector<int64_t> v = config.get_ints(key);
  WEFT_CHECK(v.size() == 3, InvalidArgument) << "config field \"" << key
                                             << "\": expected 3 integers (depth, height, width), "
                                                "got "
                                             << v.size();
  return {v[0], v[1], v[2]};
}

std::string layer_label(const LayerImpl& layer) {
  return layer.class_name() + " \"" + layer.name() + "\"";
}

activations::Activation activation_for(const LayerImpl& layer, const std::string& name) {
  try {
    return activations::get(name);
  } catch (const InvalidArgument& e) {
    WEFT_FAIL(InvalidArgument) << layer_label(layer) << ": activation: " << e.message();
  }
  return {};
}

Initializer initializer_for(const LayerImpl& layer, const std::string& argument,
                            const std::string& name) {
  try {
    return initializers::get(name);
  } catch (const InvalidArgument& e) {
    WEFT_FAIL(InvalidArgument) << layer_label(layer) << ": " << argument << ": " << e.message();
  }
  return {};
}

std::string op_padding(const LayerImpl& layer, const std::string& padding) {
  std::string upper = padding;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  WEFT_CHECK(upper == "VALID" || upper == "SAME", InvalidArgument)
      << layer_label(layer) << ": padding must be \"valid\" or \"same\", got \"" << padding << "\"";
  return upper;
}

namespace {
template <typename F>
ConfigDict& set_fn(ConfigDict& config, const std::string& key, const F& f) {
  return f.defined() ? config.set(key, f.serialize()) : config.set(key, nullptr);
}
}  // namespace

ConfigDict& set_config_fn(ConfigDict& config, const std::string& key, const Regularizer& r) {
  return set_fn(config, key, r);
}
ConfigDict& set_config_fn(ConfigDict& config, const std::string& key, const Constraint& c) {
  return set_fn(config, key, c);
}
Regularizer config_regularizer(const ConfigDict& config, const std::string& key) {
  return config.is_null(key) ? Regularizer() : Regularizer::deserialize(config.get_dict(key));
}
Constraint config_constraint(const ConfigDict& config, const std::string& key) {
  return config.is_null(key) ? Constraint() : Constraint::deserialize(config.get_dict(key));
}

Tensor mask_scores(const Tensor& scores, const Tensor& mask) {
  const double large = scores.dtype() == kFloat16 ? -65504.0 : -1e9;
  return add(scores, mul(sub(1.0, cast(mask, scores.dtype())), large));
}

void check_rank(const LayerImpl& layer, const Shape& shape, size_t rank, const char* layout) {
  WEFT_CHECK(shape.size() == rank, InvalidArgument)
      << layer_label(layer) << ": expected an input of rank " << rank << " " << layout
      << ", got shape " << shape_str(shape) << " (rank " << shape.size() << ")";
}

int64_t config_size1(const ConfigDict& c, const std::string& key, int64_t fallback) {
  if (!c.has(key) || c.is_null(key)) return fallback;
  std::vector<int64_t> v = c.get_ints(key);
  WEFT_CHECK(v.size() == 1, InvalidArgument)
      << "config field \"" << key << "\" must hold one integer, got " << v.size();
  return v[0];
}

Tensor keyed_uniform(Seed base, std::atomic<uint64_t>& calls, const Shape& shape,
                     int64_t example_size, uint64_t streams, uint64_t stream) {
  std::optional<random::ExampleKey> key = random::example_key();
  uint64_t step = key ? static_cast<uint64_t>(key->step) : calls.fetch_add(1);
  int64_t offset = key ? key->first_example * example_size : 0;
  // splitmix64 of the counter: well-spread seeds for consecutive steps.
  uint64_t x =
      static_cast<uint64_t>(base[1]) + 0x9e3779b97f4a7c15ull * (step * streams + stream + 1);
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  Seed seed{base[0], static_cast<int64_t>(x ^ (x >> 31))};
  return stateless_random_uniform_slice(shape, seed, offset);
}

}  // namespace weft::nn::internal
