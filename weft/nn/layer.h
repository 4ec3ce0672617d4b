// Keras-style layers. A Layer is a handle (copies share one layer, as Python references do) to a
// LayerImpl that owns the weights. Layers build themselves from the shape of their first input,
// and work both eagerly on Tensors and symbolically on KerasTensors (the Functional API).
//
//   weft::nn::Dense dense(10, "relu");
//   weft::Tensor y = dense(x);                          // builds a (784, 10) kernel on first call
//   weft::nn::KerasTensor in = weft::nn::Input({784});
//   weft::nn::KerasTensor out = dense(in);              // shape (None, 10)
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "weft/autodiff/variable.h"
#include "weft/core/config_dict.h"
#include "weft/core/tensor.h"
#include "weft/dtensor/layout.h"
#include "weft/nn/initializers.h"
#include "weft/nn/regularizers.h"
#include "weft/precision/policy.h"

namespace weft::nn {

class KerasTensor;

// What every layer implements. Single-input layers override build(Shape) and call(Tensor);
// layers of several inputs (Concatenate, Add, models) override the *_multi forms.
//
// Mixed precision: a layer given a dtype policy (its `dtype` option, or a global policy other
// than "float32" when it is constructed) casts its floating inputs to the policy's compute dtype
// before call(), creates its weights in the variable dtype, and reads them through
// cast_variable() in the compute dtype. Without one, it computes in its inputs' dtype.
class LayerImpl : public std::enable_shared_from_this<LayerImpl> {
 public:
  // `name` empty: the class name in snake case made unique in the process ("dense",
  // "dense_1", ... as Keras names layers); a model that adopts the layer before it is built
  // (Sequential) renames it uniquely within the model, in layer order, so that names, variable
  // names, checkpoint keys and initial values follow the model's structure, not what else the
  // process made. `dtype`: a policy name (weft/precision/policy.h); empty takes the global
  // policy.
  LayerImpl(std::string class_name, std::string name, const std::string& dtype = "");
  virtual ~LayerImpl() = default;
  LayerImpl(const LayerImpl&) = delete;
  LayerImpl& operator=(const LayerImpl&) = delete;

  // input_shape includes the batch dimension (its size is not to be relied on).
  virtual void build(const Shape& input_shape) {}
  virtual Tensor call(const Tensor& x, bool training);
  virtual void build_multi(const std::vector<Shape>& input_shapes);
  virtual std::vector<Tensor> call_multi(const std::vector<Tensor>& xs, bool training);
  // Extra text for summary() (e.g. an activation); empty by default.
  virtual std::string describe() const { return {}; }
  // Keras's get_config: what it takes to make this layer again, without its weights (a saved
  // model stores it; weft/nn/saving.h). The base holds "name", "trainable" and "dtype" (the
  // policy's name, null for a layer that follows its inputs); a layer with options of its own
  // overrides it, starting from the base's.
  virtual ConfigDict get_config() const;
  // Sets the name, trainable and dtype policy a config holds (each if present), before the layer
  // is built: every from_config ends with it, and load_model applies it to custom layers too.
  void restore_base_config(const ConfigDict& config);
  // The input shapes the layer was built for, batch dimension dropped; empty until it is built.
  std::vector<Shape> built_input_shapes() const;

  // Builds on first use (once, even when replicas call it at the same time), checks the input
  // against the built shape, then calls.
  std::vector<Tensor> invoke(const std::vector<Tensor>& xs, bool training);

