#include "weft/nn/model.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "weft/autodiff/tape.h"
#include "weft/core/config.h"
#include "weft/distribute/gradient_packs.h"
#include "weft/distribute/updates.h"
#include "weft/nn/internal/step_logs.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/optim/loss_scale_optimizer.h"

namespace weft::nn {

std::vector<std::shared_ptr<LayerImpl>> ModelImpl::sublayers() const {
  std::vector<std::shared_ptr<LayerImpl>> out;
  for (const Layer& l : layers()) out.push_back(l.impl_ptr());
  return out;
}

void ModelImpl::adopt_layers() {
  std::set<std::string> used;
  std::shared_ptr<LayerImpl> self = shared_from_this();
  for (const Layer& l : layers()) l.impl().adopt(self, used);
}

namespace {

std::string shape_text(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += s[i] < 0 ? "None" : std::to_string(s[i]);
  }
  return out + (s.size() == 1 ? ",)" : ")");
}

// ---- Sequential ---------------------------------------------------------------------------------

class SequentialImpl : public ModelImpl {
 public:
  explicit SequentialImpl(std::string name) : ModelImpl("Sequential", std::move(name)) {}
  std::vector<Layer> layers() const override { return layers_; }
  size_t num_inputs() const override { return 1; }
  size_t num_outputs() const override { return 1; }
  // Inputs may vary where the first layer's may (a sequence model's steps).
  bool any_size(size_t axis) const override {
    return !layers_.empty() && layers_[0].impl().any_size(axis);
  }
  void add(const Layer& layer) {
    WEFT_CHECK(!built(), FailedPrecondition)
        << "Sequential \"" << name() << "\": cannot add layer \"" << layer.name()
        << "\" after the model was built";
    WEFT_CHECK(layer.defined(), InvalidArgument) << "Sequential::add: an empty layer";
    layers_.push_back(layer);
  }
  void build(const Shape& input_shape) override {
    WEFT_CHECK(!layers_.empty(), FailedPrecondition)
        << "Sequential \"" << name() << "\" has no layers";
  }
  std::vector<std::string> layer_output_shapes() const override {
    std::lock_guard lock(shapes_mu_);
    return shapes_;
  }
  Tensor call(const Tensor& x, bool training) override {
    Tensor y = x;
    bool record;
    {
      std::lock_guard lock(shapes_mu_);
      record = shapes_.empty();
    }
    std::vector<std::string> shapes;
    for (const Layer& layer : layers_) {
      y = layer(y, training);
      if (!record) continue;
      Shape s = y.shape();
      s[0] = -1;
      shapes.push_back(shape_text(s));
    }
    if (record) {
      std::lock_guard lock(shapes_mu_);
      if (shapes_.empty()) shapes_ = std::move(shapes);
    }
    return y;
  }

