// fit under ParameterServerStrategy, as Keras's fit with TensorFlow's ParameterServerStrategy:
// every task runs the same program and calls fit. The chief reads the dataset and schedules one
// closure per step, its batch as the arguments, on the ClusterCoordinator; a worker runs the
// model's train_step on it, its optimizer staging the updates on the ps tasks, and returns the
// step's partial logs, which the chief merges in step order as the closures finish (at most two
// per worker in flight), running the batch-level callbacks then. In synchronous mode a step is
// one closure per worker, each on its slice of the batch, committed together (their gradients
// summed on the ps tasks) before the next step is scheduled. A step's batch travels with its
// closure, so a closure run again after its worker was lost trains on the same rows, and only
// the run that returned is committed: each batch is trained on exactly once. Evaluation (the
// validation data, and Model::evaluate) is closures too, a batch each, whose partial logs the
// chief adds up in the data's order: each example is counted once. A lost ps task
// (restarted by weft launch, holding nothing) is waited for, and with a backup (BackupAndRestore)
// every variable is rolled back to it and the steps after it train again, in this same fit.
#include "weft/train/internal/fit_parameter_server.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <optional>

#include "weft/core/errors.h"
#include "weft/distribute/parameter_server/cluster_coordinator.h"
#include "weft/distribute/parameter_server/parameter_server_strategy.h"
#include "weft/distribute/values.h"
#include "weft/nn/internal/step_logs.h"
#include "weft/ops/shape_ops.h"
#include "weft/train/callbacks.h"
#include "weft/train/internal/epoch_reader.h"
#include "weft/train/internal/fit_callbacks.h"

