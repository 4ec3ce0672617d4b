// Rows along the sorted axis are made contiguous and sorted one by one (rows in parallel). The
// radix path maps each float32/int32 to a uint32 key whose unsigned order is the value order
// (NaN mapped above +inf), and sorts (key, index) pairs stably; the comparison path sorts indices
// with std::stable_sort.
#include "weft/ops/sort.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/core/op_scope.h"
#include "weft/core/parallel.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/internal/axis_perms.h"
#include "weft/ops/shape_ops.h"

namespace weft {
namespace {

using ops::internal::last_axis_perms;

// A key whose unsigned order is v's order, every NaN last. With zeros_equal, -0 and +0 share a
// key (argsort keeps equal values in their order); without, -0 sorts just before +0 and both
// come back with their sign.
uint32_t radix_key(float v, bool zeros_equal = true) {
  if (v != v) return 0xFFFFFFFFu;
  uint32_t b = std::bit_cast<uint32_t>(zeros_equal && v == 0 ? 0.0f : v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
uint32_t radix_key(int32_t v, bool = true) { return static_cast<uint32_t>(v) ^ 0x80000000u; }
float float_of_key(uint32_t k) {
  if (k == 0xFFFFFFFFu) return std::numeric_limits<float>::quiet_NaN();
  return std::bit_cast<float>((k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k);
}

constexpr int kDigitBits = 11, kDigits = 1 << kDigitBits, kPasses = 3;

// Stable LSD radix sort of n keys (and, when `index` is not null, their positions): the three
// digit histograms in one pass, then three scatters.
void radix_sort(uint32_t* keys, uint32_t* index, size_t n) {
  std::vector<uint32_t> count(kPasses * kDigits, 0);
  for (size_t i = 0; i < n; ++i) {
    uint32_t k = keys[i];
    ++count[k & (kDigits - 1)];
    ++count[kDigits + ((k >> kDigitBits) & (kDigits - 1))];
    ++count[2 * kDigits + (k >> (2 * kDigitBits))];
  }
  std::unique_ptr<uint32_t[]> keys2(new uint32_t[n]), index2(index ? new uint32_t[n] : nullptr);
  uint32_t *src_k = keys, *dst_k = keys2.get(), *src_i = index, *dst_i = index2.get();
  for (int p = 0; p < kPasses; ++p) {
    uint32_t* c = count.data() + p * kDigits;
    uint32_t total = 0;
    for (int d = 0; d < kDigits; ++d) {
      uint32_t here = c[d];
      c[d] = total;
      total += here;
    }
    int shift = p * kDigitBits;
    for (size_t i = 0; i < n; ++i) {
      uint32_t at = c[(src_k[i] >> shift) & (kDigits - 1)]++;
      dst_k[at] = src_k[i];
      if (index) dst_i[at] = src_i[i];
    }
    std::swap(src_k, dst_k);
    std::swap(src_i, dst_i);
  }
  // An odd number of passes ends in the scratch buffers: copy back.
  std::copy(src_k, src_k + n, keys);
  if (index) std::copy(src_i, src_i + n, index);
}

// a before b in NumPy's order: ascending, NaN last.
template <typename C>
bool before(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (b != b) return a == a;
  }
  return a < b;
}

// float32 and int32 rows of fewer than 2^32 elements sort by radix.
template <typename T>
bool radix_sortable(int64_t n) {
  return (std::is_same_v<T, float> || std::is_same_v<T, int32_t>)&&n < (int64_t{1} << 32);
}

// The stable sorting permutation of one row of n values.
template <typename T>
void argsort_row(const T* v, int64_t n, int64_t* order) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, int32_t>) {
    if (radix_sortable<T>(n)) {
      std::vector<uint32_t> keys(static_cast<size_t>(n)), index(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        keys[i] = radix_key(v[i]);
        index[i] = static_cast<uint32_t>(i);
      }
      radix_sort(keys.data(), index.data(), keys.size());
      std::copy(index.begin(), index.end(), order);
      return;
    }
  }
  using C = compute_t<T>;
  std::iota(order, order + n, int64_t{0});
  std::stable_sort(order, order + n, [v](int64_t a, int64_t b) {
    return before(static_cast<C>(v[a]), static_cast<C>(v[b]));
  });
}

template <typename T>
T value_of_key(uint32_t k) {
  if constexpr (std::is_same_v<T, float>) {
    return float_of_key(k);
  } else {
    return static_cast<int32_t>(k ^ 0x80000000u);
  }
}

// One row of n values sorted into `out` (values only: no permutation to carry). A long float32
// or int32 row is cut into one chunk per thread: each radix-sorts its chunk's keys, then the
// threads merge the two halves' keys from both ends (the first half of the output from the
// fronts, the second from the backs) and decode them.
template <typename T>
void sort_row(const T* v, int64_t n, T* out, int threads) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, int32_t>) {
    if (radix_sortable<T>(n)) {
      uint32_t* keys = reinterpret_cast<uint32_t*>(out);  // T and uint32_t have one size
      if (threads < 2 || n < (1 << 16)) {
        for (int64_t i = 0; i < n; ++i) keys[i] = radix_key(v[i], false);
        radix_sort(keys, nullptr, static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) out[i] = value_of_key<T>(keys[i]);
        return;
      }
      std::unique_ptr<uint32_t[]> halves(new uint32_t[n]);
      int64_t mid = n / 2;
      parallel_for(2, 1, [&](int64_t begin, int64_t end) {
        for (int64_t h = begin; h < end; ++h) {
          int64_t lo = h == 0 ? 0 : mid, hi = h == 0 ? mid : n;
          for (int64_t i = lo; i < hi; ++i) halves[i] = radix_key(v[i], false);
          radix_sort(halves.get() + lo, nullptr, static_cast<size_t>(hi - lo));
        }
      });
      const uint32_t *a = halves.get(), *b = halves.get() + mid;
      int64_t na = mid, nb = n - mid;
      parallel_for(2, 1, [&](int64_t begin, int64_t end) {
        for (int64_t h = begin; h < end; ++h) {
          if (h == 0) {  // the smallest `mid` keys, from the fronts (branch-free while both last)
            int64_t i = 0, j = 0, k = 0;
            for (; k < mid && i < na && j < nb; ++k) {
              uint32_t x = a[i], y = b[j];
              bool take_a = x <= y;
              out[k] = value_of_key<T>(take_a ? x : y);
              i += take_a;
              j += !take_a;
            }
            for (; k < mid; ++k) out[k] = value_of_key<T>(i < na ? a[i++] : b[j++]);
          } else {  // the largest n - mid keys, from the backs (ties: b's last first: stable)
            int64_t i = na - 1, j = nb - 1, k = n - 1;
            for (; k >= mid && i >= 0 && j >= 0; --k) {
              uint32_t x = a[i], y = b[j];
              bool take_b = y >= x;
              out[k] = value_of_key<T>(take_b ? y : x);
              j -= take_b;
              i -= !take_b;
            }
            for (; k >= mid; --k) out[k] = value_of_key<T>(j >= 0 ? b[j--] : a[i--]);
          }
        }
      });
      return;
    }
  }
  using C = compute_t<T>;
  std::copy(v, v + n, out);
  std::sort(out, out + n, [](T a, T b) { return before(static_cast<C>(a), static_cast<C>(b)); });
}