 private:
  std::vector<Layer> layers_;
  mutable std::mutex shapes_mu_;  // replicas' first calls may record them at once
  std::vector<std::string> shapes_;
};

// ---- Functional
// -----------------------------------------------------------------------------------

class FunctionalImpl : public ModelImpl {
 public:
  FunctionalImpl(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs,
                 std::string name)
      : ModelImpl("Functional", std::move(name)), inputs_(inputs), outputs_(outputs) {
    WEFT_CHECK(!inputs.empty() && !outputs.empty(), InvalidArgument)
        << "Model: expected at least one input and one output";
    for (const KerasTensor& in : inputs) {
      WEFT_CHECK(!in.node()->layer.defined(), InvalidArgument)
          << "Model: every input must come from weft::nn::Input(), but one is the output of layer "
             "\""
          << in.node()->layer.name() << "\"";
    }
    // Depth-first from the outputs gives the nodes in an order where inputs come first.
    std::set<const KerasTensor::Node*> seen;
    std::function<void(const std::shared_ptr<KerasTensor::Node>&)> visit =
        [&](const std::shared_ptr<KerasTensor::Node>& n) {
          if (!seen.insert(n.get()).second) return;
          for (const KerasTensor& in : n->inputs) visit(in.node());
          if (!n->layer.defined()) {
            bool known = std::any_of(inputs_.begin(), inputs_.end(),
                                     [&](const KerasTensor& t) { return t.node() == n; });
            WEFT_CHECK(known, InvalidArgument)
                << "Model: the outputs depend on an Input " << shape_text(n->shapes[0])
                << " that is not among the model's inputs";
          } else {
            order_.push_back(n);
          }
        };
    for (const KerasTensor& out : outputs) visit(out.node());
    for (const auto& n : order_) {
      if (std::none_of(layers_.begin(), layers_.end(),
                       [&](const Layer& l) { return l.impl_ptr() == n->layer.impl_ptr(); })) {
        layers_.push_back(n->layer);
        shapes_.push_back(shape_text(n->shapes[0]));
      }
    }
  }
  std::vector<Layer> layers() const override { return layers_; }
  std::vector<KerasTensor> inputs() const override { return inputs_; }
  std::vector<KerasTensor> outputs() const override { return outputs_; }
  size_t num_inputs() const override { return inputs_.size(); }
  size_t num_outputs() const override { return outputs_.size(); }
  std::vector<std::string> layer_output_shapes() const override { return shapes_; }
  void build_multi(const std::vector<Shape>& shapes) override {
    WEFT_CHECK(shapes.size() == inputs_.size(), InvalidArgument)
        << "Model \"" << name() << "\" takes " << inputs_.size() << " inputs, got "
        << shapes.size();
    for (size_t i = 0; i < shapes.size(); ++i) {
      Shape expected = inputs_[i].shape();
      Shape got = shapes[i];
      got[0] = -1;
      WEFT_CHECK(got == expected, InvalidArgument)
          << "Model \"" << name() << "\": input " << i << " has shape " << shape_str(shapes[i])
          << ", expected " << shape_text(expected);
    }
  }
  std::vector<Tensor> call_multi(const std::vector<Tensor>& xs, bool training) override {
    std::map<const KerasTensor::Node*, std::vector<Tensor>> values;
    for (size_t i = 0; i < inputs_.size(); ++i) values[inputs_[i].node().get()] = {xs[i]};
    for (const auto& n : order_) {
      std::vector<Tensor> args;
      for (const KerasTensor& in : n->inputs)
        args.push_back(values.at(in.node().get())[in.index()]);
      values[n.get()] = n->layer(args, training);
    }
    std::vector<Tensor> out;
    for (const KerasTensor& o : outputs_) out.push_back(values.at(o.node().get())[o.index()]);
    return out;
  }

 private:
  std::vector<KerasTensor> inputs_, outputs_;
  std::vector<std::shared_ptr<KerasTensor::Node>> order_;
  std::vector<Layer> layers_;
  std::vector<std::string> shapes_;
};

}  // namespace

// ---- Model -------------------------------------------------------------------------------------

Model::Model(std::shared_ptr<ModelImpl> impl) : Layer(std::move(impl)) {}

Model::Model(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs,
             const std::string& name)
    : Layer(std::make_shared<FunctionalImpl>(inputs, outputs, name)) {
  model().adopt_layers();
}

Model::Model(const KerasTensor& input, const KerasTensor& output, const std::string& name)
    : Model(std::vector<KerasTensor>{input}, std::vector<KerasTensor>{output}, name) {}

ModelImpl& Model::model() const { return static_cast<ModelImpl&>(impl()); }

void Model::compile(const optim::Optimizer& optimizer, const losses::Loss& loss,
                    const std::vector<std::string>& metric_names,
                    const std::vector<std::string>& weighted_names, const CompileOptions& options) {
  std::vector<metrics::Metric> ms, weighted;
  for (const std::string& name : metric_names) ms.push_back(metrics::get(name, loss.name()));
  for (const std::string& name : weighted_names) {
    weighted.push_back(metrics::get(name, loss.name()));
  }
  compile(optimizer, loss, ms, weighted, options);
}

void Model::compile(const optim::Optimizer& optimizer, const losses::Loss& loss,
                    std::initializer_list<const char*> metric_names,
                    const CompileOptions& options) {
  compile(optimizer, loss, std::vector<std::string>(metric_names.begin(), metric_names.end()), {},
          options);
}

