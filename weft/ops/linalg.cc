#include "weft/ops/linalg.h"

#include <algorithm>

#include "weft/autodiff/tape.h"
#include "weft/core/op_scope.h"
#include "weft/core/parallel.h"
#include "weft/ops/cast.h"
#include "weft/ops/onednn/onednn.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft {
namespace {

// A tensor as a batched matrix operand: rank >= 2 dims and strides, transposes applied.
onednn::MatmulOperand operand(const Tensor& t, bool transpose, size_t rank) {
  onednn::MatmulOperand op{t.raw_data(), {}, {}};
  for (size_t i = t.shape().size(); i < rank; ++i) {  // broadcast batch dims
    op.dims.push_back(1);
    op.strides.push_back(0);
  }
  for (size_t i = 0; i < t.shape().size(); ++i) {
    op.dims.push_back(t.shape()[i]);
    bool batch = i + 2 < t.shape().size();
    op.strides.push_back(batch && t.shape()[i] == 1 ? 0 : t.strides()[i]);
  }
  if (transpose) {
    std::swap(op.dims[rank - 1], op.dims[rank - 2]);
    std::swap(op.strides[rank - 1], op.strides[rank - 2]);
  }
  return op;
}

// The product's destination, as allocated.
onednn::MatmulOperand output_operand(const Tensor& t) {
  onednn::MatmulOperand op{t.raw_data(), {}, {}};
  for (size_t i = 0; i < t.shape().size(); ++i) {
    op.dims.push_back(t.shape()[i]);
    op.strides.push_back(t.strides()[i]);
  }
  return op;
}

// `t` as a matmul takes it: in `dtype`, and with strides oneDNN accepts (one of the two matrix
// dimensions dense, none negative, as a slice with a negative step makes). `t` itself when it
// already is, otherwise the converted tensor, kept in `converted`.
const Tensor& matmul_input(const Tensor& t, DType dtype, Tensor& converted) {
  int64_t r = t.rank();
  bool ok = t.strides()[r - 1] == 1 || t.strides()[r - 2] == 1 || t.shape()[r - 1] == 1 ||
            t.shape()[r - 2] == 1;
  ok = ok && std::all_of(t.strides().begin(), t.strides().end(), [](int64_t s) { return s >= 0; });
  if (ok && t.dtype() == dtype) return t;
  converted = cast(t, dtype);
  if (!ok) converted = contiguous(converted);
  return converted;
}

template <typename T>
void reference_matmul(const onednn::MatmulOperand& a, const onednn::MatmulOperand& b,
                      const onednn::MatmulOperand& c) {
  size_t r = c.dims.size();
  int64_t m = c.dims[r - 2], n = c.dims[r - 1], k = a.dims[r - 1];
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < r; ++i) batch *= c.dims[i];
  parallel_for(batch * m, 16, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t bi = row / m, i = row % m;
      int64_t ao = 0, bo = 0, co = 0, rem = bi;
      for (size_t d = r - 2; d-- > 0;) {
        int64_t idx = rem % c.dims[d];
        rem /= c.dims[d];
        ao += idx * a.strides[d];
        bo += idx * b.strides[d];
        co += idx * c.strides[d];
      }
      const T* pa = static_cast<const T*>(a.data) + ao + i * a.strides[r - 2];
      const T* pb = static_cast<const T*>(b.data) + bo;
      T* pc = static_cast<T*>(c.data) + co + i * c.strides[r - 2];
      for (int64_t j = 0; j < n; ++j) {
        compute_t<T> acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          acc += static_cast<compute_t<T>>(pa[p * a.strides[r - 1]]) *
                 static_cast<compute_t<T>>(pb[p * b.strides[r - 2] + j * b.strides[r - 1]]);
        }
        pc[j * c.strides[r - 1]] = static_cast<T>(acc);
      }
    }
  });
}

