// How a parameter-server fit's workers read their batches themselves (the ledger's positions):
// the chief reads the training data as fit does, to know each batch's size and the epoch's end,
// but sends each closure where its batches lie instead of the batches. A position counts the
// batches of a lineage: the kept iterator's run from fit's start, or from a backup it was rolled
// back to. The chief publishes the iterator's state at the lineage's start and at each epoch's
// (a mark) in the coordination service's key-value store; a worker restores its own iterator
// over the same dataset from a mark and reads on to the batch, or just reads on when its
// iterator is already on the way there. Each position carries a digest of the batch the chief
// read, which the worker checks: a worker whose pipeline differs is an error, not other data.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "weft/data/dataset.h"
#include "weft/distribute/parameter_server/parameter_server_strategy.h"
#include "weft/train/internal/epoch_reader.h"

namespace weft::nn::internal {

struct BatchPosition {
  int64_t lineage = -1;  // -1: none (the batch travels with the closure)
  int64_t mark = 0;      // the latest mark at or before `index`
  int64_t index = 0;     // the batch's, in the lineage
  int64_t digest = 0;    // digest64 of the batch's tensors, as the chief read them
};

// Where the marks are kept, and who reads them (for errors). In a cluster, the coordination
// service's key-value store (mark_store); a map in a test.
struct MarkStore {
  std::function<void(const std::string& key, const std::string& value)> put;
  std::function<std::string(const std::string& key)> get;  // waits for the key
  std::function<void(const std::string& key)> remove;
  std::string task;  // "worker:0"
};
MarkStore mark_store(const distribute::ParameterServerStrategy& strategy);

// On the chief. Only the latest mark is kept in the store: publish one only when no closure is in
// flight (fit's epochs end with none), so that no worker needs an earlier one.
class InputMarks {
 public:
  explicit InputMarks(MarkStore store) : store_(std::move(store)) {}
  // Removes the latest mark.
  ~InputMarks();
  InputMarks(const InputMarks&) = delete;
  InputMarks& operator=(const InputMarks&) = delete;
  // A new lineage at the iterator's state `state` (fit's start, a rollback), its first mark.
  void begin_lineage(const std::string& state);
  // A mark at the lineage's current position (an epoch's start), unless one is there already.
  void mark(const std::string& state);
  // The position of `batch`, the next one read in the lineage.
  BatchPosition next(const data::Element& batch);

 private:
  void publish(const std::string& state);
  const MarkStore store_;
  BatchPosition at_;       // the next batch's, without its digest
  std::string published_;  // the latest mark's key
};

// On a worker: its own reader of the dataset (the chief's), at the positions closures ask for.
// One caller at a time (a worker runs one closure at a time; fit's TrainBatches holds a lock).
class PositionedInput {
 public:
  PositionedInput(MarkStore store, data::Dataset dataset, std::optional<int64_t> steps_per_epoch);
  // The batch at `where`. FailedPrecondition when it is not the batch the chief read there. The
  // batch just read is kept: asked for again (backup workers run several parts of one step), it
  // is not read again.
  data::Element batch(const BatchPosition& where);

 private:
  const MarkStore store_;
  const data::Dataset dataset_;
  EpochReader reader_;  // its kept iterator
  int64_t lineage_ = -1, at_ = 0;
  std::optional<data::Element> last_;  // the batch at at_ - 1, whose digest was checked
  int64_t last_digest_ = 0;
};

}  // namespace weft::nn::internal
