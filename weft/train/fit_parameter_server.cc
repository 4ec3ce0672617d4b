// fit under ParameterServerStrategy, as Keras's fit with TensorFlow's ParameterServerStrategy:
// every task runs the same program and calls fit. The chief reads the dataset and schedules one
// closure per step on the ClusterCoordinator, carrying where the step's batch lies (its position
// in the chief's run over the data, input_positions.h; the batch itself when an epoch's size is
// unknown); a worker reads that batch from its own pipeline, runs the model's train_step on it,
// its optimizer staging the updates on the ps tasks, and returns the step's partial logs, which
// the chief merges in step order as the closures finish (at most two per worker in flight),
// running the batch-level callbacks then. In synchronous mode a step is one closure per worker,
// each on its slice of the batch, committed together (their gradients summed on the ps tasks)
// before the next step is scheduled; with backup workers (ParameterServerOptions::backup_workers)
// the batch is cut into fewer parts than workers, a worker without a part runs one another still
// runs, and each part's first run to return is the one committed. A closure run again after its
// worker was lost trains on the same rows, and only the run that returned is committed: each
// batch is trained on exactly once.
// Evaluation (the validation data, and Model::evaluate) is closures too, a batch each, whose
// partial logs the chief adds up in the data's order: each example is counted once. A lost ps task
// (restarted by weft launch, holding nothing) is waited for, and with a backup (BackupAndRestore)
// every variable is rolled back to it and the steps after it train again, in this same fit.
#include "weft/train/internal/fit_parameter_server.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>

#include "weft/core/errors.h"
#include "weft/distribute/parameter_server/cluster_coordinator.h"
#include "weft/distribute/parameter_server/options.h"
#include "weft/distribute/parameter_server/parameter_server_strategy.h"
#include "weft/distribute/values.h"
#include "weft/nn/internal/step_logs.h"
#include "weft/ops/shape_ops.h"
#include "weft/train/callbacks.h"
#include "weft/train/internal/epoch_reader.h"
#include "weft/train/internal/fit_callbacks.h"
#include "weft/train/internal/input_positions.h"
#include "weft/train/internal/ledger.h"

namespace weft::nn::internal {
namespace {

constexpr const char* kTrainStep = "weft/fit/train_step";
constexpr const char* kTestStep = "weft/fit/test_step";

// A step's function in this run of the cluster (ParameterServerStrategy::run_id).
distribute::RemoteFunction step_function(const char* step,
                                         const distribute::ParameterServerStrategy& strategy) {
  return {std::string(step) + "/" + std::to_string(strategy.run_id())};
}

// Scheduled steps whose logs the chief has not merged yet: a closure of `steps` steps (compile's
// steps_per_execution), or in synchronous mode one step, a closure per worker's slice of its
// batch. `ends_execution`: the batch callbacks run once these are merged.
struct Pending {
  int64_t step = 0;  // the first
  int64_t steps = 1;
  int64_t examples = 0;
  int epoch = 0;
  int64_t first_row = 0;  // of the epoch's order: its rows are [first_row, first_row + examples)
  bool ends_execution = true;
  std::vector<distribute::RemoteValue> parts;
};

// The steps' logs a closure returned, one packed tensor per step.
std::vector<Tensor> fetch_logs(const distribute::RemoteValue& closure, int64_t steps,
                               const char* what) {
  std::vector<Tensor> out = closure.fetch();
  WEFT_CHECK(static_cast<int64_t>(out.size()) == steps, Internal)
      << what << ": a closure of " << steps << " steps returned " << out.size()
      << " tensors, not their logs";
  return out;
}

// The bytes of a batch's tensors.
std::size_t bytes_of(const data::Element& batch) {
  std::size_t bytes = 0;
  for (const Tensor& t : batch) {
    bytes += static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype());
  }
  return bytes;
}

// How many of `batches` one closure takes: at most `most`, and as many as keep its arguments
// within one message's data (kChunkBytes), but at least one: an execution of larger batches is
// several closures.
std::size_t batches_per_closure(std::span<const data::Element> batches, std::size_t most) {
  std::size_t n = 0, bytes = 0;
  for (; n < std::min(most, batches.size()); ++n) {
    bytes += bytes_of(batches[n]);
    if (n > 0 && bytes > distribute::parameter_server::kChunkBytes) break;
  }
  return std::max<std::size_t>(n, 1);
}

// A train step's last argument, per step (a row each, int64): the step (which keys training-time
// randomness), the first of the step's rows the closure trains on, how many, the step's batch
// size (by which the loss is averaged), and the batch's position (input_positions.h: lineage,
// mark, index, digest; lineage -1 when the batches are the closure's other arguments).
constexpr int64_t kWhereColumns = 8;

// The batches of a closure: its arguments but the last (which says where they lie, or how many
// there are), cut into `steps` batches of as many tensors each.
std::vector<std::vector<Tensor>> closure_batches(const distribute::ClosureArgs& args,
                                                 int64_t steps) {
  const auto per_batch = static_cast<int64_t>(args.size() - 1) / std::max<int64_t>(steps, 1);
  WEFT_CHECK(steps > 0 && per_batch * steps + 1 == static_cast<int64_t>(args.size()),
             InvalidArgument)
      << "fit's steps take each batch's tensors, then one tensor about them: " << args.size()
      << " arguments cannot be " << steps << " batches";
  std::vector<std::vector<Tensor>> batches(static_cast<size_t>(steps));
  for (int64_t i = 0; i < per_batch * steps; ++i) {
    batches[static_cast<size_t>(i / per_batch)].push_back(args.tensor(static_cast<size_t>(i)));
  }
  return batches;
}

// What a worker's train step trains on: the batches its closure carries, or those this worker
// reads at the positions the closure names (its reader made at the first such closure: evaluate
// never sends one), prepared as fit's and cut to the closure's rows.
class TrainBatches {
 public:
  TrainBatches(distribute::ParameterServerStrategy strategy, data::Dataset dataset,
               std::optional<int64_t> steps_per_epoch,
               std::function<data::Element(data::Element)> prepare)
      : source_(
            Source{std::move(strategy), std::move(dataset), steps_per_epoch, std::move(prepare)}) {}

