#include "weft/core/tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "weft/core/errors.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/shape_ops.h"

namespace weft {
namespace {

using ::testing::AllOf;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using ::testing::ThrowsMessage;

constexpr DType kAll[] = {kBool, kUInt8, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};

// ---- dtypes ------------------------------------------------------------------------------------

TEST(DType, PromotionTableMatchesNumPy) {
  // Rows and columns in kAll order; bfloat16 as ml_dtypes (with float16 -> float32).
  const DType b = kBool, u8 = kUInt8, i32 = kInt32, i64 = kInt64, f16 = kFloat16, bf16 = kBFloat16,
              f32 = kFloat32, f64 = kFloat64;
  const DType expected[8][8] = {
      /* bool */ {b, u8, i32, i64, f16, bf16, f32, f64},
      /* u8   */ {u8, u8, i32, i64, f16, bf16, f32, f64},
      /* i32  */ {i32, i32, i32, i64, f64, f64, f64, f64},
      /* i64  */ {i64, i64, i64, i64, f64, f64, f64, f64},
      /* f16  */ {f16, f16, f64, f64, f16, f32, f32, f64},
      /* bf16 */ {bf16, bf16, f64, f64, f32, bf16, f32, f64},
      /* f32  */ {f32, f32, f64, f64, f32, f32, f32, f64},
      /* f64  */ {f64, f64, f64, f64, f64, f64, f64, f64},
  };
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      EXPECT_EQ(promote_types(kAll[i], kAll[j]), expected[i][j])
          << dtype_name(kAll[i]) << " + " << dtype_name(kAll[j]);
    }
  }
}

TEST(DType, PromotionWithCppScalars) {
  EXPECT_EQ(promote_with_scalar(kInt32, false), kInt32);
  EXPECT_EQ(promote_with_scalar(kInt32, true), kFloat64);
  EXPECT_EQ(promote_with_scalar(kUInt8, false), kUInt8);
  EXPECT_EQ(promote_with_scalar(kBool, false), kInt64);
  EXPECT_EQ(promote_with_scalar(kBool, true), kFloat64);
  EXPECT_EQ(promote_with_scalar(kFloat16, true), kFloat16);
  EXPECT_EQ(promote_with_scalar(kBFloat16, false), kBFloat16);
  EXPECT_EQ(promote_with_scalar(kFloat32, true), kFloat32);
  EXPECT_TRUE(Scalar(1.5f).is_float);
  EXPECT_TRUE(Scalar(2.0).is_float);
  EXPECT_FALSE(Scalar(2).is_float);
  EXPECT_FALSE(Scalar(int64_t{1} << 40).is_float);
  EXPECT_EQ(Scalar(int64_t{1} << 40).value, 1099511627776.0);
}

TEST(DType, NamesSizesAndParsing) {
  for (DType t : kAll) EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  EXPECT_EQ(dtype_name(kBFloat16), "bfloat16");
  EXPECT_EQ(dtype_from_name("float"), kFloat32);
  EXPECT_EQ(dtype_from_name("double"), kFloat64);
  EXPECT_EQ(dtype_from_name("int"), kInt32);
  EXPECT_EQ(dtype_from_name("half"), kFloat16);
  EXPECT_THAT([] { dtype_from_name("float128"); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("float128"), HasSubstr("bfloat16"))));
  EXPECT_EQ(dtype_size(kBool), 1);
  EXPECT_EQ(dtype_size(kBFloat16), 2);
  EXPECT_EQ(dtype_size(kInt32), 4);
  EXPECT_EQ(dtype_size(kFloat64), 8);
  std::ostringstream os;
  os << kFloat16;
  EXPECT_EQ(os.str(), "float16");
}

TEST(DType, HalfConversionsRoundToNearestEven) {
  EXPECT_EQ(static_cast<float>(bfloat16(1.0f + 0x1p-8f)), 1.0f);  // halfway: to even
  EXPECT_EQ(static_cast<float>(bfloat16(1.0f + 3 * 0x1p-8f)), 1.0f + 0x1p-6f);
  EXPECT_EQ(static_cast<float>(bfloat16(1.0f + 0x1p-7f)), 1.0f + 0x1p-7f);  // exact
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(NAN))));
  EXPECT_EQ(static_cast<float>(bfloat16(INFINITY)), INFINITY);
  EXPECT_EQ(static_cast<float>(float16(1.0f + 0x1p-11f)), 1.0f);
  EXPECT_EQ(static_cast<float>(float16(65504.0f)), 65504.0f);
  EXPECT_EQ(static_cast<float>(float16(1e6f)), INFINITY);
  EXPECT_EQ(static_cast<float>(float16(0x1p-24f)), 0x1p-24f);  // smallest subnormal
}

