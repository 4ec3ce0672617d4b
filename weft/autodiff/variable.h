// weft::Variable: named, mutable state (model weights, optimizer slots), as tf.Variable. Reading
// it inside a GradientTape is watched automatically when it is trainable. It converts to a
// const Tensor&, so every op takes it directly. Variables are made through a creator stack
// (tf.variable_creator_scope), which a distribution strategy's scope() extends to decide where
// the variables made inside it live.
//
//   weft::Variable w(weft::zeros({784, 10}), "dense/kernel");
//   w.assign_sub(lr * grad);
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/tensor.h"

namespace weft {

// tf.VariableAggregation: how the values that several replicas assign to one variable in a step
// combine. With NONE a variable may not be assigned on a replica while others run in sync
// (FailedPrecondition naming it); BatchNormalization's moving statistics are MEAN.
enum class VariableAggregation { NONE, SUM, MEAN, ONLY_FIRST_REPLICA };

class Variable;

// tf.Variable's constraint: a projection an optimizer applies to the variable after each update
// (Keras's kernel_constraint; weft/nn/regularizers.h).
using VariableConstraint = std::function<Tensor(const Tensor& value)>;

// What a variable is made from, as a creator sees it.
struct VariableArgs {
  Tensor initial_value;
  std::string name = "Variable";
  bool trainable = true;
  VariableAggregation aggregation = VariableAggregation::NONE;
  VariableConstraint constraint{};
  // Set for an optimizer's slot of this variable: a strategy's creator makes the slot here, not
  // as a variable of its own, and the optimizer binds it beside this one (VariableBinding::slot).
  const Variable* slot_of = nullptr;
};
// A creator makes the variable, usually by calling `next` (the creators below it) with the
// same or changed arguments.
using VariableCreator = std::function<Variable(
    const VariableArgs& args, const std::function<Variable(const VariableArgs&)>& next)>;

// Where a variable's value lives when it is not in this process (a parameter server's, under
// ParameterServerStrategy): the variable's own value is then a copy, which value() refreshes
// from there before each read, and an assignment is written through to there as well.
class VariableBinding {
 public:
  virtual ~VariableBinding() = default;
  // Brings `cache` (the variable's local value, contiguous) up to date.
  virtual void refresh(const Tensor& cache) const = 0;
  // Writes `value` (the variable's new value, already in its cache) to where it lives.
  virtual void write(const Tensor& value) const = 0;

  // An optimizer step's update, staged where the variable lives by a closure that a coordinator
  // commits (ParameterServerStrategy): the gradient is applied there with the optimizer's
  // algorithm `optimizer` (its Keras config as JSON) at `learning_rate` and `iterations`.
  struct GradientUpdate {
    Tensor gradient;
    std::string optimizer;
    double learning_rate = 0.0;
    int64_t iterations = 0;
  };
  // Stages `update` under the closure this thread runs; false when it runs none (nothing is
  // staged, and the caller refuses the update). The default stages nothing.
  virtual bool stage_gradient(const GradientUpdate& update) const;
  // Stages adding `delta` (of the variable's dtype and shape) likewise.
  virtual bool stage_add(const Tensor& delta) const;
  // Where slot `k` of the optimizer `optimizer` (its Keras config as JSON) lives for this
  // variable (a parameter server keeps a variable's slots beside it); null (the default) when
  // the slot lives in this process.
  virtual std::shared_ptr<const VariableBinding> slot(size_t k, const std::string& optimizer) const;
};

class Variable {
 public:
  Variable() = default;
  // Copies `initial_value` into storage of the variable's own (through the creator stack).
  explicit Variable(const Tensor& initial_value, std::string name = "Variable",
                    bool trainable = true,
                    VariableAggregation aggregation = VariableAggregation::NONE);
  explicit Variable(const VariableArgs& args);

  // The variable whose value() `value` is, or an undefined Variable.
  static Variable of(const Tensor& value);

