#include "weft/ops/linalg.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/testing/gradient_check.h"
#include "weft/testing/thread_determinism.h"

namespace weft {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using testing::gradient_check;
using ::testing::HasSubstr;
using testing::second_derivative_check;
using ::testing::ThrowsMessage;
using testing::uniform;

// numpy.matmul on rank >= 2 operands, in double, with optional transposes of the last two axes.
struct Naive {
  Shape shape;
  std::vector<double> values;
  std::vector<double> abs_values;  // sum of |a||b| per output: the scale of rounding error
};

Tensor swap_last_two(const Tensor& t) {
  std::vector<int64_t> perm(t.rank());
  for (int64_t i = 0; i < t.rank(); ++i) perm[i] = i;
  std::swap(perm[t.rank() - 1], perm[t.rank() - 2]);
  return transpose(t, perm);
}

Naive naive_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  Tensor at = ta ? swap_last_two(a) : a;
  Tensor bt = tb ? swap_last_two(b) : b;
  int64_t m = at.dim(-2), k = at.dim(-1), n = bt.dim(-1);
  Shape batch = broadcast_shapes("naive", Shape(at.shape().begin(), at.shape().end() - 2),
                                 Shape(bt.shape().begin(), bt.shape().end() - 2));
  Shape full_a = batch, full_b = batch;
  full_a.insert(full_a.end(), {m, k});
  full_b.insert(full_b.end(), {k, n});
  std::vector<double> av = broadcast_to(at, full_a).to_vector<double>();
  std::vector<double> bv = broadcast_to(bt, full_b).to_vector<double>();
  Naive out;
  out.shape = batch;
  out.shape.insert(out.shape.end(), {m, n});
  int64_t batches = num_elements(batch);
  for (int64_t q = 0; q < batches; ++q) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, sa = 0;
        for (int64_t p = 0; p < k; ++p) {
          double x = av[(q * m + i) * k + p], y = bv[(q * k + p) * n + j];
          s += x * y;
          sa += std::fabs(x * y);
        }
        out.values.push_back(s);
        out.abs_values.push_back(sa);
      }
    }
  }
  return out;
}

void expect_matmul_matches(const Tensor& a, const Tensor& b, bool ta, bool tb, double rel_tol,
                           const std::string& what) {
  Tensor y = matmul(a, b, ta, tb);
  Naive ref = naive_matmul(a, b, ta, tb);
  ASSERT_EQ(y.shape(), ref.shape) << what;
  std::vector<double> yv = y.to_vector<double>();
  for (size_t i = 0; i < yv.size(); ++i) {
    EXPECT_NEAR(yv[i], ref.values[i], rel_tol * std::max(1.0, ref.abs_values[i]))
        << what << " element " << i;
  }
}

Tensor operand(const Shape& shape, uint64_t seed, DType dtype) {
  if (dtype == kInt32) return cast(uniform(shape, seed, -9, 9), kInt32);  // truncates toward 0
  return uniform(shape, seed, -1, 1, dtype);
}

double tolerance(DType t) { return t == kFloat32 ? 1e-6 : 1e-14; }

TEST(Matmul, AllDtypesAndTransposes) {
  for (DType t : {kFloat32, kFloat64, kInt32}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        Shape sa = ta ? Shape{7, 5} : Shape{5, 7};
        Shape sb = tb ? Shape{3, 7} : Shape{7, 3};
        Tensor a = operand(sa, 1, t), b = operand(sb, 2, t);
        Tensor y = matmul(a, b, ta, tb);
        EXPECT_EQ(y.dtype(), t);
        expect_matmul_matches(
            a, b, ta, tb, tolerance(t),
            std::string(dtype_name(t)) + " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
      }
    }
  }
}

