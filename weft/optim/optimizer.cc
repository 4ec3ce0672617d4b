#include "weft/optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>

#include "weft/core/errors.h"
#include "weft/core/replica_context.h"
#include "weft/core/trace_me.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft::optim {

struct Optimizer::State {
  std::string name;
  std::shared_ptr<const Algorithm> algorithm;
  std::vector<Algorithm::Slot> slot_specs;
  std::optional<double> clipnorm, clipvalue, global_clipnorm;
  Variable iterations;

  // Guards everything below. Held while variables are updated, never while the aggregator or
  // transformers run: an aggregator may wait for other replicas' threads (an all-reduce).
  mutable std::mutex mu;
  schedules::LearningRateSchedule learning_rate = 0.0;
  std::vector<GradientTransformer> transformers;
  GradientAggregator aggregator;
  struct LossScale {
    LossScaleOptions options;
    Variable scale;       // float32 scalar
    Variable good_steps;  // int64 scalar: finite steps in a row since the scale last changed
  };
  std::optional<LossScale> loss_scale;

  struct Entry {
    Variable var;
    std::string prefix;  // the variable's checkpoint name, unique in this optimizer
    std::vector<Variable> slots;
  };
  std::vector<Entry> entries;                     // creation order
  std::unordered_map<uint64_t, size_t> by_value;  // var.value().id() -> entries index
  std::set<std::string> prefixes;

  const LossScale& checked_loss_scale() const;  // called with mu held

  // The entry of `var`, creating its slots on first sight. Called with mu held.
  Entry& entry_for(const Variable& var) {
    auto it = by_value.find(var.value().id());
    if (it != by_value.end()) return entries[it->second];
    WEFT_CHECK(is_floating(var.dtype()), InvalidArgument)
        << name << ": variable \"" << var.name() << "\" has dtype " << var.dtype()
        << "; optimizers update floating-point variables only";
    std::string prefix = unique_name(var.name(), prefixes);
    Entry e{var, prefix, {}};
    // A DVariable's slots are laid out as it is (a variable bound elsewhere is not pulled).
    const bool laid_out = var.binding() == nullptr && var.value().parts() != nullptr;
    for (const auto& spec : slot_specs) {
      VariableArgs args{laid_out ? full_like(var.value(), spec.initial_value)
                                 : full(var.shape(), spec.initial_value, var.dtype()),
                        prefix + "/" + spec.name, /*trainable=*/false};
      args.slot_of = &var;
      e.slots.emplace_back(args);
    }
    // A variable on a parameter server has its slots there, beside it (the optimizer's config
    // tells the server which slots): these read and write those.
    if (const VariableBinding* b = var.binding()) {
      ConfigDict config = algorithm->get_config();
      const std::string optimizer = config.has("class_name") ? config.to_json() : "";
      for (size_t k = 0; k < e.slots.size() && !optimizer.empty(); ++k) {
        if (auto slot = b->slot(k, optimizer)) e.slots[k].bind(std::move(slot));
      }
    }
    by_value.emplace(var.value().id(), entries.size());
    entries.push_back(std::move(e));
    return entries.back();
  }

