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

}  // namespace

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
  for (int d = 1; d < parts; d *= 2) {
    for (int i = 0; i + d < parts; i += 2 * d) {
      combine(base + i * bytes, base + i * bytes, base + (i + d) * bytes, n, dtype, op);
    }
  }
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