// ---- construction and access -------------------------------------------------------------------

TEST(Tensor, FromVectorToVectorAndItem) {
  Tensor t = Tensor::from_vector<int32_t>({1, -2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.dtype(), kInt32);
  EXPECT_EQ(t.shape(), Shape({2, 3}));
  EXPECT_EQ(t.rank(), 2);
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.dim(-1), 3);
  EXPECT_EQ(t.dim(0), 2);
  EXPECT_THAT(t.to_vector<double>(), ElementsAre(1, -2, 3, 4, 5, 6));
  EXPECT_THAT(t.to_vector<int64_t>(), ElementsAre(1, -2, 3, 4, 5, 6));
  EXPECT_THAT(t.to_vector<bool>(), ElementsAre(true, true, true, true, true, true));
  EXPECT_EQ(t.data<int32_t>()[1], -2);
  EXPECT_EQ(Tensor::scalar(2.5, kFloat32).item<float>(), 2.5f);
  EXPECT_EQ(Tensor::scalar(2.5, kFloat32).item<int32_t>(), 2);
  EXPECT_EQ(Tensor::from_vector<double>({7.0}, {1, 1}).item<double>(), 7.0);
  // Half types convert through float.
  Tensor h = cast(Tensor::from_vector<float>({1.5f, -0.25f}), kBFloat16);
  EXPECT_THAT(h.to_vector<float>(), ElementsAre(1.5f, -0.25f));
  EXPECT_THAT(Tensor::from_vector<float16>({float16(0.5f)}).to_vector<double>(), ElementsAre(0.5));
  EXPECT_EQ(Tensor::from_vector<float>({1, 2, 3}).shape(), Shape({3}));
}

TEST(Tensor, AccessErrors) {
  Tensor t = Tensor::from_vector<float>({1, 2});
  EXPECT_THAT([&] { t.item<float>(); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("item"), HasSubstr("(2,)"))));
  EXPECT_THAT([&] { t.data<double>(); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("float32"), HasSubstr("float64"))));
  EXPECT_THAT([] { Tensor().to_vector<float>(); },
              ThrowsMessage<FailedPrecondition>(HasSubstr("undefined")));
  EXPECT_THAT(
      [] {
        Tensor::from_vector<float>({1, 2, 3}, {2, 2});
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("3 values"), HasSubstr("(2, 2)"))));
  EXPECT_THAT([] { Tensor::empty({2, -1}); }, ThrowsMessage<InvalidArgument>(HasSubstr("(2, -1)")));
  EXPECT_THAT([&] { t.dim(1); },
              ThrowsMessage<OutOfRange>(AllOf(HasSubstr("axis 1"), HasSubstr("rank 1"))));
  EXPECT_FALSE(Tensor().defined());
}

TEST(Tensor, IdsAreUnique) {
  Tensor a = zeros({2}), b = zeros({2});
  EXPECT_NE(a.id(), b.id());
  Tensor v = Tensor::view(a, a.shape(), a.strides(), a.offset());
  EXPECT_NE(v.id(), a.id());
  Tensor copy_of_handle = a;
  EXPECT_EQ(copy_of_handle.id(), a.id());
}

TEST(Tensor, FullAndBroadcastAssignFillEveryDtype) {
  for (DType t : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32, kInt64, kUInt8, kBool}) {
    std::string what(dtype_name(t));
    // 1001 elements: a vectorised fill's tail too.
    EXPECT_THAT(cast(full({7, 11, 13}, 3, t), kFloat64).to_vector<double>(),
                Each(t == kBool ? 1.0 : 3.0))
        << what;
    EXPECT_THAT(cast(zeros({1001}, t), kFloat64).to_vector<double>(), Each(0.0)) << what;
    // A scalar broadcast into a strided destination (every other column).
    Tensor x = zeros({4, 6}, t);
    assign_into(slice(x, {Slice{}, Slice{{}, {}, 2}}), Tensor::scalar(1, t));
    std::vector<double> v = cast(x, kFloat64).to_vector<double>();
    for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], i % 2 == 0 ? 1.0 : 0.0) << what << i;
  }
}

// ---- views -------------------------------------------------------------------------------------

