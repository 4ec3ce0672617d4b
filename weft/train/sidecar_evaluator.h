// weft::train::SidecarEvaluator: TensorFlow's side-car evaluation (tf.keras.experimental.
// SidecarEvaluator, the `evaluator` task of a parameter-server job). It runs beside training,
// in a process of its own, and evaluates each checkpoint the chief writes (ModelCheckpoint,
// `weft train --checkpoint-dir`) as it appears: it restores the model's variables from it and
// runs Model::evaluate on the data, in one process, so each example is counted once and the
// workers lose no time to it.
//
//   weft::train::SidecarEvaluator evaluator(model, test_ds, {.checkpoint_dir = "/ckpts",
//                                                             .final_step = 3});
//   for (const auto& e : evaluator.start()) std::printf("%s: %f\n", e.checkpoint.c_str(),
//                                                          e.logs.at("accuracy"));
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "weft/data/dataset.h"
#include "weft/nn/model.h"

namespace weft::train {

struct SidecarEvaluatorOptions {
  // Where the chief's checkpoints appear (train::Checkpoint's layout, `ckpt-<step>`); they must
  // hold the model under "model" (ModelCheckpoint's and BackupAndRestore's do).
  std::string checkpoint_dir;
  // Stop after evaluating a checkpoint of this step or later (ModelCheckpoint numbers them by
  // epoch: the epoch count), or after max_evaluations, whichever comes first. Without either,
  // evaluation goes on until `timeout` passes without a new checkpoint.
  std::optional<int64_t> final_step{};
  std::optional<int64_t> max_evaluations{};
  // How long to wait for the next checkpoint (TensorFlow's checkpoints_iterator waits without
  // end by default): DeadlineExceeded naming the directory when it passes with a final_step or
  // max_evaluations not reached; the end of evaluation otherwise.
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  // TensorBoard event files under `log_dir`/evaluation: "evaluation_<name>" per checkpoint at its
  // step. None when empty.
  std::string log_dir{};
  // 1: a line per evaluation on stdout ("evaluator: ckpt-2: accuracy: 0.8512  loss: 0.4170").
  int verbose = 1;
};

// One checkpoint's evaluation.
struct SidecarEvaluation {
  std::string checkpoint;  // its directory
  int64_t step = 0;
  std::map<std::string, double> logs;  // Model::evaluate's
};

class SidecarEvaluator {
 public:
  // `model` must be compiled (its loss and metrics are what evaluation reports) and made as the
  // chief makes it, so that its variables have the checkpoint's names.
  SidecarEvaluator(nn::Model model, data::Dataset data, SidecarEvaluatorOptions options);

  // Evaluates the newest checkpoint, then each newer one as it appears (one written while an
  // evaluation ran is skipped for the newest: side-car evaluation keeps up, it does not queue),
  // until final_step or max_evaluations; returns every evaluation, oldest first. A damaged
  // checkpoint is skipped, saying so (the next one is waited for).
  std::vector<SidecarEvaluation> start();

 private:
  nn::Model model_;
  data::Dataset data_;
  SidecarEvaluatorOptions options_;
};

}  // namespace weft::train
