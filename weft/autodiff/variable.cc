#include "weft/autodiff/variable.h"

#include "weft/autodiff/tape.h"
#include "weft/core/replica_context.h"
#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/shape_ops.h"

namespace weft {
namespace {

thread_local std::vector<VariableCreator>* creators = nullptr;  // innermost last
thread_local autodiff::UpdateCollector* collector = nullptr;

// Creators from index `i` down, then the bottom one.
Variable create_from(size_t i, const VariableArgs& args,
                     const std::function<Variable(const VariableArgs&)>& bottom) {
  if (i == 0) return bottom(args);
  const VariableCreator& creator = (*creators)[i - 1];
  return creator(args, [&](const VariableArgs& a) { return create_from(i - 1, a, bottom); });
}

}  // namespace

struct Variable::State {
  std::string name;
  bool trainable;
  VariableAggregation aggregation;
  VariableConstraint constraint;
  Tensor value;
  std::shared_ptr<const VariableBinding> binding;  // null: the value lives here
};

Variable Variable::create(const VariableArgs& args) {
  WEFT_CHECK(args.initial_value.defined(), InvalidArgument)
      << "Variable \"" << args.name << "\": the initial value is undefined";
  Variable v;
  v.state_ = std::make_shared<State>();
  v.state_->name = args.name;
  v.state_->trainable = args.trainable;
  v.state_->aggregation = args.aggregation;
  v.state_->constraint = args.constraint;
  const Tensor& init = args.initial_value;
  v.state_->value =
      init.parts() ? init.parts()->empty_like() : Tensor::empty(init.shape(), init.dtype());
  assign_into(v.state_->value, init);
  auto mark = [&](TensorImpl* impl) {
    impl->trainable_variable = args.trainable;
    impl->variable = v.state_;
  };
  mark(v.state_->value.impl());
  // A DVariable's components are what ops (and so tapes) see.
  if (const TensorParts* parts = v.state_->value.parts()) {
    for (const Tensor& c : parts->components()) mark(c.impl());
  }
  return v;
}

Variable Variable::of(const Tensor& value) {
  Variable v;
  if (value.defined()) v.state_ = std::static_pointer_cast<State>(value.impl()->variable.lock());
  return v;
}

Variable::Variable(const Tensor& initial_value, std::string name, bool trainable,
                   VariableAggregation aggregation)
    : Variable(VariableArgs{initial_value, std::move(name), trainable, aggregation, {}}) {}

Variable::Variable(const VariableArgs& args) {
  if (creators == nullptr || creators->empty()) {
    *this = create(args);
  } else {
    *this = create_from(creators->size(), args, &Variable::create);
  }
  WEFT_CHECK(defined(), InvalidArgument)
      << "Variable \"" << args.name << "\": a variable creator returned an undefined variable";
}

VariableCreatorScope::VariableCreatorScope(VariableCreator creator) {
  if (creators == nullptr) creators = new std::vector<VariableCreator>;
  creators->push_back(std::move(creator));
}
VariableCreatorScope::~VariableCreatorScope() {
  creators->pop_back();
  if (creators->empty()) {
    delete creators;
    creators = nullptr;
  }
}

namespace autodiff {
UpdateCollector::UpdateCollector() : previous_(collector) { collector = this; }
UpdateCollector::~UpdateCollector() { collector = previous_; }
UpdateCollector* UpdateCollector::current() { return collector; }
UpdateCollector::Suspend::Suspend() : saved_(collector) { collector = nullptr; }
UpdateCollector::Suspend::~Suspend() { collector = saved_; }
}  // namespace autodiff

namespace {
// A variable's state, which must exist. What never changes (name, dtype, shape, ...) is read
// from it directly: a variable that lives elsewhere is not pulled for that.
template <typename State>
const State& initialised(const std::shared_ptr<State>& state) {
  WEFT_CHECK(state != nullptr, FailedPrecondition) << "use of an uninitialised Variable";
  return *state;
}
}  // namespace

const Tensor& Variable::value() const {
  const State& s = initialised(state_);
  if (s.binding != nullptr) s.binding->refresh(s.value);
  return s.value;
}

DType Variable::dtype() const { return initialised(state_).value.dtype(); }
const Shape& Variable::shape() const { return initialised(state_).value.shape(); }

bool VariableBinding::stage_gradient(const GradientUpdate&) const { return false; }
bool VariableBinding::stage_add(const Tensor&) const { return false; }
std::shared_ptr<const VariableBinding> VariableBinding::slot(size_t, const std::string&) const {
  return nullptr;
}

void Variable::bind(std::shared_ptr<const VariableBinding> binding) {
  value();
  WEFT_CHECK(state_->binding == nullptr, FailedPrecondition)
      << "Variable \"" << state_->name << "\" is bound already";
  state_->binding = std::move(binding);
}

const VariableBinding* Variable::binding() const {
  WEFT_CHECK(state_ != nullptr, FailedPrecondition) << "use of an uninitialised Variable";
  return state_->binding.get();  // without a read: that would pull the value
}

// A bound variable's new value goes where it lives too.
void Variable::written() const {
  if (state_->binding != nullptr) state_->binding->write(state_->value);
}

// In a closure a ClusterCoordinator scheduled, an addition to a variable on a parameter server is
// staged as one, so that closures running at once each add theirs (TensorFlow's
// AssignAddVariableOp, which runs where the variable lives); elsewhere the new value is written.
void Variable::added(const Tensor& delta) const {
  if (state_->binding == nullptr) return;
  if (state_->binding->stage_add(broadcast_to(cast(delta, dtype()), shape()))) return;
  written();
}
const std::string& Variable::name() const { return initialised(state_).name; }
bool Variable::trainable() const { return initialised(state_).trainable; }
VariableAggregation Variable::aggregation() const { return initialised(state_).aggregation; }

const VariableConstraint& Variable::constraint() const { return initialised(state_).constraint; }

bool Variable::records_change(const Tensor& change) const {
  if (state_->aggregation != VariableAggregation::SUM || collector == nullptr) return false;
  // A copy: the caller's tensor may be written in place before the step ends.
  Tensor delta = cast(change, state_->value.dtype());
  collector->updates_.push_back(
      {*this, delta.storage() == change.storage() ? copy(delta) : delta, 1, /*relative=*/true});
  return true;
}

bool Variable::deferred(const Tensor& new_value) const {
  if (state_->aggregation == VariableAggregation::NONE) {
    WEFT_CHECK(!distribute::in_replica_sync_group(), FailedPrecondition)
        << "Variable \"" << state_->name << "\" was assigned on replica "
        << distribute::get_replica_context().replica_id_in_sync_group() << " of "
        << distribute::get_replica_context().num_replicas_in_sync()
        << " replicas in sync, but its aggregation is NONE: give it one (SUM, MEAN or "
           "ONLY_FIRST_REPLICA) to say how the replicas' values combine, or assign it in "
           "merge_call";
    return false;
  }
  if (collector == nullptr) return false;
  // A value sharing the variable's storage would change when the variable is written.
  collector->updates_.push_back(
      {*this, new_value.storage() == state_->value.storage() ? copy(new_value) : new_value});
  return true;
}

void Variable::assign(const Tensor& v) {
  WEFT_CHECK(state_ != nullptr, FailedPrecondition) << "use of an uninitialised Variable";
  // Its own copy, not value(): a variable that lives elsewhere is not pulled to be overwritten.
  const Tensor& dst = state_->value;
  WEFT_CHECK(v.defined(), InvalidArgument)
      << "Variable \"" << name() << "\".assign: undefined value";
  WEFT_CHECK(v.shape() == dst.shape(), InvalidArgument)
      << "Variable \"" << name() << "\".assign: value has shape " << shape_str(v.shape())
      << ", the variable has shape " << shape_str(dst.shape());
  if (deferred(v.dtype() == dst.dtype() ? v : cast(v, dst.dtype()))) return;
  // A view of the variable itself (v.assign(transpose(v))) is copied first: writing in place
  // would read elements it has already overwritten.
  assign_into(dst, v.storage() == dst.storage() && v.storage() ? copy(v) : v);
  written();
}

void Variable::assign_add(const Tensor& delta) {
  autodiff::NoRecordScope no_record;
  if (records_change(delta)) return;
  Tensor sum = add(value(), delta);
  if (deferred(cast(sum, dtype()))) return;
  assign_into(state_->value, sum);
  added(delta);
}

void Variable::assign_sub(const Tensor& delta) {
  autodiff::NoRecordScope no_record;
  if (records_change(neg(delta))) return;
  Tensor difference = sub(value(), delta);
  if (deferred(cast(difference, dtype()))) return;
  assign_into(state_->value, difference);
  added(neg(delta));
}

}  // namespace weft