TEST(Tensor, ViewsShareStorage) {
  Tensor x = reshape(arange(0, 12, 1, kFloat64), {3, 4});
  Tensor t = transpose(x);
  Tensor s = slice(x, {Slice{1, 3}, Slice{{}, {}, 2}});
  Tensor b = broadcast_to(slice(x, {Slice{0, 1}}), {5, 4});
  for (const Tensor& v : {t, s, b, reshape(x, {12}), squeeze(expand_dims(x, 0))}) {
    EXPECT_EQ(v.storage(), x.storage());
  }
  EXPECT_EQ(s.offset(), 4);
  EXPECT_THAT(s.to_vector<double>(), ElementsAre(4, 6, 8, 10));
  // Writing through a Variable-style assign into the base shows through every view.
  assign_into(x, full({3, 4}, 1.5, kFloat64));
  EXPECT_THAT(s.to_vector<double>(), ElementsAre(1.5, 1.5, 1.5, 1.5));
  // Copies do not share.
  EXPECT_NE(copy(x).storage(), x.storage());
  EXPECT_NE(contiguous(t).storage(), x.storage());
}

TEST(Tensor, IsContiguous) {
  Tensor x = zeros({3, 4});
  EXPECT_TRUE(x.is_contiguous());
  EXPECT_TRUE(zeros({}).is_contiguous());
  EXPECT_TRUE(zeros({0, 3}).is_contiguous());
  EXPECT_FALSE(transpose(x).is_contiguous());
  EXPECT_TRUE(transpose(zeros({1, 4})).is_contiguous());  // only a unit axis moved
  EXPECT_TRUE(slice(x, {Slice{1, 3}}).is_contiguous());   // whole rows
  EXPECT_FALSE(slice(x, {Slice{}, Slice{0, 2}}).is_contiguous());
  EXPECT_FALSE(slice(x, {Slice{{}, {}, 2}}).is_contiguous());
  EXPECT_FALSE(slice(x, {Slice{{}, {}, -1}}).is_contiguous());
  EXPECT_TRUE(slice(x, {Slice{1, 2}, Slice{0, 4}}).is_contiguous());
  EXPECT_FALSE(slice(x, {Slice{}, Slice{2, 3}}).is_contiguous());  // a column
  EXPECT_FALSE(broadcast_to(zeros({1, 4}), {3, 4}).is_contiguous());
  EXPECT_TRUE(expand_dims(x, 1).is_contiguous());
  // contiguous() returns the same tensor when it already is.
  EXPECT_EQ(contiguous(x).id(), x.id());
  Tensor c = contiguous(transpose(x));
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.shape(), Shape({4, 3}));
}

TEST(Tensor, AstypeAndReshapeMembers) {
  Tensor x = Tensor::from_vector<float>({1.7f, -2.2f});
  EXPECT_EQ(cast(x, kInt32).dtype(), kInt32);
  EXPECT_THAT(cast(x, kInt32).to_vector<int32_t>(), ElementsAre(1, -2));
  EXPECT_EQ(cast(x, kFloat32).id(), x.id());
  EXPECT_EQ(reshape(x, {2, 1}).shape(), Shape({2, 1}));
}

// ---- alignment ---------------------------------------------------------------------------------

TEST(Tensor, DataIsAligned64) {
  for (DType t : kAll) {
    for (int64_t n : {0, 1, 3, 17, 64, 1000, 4097, 100000}) {
      Tensor e = Tensor::empty({n}, t);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(e.raw_data()) % 64, 0u) << dtype_name(t) << " " << n;
    }
  }
  Tensor a = Tensor::from_vector<float>({1, 2, 3});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data<float>()) % 64, 0u);
  Tensor total = a + a;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(total.raw_data()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(zeros({7, 9}, kFloat64).raw_data()) % 64, 0u);
}

// ---- shapes ------------------------------------------------------------------------------------

TEST(Shape, Helpers) {
  EXPECT_EQ(shape_str({}), "()");
  EXPECT_EQ(shape_str({3}), "(3,)");
  EXPECT_EQ(shape_str({2, 3}), "(2, 3)");
  EXPECT_EQ(num_elements({}), 1);
  EXPECT_EQ(num_elements({2, 0, 3}), 0);
  EXPECT_EQ(contiguous_strides({2, 3, 4}), Strides({12, 4, 1}));
  EXPECT_EQ(normalize_axis("op", -1, 3), 2);
  EXPECT_THAT([] { normalize_axis("my_op", 3, 3); },
              ThrowsMessage<OutOfRange>(
                  AllOf(HasSubstr("my_op"), HasSubstr("axis 3"), HasSubstr("rank 3"))));
  EXPECT_EQ(broadcast_shapes("op", {3, 1}, {4}), Shape({3, 4}));
  EXPECT_EQ(broadcast_shapes("op", {}, {2, 1}), Shape({2, 1}));
  EXPECT_EQ(broadcast_shapes("op", {2, 1, 5}, {3, 1}), Shape({2, 3, 5}));
  EXPECT_EQ(broadcast_shapes("op", {0}, {1}), Shape({0}));
  EXPECT_THAT(
      [] {
        broadcast_shapes("my_op", {2, 3}, {4});
      },
      ThrowsMessage<InvalidArgument>(
          AllOf(HasSubstr("my_op"), HasSubstr("(2, 3)"), HasSubstr("(4,)"))));
}