TEST(Matmul, Int32IsExact) {
  Tensor a = Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Tensor::from_vector<int32_t>({7, 8, 9, 10, 11, 12}, {3, 2});
  EXPECT_THAT(matmul(a, b).to_vector<int32_t>(), ElementsAre(58, 64, 139, 154));
  EXPECT_THAT(matmul(a, a, false, true).to_vector<int32_t>(), ElementsAre(14, 32, 32, 77));
  EXPECT_THAT(matmul(a, a, true, false).to_vector<int32_t>(),
              ElementsAre(17, 22, 27, 22, 29, 36, 27, 36, 45));
}

TEST(Matmul, LargerShapesFloat32) {
  // Big enough for oneDNN's blocked kernels and tails.
  Tensor a = operand({67, 129}, 3, kFloat32), b = operand({129, 45}, 4, kFloat32);
  expect_matmul_matches(a, b, false, false, 1e-6, "67x129x45");
  expect_matmul_matches(transpose(a), b, true, false, 1e-6, "transposed view, ta");
}

TEST(Matmul, BatchedWithBroadcasting) {
  for (DType t : {kFloat32, kFloat64, kInt32}) {
    Tensor a = operand({2, 1, 3, 4}, 5, t), b = operand({5, 4, 2}, 6, t);
    Tensor y = matmul(a, b);
    EXPECT_EQ(y.shape(), Shape({2, 5, 3, 2}));
    expect_matmul_matches(a, b, false, false, tolerance(t), "(2,1,3,4)@(5,4,2)");
    expect_matmul_matches(operand({3, 4}, 7, t), operand({2, 4, 5}, 8, t), false, false,
                          tolerance(t), "(3,4)@(2,4,5)");
    expect_matmul_matches(operand({2, 4, 3}, 9, t), operand({1, 5, 4}, 10, t), true, true,
                          tolerance(t), "batched both transposed");
    Shape a12 = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 4}, b12 = {2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 2};
    expect_matmul_matches(operand(a12, 11, t), operand(b12, 12, t), false, false, tolerance(t),
                          "rank 12, oneDNN's most");
  }
}

TEST(Matmul, RankOneOperands) {
  for (DType t : {kFloat32, kFloat64}) {
    Tensor v = operand({4}, 11, t), m = operand({4, 3}, 12, t), n = operand({3, 4}, 13, t);
    std::vector<double> vv = v.to_vector<double>(), mv = m.to_vector<double>(),
                        nv = n.to_vector<double>();
    Tensor vm = matmul(v, m);
    ASSERT_EQ(vm.shape(), Shape({3}));
    Tensor nvp = matmul(n, v);
    ASSERT_EQ(nvp.shape(), Shape({3}));
    Tensor vv_dot = matmul(v, v);
    ASSERT_EQ(vv_dot.shape(), Shape{});
    std::vector<double> r1 = vm.to_vector<double>(), r2 = nvp.to_vector<double>();
    double tol = tolerance(t) * 8;
    for (int j = 0; j < 3; ++j) {
      double s1 = 0, s2 = 0;
      for (int p = 0; p < 4; ++p) {
        s1 += vv[p] * mv[p * 3 + j];
        s2 += nv[j * 4 + p] * vv[p];
      }
      EXPECT_NEAR(r1[j], s1, tol);
      EXPECT_NEAR(r2[j], s2, tol);
    }
    double d = 0;
    for (int p = 0; p < 4; ++p) d += vv[p] * vv[p];
    EXPECT_NEAR(vv_dot.item<double>(), d, tol);
    // The matrix operand may still be transposed.
    double s3 = 0;
    for (int p = 0; p < 4; ++p) s3 += vv[p] * nv[1 * 4 + p];
    EXPECT_NEAR(matmul(v, n, false, true).to_vector<double>()[1], s3, tol);
    // Batched matrix with a vector.
    Tensor bm = operand({2, 3, 4}, 14, t);
    EXPECT_EQ(matmul(bm, v).shape(), Shape({2, 3}));
    EXPECT_EQ(matmul(v, transpose(bm, {0, 2, 1})).shape(), Shape({2, 3}));
  }
}