  // One variable's update: its gradient (cast to the variable's dtype in apply()), value and
  // slots.
  struct Update {
    Tensor grad, var;
    std::vector<Tensor> slots;
  };
  // The step at the current iterations. Called with mu held.
  Algorithm::Step step_now() const {
    int64_t at = iterations.value().item<int64_t>();
    Algorithm::Step step{learning_rate(at), at};
    WEFT_CHECK(std::isfinite(step.learning_rate) && step.learning_rate >= 0, InvalidArgument)
        << name << ": the learning rate schedule " << learning_rate.name() << " gave "
        << step.learning_rate << " at step " << step.iterations
        << "; a learning rate must be finite and >= 0";
    return step;
  }
  // Each pair's update, making a variable's slots on first sight. Called with mu held.
  std::vector<Update> updates_for(const GradsAndVars& gv) {
    std::vector<Update> out;
    for (const auto& [g, v] : gv) {
      Entry& e = entry_for(v);
      Update u{g, v.value(), {}};
      WEFT_ASSERT(u.var.is_contiguous()) << "variable \"" << v.name() << "\" is not contiguous";
      for (const Variable& slot : e.slots) u.slots.push_back(slot.value());
      out.push_back(std::move(u));
    }
    return out;
  }
  // Applies part `part` of `parts` of every update (element_part of the flat variable): the
  // algorithm works element by element, so the parts make what one update of the whole would.
  void apply(const std::vector<Update>& updates, const Algorithm::Step& step, int part,
             int parts) const {
    for (const Update& u : updates) {
      if (u.var.parts()) {
        apply_components(u, step);
        continue;
      }
      const auto range = distribute::element_part(u.var.numel(), parts, part);
      if (range.first == range.second) continue;
      auto mine = [&](const Tensor& t) {
        return parts == 1 ? t : slice(reshape(t, {-1}), {Slice{range.first, range.second}});
      };
      Tensor var = mine(u.var);
      std::vector<Tensor> slots;
      for (const Tensor& t : u.slots) slots.push_back(mine(t));
      Tensor grad = cast(mine(u.grad), var.dtype());
      // The update writes var and slots in place while reading grad: a gradient sharing their
      // storage (a transformer returning the variable itself) is copied first.
      bool aliases = grad.storage() == var.storage();
      for (const Tensor& t : slots) aliases = aliases || grad.storage() == t.storage();
      if (aliases) grad = copy(grad);
      algorithm->update(grad, var, slots, step);
    }
  }
  // A DVariable's update: the algorithm works element by element, so on each component of the
  // variable, its slots and its gradient (laid out alike), once for devices sharing them.
  void apply_components(const Update& u, const Algorithm::Step& step) const {
    const std::string layout = u.var.parts()->describe();
    WEFT_CHECK(u.grad.parts() && u.grad.parts()->describe() == layout, InvalidArgument)
        << name << ": the gradient of a DVariable laid out as " << layout << " is "
        << (u.grad.parts() ? "laid out as " + u.grad.parts()->describe() : "a local tensor")
        << "; relayout it as its variable";
    const Tensor grad = cast(u.grad, u.var.dtype());
    const std::vector<Tensor>& vars = u.var.parts()->components();
    std::vector<uint64_t> done;
    for (size_t k = 0; k < vars.size(); ++k) {
      if (std::find(done.begin(), done.end(), vars[k].id()) != done.end()) continue;
      done.push_back(vars[k].id());
      std::vector<Tensor> slots;
      for (const Tensor& t : u.slots) slots.push_back(t.parts()->components()[k]);
      Tensor g = grad.parts()->components()[k];
      bool aliases = g.storage() == vars[k].storage();
      for (const Tensor& t : slots) aliases = aliases || g.storage() == t.storage();
      algorithm->update(aliases ? copy(g) : g, vars[k], slots, step);
    }
  }
};

