#include "weft/autodiff/tape.h"

#include <algorithm>
#include <atomic>
#include <unordered_map>
#include <unordered_set>

#include "weft/autodiff/internal/recording.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/shape_ops.h"

namespace weft {

std::vector<Tensor> custom_gradient(const std::vector<Tensor>& inputs, const CustomGradientFn& f) {
  WEFT_CHECK(f != nullptr, InvalidArgument) << "custom_gradient: the function is empty";
  std::pair<std::vector<Tensor>, autodiff::BackwardFn> made;
  {
    autodiff::NoRecordScope hidden;  // as TF runs f under stop_recording
    made = f(inputs);
  }
  WEFT_CHECK(made.second != nullptr, InvalidArgument)
      << "custom_gradient: the function returned no gradient function";
  // Fresh tensors: the outputs' history is the gradient function alone.
  std::vector<Tensor> outputs;
  for (const Tensor& y : made.first) outputs.push_back(y.defined() ? stop_gradient(y) : y);
  if (autodiff::is_recording()) {
    autodiff::record("custom_gradient", inputs, outputs,
                     [grad = std::move(made.second), n = inputs.size()](const autodiff::Grads& g) {
                       std::vector<Tensor> d = grad(g);
                       WEFT_CHECK(d.size() == n, InvalidArgument)
                           << "custom_gradient: the gradient function returned " << d.size()
                           << " gradients for " << n << " inputs";
                       return d;
                     });
  }
  return outputs;
}

struct GradientTape::State {
  struct Entry {
    const char* op;
    std::vector<uint64_t> inputs;
    std::vector<Shape> input_shapes;
    std::vector<uint64_t> outputs;
    std::vector<Shape> output_shapes;
    std::vector<DType> output_dtypes;
    std::shared_ptr<autodiff::BackwardFn> backward;
  };
  bool persistent;
  bool watch_accessed_variables;
  bool used = false;
  int paused = 0;
  std::unordered_set<uint64_t> tracked;  // watched tensors and everything computed from them
  std::vector<Entry> entries;            // in execution order, which is a topological order
  std::vector<Tensor> variables;         // values of the watched variables, first seen first
};

namespace {

thread_local std::vector<GradientTape::State*> t_tapes;
thread_local int t_no_record = 0;
// How many tapes are in some thread's t_tapes, plus the forward accumulators: while none are,
// is_recording() answers without reaching thread-local storage, which from a shared library is a
// call per variable (5 of the 7 ns that every op spent asking).
std::atomic<int> g_tapes{0};

void add_tape(GradientTape::State* s) {
  t_tapes.push_back(s);
  autodiff::internal::add_recorder();
}
void remove_tape(GradientTape::State* s) {
  if (std::erase(t_tapes, s) > 0) autodiff::internal::remove_recorder();
}

bool differentiable(DType t) { return is_floating(t); }

}  // namespace

GradientTape::GradientTape(bool persistent, bool watch_accessed_variables)
    : state_(std::make_unique<State>()) {
  state_->persistent = persistent;
  state_->watch_accessed_variables = watch_accessed_variables;
  add_tape(state_.get());
}

GradientTape::~GradientTape() { remove_tape(state_.get()); }

void GradientTape::watch(const Tensor& t) {
  WEFT_CHECK(t.defined(), InvalidArgument) << "GradientTape::watch: the tensor is undefined";
  if (!differentiable(t.dtype())) return;
  if (t.parts()) {  // a DTensor: ops record its components
    for (const Tensor& c : t.parts()->components()) watch(c);
    return;
  }
  bool fresh = state_->tracked.insert(t.id()).second;
  if (fresh && Variable::of(t).defined()) state_->variables.push_back(t);
}

void GradientTape::watch(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) watch(t);
}

GradientTape::Pause::Pause(GradientTape* tape) : tape_(tape) { ++tape_->state_->paused; }
GradientTape::Pause::~Pause() { --tape_->state_->paused; }

void GradientTape::reset() {
  // A used tape (non-persistent, after gradient()) left its thread's list; it records again.
  if (state_->used) add_tape(state_.get());
  state_->entries.clear();
  state_->tracked.clear();
  state_->variables.clear();
  state_->used = false;
}

