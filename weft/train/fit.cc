// Model::fit: the Keras training loop, through the model's strategy: each global batch is cut
// among the replicas (distribute::split_batch) and train_step runs on all of them. A dataset of
// known size is read through one iterator over its repetition, an epoch being `cardinality` steps
// (or steps_per_epoch), so the iterator's position, saved by BackupAndRestore, resumes training
// exactly, even mid-epoch; the step number that keys training-time randomness (Dropout) is
// derived from the epoch and step, so it resumes too. A dataset of unknown size gets a fresh pass
// per epoch. In a cluster each worker reads the dataset as distribute::worker_input says: a
// pipeline that reads files divided by file (tf.data's auto-shard; the workers agree on each
// step's rows, and its position is not saved, each worker's being its own), or every global batch
// with only this worker's rows mapped.

#include <cstdio>
#include <map>
#include <string>

#include "weft/autodiff/tape.h"
#include "weft/core/trace_me.h"
#include "weft/distribute/parameter_server/parameter_server_strategy.h"
#include "weft/nn/model.h"
#include "weft/ops/cast.h"
#include "weft/ops/digest.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/math.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/train/callbacks.h"
#include "weft/train/internal/epoch_reader.h"
#include "weft/train/internal/fit_callbacks.h"
#include "weft/train/internal/fit_parameter_server.h"
#include "weft/train/internal/step_profiler.h"

namespace weft::nn {
namespace {

// The batch with each example's sample weight multiplied by its class's weight (appended when
// the batch has none), as Keras's fit(class_weight=...).
data::Element with_class_weights(const ModelImpl& m, data::Element batch,
                                 const std::map<int64_t, double>& class_weight) {
  const size_t n_in = m.num_inputs();
  WEFT_CHECK(m.num_outputs() == 1 && (batch.size() == n_in + 1 || batch.size() == n_in + 2),
             InvalidArgument)
      << "fit: class_weight needs a model of one output and elements of its inputs, one target "
         "and optionally a sample weight; model \""
      << m.name() << "\" has " << m.num_outputs() << " outputs and elements of " << batch.size()
      << " components";
  Tensor y = batch[n_in];
  WEFT_CHECK(y.rank() >= 1 && y.rank() <= 2, InvalidArgument)
      << "fit: class_weight needs targets of shape (N), (N, 1) or (N, classes), got "
      << shape_str(y.shape());
  Tensor labels = y.rank() == 2 && y.dim(1) > 1 ? argmax(y, -1) : reshape(y, {-1});
  // Keras rounds float labels (a smoothed 0.9 is class 1).
  if (is_floating(labels.dtype())) labels = round(labels);
  std::vector<int64_t> ids = cast(labels, kInt64).to_vector<int64_t>();
  std::vector<double> weights(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    auto found = class_weight.find(ids[i]);
    WEFT_CHECK(found != class_weight.end(), InvalidArgument)
        << "fit: class_weight has no weight for class " << ids[i] << " (example " << i
        << " of a batch)";
    weights[i] = found->second;
  }
  Tensor w = Tensor::from_vector(weights);
  if (batch.size() == n_in + 2) {
    batch[n_in + 1] = losses::apply_sample_weight(cast(batch[n_in + 1], kFloat64), w);
  } else {
    batch.push_back(w);
  }
  return batch;
}

// In a cluster every worker must start from the chief's weights: variables made inside the
// strategy's scope do, but a layer built outside it (or a worker that restored other weights)
// would train apart from the others without a word. One all-gather of a digest of each worker's
// variables (their values in creation order: names may differ between processes).
void check_workers_start_alike(const Model& model) {
  const distribute::StrategyImpl& strategy = model.distribute_strategy().extended();
  if (strategy.num_local_replicas() == strategy.num_replicas_in_sync()) return;
  std::vector<Tensor> values;
  for (const Variable& v : model.variables()) values.push_back(v.value());
  const auto mine = static_cast<int64_t>(digest64(values));
  std::vector<int64_t> all =
      strategy.all_gather_across_workers(Tensor::from_vector(std::vector<int64_t>{mine}))
          .to_vector<int64_t>();
  auto hex = [](int64_t digest) {
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(digest));
    return std::string(buf);
  };
  for (size_t w = 1; w < all.size(); ++w) {
    WEFT_CHECK(all[w] == all[0], FailedPrecondition)
        << "fit: worker " << w << " starts from other weights than the chief (digests "
        << hex(all[w]) << " and " << hex(all[0])
        << "); variables start with the chief's values only when they are made inside "
           "strategy.scope(): make and build the model and its layers there";
  }
}

}  // namespace

