// Callbacks for Model::fit, as Keras's: hooks at the start and end of training, epochs and
// batches, receiving the running logs (loss and metrics). A Callback is a handle to a CallbackImpl;
// the built-ins are the classes below.
//
//   model.fit(ds, {.epochs = 20, .callbacks = {weft::train::EarlyStopping({.patience = 2}),
//                                             weft::train::CSVLogger("log.csv")}});
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/data/dataset.h"

namespace weft::nn {
class Model;
}

namespace weft::train {

using Logs = std::map<std::string, double>;

// Where a resumed fit() starts: an epoch, and a step within it.
struct ResumePoint {
  int epoch = 0;
  int64_t step = 0;
  auto operator<=>(const ResumePoint&) const = default;
};

class CallbackImpl {
 public:
  virtual ~CallbackImpl() = default;
  virtual void on_train_begin(const Logs& logs) {}
  virtual void on_train_end(const Logs& logs) {}
  virtual void on_epoch_begin(int epoch, const Logs& logs) {}
  virtual void on_epoch_end(int epoch, Logs& logs) {}  // may add entries (e.g. "lr")
  virtual void on_train_batch_begin(int64_t step, const Logs& logs) {}
  virtual void on_train_batch_end(int64_t step, const Logs& logs) {}
  virtual void on_test_end(const Logs& logs) {}
  // Where fit() should start (BackupAndRestore resumes); nullopt: where it would anyway.
  // Called once before on_train_begin, with the model built and set_iterator done.
  virtual std::optional<ResumePoint> resume_point() { return std::nullopt; }
  void set_model(nn::Model* model) { model_ = model; }
  void set_params(int epochs, std::optional<int64_t> steps) {
    epochs_ = epochs;
    steps_ = steps;
  }
  // Examples in the batch just trained, set by fit() before on_train_batch_end.
  void set_batch_examples(int64_t n) { batch_examples_ = n; }
  // The iterator fit() reads across epochs (null for a dataset of unknown size).
  void set_iterator(data::Dataset::Iterator* it) { iterator_ = it; }

 protected:
  int64_t batch_examples_ = 0;
  data::Dataset::Iterator* iterator_ = nullptr;
  nn::Model* model_ = nullptr;
  int epochs_ = 0;
  std::optional<int64_t> steps_;  // steps per epoch when known
};

class Callback {
 public:
  explicit Callback(std::shared_ptr<CallbackImpl> impl) : impl_(std::move(impl)) {}
  CallbackImpl& impl() const { return *impl_; }

 private:
  std::shared_ptr<CallbackImpl> impl_;
};

// What fit() returns: each log's value per epoch ("loss", "accuracy", "val_loss", ...).
struct History {
  std::vector<int> epoch;
  std::map<std::string, std::vector<double>> history;
};

struct FitOptions {
  int epochs = 1;
  std::optional<data::Dataset> validation_data{};
  std::vector<Callback> callbacks{};
  std::optional<int64_t> steps_per_epoch{};  // with it, one iterator runs across epochs
  int initial_epoch = 0;
  int verbose = 1;  // 0: silent, 1: progress bar (plain lines off a terminal), 2: a line per epoch
};

// Keras's progress bar: fit() adds one for verbose 1 and 2.
class ProgbarLogger : public Callback {
 public:
  explicit ProgbarLogger(int verbose = 1);
};

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0;
  int patience = 0;
  std::string mode = "auto";  // "min", "max", or from the name ("acc"/"accuracy" → max)
  bool restore_best_weights = false;
};
class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options = {});
};

// lr = schedule(epoch, current lr), set at each epoch's start; logs "lr".
class LearningRateScheduler : public Callback {
 public:
  explicit LearningRateScheduler(std::function<double(int epoch, double lr)> schedule);
};

// One CSV row per epoch: epoch and every log, columns fixed by the first epoch.
class CSVLogger : public Callback {
 public:
  explicit CSVLogger(std::string filename, bool append = false);
};

struct ModelCheckpointOptions {
  std::string monitor = "val_loss";
  bool save_best_only = false;
  std::string mode = "auto";
  int max_to_keep = 5;
};
// Saves the model's variables (a weft checkpoint, SPEC §5) under `directory` after each epoch, or
// only when `monitor` improves.
class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(std::string directory, ModelCheckpointOptions options = {});
};

// TensorBoard event files under `log_dir`/train and /validation: every log per epoch
// ("epoch_loss", ...), the learning rate at each epoch's end when it follows a schedule
// ("epoch_learning_rate"), and training loss/metrics every `update_freq` batches ("batch_loss",
// ...) when update_freq > 0.
class TensorBoard : public Callback {
 public:
  explicit TensorBoard(std::string log_dir, int64_t update_freq = 0);
};

// Fault tolerance (keras.callbacks.BackupAndRestore): saves the model, the optimizer, the data
// iterator's position and the progress in `backup_dir` at each epoch's end, and every save_freq
// steps if given; a restarted fit() restores the newest intact backup and continues exactly where
// it was saved. The backup is deleted when fit() completes.
class BackupAndRestore : public Callback {
 public:
  explicit BackupAndRestore(std::string backup_dir, std::optional<int64_t> save_freq = {});
};

}  // namespace weft::train
