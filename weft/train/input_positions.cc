#include "weft/train/internal/input_positions.h"

#include <atomic>
#include <chrono>

#include "weft/core/errors.h"
#include "weft/ops/digest.h"

namespace weft::nn::internal {
namespace {

// How long a worker waits for a mark: the chief publishes it before it schedules a batch after
// it, so only a dying chief makes this wait (and the worker then ends with the cluster).
constexpr std::chrono::seconds kMarkTimeout{60};
// A worker behind by more batches than this restores a mark rather than read on to it.
constexpr int64_t kReadOnAtMost = 64;

std::string mark_key(int64_t lineage, int64_t mark) {
  return "weft/fit/input/" + std::to_string(lineage) + "/" + std::to_string(mark);
}

}  // namespace

void InputMarks::begin_lineage(const std::string& state) {
  // Unique while the chief's process (which hosts the key-value store) lives.
  static std::atomic<int64_t> lineages{0};
  at_ = {lineages.fetch_add(1), 0, 0, 0};
  publish(state);
}

void InputMarks::mark(const std::string& state) {
  if (at_.mark == at_.index) return;
  at_.mark = at_.index;
  publish(state);
}

InputMarks::~InputMarks() {
  try {
    if (!published_.empty()) store_.remove(published_);
  } catch (const Error&) {
    // The chief's service is going (the job failed): the store goes with it.
  }
}

void InputMarks::publish(const std::string& state) {
  WEFT_CHECK(at_.lineage >= 0, FailedPrecondition) << "fit: a mark before its lineage began";
  const std::string key = mark_key(at_.lineage, at_.mark);
  store_.put(key, state);
  if (!published_.empty()) store_.remove(published_);
  published_ = key;
}

BatchPosition InputMarks::next(const data::Element& batch) {
  BatchPosition where = at_;
  where.digest = static_cast<int64_t>(digest64(batch));
  ++at_.index;
  return where;
}

MarkStore mark_store(const distribute::ParameterServerStrategy& strategy) {
  return {
      [strategy](const std::string& key, const std::string& value) { strategy.put(key, value); },
      [strategy](const std::string& key) { return strategy.get(key, kMarkTimeout); },
      [strategy](const std::string& key) { strategy.remove(key); }, strategy.task()};
}

PositionedInput::PositionedInput(MarkStore store, data::Dataset dataset,
                                 std::optional<int64_t> steps_per_epoch)
    : store_(std::move(store)), dataset_(std::move(dataset)), reader_(dataset_, steps_per_epoch) {
  WEFT_CHECK(reader_.kept() != nullptr, InvalidArgument)
      << "fit: the workers read the training data at the chief's positions only when an "
         "epoch's size is known (steps_per_epoch, or a dataset of known cardinality)";
}

data::Element PositionedInput::batch(const BatchPosition& where) {
  // The batch just read, again (a backup run of another part of the same step).
  if (last_ && where.lineage == lineage_ && where.index == at_ - 1 &&
      where.digest == last_digest_) {
    return *last_;
  }
  last_.reset();
  data::Dataset::Iterator& it = *reader_.kept();
  if (where.lineage != lineage_ || where.index < at_ || where.mark > at_ + kReadOnAtMost) {
    const std::string state = store_.get(mark_key(where.lineage, where.mark));
    try {
      it.restore_state(state);
    } catch (const DataLoss& e) {
      throw FailedPrecondition(
          "fit: " + store_.task + " cannot read the chief's training data (" + e.message() +
          "): every task must build the same training dataset, with the same seeds");
    }
    lineage_ = where.lineage;
    at_ = where.mark;
  }
  std::optional<data::Element> batch;
  for (; at_ <= where.index; ++at_) {
    batch = it.next();
    WEFT_CHECK(batch.has_value(), FailedPrecondition)
        << "fit: " << store_.task << "'s training data ran out before batch " << where.index
        << " of the chief's (lineage " << where.lineage
        << "): every task must read the same dataset";
  }
  WEFT_CHECK(static_cast<int64_t>(digest64(*batch)) == where.digest, FailedPrecondition)
      << "fit: " << store_.task << " read another batch " << where.index << " (lineage "
      << where.lineage
      << ") than the chief: every task must build the same training dataset, "
         "with the same seeds, and read no other pass of it";
  last_ = batch;
  last_digest_ = where.digest;
  return std::move(*batch);
}

}  // namespace weft::nn::internal