std::map<std::string, double> Model::evaluate(const data::Dataset& dataset, int verbose) try {
  std::map<std::string, double> logs;
  if (distribute::ParameterServerStrategy::is(model().strategy)) {
    logs = internal::evaluate_on_parameter_servers(*this, dataset);
  } else {
    reset_metrics();
    for (const data::Element& batch : dataset) logs = test_on_batch(batch);
    reset_metrics();
  }
  if (verbose > 0) {
    for (const auto& [k, v] : logs) std::printf("%s: %.4f  ", k.c_str(), v);
    std::printf("\n");
  }
  return logs;
} catch (const std::exception& e) {
  // An error between the steps reaches the other workers of a cluster with its message.
  model().strategy.extended().report_error(e.what());
  throw;
}

train::History Model::fit(const data::Dataset& training_data,
                          const train::FitOptions& options) try {
  ModelImpl& m = model();
  WEFT_CHECK(compiled(), FailedPrecondition)
      << "Model \"" << m.name() << "\" must be compiled before fit(): call compile()";
  WEFT_CHECK(options.epochs >= 0 && options.initial_epoch >= 0, InvalidArgument)
      << "fit: epochs (" << options.epochs << ") and initial_epoch (" << options.initial_epoch
      << ") must be non-negative";
  WEFT_CHECK(!options.steps_per_epoch || *options.steps_per_epoch > 0, InvalidArgument)
      << "fit: steps_per_epoch must be positive, got " << *options.steps_per_epoch;

  if (distribute::ParameterServerStrategy::is(m.strategy)) {
    return internal::fit_on_parameter_servers(*this, training_data, options, [&](data::Element b) {
      return options.class_weight.empty()
                 ? b
                 : with_class_weights(m, std::move(b), options.class_weight);
    });
  }

  using Elements = distribute::DistributedDataset::Elements;
  const distribute::WorkerInput input =
      distribute::worker_input(m.strategy.extended(), training_data);
  const data::Dataset& dataset = input.dataset;
  const bool by_file = input.elements == Elements::kWorkerBatches;
  std::vector<data::TensorSpec> like;  // by file: the structure of a 0-row batch
  internal::EpochReader reader(dataset, options.steps_per_epoch);
  const std::optional<int64_t>& steps = reader.steps();
  // Variables and optimizer slots must exist before a callback restores them.
  reader.build(m);
  m.optimizer.build(m.trainable_variables());

  std::vector<train::Callback> callbacks;
  std::vector<train::Callback> given = options.callbacks;
  if (options.verbose > 0) given.push_back(train::ProgbarLogger(options.verbose));
  // Profiled steps (TensorBoard's profile_batch) on every worker, the chief-only callback's too.
  internal::StepProfiler step_profiler(given, m.strategy.extended());
  // In a cluster only the chief prints and writes files (MultiWorkerMirroredStrategy).
  const bool chief = m.strategy.extended().first_local_replica() == 0;
  for (train::Callback& c : given) {
    if (chief || !c.impl().chief_only()) callbacks.push_back(std::move(c));
  }
  internal::FitCallbacks fit_callbacks(callbacks, this, options.epochs, steps,
                                       by_file ? nullptr : reader.kept());
  const train::ResumePoint start = fit_callbacks.resume({options.initial_epoch, 0}, reader);
  check_workers_start_alike(*this);
  m.stop_training = false;
  int64_t unsized_steps = 0;  // steps so far, when an epoch's size is unknown
  train::History history;
  train::Logs logs;
  fit_callbacks.train_begin(logs);
  for (int epoch = start.epoch; epoch < options.epochs && !m.stop_training; ++epoch) {
    reset_metrics();
    for (const train::Callback& c : callbacks) c.impl().on_epoch_begin(epoch, logs);
    reader.begin_epoch();
    logs.clear();
    int64_t step = epoch == start.epoch ? start.step : 0;
    int64_t trained = 0;
    // An execution: up to steps_per_execution steps between two calls of the batch callbacks
    // (fewer at the epoch's end), as Keras's.
    int64_t first = step, examples = 0;
    auto end_execution = [&] {
      if (step == first) return;
      for (const train::Callback& c : callbacks) {
        c.impl().set_batch_examples(examples);
        c.impl().set_batch_steps(step - first);
        c.impl().on_train_batch_end(step - 1, logs);
      }
      first = step;
      examples = 0;
    };
    while (!steps || step < *steps) {
      const int64_t global_step = steps ? epoch * *steps + step : unsized_steps;
      // The step's profiler event, "train" with step_num (TensorFlow's): its number in the run,
      // counted from 1 as TensorBoard's profile_batch counts, recorded once it has trained.
      step_profiler.before_step(global_step + 1);
      const int64_t step_start = trace_active(1) ? trace_now_ns() : 0;
      std::optional<data::Element> batch = reader.next();
      int64_t global_rows = 0;  // own rows: the global batch's
      if (batch && input.elements == Elements::kOwnRows) {
        global_rows = distribute::take_global_rows(*batch);
      }
      if (batch && !options.class_weight.empty()) {
        batch = with_class_weights(m, std::move(*batch), options.class_weight);
      }
      std::optional<distribute::DistributedElement> cut;
      if (by_file) {
        cut = distribute::split_worker_batch(m.strategy.extended(), batch, global_step, like,
                                             training_data);
      } else if (batch && input.elements == Elements::kOwnRows) {
        cut = distribute::split_own_rows(m.strategy.extended(), *batch, global_rows, global_step);
      } else if (batch) {
        cut = m.strategy.split(*batch, global_step,
                               dataset.options().experimental_distribute.auto_shard_policy);
      }
      if (!cut) {
        end_execution();
        WEFT_CHECK(!options.steps_per_epoch, OutOfRange)
            << "fit: the dataset ran out of data after " << step << " steps of epoch " << epoch
            << " (steps_per_epoch = " << *options.steps_per_epoch << "); use repeat()";
        break;
      }
      if (!steps) ++unsized_steps;
      if (step == first) {
        for (const train::Callback& c : callbacks) c.impl().on_train_batch_begin(step, logs);
      }
      logs = train_on_distributed(*cut);
      examples += input.elements == Elements::kGlobalBatches
                      ? (*batch)[0].dim(0)
                      : cut->slices.front().global_batch_size;
      ++step;
      ++trained;
      const bool execution_ends =
          step - first >= m.steps_per_execution || (steps && step >= *steps);
      if (execution_ends) end_execution();
      // The step's event holds its batch callbacks, as TensorFlow's Trace("train") in Keras's fit.
      if (step_start > 0) {
        record_trace_event({.name = "train",
                            .category = TraceCategory::kStep,
                            .start_ns = step_start,
                            .end_ns = trace_now_ns(),
                            .stats = {{"step_num", std::to_string(global_step + 1)},
                                      {"epoch_num", std::to_string(epoch)},
                                      {"_r", "1"}}},
                           1);
      }
      step_profiler.after_step(global_step + 1);
      if (!execution_ends) continue;
      // A callback stopped training within the epoch (as Keras's fit, which ends the epoch there).
      if (m.stop_training) break;
    }
    WEFT_CHECK(trained > 0 || steps, InvalidArgument) << "fit: the training dataset is empty";
    if (options.validation_data) {
      for (const auto& [k, v] : evaluate(*options.validation_data)) logs["val_" + k] = v;
      for (const train::Callback& c : callbacks) c.impl().on_test_end(logs);
    }
    for (const train::Callback& c : callbacks) c.impl().on_epoch_end(epoch, logs);
    history.epoch.push_back(epoch);
    for (const auto& [k, v] : logs) history.history[k].push_back(v);
  }
  step_profiler.end();
  fit_callbacks.train_end(logs);
  return history;
} catch (const std::exception& e) {
  // An error between the steps (reading data, a callback) reaches the other workers of a
  // cluster with its message.
  model().strategy.extended().report_error(e.what());
  throw;
}

}  // namespace weft::nn