Tensor GradientTape::gradient(const Tensor& target, const Tensor& source,
                              const Tensor& output_gradient, UnconnectedGradients unconnected) {
  return gradient(target, std::vector<Tensor>{source}, output_gradient, unconnected)[0];
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target,
                                           const std::vector<Variable>& sources,
                                           const Tensor& output_gradient,
                                           UnconnectedGradients unconnected) {
  std::vector<Tensor> values;
  values.reserve(sources.size());
  for (const Variable& v : sources) values.push_back(v.value());
  return gradient(target, values, output_gradient, unconnected);
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Tensor>& sources,
                                           const Tensor& output_gradient,
                                           UnconnectedGradients unconnected) {
  return gradient(target, sources, GradientReadyFn(), output_gradient, unconnected);
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Tensor>& sources,
                                           const GradientReadyFn& on_ready,
                                           const Tensor& output_gradient,
                                           UnconnectedGradients unconnected) {
  check_usable("gradient");
  WEFT_CHECK(target.defined(), InvalidArgument) << "GradientTape::gradient: target is undefined";
  if (output_gradient.defined()) {
    WEFT_CHECK(output_gradient.shape() == target.shape(), InvalidArgument)
        << "GradientTape::gradient: output_gradient has shape "
        << shape_str(output_gradient.shape()) << " but the target has shape "
        << shape_str(target.shape());
  }
  std::vector<Tensor> result =
      backprop({target}, {output_gradient}, sources, on_ready, unconnected);
  consume();
  return result;
}

std::vector<Tensor> GradientTape::gradient(const std::vector<Tensor>& targets,
                                           const std::vector<Tensor>& sources,
                                           UnconnectedGradients unconnected) {
  return gradient(targets, sources, std::vector<Tensor>(targets.size()), unconnected);
}

std::vector<Tensor> GradientTape::gradient(const std::vector<Tensor>& targets,
                                           const std::vector<Tensor>& sources,
                                           const std::vector<Tensor>& output_gradients,
                                           UnconnectedGradients unconnected) {
  check_usable("gradient");
  WEFT_CHECK(!targets.empty(), InvalidArgument) << "GradientTape::gradient: no targets";
  WEFT_CHECK(output_gradients.size() == targets.size(), InvalidArgument)
      << "GradientTape::gradient: " << output_gradients.size() << " output gradients for "
      << targets.size() << " targets";
  for (size_t t = 0; t < targets.size(); ++t) {
    WEFT_CHECK(!output_gradients[t].defined() || !targets[t].defined() ||
                   output_gradients[t].shape() == targets[t].shape(),
               InvalidArgument)
        << "GradientTape::gradient: output gradient " << t << " has shape "
        << shape_str(output_gradients[t].shape()) << " but its target has shape "
        << shape_str(targets[t].shape());
  }
  std::vector<Tensor> result =
      backprop(targets, output_gradients, sources, GradientReadyFn(), unconnected);
  consume();
  return result;
}

Tensor GradientTape::jacobian(const Tensor& target, const Tensor& source,
                              UnconnectedGradients unconnected) {
  check_usable("jacobian");
  WEFT_CHECK(target.defined() && source.defined(), InvalidArgument)
      << "GradientTape::jacobian: the target or the source is undefined";
  Shape shape = target.shape();
  shape.insert(shape.end(), source.shape().begin(), source.shape().end());
  std::vector<Tensor> rows;
  for (int64_t i = 0; i < target.numel(); ++i) {
    Tensor seed = reshape(one_hot(Tensor::scalar(i, kInt64), target.numel(), 1, 0, target.dtype()),
                          target.shape());
    Tensor row = backprop({target}, {seed}, {source}, GradientReadyFn(), unconnected)[0];
    if (!row.defined()) {
      consume();
      return Tensor();  // unconnected, kNone
    }
    rows.push_back(row);
  }
  consume();
  if (rows.empty()) return zeros(shape, source.dtype());
  return reshape(stack(rows, 0), shape);
}