void Model::compile(const optim::Optimizer& optimizer, const losses::Loss& loss,
                    const std::vector<metrics::Metric>& ms,
                    const std::vector<metrics::Metric>& weighted, const CompileOptions& options) {
  WEFT_CHECK(optimizer.defined(), InvalidArgument) << "Model::compile: the optimizer is undefined";
  WEFT_CHECK(options.steps_per_execution >= 1, InvalidArgument)
      << "Model::compile: steps_per_execution must be at least 1, got "
      << options.steps_per_execution;
  // Logs, and the partial logs replicas merge, are keyed by name.
  std::set<std::string> names{"loss"};
  auto add_name = [&](const std::string& name) {
    WEFT_CHECK(names.insert(name).second, InvalidArgument)
        << "Model::compile: two metrics (or a metric and the loss) are named \"" << name
        << "\"; give each metric its own name";
  };
  for (const metrics::Metric& metric : ms) add_name(metric.name());
  for (metrics::Metric metric : weighted) {
    if (names.count(metric.name())) metric.set_name("weighted_" + metric.name());
    add_name(metric.name());
  }
  model().optimizer = optimizer;
  // Keras: under mixed_float16, compile wraps the optimizer in a dynamic LossScaleOptimizer.
  if (dtype_policy().name() == "mixed_float16" && !optimizer.has_loss_scale()) {
    model().optimizer = mixed_precision::LossScaleOptimizer(optimizer);
  }
  model().loss = loss;
  model().compiled_metrics = ms;
  model().compiled_metrics.insert(model().compiled_metrics.end(), weighted.begin(), weighted.end());
  model().first_weighted_metric = ms.size();
  model().steps_per_execution = options.steps_per_execution;
  if (distribute::has_strategy()) model().strategy = distribute::get_strategy();
}

void Model::reset_metrics() {
  for (metrics::Metric& m : model().compiled_metrics) m.reset_state();
  model().train_loss.reset_state();
  model().test_loss.reset_state();
}

namespace {

// A dataset element cut into the model's inputs, targets and sample weights (none, one for
// every output, or one per output), as Keras's (x, y, sample_weight).
struct ElementParts {
  std::vector<Tensor> inputs, targets, weights;
};

ElementParts split_element(const ModelImpl& m, const std::vector<Tensor>& e, bool need_targets) {
  size_t n_in = m.num_inputs(), n_out = m.num_outputs();
  bool fits = e.size() == n_in + n_out || e.size() == n_in + n_out + 1 ||
              e.size() == n_in + 2 * n_out || (!need_targets && e.size() == n_in);
  WEFT_CHECK(fits, InvalidArgument)
      << "Model \"" << m.name() << "\": a dataset element has " << e.size()
      << " components; expected " << n_in << " input(s) followed by " << n_out
      << " target(s) and optionally a sample weight (one, or one per target)";
  ElementParts parts;
  parts.inputs.assign(e.begin(), e.begin() + n_in);
  if (e.size() == n_in) return parts;
  parts.targets.assign(e.begin() + n_in, e.begin() + n_in + n_out);
  parts.weights.assign(e.begin() + n_in + n_out, e.end());
  if (parts.weights.size() == 1) parts.weights.resize(n_out, parts.weights[0]);
  return parts;
}

// Each example's loss: the compiled loss's per-example values, times their sample weights and
// the output's mask (Keras's compile_utils.apply_mask: a masked step weighs 0), as one value per
// example (the mean over a sequence's steps, masked ones included, as Keras's
// SUM_OVER_BATCH_SIZE divides by every step), summed over the outputs.
Tensor per_example_loss(const ModelImpl& m, const std::vector<Tensor>& outputs,
                        const std::vector<Tensor>& targets, const std::vector<Tensor>& weights) {
  Tensor total;
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor l = m.loss->per_example(targets[i], outputs[i]);
    if (!weights.empty()) l = losses::apply_sample_weight(l, weights[i]);
    if (Tensor mask = keras_mask(outputs[i]); mask.defined()) {
      l = losses::apply_sample_weight(l, mask);
    }
    if (l.rank() > 1) l = mean(reshape(l, {l.dim(0), -1}), {1});
    total = total.defined() ? add(total, l) : l;
  }
  return total;
}