namespace {

void check_learning_rate(const std::string& name, const schedules::LearningRateSchedule& lr) {
  if (!lr.is_constant()) return;
  double v = lr(0);
  WEFT_CHECK(std::isfinite(v) && v >= 0, InvalidArgument)
      << name << ": learning_rate must be finite and >= 0, got " << v;
}

void check_clip(const std::string& name, const char* what, const std::optional<double>& v) {
  WEFT_CHECK(!v || (std::isfinite(*v) && *v > 0), InvalidArgument)
      << name << ": " << what << " must be finite and > 0, got " << *v;
}

// Projects each updated variable that has a constraint, once all of it is updated (Keras's
// optimizer does it after each variable's update).
void apply_constraints(const GradsAndVars& gv) {
  for (const auto& [g, v] : gv) {
    if (v.constraint()) assign_into(v.value(), v.constraint()(v.value()));
  }
}

// Drops pairs with an undefined gradient and checks the rest: a defined floating variable and a
// floating gradient of its shape. `where` says which stage produced the gradients.
GradsAndVars checked(const std::string& name, const char* where, GradsAndVars gv) {
  GradsAndVars out;
  out.reserve(gv.size());
  for (size_t i = 0; i < gv.size(); ++i) {
    auto& [g, v] = gv[i];
    WEFT_CHECK(v.defined(), InvalidArgument)
        << name << ".apply_gradients: pair " << i << where << " has an undefined variable";
    if (!g.defined()) continue;
    WEFT_CHECK(is_floating(v.dtype()), InvalidArgument)
        << name << ".apply_gradients: variable \"" << v.name() << "\" has dtype " << v.dtype()
        << "; optimizers update floating-point variables only";
    WEFT_CHECK(is_floating(g.dtype()), InvalidArgument)
        << name << ".apply_gradients: the gradient" << where << " of variable \"" << v.name()
        << "\" has dtype " << g.dtype() << "; expected a floating-point gradient";
    WEFT_CHECK(g.shape() == v.shape(), InvalidArgument)
        << name << ".apply_gradients: the gradient" << where << " of variable \"" << v.name()
        << "\" has shape " << shape_str(g.shape()) << ", the variable has shape "
        << shape_str(v.shape());
    out.emplace_back(std::move(g), std::move(v));
  }
  return out;
}

std::string var_names(const GradsAndVars& gv) {
  std::string s;
  for (const auto& [g, v] : gv) s += (s.empty() ? "" : ", ") + (v.defined() ? v.name() : "?");
  return s;
}

double sum_of_squares(const Tensor& g) { return sum(square(g)).item<double>(); }

// 0 * x is NaN exactly when x is infinite or NaN, and no sum of zeros overflows.
bool all_finite(const Tensor& g) { return std::isfinite(sum(mul(g, 0.0)).item<double>()); }

// Keras' dynamic loss scale: halve (not below 1) on a non-finite step, double after
// dynamic_growth_steps finite steps in a row. Returns whether the step is applied.
template <typename LossScale>
bool update_loss_scale(LossScale& ls, bool finite) {
  float* scale = ls.scale.value().template data<float>();
  int64_t* good = ls.good_steps.value().template data<int64_t>();
  if (!finite) {
    *scale = std::max(*scale / 2, 1.0f);
    *good = 0;
    return false;
  }
  if (++*good >= ls.options.dynamic_growth_steps) {
    if (std::isfinite(*scale * 2)) *scale *= 2;
    *good = 0;
  }
  return true;
}

// Keras' clipping, applied in Keras' order: clipvalue, clipnorm, global_clipnorm.
GradsAndVars clip_gradients(GradsAndVars gv, const std::optional<double>& value,
                            const std::optional<double>& norm,
                            const std::optional<double>& global_norm) {
  if (value) {
    for (auto& [g, v] : gv) g = weft::clip(g, -*value, *value);
  }
  if (norm) {
    // tf.clip_by_norm: g * clipnorm / max(||g||, clipnorm); a no-op below the threshold.
    for (auto& [g, v] : gv) {
      double n = std::sqrt(sum_of_squares(g));
      if (n > *norm) g = mul(g, *norm / n);
    }
  }
  if (global_norm) {
    // tf.clip_by_global_norm: every gradient scaled by clip / max(global norm, clip); NaN
    // everywhere when the global norm is not finite. Summed in a fixed order: deterministic.
    double total = 0;
    for (const auto& [g, v] : gv) total += sum_of_squares(g);
    double n = std::sqrt(total);
    if (!std::isfinite(n) || n > *global_norm) {
      double scale = std::isfinite(n) ? *global_norm / n : std::nan("");
      for (auto& [g, v] : gv) g = mul(g, scale);
    }
  }
  return gv;
}

}  // namespace

const Optimizer::Algorithm& Optimizer::algorithm() const { return *state().algorithm; }

Optimizer::Optimizer(std::shared_ptr<const Algorithm> algorithm, OptimizerOptions options)
    : state_(std::make_shared<State>()) {
  State& s = *state_;
  s.name = std::move(options.name);
  check_learning_rate(s.name, options.learning_rate);
  check_clip(s.name, "clipnorm", options.clipnorm);
  check_clip(s.name, "clipvalue", options.clipvalue);
  check_clip(s.name, "global_clipnorm", options.global_clipnorm);
  WEFT_CHECK(!(options.clipnorm && options.global_clipnorm), InvalidArgument)
      << s.name << ": clipnorm and global_clipnorm cannot both be set (got " << *options.clipnorm
      << " and " << *options.global_clipnorm << ")";
  WEFT_ASSERT(algorithm != nullptr) << s.name << " has no algorithm";
  s.algorithm = std::move(algorithm);
  s.slot_specs = s.algorithm->slots();
  s.learning_rate = std::move(options.learning_rate);
  s.clipnorm = options.clipnorm;
  s.clipvalue = options.clipvalue;
  s.global_clipnorm = options.global_clipnorm;
  s.transformers = std::move(options.gradient_transformers);
  s.aggregator = std::move(options.gradient_aggregator);
  s.iterations = Variable(Tensor::scalar(0, kInt64), "iterations", /*trainable=*/false);
}

