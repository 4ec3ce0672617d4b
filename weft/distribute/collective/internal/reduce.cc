#include "weft/distribute/collective/internal/reduce.h"

#include <algorithm>
#include <cstdint>

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

}  // namespace weft::distribute::collective::internal