  // `where`: the closure's last argument, kWhereColumns per step. (A worker runs one closure at
  // a time: the lock only keeps close() from pulling the reader from under one.)
  std::vector<std::vector<Tensor>> of(const distribute::ClosureArgs& args,
                                      const std::vector<int64_t>& where) {
    const auto steps = static_cast<int64_t>(where.size()) / kWhereColumns;
    if (where[4] < 0) return closure_batches(args, steps);
    std::lock_guard lock(mu_);
    WEFT_CHECK(source_.has_value(), FailedPrecondition)
        << "fit: a closure of a fit this worker no longer serves";
    if (!reader_) {
      reader_.emplace(mark_store(source_->strategy), source_->dataset, source_->steps_per_epoch);
    }
    std::vector<std::vector<Tensor>> batches;
    for (int64_t k = 0; k < steps; ++k) {
      const int64_t* w = &where[static_cast<size_t>(kWhereColumns * k)];
      data::Element batch = source_->prepare(reader_->batch({w[4], w[5], w[6], w[7]}));
      if (w[2] != w[3]) {  // this worker's slice of the step's batch
        for (Tensor& t : batch) t = slice(t, {Slice{w[1], w[1] + w[2]}});
      }
      batches.push_back(std::move(batch));
    }
    return batches;
  }

  // Lets go of the strategy, the data and fit's `prepare` once the worker serves no more: the
  // registry keeps the train step, and this with it, until the process ends.
  void close() {
    std::lock_guard lock(mu_);
    reader_.reset();
    source_.reset();
  }

