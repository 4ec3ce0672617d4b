#include "weft/np/random.h"

#include "weft/ops/random.h"

namespace weft::np {

namespace random {
Tensor randn(const Shape& shape, uint64_t seed) {
  return stateless_random_normal(shape, {static_cast<int64_t>(seed), 0}, 0, 1, kFloat64);
}
Tensor uniform(double low, double high, const Shape& shape, uint64_t seed) {
  return stateless_random_uniform(shape, {static_cast<int64_t>(seed), 0}, low, high, kFloat64);
}
}  // namespace random

}  // namespace weft::np
