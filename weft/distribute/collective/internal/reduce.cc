#include "weft/distribute/collective/internal/reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "weft/core/errors.h"
#include "weft/core/half.h"

namespace weft::distribute::collective::internal {
namespace {

template <typename T, typename Acc>
void combine_as(void* out, const void* a, const void* b, std::size_t n, Reduction op) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  switch (op) {
    case Reduction::SUM:
    case Reduction::MEAN:
      for (std::size_t i = 0; i < n; ++i) o[i] = T(Acc(x[i]) + Acc(y[i]));
      break;
    case Reduction::MAX:
      for (std::size_t i = 0; i < n; ++i) o[i] = T(std::max(Acc(x[i]), Acc(y[i])));
      break;
    case Reduction::MIN:
      for (std::size_t i = 0; i < n; ++i) o[i] = T(std::min(Acc(x[i]), Acc(y[i])));
      break;
  }
}

template <typename T, typename Acc>
void divide_as(void* data, std::size_t n, int divisor) {
  auto* d = static_cast<T*>(data);
  for (std::size_t i = 0; i < n; ++i) d[i] = T(Acc(d[i]) / Acc(divisor));
}

// The fixed tree over sources [lo, hi), split at half their number rounded down (so
// ((s0 + s1) + (s2 + s3)) for four, s0 + (s1 + s2) for three: distribute::tree_sum's tree), over
// one block of elements; scratch holds two blocks per level.
class BlockTree {
 public:
  static constexpr std::size_t kBlock = 1024;
  BlockTree(std::span<const void* const> sources, DType dtype, Reduction op)
      : sources_(sources), dtype_(dtype), op_(op), es_(dtype_size(dtype)), zeros_(kBlock * es_) {
    std::size_t depth = 1;
    for (std::size_t n = sources.size(); n > 1; n = (n + 1) / 2) ++depth;
    scratch_.resize(2 * depth * kBlock * es_);
  }
  // Elements [at, at + len) of the reduction, len <= kBlock, into out (which is where they go).
  void sum(std::size_t at, std::size_t len, char* out) {
    const char* result = node(0, sources_.size(), 0, at, len, out);
    if (result != out) std::memcpy(out, result, len * es_);
  }

 private:
  // Where the node's result lies: a source itself when it is one, else `out`.
  const char* node(std::size_t lo, std::size_t hi, std::size_t depth, std::size_t at,
                   std::size_t len, char* out) {
    if (hi - lo == 1) {
      return sources_[lo] ? static_cast<const char*>(sources_[lo]) + at * es_ : zeros_.data();
    }
    const std::size_t mid = lo + (hi - lo) / 2;
    char* scratch = scratch_.data() + 2 * depth * kBlock * es_;
    const char* a = node(lo, mid, depth + 1, at, len, scratch);
    const char* b = node(mid, hi, depth + 1, at, len, scratch + kBlock * es_);
    combine(out, a, b, len, dtype_, op_);
    return out;
  }

  std::span<const void* const> sources_;
  DType dtype_;
  Reduction op_;
  std::size_t es_;
  std::vector<char> zeros_;
  std::vector<char> scratch_;
};

}  // namespace

void tree_combine_from(std::span<const void* const> sources, void* out, std::size_t n,
                       DType dtype, Reduction op) {
  WEFT_ASSERT(!sources.empty()) << "tree_combine_from of no sources";
  constexpr std::size_t kBlock = BlockTree::kBlock;
  BlockTree tree(sources, dtype, op);
  for (std::size_t at = 0; at < n; at += kBlock) {
    tree.sum(at, std::min(kBlock, n - at), static_cast<char*>(out) + at * dtype_size(dtype));
  }
}

void check_collective_dtype(DType dtype, const char* what) {
  switch (dtype) {
    case kFloat32: case kFloat64: case kFloat16: case kBFloat16: case kInt32: case kInt64:
      return;
    default:
      WEFT_FAIL(InvalidArgument) << what << ": dtype " << dtype_name(dtype)
                                 << " is not one the collectives carry (float32, float64, "
                                    "float16, bfloat16, int32, int64)";
  }
}

void combine(void* out, const void* a, const void* b, std::size_t n, DType dtype, Reduction op) {
  switch (dtype) {
    case kFloat32: return combine_as<float, float>(out, a, b, n, op);
    case kFloat64: return combine_as<double, double>(out, a, b, n, op);
    case kFloat16: return combine_as<float16, float>(out, a, b, n, op);
    case kBFloat16: return combine_as<bfloat16, float>(out, a, b, n, op);
    case kInt32: return combine_as<int32_t, int32_t>(out, a, b, n, op);
    case kInt64: return combine_as<int64_t, int64_t>(out, a, b, n, op);
    default: check_collective_dtype(dtype, "combine");
  }
}

void tree_combine(char* base, std::size_t bytes, int parts, std::size_t n, DType dtype,
                  Reduction op) {
  std::vector<const void*> sources;
  for (int i = 0; i < parts; ++i) sources.push_back(base + i * bytes);
  tree_combine_from(sources, base, n, dtype, op);
}

void divide(void* data, std::size_t n, DType dtype, int divisor) {
  switch (dtype) {
    case kFloat32: return divide_as<float, float>(data, n, divisor);
    case kFloat64: return divide_as<double, double>(data, n, divisor);
    case kFloat16: return divide_as<float16, float>(data, n, divisor);
    case kBFloat16: return divide_as<bfloat16, float>(data, n, divisor);
    case kInt32: return divide_as<int32_t, int32_t>(data, n, divisor);
    case kInt64: return divide_as<int64_t, int64_t>(data, n, divisor);
    default: check_collective_dtype(dtype, "divide");
  }
}

std::vector<Piece> cut_pieces(std::span<const Piece> pieces, std::size_t first,
                              std::size_t count, std::size_t element_bytes) {
  std::vector<Piece> out;
  std::size_t at = 0;  // where the current piece starts in the concatenation
  for (const Piece& p : pieces) {
    const std::size_t lo = std::max(at, first), hi = std::min(at + p.count, first + count);
    if (lo < hi) {
      const char* data = p.data ? static_cast<const char*>(p.data) + (lo - at) * element_bytes
                                : nullptr;
      out.push_back({data, hi - lo});
    }
    at += p.count;
    if (at >= first + count) break;
  }
  WEFT_CHECK(first + count <= at || count == 0, Internal)
      << "collectives: elements " << first << "-" << first + count << " of pieces holding "
      << at;
  return out;
}

void gather_pieces(std::span<const Piece> pieces, std::size_t first, std::size_t count,
                   std::size_t element_bytes, void* out) {
  char* to = static_cast<char*>(out);
  for (const Piece& p : cut_pieces(pieces, first, count, element_bytes)) {
    const std::size_t bytes = p.count * element_bytes;
    if (p.data == nullptr) {
      std::memset(to, 0, bytes);
    } else if (p.data != to) {
      std::memcpy(to, p.data, bytes);
    }
    to += bytes;
  }
}

}  // namespace weft::distribute::collective::internal