// The regularization losses of a forward pass (Keras's model.losses): the weights' penalties and
// the activity losses `activity` gathered, summed in a fixed order in the per-example losses'
// dtype; undefined when the model has none.
Tensor regularization_loss(const ModelImpl& m, const ActivityLossScope& activity, DType dtype) {
  std::vector<Tensor> terms = m.weight_penalties();
  for (const Tensor& t : activity.losses()) terms.push_back(t);
  Tensor total;
  for (const Tensor& t : terms) {
    Tensor c = t.dtype() == dtype ? t : cast(t, dtype);
    total = total.defined() ? add(total, c) : c;
  }
  return total;
}

// The partial logs of some rows: the loss's sum and the number of examples (Keras reports the
// loss weighted by examples: sum(l * w) / N, plus the regularization loss `penalty`, if defined,
// which each row carries), and each metric's partial (without the sample weights, as Keras's
// compiled `metrics`, but weighted by the output's mask).
PartialLogs partial_logs(const ModelImpl& m, const Tensor& per_example, const Tensor& penalty,
                         const std::vector<Tensor>& outputs, const std::vector<Tensor>& targets,
                         const std::vector<Tensor>& weights) {
  autodiff::NoRecordScope no_record;
  PartialLogs logs;
  const auto rows = static_cast<double>(per_example.numel());
  double total = sum(cast(per_example, kFloat64)).item<double>();
  if (penalty.defined()) total += cast(penalty, kFloat64).item<double>() * rows;
  logs["loss"] = {{total, rows}};
  // Keras's apply_mask: the weighted metrics' weights are the sample weights times the mask.
  Tensor mask = keras_mask(outputs[0]), weighted = mask;
  if (!weights.empty()) {
    weighted =
        mask.defined() ? losses::apply_sample_weight(cast(mask, kFloat32), weights[0]) : weights[0];
  }
  for (size_t i = 0; i < m.compiled_metrics.size(); ++i) {
    const metrics::Metric& metric = m.compiled_metrics[i];
    logs[metric.name()] +=
        metric.partial(targets[0], outputs[0], i < m.first_weighted_metric ? mask : weighted);
  }
  return logs;
}

std::vector<Tensor> rows_of(const std::vector<Tensor>& ts, int64_t lo, int64_t hi) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(slice(t, {Slice{lo, hi}}));
  return out;
}

}  // namespace

