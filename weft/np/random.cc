#include "weft/np/random.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "weft/core/philox.h"
#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/math.h"
#include "weft/ops/random.h"

namespace weft::np::random {

void seed(int64_t s) { weft::random::set_seed(s); }

Tensor rand(const Shape& shape) {
  return stateless_random_uniform(shape, weft::random::next_seed(), 0, 1, kFloat64);
}
Tensor randn(const Shape& shape) {
  return stateless_random_normal(shape, weft::random::next_seed(), 0, 1, kFloat64);
}
Tensor random(const Shape& size) { return rand(size); }
Tensor standard_normal(const Shape& size) { return randn(size); }
Tensor uniform(double low, double high, const Shape& size) {
  return stateless_random_uniform(size, weft::random::next_seed(), low, high, kFloat64);
}

Tensor randint(int64_t low, int64_t high, const Shape& size, DType dtype) {
  WEFT_CHECK(low < high, InvalidArgument)
      << "np::random::randint: low must be below high, got [" << low << ", " << high << ")";
  WEFT_CHECK(dtype == kInt32 || dtype == kInt64, InvalidArgument)
      << "np::random::randint: dtype must be int32 or int64, got " << dtype;
  if (dtype == kInt32) {
    WEFT_CHECK(low >= INT32_MIN && high - 1 <= INT32_MAX, InvalidArgument)
        << "np::random::randint: [" << low << ", " << high << ") is out of range for int32";
  }
  // low + floor(u * range) in unsigned arithmetic (high - low may exceed int64's range); u has
  // 53 random bits, so ranges beyond 2^53 are covered with that granularity.
  uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  std::vector<double> u =
      stateless_random_uniform(size, weft::random::next_seed(), 0, 1, kFloat64).to_vector<double>();
  std::vector<int64_t> out(u.size());
  for (size_t i = 0; i < u.size(); ++i) {
    uint64_t offset = std::min(static_cast<uint64_t>(u[i] * static_cast<double>(range)), range - 1);
    out[i] = static_cast<int64_t>(static_cast<uint64_t>(low) + offset);
  }
  return cast(Tensor::from_vector(out, size), dtype);
}

namespace {

// Element i's uniforms: blocks of 16 from offset 64·i of the stream (more than 64 draws, which
// has negligible probability, continue into the next element's run and stay a function of i).
class Uniforms {
 public:
  Uniforms(Seed seed, int64_t element) : seed_(seed), offset_(64 * element) {}
  double next() {
    if (used_ == buf_.size()) {
      random_internal::uniform_double(static_cast<uint64_t>(seed_[0]),
                                      static_cast<uint64_t>(seed_[1]), offset_, buf_.data(),
                                      static_cast<int64_t>(buf_.size()), 0, 1);
      offset_ += static_cast<int64_t>(buf_.size());
      used_ = 0;
    }
    return buf_[used_++];
  }

 private:
  Seed seed_;
  int64_t offset_;
  std::vector<double> buf_ = std::vector<double>(16);
  size_t used_ = 16;
};

int64_t poisson_one(double lam, Uniforms& u) {
  if (lam == 0) return 0;
  if (lam < 10) {  // Knuth: count uniforms until their product falls below e^-lam
    double limit = std::exp(-lam), product = u.next();
    int64_t k = 0;
    while (product > limit) {
      ++k;
      product *= u.next();
    }
    return k;
  }
  // PTRS (W. Hörmann, "The transformed rejection method for generating Poisson random
  // variables", 1993).
  double slam = std::sqrt(lam), loglam = std::log(lam);
  double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    double us = u.next() - 0.5, v = u.next();
    double abs_us = 0.5 - std::abs(us);
    double k = std::floor((2 * a / abs_us + b) * us + lam + 0.43);
    if (abs_us >= 0.07 && v <= vr) return static_cast<int64_t>(k);
    if (k < 0 || (abs_us < 0.013 && v > abs_us)) continue;
    if (std::log(v) + std::log(inv_alpha) - std::log(a / (abs_us * abs_us) + b) <=
        -lam + k * loglam - std::lgamma(k + 1)) {
      return static_cast<int64_t>(k);
    }
  }
}

}  // namespace

Tensor poisson(double lam, const Shape& size) {
  WEFT_CHECK(lam >= 0 && std::isfinite(lam), InvalidArgument)
      << "np::random::poisson: lam must be finite and non-negative, got " << lam;
  Seed s = weft::random::next_seed();
  Tensor out = Tensor::empty(size, kInt64);
  int64_t* o = out.data<int64_t>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    Uniforms u(s, i);
    o[i] = poisson_one(lam, u);
  }
  return out;
}

Tensor randn(const Shape& shape, uint64_t seed) {
  return stateless_random_normal(shape, {static_cast<int64_t>(seed), 0}, 0, 1, kFloat64);
}
Tensor uniform(double low, double high, const Shape& shape, uint64_t seed) {
  return stateless_random_uniform(shape, {static_cast<int64_t>(seed), 0}, low, high, kFloat64);
}

}  // namespace weft::np::random