TEST(Matmul, NonContiguousInputs) {
  for (DType t : {kFloat32, kFloat64, kInt32}) {
    Tensor base = operand({8, 10}, 15, t);
    Tensor b = operand({5, 3}, 16, t);
    // Both dimensions strided: neither is dense.
    Tensor a1 = slice(base, {Slice{{}, {}, 2}, Slice{1, {}, 2}});  // (4, 5)
    expect_matmul_matches(a1, b, false, false, tolerance(t), "strided both ways");
    // Rows reversed (negative stride), columns dense.
    Tensor a2 = slice(base, {Slice{{}, {}, -2}, Slice{0, 5}});  // (4, 5)
    expect_matmul_matches(a2, b, false, false, tolerance(t), "negative row stride");
    // Columns reversed.
    Tensor a3 = slice(base, {Slice{0, 4}, Slice{{}, 4, -1}});  // (4, 5)
    expect_matmul_matches(a3, b, false, false, tolerance(t), "negative column stride");
    // A broadcast view (stride 0 in a matrix dimension).
    Tensor a4 = broadcast_to(operand({1, 5}, 17, t), {4, 5});
    expect_matmul_matches(a4, b, false, false, tolerance(t), "broadcast rows");
    // Transposed views given with and without the transpose flag.
    Tensor bt = transpose(operand({3, 5}, 18, t));
    expect_matmul_matches(a1, bt, false, false, tolerance(t), "transposed view");
    expect_matmul_matches(a1, transpose(bt), false, true, tolerance(t), "double transpose");
    // A batch dimension from a broadcast view.
    Tensor batched = broadcast_to(operand({1, 4, 5}, 19, t), {3, 4, 5});
    expect_matmul_matches(batched, b, false, false, tolerance(t), "broadcast batch");
  }
}

TEST(Matmul, MixedDtypesPromote) {
  Tensor a = Tensor::from_vector<int32_t>({1, 2}, {1, 2});
  Tensor b = Tensor::from_vector<float>({0.5f, 0.25f}, {2, 1});
  Tensor y = matmul(a, b);
  EXPECT_EQ(y.dtype(), kFloat64);
  EXPECT_EQ(y.item<double>(), 1.0);
}

TEST(Matmul, EmptyInnerDimensionGivesZeros) {
  Tensor y = matmul(zeros({2, 0}), zeros({0, 3}));
  EXPECT_EQ(y.shape(), Shape({2, 3}));
  EXPECT_THAT(y.to_vector<float>(), ElementsAre(0, 0, 0, 0, 0, 0));
}

TEST(Matmul, EmptyOutputs) {
  for (DType t : {kFloat32, kFloat64, kBFloat16}) {
    EXPECT_EQ(matmul(zeros({0, 3}, t), zeros({3, 4}, t)).shape(), Shape({0, 4}));
    EXPECT_EQ(matmul(zeros({2, 3}, t), zeros({3, 0}, t)).shape(), Shape({2, 0}));
    EXPECT_EQ(matmul(zeros({0, 2, 3}, t), zeros({3, 4}, t)).shape(), Shape({0, 2, 4}));
    EXPECT_EQ(matmul(zeros({0}, t), zeros({0, 5}, t)).shape(), Shape({5}));
  }
  Tensor x = zeros({0, 3}, kFloat64);
  GradientTape tape;
  tape.watch(x);
  Tensor g = tape.gradient(sum(matmul(x, ones({3, 2}, kFloat64))), x);
  EXPECT_EQ(g.shape(), Shape({0, 3}));
}

TEST(Matmul, Float32AgreesWithFloat64) {
  Tensor a = uniform({2, 33, 70}, 20), b = uniform({70, 41}, 21);
  std::vector<double> y64 = matmul(a, b).to_vector<double>();
  std::vector<double> y32 = matmul(cast(a, kFloat32), cast(b, kFloat32)).to_vector<double>();
  ASSERT_EQ(y32.size(), y64.size());
  for (size_t i = 0; i < y64.size(); ++i) EXPECT_NEAR(y32[i], y64[i], 2e-5);
}

