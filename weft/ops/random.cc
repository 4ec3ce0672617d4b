#include "weft/ops/random.h"

#include <atomic>
#include <mutex>

#include "weft/core/parallel.h"
#include "weft/core/philox.h"
#include "weft/ops/cast.h"

namespace weft {
namespace {

enum class Distribution { kUniform, kNormal, kTruncatedNormal };

// Fills in parallel; element i is a function of (seed, i) only, so the cut does not matter.
// Element i of the result is element offset + i of the stream.
template <typename T, typename Fill>
Tensor fill(const Shape& shape, uint64_t offset, Fill fill_range) {
  Tensor out = Tensor::empty(shape, dtype_of<T>());
  T* p = out.data<T>();
  parallel_for(out.numel(), 65536, [&](int64_t begin, int64_t end) {
    fill_range(offset + static_cast<uint64_t>(begin), p + begin, end - begin);
  });
  return out;
}

Tensor sample(const char* op, Distribution dist, const Shape& shape, Seed seed, double a, double b,
              DType dtype, uint64_t offset = 0) {
  WEFT_CHECK(is_floating(dtype) ||
                 (dist == Distribution::kUniform && (dtype == kInt32 || dtype == kInt64)),
             InvalidArgument)
      << op << ": unsupported dtype " << dtype;
  auto s0 = static_cast<uint64_t>(seed[0]), s1 = static_cast<uint64_t>(seed[1]);
  namespace r = random_internal;
  if (dtype == kFloat64) {
    return fill<double>(shape, offset, [&](uint64_t off, double* p, int64_t n) {
      switch (dist) {
        case Distribution::kUniform:
          return r::uniform_double(s0, s1, off, p, n, a, b);
        case Distribution::kNormal:
          return r::normal_double(s0, s1, off, p, n, a, b);
        case Distribution::kTruncatedNormal:
          return r::truncated_normal_double(s0, s1, off, p, n, a, b);
      }
    });
  }
  if (!is_floating(dtype)) {
    WEFT_CHECK(a < b, InvalidArgument)
        << op << ": integer range [" << a << ", " << b << ") is empty";
    Tensor ints = fill<int64_t>(shape, offset, [&](uint64_t off, int64_t* p, int64_t n) {
      r::uniform_int64(s0, s1, off, p, n, static_cast<int64_t>(a), static_cast<int64_t>(b));
    });
    return cast(ints, dtype);
  }
  // float32, and the half types by rounding float32 samples.
  auto fa = static_cast<float>(a), fb = static_cast<float>(b);
  Tensor f = fill<float>(shape, offset, [&](uint64_t off, float* p, int64_t n) {
    switch (dist) {
      case Distribution::kUniform:
        return r::uniform_float(s0, s1, off, p, n, fa, fb);
      case Distribution::kNormal:
        return r::normal_float(s0, s1, off, p, n, fa, fb);
      case Distribution::kTruncatedNormal:
        return r::truncated_normal_float(s0, s1, off, p, n, fa, fb);
    }
  });
  return cast(f, dtype);
}

}  // namespace

Tensor stateless_random_uniform(const Shape& shape, Seed seed, double minval, double maxval,
                                DType dtype) {
  WEFT_CHECK(minval <= maxval, InvalidArgument)
      << "stateless_random_uniform: minval " << minval << " > maxval " << maxval;
  return sample("stateless_random_uniform", Distribution::kUniform, shape, seed, minval, maxval,
                dtype);
}

Tensor stateless_random_uniform_slice(const Shape& shape, Seed seed, int64_t offset, double minval,
                                      double maxval, DType dtype) {
  WEFT_CHECK(minval <= maxval && offset >= 0, InvalidArgument)
      << "stateless_random_uniform_slice: expected minval <= maxval and offset >= 0, got " << minval
      << ", " << maxval << " and " << offset;
  return sample("stateless_random_uniform_slice", Distribution::kUniform, shape, seed, minval,
                maxval, dtype, static_cast<uint64_t>(offset));
}

Tensor stateless_random_normal(const Shape& shape, Seed seed, double mean, double stddev,
                               DType dtype) {
  return sample("stateless_random_normal", Distribution::kNormal, shape, seed, mean, stddev, dtype);
}

Tensor stateless_truncated_normal(const Shape& shape, Seed seed, double mean, double stddev,
                                  DType dtype) {
  return sample("stateless_truncated_normal", Distribution::kTruncatedNormal, shape, seed, mean,
                stddev, dtype);
}

namespace random {
namespace {
std::mutex seed_mu;
int64_t global_seed = 0;
int64_t counter = 0;
}  // namespace

void set_seed(int64_t seed) {
  std::lock_guard lock(seed_mu);
  global_seed = seed;
  counter = 0;
}

namespace {
thread_local SeedScope* seed_scope = nullptr;
}  // namespace

Seed next_seed() {
  std::lock_guard lock(seed_mu);
  if (seed_scope != nullptr) {
    return {global_seed, static_cast<int64_t>(seed_scope->key_hash_ +
                                              static_cast<uint64_t>(seed_scope->draws_++))};
  }
  return {global_seed, counter++};
}

SeedScope::SeedScope(const std::string& key) : previous_(seed_scope) {
  // FNV-1a: a fixed function of the key on every platform (std::hash is not).
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ull;
  key_hash_ = h;
  seed_scope = this;
}
SeedScope::~SeedScope() { seed_scope = previous_; }

namespace {
thread_local std::optional<ExampleKey> example_key_now;
}  // namespace

std::optional<ExampleKey> example_key() { return example_key_now; }

ExampleKeyScope::ExampleKeyScope(ExampleKey key) : previous_(example_key_now) {
  example_key_now = key;
}
ExampleKeyScope::~ExampleKeyScope() { example_key_now = previous_; }
}  // namespace random

}  // namespace weft