Tensor GradientTape::batch_jacobian(const Tensor& target, const Tensor& source,
                                    UnconnectedGradients unconnected) {
  check_usable("batch_jacobian");
  WEFT_CHECK(target.defined() && source.defined(), InvalidArgument)
      << "GradientTape::batch_jacobian: the target or the source is undefined";
  WEFT_CHECK(target.rank() >= 1 && source.rank() >= 1 && target.dim(0) == source.dim(0),
             InvalidArgument)
      << "GradientTape::batch_jacobian: target " << shape_str(target.shape()) << " and source "
      << shape_str(source.shape()) << " need the same first (batch) dimension";
  int64_t batch = target.dim(0);
  int64_t per_example = batch == 0 ? 0 : target.numel() / batch;
  Shape example_shape(target.shape().begin() + 1, target.shape().end());
  // Output (B, t..., s...): the j-th seed is one at element j of every example's target.
  Shape shape = target.shape();
  shape.insert(shape.end(), source.shape().begin() + 1, source.shape().end());
  std::vector<Tensor> columns;
  for (int64_t j = 0; j < per_example; ++j) {
    Tensor one = one_hot(Tensor::scalar(j, kInt64), per_example, 1, 0, target.dtype());
    Tensor seed = broadcast_to(reshape(one, Shape{1, per_example}), {batch, per_example});
    Tensor g = backprop({target}, {reshape(contiguous(seed), target.shape())}, {source},
                        GradientReadyFn(), unconnected)[0];
    if (!g.defined()) {
      consume();
      return Tensor();
    }
    columns.push_back(g);  // (B, s...)
  }
  consume();
  if (columns.empty()) return zeros(shape, source.dtype());
  // (B, t, s...) then t unflattened.
  return reshape(stack(columns, 1), shape);
}

