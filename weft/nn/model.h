// Keras models: Sequential, and the Functional API's Model(inputs, outputs) over KerasTensors.
// A Model is a Layer (it can be called and nested), owns compile/fit/evaluate/predict, prints a
// summary, and is a Trackable, so checkpoints save its variables by name.
//
//   weft::nn::Sequential model({weft::nn::Dense(700, "relu"), weft::nn::Dense(10)});
//   model.compile(weft::optim::Adam(1e-3),
//                 weft::nn::losses::SparseCategoricalCrossentropy({.from_logits = true}),
//                 {"accuracy"});
//   weft::train::History h = model.fit(train_ds, {.epochs = 3, .validation_data = test_ds});
//
// Datasets fed to fit/evaluate yield elements whose first components are the model's inputs and
// whose remaining components are its targets, one per output: (x, y) for a plain model.
//
// Under a distribution strategy (the one whose scope() the model was made or compiled in),
// fit/evaluate/predict cut each global batch into one contiguous row slice per replica and run
// train_step/test_step/predict_step on every replica at once; losses and metrics add up over
// the whole global batch.
#pragma once

#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/checkpoint/trackable.h"
#include "weft/data/dataset.h"
#include "weft/distribute/strategy.h"
#include "weft/nn/callback.h"
#include "weft/nn/layer.h"
#include "weft/nn/losses.h"
#include "weft/nn/metrics.h"
#include "weft/optim/optimizer.h"

namespace weft::nn {

// A model's layers and how inputs flow through them; Sequential and Functional models differ only
// here. Compiled state (optimizer, loss, metrics) lives in ModelImpl itself.
class ModelImpl : public LayerImpl {
 public:
  ModelImpl(std::string class_name, std::string name)
      : LayerImpl(std::move(class_name), std::move(name)) {
    autocast_ = false;  // each layer casts its own inputs
  }
  virtual std::vector<Layer> layers() const = 0;
  virtual size_t num_inputs() const = 0;
  virtual size_t num_outputs() const = 0;
  // Output shapes (batch dimension -1) of each layer, once known, for summary().
  virtual std::vector<std::string> layer_output_shapes() const = 0;
  // The Functional API's inputs and outputs; empty for a Sequential model.
  virtual std::vector<KerasTensor> inputs() const { return {}; }
  virtual std::vector<KerasTensor> outputs() const { return {}; }
  // The base config plus "layers" (each serialize()d) and, for a Functional model, the graph:
  // "input_layers", "nodes" (each layer call, in order) and "output_layers" (weft/nn/saving.cc).
  ConfigDict get_config() const override;
  std::vector<std::shared_ptr<LayerImpl>> sublayers() const override;
  // Names the model's layers that have default names uniquely within it, in layer order, and
  // makes it their parent (LayerImpl::adopt). Models call it when their layers change.
  void adopt_layers();
  // Builds an unbuilt model by calling it, unrecorded, on the inputs of a dataset element (x, y,
  // ...), in its strategy's scope (in a cluster the variables start with the chief's values);
  // nothing for a built one.
  void build_on(const std::vector<Tensor>& element);

  optim::Optimizer optimizer;
  std::optional<losses::Loss> loss;
  // compile's `metrics`, then its `weighted_metrics` (from first_weighted_metric on).
  std::vector<metrics::Metric> compiled_metrics;
  size_t first_weighted_metric = 0;
  metrics::Mean train_loss{"loss"}, test_loss{"loss"};
  int64_t steps_per_execution = 1;  // compile's
  bool stop_training = false;
  // The strategy fit/evaluate/predict run through: the one in scope when the model was made,
  // or when it was compiled.
  distribute::Strategy strategy = distribute::get_strategy();
};

// One replica's share of a step's logs: for "loss" and each compiled metric, the sum of its
// values and their count over the replica's rows. fit and evaluate add the replicas' shares in
// replica order and report total / count, so logs are exact over the global batch.
using PartialLogs = std::map<std::string, metrics::Partial>;

// compile's settings besides the optimizer, loss and metrics (Keras 2.4's keyword arguments).
struct CompileOptions {
  // Steps fit runs between two calls of the batch-level callbacks, and, under
  // ParameterServerStrategy, per closure a worker runs (evaluation: batches per closure). The
  // steps themselves are those of steps_per_execution = 1: only the batch callbacks' cadence
  // and the round trips per step change. At least 1.
  int64_t steps_per_execution = 1;
};

class Model : public Layer, public Trackable {
 public:
  Model() = default;
  // The Functional API: every input must be an Input(), every output computed from them.
  Model(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs,
        const std::string& name = "");
  Model(const KerasTensor& input, const KerasTensor& output, const std::string& name = "");