TEST(Matmul, HalfTypesRunAndAgree) {
  Tensor a = uniform({8, 16}, 22), b = uniform({16, 4}, 23);
  std::vector<double> ref = matmul(a, b).to_vector<double>();
  for (DType t : {kBFloat16, kFloat16}) {
    Tensor y = matmul(cast(a, t), cast(b, t));
    EXPECT_EQ(y.dtype(), t);
    std::vector<double> yv = cast(y, kFloat64).to_vector<double>();
    for (size_t i = 0; i < ref.size(); ++i) {
      EXPECT_NEAR(yv[i], ref[i], t == kBFloat16 ? 0.1 : 0.02) << dtype_name(t);
    }
  }
}

// A small product times its first calls on one thread and on all, then keeps the faster
// (onednn.cc, ThreadChoice). Every call, before, during and after that choice, gives the same
// bits, and the right product.
TEST(Matmul, SmallProductsAgreeWhileChoosingTheirThreadCount) {
  // The choice is made on 2 threads and not under op determinism (which the environment may set).
  struct Settings {
    int threads = config::num_threads();
    bool deterministic = config::op_determinism_enabled();
    ~Settings() {
      config::set_num_threads(threads);
      if (deterministic) config::enable_op_determinism();
    }
  } saved;
  config::set_num_threads(2);
  config::disable_op_determinism();
  struct Case {
    int64_t m, k, n;
    DType dtype;
  };
  for (Case c :
       {Case{128, 500, 10, kBFloat16}, Case{64, 64, 64, kBFloat16}, Case{128, 10, 500, kBFloat16},
        Case{128, 500, 10, kFloat32}, Case{5, 3, 7, kFloat32}}) {
    Tensor a = cast(uniform({c.m, c.k}, 30), c.dtype), b = cast(uniform({c.k, c.n}, 31), c.dtype);
    std::vector<double> ref = matmul(cast(a, kFloat64), cast(b, kFloat64)).to_vector<double>();
    std::vector<double> first = cast(matmul(a, b), kFloat64).to_vector<double>();
    for (size_t i = 0; i < ref.size(); ++i) {
      ASSERT_NEAR(first[i], ref[i], (c.dtype == kFloat32 ? 1e-5 : 0.02) * (1 + std::abs(ref[i])))
          << c.m << "x" << c.k << "x" << c.n << " " << dtype_name(c.dtype) << " at " << i;
    }
    for (int call = 1; call < 200; ++call) {
      ASSERT_EQ(cast(matmul(a, b), kFloat64).to_vector<double>(), first)
          << c.m << "x" << c.k << "x" << c.n << " " << dtype_name(c.dtype) << ", call " << call;
    }
  }
}

// Past K = 1024 the product is computed in fixed chunks (determinism); half-type chunks add up in
// float32 and are rounded once, so the result is the float32 product of the same (exactly
// representable) inputs rounded to the half type, up to float32 summation order.
TEST(Matmul, LongHalfProductsRoundOnce) {
  Tensor a = uniform({16, 3136}, 24), b = uniform({3136, 8}, 25);
  for (DType t : {kBFloat16, kFloat16}) {
    Tensor ah = cast(a, t), bh = cast(b, t);
    Tensor y = matmul(ah, bh);
    EXPECT_EQ(y.dtype(), t);
    std::vector<double> ref = matmul(cast(ah, kFloat64), cast(bh, kFloat64)).to_vector<double>();
    std::vector<double> yv = cast(y, kFloat64).to_vector<double>();
    double ulp = t == kBFloat16 ? 1.0 / 128 : 1.0 / 1024;  // relative spacing at worst
    for (size_t i = 0; i < ref.size(); ++i) {
      EXPECT_LE(std::abs(yv[i] - ref[i]), ulp * std::abs(ref[i]) * 0.5 + 1e-3) << dtype_name(t);
    }
  }
}

