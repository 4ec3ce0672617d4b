// What fit and the parameter-server fit do alike with their callbacks: hand them the model, the
// epoch's size and the iterator, find where a resumed run starts, and give back what they took
// however fit leaves.
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "weft/nn/callback.h"
#include "weft/train/internal/epoch_reader.h"

namespace weft::nn::internal {

class FitCallbacks {
 public:
  // `iterator`: the one fit reads across epochs, which a backup saves (null: none); `ledger`
  // likewise, a parameter-server fit's (ledger.h).
  FitCallbacks(std::vector<Callback>& callbacks, Model* model, int epochs,
               std::optional<int64_t> steps, data::Dataset::Iterator* iterator,
               Trackable* ledger = nullptr)
      : callbacks_(callbacks), iterator_(iterator) {
    for (const Callback& c : callbacks_) {
      c.impl().set_model(model);
      c.impl().set_params(epochs, steps);
      c.impl().set_iterator(iterator);
      c.impl().set_ledger(ledger);
    }
  }
  // The callbacks forget the iterator; if fit leaves by an exception after training began, they
  // give back what on_train_begin took.
  ~FitCallbacks() {
    for (const Callback& c : callbacks_) {
      if (training_) c.impl().on_train_abort();
      c.impl().set_iterator(nullptr);
      c.impl().set_ledger(nullptr);
    }
  }
  FitCallbacks(const FitCallbacks&) = delete;
  FitCallbacks& operator=(const FitCallbacks&) = delete;

  // Where training starts: `start`, or later where a callback resumes (BackupAndRestore).
  ResumePoint resume(ResumePoint start, EpochReader& reader) {
    std::optional<ResumePoint> restored = roll_back(reader);
    return restored ? std::max(start, *restored) : start;
  }
  // Whether a callback can take training back to a backup (BackupAndRestore).
  bool can_roll_back() const {
    return std::any_of(callbacks_.begin(), callbacks_.end(),
                       [](const Callback& c) { return c.impl().restores_backups(); });
  }
  // Restores the newest backup, if any, and returns where training goes on from it. A restored
  // iterator is past the batch `reader` read to build, which is then not the next one.
  std::optional<ResumePoint> roll_back(EpochReader& reader) {
    std::optional<ResumePoint> at;
    for (const Callback& c : callbacks_) {
      if (auto r = c.impl().resume_point()) {
        at = at ? std::max(*at, *r) : *r;
        // (Without the callbacks' iterator, the epochs start from the start.)
        if (iterator_ != nullptr) reader.drop_first_batch();
      }
    }
    return at;
  }
  void train_begin(const Logs& logs) {
    for (const Callback& c : callbacks_) c.impl().on_train_begin(logs);
    training_ = true;
  }
  void train_end(const Logs& logs) {
    training_ = false;
    for (const Callback& c : callbacks_) c.impl().on_train_end(logs);
  }

 private:
  std::vector<Callback>& callbacks_;
  data::Dataset::Iterator* iterator_;
  bool training_ = false;  // between on_train_begin and on_train_end
};

}  // namespace weft::nn::internal
