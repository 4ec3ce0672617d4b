#include "weft/distribute/values.h"

namespace weft::distribute {
namespace {
thread_local std::optional<BatchSlice> slice_now;
}  // namespace

std::optional<BatchSlice> current_batch_slice() { return slice_now; }

BatchSliceScope::BatchSliceScope(const BatchSlice& slice)
    : previous_(slice_now), key_(random::ExampleKey{slice.step, slice.first_example}) {
  slice_now = slice;
}
BatchSliceScope::~BatchSliceScope() { slice_now = previous_; }

std::pair<int64_t, int64_t> row_range(int64_t rows, int64_t parts, int64_t part) {
  WEFT_ASSERT(parts > 0 && part >= 0 && part < parts) << part << " of " << parts;
  return {rows * part / parts, rows * (part + 1) / parts};
}

}  // namespace weft::distribute