namespace internal {
namespace {

// Each log's name and how many sums it has, in packing order: the loss, then the metrics.
std::vector<std::pair<std::string, size_t>> log_sizes(const ModelImpl& m,
                                                      const metrics::Mean& loss_tracker) {
  std::vector<std::pair<std::string, size_t>> sizes{{"loss", loss_tracker.state_size()}};
  for (const metrics::Metric& metric : m.compiled_metrics) {
    sizes.emplace_back(metric.name(), metric.state_size());
  }
  return sizes;
}

}  // namespace

Tensor pack_partial_logs(const ModelImpl& m, const metrics::Mean& loss_tracker,
                         const PartialLogs& logs) {
  std::vector<double> packed;
  for (const auto& [name, size] : log_sizes(m, loss_tracker)) {
    auto it = logs.find(name);
    std::vector<double> sums = it == logs.end() ? std::vector<double>{} : it->second.sums;
    sums.resize(size, 0.0);  // a replica with no rows added none: zeros
    packed.insert(packed.end(), sums.begin(), sums.end());
  }
  return Tensor::from_vector(packed);
}

PartialLogs unpack_partial_logs(const ModelImpl& m, const metrics::Mean& loss_tracker,
                                const Tensor& packed) {
  const auto sizes = log_sizes(m, loss_tracker);
  size_t total = 0;
  for (const auto& [name, size] : sizes) total += size;
  WEFT_CHECK(packed.dtype() == kFloat64 && packed.rank() == 1 &&
                 packed.numel() == static_cast<int64_t>(total),
             InvalidArgument)
      << "a step's packed logs must be float64 of shape (" << total << ",) (the loss and "
      << sizes.size() - 1 << " metrics), got " << packed.dtype() << " "
      << shape_str(packed.shape());
  std::vector<double> all = packed.to_vector<double>();
  PartialLogs logs;
  size_t at = 0;
  for (const auto& [name, size] : sizes) {
    logs[name].sums.assign(all.begin() + static_cast<std::ptrdiff_t>(at),
                           all.begin() + static_cast<std::ptrdiff_t>(at + size));
    at += size;
  }
  return logs;
}

std::map<std::string, double> merge_logs(ModelImpl& m, metrics::Mean& loss_tracker,
                                         const std::vector<PartialLogs>& replicas) {
  PartialLogs total;
  for (const PartialLogs& p : replicas) {
    for (const auto& [name, part] : p) total[name] += part;
  }
  if (m.strategy.extended().num_local_replicas() < m.strategy.num_replicas_in_sync()) {
    // The other workers' partials too, in one sum of every metric's sums.
    total = unpack_partial_logs(
        m, loss_tracker,
        m.strategy.extended().sum_across_workers(pack_partial_logs(m, loss_tracker, total)));
  }
  loss_tracker.merge_state(total["loss"]);
  std::map<std::string, double> logs{{"loss", loss_tracker.result()}};
  for (metrics::Metric& metric : m.compiled_metrics) {
    metric.merge_state(total[metric.name()]);
    std::vector<double> values = metric.results();
    if (values.size() == 1) logs[metric.name()] = values[0];
    // A metric with a value per threshold logs "<name>[i]" (Keras logs one array).
    for (size_t i = 0; values.size() > 1 && i < values.size(); ++i)
      logs[metric.name() + "[" + std::to_string(i) + "]"] = values[i];
  }
  return logs;
}

}  // namespace internal