Optimizer::State& Optimizer::state() const {
  WEFT_CHECK(state_ != nullptr, FailedPrecondition)
      << "use of an undefined Optimizer handle; assign weft::optim::Adam(...) or another to it";
  return *state_;
}

const std::string& Optimizer::name() const { return state().name; }

void Optimizer::apply_gradients(const GradsAndVars& grads_and_vars,
                                bool experimental_aggregate_gradients) {
  TraceMe trace("Optimizer::apply_gradients", 1, TraceCategory::kCompute);
  State& s = state();
  autodiff::NoRecordScope no_record;
  GradientAggregator aggregator;
  std::vector<GradientTransformer> transformers;
  {
    std::lock_guard lock(s.mu);
    aggregator = s.aggregator;
    transformers = s.transformers;
  }
  // In a replica context (a strategy's run), the replicas' gradients are summed (the
  // gradient_aggregator's default there) and one replica applies them for all, once. Every
  // replica passes the same variables in the same order; a gradient a replica lacks (no rows)
  // counts as zeros in the sum, and one that no replica has stays undefined.
  distribute::ReplicaContext& ctx = distribute::get_replica_context();
  GradsAndVars gv = grads_and_vars;
  // A gradient_aggregator on several replicas gets zeros for a missing gradient, so that every
  // replica hands it the same list.
  if (experimental_aggregate_gradients && aggregator && ctx.num_replicas_in_sync() > 1) {
    for (auto& [g, v] : gv) {
      if (!g.defined() && v.defined()) g = zeros_like(v.value());
    }
  }
  if (experimental_aggregate_gradients && !aggregator && ctx.num_replicas_in_sync() > 1) {
    std::vector<Tensor> grads;
    for (const auto& [g, v] : gv) grads.push_back(g);
    grads = ctx.all_reduce(distribute::ReduceOp::SUM, grads);
    for (size_t i = 0; i < gv.size(); ++i) gv[i].first = std::move(grads[i]);
  }
  gv = checked(s.name, "", std::move(gv));
  WEFT_CHECK(!gv.empty(), InvalidArgument)
      << s.name << ".apply_gradients: no gradients provided for any variable ("
      << var_names(grads_and_vars) << ")";
  if (experimental_aggregate_gradients && aggregator) {
    gv = checked(s.name, " (after the gradient_aggregator)", aggregator(std::move(gv)));
  }
  if (ctx.num_replicas_in_sync() > 1 && updates_in_parts(transformers)) {
    apply_in_parts(gv);
  } else {
    ctx.merge_call([&] { apply_aggregated(std::move(gv), transformers); });
  }
}

void Optimizer::apply_aggregated(GradsAndVars gv,
                                 const std::vector<GradientTransformer>& transformers) {
  State& s = state();
  gv = clip_gradients(std::move(gv), s.clipvalue, s.clipnorm, s.global_clipnorm);
  for (const auto& transform : transformers) {
    gv = checked(s.name, " (after a gradient transformer)", transform(std::move(gv)));
  }

  if (stage_on_parameter_servers(gv)) return;

  // Checked after aggregation, so that every replica skips the same steps.
  bool finite = true;
  if (has_loss_scale()) {
    for (const auto& [g, v] : gv) finite = finite && all_finite(g);
  }

  std::lock_guard lock(s.mu);
  if (s.loss_scale && s.loss_scale->options.dynamic && !update_loss_scale(*s.loss_scale, finite)) {
    return;
  }
  s.apply(s.updates_for(gv), s.step_now(), 0, 1);
  apply_constraints(gv);
  ++*s.iterations.value().data<int64_t>();
}