  // metrics by Keras name ("accuracy", ...); or Metric objects with the other overload.
  // `metrics` are weighted by the outputs' masks only, `weighted_metrics` also by the sample
  // weights (and fit's class_weight), as Keras's; a weighted metric whose name a metric already
  // has is renamed "weighted_<name>" (Keras's rule), and any other repeated name is refused.
  void compile(const optim::Optimizer& optimizer, const losses::Loss& loss,
               const std::vector<std::string>& metrics = {},
               const std::vector<std::string>& weighted_metrics = {},
               const CompileOptions& options = {});
  void compile(const optim::Optimizer& optimizer, const losses::Loss& loss,
               const std::vector<metrics::Metric>& metrics,
               const std::vector<metrics::Metric>& weighted_metrics = {},
               const CompileOptions& options = {});
  // compile(optimizer, loss, {"accuracy", "AUC"}), or with options:
  // compile(optimizer, loss, {"accuracy"}, {.steps_per_execution = 8}).
  void compile(const optim::Optimizer& optimizer, const losses::Loss& loss,
               std::initializer_list<const char*> metrics, const CompileOptions& options = {});

  // Defined in weft/train/fit.cc, with the built-in callbacks it adds (the progress bar).
  History fit(const data::Dataset& dataset, const FitOptions& options = {});
  // loss and each metric over the dataset, as Keras's return_dict=True. Defined in
  // weft/train/fit.cc: under ParameterServerStrategy the workers evaluate, a batch each.
  std::map<std::string, double> evaluate(const data::Dataset& dataset, int verbose = 0);
  // Outputs for every element of `dataset` (inputs only, or inputs and targets), concatenated.
  // Under a strategy each global batch's rows are cut among the replicas (in a cluster, every
  // worker's), and every worker gets all rows, in the dataset's order.
  std::vector<Tensor> predict(const data::Dataset& dataset);
  Tensor predict(const Tensor& x, int64_t batch_size = 32);

  // One step of fit/evaluate on a global batch, through the model's strategy, returning the
  // running logs (loss and metrics).
  std::map<std::string, double> train_on_batch(const std::vector<Tensor>& batch);
  std::map<std::string, double> test_on_batch(const std::vector<Tensor>& batch);
  void reset_metrics();  // compiled metrics and loss trackers

  // What one replica does with its slice of a global batch (Keras's train_step, test_step and
  // predict_step); override them to change a step. train_step computes the loss averaged over
  // the global batch (distribute::compute_average_loss), its gradients and
  // optimizer.apply_gradients (which sums the replicas' gradients and applies once), and returns
  // the slice's partial logs. Under op determinism it cuts the global batch into
  // config::micro_batches() micro-batches and sums their gradients in one fixed tree, so the
  // weights do not depend on the replica count (DISTRIBUTED.md §2). A replica with no rows
  // contributes zero gradients and empty partials.
  virtual PartialLogs train_step(const std::vector<Tensor>& batch);
  virtual PartialLogs test_step(const std::vector<Tensor>& batch);
  virtual std::vector<Tensor> predict_step(const std::vector<Tensor>& batch);
  // One training step on a global batch already cut among the replicas (fit's step).
  std::map<std::string, double> train_on_distributed(const distribute::DistributedElement& batch);
  // The strategy this model runs under.
  const distribute::Strategy& distribute_strategy() const { return model().strategy; }

  // Saves the model to `dir` (weft/nn/saving.h): its architecture, weights and, when compiled
  // and include_optimizer, the compile settings and the optimizer's state. `dir` is replaced
  // atomically. Under a strategy every worker calls it and the chief writes (the variables are
  // mirrored); it returns once the save is complete, and throws on every worker if it failed.
  // FailedPrecondition for a model that was never built (call it on a batch, or fit, first).
  struct SaveOptions {
    bool include_optimizer = true;
  };
  void save(const std::string& dir, const SaveOptions& options) const;
  void save(const std::string& dir) const { save(dir, SaveOptions{}); }
  ConfigDict get_config() const { return model().get_config(); }
  std::vector<KerasTensor> inputs() const { return model().inputs(); }
  std::vector<KerasTensor> outputs() const { return model().outputs(); }

  // Keras's table: each layer's name and class, output shape and parameter count, then totals.
  void summary(std::ostream& os = std::cout) const;
  std::vector<Layer> layers() const { return model().layers(); }
  // Keras's model.losses: every layer's regularization penalties (weft/nn/layer.h).
  std::vector<Tensor> losses() const { return model().losses(); }
  const optim::Optimizer& optimizer() const { return model().optimizer; }
  bool compiled() const { return model().loss.has_value(); }
  // Set by a callback (EarlyStopping, TerminateOnNaN) or the user's code to end fit() after the
  // current step, as Keras's: the epoch ends there (validation and on_epoch_end still run) and
  // no other epoch begins.
  void set_stop_training(bool stop) const { model().stop_training = stop; }
  bool stop_training() const { return model().stop_training; }

  // Trackable: every variable (trainable or not) by its name.
  std::vector<std::pair<std::string, Variable>> tracked_variables() const override;
  // Hex digest of every variable's bytes in tracked_variables() order: equal iff bit-identical.
  std::string weights_fingerprint() const;

  ModelImpl& model() const;
  // A handle on a model implementation (what load_model and deserialize give back).
  explicit Model(std::shared_ptr<ModelImpl> impl);
};

class Sequential : public Model {
 public:
  explicit Sequential(const std::vector<Layer>& layers = {}, const std::string& name = "");
  // Appends a layer (before the model is built).
  void add(const Layer& layer) const;
};

}  // namespace weft::nn