PartialLogs Model::train_step(const std::vector<Tensor>& batch) {
  ModelImpl& m = model();
  auto [inputs, targets, weights] = split_element(m, batch, true);
  int64_t rows = inputs[0].dim(0);
  // Outside a distributed dataset, each replica's rows are taken to be an equal share.
  const distribute::ReplicaContext& ctx = distribute::get_replica_context();
  distribute::BatchSlice where = distribute::current_batch_slice().value_or(distribute::BatchSlice{
      0, rows * ctx.replica_id_in_sync_group(), rows, rows * ctx.num_replicas_in_sync()});
  // The parts whose gradients are taken one at a time: under op determinism the micro-batches
  // of the global batch that fall in this replica's rows, else the rows at once. A model whose
  // layers synchronise replicas runs exactly one part per replica, even with no rows, so that
  // every replica makes the same collective calls.
  std::vector<std::pair<int64_t, int64_t>> parts;
  if (m.synchronizes_replicas()) {
    parts.emplace_back(0, rows);
  } else if (config::op_determinism_enabled()) {
    int64_t v = config::micro_batches();
    for (int64_t k = 0; k < v; ++k) {
      auto [lo, hi] = distribute::row_range(where.global_batch_size, v, k);
      lo = std::max(lo, where.first_example) - where.first_example;
      hi = std::min(hi, where.first_example + rows) - where.first_example;
      if (lo < hi) parts.emplace_back(lo, hi);
    }
  } else if (rows > 0) {
    parts.emplace_back(0, rows);
  }
  std::vector<Variable> vars = m.trainable_variables();
  std::vector<std::vector<Tensor>> grads(vars.size());
  std::vector<std::vector<autodiff::UpdateCollector::Update>> updates;
  PartialLogs logs;
  // Gradients all-reduced in packs while the backward pass runs, when the strategy asks for it;
  // not under op determinism (its micro-batches are summed first) nor with a
  // gradient_aggregator (which does the aggregation itself).
  std::optional<distribute::GradientPacks> packs;
  distribute::ReplicaContext& replica = distribute::get_replica_context();
  if (replica.gradient_pack_bytes() > 0 && !config::op_determinism_enabled() &&
      !m.optimizer.gradient_aggregator()) {
    packs.emplace(replica, vars, replica.gradient_pack_bytes());
  }
  for (auto [lo, hi] : parts) {
    distribute::BatchSliceScope in_part(
        {where.step, where.first_example + lo, hi - lo, where.global_batch_size});
    autodiff::UpdateCollector collector;  // this part's BatchNormalization updates
    std::vector<Tensor> part_targets = rows_of(targets, lo, hi);
    std::vector<Tensor> part_weights = rows_of(weights, lo, hi);
    GradientTape tape;
    ActivityLossScope activity;
    std::vector<Tensor> outputs = m.invoke(rows_of(inputs, lo, hi), /*training=*/true);
    Tensor per_example = per_example_loss(m, outputs, part_targets, part_weights);
    Tensor loss = distribute::compute_average_loss(per_example, where.global_batch_size);
    // The regularization loss counts once per global batch: each part adds its share by rows
    // (Keras divides it among the replicas).
    Tensor penalty = regularization_loss(m, activity, per_example.dtype());
    if (penalty.defined()) {
      loss = add(loss, mul(penalty, static_cast<double>(hi - lo) / where.global_batch_size));
    }
    if (packs) {
      m.optimizer.compute_gradients(loss, vars, tape,
                                    [&](size_t i, const Tensor& g) { packs->ready(i, g); });
    } else {
      optim::GradsAndVars gv = m.optimizer.compute_gradients(loss, vars, tape);
      for (size_t i = 0; i < vars.size(); ++i) grads[i].push_back(gv[i].first);
    }
    updates.push_back(collector.updates());
    PartialLogs part = partial_logs(m, per_example, penalty, outputs, part_targets, part_weights);
    for (const auto& [name, sums] : part) logs[name] += sums;
  }
  if (parts.empty()) {
    // No rows here (a short last batch): the layers still run forward, on none, so that this
    // replica records the same variable updates as the others, each of count 0 (it adds
    // nothing): every replica and worker then makes the same reductions.
    distribute::BatchSliceScope in_part(
        {where.step, where.first_example, 0, where.global_batch_size});
    autodiff::UpdateCollector collector;
    {
      autodiff::NoRecordScope no_record;
      m.invoke(rows_of(inputs, 0, 0), /*training=*/true);
    }
    std::vector<autodiff::UpdateCollector::Update> none = collector.updates();
    for (auto& u : none) u.count = 0;
    updates.push_back(std::move(none));
  }
  distribute::merge_updates(updates);
  optim::GradsAndVars gv;
  if (packs) {
    std::vector<Tensor> summed = packs->finish();
    for (size_t i = 0; i < vars.size(); ++i) gv.emplace_back(std::move(summed[i]), vars[i]);
    m.optimizer.apply_gradients(gv, /*experimental_aggregate_gradients=*/false);
    return logs;
  }
  {
    autodiff::NoRecordScope no_record;
    for (size_t i = 0; i < vars.size(); ++i) {
      // A replica with no rows has no gradients; the all-reduce counts them as zeros.
      bool defined = !grads[i].empty() && std::all_of(grads[i].begin(), grads[i].end(),
                                                      [](const Tensor& g) { return g.defined(); });
      Tensor g = defined ? distribute::tree_sum(grads[i]) : Tensor();
      gv.emplace_back(std::move(g), vars[i]);
    }
  }
  m.optimizer.apply_gradients(gv);
  return logs;
}

PartialLogs Model::test_step(const std::vector<Tensor>& batch) {
  ModelImpl& m = model();
  autodiff::NoRecordScope no_record;
  auto [inputs, targets, weights] = split_element(m, batch, true);
  if (inputs[0].dim(0) == 0) return {};
  ActivityLossScope activity;
  std::vector<Tensor> outputs = m.invoke(inputs, /*training=*/false);
  Tensor per_example = per_example_loss(m, outputs, targets, weights);
  return partial_logs(m, per_example, regularization_loss(m, activity, per_example.dtype()),
                      outputs, targets, weights);
}