bool Optimizer::stage_on_parameter_servers(const GradsAndVars& gv) {
  State& s = state();
  bool remote = false;
  for (const auto& [g, v] : gv) remote = remote || v.binding() != nullptr;
  if (!remote) return false;
  for (const auto& [g, v] : gv) {
    WEFT_CHECK(v.binding() != nullptr, FailedPrecondition)
        << s.name << ".apply_gradients: variable \"" << v.name()
        << "\" lives in this process, while others updated with it live on parameter servers "
           "(ParameterServerStrategy): make every variable in the strategy's scope";
    WEFT_CHECK(!v.constraint(), FailedPrecondition)
        << s.name << ".apply_gradients: variable \"" << v.name()
        << "\" has a constraint, which the parameter server that updates it cannot run (it is "
           "code, not a config)";
  }
  // Loss scaling runs here, on the worker, before the push (Keras's LossScaleOptimizer): with a
  // dynamic scale, a step whose gradients are not all finite pushes none, and the scale's new
  // value and its count of finite steps are written where they live, staged with the closure's
  // other updates (the last commit wins, as TensorFlow's assignments on the ps tasks do).
  if (has_loss_scale()) {
    bool finite = true;
    for (const auto& [g, v] : gv) finite = finite && all_finite(g);
    std::lock_guard lock(s.mu);
    if (s.loss_scale->options.dynamic) {
      const bool apply = update_loss_scale(*s.loss_scale, finite);
      s.loss_scale->scale.assign(s.loss_scale->scale.value());
      s.loss_scale->good_steps.assign(s.loss_scale->good_steps.value());
      if (!apply) return true;
    }
  }
  ConfigDict algorithm = s.algorithm->get_config();
  WEFT_CHECK(algorithm.has("class_name"), FailedPrecondition)
      << s.name
      << ".apply_gradients: its Algorithm defines no get_config(), so the parameter "
         "servers that hold its variables cannot run it (the built-in ones can)";
  VariableBinding::GradientUpdate update;
  update.optimizer = algorithm.to_json();
  std::lock_guard lock(s.mu);
  const Algorithm::Step step = s.step_now();
  update.learning_rate = step.learning_rate;
  update.iterations = step.iterations;
  for (const auto& [g, v] : gv) {
    update.gradient = cast(g, v.dtype());
    WEFT_CHECK(v.binding()->stage_gradient(update), FailedPrecondition)
        << s.name << ".apply_gradients: variable \"" << v.name()
        << "\" lives on a parameter server (ParameterServerStrategy), which applies its updates "
           "when a closure that a ClusterCoordinator scheduled commits; outside one, updating "
           "this process's copy would be lost at its next read. Apply gradients in a scheduled "
           "function (fit schedules its steps so)";
  }
  // One step more, where iterations lives (at the commit) and in this closure's copy, from which
  // its next step reads.
  if (const VariableBinding* counter = s.iterations.binding()) {
    counter->stage_add(Tensor::scalar(1, kInt64));
  }
  ++*s.iterations.value().data<int64_t>();
  return true;
}

bool Optimizer::updates_in_parts(const std::vector<GradientTransformer>& transformers) const {
  const State& s = state();
  return s.algorithm->elementwise() && transformers.empty() && !s.clipnorm && !s.clipvalue &&
         !s.global_clipnorm && !has_loss_scale();
}

void Optimizer::apply_in_parts(const GradsAndVars& gv) {
  State& s = state();
  distribute::get_replica_context().merge_call_in_parts(
      [&](int part, int parts) {
        std::vector<State::Update> updates;
        Algorithm::Step step;
        {
          std::lock_guard lock(s.mu);
          step = s.step_now();
          updates = s.updates_for(gv);
        }
        s.apply(updates, step, part, parts);
      },
      [&] {
        std::lock_guard lock(s.mu);
        apply_constraints(gv);
        ++*s.iterations.value().data<int64_t>();
      });
}

GradsAndVars Optimizer::compute_gradients(const Tensor& loss, const std::vector<Variable>& vars,
                                          GradientTape& tape) const {
  return compute_gradients(loss, vars, tape, GradientTape::GradientReadyFn());
}

