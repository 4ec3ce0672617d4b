// Rows along the sorted axis are made contiguous and sorted one by one (rows in parallel). The
// radix path maps each float32/int32 to a uint32 key whose unsigned order is the value order
// (NaN mapped above +inf), and sorts (key, index) pairs stably; the comparison path sorts indices
// with std::stable_sort.
#include "weft/ops/sort.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/core/parallel.h"
#include "weft/ops/cast.h"
#include "weft/ops/shape_ops.h"

namespace weft {
namespace {

// The permutation that moves `axis` last, and its inverse.
std::pair<std::vector<int64_t>, std::vector<int64_t>> last_axis_perms(int64_t axis, int64_t rank) {
  std::vector<int64_t> to_last;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != axis) to_last.push_back(i);
  }
  to_last.push_back(axis);
  std::vector<int64_t> back(rank);
  for (int64_t i = 0; i < rank; ++i) back[to_last[i]] = i;
  return {to_last, back};
}

uint32_t radix_key(float v) {
  if (v != v) return 0xFFFFFFFFu;                           // every NaN last
  uint32_t b = std::bit_cast<uint32_t>(v == 0 ? 0.0f : v);  // -0 and +0 equal, as comparisons
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
uint32_t radix_key(int32_t v) { return static_cast<uint32_t>(v) ^ 0x80000000u; }

// Stable LSD radix sort of n keys with their row positions, three 11-bit digits.
void radix_sort(std::vector<uint32_t>& keys, std::vector<int64_t>& index) {
  size_t n = keys.size();
  std::vector<uint32_t> keys2(n);
  std::vector<int64_t> index2(n);
  for (int shift = 0; shift < 32; shift += 11) {
    uint32_t count[2049] = {};
    for (uint32_t k : keys) ++count[((k >> shift) & 2047u) + 1];
    for (int d = 0; d < 2048; ++d) count[d + 1] += count[d];
    for (size_t i = 0; i < n; ++i) {
      uint32_t at = count[(keys[i] >> shift) & 2047u]++;
      keys2[at] = keys[i];
      index2[at] = index[i];
    }
    keys.swap(keys2);
    index.swap(index2);
  }
}

// a before b in NumPy's order: ascending, NaN last.
template <typename C>
bool before(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (b != b) return a == a;
  }
  return a < b;
}

// The stable sorting permutation of one row of n values.
template <typename T>
void sort_row(const T* v, int64_t n, int64_t* order) {
  std::vector<int64_t> index(static_cast<size_t>(n));
  std::iota(index.begin(), index.end(), int64_t{0});
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, int32_t>) {
    std::vector<uint32_t> keys(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) keys[i] = radix_key(v[i]);
    radix_sort(keys, index);
  } else {
    using C = compute_t<T>;
    std::stable_sort(index.begin(), index.end(), [v](int64_t a, int64_t b) {
      return before(static_cast<C>(v[a]), static_cast<C>(v[b]));
    });
  }
  std::copy(index.begin(), index.end(), order);
}

// x's rows (along `axis`, made last and contiguous) and the permutation sorting each.
struct SortedRows {
  Tensor rows;   // x with `axis` last, contiguous
  Tensor order;  // int64, same shape: row positions in sorted order
  std::vector<int64_t> back;
};

SortedRows sort_rows(const char* op, const Tensor& x, int64_t axis) {
  WEFT_CHECK(x.defined(), InvalidArgument) << op << ": the input is undefined";
  Tensor base = x.rank() == 0 ? reshape(x, {1}) : x;
  int64_t a = normalize_axis(op, axis, base.rank());
  auto [to_last, back] = last_axis_perms(a, base.rank());
  Tensor rows = contiguous(transpose(base, to_last));
  Tensor order = Tensor::empty(rows.shape(), kInt64);
  int64_t n = base.dim(a);
  int64_t count = n == 0 ? 0 : rows.numel() / n;
  int64_t* o = order.data<int64_t>();
  dispatch_dtype(rows.dtype(), [&]<typename T>() {
    const T* v = rows.data<T>();
    parallel_for(count, std::max<int64_t>(1, 65536 / std::max<int64_t>(n, 1)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t r = begin; r < end; ++r) sort_row(v + r * n, n, o + r * n);
                 });
  });
  return {rows, order, back};
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

Tensor in_original_layout(const Tensor& t, const Tensor& x, const std::vector<int64_t>& back) {
  return x.rank() == 0 ? reshape(t, {}) : transpose(t, back);
}

}  // namespace

Tensor sort(const Tensor& x, int64_t axis) {
  SortedRows s = sort_rows("sort", x, axis);
  return in_original_layout(permute_rows(s.rows, s.order), x, s.back);
}

Tensor argsort(const Tensor& x, int64_t axis) {
  SortedRows s = sort_rows("argsort", x, axis);
  return in_original_layout(s.order, x, s.back);
}

}  // namespace weft
