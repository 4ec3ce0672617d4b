// What Model::fit takes and gives: the callback interface (Keras's Callback: hooks at the start
// and end of training, epochs and batches, receiving the running logs), FitOptions and History.
// The built-in callbacks (progress bar, EarlyStopping, BackupAndRestore, TensorBoard, ...) are in
// weft/train/callbacks.h, which also names these types weft::train::Callback, ... as before.
//
//   class PrintLoss : public weft::nn::CallbackImpl {
//     void on_epoch_end(int epoch, weft::nn::Logs& logs) override { ... }
//   };
//   model.fit(ds, {.epochs = 3, .callbacks = {weft::nn::Callback(std::make_shared<PrintLoss>())}});
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/checkpoint/trackable.h"
#include "weft/data/dataset.h"

namespace weft::nn {

class Model;

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
  // fit() is leaving by an exception after on_train_begin (on_train_end is not called then, as
  // in Keras): give back what on_train_begin took (BackupAndRestore's SIGTERM handler). Must not
  // throw.
  virtual void on_train_abort() noexcept {}
  // Where fit() should start (BackupAndRestore resumes); nullopt: where it would anyway.
  // Called once before on_train_begin, with the model built and set_iterator done, and again
  // when a parameter-server fit rolls back to the newest backup (it lost a ps task).
  virtual std::optional<ResumePoint> resume_point() { return std::nullopt; }
  // Whether resume_point() restores saved training state (BackupAndRestore).
  virtual bool restores_backups() const { return false; }
  // Whether only the chief of a cluster runs it (callbacks that print or write files: progress,
  // checkpoints, TensorBoard, CSV); the other workers' fit leaves it out.
  virtual bool chief_only() const { return false; }
  // Steps to profile (TensorBoard's profile_batch): batches first..last of the run, counted from
  // 1 across epochs as Keras counts them, and the directory their traces go under. Every worker
  // of a cluster profiles them, also when the callback itself runs on the chief only.
  struct ProfileSteps {
    int64_t first = 0;
    int64_t last = 0;
    std::string log_dir;
  };
  virtual std::optional<ProfileSteps> profile_steps() const { return std::nullopt; }
  void set_model(Model* model) { model_ = model; }
  void set_params(int epochs, std::optional<int64_t> steps) {
    epochs_ = epochs;
    steps_ = steps;
  }
  // Examples in the batch just trained, set by fit() before on_train_batch_end.
  void set_batch_examples(int64_t n) { batch_examples_ = n; }
  // Steps in the batch just trained, set by fit() before on_train_batch_end: with compile's
  // steps_per_execution N, the batch hooks come once per N steps (fewer at an epoch's end), as
  // Keras's: on_train_batch_begin with the first step's index, on_train_batch_end with the
  // last's, and the logs after it.
  void set_batch_steps(int64_t n) { batch_steps_ = n; }
  // Later steps already running (or applied) when on_train_batch_end comes, set by fit() before
  // it: a parameter-server fit runs several steps at once; fit() on one worker or a mirrored
  // cluster, one (0).
  void set_steps_in_flight(int64_t n) { steps_in_flight_ = n; }
  // How many other steps' updates were applied between the start of the step just trained and
  // its own (RemoteValue::staleness), set by fit() before on_train_batch_end: a parameter-server
  // fit's asynchronous steps may read values that miss as many; elsewhere 0. For a batch of
  // several steps run as several closures, the largest of theirs.
  void set_batch_staleness(int64_t n) { batch_staleness_ = n; }
  // Of the parts of the batch's steps (a synchronous parameter-server fit cuts each step's batch
  // among its workers), how many a backup run trained (backup workers: the first of a part's
  // runs to return is the one applied), set by fit() before on_train_batch_end; elsewhere 0.
  void set_batch_backup_wins(int64_t n) { batch_backup_wins_ = n; }
  // Whether it waits for a batch end with no later step in flight, to save the training state
  // there (BackupAndRestore): a fit that runs several steps at once starts no more until then.
  virtual bool wants_quiet_point() const { return false; }
  // The iterator fit() reads across epochs (null for a dataset of unknown size).
  void set_iterator(data::Dataset::Iterator* it) { iterator_ = it; }
  // A parameter-server fit's ledger of the rows its committed closures trained (ledger.h), which
  // a backup saves beside the iterator; null elsewhere.
  void set_ledger(Trackable* ledger) { ledger_ = ledger; }

 protected:
  int64_t batch_examples_ = 0;
  int64_t batch_steps_ = 1;
  int64_t steps_in_flight_ = 0;
  int64_t batch_staleness_ = 0;
  int64_t batch_backup_wins_ = 0;
  data::Dataset::Iterator* iterator_ = nullptr;
  Trackable* ledger_ = nullptr;
  Model* model_ = nullptr;
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
  // Keras's class_weight: each training example's loss is scaled by its class's weight (and by
  // its sample weight, when the dataset has one). For a model of one output whose targets are
  // integer labels (N) or (N, 1), or one-hot (N, classes); every label must have a weight.
  std::map<int64_t, double> class_weight{};
};

}  // namespace weft::nn