Tensor matmul_2d_plus(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  int64_t ra = a.rank(), rb = b.rank();
  int64_t m = a.shape()[ra - (ta ? 1 : 2)], ka = a.shape()[ra - (ta ? 2 : 1)];
  int64_t kb = b.shape()[rb - (tb ? 1 : 2)], n = b.shape()[rb - (tb ? 2 : 1)];
  WEFT_CHECK(ka == kb, InvalidArgument)
      << "matmul: inner dimensions do not match: a has shape " << shape_str(a.shape())
      << (ta ? " (transposed)" : "") << ", b has shape " << shape_str(b.shape())
      << (tb ? " (transposed)" : "") << "; " << ka << " != " << kb;
  Shape batch = broadcast_shapes("matmul", Shape(a.shape().begin(), a.shape().end() - 2),
                                 Shape(b.shape().begin(), b.shape().end() - 2));
  WEFT_CHECK(batch.size() + 2 <= onednn::MatmulDims::kMaxRank, InvalidArgument)
      << "matmul: operands of rank " << batch.size() + 2 << " (shapes " << shape_str(a.shape())
      << " and " << shape_str(b.shape()) << "); at most " << onednn::MatmulDims::kMaxRank
      << " are supported";
  Shape out_shape;
  out_shape.reserve(batch.size() + 2);
  out_shape.insert(out_shape.end(), batch.begin(), batch.end());
  out_shape.push_back(m);
  out_shape.push_back(n);
  DType dtype = promote_types(a.dtype(), b.dtype());
  WEFT_CHECK(dtype != kBool, InvalidArgument) << "matmul: not defined for bool tensors";
  Tensor x_converted, y_converted;
  const Tensor& x = matmul_input(a, dtype, x_converted);
  const Tensor& y = matmul_input(b, dtype, y_converted);
  size_t rank = out_shape.size();
  Tensor out = Tensor::empty(std::move(out_shape), dtype);
  auto oa = operand(x, ta, rank), ob = operand(y, tb, rank);
  onednn::MatmulOperand oc = output_operand(out);
  if (out.numel() == 0) {
    // Nothing to compute; oneDNN divides by zero on an empty M, N or batch.
  } else if (ka == 0) {
    assign_into(out, Tensor::scalar(0, dtype));
  } else if (onednn::supports(dtype)) {
    onednn::matmul(dtype, oa, ob, oc);
  } else if (is_half(dtype)) {
    // A half type this oneDNN cannot compute in (float16 on oneDNN 2.x CPUs): products of halves
    // are exact in float32, so float32 operands with float32 accumulation, rounded once at the
    // end, is what a native kernel computes.
    autodiff::NoRecordScope no_record;  // matmul records itself
    Tensor x32 = cast(x, kFloat32), y32 = cast(y, kFloat32);
    Tensor out32 = Tensor::empty(out.shape(), kFloat32);
    onednn::matmul(kFloat32, operand(x32, ta, rank), operand(y32, tb, rank), output_operand(out32));
    assign_into(out, out32);
  } else {
    dispatch_dtype(dtype, [&]<typename T>() { reference_matmul<T>(oa, ob, oc); });
  }
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  WEFT_CHECK(a.defined() && b.defined(), InvalidArgument) << "matmul: an input is undefined";
  WEFT_CHECK(a.rank() >= 1 && b.rank() >= 1, InvalidArgument)
      << "matmul: operands must have rank >= 1, got shapes " << shape_str(a.shape()) << " and "
      << shape_str(b.shape());
  // numpy.matmul: a vector operand becomes a matrix, and its unit axis is dropped afterwards.
  if (a.rank() == 1 || b.rank() == 1) {
    Tensor a2 = a.rank() == 1 ? reshape(a, {1, a.shape()[0]}) : a;
    Tensor b2 = b.rank() == 1 ? reshape(b, {b.shape()[0], 1}) : b;
    Tensor out = matmul(a2, b2, a.rank() == 1 ? false : ta, b.rank() == 1 ? false : tb);
    if (a.rank() == 1) out = squeeze(out, {-2});
    if (b.rank() == 1) out = squeeze(out, {-1});
    return out;
  }
  OpScope op("matmul", a, b);
  if (op.spmd()) {
    return op.run({SpmdRule::Kind::kMatmul, ta, tb}, {a, b},
                  [ta, tb](const SpmdArgs& c) { return matmul(c[0], c[1], ta, tb); });
  }
  Tensor out = matmul_2d_plus(a, b, ta, tb);
  if (autodiff::is_recording() && is_floating(out.dtype())) {
    autodiff::record("matmul", {a, b}, {out}, [a, b, ta, tb](const autodiff::Grads& g) {
      auto back = [&](size_t k, const Tensor& in, auto product) {
        if (!g.needs(k) || !is_floating(in.dtype())) return Tensor();
        return cast(sum_to(product(), in.shape()), in.dtype());
      };
      // A matrix b applied to every matrix of a batch (a Dense on (batch, steps, features)): its
      // gradient in one product over all rows, rather than one per matrix summed afterwards.
      auto rows = [](const Tensor& t) { return reshape(t, {-1, t.dim(-1)}); };
      const bool shared_b = b.rank() == 2 && a.rank() > 2 && !ta;
      return std::vector<Tensor>{
          back(0, a, [&] { return ta ? matmul(b, g[0], tb, true) : matmul(g[0], b, false, !tb); }),
          back(1, b, [&] {
            if (shared_b)
              return tb ? matmul(rows(g[0]), rows(a), true) : matmul(rows(a), rows(g[0]), true);
            return tb ? matmul(g[0], a, true, ta) : matmul(a, g[0], !ta, false);
          })};
    });
  }
  return out;
}

}  // namespace weft