// ---- printing ----------------------------------------------------------------------------------

TEST(Print, SmallTensors) {
  EXPECT_EQ(Tensor::from_vector<float>({1, 2, 3}).to_string(),
            "[1. 2. 3.], shape=(3,), dtype=float32");
  EXPECT_EQ(Tensor::from_vector<float>({-1.5f, 2.0f}).to_string(),
            "[-1.5  2. ], shape=(2,), dtype=float32");
  EXPECT_EQ(Tensor::from_vector<float>({0.1f, 0.25f}).to_string(),
            "[0.1  0.25], shape=(2,), dtype=float32");
  EXPECT_EQ(Tensor::from_vector<int32_t>({1, 2, 3, 4}, {2, 2}).to_string(),
            "[[1 2]\n [3 4]], shape=(2, 2), dtype=int32");
  EXPECT_EQ(Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2}).to_string(),
            "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]], shape=(2, 2, 2), dtype=int64");
  EXPECT_EQ(Tensor::from_vector<bool>({true, false}).to_string(),
            "[ True False], shape=(2,), dtype=bool");
  EXPECT_EQ(Tensor::scalar(3.5, kFloat64).to_string(), "3.5, shape=(), dtype=float64");
  EXPECT_EQ(Tensor::from_vector<int32_t>({-10, 5}).to_string(),
            "[-10   5], shape=(2,), dtype=int32");
  EXPECT_EQ(Tensor().to_string(), "Tensor(undefined)");
  EXPECT_EQ(zeros({0}).to_string(), "[], shape=(0,), dtype=float32");
  std::ostringstream os;
  os << Tensor::from_vector<int32_t>({7});
  EXPECT_EQ(os.str(), "[7], shape=(1,), dtype=int32");
}

TEST(Print, ViewsPrintInLogicalOrder) {
  Tensor x = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5}, {2, 3});
  EXPECT_EQ(transpose(x).to_string(), "[[0 3]\n [1 4]\n [2 5]], shape=(3, 2), dtype=int32");
  EXPECT_EQ(slice(x, {Slice{}, Slice{{}, {}, -2}}).to_string(),
            "[[2 0]\n [5 3]], shape=(2, 2), dtype=int32");
}

TEST(Print, HalfAndSpecialValues) {
  EXPECT_EQ(cast(Tensor::from_vector<float>({0.5f, 1.0f}), kBFloat16).to_string(),
            "[0.5 1. ], shape=(2,), dtype=bfloat16");
  std::string s = Tensor::from_vector<float>({NAN, INFINITY, -INFINITY, 1.0f}).to_string();
  EXPECT_THAT(s, AllOf(HasSubstr("nan"), HasSubstr(" inf"), HasSubstr("-inf"), HasSubstr("1.")));
  EXPECT_THAT(s, EndsWith("shape=(4,), dtype=float32"));
}

TEST(Print, TruncatesPast1000Elements) {
  Tensor exactly = arange(0, 1000, 1, kInt32);
  EXPECT_THAT(exactly.to_string(), Not(HasSubstr("...")));
  EXPECT_THAT(exactly.to_string(), HasSubstr(" 500 "));
  Tensor over = arange(0, 1001, 1, kInt32);
  EXPECT_EQ(over.to_string(), "[   0    1    2 ...  998  999 1000], shape=(1001,), dtype=int32");
  Tensor rows = reshape(arange(0, 2000, 1, kInt32), {1000, 2});
  std::string r = rows.to_string();
  EXPECT_THAT(r, StartsWith("[[   0    1]\n [   2    3]\n [   4    5]\n ...\n [1994 1995]\n"));
  EXPECT_THAT(r, EndsWith("[1998 1999]], shape=(1000, 2), dtype=int32"));
  EXPECT_THAT(r, Not(HasSubstr(" 500 ")));
  Tensor f = arange(0, 5000, 1, kFloat32);
  EXPECT_THAT(f.to_string(), AllOf(HasSubstr("..."), EndsWith("shape=(5000,), dtype=float32")));
  EXPECT_LT(f.to_string().size(), 200u);
}

}  // namespace
}  // namespace weft