TEST(Matmul, Errors) {
  Tensor a = zeros({2, 3}), b = zeros({4, 5});
  EXPECT_THAT([&] { matmul(a, b); },
              ThrowsMessage<InvalidArgument>(
                  AllOf(HasSubstr("matmul"), HasSubstr("(2, 3)"), HasSubstr("(4, 5)"))));
  EXPECT_THAT(
      [&] {
        matmul(a, zeros({2, 5}), true, true);
      },
      ThrowsMessage<InvalidArgument>(
          AllOf(HasSubstr("(2, 3)"), HasSubstr("(2, 5)"), HasSubstr("transposed"))));
  EXPECT_THAT(
      [&] {
        matmul(zeros({2, 2, 3}), zeros({3, 3, 4}));
      },
      ThrowsMessage<InvalidArgument>(
          AllOf(HasSubstr("matmul"), HasSubstr("(2,)"), HasSubstr("(3,)"))));
  EXPECT_THAT([&] { matmul(zeros({3}), zeros({4})); },
              ThrowsMessage<InvalidArgument>(HasSubstr("matmul")));
  EXPECT_THAT([&] { matmul(Tensor::scalar(1.0, kFloat32), a); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("matmul"), HasSubstr("rank"))));
  EXPECT_THAT(
      [&] {
        matmul(zeros({2, 2}, kBool), zeros({2, 2}, kBool));
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("bool")));
  Shape rank13(13, 2);
  EXPECT_THAT([&] { matmul(zeros(rank13), zeros(rank13)); },
              ThrowsMessage<InvalidArgument>(
                  AllOf(HasSubstr("matmul"), HasSubstr("rank 13"), HasSubstr("at most 12"))));
}

// ---- gradients ---------------------------------------------------------------------------------

TEST(MatmulGradient, AllTransposes) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a = uniform(ta ? Shape{4, 3} : Shape{3, 4}, 30);
      Tensor b = uniform(tb ? Shape{5, 4} : Shape{4, 5}, 31);
      EXPECT_TRUE(
          gradient_check([ta, tb](const auto& xs) { return matmul(xs[0], xs[1], ta, tb); }, {a, b}))
          << ta << tb;
    }
  }
}

TEST(MatmulGradient, BatchedBroadcasting) {
  EXPECT_TRUE(gradient_check([](const auto& xs) { return matmul(xs[0], xs[1]); },
                             {uniform({2, 1, 3, 4}, 32), uniform({5, 4, 2}, 33)}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return matmul(xs[0], xs[1], true, true); },
                             {uniform({2, 4, 3}, 34), uniform({2, 4}, 35)}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return matmul(xs[0], xs[1], false, true); },
                             {uniform({3, 4}, 36), uniform({2, 5, 4}, 37)}));
}

TEST(MatmulGradient, RankOneOperands) {
  EXPECT_TRUE(gradient_check([](const auto& xs) { return matmul(xs[0], xs[1]); },
                             {uniform({4}, 38), uniform({4, 3}, 39)}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return matmul(xs[0], xs[1]); },
                             {uniform({2, 3, 4}, 40), uniform({4}, 41)}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return matmul(xs[0], xs[1]); },
                             {uniform({4}, 42), uniform({4}, 43)}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return matmul(xs[0], xs[1], false, true); },
                             {uniform({4}, 44), uniform({3, 4}, 45)}));
}

TEST(MatmulGradient, NonContiguousInputs) {
  Tensor base = uniform({8, 10}, 46);
  EXPECT_TRUE(gradient_check(
      [](const auto& xs) {
        return matmul(slice(xs[0], {Slice{{}, {}, 2}, Slice{1, {}, 2}}), transpose(xs[1]));
      },
      {base, uniform({3, 5}, 47)}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return matmul(xs[0], xs[1]); },
                             {slice(base, {Slice{{}, {}, -2}, Slice{0, 5}}), uniform({5, 3}, 48)}));
}

TEST(MatmulGradient, SecondDerivativeThroughTanh) {
  EXPECT_TRUE(second_derivative_check(
      [](const auto& xs) { return tanh(matmul(tanh(matmul(xs[0], xs[1])), xs[2])); },
      {uniform({2, 3}, 49), uniform({3, 4}, 50), uniform({4, 2}, 51)}));
}