 private:
  struct Source {
    distribute::ParameterServerStrategy strategy;  // a handle, which keeps the task's services
    data::Dataset dataset;
    std::optional<int64_t> steps_per_epoch;
    std::function<data::Element(data::Element)> prepare;
  };
  std::mutex mu_;
  std::optional<Source> source_;
  std::optional<PositionedInput> reader_;
};

// On a worker or ps task, for fit or evaluate: serves the chief's closures until the chief is
// done. A worker builds an unbuilt model alike (its variables made in the same order as
// everywhere, and so bound to the same places) from the dataset's first batch, which is read no
// further here, and registers the model's train and test steps; a ps task serves its variables.
// `prepare`: fit's, for the batches a worker reads itself (fit_on_parameter_servers).
void serve_the_chief(Model& model, const distribute::ParameterServerStrategy& strategy,
                     const data::Dataset& dataset, std::optional<int64_t> steps_per_epoch,
                     const std::function<data::Element(data::Element)>& prepare) {
  ModelImpl& m = model.model();
  std::shared_ptr<TrainBatches> input;  // a worker's
  if (strategy.task().rfind("ps:", 0) != 0) {
    if (!m.built()) EpochReader(dataset, steps_per_epoch).build(m);
    // `model` itself (its steps may be overridden), which outlives the closures.
    Model* self = &model;
    input = std::make_shared<TrainBatches>(strategy, dataset, steps_per_epoch, prepare);
    // The arguments: each step's batch (a slice of the step's, in synchronous mode) unless
    // the worker reads it, then where their rows lie (kWhereColumns per step). Each step reads
    // the variables as the steps before it in the closure left them (RemoteVariable applies
    // their updates to the copies read).
    distribute::register_function(
        step_function(kTrainStep, strategy).name,
        [self, input](const distribute::ClosureArgs& args) {
          const Tensor& where = args.tensor(args.size() - 1);
          WEFT_CHECK(where.rank() == 2 && where.dim(1) == kWhereColumns, InvalidArgument)
              << "fit's train step takes where its rows lie as (steps, " << kWhereColumns
              << ") int64 values, got shape " << shape_str(where.shape());
          const std::vector<int64_t> at = where.to_vector<int64_t>();
          ModelImpl& impl = self->model();
          std::vector<Tensor> logs;
          for (const std::vector<Tensor>& batch : input->of(args, at)) {
            const int64_t* w = &at[static_cast<size_t>(kWhereColumns) * logs.size()];
            distribute::BatchSliceScope slice({w[0], w[1], w[2], w[3]});
            logs.push_back(pack_partial_logs(impl, impl.train_loss, self->train_step(batch)));
          }
          return logs;
        });
    // The arguments: each batch's tensors, then their count (a 1-element int64 tensor).
    distribute::register_function(
        step_function(kTestStep, strategy).name, [self](const distribute::ClosureArgs& args) {
          const int64_t batches = args.tensor(args.size() - 1).item<int64_t>();
          ModelImpl& impl = self->model();
          std::vector<Tensor> logs;
          for (const std::vector<Tensor>& batch : closure_batches(args, batches)) {
            logs.push_back(pack_partial_logs(impl, impl.test_loss, self->test_step(batch)));
          }
          return logs;
        });
  }
  struct Closing {  // however join() ends
    std::shared_ptr<TrainBatches> input;
    ~Closing() {
      if (input) input->close();
    }
  } closing{input};
  strategy.join();  // until the chief's program is done
}

// On the chief: evaluates `dataset` on the workers of `coordinator`: closures of
// steps_per_execution batches, two per worker in flight, merged in the dataset's order as they
// return.
std::map<std::string, double> evaluate_on_workers(Model& model, const data::Dataset& dataset,
                                                  distribute::ClusterCoordinator& coordinator) {
  ModelImpl& m = model.model();
  const distribute::ParameterServerStrategy strategy(m.strategy);
  const distribute::RemoteFunction test_step = step_function(kTestStep, strategy);
  const std::size_t window = 2 * static_cast<std::size_t>(coordinator.num_workers());
  // With backup workers, a worker with nothing queued runs a batch that another still runs (one
  // frozen holds no evaluation up); a test step stages no update, so either run's logs will do.
  const distribute::ScheduleOptions options{.commit = false,
                                            .backup_runs = strategy.backup_workers() > 0};
  std::deque<std::pair<distribute::RemoteValue, int64_t>> running;  // with its batches
  std::map<std::string, double> logs;
  auto finish_oldest = [&] {
    auto [closure, batches] = std::move(running.front());
    running.pop_front();
    std::vector<Tensor> out;
    try {
      out = fetch_logs(closure, batches, "evaluate");
    } catch (const Cancelled&) {
      coordinator.join();  // raises the error that cancelled it, which names its cause
      throw;
    }
    for (const Tensor& t : out) {
      logs = merge_logs(m, m.test_loss, {unpack_partial_logs(m, m.test_loss, t)});
    }
  };
  std::vector<data::Element> batches;
  auto schedule = [&] {
    const std::size_t n =
        batches_per_closure(batches, static_cast<std::size_t>(m.steps_per_execution));
    std::vector<distribute::ClosureArgument> args;
    for (std::size_t i = 0; i < n; ++i)
      args.insert(args.end(), batches[i].begin(), batches[i].end());
    args.emplace_back(Tensor::from_vector<int64_t>({static_cast<int64_t>(n)}));
    running.emplace_back(coordinator.schedule(test_step, args, options), static_cast<int64_t>(n));
    batches.erase(batches.begin(), batches.begin() + static_cast<std::ptrdiff_t>(n));
    while (running.size() >= window) finish_oldest();
  };
  model.reset_metrics();
  for (const data::Element& batch : dataset) {
    m.build_on(batch);  // an unbuilt model, alike on every task (serve_the_chief)
    batches.push_back(batch);
    if (static_cast<int64_t>(batches.size()) == m.steps_per_execution) schedule();
  }
  while (!batches.empty()) schedule();
  while (!running.empty()) finish_oldest();
  model.reset_metrics();
  return logs;
}

}  // namespace

