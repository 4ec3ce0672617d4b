#include "weft/nn/layer.h"

#include <algorithm>
#include <cctype>
#include <mutex>

#include "weft/autodiff/tape.h"
#include "weft/checkpoint/trackable.h"
#include "weft/dtensor/dtensor.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"

namespace weft::nn {
namespace {

// "dense", "conv2d", "max_pooling2d", "batch_normalization": Keras's snake case of a class name.
std::string snake_case(const std::string& class_name) {
  auto upper = [](char c) { return std::isupper(static_cast<unsigned char>(c)) != 0; };
  auto lower = [](char c) { return std::islower(static_cast<unsigned char>(c)) != 0; };
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  std::string base;
  for (size_t i = 0; i < class_name.size(); ++i) {
    char c = class_name[i];
    // An underscore before a capital that follows a lower-case letter ("BatchNorm") or starts a
    // word ("ABCDef" -> "abc_def"), but not before "2D"'s D.
    bool starts_word =
        i + 1 < class_name.size() && (lower(class_name[i + 1]) || digit(class_name[i + 1]));
    if (i > 0 && upper(c) && (lower(class_name[i - 1]) || starts_word)) base += '_';
    base += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return base;
}

// A name unique in this process: a layer's name until a model adopts it (layers built before
// that, such as a Functional model's, which build when called on Inputs, keep it), as Keras
// names layers.
std::string process_unique_name(const std::string& base) {
  static std::mutex mu;
  static std::set<std::string> used;
  std::lock_guard lock(mu);
  return unique_name(base, used);
}

Shape without_batch(const Shape& s) { return s.empty() ? s : Shape(s.begin() + 1, s.end()); }

// "(batch, 784)": a built shape as a message shows it.
std::string with_batch(const Shape& s) {
  std::string out = "(batch";
  for (int64_t d : s) out += ", " + std::to_string(d);
  return out + ")";
}

}  // namespace

LayerImpl::LayerImpl(std::string class_name, std::string name, const std::string& dtype)
    : class_name_(std::move(class_name)),
      name_(name.empty() ? process_unique_name(snake_case(class_name_)) : name),
      default_name_(name.empty()) {
  if (dtype.empty()) {
    mixed_precision::Policy global = mixed_precision::global_policy();
    if (global.name() != "float32") policy_ = global;
    return;
  }
  try {
    policy_ = mixed_precision::Policy(dtype);
  } catch (const InvalidArgument& e) {
    WEFT_FAIL(InvalidArgument) << class_name_ << " \"" << name_ << "\": dtype: " << e.message();
  }
}

ConfigDict LayerImpl::get_config() const {
  ConfigDict c;
  c.set("name", name_).set("trainable", trainable_);
  if (policy_) {
    c.set("dtype", policy_->name());
  } else {
    c.set("dtype", nullptr);
  }
  if (activity_regularizer_.defined()) {
    c.set("activity_regularizer", activity_regularizer_.serialize());
  }
  return c;
}

void LayerImpl::restore_base_config(const ConfigDict& config) {
  WEFT_CHECK(!built(), FailedPrecondition)
      << class_name_ << " \"" << name_ << "\": restore_base_config after the layer was built";
  if (!config.is_null("name")) {
    name_ = config.get_string("name");
    default_name_ = false;
  }
  if (config.has("trainable")) trainable_ = config.get_bool("trainable", true);
  if (config.has("dtype")) {
    if (config.is_null("dtype")) {
      policy_.reset();
    } else {
      try {
        policy_ = mixed_precision::Policy(config.get_string("dtype"));
      } catch (const InvalidArgument& e) {
        WEFT_FAIL(InvalidArgument) << class_name_ << " \"" << name_ << "\": dtype: " << e.message();
      }
    }
  }
  if (!config.is_null("activity_regularizer")) {
    activity_regularizer_ = Regularizer::deserialize(config.get_dict("activity_regularizer"));
  }
}

std::vector<Shape> LayerImpl::built_input_shapes() const {
  return built() ? built_shapes_ : std::vector<Shape>{};
}

bool LayerImpl::synchronizes_replicas() const {
  for (const auto& layer : sublayers()) {
    if (layer->synchronizes_replicas()) return true;
  }
  return false;
}

std::string LayerImpl::path() const {
  std::shared_ptr<LayerImpl> parent = parent_.lock();
  if (!parent) return {};
  std::string above = parent->path();
  return above.empty() ? name_ : above + "/" + name_;
}

void LayerImpl::adopt(const std::shared_ptr<LayerImpl>& parent, std::set<std::string>& used) {
  std::lock_guard lock(build_mu_);
  std::shared_ptr<LayerImpl> current = parent_.lock();
  bool adoptable = !built() && (!current || current == parent);
  if (adoptable) parent_ = parent;
  if (adoptable && default_name_) {
    name_ = unique_name(snake_case(class_name_), used);
  } else {
    used.insert(name_);
  }
}

mixed_precision::Policy LayerImpl::dtype_policy() const {
  return policy_.value_or(mixed_precision::Policy("float32"));
}

Tensor LayerImpl::cast_variable(const Variable& v) const {
  if (!policy_ || !is_floating(v.dtype()) || v.dtype() == policy_->compute_dtype()) {
    return v.value();
  }
  return cast(v.value(), policy_->compute_dtype());
}

Tensor LayerImpl::call(const Tensor& x, bool training) {
  WEFT_FAIL(FailedPrecondition) << class_name_ << " \"" << name_
                                << "\" does not implement call() on one input";
  return x;
}

void LayerImpl::build_multi(const std::vector<Shape>& input_shapes) {
  WEFT_CHECK(input_shapes.size() == 1, InvalidArgument)
      << class_name_ << " \"" << name_ << "\" takes one input, got " << input_shapes.size();
  build(input_shapes[0]);
}

std::vector<Tensor> LayerImpl::call_multi(const std::vector<Tensor>& xs, bool training) {
  WEFT_CHECK(xs.size() == 1, InvalidArgument)
      << class_name_ << " \"" << name_ << "\" takes one input, got " << xs.size();
  return {call(xs[0], training)};
}

std::vector<Tensor> LayerImpl::invoke(const std::vector<Tensor>& xs, bool training) {
  for (const Tensor& x : xs) {
    WEFT_CHECK(x.defined(), InvalidArgument) << name_ << ": an input tensor is undefined";
    WEFT_CHECK(x.rank() >= 1, InvalidArgument)
        << name_ << ": inputs need a batch dimension, got a scalar";
  }
  bool building = false;
  if (!built()) {
    std::lock_guard lock(build_mu_);
    if (!built()) {
      std::vector<Shape> shapes;
      for (const Tensor& x : xs) shapes.push_back(x.shape());
      {
        autodiff::NoRecordScope no_record;  // initial values are not part of any gradient
        std::string where = path();
        std::optional<random::SeedScope> seeds;
        if (!where.empty()) seeds.emplace(where);
        build_multi(shapes);
      }
      for (const Shape& s : shapes) built_shapes_.push_back(without_batch(s));
      built_.store(true, std::memory_order_release);
      building = true;
    }
  }
  if (!building) {
    const size_t checked = std::min(checked_inputs(), built_shapes_.size());
    const bool extras = checked_inputs() != SIZE_MAX;  // the layer checks the rest itself
    WEFT_CHECK(extras ? xs.size() >= checked : xs.size() == built_shapes_.size(), InvalidArgument)
        << class_name_ << " \"" << name_ << "\" was built for " << built_shapes_.size()
        << " inputs, got " << xs.size();
    for (size_t i = 0; i < std::min(xs.size(), checked); ++i) {
      Shape got = without_batch(xs[i].shape());
      bool fits = got.size() == built_shapes_[i].size();
      for (size_t a = 0; fits && a < got.size(); ++a) {
        fits = got[a] == built_shapes_[i][a] || any_size(a);
      }
      WEFT_CHECK(fits, InvalidArgument)
          << class_name_ << " \"" << name_ << "\": input " << i << " has shape "
          << shape_str(xs[i].shape()) << ", but the layer was built for "
          << with_batch(built_shapes_[i]);
    }
  }
  std::vector<Tensor> ys;
  if (!policy_ || !autocast_) {
    ys = call_multi(xs, training);
  } else {
    std::vector<Tensor> cast_xs = xs;
    for (Tensor& x : cast_xs) {
      if (is_floating(x.dtype()) && x.dtype() != policy_->compute_dtype()) {
        x = with_keras_mask(cast(x, policy_->compute_dtype()), keras_mask(x));
      }
    }
    ys = call_multi(cast_xs, training);
  }
  if (activity_regularizer_.defined()) {
    std::vector<Tensor> penalties;
    for (const Tensor& y : ys) {
      if (!y.defined() || !is_floating(y.dtype()) || y.rank() == 0 || y.dim(0) == 0) continue;
      Tensor y32 = y.dtype() == kFloat64 ? y : cast(y, kFloat32);
      penalties.push_back(div(activity_regularizer_(y32), static_cast<double>(y.dim(0))));
    }
    if (ActivityLossScope* scope = ActivityLossScope::current()) {
      for (const Tensor& p : penalties) scope->add(p);
    } else {
      std::lock_guard lock(activity_mu_);
      last_activity_losses_ = std::move(penalties);
    }
  }
  std::vector<Tensor> masks = compute_mask(xs);
  for (size_t i = 0; i < std::min(masks.size(), ys.size()); ++i) {
    if (masks[i].defined() && ys[i].defined() && !keras_mask(ys[i]).defined()) {
      with_keras_mask(ys[i], masks[i]);
    }
  }
  return ys;
}

std::vector<Tensor> LayerImpl::compute_mask(const std::vector<Tensor>& xs) const {
  if (!supports_masking() || xs.empty()) return {};
  return {keras_mask(xs[0])};
}

Tensor keras_mask(const Tensor& x) {
  if (!x.defined() || !x.impl()->keras_mask) return Tensor();
  return Tensor(x.impl()->keras_mask);
}

Tensor with_keras_mask(const Tensor& x, const Tensor& mask) {
  WEFT_CHECK(x.defined(), InvalidArgument) << "with_keras_mask: the tensor is undefined";
  x.impl()->keras_mask = mask.defined() ? std::make_shared<TensorImpl>(*mask.impl()) : nullptr;
  return x;
}

Variable LayerImpl::add_weight(const std::string& name, const Shape& shape, const Initializer& init,
                               bool trainable, std::optional<DType> dtype,
                               VariableAggregation aggregation, const Regularizer& regularizer,
                               const Constraint& constraint, const dtensor::Layout& layout) {
  Tensor initial = init(shape, dtype.value_or(dtype_policy().variable_dtype()));
  if (!layout.is_empty()) initial = dtensor::copy_to_mesh(initial, layout);
  Variable v(
      VariableArgs{initial, name_ + "/" + name, trainable, aggregation, constraint.function()});
  weights_.push_back(v);
  weight_trainable_.push_back(trainable);
  if (regularizer.defined()) weight_regularizers_.emplace_back(v, regularizer);
  return v;
}

std::vector<Tensor> LayerImpl::weight_penalties() const {
  std::vector<Tensor> out;
  for (const auto& [v, regularizer] : weight_regularizers_) out.push_back(regularizer(v.value()));
  for (const auto& sub : sublayers()) {
    for (const Tensor& t : sub->weight_penalties()) out.push_back(t);
  }
  return out;
}

void LayerImpl::add_last_activity_losses(std::vector<Tensor>& out) const {
  {
    std::lock_guard lock(activity_mu_);
    out.insert(out.end(), last_activity_losses_.begin(), last_activity_losses_.end());
  }
  for (const auto& sub : sublayers()) sub->add_last_activity_losses(out);
}

std::vector<Tensor> LayerImpl::losses() const {
  std::vector<Tensor> out;
  add_last_activity_losses(out);
  for (const Tensor& t : weight_penalties()) out.push_back(t);
  return out;
}

namespace {
thread_local ActivityLossScope* current_activity_scope = nullptr;
}  // namespace

ActivityLossScope::ActivityLossScope() : previous_(current_activity_scope) {
  current_activity_scope = this;
}
ActivityLossScope::~ActivityLossScope() { current_activity_scope = previous_; }
ActivityLossScope* ActivityLossScope::current() { return current_activity_scope; }

std::vector<Variable> LayerImpl::variables() const {
  std::vector<Variable> out = weights_;
  for (const auto& sub : sublayers()) {
    for (const Variable& v : sub->variables()) out.push_back(v);
  }
  return out;
}

std::vector<Variable> LayerImpl::trainable_variables() const {
  std::vector<Variable> out;
  if (!trainable_) return out;
  for (size_t i = 0; i < weights_.size(); ++i) {
    if (weight_trainable_[i]) out.push_back(weights_[i]);
  }
  for (const auto& sub : sublayers()) {
    for (const Variable& v : sub->trainable_variables()) out.push_back(v);
  }
  return out;
}

std::vector<Variable> LayerImpl::non_trainable_variables() const {
  std::vector<Variable> out;
  std::vector<Variable> trainable = trainable_variables();
  for (const Variable& v : variables()) {
    if (std::find(trainable.begin(), trainable.end(), v) == trainable.end()) out.push_back(v);
  }
  return out;
}

LayerImpl& Layer::impl() const {
  WEFT_CHECK(impl_ != nullptr, FailedPrecondition) << "use of an empty Layer handle";
  return *impl_;
}

Tensor Layer::operator()(const Tensor& x, bool training) const {
  std::vector<Tensor> out = impl().invoke({x}, training);
  WEFT_CHECK(out.size() == 1, InvalidArgument)
      << name() << " has " << out.size() << " outputs; call it with a vector of inputs";
  return out[0];
}

std::vector<Tensor> Layer::operator()(const std::vector<Tensor>& xs, bool training) const {
  return impl().invoke(xs, training);
}

KerasTensor Layer::operator()(const KerasTensor& x) const {
  std::vector<KerasTensor> out = (*this)(std::vector<KerasTensor>{x});
  WEFT_CHECK(out.size() == 1, InvalidArgument)
      << name() << " has " << out.size() << " outputs; call it with a vector of inputs";
  return out[0];
}

std::vector<KerasTensor> Layer::operator()(const std::vector<KerasTensor>& xs) const {
  // Output shapes come from running the layer once on a batch of one zero example.
  std::vector<Tensor> probes;
  for (const KerasTensor& x : xs) {
    Shape s = x.shape();
    s[0] = 1;
    probes.push_back(zeros(s, x.dtype()));
  }
  std::vector<Tensor> outs;
  {
    autodiff::NoRecordScope no_record;
    outs = impl().invoke(probes, false);
  }
  auto node = std::make_shared<KerasTensor::Node>();
  node->layer = *this;
  node->inputs = xs;
  for (const Tensor& o : outs) {
    Shape s = o.shape();
    s[0] = -1;
    node->shapes.push_back(s);
    node->dtypes.push_back(o.dtype());
  }
  std::vector<KerasTensor> result;
  for (size_t i = 0; i < outs.size(); ++i) result.emplace_back(node, i);
  return result;
}

KerasTensor Input(const Shape& shape, DType dtype, const std::string& name) {
  auto node = std::make_shared<KerasTensor::Node>();
  Shape s = shape;
  s.insert(s.begin(), -1);
  node->shapes.push_back(s);
  node->dtypes.push_back(dtype);
  node->name = name;
  return KerasTensor(node, 0);
}

}  // namespace weft::nn