GradsAndVars Optimizer::compute_gradients(const Tensor& loss, const std::vector<Variable>& vars,
                                          GradientTape& tape,
                                          const GradientTape::GradientReadyFn& on_ready) const {
  const State& s = state();
  WEFT_CHECK(loss.defined(), InvalidArgument) << s.name << ".minimize: the loss is undefined";
  for (size_t i = 0; i < vars.size(); ++i) {
    WEFT_CHECK(vars[i].defined(), InvalidArgument)
        << s.name << ".minimize: variable " << i << " is undefined";
  }
  // With loss scaling, d(loss * scale)/d var: the backward pass is seeded with the scale instead
  // of ones, and the gradients are divided by it again.
  std::optional<double> scale;
  if (has_loss_scale()) scale = loss_scale();
  auto unscaled = [&](Tensor g) {
    autodiff::NoRecordScope no_record;
    if (scale && g.defined()) g = mul(g, Tensor::scalar(1.0 / *scale, g.dtype()));
    return g;
  };
  std::vector<Tensor> values, reported(vars.size());
  values.reserve(vars.size());
  for (const Variable& v : vars) values.push_back(v.value());
  GradientTape::GradientReadyFn hook;
  if (on_ready) {
    hook = [&](size_t i, const Tensor& g) {
      reported[i] = unscaled(g);
      on_ready(i, reported[i]);
    };
  }
  std::vector<Tensor> grads = tape.gradient(
      loss, values, hook, scale ? full(loss.shape(), *scale, loss.dtype()) : Tensor());
  GradsAndVars gv;
  gv.reserve(vars.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    gv.emplace_back(on_ready ? std::move(reported[i]) : unscaled(std::move(grads[i])), vars[i]);
  }
  return gv;
}

void Optimizer::minimize(const Tensor& loss, const std::vector<Variable>& vars,
                         GradientTape& tape) {
  apply_gradients(compute_gradients(loss, vars, tape));
}

ConfigDict Optimizer::get_config() const {
  const State& s = state();
  ConfigDict c = s.algorithm->get_config();
  WEFT_CHECK(c.has("class_name"), InvalidArgument)
      << "optimizer \"" << s.name
      << "\" cannot be saved: its Algorithm defines no get_config() (the built-in ones do)";
  c.set("name", s.name).set("learning_rate", schedules::serialize(learning_rate()));
  c.set("clipnorm", s.clipnorm).set("clipvalue", s.clipvalue);
  c.set("global_clipnorm", s.global_clipnorm);
  if (has_loss_scale()) {
    const LossScaleOptions& o = loss_scale_options();
    c.set("loss_scale", ConfigDict()
                            .set("dynamic", o.dynamic)
                            .set("initial_scale", o.initial_scale)
                            .set("dynamic_growth_steps", o.dynamic_growth_steps));
  }
  return c;
}

bool Optimizer::has_loss_scale() const {
  const State& s = state();
  std::lock_guard lock(s.mu);
  return s.loss_scale.has_value();
}

void Optimizer::enable_loss_scale(const LossScaleOptions& options) {
  State& s = state();
  WEFT_CHECK(std::isfinite(options.initial_scale) && options.initial_scale >= 1, InvalidArgument)
      << "LossScaleOptimizer: initial_scale must be finite and >= 1, got " << options.initial_scale;
  WEFT_CHECK(options.dynamic_growth_steps >= 1, InvalidArgument)
      << "LossScaleOptimizer: dynamic_growth_steps must be >= 1, got "
      << options.dynamic_growth_steps;
  std::lock_guard lock(s.mu);
  WEFT_CHECK(!s.loss_scale, InvalidArgument)
      << "LossScaleOptimizer: optimizer \"" << s.name << "\" already has loss scaling";
  s.loss_scale = State::LossScale{
      options,
      Variable(Tensor::scalar(options.initial_scale, kFloat32), "current_loss_scale", false),
      Variable(Tensor::scalar(0, kInt64), "good_steps", false)};
}

const Optimizer::State::LossScale& Optimizer::State::checked_loss_scale() const {
  WEFT_CHECK(loss_scale.has_value(), FailedPrecondition)
      << "optimizer \"" << name << "\" has no loss scaling; wrap it in a LossScaleOptimizer";
  return *loss_scale;
}

double Optimizer::loss_scale() const {
  const State& s = state();
  std::lock_guard lock(s.mu);
  return s.checked_loss_scale().scale.value().item<double>();
}

int64_t Optimizer::loss_scale_good_steps() const {
  const State& s = state();
  std::lock_guard lock(s.mu);
  return s.checked_loss_scale().good_steps.value().item<int64_t>();
}

const LossScaleOptions& Optimizer::loss_scale_options() const {
  const State& s = state();
  std::lock_guard lock(s.mu);
  return s.checked_loss_scale().options;
}

void Optimizer::build(const std::vector<Variable>& vars) {
  State& s = state();
  std::lock_guard lock(s.mu);
  for (size_t i = 0; i < vars.size(); ++i) {
    WEFT_CHECK(vars[i].defined(), InvalidArgument)
        << s.name << ".build: variable " << i << " is undefined";
    s.entry_for(vars[i]);
  }
}

