// How fit reads its training data, on one worker or as a parameter-server cluster's chief.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "weft/data/dataset.h"
#include "weft/nn/model.h"

namespace weft::nn::internal {

// With a known epoch size (steps_per_epoch, or the dataset's cardinality) one iterator runs
// across the epochs (over the dataset's repetition without steps_per_epoch): its position is
// what BackupAndRestore saves. Otherwise each epoch is a fresh pass. An unbuilt model is built
// from the first batch, which is then trained on first, so that no extra pass is opened.
class EpochReader {
 public:
  // InvalidArgument for an empty dataset.
  EpochReader(const data::Dataset& dataset, std::optional<int64_t> steps_per_epoch);

  // Steps in an epoch, when known.
  const std::optional<int64_t>& steps() const { return steps_; }
  // The iterator that runs across the epochs; null without one.
  data::Dataset::Iterator* kept() { return kept_ ? &*kept_ : nullptr; }
  // Builds an unbuilt `m` from the first batch, kept to be read first.
  void build(ModelImpl& m);
  // Forgets the batch read to build (the kept iterator was restored elsewhere).
  void drop_first_batch() { pending_.reset(); }
  // Starts an epoch: a fresh pass without a kept iterator.
  void begin_epoch();
  // The epoch's next batch; none at its end.
  std::optional<data::Element> next();
  // The kept iterator's state before the batch next() returns next (the one read to build, while
  // it is kept): an iterator restored from it yields the batches this reader does.
  std::string next_state() const;

 private:
  const data::Dataset& dataset_;
  std::optional<int64_t> steps_;
  std::optional<data::Dataset::Iterator> kept_, first_pass_, fresh_;
  std::optional<data::Element> pending_;
  std::string first_state_;  // the kept iterator's, before the batch read to build
};

}  // namespace weft::nn::internal
