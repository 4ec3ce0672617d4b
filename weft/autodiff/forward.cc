#include "weft/autodiff/forward.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "weft/autodiff/internal/recording.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"

namespace weft {

struct ForwardAccumulator::State {
  std::unordered_map<uint64_t, Tensor> tangents;  // by tensor id
};

namespace {

// This thread's accumulators, first created first. While accumulator k computes tangents, only
// those before it (the outer ones) see ops: t_visible = k.
thread_local std::vector<ForwardAccumulator::State*> t_accumulators;
thread_local size_t t_visible = std::numeric_limits<size_t>::max();

size_t visible() { return std::min(t_visible, t_accumulators.size()); }

// Ops whose gradient is one kernel recording nothing (or, for SyncBatchNormalization, collectives
// that only a replica's backward pass may run): their tangents cannot be derived from it.
bool kernel_gradient(std::string_view op) {
  return op == "cumprod" || op == "batch_norm_training" || op == "SyncBatchNormalization";
}

void register_state(ForwardAccumulator::State* s, const std::vector<Tensor>& primals,
                    const std::vector<Tensor>& tangents) {
  WEFT_CHECK(primals.size() == tangents.size(), InvalidArgument)
      << "ForwardAccumulator: " << primals.size() << " primals but " << tangents.size()
      << " tangents; give one tangent per primal";
  for (size_t i = 0; i < primals.size(); ++i) {
    const Tensor& p = primals[i];
    const Tensor& t = tangents[i];
    WEFT_CHECK(p.defined() && t.defined(), InvalidArgument)
        << "ForwardAccumulator: primal or tangent " << i << " is undefined";
    WEFT_CHECK(is_floating(p.dtype()), InvalidArgument)
        << "ForwardAccumulator: primal " << i << " has dtype " << p.dtype()
        << "; only floating-point primals have tangents";
    WEFT_CHECK(t.shape() == p.shape() && t.dtype() == p.dtype(), InvalidArgument)
        << "ForwardAccumulator: tangent " << i << " is " << t.dtype() << " " << shape_str(t.shape())
        << " but its primal is " << p.dtype() << " " << shape_str(p.shape());
    WEFT_CHECK(s->tangents.emplace(p.id(), t).second, InvalidArgument)
        << "ForwardAccumulator: primal " << i << " is given twice";
  }
  t_accumulators.push_back(s);
  autodiff::internal::add_recorder();
}

// The tangents of `outputs` from those of `inputs` (v): the backward function's transpose,
// J·v = d/du (Jᵀu)·v, from a tape watching a zero output gradient u.
void accumulate(ForwardAccumulator::State& s, const char* op, const std::vector<Tensor>& inputs,
                const std::vector<Tensor>& outputs, const autodiff::BackwardFn& backward) {
  std::vector<bool> needed(inputs.size(), false);
  std::vector<Tensor> v(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !is_floating(inputs[i].dtype())) continue;
    auto it = s.tangents.find(inputs[i].id());
    if (it == s.tangents.end()) continue;
    v[i] = it->second;
    needed[i] = true;
  }
  if (std::none_of(needed.begin(), needed.end(), [](bool b) { return b; })) return;
  WEFT_CHECK(!kernel_gradient(op), FailedPrecondition)
      << "ForwardAccumulator: no forward mode through " << op
      << ": its gradient is one kernel that cannot be differentiated again (see "
         "docs/autodiff.md); compute it in float64 steps or with a GradientTape";
  std::vector<Tensor> u, sources;
  std::vector<size_t> source_output;
  for (size_t k = 0; k < outputs.size(); ++k) {
    u.push_back(zeros(outputs[k].shape(), outputs[k].dtype()));
    if (is_floating(outputs[k].dtype())) {
      sources.push_back(u.back());
      source_output.push_back(k);
    }
  }
  if (sources.empty()) return;
  GradientTape transpose(/*persistent=*/false, /*watch_accessed_variables=*/false);
  transpose.watch(sources);
  std::vector<Tensor> g = backward(autodiff::Grads{u, needed});
  std::vector<Tensor> targets, seeds;
  for (size_t i = 0; i < inputs.size() && i < g.size(); ++i) {
    if (!needed[i] || !g[i].defined() || !is_floating(g[i].dtype())) continue;
    targets.push_back(g[i]);
    seeds.push_back(v[i].dtype() == g[i].dtype() ? v[i] : cast(v[i], g[i].dtype()));
  }
  if (targets.empty()) return;
  std::vector<Tensor> t = transpose.gradient(targets, sources, seeds);
  for (size_t j = 0; j < t.size(); ++j) {
    if (t[j].defined()) s.tangents[outputs[source_output[j]].id()] = t[j];
  }
}

}  // namespace

ForwardAccumulator::ForwardAccumulator(const std::vector<Tensor>& primals,
                                       const std::vector<Tensor>& tangents)
    : state_(std::make_unique<State>()) {
  register_state(state_.get(), primals, tangents);
}

ForwardAccumulator::ForwardAccumulator(const std::vector<Variable>& primals,
                                       const std::vector<Tensor>& tangents)
    : state_(std::make_unique<State>()) {
  std::vector<Tensor> values;
  for (const Variable& p : primals) values.push_back(p.value());
  register_state(state_.get(), values, tangents);
}

ForwardAccumulator::~ForwardAccumulator() {
  if (std::erase(t_accumulators, state_.get()) > 0) autodiff::internal::remove_recorder();
}

Tensor ForwardAccumulator::jvp(const Tensor& target, UnconnectedGradients unconnected) const {
  WEFT_CHECK(target.defined(), InvalidArgument) << "ForwardAccumulator::jvp: target is undefined";
  auto it = state_->tangents.find(target.id());
  if (it != state_->tangents.end()) return it->second;
  if (unconnected == UnconnectedGradients::kZero && is_floating(target.dtype())) {
    return zeros_like(target);
  }
  return Tensor();
}

std::vector<Tensor> ForwardAccumulator::jvp(const std::vector<Tensor>& targets,
                                            UnconnectedGradients unconnected) const {
  std::vector<Tensor> out;
  for (const Tensor& t : targets) out.push_back(jvp(t, unconnected));
  return out;
}

namespace autodiff::internal {

bool forward_recording() { return visible() > 0; }

void forward_record(const char* op, const std::vector<Tensor>& inputs,
                    const std::vector<Tensor>& outputs, const BackwardFn& backward) {
  const size_t n = visible();
  for (size_t k = 0; k < n; ++k) {
    // Accumulator k's own work is hidden from it and from the ones created after it.
    struct Busy {
      size_t saved = t_visible;
      explicit Busy(size_t k) { t_visible = k; }
      ~Busy() { t_visible = saved; }
    } busy(k);
    accumulate(*t_accumulators[k], op, inputs, outputs, backward);
  }
}

}  // namespace autodiff::internal
}  // namespace weft