// x's rows along `axis` (made last and contiguous) passed to row(values, n, out) in parallel, out
// being the same row of a new tensor of `out_dtype`; the result in x's layout.
struct Rows {
  Tensor rows;  // x with `axis` last, contiguous
  std::vector<int64_t> back;
  int64_t n = 0, count = 0;
};

Rows rows_of(const char* op, const Tensor& x, int64_t axis) {
  WEFT_CHECK(x.defined(), InvalidArgument) << op << ": the input is undefined";
  Tensor base = x.rank() == 0 ? reshape(x, {1}) : x;
  int64_t a = normalize_axis(op, axis, base.rank());
  auto [to_last, back] = last_axis_perms(a, base.rank());
  Rows r{contiguous(transpose(base, to_last)), back, base.dim(a), 0};
  r.count = r.n == 0 ? 0 : r.rows.numel() / r.n;
  return r;
}

template <typename Out, typename Row>
Tensor each_row(const Rows& r, DType out_dtype, Row row) {
  Tensor out = Tensor::empty(r.rows.shape(), out_dtype);
  Out* o = out.data<Out>();
  int64_t n = r.n;
  dispatch_dtype(r.rows.dtype(), [&]<typename T>() {
    const T* v = r.rows.data<T>();
    parallel_for(r.count, std::max<int64_t>(1, 65536 / std::max<int64_t>(n, 1)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t i = begin; i < end; ++i) row(v + i * n, n, o + i * n);
                 });
  });
  return out;
}

Tensor in_layout(const Tensor& t, const Tensor& x, const Rows& r) {
  return x.rank() == 0 ? reshape(t, {}) : transpose(t, r.back);
}

// The stable sorting permutation of every row (int64).
Tensor row_order(const Rows& r) {
  return each_row<int64_t>(r, kInt64,
                           [](const auto* v, int64_t n, int64_t* o) { argsort_row(v, n, o); });
}

// out[row, j] = x[row, perm[row, j]] for contiguous (rows, n) tensors; its gradient scatters g
// back through the inverse permutation, itself a permute_rows (so it nests).
Tensor permute_rows(const Tensor& x, const Tensor& perm) {
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  int64_t n = x.rank() == 0 ? 1 : x.dim(-1);
  int64_t rows = n == 0 ? 0 : x.numel() / n;
  const int64_t* p = perm.data<int64_t>();
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    const T* in = x.data<T>();
    T* o = out.data<T>();
    parallel_for(rows, std::max<int64_t>(1, 65536 / std::max<int64_t>(n, 1)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t r = begin; r < end; ++r) {
                     for (int64_t j = 0; j < n; ++j) o[r * n + j] = in[r * n + p[r * n + j]];
                   }
                 });
  });
  if (autodiff::is_recording() && is_floating(x.dtype())) {
    autodiff::record("permute_rows", {x}, {out}, [perm, n, rows](const autodiff::Grads& g) {
      Tensor inverse = Tensor::empty(perm.shape(), kInt64);
      const int64_t* p = perm.data<int64_t>();
      int64_t* q = inverse.data<int64_t>();
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < n; ++j) q[r * n + p[r * n + j]] = j;
      }
      return std::vector<Tensor>{permute_rows(contiguous(g[0]), inverse)};
    });
  }
  return out;
}

}  // namespace

