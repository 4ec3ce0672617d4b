// Callbacks for Model::fit, as Keras's: hooks at the start and end of training, epochs and
// batches, receiving the running logs (loss and metrics). A Callback is a handle to a CallbackImpl;
// the built-ins are the classes below.
//
//   model.fit(ds, {.epochs = 20, .callbacks = {weft::train::EarlyStopping({.patience = 2}),
//                                             weft::train::CSVLogger("log.csv")}});
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "weft/nn/callback.h"

namespace weft::train {

// The callback interface, and fit's options and result, live with Model in weft/nn/callback.h;
// they are weft::train's too, where the built-in callbacks are.
using nn::Callback;
using nn::CallbackImpl;
using nn::FitOptions;
using nn::History;
using nn::Logs;
using nn::ResumePoint;

// Keras's progress bar: fit() adds one for verbose 1 and 2.
class ProgbarLogger : public Callback {
 public:
  explicit ProgbarLogger(int verbose = 1);
};

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0;       // an epoch must beat the best by more than this to improve on it
  int patience = 0;           // epochs without improvement, in a row, that stop training
  std::string mode = "auto";  // "min", "max", or from the name ("acc"/"accuracy" → max)
  std::optional<double> baseline{};  // the best to beat at the start (none: any first value)
  // When training stops, put back the weights of the best epoch (not when it runs to the end).
  bool restore_best_weights = false;
};
// Stops training when `monitor` has not improved for `patience` epochs in a row
// (keras.callbacks.EarlyStopping as in TF 2.4).
class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options = {});
};

// lr = schedule(epoch, current lr), set at each epoch's start; logs "lr".
class LearningRateScheduler : public Callback {
 public:
  explicit LearningRateScheduler(std::function<double(int epoch, double lr)> schedule);
};

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;  // in (0, 1): the new learning rate is lr * factor
  int patience = 10;    // epochs without improvement before the rate is cut
  std::string mode = "auto";
  double min_delta = 1e-4;  // a smaller change is no improvement
  int cooldown = 0;         // epochs after a cut before counting again
  double min_lr = 0;
  int verbose = 0;  // 1: print a line at each cut
};
// Cuts the learning rate when `monitor` stops improving (keras.callbacks.ReduceLROnPlateau); logs
// "lr". The rate becomes a constant (a schedule the optimizer followed is replaced).
class ReduceLROnPlateau : public Callback {
 public:
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});
};

// Stops training at the first batch whose loss is NaN or infinite (keras.callbacks.TerminateOnNaN).
class TerminateOnNaN : public Callback {
 public:
  TerminateOnNaN();
};

// A callback from functions (keras.callbacks.LambdaCallback); any may be left empty.
struct LambdaCallbackOptions {
  std::function<void(int epoch, const Logs& logs)> on_epoch_begin{};
  std::function<void(int epoch, Logs& logs)> on_epoch_end{};
  std::function<void(int64_t batch, const Logs& logs)> on_batch_begin{};
  std::function<void(int64_t batch, const Logs& logs)> on_batch_end{};
  std::function<void(const Logs& logs)> on_train_begin{};
  std::function<void(const Logs& logs)> on_train_end{};
};
class LambdaCallback : public Callback {
 public:
  explicit LambdaCallback(LambdaCallbackOptions functions);
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

struct TensorBoardOptions {
  // Training loss and metrics every update_freq steps ("batch_loss", ...), when positive.
  int64_t update_freq = 0;
  // Batches first..last of the run (counted from 1 across epochs, as Keras counts them) are
  // profiled into `log_dir`/train/plugins/profile/<run>/ (docs/profiler.md); {0, 0}: none.
  // Keras profiles batch 2 by default; weft profiles nothing unless asked.
  std::pair<int64_t, int64_t> profile_batch{0, 0};
};
// TensorBoard event files under `log_dir`/train and /validation: every log per epoch
// ("epoch_loss", ...), the learning rate at each epoch's end when it follows a schedule
// ("epoch_learning_rate"), and training loss/metrics every `update_freq` steps ("batch_loss",
// ...; with compile's steps_per_execution, at the batch end that reaches it) when update_freq > 0;
// and the profile of the steps profile_batch names, on every worker of a cluster.
class TensorBoard : public Callback {
 public:
  explicit TensorBoard(std::string log_dir, int64_t update_freq = 0);
  TensorBoard(std::string log_dir, TensorBoardOptions options);
};

// Fault tolerance (keras.callbacks.BackupAndRestore): saves the model, the optimizer, the data
// iterator's position and the progress in `backup_dir` at each epoch's end, and every save_freq
// steps if given; a restarted fit() restores the newest intact backup and continues exactly where
// it was saved. The backup is deleted when fit() completes.
//
// Preemption: while fit() runs, SIGTERM (to any worker of a cluster) makes every worker finish
// its current step; the job then backs up that point and fit() returns early with preempted()
// true, so that a restart loses no step. The previous SIGTERM handler is put back when fit()
// ends, also when it ends by an exception.
class BackupAndRestore : public Callback {
 public:
  explicit BackupAndRestore(std::string backup_dir, std::optional<int64_t> save_freq = {});
  // fit() stopped because of SIGTERM, after backing up.
  bool preempted() const;
  // Examples the job has trained on, counting the runs before the backup it resumed from (each
  // step's global batch).
  int64_t examples_trained() const;
};

// The exit status of a program that was preempted and backed up (EX_TEMPFAIL: run it again).
inline constexpr int kPreemptedExitStatus = 75;
// The exit status of a task that stopped because another task of its cluster failed
// (EX_PROTOCOL): `weft launch` names the task that failed first for its own reason.
inline constexpr int kPeerFailedExitStatus = 76;

}  // namespace weft::train