std::map<std::string, double> evaluate_on_parameter_servers(Model& model,
                                                            const data::Dataset& dataset) {
  distribute::ParameterServerStrategy strategy(model.model().strategy);
  strategy.next_call();  // counted on every task, as fit counts (its first_call)
  if (!strategy.is_chief()) {
    serve_the_chief(model, strategy, dataset, std::nullopt,
                    [](data::Element batch) { return batch; });
    return {};
  }
  WEFT_CHECK(model.compiled(), FailedPrecondition)
      << "Model \"" << model.model().name()
      << "\" must be compiled before evaluation: call compile()";
  distribute::ClusterCoordinator coordinator(strategy);
  return evaluate_on_workers(model, dataset, coordinator);
}

train::History fit_on_parameter_servers(
    Model& model, const data::Dataset& dataset, const FitOptions& options,
    const std::function<data::Element(data::Element)>& prepare) {
  ModelImpl& m = model.model();
  distribute::ParameterServerStrategy strategy(m.strategy);
  // A worker serves the chief's whole program from its first call (serve_the_chief), with that
  // call's data only: only the program's first call may have the workers read its batches.
  const bool first_call = strategy.next_call() == 0;
  if (!strategy.is_chief()) {
    serve_the_chief(model, strategy, dataset, options.steps_per_epoch, prepare);
    return {};
  }

  EpochReader reader(dataset, options.steps_per_epoch);
  const std::optional<int64_t>& steps = reader.steps();
  reader.build(m);
  // With an epoch of known size the workers read the batches themselves, at the positions the
  // closures carry (input_positions.h); otherwise (each epoch a fresh pass, whose end only
  // reading finds), and in a later fit of the program, the batches travel with the closures.
  std::optional<InputMarks> marks;
  if (reader.kept() != nullptr && first_call) marks.emplace(mark_store(strategy));
  // The optimizer's slots, which live beside their variables on the ps tasks: a backup saves and
  // restores them through these.
  m.optimizer.build(m.trainable_variables());
  distribute::ClusterCoordinator coordinator(strategy);
  const distribute::RemoteFunction train_step = step_function(kTrainStep, strategy);
  const bool sync = strategy.synchronous();
  const int64_t workers = coordinator.num_workers();
  // Asynchronous: closures of steps_per_execution (N) steps, whose updates are applied at their
  // commit, max_staleness / N + 1 of them in flight (by default two per worker when N = 1, one
  // closure at a time once N > max_staleness), so that a step misses the updates of at most
  // max_staleness steps, the other closures' in flight (it reads its own closure's earlier
  // steps). Synchronous: one step, cut among the workers but the backups.
  const int64_t per_closure = sync ? 1 : m.steps_per_execution;
  const std::size_t window = static_cast<std::size_t>(strategy.max_staleness() / per_closure) + 1;
  std::vector<train::Callback> callbacks = options.callbacks;
  if (options.verbose > 0) callbacks.push_back(train::ProgbarLogger(options.verbose));
  // The rows each committed closure trained, saved with every backup (ledger.h).
  Ledger ledger;
  FitCallbacks fit_callbacks(callbacks, &model, options.epochs, steps, reader.kept(), &ledger);
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
  int epoch = start.epoch;
  int64_t epoch_rows = 0;  // of the epoch, scheduled so far
  // Schedules epoch steps `step`, `step` + 1, ... on `batches` (one closure; in synchronous
  // mode one step, a closure per worker), training steps `run_step`, ... (epoch × steps + step
  // when the epoch's size is known, as fit's: it keys training-time randomness). The batches
  // travel with the closure unless `positions` says where the workers read them.
  auto schedule_steps = [&](int64_t step, int64_t run_step, std::span<const data::Element> batches,
                            std::span<const BatchPosition> positions, bool ends_execution) {
    Pending p{step, static_cast<int64_t>(batches.size()), 0, epoch, epoch_rows, ends_execution, {}};
    for (const data::Element& batch : batches) p.examples += batch[0].dim(0);
    epoch_rows += p.examples;
    // In synchronous mode (one batch) a closure per worker's slice, the backup workers' aside
    // (they run parts others still run): fewer for a short batch.
    const int64_t parts = sync ? std::min(workers - strategy.backup_workers(), p.examples) : 1;
    for (int64_t k = 0; k < parts; ++k) {
      std::vector<distribute::ClosureArgument> args;
      std::vector<int64_t> where;
      for (size_t i = 0; i < batches.size(); ++i) {
        const int64_t rows = batches[i][0].dim(0);
        auto [lo, hi] = distribute::row_range(rows, parts, k);
        const BatchPosition at = positions.empty() ? BatchPosition{} : positions[i];
        if (positions.empty()) {
          for (const Tensor& t : batches[i]) {
            args.emplace_back(parts == 1 ? t : slice(t, {Slice{lo, hi}}));
          }
        }
        where.insert(where.end(), {run_step + static_cast<int64_t>(i), lo, hi - lo, rows,
                                   at.lineage, at.mark, at.index, at.digest});
      }
      args.emplace_back(Tensor::from_vector<int64_t>(where, {p.steps, kWhereColumns}));
      p.parts.push_back(coordinator.schedule(
          train_step, args,
          {.commit = !sync, .steps = p.steps, .backup_runs = strategy.backup_workers() > 0}));
    }
    running.push_back(std::move(p));
  };
  // The batch callbacks' execution so far: examples and steps merged since they last ran, and
  // the largest staleness of its closures (an execution of large batches may be several), and
  // the parts a backup run trained.
  int64_t execution_examples = 0, execution_steps = 0, execution_staleness = 0;
  int64_t execution_backup_wins = 0;
  // Merges the oldest scheduled steps' logs (waiting for their closures; in synchronous mode,
  // committing them as one step) and, at an execution's end, runs the callbacks.
  bool stopping_announced = false;
  auto finish_oldest = [&] {
    Pending p = std::move(running.front());
    running.pop_front();
    std::vector<std::vector<PartialLogs>> steps_parts(static_cast<size_t>(p.steps));
    try {
      for (const distribute::RemoteValue& part : p.parts) {
        std::vector<Tensor> out = fetch_logs(part, p.steps, "fit");
        for (size_t i = 0; i < out.size(); ++i) {
          steps_parts[i].push_back(unpack_partial_logs(m, m.train_loss, out[i]));
        }
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
    ledger.add(p.epoch, p.first_row, p.examples);
    for (const std::vector<PartialLogs>& parts : steps_parts) {
      logs = merge_logs(m, m.train_loss, parts);
    }
    execution_examples += p.examples;
    execution_steps += p.steps;
    if (!sync) execution_staleness = std::max(execution_staleness, p.parts[0].staleness());
    for (const distribute::RemoteValue& part : p.parts)
      execution_backup_wins += part.won_by_backup();
    if (!p.ends_execution) return;
    for (const train::Callback& c : callbacks) {
      c.impl().set_batch_examples(execution_examples);
      c.impl().set_batch_steps(execution_steps);
      c.impl().set_batch_staleness(execution_staleness);
      c.impl().set_batch_backup_wins(execution_backup_wins);
      c.impl().set_steps_in_flight(static_cast<int64_t>(running.size()));
      c.impl().on_train_batch_end(p.step + p.steps - 1, logs);
    }
    execution_examples = execution_steps = execution_staleness = execution_backup_wins = 0;
    // Training stops early (a preemption's backup): a worker told to go from now on stays
    // until the chief is done (ParameterServerStrategy::leave).
    if (m.stop_training && !stopping_announced) {
      strategy.announce_stopping();
      stopping_announced = true;
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
    execution_examples = execution_steps = execution_staleness = execution_backup_wins = 0;
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
  int64_t first_step = start.step;
  bool new_lineage = true;  // the kept iterator starts a run: at fit's start, after a rollback
  while (epoch < options.epochs && !m.stop_training) {
    model.reset_metrics();
    for (const train::Callback& c : callbacks) c.impl().on_epoch_begin(epoch, logs);
    reader.begin_epoch();
    if (marks && new_lineage) {
      marks->begin_lineage(reader.next_state());
    } else if (marks) {
      marks->mark(reader.next_state());
    }
    new_lineage = false;
    logs.clear();
    int64_t trained = 0;
    // A run resumed from a backup made mid-epoch goes on after the rows it holds. (A backup of
    // a weft before the ledger holds none: that epoch's rows are not checked.)
    epoch_rows = ledger.rows(epoch);
    const bool checked = first_step == 0 || epoch_rows > 0;
    std::exception_ptr failed;
    try {
      // An execution at a time: steps_per_execution steps (fewer at the epoch's end) between
      // two calls of the batch callbacks.
      for (int64_t step = first_step; (!steps || step < *steps) && !m.stop_training;) {
        const int64_t wanted =
            steps ? std::min(m.steps_per_execution, *steps - step) : m.steps_per_execution;
        std::vector<data::Element> batches;
        std::vector<BatchPosition> positions;
        std::optional<data::Element> batch;
        while (static_cast<int64_t>(batches.size()) < wanted && (batch = reader.next())) {
          if (marks) positions.push_back(marks->next(*batch));
          batches.push_back(marks ? std::move(*batch) : prepare(std::move(*batch)));
        }
        if (!batches.empty()) {
          for (const train::Callback& c : callbacks) c.impl().on_train_batch_begin(step, logs);
        }
        for (size_t k = 0, n = 0; k < batches.size(); k += n) {
          // Batches the workers read take no room in the closure's message.
          n = marks ? std::min(batches.size() - k, static_cast<size_t>(per_closure))
                    : batches_per_closure(std::span(batches).subspan(k),
                                          static_cast<size_t>(per_closure));
          schedule_steps(step, steps ? epoch * *steps + step : unsized_steps,
                         std::span(batches).subspan(k, n),
                         marks ? std::span<const BatchPosition>(positions).subspan(k, n)
                               : std::span<const BatchPosition>(),
                         k + n == batches.size());
          step += static_cast<int64_t>(n);
          if (!steps) unsized_steps += static_cast<int64_t>(n);
          trained += static_cast<int64_t>(n);
          // A callback may stop training at an execution's end: the steps already scheduled
          // still run.
          while (running.size() >= window ||
                 (!running.empty() && (m.stop_training || quiet_wanted()))) {
            finish_oldest();
          }
        }
        if (static_cast<int64_t>(batches.size()) < wanted) {
          WEFT_CHECK(!options.steps_per_epoch, OutOfRange)
              << "fit: the dataset ran out of data after " << step << " steps of epoch " << epoch
              << " (steps_per_epoch = " << *options.steps_per_epoch << "); use repeat()";
          break;
        }
      }
      while (!running.empty()) finish_oldest();
      WEFT_CHECK(trained > 0 || steps, InvalidArgument) << "fit: the training dataset is empty";
      if (!m.stop_training && checked) ledger.check_complete(epoch, epoch_rows);
      // A ps task lost while the epoch ends (validation's closures fail, or a backup cannot pull
      // its variables) is recovered as one lost during the steps: the epoch's end comes again.
      if (options.validation_data) {
        for (const auto& [k, v] :
             evaluate_on_workers(model, *options.validation_data, coordinator)) {
          logs["val_" + k] = v;
        }
        for (const train::Callback& c : callbacks) c.impl().on_test_end(logs);
      }
      for (const train::Callback& c : callbacks) c.impl().on_epoch_end(epoch, logs);
    } catch (const Error&) {
      failed = std::current_exception();
    }
    if (failed) {
      const train::ResumePoint at = recover(failed);
      epoch = at.epoch;
      first_step = at.step;
      new_lineage = true;
      continue;
    }
    history.epoch.push_back(epoch);
    for (const auto& [k, v] : logs) history.history[k].push_back(v);
    ++epoch;
    first_step = 0;
  }
  fit_callbacks.train_end(logs);
  return history;
}

}  // namespace weft::nn::internal