const Variable& Optimizer::iterations() const { return state().iterations; }

schedules::LearningRateSchedule Optimizer::learning_rate() const {
  const State& s = state();
  std::lock_guard lock(s.mu);
  return s.learning_rate;
}

double Optimizer::current_learning_rate() const {
  const State& s = state();
  std::lock_guard lock(s.mu);
  return s.learning_rate(s.iterations.value().item<int64_t>());
}

void Optimizer::set_learning_rate(schedules::LearningRateSchedule learning_rate) {
  State& s = state();
  check_learning_rate(s.name, learning_rate);
  std::lock_guard lock(s.mu);
  s.learning_rate = std::move(learning_rate);
}

std::vector<GradientTransformer> Optimizer::gradient_transformers() const {
  const State& s = state();
  std::lock_guard lock(s.mu);
  return s.transformers;
}

void Optimizer::set_gradient_transformers(std::vector<GradientTransformer> transformers) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.transformers = std::move(transformers);
}

GradientAggregator Optimizer::gradient_aggregator() const {
  const State& s = state();
  std::lock_guard lock(s.mu);
  return s.aggregator;
}

void Optimizer::set_gradient_aggregator(GradientAggregator aggregator) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.aggregator = std::move(aggregator);
}

std::vector<std::string> Optimizer::get_slot_names() const {
  std::vector<std::string> names;
  for (const auto& spec : state().slot_specs) names.push_back(spec.name);
  return names;
}

Variable Optimizer::get_slot(const Variable& var, const std::string& slot_name) const {
  const State& s = state();
  WEFT_CHECK(var.defined(), InvalidArgument) << s.name << ".get_slot: the variable is undefined";
  size_t k = 0;
  while (k < s.slot_specs.size() && s.slot_specs[k].name != slot_name) ++k;
  WEFT_CHECK(k < s.slot_specs.size(), InvalidArgument)
      << s.name << ".get_slot: no slot \"" << slot_name << "\" (this optimizer keeps "
      << s.slot_specs.size() << " slots per variable)";
  std::lock_guard lock(s.mu);
  auto it = s.by_value.find(var.value().id());
  WEFT_CHECK(it != s.by_value.end(), FailedPrecondition)
      << s.name << ".get_slot: variable \"" << var.name()
      << "\" has no slots yet; they are created by its first update or by build()";
  return s.entries[it->second].slots[k];
}

std::vector<Variable> Optimizer::variables() const {
  std::vector<Variable> out;
  for (auto& [name, v] : tracked_variables()) out.push_back(std::move(v));
  return out;
}

std::vector<std::pair<std::string, Variable>> Optimizer::tracked_variables() const {
  const State& s = state();
  std::lock_guard lock(s.mu);
  std::vector<std::pair<std::string, Variable>> out{{"iterations", s.iterations}};
  for (const auto& e : s.entries) {
    for (size_t k = 0; k < e.slots.size(); ++k) {
      out.emplace_back(e.prefix + "/" + s.slot_specs[k].name, e.slots[k]);
    }
  }
  if (s.loss_scale) {
    out.emplace_back("loss_scale/current_loss_scale", s.loss_scale->scale);
    out.emplace_back("loss_scale/good_steps", s.loss_scale->good_steps);
  }
  return out;
}

namespace {
constexpr const char* kLearningRateKey = "learning_rate=";
}  // namespace

std::string Optimizer::tracked_state() const {
  const State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.learning_rate.is_constant()) return {};
  // Hexadecimal floating point: exact, and independent of the locale.
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", s.learning_rate(0));
  return std::string(kLearningRateKey) + buf;
}

void Optimizer::restore_state(const std::string& state) {
  State& s = this->state();
  if (state.empty()) return;
  const std::string key = kLearningRateKey;
  char* end = nullptr;
  double lr = state.rfind(key, 0) == 0 ? std::strtod(state.c_str() + key.size(), &end) : -1;
  WEFT_CHECK(end != nullptr && *end == '\0' && std::isfinite(lr) && lr >= 0, DataLoss)
      << s.name << ": malformed optimizer state \"" << state << "\"; expected \"" << key
      << "<rate>\"";
  std::lock_guard lock(s.mu);
  if (s.learning_rate.is_constant()) s.learning_rate = lr;
}

}  // namespace weft::optim