std::vector<Variable> GradientTape::watched_variables() const {
  std::vector<Variable> out;
  for (const Tensor& t : state_->variables) {
    Variable v = Variable::of(t);
    // A variable destroyed since is left out; a DVariable's components name it once.
    if (v.defined() && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

void GradientTape::check_usable(const char* what) const {
  WEFT_CHECK(!state_->used, FailedPrecondition)
      << "GradientTape::" << what
      << ": a non-persistent tape can compute gradients only once; create it with "
         "persistent=true to call gradient() again";
}

void GradientTape::consume() {
  State& s = *state_;
  if (!s.persistent) {
    s.used = true;
    s.entries.clear();
    remove_tape(state_.get());
  }
}

std::vector<Tensor> GradientTape::backprop(const std::vector<Tensor>& targets,
                                           const std::vector<Tensor>& seeds,
                                           const std::vector<Tensor>& sources,
                                           const GradientReadyFn& on_ready,
                                           UnconnectedGradients unconnected) {
  auto distributed = [](const Tensor& t) { return t.defined() && t.parts() != nullptr; };
  if (std::none_of(targets.begin(), targets.end(), distributed) &&
      std::none_of(sources.begin(), sources.end(), distributed)) {
    return backprop_local(targets, seeds, sources, on_ready, unconnected);
  }
  // DTensors: the tape recorded their components' ops, so the backward pass runs from the
  // targets' components, seeded block by block, to the sources' components.
  std::vector<Tensor> flat_targets, flat_seeds, flat_sources;
  for (size_t t = 0; t < targets.size(); ++t) {
    if (!distributed(targets[t])) {
      flat_targets.push_back(targets[t]);
      flat_seeds.push_back(seeds[t]);
      continue;
    }
    for (auto& [component, seed] : targets[t].parts()->seeds(seeds[t])) {
      flat_targets.push_back(component);
      flat_seeds.push_back(seed);
    }
  }
  for (const Tensor& src : sources) {
    if (!distributed(src)) {
      flat_sources.push_back(src);
      continue;
    }
    const std::vector<Tensor>& components = src.parts()->components();
    flat_sources.insert(flat_sources.end(), components.begin(), components.end());
  }
  std::vector<Tensor> flat = backprop_local(flat_targets, flat_seeds, flat_sources,
                                            GradientReadyFn(), UnconnectedGradients::kNone);
  std::vector<Tensor> result;
  size_t at = 0;
  for (size_t j = 0; j < sources.size(); ++j) {
    const Tensor& src = sources[j];
    Tensor g;
    if (distributed(src)) {
      size_t n = src.parts()->components().size();
      g = src.parts()->gradient(std::vector<Tensor>(flat.begin() + static_cast<ptrdiff_t>(at),
                                                    flat.begin() + static_cast<ptrdiff_t>(at + n)));
      at += n;
    } else {
      g = flat[at++];
    }
    if (!g.defined() && unconnected == UnconnectedGradients::kZero) g = zeros_like(src);
    if (on_ready) on_ready(j, g);
    result.push_back(std::move(g));
  }
  return result;
}

std::vector<Tensor> GradientTape::backprop_local(const std::vector<Tensor>& targets,
                                                 const std::vector<Tensor>& seeds,
                                                 const std::vector<Tensor>& sources,
                                                 const GradientReadyFn& on_ready,
                                                 UnconnectedGradients unconnected) {
  State& s = *state_;
  for (const Tensor& target : targets) {
    WEFT_CHECK(target.defined(), InvalidArgument)
        << "GradientTape::gradient: a target is undefined";
    WEFT_CHECK(differentiable(target.dtype()), InvalidArgument)
        << "GradientTape::gradient: target has dtype " << target.dtype()
        << "; only floating-point targets can be differentiated";
  }
  Pause pause(this);

  // Entries that can carry a gradient to a source: those with an input computed from a source.
  std::unordered_set<uint64_t> reaches_source;
  for (const Tensor& src : sources) {
    WEFT_CHECK(src.defined(), InvalidArgument) << "GradientTape::gradient: a source is undefined";
    // Only watched tensors and what was computed from them carry gradients (as in TF): an
    // unwatched source gets none even when it feeds an op recorded for another input.
    if (s.tracked.count(src.id())) reaches_source.insert(src.id());
  }
  std::vector<bool> useful(s.entries.size(), false);
  for (size_t i = 0; i < s.entries.size(); ++i) {
    const auto& e = s.entries[i];
    useful[i] = std::any_of(e.inputs.begin(), e.inputs.end(),
                            [&](uint64_t id) { return reaches_source.count(id) > 0; });
    if (useful[i]) reaches_source.insert(e.outputs.begin(), e.outputs.end());
  }

  std::unordered_map<uint64_t, Tensor> grads;
  for (size_t t = 0; t < targets.size(); ++t) {
    Tensor seed = seeds[t].defined() ? seeds[t] : ones_like(targets[t]);
    auto [it, fresh] = grads.try_emplace(targets[t].id(), seed);
    if (!fresh) it->second = add(it->second, seed);
  }
  // A source's gradient as returned: cast to its dtype, or the unconnected value.
  auto final_gradient = [&](size_t j) {
    const Tensor& src = sources[j];
    auto it = grads.find(src.id());
    if (it == grads.end()) {
      return unconnected == UnconnectedGradients::kZero ? zeros_like(src) : Tensor();
    }
    return it->second.dtype() == src.dtype() ? it->second : cast(it->second, src.dtype());
  };
  // With on_ready: the sources whose last contribution comes from entry i (the first entry, in
  // execution order, that reads them), reported once that entry's backward function has run.
  std::unordered_map<size_t, std::vector<size_t>> ready_after;
  std::vector<bool> reported(sources.size(), false);
  if (on_ready) {
    std::unordered_map<uint64_t, size_t> first_use;
    for (size_t i = s.entries.size(); i-- > 0;) {
      if (!useful[i]) continue;
      for (uint64_t id : s.entries[i].inputs) first_use[id] = i;
    }
    for (size_t j = 0; j < sources.size(); ++j) {
      auto it = first_use.find(sources[j].id());
      if (it != first_use.end()) ready_after[it->second].push_back(j);
    }
  }
  auto report = [&](size_t i) {
    auto it = ready_after.find(i);
    if (it == ready_after.end()) return;
    for (size_t j : it->second) {
      if (reported[j]) continue;
      reported[j] = true;
      on_ready(j, final_gradient(j));
    }
  };
  for (size_t i = s.entries.size(); i-- > 0;) {
    if (!useful[i]) continue;
    const auto& e = s.entries[i];
    std::vector<Tensor> out_grads(e.outputs.size());
    bool any = false;
    for (size_t k = 0; k < e.outputs.size(); ++k) {
      auto it = grads.find(e.outputs[k]);
      if (it != grads.end()) {
        out_grads[k] = it->second;
        any = true;
      }
    }
    if (!any) {
      if (on_ready) report(i);
      continue;
    }
    for (size_t k = 0; k < e.outputs.size(); ++k) {
      if (!out_grads[k].defined()) out_grads[k] = zeros(e.output_shapes[k], e.output_dtypes[k]);
    }
    std::vector<bool> needed(e.inputs.size());
    for (size_t k = 0; k < e.inputs.size(); ++k) needed[k] = reaches_source.count(e.inputs[k]) > 0;
    std::vector<Tensor> in_grads = (*e.backward)(autodiff::Grads{out_grads, needed});
    WEFT_ASSERT(in_grads.size() == e.inputs.size())
        << e.op << " returned " << in_grads.size() << " gradients for " << e.inputs.size()
        << " inputs";
    for (size_t k = 0; k < e.inputs.size(); ++k) {
      if (!in_grads[k].defined() || !needed[k]) continue;
      WEFT_ASSERT(in_grads[k].shape() == e.input_shapes[k])
          << e.op << " gradient for input " << k << " has shape " << shape_str(in_grads[k].shape())
          << ", expected " << shape_str(e.input_shapes[k]);
      auto [it, inserted] = grads.try_emplace(e.inputs[k], in_grads[k]);
      if (!inserted) it->second = add(it->second, in_grads[k]);
    }
    if (on_ready) report(i);
  }

  std::vector<Tensor> result;
  result.reserve(sources.size());
  for (size_t j = 0; j < sources.size(); ++j) {
    result.push_back(final_gradient(j));
    if (on_ready && !reported[j]) on_ready(j, result.back());
  }
  return result;
}

Tensor stop_gradient(const Tensor& t) {
  if (t.parts()) {
    std::vector<Tensor> components;  // devices that shared a component still do
    std::unordered_map<uint64_t, Tensor> done;
    for (const Tensor& c : t.parts()->components()) {
      auto [it, fresh] = done.try_emplace(c.id());
      if (fresh) it->second = stop_gradient(c);
      components.push_back(it->second);
    }
    return t.parts()->with_components(std::move(components));
  }
  return Tensor::view(t, t.shape(), t.strides(), t.offset());
}

namespace autodiff {

namespace internal {
void add_recorder() { g_tapes.fetch_add(1, std::memory_order_relaxed); }
void remove_recorder() { g_tapes.fetch_sub(1, std::memory_order_relaxed); }
}  // namespace internal

bool is_recording() {
  // A thread always sees its own additions, so a tape of this thread makes this non-zero here.
  if (g_tapes.load(std::memory_order_relaxed) == 0) return false;
  if (t_no_record > 0) return false;
  for (const GradientTape::State* s : t_tapes) {
    if (s->paused == 0) return true;
  }
  return internal::forward_recording();
}

void record(const char* op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            BackwardFn backward) {
  if (t_no_record > 0) return;
  std::shared_ptr<BackwardFn> shared;
  for (GradientTape::State* s : t_tapes) {
    if (s->paused > 0) continue;
    bool watched = false;
    for (const Tensor& in : inputs) {
      if (!in.defined() || !differentiable(in.dtype())) continue;
      if (s->tracked.count(in.id())) {
        watched = true;
      } else if (s->watch_accessed_variables && in.is_trainable_variable()) {
        s->tracked.insert(in.id());
        s->variables.push_back(in);
        watched = true;
      }
    }
    if (!watched) continue;
    if (!shared) shared = std::make_shared<BackwardFn>(std::move(backward));
    GradientTape::State::Entry e{op, {}, {}, {}, {}, {}, shared};
    for (const Tensor& in : inputs) {
      e.inputs.push_back(in.defined() ? in.id() : 0);
      e.input_shapes.push_back(in.defined() ? in.shape() : Shape{});
    }
    for (const Tensor& out : outputs) {
      e.outputs.push_back(out.id());
      e.output_shapes.push_back(out.shape());
      e.output_dtypes.push_back(out.dtype());
      if (differentiable(out.dtype())) s->tracked.insert(out.id());
    }
    s->entries.push_back(std::move(e));
  }
  if (internal::forward_recording()) {
    internal::forward_record(op, inputs, outputs, shared ? *shared : backward);
  }
}

NoRecordScope::NoRecordScope() { ++t_no_record; }
NoRecordScope::~NoRecordScope() { --t_no_record; }

}  // namespace autodiff
}  // namespace weft