  bool defined() const { return state_ != nullptr; }
  const Tensor& value() const;
  operator const Tensor&() const { return value(); }  // NOLINT(google-explicit-constructor)
  const std::string& name() const;
  bool trainable() const;
  VariableAggregation aggregation() const;
  // Empty without one.
  const VariableConstraint& constraint() const;
  // A variable's dtype and shape never change (assign keeps them), so these read its own copy:
  // a variable that lives elsewhere is not pulled for them.
  DType dtype() const;
  const Shape& shape() const;

  // In-place updates; shapes must match (the update may broadcast), values are cast to dtype().
  // On a replica with an autodiff::UpdateCollector in scope (a strategy's step), an aggregated
  // variable is not written: the new value is recorded, and the strategy writes the combination
  // of its replicas' values once, when the step ends. In a closure on a parameter-server worker,
  // assign_add and assign_sub of a variable on a ps task are staged there as additions, applied
  // at the closure's commit onto what other closures applied meanwhile.
  void assign(const Tensor& value);
  void assign_add(const Tensor& delta);
  void assign_sub(const Tensor& delta);

  // Binds the variable to where its value lives (a strategy's variable creator does, once);
  // binding() is null for a variable that lives here.
  void bind(std::shared_ptr<const VariableBinding> binding);
  const VariableBinding* binding() const;

  // Two Variable handles are equal when they name the same variable.
  bool operator==(const Variable& other) const { return state_ == other.state_; }

 private:
  struct State;
  static Variable create(const VariableArgs& args);  // the bottom of the creator stack
  // Whether an assignment of `new_value` (the variable's dtype) is recorded by the thread's
  // UpdateCollector instead of written; FailedPrecondition for an unaggregated variable on a
  // replica in sync with others.
  bool deferred(const Tensor& new_value) const;
  // Whether the thread's UpdateCollector records `change` (of an assign_add/assign_sub) for a
  // SUM variable, to be added to it with the other replicas' changes.
  bool records_change(const Tensor& change) const;
  // After an assignment: writes the new value where a bound variable lives.
  void written() const;
  // After an assign_add of `delta` (an assign_sub: its negation): stages the addition where a
  // bound variable lives when a closure runs (VariableBinding::stage_add), else written().
  void added(const Tensor& delta) const;
  std::shared_ptr<State> state_;
};

// tf.variable_creator_scope: while it lives, variables made on this thread pass through
// `creator` first (innermost scope first).
class VariableCreatorScope {
 public:
  explicit VariableCreatorScope(VariableCreator creator);
  ~VariableCreatorScope();
  VariableCreatorScope(const VariableCreatorScope&) = delete;
  VariableCreatorScope& operator=(const VariableCreatorScope&) = delete;
};

namespace autodiff {

// While one lives on a thread, assign() of a variable whose aggregation is not NONE records the
// value instead of writing it. A strategy installs one per replica (and per micro-batch), then
// combines what they recorded by each variable's aggregation and writes each variable once.
class UpdateCollector {
 public:
  // A new value for `variable`; `count` > 1 when it is already the sum of that many replicas'
  // or micro-batches' values (a strategy passing combined updates up a level).
  struct Update {
    Variable variable;
    Tensor value;
    int64_t count = 1;
    // For a SUM variable's assign_add/assign_sub: `value` is a change to add to the variable, not
    // its new value, so that the replicas' changes add up (old + d1 + d2, not 2 * old + d1 + d2).
    bool relative = false;
  };
  UpdateCollector();
  ~UpdateCollector();
  UpdateCollector(const UpdateCollector&) = delete;
  UpdateCollector& operator=(const UpdateCollector&) = delete;
  // The updates recorded so far, in the order they were made.
  const std::vector<Update>& updates() const { return updates_; }
  void record(Update update) { updates_.push_back(std::move(update)); }
  // The collector of the calling thread, or null. A strategy's merge step suspends it with
  // Suspend (updates made there are the merged ones, written at once).
  static UpdateCollector* current();
  class Suspend {
   public:
    Suspend();
    ~Suspend();
    Suspend(const Suspend&) = delete;
    Suspend& operator=(const Suspend&) = delete;

   private:
    UpdateCollector* saved_;
  };

 private:
  friend class weft::Variable;
  UpdateCollector* previous_;
  std::vector<Update> updates_;
};

}  // namespace autodiff
}  // namespace weft