Tensor sort(const Tensor& x, int64_t axis) {
  OpScope op("sort", x);
  if (op.spmd()) {  // that axis whole on each device
    const int64_t a = normalize_axis("sort", axis, x.rank());
    return op.run(SpmdRule{SpmdRule::Kind::kAlongAxis, false, false, {a}}, {x},
                  [a](const SpmdArgs& c) { return sort(c[0], a); });
  }
  Rows r = rows_of("sort", x, axis);
  if (autodiff::is_recording() && is_floating(x.dtype())) {
    // The gradient needs the permutation: gather through it (its backward scatters back).
    return in_layout(permute_rows(r.rows, row_order(r)), x, r);
  }
  Tensor out = Tensor::empty(r.rows.shape(), r.rows.dtype());
  // One long row uses every thread itself; several rows share the threads out.
  int threads = r.count == 1 ? config::num_threads() : 1;
  dispatch_dtype(r.rows.dtype(), [&]<typename T>() {
    const T* v = r.rows.data<T>();
    T* o = out.data<T>();
    int64_t n = r.n;
    parallel_for(r.count, std::max<int64_t>(1, 65536 / std::max<int64_t>(n, 1)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t i = begin; i < end; ++i) sort_row(v + i * n, n, o + i * n, threads);
                 });
  });
  return in_layout(out, x, r);
}

Tensor argsort(const Tensor& x, int64_t axis) {
  OpScope op("argsort", x);
  if (op.spmd()) {
    const int64_t a = normalize_axis("argsort", axis, x.rank());
    return op.run(SpmdRule{SpmdRule::Kind::kAlongAxis, false, false, {a}}, {x},
                  [a](const SpmdArgs& c) { return argsort(c[0], a); });
  }
  Rows r = rows_of("argsort", x, axis);
  return in_layout(row_order(r), x, r);
}

TopK top_k(const Tensor& x, int64_t k, bool sorted) {
  WEFT_CHECK(x.defined() && x.rank() >= 1, InvalidArgument)
      << "top_k: the input must have at least one axis, got "
      << (x.defined() ? "a scalar" : "an undefined tensor");
  const int64_t n = x.dim(-1);
  WEFT_CHECK(k >= 0 && k <= n, InvalidArgument)
      << "top_k: k must be in [0, " << n << "] (the last axis of " << shape_str(x.shape())
      << "), got " << k;
  OpScope op("top_k", x);
  if (op.spmd()) {  // the last axis whole on each device
    std::vector<Tensor> r =
        op.run_all(SpmdRule{SpmdRule::Kind::kAlongAxis, false, false, {x.rank() - 1}}, {x},
                   [=](const SpmdArgs& c) {
                     TopK t = top_k(c[0], k, sorted);
                     return std::vector<Tensor>{t.values, t.indices};
                   });
    return {r[0], r[1]};
  }
  Tensor rows = contiguous(reshape(x, {-1, n}));
  const int64_t count = rows.dim(0);
  Tensor positions = Tensor::empty({count, k}, kInt64);
  int64_t* pos = positions.data<int64_t>();
  dispatch_dtype(rows.dtype(), [&]<typename T>() {
    using C = compute_t<T>;
    const T* v = rows.data<T>();
    parallel_for(count, std::max<int64_t>(1, 65536 / std::max<int64_t>(n, 1)),
                 [&](int64_t begin, int64_t end) {
                   std::vector<int64_t> order(static_cast<size_t>(n));
                   for (int64_t r = begin; r < end; ++r) {
                     const T* row = v + r * n;
                     std::iota(order.begin(), order.end(), int64_t{0});
                     // Larger first, NaN largest; equal values by position: a total order.
                     std::partial_sort(order.begin(), order.begin() + k, order.end(),
                                       [row](int64_t a, int64_t b) {
                                         C x = static_cast<C>(row[a]), y = static_cast<C>(row[b]);
                                         if (before(y, x)) return true;
                                         if (before(x, y)) return false;
                                         return a < b;
                                       });
                     std::copy(order.begin(), order.begin() + k, pos + r * k);
                   }
                 });
  });
  // The values by a gather, whose gradient scatters into the chosen positions.
  Tensor flat = add(positions, reshape(mul(arange(0, count, 1, kInt64), n), {count, 1}));
  Shape out_shape = x.shape();
  out_shape.back() = k;
  Tensor values = reshape(gather(reshape(rows, {-1}), reshape(flat, {-1}), 0), out_shape);
  (void)sorted;
  return {values, reshape(cast(positions, kInt32), out_shape)};
}

}  // namespace weft