  const std::string& name() const { return name_; }
  // Where the layer sits in the model that adopted it ("dense_1", "block/conv2d"); empty for a
  // layer in no model (or the outermost model). A layer with a path builds inside a
  // random::SeedScope keyed by it, so its initial weights follow the model's structure.
  std::string path() const;
  // Called by a model on its layers, in order: an unbuilt layer that no other model adopted
  // takes the model as its parent and, if its name is the default one, a name unique in `used`
  // (the names of the model's other layers); every layer's name ends up in `used`.
  void adopt(const std::shared_ptr<LayerImpl>& parent, std::set<std::string>& used);
  const std::string& class_name() const { return class_name_; }
  bool built() const { return built_.load(std::memory_order_acquire); }
  bool trainable() const { return trainable_; }
  void set_trainable(bool trainable) { trainable_ = trainable; }
  // The layer's policy ("float32" when it has none and follows its inputs).
  mixed_precision::Policy dtype_policy() const;
  // Weights in creation order (own, then sublayers'); trainable_variables() honours set_trainable.
  virtual std::vector<Variable> variables() const;
  virtual std::vector<Variable> trainable_variables() const;
  virtual std::vector<Variable> non_trainable_variables() const;
  // Layers nested in this one (a model's layers); their weights count as this layer's.
  virtual std::vector<std::shared_ptr<LayerImpl>> sublayers() const { return {}; }
  // Whether later inputs may differ from the built shape along `axis` (0: the first axis after
  // the batch), as Keras's None dimensions: a recurrent layer's steps, Dense's leading axes.
  virtual bool any_size(size_t axis) const { return false; }
  // How many of the inputs are checked against the built shapes; the rest (a recurrent layer's
  // optional initial states) the layer checks itself, and their count may vary.
  virtual size_t checked_inputs() const { return SIZE_MAX; }
  // Keras's supports_masking: the layer passes its first input's mask on (keras_mask below);
  // a layer that does not drops it.
  virtual bool supports_masking() const { return false; }
  // Keras's compute_mask: the masks of the first outputs of a call on `xs` (the inputs' masks are
  // keras_mask(xs[i])); undefined or missing ones leave an output without. invoke() attaches
  // each to its output unless call() attached one itself. By default, the first input's mask for
  // the first output if the layer supports_masking, else none.
  virtual std::vector<Tensor> compute_mask(const std::vector<Tensor>& xs) const;
  // Keras's layer.losses: the penalties of the weights' regularizers (computed now, so a tape
  // records them) and the activity-regularization losses of the layer's last call outside a
  // training step, this layer's and its sublayers'.
  std::vector<Tensor> losses() const;
  // Only the weights' penalties (what fit adds to each step's loss, with the step's activity
  // losses from an ActivityLossScope).
  std::vector<Tensor> weight_penalties() const;
  // Keras's activity_regularizer: a penalty on each output, activity_regularizer(y) / batch size,
  // recorded at every call. Any layer takes one; its config then holds it.
  void set_activity_regularizer(Regularizer regularizer) {
    activity_regularizer_ = std::move(regularizer);
  }
  const Regularizer& activity_regularizer() const { return activity_regularizer_; }
  // Whether a training call makes collective calls across replicas (SyncBatchNormalization),
  // here or in a sublayer: then every replica must call it, the same number of times, each step.
  virtual bool synchronizes_replicas() const;

 protected:
  // A weight named "<layer name>/<name>", initialised now; dtype defaults to the policy's
  // variable dtype. `aggregation`: how replicas' assignments in one step combine (Keras's
  // add_weight; BatchNormalization's moving statistics are MEAN).
  // `regularizer` adds its penalty to losses(); `constraint` becomes the variable's. With a
  // `layout` (Keras's DTensor layers), the weight is a DVariable laid out so: the initial value is
  // drawn once and cut, so it is the same on every layout.
  Variable add_weight(const std::string& name, const Shape& shape, const Initializer& init,
                      bool trainable = true, std::optional<DType> dtype = {},
                      VariableAggregation aggregation = VariableAggregation::NONE,
                      const Regularizer& regularizer = {}, const Constraint& constraint = {},
                      const dtensor::Layout& layout = {});
  // A weight as call() uses it: cast to the policy's compute dtype (recorded, so gradients reach
  // the float32 variable), or as it is without a policy.
  Tensor cast_variable(const Variable& v) const;
  // Models leave casting to their layers.
  bool autocast_ = true;
  // Shapes the layer was built for (batch dimension dropped); later inputs must match.
  std::vector<Shape> built_shapes_;

 private:
  // The activity losses of this layer's and its sublayers' last calls outside a training step.
  void add_last_activity_losses(std::vector<Tensor>& out) const;