std::vector<Tensor> Model::predict_step(const std::vector<Tensor>& batch) {
  ModelImpl& m = model();
  autodiff::NoRecordScope no_record;
  std::vector<Tensor> inputs = split_element(m, batch, false).inputs;
  if (inputs[0].dim(0) == 0) return {};
  return m.invoke(inputs, false);
}

namespace {

void check_compiled(const ModelImpl& m, const char* what) {
  WEFT_CHECK(m.loss.has_value(), FailedPrecondition)
      << "Model \"" << m.name() << "\" must be compiled before " << what << ": call compile()";
}

// Op determinism promises one replica's bits at every replica count: the replicas' sums must
// complete the fixed tree over the micro-batches (DISTRIBUTED.md §2). A count whose shares do not
// split that tree is refused, naming the counts that do, rather than differing silently. (A model
// with a synchronising layer promises less, and says so: docs/distributed.md.)
void check_replicas_keep_the_bits(const ModelImpl& m) {
  if (!config::op_determinism_enabled() || m.synchronizes_replicas()) return;
  const int64_t local = m.strategy.extended().num_local_replicas();
  const int64_t workers = m.strategy.num_replicas_in_sync() / local;
  const int64_t v = config::micro_batches();
  // Across workers the sum follows the fixed tree when their number is a power of two.
  const bool workers_ok = (workers & (workers - 1)) == 0;
  if (workers_ok && distribute::tree_splits_into(v, workers) &&
      distribute::tree_splits_into(v / workers, local)) {
    return;
  }
  std::ostringstream counts;
  std::vector<int64_t> fit;
  for (int64_t r = 1; r <= v; ++r) {
    if (distribute::tree_splits_into(v, r)) fit.push_back(r);
  }
  for (size_t i = 0; i < fit.size(); ++i) {
    counts << (i == 0 ? "" : i + 1 == fit.size() ? " or " : ", ") << fit[i];
  }
  std::ostringstream what;
  what << m.strategy.num_replicas_in_sync() << " replicas";
  if (workers > 1) what << " (" << workers << " workers x " << local << ")";
  WEFT_FAIL(InvalidArgument)
      << "fit: op determinism (--deterministic) gives one replica's bits only when the "
         "replicas' shares split the fixed tree over the micro-batches, and "
      << what.str() << " with " << v << " micro-batches do not. With " << v << " micro-batches, "
      << counts.str() << " replicas do (across workers, a number of "
      << "workers that is a power of two)"
      << (workers_ok ? "; or set the micro-batches to " + std::to_string(workers * local) +
                           " (weft::config::set_micro_batches, weft train --micro-batches), "
                           "whose one-replica bits these replicas then repeat"
                     : "; across " + std::to_string(workers) +
                           " workers the sum cannot follow the fixed tree: use 2 or 4 workers");
}

}  // namespace

void ModelImpl::build_on(const std::vector<Tensor>& element) {
  if (built()) return;
  WEFT_CHECK(element.size() >= num_inputs(), InvalidArgument)
      << "Model \"" << name() << "\": a dataset element has " << element.size()
      << " components; expected " << num_inputs() << " input(s) first";
  autodiff::NoRecordScope no_record;
  auto scope = strategy.scope();
  invoke(std::vector<Tensor>(element.begin(), element.begin() + num_inputs()), false);
}

std::map<std::string, double> Model::train_on_batch(const std::vector<Tensor>& batch) {
  model().build_on(batch);
  return train_on_distributed(model().strategy.split(
      batch,
      model().optimizer.defined() ? model().optimizer.iterations().value().item<int64_t>() : 0));
}

std::map<std::string, double> Model::train_on_distributed(const distribute::DistributedElement& b) {
  ModelImpl& m = model();
  check_compiled(m, "training");
  check_replicas_keep_the_bits(m);
  distribute::PerReplica<PartialLogs> parts =
      m.strategy.run([this](const data::Element& e) { return train_step(e); }, b);
  return internal::merge_logs(m, m.train_loss, parts.values());
}

