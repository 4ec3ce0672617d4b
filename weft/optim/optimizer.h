// weft::optim::Optimizer, the base of SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, Nadam
// and Ftrl: Keras' optimizer as refactored in TF 2.4. apply_gradients() drops undefined
// gradients, combines replicas' gradients with the gradient_aggregator (identity on one replica),
// clips (clipvalue, clipnorm, global_clipnorm), runs the gradient_transformers in order, then
// updates each variable and its slots in one fused pass over memory, and increments `iterations`.
// minimize() takes the loss and the tape and computes the gradients itself.
//
//   weft::optim::Adam optimizer({.learning_rate = 1e-3, .global_clipnorm = 1.0});
//   weft::GradientTape tape;
//   weft::Tensor loss = weft::mean(weft::square(weft::matmul(x, w) - y));
//   optimizer.minimize(loss, {w}, tape);
//
// Optimizers are cheap handles: copies share one state (slots, iterations, learning rate, hooks),
// so `model.compile(weft::optim::Adam(1e-3), ...)` can keep one by value, and storing an Adam as
// an Optimizer slices nothing away (subclasses add no members). Slots are created on a variable's
// first update (or by build()) and checkpointed as "<variable name>/<slot>", e.g. "dense/kernel/m".
// apply_gradients may be called from several threads: updates are serialised by a lock, which is
// not held while the aggregator and transformers run (an aggregator may wait for other replicas).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/autodiff/variable.h"
#include "weft/checkpoint/trackable.h"
#include "weft/core/tensor.h"
#include "weft/optim/schedules.h"

namespace weft::optim {

using GradsAndVars = std::vector<std::pair<Tensor, Variable>>;
// Keras' gradient_transformers: each maps the (aggregated) gradients to new ones.
using GradientTransformer = std::function<GradsAndVars(GradsAndVars)>;
// Keras' gradient_aggregator: a distribution strategy sets it to all-reduce across replicas.
using GradientAggregator = std::function<GradsAndVars(GradsAndVars)>;

// Loss scaling for float16 training (Keras' LossScaleOptimizer; see
// weft/optim/loss_scale_optimizer.h). Dynamic: the scale halves (and the step is skipped) on a
// non-finite gradient and doubles after dynamic_growth_steps finite steps in a row. Fixed
// (dynamic = false): the scale never changes and every step is applied.
struct LossScaleOptions {
  bool dynamic = true;
  double initial_scale = 32768;  // 2^15
  int64_t dynamic_growth_steps = 2000;
};

// What every optimizer's options hold besides its own hyperparameters.
struct OptimizerOptions {
  std::string name = "Optimizer";
  schedules::LearningRateSchedule learning_rate = 0.001;
  std::optional<double> clipnorm{};         // each gradient scaled to L2 norm <= clipnorm
  std::optional<double> clipvalue{};        // each element clipped to [-clipvalue, clipvalue]
  std::optional<double> global_clipnorm{};  // all gradients scaled so their global norm <= this
  std::vector<GradientTransformer> gradient_transformers{};
  GradientAggregator gradient_aggregator{};  // empty: identity
};

class Optimizer : public Trackable {
 public:
  // An optimizer's own part: the slots it keeps per variable and its update (Keras' build() and
  // update_step()). SGD, Adam, ... each define one; derive from Optimizer with your own to add an
  // optimizer, keeping hyperparameters in the Algorithm (a subclass adds no data members).
  class Algorithm {
   public:
    struct Slot {
      std::string name;      // "m"; the checkpoint name is "<variable name>/m"
      double initial_value;  // every element
    };
    struct Step {
      double learning_rate;  // the schedule's value at `iterations`
      int64_t iterations;    // updates done before this one
    };
    virtual ~Algorithm() = default;
    virtual std::vector<Slot> slots() const = 0;
    // Updates `var` and `slots` (contiguous, in slots() order, var's shape and dtype) in place
    // from `grad` (var's shape and dtype, any strides). Called with no tape recording.
    virtual void update(const Tensor& grad, const Tensor& var, std::span<const Tensor> slots,
                        const Step& step) const = 0;
    // True when update() computes each element from the same element of grad, var and slots
    // alone (and the step): then replicas may each update a part of a variable. Every built-in
    // algorithm is; false by default.
    virtual bool elementwise() const { return false; }
    // Keras's class name ("Adam") under "class_name", and the algorithm's own hyperparameters;
    // empty (the default) for an algorithm that cannot be saved.
    virtual ConfigDict get_config() const { return {}; }
  };

  Optimizer() = default;  // an undefined handle; assign a real optimizer to it
  bool defined() const { return state_ != nullptr; }
  const std::string& name() const;