TEST(MatmulGradient, Float32AgreesWithFloat64) {
  Tensor a = uniform({6, 9}, 52), b = uniform({9, 4}, 53), g = uniform({6, 4}, 54);
  auto grads = [&](DType t) {
    Tensor x = cast(a, t), w = cast(b, t);
    GradientTape tape;
    tape.watch({x, w});
    return tape.gradient(matmul(x, w), std::vector<Tensor>{x, w}, cast(g, t));
  };
  auto g32 = grads(kFloat32), g64 = grads(kFloat64);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(g32[k].dtype(), kFloat32);
    std::vector<double> u = g32[k].to_vector<double>(), v = g64[k].to_vector<double>();
    for (size_t i = 0; i < u.size(); ++i) EXPECT_NEAR(u[i], v[i], 1e-5);
  }
}

// ---- determinism across thread counts ----------------------------------------------------------

// y = x @ W + b with a fixed upstream gradient: forward y, dx, dW = x^T g and db = sum_batch g,
// bit-identical at 1, 2 and 3 threads.
void expect_dense_deterministic(int64_t batch, int64_t in, int64_t out, DType t = kFloat32) {
  Tensor x = cast(stateless_random_uniform({batch, in}, {1, 2}, -1, 1), t);
  Tensor w = cast(stateless_random_uniform({in, out}, {3, 4}, -0.1, 0.1), t);
  Tensor b = cast(stateless_random_uniform({out}, {5, 6}, -0.1, 0.1), t);
  Tensor g = cast(stateless_random_uniform({batch, out}, {7, 8}, -1, 1), t);
  auto dense_step = [&] {
    GradientTape tape;
    tape.watch({x, w, b});
    Tensor y = add(matmul(x, w), b);
    std::vector<Tensor> grads = tape.gradient(y, std::vector<Tensor>{x, w, b}, g);
    return std::vector<Tensor>{y, grads[0], grads[1], grads[2]};
  };
  EXPECT_EQ(testing::thread_count_differences(dense_step, {"y", "dx", "dW", "db"}), "")
      << "x " << batch << "x" << in << ", W " << in << "x" << out;
}

TEST(MatmulDeterminism, DenseLayerGradientsAtTutorialShapes) {
  expect_dense_deterministic(128, 784, 700);
}

TEST(MatmulDeterminism, DenseLayerGradientsTallK) { expect_dense_deterministic(4096, 64, 32); }

// Batched products as attention makes them (a broadcast weight, then batch against batch): oneDNN's
// gemm kernels cut these over the batch, and weft's blocks then do.
TEST(MatmulDeterminism, BatchedProductsAtAttentionShapes) {
  Tensor x = stateless_random_uniform({16, 64, 96}, {9, 10}, -1, 1);
  Tensor w = stateless_random_uniform({96, 96}, {11, 12}, -0.1, 0.1);
  EXPECT_EQ(testing::thread_count_differences(
                [&] {
                  Tensor q = matmul(x, w);
                  Tensor scores = matmul(q, x, false, true);
                  return std::vector<Tensor>{q, scores, matmul(scores, x)};
                },
                {"x @ W", "q @ x^T", "scores @ x"}),
            "");
}

// Large unbatched products, which oneDNN's copy-based gemm kernels (AVX2) or its brgemm kernels
// keep threading themselves.
TEST(MatmulDeterminism, LargeProducts) {
  Tensor x = stateless_random_uniform({640, 700}, {13, 14}, -1, 1);
  Tensor w = stateless_random_uniform({700, 650}, {15, 16}, -0.1, 0.1);
  EXPECT_EQ(testing::thread_count_differences([&] { return std::vector<Tensor>{matmul(x, w)}; },
                                              {"640x700 @ 700x650"}),
            "");
}

TEST(MatmulDeterminism, Bfloat16DenseLayerGradientsWithLongK) {
  expect_dense_deterministic(128, 3136, 128, kBFloat16);
}

}  // namespace
}  // namespace weft