std::map<std::string, double> Model::test_on_batch(const std::vector<Tensor>& batch) {
  ModelImpl& m = model();
  check_compiled(m, "evaluation");
  distribute::PerReplica<PartialLogs> parts = m.strategy.run(
      [this](const data::Element& e) { return test_step(e); }, m.strategy.split(batch, 0));
  return internal::merge_logs(m, m.test_loss, parts.values());
}

std::vector<Tensor> Model::predict(const data::Dataset& dataset) try {
  ModelImpl& m = model();
  std::vector<std::vector<Tensor>> parts(m.num_outputs());
  for (const data::Element& batch : dataset) {
    distribute::PerReplica<std::vector<Tensor>> outs = m.strategy.run(
        [this](const data::Element& e) { return predict_step(e); }, m.strategy.split(batch, 0));
    // Each batch's rows of every replica, in order: in a cluster, every worker's too. A replica
    // without rows (a short last batch) has no outputs and adds none.
    for (size_t i = 0; i < parts.size(); ++i) {
      std::vector<Tensor> output;
      for (const std::vector<Tensor>& replica : outs.values()) {
        output.push_back(replica.empty() ? Tensor() : replica[i]);
      }
      parts[i].push_back(m.strategy.gather(distribute::PerReplica<Tensor>(std::move(output)), 0));
    }
  }
  std::vector<Tensor> out;
  for (auto& p : parts) {
    WEFT_CHECK(!p.empty(), InvalidArgument) << "Model::predict: the dataset is empty";
    out.push_back(concat(p, 0));
  }
  return out;
} catch (const std::exception& e) {
  // An error between the steps reaches the other workers of a cluster with its message.
  model().strategy.extended().report_error(e.what());
  throw;
}

Tensor Model::predict(const Tensor& x, int64_t batch_size) {
  return predict(data::Dataset::from_tensor_slices(x).batch(batch_size))[0];
}

void Model::summary(std::ostream& os) const {
  ModelImpl& m = model();
  std::vector<Layer> ls = m.layers();
  std::vector<std::string> shapes = m.layer_output_shapes();
  auto line = [&](char c) { os << std::string(80, c) << "\n"; };
  auto row = [&](const std::string& a, const std::string& b, const std::string& c) {
    char buf[256];
    std::snprintf(buf, sizeof(buf), "%-36s%-28s%16s\n", a.c_str(), b.c_str(), c.c_str());
    os << buf;
  };
  os << "Model: \"" << m.name() << "\"\n";
  line('_');
  row(" Layer (type)", "Output Shape", "Param #");
  line('=');
  int64_t total = 0, trainable = 0;
  for (size_t i = 0; i < ls.size(); ++i) {
    int64_t params = 0;
    for (const Variable& v : ls[i].variables()) params += v.value().numel();
    total += params;
    for (const Variable& v : ls[i].trainable_variables()) trainable += v.value().numel();
    std::string kind = ls[i].impl().class_name();
    row(" " + ls[i].name() + " (" + kind + ")", i < shapes.size() ? shapes[i] : "?",
        std::to_string(params));
  }
  line('=');
  os << "Total params: " << total << "\nTrainable params: " << trainable
     << "\nNon-trainable params: " << total - trainable << "\n";
  line('_');
}

std::vector<std::pair<std::string, Variable>> Model::tracked_variables() const {
  std::vector<std::pair<std::string, Variable>> out;
  std::set<std::string> used;
  for (const Variable& v : variables()) out.emplace_back(unique_name(v.name(), used), v);
  return out;
}

std::string Model::weights_fingerprint() const {
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  for (const auto& [name, v] : tracked_variables()) {
    Tensor t = contiguous(v.value());
    XXH3_128bits_update(state, name.data(), name.size());
    XXH3_128bits_update(state, t.raw_data(), t.numel() * dtype_size(t.dtype()));
  }
  XXH128_hash_t h = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

Sequential::Sequential(const std::vector<Layer>& layers, const std::string& name)
    : Model(std::make_shared<SequentialImpl>(name)) {
  for (const Layer& l : layers) add(l);
}

void Sequential::add(const Layer& layer) const {
  static_cast<SequentialImpl&>(model()).add(layer);
  model().adopt_layers();
}

}  // namespace weft::nn