  std::string class_name_;
  std::string name_;
  bool default_name_;
  std::weak_ptr<LayerImpl> parent_;
  std::mutex build_mu_;
  std::atomic<bool> built_{false};
  bool trainable_ = true;
  std::optional<mixed_precision::Policy> policy_;
  std::vector<Variable> weights_;
  std::vector<bool> weight_trainable_;
  std::vector<std::pair<Variable, Regularizer>> weight_regularizers_;
  Regularizer activity_regularizer_;
  mutable std::mutex activity_mu_;
  std::vector<Tensor> last_activity_losses_;
};

// While one lives on a thread, the activity-regularization losses of the layer calls made there
// are gathered in it (a training step's forward pass, per replica) instead of being kept by each
// layer for losses().
class ActivityLossScope {
 public:
  ActivityLossScope();
  ~ActivityLossScope();
  ActivityLossScope(const ActivityLossScope&) = delete;
  ActivityLossScope& operator=(const ActivityLossScope&) = delete;
  const std::vector<Tensor>& losses() const { return losses_; }
  static ActivityLossScope* current();
  void add(const Tensor& loss) { losses_.push_back(loss); }

 private:
  ActivityLossScope* previous_;
  std::vector<Tensor> losses_;
};

class Layer {
 public:
  Layer() = default;
  explicit Layer(std::shared_ptr<LayerImpl> impl) : impl_(std::move(impl)) {}

  Tensor operator()(const Tensor& x, bool training = false) const;
  std::vector<Tensor> operator()(const std::vector<Tensor>& xs, bool training = false) const;
  KerasTensor operator()(const KerasTensor& x) const;
  std::vector<KerasTensor> operator()(const std::vector<KerasTensor>& xs) const;

  const std::string& name() const { return impl().name(); }
  std::vector<Variable> variables() const { return impl().variables(); }
  std::vector<Variable> trainable_variables() const { return impl().trainable_variables(); }
  std::vector<Variable> non_trainable_variables() const { return impl().non_trainable_variables(); }
  bool trainable() const { return impl().trainable(); }
  mixed_precision::Policy dtype_policy() const { return impl().dtype_policy(); }
  // Freezing: a layer with trainable = false contributes no trainable variables.
  void set_trainable(bool trainable) const { impl().set_trainable(trainable); }
  LayerImpl& impl() const;
  const std::shared_ptr<LayerImpl>& impl_ptr() const { return impl_; }
  bool defined() const { return impl_ != nullptr; }

 private:
  std::shared_ptr<LayerImpl> impl_;
};

// A symbolic tensor of the Functional API: a shape whose first dimension (the batch) is unknown
// (-1), a dtype, and the layer call that produces it.
class KerasTensor {
 public:
  struct Node {
    Layer layer;                      // undefined for an Input
    std::vector<KerasTensor> inputs;  // what the layer was called on
    std::vector<Shape> shapes;        // every output's shape, batch dimension -1
    std::vector<DType> dtypes;
    std::string name;  // Inputs only
  };
  KerasTensor(std::shared_ptr<Node> node, size_t index) : node_(std::move(node)), index_(index) {}
  const Shape& shape() const { return node_->shapes[index_]; }
  DType dtype() const { return node_->dtypes[index_]; }
  const std::shared_ptr<Node>& node() const { return node_; }
  size_t index() const { return index_; }

 private:
  std::shared_ptr<Node> node_;
  size_t index_;
};

// Keras's masks: a bool (batch, steps) tensor that a layer attaches to its output (Masking,
// Embedding with mask_zero) for later layers to read (recurrent layers skip masked steps);
// layers that support masking pass it on. As Keras's _keras_mask it travels with the tensor
// object; ops do not carry it. keras_mask is undefined when there is none.
Tensor keras_mask(const Tensor& x);
// Attaches `mask` (undefined: none) to x and returns x.
Tensor with_keras_mask(const Tensor& x, const Tensor& mask);

// A symbolic model input; `shape` excludes the batch dimension (keras.Input).
KerasTensor Input(const Shape& shape, DType dtype = kFloat32, const std::string& name = "");

}  // namespace weft::nn
