#include "weft/train/internal/epoch_reader.h"

#include "weft/core/errors.h"

namespace weft::nn::internal {

EpochReader::EpochReader(const data::Dataset& dataset, std::optional<int64_t> steps_per_epoch)
    : dataset_(dataset), steps_(steps_per_epoch) {
  const int64_t cardinality = dataset.cardinality();
  WEFT_CHECK(cardinality != 0, InvalidArgument) << "fit: the training dataset is empty";
  if (steps_) {
    kept_ = dataset.begin();
  } else if (cardinality > 0) {
    steps_ = cardinality;
    kept_ = dataset.repeat().begin();
  }
}

void EpochReader::build(ModelImpl& m) {
  if (m.built()) return;
  if (!kept_) first_pass_ = dataset_.begin();
  if (kept_) first_state_ = kept_->save_state();
  pending_ = (kept_ ? *kept_ : *first_pass_).next();
  WEFT_CHECK(pending_.has_value(), InvalidArgument) << "fit: the training dataset is empty";
  m.build_on(*pending_);
}

void EpochReader::begin_epoch() {
  if (kept_) return;
  fresh_ = first_pass_ ? std::move(*first_pass_) : dataset_.begin();
  first_pass_.reset();
}

std::optional<data::Element> EpochReader::next() {
  if (pending_) {
    std::optional<data::Element> first = std::move(pending_);
    pending_.reset();
    return first;
  }
  return (kept_ ? *kept_ : *fresh_).next();
}

std::string EpochReader::next_state() const {
  WEFT_CHECK(kept_.has_value(), FailedPrecondition)
      << "fit: an epoch of unknown size is a fresh pass, and has no state to resume from";
  return pending_ ? first_state_ : kept_->save_state();
}

}  // namespace weft::nn::internal
