#include "weft/distribute/collective/communicator.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "weft/core/errors.h"
#include "weft/distribute/collective/internal/reduce.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/shape_ops.h"

namespace weft::distribute::collective {

const char* reduction_name(Reduction op) {
  switch (op) {
    case Reduction::SUM:
      return "sum";
    case Reduction::MEAN:
      return "mean";
    case Reduction::MAX:
      return "max";
    case Reduction::MIN:
      return "min";
  }
  return "?";
}

const char* implementation_name(Implementation implementation) {
  switch (implementation) {
    case Implementation::AUTO:
      return "AUTO";
    case Implementation::RECURSIVE_DOUBLING:
      return "RECURSIVE_DOUBLING";
    case Implementation::RING:
      return "RING";
    case Implementation::SHARED_MEMORY:
      return "SHARED_MEMORY";
    case Implementation::GLOO_RING:
      return "GLOO_RING";
    case Implementation::GLOO_HALVING_DOUBLING:
      return "GLOO_HALVING_DOUBLING";
  }
  return "?";
}

void Communicator::all_reduce_gathered(std::span<const Piece> pieces, void* out, const Shape& shape,
                                       DType dtype, Reduction op,
                                       const CommunicationOptions& options) {
  internal::gather_pieces(pieces, 0, static_cast<std::size_t>(num_elements(shape)),
                          dtype_size(dtype), out);
  all_reduce(out, shape, dtype, op, options);
}

Tensor all_reduce(Communicator& comm, const Tensor& value, Reduction op,
                  const CommunicationOptions& options) {
  Tensor out = copy(value);
  comm.all_reduce(out.raw_data(), out.shape(), out.dtype(), op, options);
  return out;
}

Tensor broadcast(Communicator& comm, const Tensor& value, int root,
                 const CommunicationOptions& options) {
  Tensor out = copy(value);
  comm.broadcast(out.raw_data(), out.shape(), out.dtype(), root, options);
  return out;
}

namespace {

// What all_gather learns of every rank's value first: defined, dtype, rank and up to 8 dims.
constexpr size_t kMetaFields = 11;
constexpr int64_t kMaxGatherRank = 8;

std::string meta_str(const int64_t* m) {
  if (m[0] == 0) return "nothing";
  Shape shape(m + 3, m + 3 + m[2]);
  return shape_str(shape) + " " + std::string(dtype_name(static_cast<DType>(m[1])));
}

}  // namespace

Tensor all_gather(Communicator& comm, const Tensor& value, const CommunicationOptions& options,
                  std::vector<int64_t>* rows_of_rank) {
  WEFT_CHECK(!value.defined() || value.rank() >= 1, InvalidArgument)
      << "all_gather: the value must have an axis 0 to concatenate along, got a scalar";
  WEFT_CHECK(!value.defined() || value.rank() <= kMaxGatherRank, InvalidArgument)
      << "all_gather: values of rank " << value.rank() << " (at most " << kMaxGatherRank << ")";
  // Every rank's dtype and shape first: the values may differ in length along axis 0, and a rank
  // with nothing (undefined) adds no rows. Then every rank's block, padded to the longest.
  const size_t ranks = static_cast<size_t>(comm.size());
  std::vector<int64_t> mine(kMetaFields, 0), meta(kMetaFields * ranks);
  if (value.defined()) {
    mine[0] = 1;
    mine[1] = static_cast<int64_t>(value.dtype());
    mine[2] = value.rank();
    for (int64_t d = 0; d < value.rank(); ++d) mine[static_cast<size_t>(3 + d)] = value.dim(d);
  }
  comm.all_gather(mine.data(), meta.data(), {static_cast<int64_t>(kMetaFields)}, kInt64, options);
  const int64_t* first = nullptr;  // the first rank with a value, rank `first_rank`
  size_t first_rank = 0;
  std::vector<int64_t> rows(ranks, 0);
  for (size_t r = 0; r < ranks; ++r) {
    const int64_t* m = &meta[r * kMetaFields];
    if (m[0] == 0) continue;
    rows[r] = m[3];
    if (first == nullptr) {
      first = m;
      first_rank = r;
      continue;
    }
    bool same = m[1] == first[1] && m[2] == first[2] && std::equal(m + 4, m + 3 + m[2], first + 4);
    WEFT_CHECK(same, InvalidArgument)
        << "all_gather: " << comm.task_of(static_cast<int>(first_rank)) << " passed "
        << meta_str(first) << ", " << comm.task_of(static_cast<int>(r)) << " passed " << meta_str(m)
        << "; the values may differ in length along axis 0 only";
  }
  if (rows_of_rank != nullptr) *rows_of_rank = rows;
  if (first == nullptr) return Tensor();  // no rank had a value
  const DType dtype = static_cast<DType>(first[1]);
  const int64_t longest = *std::max_element(rows.begin(), rows.end());
  Shape block(first + 3, first + 3 + first[2]);
  block[0] = longest;
  const int64_t own = value.defined() ? value.dim(0) : 0;
  Tensor in = own == longest ? contiguous(value) : zeros(block, dtype);
  if (own > 0 && own < longest) assign_into(slice(in, {Slice{0, own}}), value);
  Shape shape = block;
  shape[0] *= comm.size();
  Tensor out = Tensor::empty(shape, dtype);
  if (longest > 0) comm.all_gather(in.raw_data(), out.raw_data(), block, dtype, options);
  if (std::all_of(rows.begin(), rows.end(), [&](int64_t n) { return n == longest; })) return out;
  std::vector<Tensor> parts;
  for (size_t r = 0; r < ranks; ++r) {
    const int64_t at = static_cast<int64_t>(r) * longest;
    parts.push_back(slice(out, {Slice{at, at + rows[r]}}));
  }
  return concat(parts, 0);
}

Tensor reduce_scatter(Communicator& comm, const Tensor& value, Reduction op,
                      const CommunicationOptions& options) {
  WEFT_CHECK(value.rank() >= 1 && value.dim(0) % comm.size() == 0, InvalidArgument)
      << "reduce_scatter: axis 0 of " << shape_str(value.shape()) << " must divide among "
      << comm.size() << " ranks";
  Tensor in = contiguous(value);
  Shape shape = value.shape();
  shape[0] /= comm.size();
  Tensor out = Tensor::empty(shape, value.dtype());
  comm.reduce_scatter(in.raw_data(), out.raw_data(), shape, value.dtype(), op, options);
  return out;
}

Tensor all_to_all(Communicator& comm, const Tensor& value, const CommunicationOptions& options) {
  WEFT_CHECK(value.rank() >= 1 && value.dim(0) % comm.size() == 0, InvalidArgument)
      << "all_to_all: axis 0 of " << shape_str(value.shape()) << " must divide among "
      << comm.size() << " ranks";
  Tensor in = contiguous(value);
  Shape block = value.shape();
  block[0] /= comm.size();
  Tensor out = Tensor::empty(value.shape(), value.dtype());
  comm.all_to_all(in.raw_data(), out.raw_data(), block, value.dtype(), options);
  return out;
}

void Communicator::all_to_all(const void* in, void* out, const Shape& shape, DType dtype,
                              const CommunicationOptions& options) {
  const std::size_t bytes = static_cast<std::size_t>(num_elements(shape)) * dtype_size(dtype);
  const auto n = static_cast<std::size_t>(size());
  Shape all = shape;
  all.insert(all.begin(), static_cast<int64_t>(n));
  std::vector<char> gathered(n * n * bytes);  // rank r's n blocks at r
  all_gather(in, gathered.data(), all, dtype, options);
  for (std::size_t r = 0; r < n; ++r) {
    std::memcpy(static_cast<char*>(out) + r * bytes,
                gathered.data() + (r * n + static_cast<std::size_t>(rank())) * bytes, bytes);
  }
}

std::unique_ptr<Communicator> Communicator::split(int, const CommunicationOptions&) {
  WEFT_FAIL(FailedPrecondition) << "Communicator::split: the " << transport()
                                << " communicator cannot make sub-communicators";
  return nullptr;
}

void barrier(Communicator& comm, const CommunicationOptions& options) { comm.barrier(options); }

}  // namespace weft::distribute::collective
