// weft::train::Checkpoint: saves and restores several Trackable objects together, each under its
// own name, in numbered checkpoints `<directory>/<checkpoint_name>-<step>` (tf.train.Checkpoint
// and tf.train.CheckpointManager in one). Keeps the newest `max_to_keep`; restore_latest() skips
// a damaged newest checkpoint for the one before it, saying which and why.
//
//   weft::train::Checkpoint ckpt({{"model", &model}, {"optimizer", &optimizer}}, "/tmp/ckpts");
//   if (!ckpt.restore_latest()) std::puts("starting from scratch");
//   ...
//   ckpt.save(step);   // "/tmp/ckpts/ckpt-<step>", committed atomically
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "weft/checkpoint/trackable.h"

namespace weft::train {

class Checkpoint {
 public:
  // `objects` are not owned and must outlive the Checkpoint. Names must be unique, non-empty and
  // free of '/'; variable `v` of object `o` is saved as "o/v", the state of `o` as blob "o".
  // max_to_keep <= 0 keeps every checkpoint.
  Checkpoint(std::vector<std::pair<std::string, Trackable*>> objects, std::string directory,
             int max_to_keep = 5, std::string checkpoint_name = "ckpt");

  // Writes `<directory>/<checkpoint_name>-<step>` atomically (creating `directory` if needed),
  // deletes the oldest checkpoints beyond max_to_keep (never the one just written), updates the
  // state file `<directory>/checkpoint`, and returns the new checkpoint's directory. Variables
  // that parameter servers hold are written by those servers, each its own part of the
  // checkpoint (format v2), on a file system they share with this process
  // (checkpoint/held_slices.h); this process writes the rest and commits.
  std::string save(int64_t step);

  // Several processes holding the same objects (the workers of MultiWorkerMirroredStrategy)
  // writing one checkpoint together (format v2): each writes its share of every variable's rows
  // (writer 0 also the objects' state) to its own data file; `barrier` returns once every writer
  // has written its part (and throws if one failed); writer 0 then commits, keeps max_to_keep and
  // updates the state file. Every writer passes the same save_id, unique to this save.
  struct Writers {
    int part = 0;
    int parts = 1;
    std::string save_id;
    std::function<void()> barrier;
  };
  std::string save(int64_t step, const Writers& writers);

  // Reads `dir` (verifying every checksum: DataLoss when damaged) and, only when every variable
  // matches, assigns them all and calls restore_state. A variable absent from the checkpoint or
  // of another shape or dtype is InvalidArgument naming it; nothing is assigned then. Variables
  // that parameter servers hold are read by those servers, each the pieces it holds
  // (checkpoint::restore_trackables).
  void restore(const std::string& dir);

  // The newest (highest step) committed checkpoint whose index and shards are intact. Data
  // checksums are verified by restore, not here.
  std::optional<std::string> latest() const;

  // Restores the newest checkpoint that reads back intact, reporting each damaged one skipped to
  // the warning handler. False when there is none (start from scratch).
  bool restore_latest();

  // Committed checkpoints, oldest first (tf.train.CheckpointManager.checkpoints).
  std::vector<std::string> checkpoints() const;

  // Where restore_latest reports skipped checkpoints; stderr ("weft: ...") by default.
  void set_warning_handler(std::function<void(const std::string&)> handler);

  const std::string& directory() const { return directory_; }

 private:
  // Every `<checkpoint_name>-<step>` directory, committed or not, by ascending step.
  std::vector<std::pair<int64_t, std::string>> numbered_dirs() const;

  std::vector<std::pair<std::string, Trackable*>> objects_;
  std::string directory_;
  int max_to_keep_;
  std::string checkpoint_name_;
  std::function<void(const std::string&)> warn_;
};

// The newest committed `<checkpoint_name>-<step>` under `directory` (tf.train.latest_checkpoint).
std::optional<std::string> latest_checkpoint(const std::string& directory,
                                             const std::string& checkpoint_name = "ckpt");

}  // namespace weft::train