  // Updates each variable from its gradient. Pairs with an undefined gradient are skipped (the
  // variable is left alone); InvalidArgument when no gradient is defined, or a gradient's shape
  // differs from its variable's. With experimental_aggregate_gradients = false the gradients are
  // taken as already aggregated (the gradient_aggregator is not called). On a replica of a
  // distribution strategy, every replica calls it: the gradients are summed across replicas
  // (unless a gradient_aggregator or experimental_aggregate_gradients = false says otherwise),
  // one replica applies them (merge_call) or, with an element-wise algorithm and no clipping,
  // transformer or loss scale, each replica applies its part of every variable
  // (merge_call_in_parts: the same bits), and `iterations` grows by one. Variables that live on
  // parameter servers (ParameterServerStrategy) are updated there: inside a closure a
  // ClusterCoordinator scheduled, each final gradient is staged on its variable's parameter
  // server and applied there, with this step, when the closure commits (FailedPrecondition
  // outside one).
  void apply_gradients(const GradsAndVars& grads_and_vars,
                       bool experimental_aggregate_gradients = true);
  // tape.gradient(loss, vars) paired with vars.
  GradsAndVars compute_gradients(const Tensor& loss, const std::vector<Variable>& vars,
                                 GradientTape& tape) const;
  // The same, calling on_ready(i, gradient of vars[i]) as soon as each is final, while the
  // backward pass still runs (GradientTape::gradient's on_ready; loss scale divided out).
  GradsAndVars compute_gradients(const Tensor& loss, const std::vector<Variable>& vars,
                                 GradientTape& tape,
                                 const GradientTape::GradientReadyFn& on_ready) const;
  // With loss scaling, compute_gradients differentiates loss * scale and divides the gradients
  // by the scale (float16 gradients stay representable), and apply_gradients skips a step whose
  // aggregated gradients are not all finite.
  // compute_gradients then apply_gradients (TF 2.4: `optimizer.minimize(loss, vars, tape=tape)`).
  void minimize(const Tensor& loss, const std::vector<Variable>& vars, GradientTape& tape);
  // Creates the slots of `vars` now rather than on their first update, e.g. so that a checkpoint
  // can be restored into them before training starts (Keras 3's optimizer.build(var_list)).
  void build(const std::vector<Variable>& vars);

  // Number of apply_gradients calls so far: an int64 scalar, non-trainable, checkpointed.
  const Variable& iterations() const;
  schedules::LearningRateSchedule learning_rate() const;
  // The schedule's value at iterations(): the rate the next update uses.
  double current_learning_rate() const;
  // InvalidArgument for a negative or non-finite constant.
  void set_learning_rate(schedules::LearningRateSchedule learning_rate);

  std::vector<GradientTransformer> gradient_transformers() const;
  void set_gradient_transformers(std::vector<GradientTransformer> transformers);
  GradientAggregator gradient_aggregator() const;  // empty: identity
  void set_gradient_aggregator(GradientAggregator aggregator);

  // Keras's get_config: the algorithm's config plus "name", "learning_rate" (a schedule,
  // schedules::serialize), "clipnorm", "clipvalue", "global_clipnorm" and, with loss scaling,
  // "loss_scale" (its options). Hooks (transformers, aggregator) are code and are left out.
  // InvalidArgument for an algorithm without a config or a schedule made from a function.
  ConfigDict get_config() const;

  // The per-variable update and slots (a parameter server runs it on the variables it holds).
  const Algorithm& algorithm() const;

  // Whether gradients are loss-scaled (a LossScaleOptimizer wraps this optimizer's state, or
  // Model::compile did under the "mixed_float16" policy).
  bool has_loss_scale() const;

  // Slot names of this optimizer ("m", "v", ...), and one variable's slot. InvalidArgument for an
  // unknown slot name; FailedPrecondition when the variable has no slots yet.
  std::vector<std::string> get_slot_names() const;
  Variable get_slot(const Variable& var, const std::string& slot_name) const;
  // iterations and every slot, in creation order.
  std::vector<Variable> variables() const;

  // Trackable: "iterations" then "<variable name>/<slot>" for each slot in creation order (a
  // second variable with an already used name gets "<name>_1/<slot>", ...), then with loss
  // scaling "loss_scale/current_loss_scale" and "loss_scale/good_steps". tracked_state holds
  // a constant learning rate, so a restore brings back one changed during training (a schedule
  // is code, and is neither saved nor replaced).
  std::vector<std::pair<std::string, Variable>> tracked_variables() const override;
  std::string tracked_state() const override;
  void restore_state(const std::string& state) override;

 protected:
  Optimizer(std::shared_ptr<const Algorithm> algorithm, OptimizerOptions options);
  // Turns loss scaling on for this optimizer's shared state (LossScaleOptimizer's constructor).
  // InvalidArgument when it is already on.
  void enable_loss_scale(const LossScaleOptions& options);
  // The current loss scale and finite steps since it last changed; FailedPrecondition without
  // loss scaling.
  double loss_scale() const;
  int64_t loss_scale_good_steps() const;
  const LossScaleOptions& loss_scale_options() const;

 private:
  struct State;
  State& state() const;
  // The part of apply_gradients after aggregation: clipping, transformers, loss-scale check,
  // update, iterations; run once per step.
  void apply_aggregated(GradsAndVars gv, const std::vector<GradientTransformer>& transformers);
  // For variables that live on parameter servers (bound, ParameterServerStrategy): stages each
  // gradient where its variable lives, applied there with this step when the running closure
  // commits, and one more iteration; false for variables that live here. A dynamic loss scale
  // is checked and updated here, on the worker (a step that is not finite pushes nothing).
  // FailedPrecondition outside a closure, for a mix of both, or a constraint.
  bool stage_on_parameter_servers(const GradsAndVars& gv);
  // Whether the aggregated gradients go to the variables as they are (an element-wise algorithm;
  // no clipping, transformers or loss scale), so that the replicas can each update their part.
  bool updates_in_parts(const std::vector<GradientTransformer>& transformers) const;
  // The update and iterations as apply_aggregated makes them, each replica of this process
  // writing its part of every variable (ReplicaContext::merge_call_in_parts).
  void apply_in_parts(const GradsAndVars& gv);
  std::shared_ptr<State> state_;
};

// An optimizer made from a get_config() (any of the above; loss scaling turned on when the config
// has it), with no slots and iterations 0. InvalidArgument for an
// unknown class_name or a bad field, named.
Optimizer deserialize(const ConfigDict& config);

}  // namespace weft::optim
