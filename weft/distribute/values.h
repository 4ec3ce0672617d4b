// Values that live on several replicas at once, as tf.distribute's PerReplica: what
// Strategy::run returns, and what a distributed dataset yields (each replica's row slice of one
// global batch, with where the slice sits in it).
//
//   weft::distribute::PerReplica<weft::Tensor> losses = strategy.run(step, batch);
//   for (const weft::Tensor& l : strategy.experimental_local_results(losses)) ...
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "weft/core/errors.h"
#include "weft/data/dataset.h"
#include "weft/ops/random.h"

namespace weft::distribute {

template <typename T>
class PerReplica {
 public:
  PerReplica() = default;
  explicit PerReplica(std::vector<T> values) : values_(std::move(values)) {}
  int num_replicas() const { return static_cast<int>(values_.size()); }
  const T& operator[](int replica) const {
    WEFT_CHECK(replica >= 0 && replica < num_replicas(), OutOfRange)
        << "PerReplica: replica " << replica << " of " << num_replicas();
    return values_[static_cast<size_t>(replica)];
  }
  const std::vector<T>& values() const { return values_; }

 private:
  std::vector<T> values_;
};

// Where a replica's rows sit: the training step (the global batch's number) and the rows
// [first_example, first_example + examples) of a global batch of global_batch_size rows.
struct BatchSlice {
  int64_t step = 0;
  int64_t first_example = 0;
  int64_t examples = 0;
  int64_t global_batch_size = 0;
};

// One global batch cut among replicas: replica r's element and its slice.
struct DistributedElement : PerReplica<data::Element> {
  DistributedElement(std::vector<data::Element> elements, std::vector<BatchSlice> slices)
      : PerReplica<data::Element>(std::move(elements)), slices(std::move(slices)) {}
  std::vector<BatchSlice> slices;
};

// The slice the calling thread's replica computes, while Strategy::run runs it on a
// DistributedElement (or a strategy's fit step does); nullopt otherwise.
std::optional<BatchSlice> current_batch_slice();
// Installs `slice` for the calling thread (and keys its training-time random draws by it) while
// it lives; strategies do this around each replica's work.
class BatchSliceScope {
 public:
  explicit BatchSliceScope(const BatchSlice& slice);
  ~BatchSliceScope();
  BatchSliceScope(const BatchSliceScope&) = delete;
  BatchSliceScope& operator=(const BatchSliceScope&) = delete;

 private:
  std::optional<BatchSlice> previous_;
  random::ExampleKeyScope key_;
};

// Rows [begin, end) of part `part` when `rows` rows are cut into `parts` contiguous parts as evenly
// as they go (part k starts at row floor(rows * k / parts); sizes differ by at most one). Every
// cut of a global batch uses it, so the parts of a cut into R are unions of the parts of a cut
// into any multiple of R.
std::pair<int64_t, int64_t> row_range(int64_t rows, int64_t parts, int64_t part);

}  // namespace weft::distribute
