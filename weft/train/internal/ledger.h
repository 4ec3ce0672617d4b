// The parameter-server fit's ledger (the coordinator's): which rows of each epoch the committed
// closures trained, as ranges of the epoch's order ([first, end) of its batches' rows). A row
// committed twice is an Internal error naming the epoch and the rows, and so is an epoch that ends
// without each of its rows once: a fit that completes has trained every example of every epoch
// exactly once, whichever workers and ps tasks failed meanwhile. A backup saves it (it is a
// Trackable, which BackupAndRestore checkpoints beside the data's position), so that rolling back
// to a backup takes the ledger back with the variables.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "weft/checkpoint/trackable.h"

namespace weft::nn::internal {

class Ledger : public Trackable {
 public:
  // Rows [first, first + rows) of `epoch` were trained (their closure committed).
  void add(int epoch, int64_t first, int64_t rows);
  // The rows of `epoch` the ledger holds.
  int64_t rows(int epoch) const;
  // Every row the ledger holds.
  int64_t total() const;
  // The ranges of `epoch`, merged where they meet, in order.
  std::vector<std::pair<int64_t, int64_t>> ranges(int epoch) const;
  // At the end of an epoch of `rows` rows: Internal unless the ledger holds each once.
  void check_complete(int epoch, int64_t rows) const;

  std::vector<std::pair<std::string, Variable>> tracked_variables() const override { return {}; }
  // "epoch:first-end,first-end;epoch:..." (the ranges merged).
  std::string tracked_state() const override;
  void restore_state(const std::string& state) override;

 private:
  std::map<int, std::map<int64_t, int64_t>> epochs_;  // epoch → first → end, merged
};

}  // namespace weft::nn::internal