namespace weft::nn::internal {
namespace {

constexpr const char* kTrainStep = "weft/fit/train_step";
constexpr const char* kTestStep = "weft/fit/test_step";

// A scheduled step whose logs the chief has not merged yet: its closure, or in synchronous mode
// one closure per worker's slice of its batch.
struct Pending {
  int64_t step = 0;
  int64_t examples = 0;
  std::vector<distribute::RemoteValue> parts;
};

// On a worker or ps task, for fit or evaluate: serves the chief's closures until the chief is
// done. A worker builds an unbuilt model alike (its variables made in the same order as
// everywhere, and so bound to the same places) from the dataset's first batch, which is read no
// further here, and registers the model's train and test steps; a ps task serves its variables.
void serve_the_chief(Model& model, const distribute::ParameterServerStrategy& strategy,
                     const data::Dataset& dataset, std::optional<int64_t> steps_per_epoch) {
  ModelImpl& m = model.model();
  if (strategy.task().rfind("ps:", 0) != 0) {
    if (!m.built()) EpochReader(dataset, steps_per_epoch).build(m);
    // `model` itself (its steps may be overridden), which outlives the closures.
    Model* self = &model;
    // The arguments: the batch's tensors (a slice of the step's, in synchronous mode), then
    // where they lie in it (step, first example, examples, the step's batch size), which
    // keys training-time randomness and averages the loss over the step's whole batch.
    distribute::register_function(kTrainStep, [self](const distribute::ClosureArgs& args) {
      std::vector<Tensor> batch;
      for (std::size_t i = 0; i + 1 < args.size(); ++i) batch.push_back(args.tensor(i));
      const std::vector<int64_t> at = args.tensor(args.size() - 1).to_vector<int64_t>();
      WEFT_CHECK(at.size() == 4, InvalidArgument)
          << "fit's train step takes where its rows lie as 4 int64 values, got " << at.size();
      distribute::BatchSliceScope slice({at[0], at[1], at[2], at[3]});
      ModelImpl& impl = self->model();
      return std::vector<Tensor>{pack_partial_logs(impl, impl.train_loss, self->train_step(batch))};
    });
    // The arguments: the batch's tensors.
    distribute::register_function(kTestStep, [self](const distribute::ClosureArgs& args) {
      std::vector<Tensor> batch;
      for (std::size_t i = 0; i < args.size(); ++i) batch.push_back(args.tensor(i));
      ModelImpl& impl = self->model();
      return std::vector<Tensor>{pack_partial_logs(impl, impl.test_loss, self->test_step(batch))};
    });
  }
  strategy.join();  // until the chief's program is done
}

}  // namespace

std::map<std::string, double> evaluate_on_parameter_servers(
    Model& model, const data::Dataset& dataset, distribute::ClusterCoordinator* coordinator) {
  ModelImpl& m = model.model();
  distribute::ParameterServerStrategy strategy(m.strategy);
  if (!strategy.is_chief()) {
    serve_the_chief(model, strategy, dataset, std::nullopt);
    return {};
  }
  WEFT_CHECK(model.compiled(), FailedPrecondition)
      << "Model \"" << m.name() << "\" must be compiled before evaluation: call compile()";
  std::optional<distribute::ClusterCoordinator> own;
  if (coordinator == nullptr) coordinator = &own.emplace(strategy);
  const distribute::RemoteFunction test_step{kTestStep};
  // Two batches per worker in flight, merged in the dataset's order as they return.
  const std::size_t window = 2 * static_cast<std::size_t>(coordinator->num_workers());
  std::deque<distribute::RemoteValue> running;
  std::map<std::string, double> logs;
  auto finish_oldest = [&] {
    distribute::RemoteValue batch = std::move(running.front());
    running.pop_front();
    std::vector<Tensor> out;
    try {
      out = batch.fetch();
    } catch (const Cancelled&) {
      coordinator->join();  // raises the error that cancelled it, which names its cause
      throw;
    }
    WEFT_CHECK(out.size() == 1, Internal)
        << "evaluate: a batch returned " << out.size() << " tensors, not its logs";
    logs = merge_logs(m, m.test_loss, {unpack_partial_logs(m, m.test_loss, out[0])});
  };
  model.reset_metrics();
  for (const data::Element& batch : dataset) {
    m.build_on(batch);  // an unbuilt model, alike on every task (serve_the_chief)
    running.push_back(coordinator->schedule(
        test_step, std::vector<distribute::ClosureArgument>(batch.begin(), batch.end())));
    while (running.size() >= window) finish_oldest();
  }
  while (!running.empty()) finish_oldest();
  model.reset_metrics();
  return logs;
}

train::History fit_on_parameter_servers(
    Model& model, const data::Dataset& dataset, const FitOptions& options,
    const std::function<data::Element(data::Element)>& prepare) {
  ModelImpl& m = model.model();
  distribute::ParameterServerStrategy strategy(m.strategy);
  if (!strategy.is_chief()) {
    serve_the_chief(model, strategy, dataset, options.steps_per_epoch);
    return {};
  }

  EpochReader reader(dataset, options.steps_per_epoch);
  const std::optional<int64_t>& steps = reader.steps();
  reader.build(m);
  // The optimizer's slots, which live beside their variables on the ps tasks: a backup saves and
  // restores them through these.
  m.optimizer.build(m.trainable_variables());
  distribute::ClusterCoordinator coordinator(strategy);
  const distribute::RemoteFunction train_step{kTrainStep};
  const bool sync = strategy.synchronous();
  const int64_t workers = coordinator.num_workers();
  // Asynchronous: max_staleness + 1 steps in flight (by default two per worker), so that every
  // step up to max_staleness + 1 before a step is applied when it starts. Synchronous: one step,
  // on every worker.
  const std::size_t window = static_cast<std::size_t>(strategy.max_staleness()) + 1;
  std::vector<train::Callback> callbacks = options.callbacks;
  if (options.verbose > 0) callbacks.push_back(train::ProgbarLogger(options.verbose));
  FitCallbacks fit_callbacks(callbacks, &model, options.epochs, steps, reader.kept());
  const train::ResumePoint start = fit_callbacks.resume({options.initial_epoch, 0}, reader);
  // A callback waiting for a quiet point (a backup due) stops more steps from being scheduled.
  auto quiet_wanted = [&] {
    return std::any_of(callbacks.begin(), callbacks.end(),
                       [](const train::Callback& c) { return c.impl().wants_quiet_point(); });
  };
  m.stop_training = false;
  train::History history;
  train::Logs logs;
  std::deque<Pending> running;
  int64_t unsized_steps = 0;  // steps so far, when an epoch's size is unknown
  // Schedules epoch step `step` on `batch`, training step `run_step` (epoch × steps + step when
  // the epoch's size is known, as fit's: it keys training-time randomness).
  auto schedule_step = [&](int64_t step, int64_t run_step, const data::Element& batch) {
    const int64_t rows = batch[0].dim(0);
    Pending p{step, rows, {}};
    const int64_t parts = sync ? workers : 1;
    for (int64_t k = 0; k < parts; ++k) {
      auto [lo, hi] = distribute::row_range(rows, parts, k);
      if (lo == hi) continue;  // a short batch: fewer slices
      std::vector<distribute::ClosureArgument> args;
      for (const Tensor& t : batch) args.emplace_back(parts == 1 ? t : slice(t, {Slice{lo, hi}}));
      args.emplace_back(Tensor::from_vector<int64_t>({run_step, lo, hi - lo, rows}));
      p.parts.push_back(coordinator.schedule(train_step, args, {.commit = !sync}));
    }
    running.push_back(std::move(p));
  };
  // Merges the oldest scheduled step's logs (waiting for its closures; in synchronous mode,
  // committing them as one step) and runs the callbacks.
  auto finish_oldest = [&] {
    Pending p = std::move(running.front());
    running.pop_front();
    std::vector<PartialLogs> parts;
    try {
      for (const distribute::RemoteValue& part : p.parts) {
        std::vector<Tensor> out = part.fetch();
        WEFT_CHECK(out.size() == 1, Internal)
            << "fit: step " << p.step << " returned " << out.size() << " tensors, not its logs";
        parts.push_back(unpack_partial_logs(m, m.train_loss, out[0]));
      }
      if (sync) coordinator.commit_together(p.parts);
    } catch (const Cancelled&) {
      // Another closure's error cancelled this one: raise that error, which names its cause.
      if (sync) coordinator.abort_staged(p.parts);
      coordinator.join();
      throw;
    } catch (...) {
      if (sync) coordinator.abort_staged(p.parts);
      throw;
    }
    logs = merge_logs(m, m.train_loss, parts);
    const int64_t staleness = sync ? 0 : p.parts[0].staleness();
    for (const train::Callback& c : callbacks) {
      c.impl().set_batch_examples(p.examples);
      c.impl().set_batch_staleness(staleness);
      c.impl().set_steps_in_flight(static_cast<int64_t>(running.size()));
      c.impl().on_train_batch_end(p.step, logs);
    }
  };
  // A step failed: if a ps task was lost (it restarted holding nothing, or cannot be reached),
  // waits until it is back, creates its variables there again and rolls every variable back to
  // the newest backup (BackupAndRestore), returning where training goes on; the steps after the
  // backup train again, and those that committed after it are undone with it. Rethrows `error`
  // when no ps task was lost.
  auto recover = [&](const std::exception_ptr& error) -> train::ResumePoint {
    try {
      coordinator.join();  // every closure has ended
    } catch (const Error&) {
    }
    for (const Pending& p : running) {
      if (sync) coordinator.abort_staged(p.parts);
    }
    running.clear();
    const std::vector<std::string> lost = strategy.lost_ps_tasks();
    if (lost.empty()) std::rethrow_exception(error);
    std::string names, cause;
    for (const std::string& t : lost) names += (names.empty() ? "" : ", ") + t;
    try {
      std::rethrow_exception(error);
    } catch (const Error& e) {
      cause = e.message();
    }
    WEFT_CHECK(fit_callbacks.can_roll_back() && reader.kept() != nullptr, Unavailable)
        << "fit: parameter server " << names
        << " was lost, and the variables it held with it; without a backup to roll back to "
           "(BackupAndRestore, weft train --backup-dir) training cannot go on. The step failed "
           "with: "
        << cause;
    std::fprintf(stderr,
                 "weft: parameter server %s lost; waiting for it to come back, to roll every "
                 "variable back to the newest backup\n",
                 names.c_str());
    strategy.recreate_lost_variables(lost);
    std::optional<train::ResumePoint> at = fit_callbacks.roll_back(reader);
    WEFT_CHECK(at.has_value(), Unavailable)
        << "fit: parameter server " << names
        << " was lost before the first backup was made; nothing to roll back to. The step "
           "failed with: "
        << cause;
    return *at;
  };
  fit_callbacks.train_begin(logs);
  int epoch = start.epoch;
  int64_t first_step = start.step;
  while (epoch < options.epochs && !m.stop_training) {
    model.reset_metrics();
    for (const train::Callback& c : callbacks) c.impl().on_epoch_begin(epoch, logs);
    reader.begin_epoch();
    logs.clear();
    int64_t trained = 0;
    std::exception_ptr failed;
    try {
      for (int64_t step = first_step; (!steps || step < *steps) && !m.stop_training; ++step) {
        std::optional<data::Element> batch = reader.next();
        if (!batch) {
          WEFT_CHECK(!options.steps_per_epoch, OutOfRange)
              << "fit: the dataset ran out of data after " << step << " steps of epoch " << epoch
              << " (steps_per_epoch = " << *options.steps_per_epoch << "); use repeat()";
          break;
        }
        data::Element prepared = prepare(std::move(*batch));
        for (const train::Callback& c : callbacks) c.impl().on_train_batch_begin(step, logs);
        schedule_step(step, steps ? epoch * *steps + step : unsized_steps++, prepared);
        ++trained;
        // A callback may stop training at a step's end: the steps already scheduled still run.
        while (running.size() >= window ||
               (!running.empty() && (m.stop_training || quiet_wanted()))) {
          finish_oldest();
        }
      }
      while (!running.empty()) finish_oldest();
    } catch (const Error&) {
      failed = std::current_exception();
    }
    if (failed) {
      const train::ResumePoint at = recover(failed);
      epoch = at.epoch;
      first_step = at.step;
      continue;
    }
    WEFT_CHECK(trained > 0 || steps, InvalidArgument) << "fit: the training dataset is empty";
    if (options.validation_data) {
      for (const auto& [k, v] :
           evaluate_on_parameter_servers(model, *options.validation_data, &coordinator)) {
        logs["val_" + k] = v;
      }
      for (const train::Callback& c : callbacks) c.impl().on_test_end(logs);
    }
    for (const train::Callback& c : callbacks) c.impl().on_epoch_end(epoch, logs);
    history.epoch.push_back(epoch);
    for (const auto& [k, v] : logs) history.history[k].push_back(v);
    ++epoch;
    first_step = 0;
  }
  fit_callbacks.train_end(logs);
  return history;
}

}  // namespace weft::nn::internal
