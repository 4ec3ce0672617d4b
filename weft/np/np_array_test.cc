// weft::np's array functions against NumPy: scripts/make_np_array_goldens.py writes inputs and
// NumPy's results; each case below makes the same call with weft::np and must match in dtype,
// shape and values. Below them: finite-difference checks of every differentiable one, einsum
// against matmul, and the random module's statistics.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "weft/np/np.h"
#include "weft/testing/gradient_check.h"
#include "weft/testing/np_goldens.h"

namespace np = weft::np;
using weft::Tensor;

namespace {

const weft::testing::NpGoldens& np_array_goldens() {
  return weft::testing::np_goldens("make_np_array_goldens.py");
}

using In = std::vector<Tensor>;
using Out = std::vector<Tensor>;
using Fn = std::function<Out(const In&)>;

template <typename F>
Fn one(F f) {
  return [f](const In& in) { return Out{f(in)}; };
}

Tensor dtype_fact(weft::DType t) { return Tensor::empty({0}, t); }

Tensor finfo_fields(weft::DType t) {
  np::finfo f(t);
  return Tensor::from_vector<double>({f.eps, f.max, f.tiny, static_cast<double>(f.bits)});
}

std::vector<std::string> einsum_subscripts() {
  std::ifstream in(np_array_goldens().dir() + "/einsum_subscripts.txt");
  std::vector<std::string> specs;
  for (std::string line; std::getline(in, line);) specs.push_back(line);
  return specs;
}

const std::map<std::string, Fn>& cases() {
  static const std::map<std::string, Fn> m = [] {
    std::map<std::string, Fn> c = {
        {"identity", one([](const In&) { return np::identity(3); })},
        {"empty_like", one([](const In& in) { return np::empty_like(in[0]); })},
        {"copy", one([](const In& in) { return np::copy(in[0]); })},
        {"ascontiguousarray_scalar",
         one([](const In& in) { return np::ascontiguousarray(in[0]); })},
        {"logspace", one([](const In&) { return np::logspace(0, 3, 7); })},
        {"logspace_base2", one([](const In&) { return np::logspace(1, 4, 4, false, 2.0); })},
        {"geomspace", one([](const In&) { return np::geomspace(1, 1000, 4); })},
        {"geomspace_negative", one([](const In&) { return np::geomspace(-2, -32, 5); })},
        {"tri", one([](const In&) { return np::tri(3, 5, 1); })},
        {"tril", one([](const In& in) { return np::tril(in[0]); })},
        {"tril_k_neg1", one([](const In& in) { return np::tril(in[0], -1); })},
        {"triu_k1", one([](const In& in) { return np::triu(in[0], 1); })},
        {"triu_int", one([](const In& in) { return np::triu(in[0]); })},
        {"meshgrid_xy",
         [](const In& in) {
           return np::meshgrid({in[0], in[1]});
         }},
        {"meshgrid_ij",
         [](const In& in) {
           return np::meshgrid({in[0], in[1]}, "ij");
         }},
        {"vander", one([](const In& in) { return np::vander(in[0]); })},
        {"vander_increasing_n3", one([](const In& in) { return np::vander(in[0], 3, true); })},
        {"diag_from_1d", one([](const In& in) { return np::diag(in[0]); })},
        {"diag_from_1d_k2", one([](const In& in) { return np::diag(in[0], 2); })},
        {"diag_from_1d_k_neg1", one([](const In& in) { return np::diag(in[0], -1); })},
        {"diag_of_2d_k1", one([](const In& in) { return np::diag(in[0], 1); })},
        {"diagflat", one([](const In& in) { return np::diagflat(in[0], -1); })},
        {"diag_nan_inf", one([](const In& in) { return np::diag(in[0]); })},
        {"diag_bool", one([](const In& in) { return np::diag(in[0], 1); })},
        {"diag_indices", [](const In&) { return np::diag_indices(3, 3); }},
        {"ix_",
         [](const In& in) {
           return np::ix_({in[0], in[1]});
         }},
        {"ix_bool",
         [](const In& in) {
           return np::ix_({in[0], in[1]});
         }},
        {"ravel", one([](const In& in) { return np::ravel(in[0]); })},
        {"expand_dims", one([](const In& in) { return np::expand_dims(in[0], -1); })},
        {"squeeze_all", one([](const In& in) { return np::squeeze(in[0]); })},
        {"squeeze_axis", one([](const In& in) { return np::squeeze(in[0], 2); })},
        {"broadcast_to", one([](const In& in) {
           return np::broadcast_to(in[0], {2, 3, 4});
         })},
        {"broadcast_arrays",
         [](const In& in) {
           return np::broadcast_arrays({in[0], in[1]});
         }},
        {"atleast_1d", one([](const In& in) { return np::atleast_1d(in[0]); })},
        {"atleast_2d", one([](const In& in) { return np::atleast_2d(in[0]); })},
        {"atleast_3d_1d", one([](const In& in) { return np::atleast_3d(in[0]); })},
        {"atleast_3d_2d", one([](const In& in) { return np::atleast_3d(in[0]); })},
        {"swapaxes", one([](const In& in) { return np::swapaxes(in[0], 0, 2); })},
        {"moveaxis", one([](const In& in) { return np::moveaxis(in[0], 0, -1); })},
        {"moveaxis_many", one([](const In& in) {
           return np::moveaxis(in[0], {0, 1}, {-1, -2});
         })},
        {"flip_all", one([](const In& in) { return np::flip(in[0]); })},
        {"flip_axis1", one([](const In& in) { return np::flip(in[0], 1); })},
        {"flip_axes", one([](const In& in) {
           return np::flip(in[0], {0, 2});
         })},
        {"fliplr", one([](const In& in) { return np::fliplr(in[0]); })},
        {"flipud", one([](const In& in) { return np::flipud(in[0]); })},
        {"roll_flat", one([](const In& in) { return np::roll(in[0], 5); })},
        {"roll_axis", one([](const In& in) { return np::roll(in[0], -1, 1); })},
        {"roll_axes", one([](const In& in) {
           return np::roll(in[0], 2, {0, 1});
         })},
        {"rot90", one([](const In& in) { return np::rot90(in[0]); })},
        {"rot90_k2", one([](const In& in) { return np::rot90(in[0], 2); })},
        {"rot90_k3_axes", one([](const In& in) {
           return np::rot90(in[0], 3, {1, 2});
         })},
        {"rot90_k_neg1", one([](const In& in) { return np::rot90(in[0], -1); })},
        {"tile", one([](const In& in) {
           return np::tile(in[0], {2, 1});
         })},
        {"tile_more_reps", one([](const In& in) {
           return np::tile(in[0], {2, 1, 3});
         })},
        {"repeat_flat", one([](const In& in) { return np::repeat(in[0], 2); })},
        {"repeat_axis", one([](const In& in) { return np::repeat(in[0], 3, 1); })},
        {"repeat_counts", one([](const In& in) {
           return np::repeat(in[0], std::vector<int64_t>{1, 0, 2}, 0);
         })},
        {"append_flat", one([](const In& in) { return np::append(in[0], in[1]); })},
        {"append_axis", one([](const In& in) { return np::append(in[0], in[1], 0); })},
        {"hstack_1d", one([](const In& in) {
           return np::hstack({in[0], in[1]});
         })},
        {"hstack_2d", one([](const In& in) {
           return np::hstack({in[0], in[1]});
         })},
        {"vstack", one([](const In& in) {
           return np::vstack({in[0], in[1]});
         })},
        {"dstack", one([](const In& in) {
           return np::dstack({in[0], in[1]});
         })},
        {"split_sections", [](const In& in) { return np::split(in[0], 3); }},
        {"split_indices",
         [](const In& in) { return np::split(in[0], std::vector<int64_t>{2, 5, 9}); }},
        {"split_indices_axis1",
         [](const In& in) { return np::split(in[0], std::vector<int64_t>{3}, 1); }},
        {"split_negative_index",
         [](const In& in) { return np::split(in[0], std::vector<int64_t>{-2}); }},
        {"split_unsorted_indices",
         [](const In& in) { return np::split(in[0], std::vector<int64_t>{4, 2}); }},
        {"hsplit", [](const In& in) { return np::hsplit(in[0], 2); }},
        {"vsplit", [](const In& in) { return np::vsplit(in[0], 2); }},
        {"dsplit", [](const In& in) { return np::dsplit(in[0], 2); }},
        {"pad_constant", one([](const In& in) {
           return np::pad(in[0], {{1, 2}, {0, 1}}, "constant", 7);
         })},
        {"pad_edge", one([](const In& in) {
           return np::pad(in[0], {{2, 1}, {3, 0}}, "edge");
         })},
        {"pad_reflect", one([](const In& in) {
           return np::pad(in[0], {{3, 6}}, "reflect");
         })},
        {"pad_symmetric", one([](const In& in) {
           return np::pad(in[0], {{2, 4}, {1, 5}}, "symmetric");
         })},
        {"pad_int_one_pair", one([](const In& in) {
           return np::pad(in[0], {{1, 1}});
         })},
        {"take_flat", one([](const In& in) { return np::take(in[0], in[1]); })},
        {"take_axis", one([](const In& in) { return np::take(in[0], in[1], 1); })},
        {"take_along_axis", one([](const In& in) { return np::take_along_axis(in[0], in[1], 1); })},
        {"take_along_axis_broadcast",
         one([](const In& in) { return np::take_along_axis(in[0], in[1], 1); })},
        {"take_along_axis_argsort",
         one([](const In& in) { return np::take_along_axis(in[0], np::argsort(in[0], 0), 0); })},
        {"compress", one([](const In& in) { return np::compress(in[0], in[1], 0); })},
        {"compress_flat", one([](const In& in) { return np::compress(in[0], in[1]); })},
        {"select", one([](const In& in) {
           const Tensor& a = in[0];
           return np::select({np::less(a, -0.5), np::greater(a, 0.5)},
                             {np::multiply(a, 10), np::subtract(a, 100)}, 0);
         })},
        {"select_default",
         one([](const In& in) { return np::select({np::greater(in[0], 2)}, {in[0]}, -1); })},
        {"nonzero", [](const In& in) { return np::nonzero(in[0]); }},
        {"nonzero_3d", [](const In& in) { return np::nonzero(in[0]); }},
        {"nonzero_empty", [](const In& in) { return np::nonzero(in[0]); }},
        {"where_one_arg", [](const In& in) { return np::where(in[0]); }},
        {"sort", one([](const In& in) { return np::sort(in[0]); })},
        {"sort_axis0", one([](const In& in) { return np::sort(in[0], 0); })},
        {"sort_flat", one([](const In& in) { return np::sort(in[0], np::Axis()); })},
        {"sort_nan", one([](const In& in) { return np::sort(in[0]); })},
        {"sort_f32", one([](const In& in) { return np::sort(in[0]); })},
        {"sort_i32", one([](const In& in) { return np::sort(in[0]); })},
        {"sort_i64", one([](const In& in) { return np::sort(in[0]); })},
        {"sort_empty", one([](const In& in) { return np::sort(in[0]); })},
        {"argsort", one([](const In& in) { return np::argsort(in[0]); })},
        {"argsort_axis0", one([](const In& in) { return np::argsort(in[0], 0); })},
        {"argsort_stable_ties", one([](const In& in) { return np::argsort(in[0]); })},
        {"argsort_stable_ties_f32", one([](const In& in) { return np::argsort(in[0]); })},
        {"argsort_stable_ties_f64", one([](const In& in) { return np::argsort(in[0]); })},
        {"argsort_nan", one([](const In& in) { return np::argsort(in[0]); })},
        {"tensordot_2", one([](const In& in) { return np::tensordot(in[0], in[1]); })},
        {"tensordot_pairs", one([](const In& in) {
           return np::tensordot(in[0], in[1], {{0, 2}, {1, 0}});
         })},
        {"tensordot_0", one([](const In& in) { return np::tensordot(in[0], in[1], 0); })},
        {"inner", one([](const In& in) { return np::inner(in[0], in[1]); })},
        {"inner_scalar", one([](const In& in) { return np::inner(in[0], in[1]); })},
        {"outer", one([](const In& in) { return np::outer(in[0], in[1]); })},
        {"vdot", one([](const In& in) { return np::vdot(in[0], in[1]); })},
        {"cross3", one([](const In& in) { return np::cross(in[0], in[1]); })},
        {"cross2", one([](const In& in) { return np::cross(in[0], in[1]); })},
        {"cross_2_3", one([](const In& in) { return np::cross(in[0], in[1]); })},
        {"kron", one([](const In& in) { return np::kron(in[0], in[1]); })},
        {"kron_ranks", one([](const In& in) { return np::kron(in[0], in[1]); })},
        {"diagonal", one([](const In& in) { return np::diagonal(in[0]); })},
        {"diagonal_offset", one([](const In& in) { return np::diagonal(in[0], 1); })},
        {"diagonal_axes", one([](const In& in) { return np::diagonal(in[0], -1, 2, 1); })},
        {"trace", one([](const In& in) { return np::trace(in[0]); })},
        {"trace_3d", one([](const In& in) { return np::trace(in[0], 0, 1, 2); })},
        {"polyval", one([](const In& in) { return np::polyval(in[0], in[1]); })},
        {"polyval_int", one([](const In& in) { return np::polyval(in[0], in[1]); })},
        {"finfo_float32", one([](const In&) { return finfo_fields(weft::kFloat32); })},
        {"finfo_float16", one([](const In&) { return finfo_fields(weft::kFloat16); })},
        {"finfo_float64", one([](const In&) { return finfo_fields(weft::kFloat64); })},
        {"result_type_i32_weak_int", one([](const In&) {
           return dtype_fact(np::result_type({np::zeros({1}, weft::kInt32), 1}));
         })},
        {"result_type_i32_weak_float", one([](const In&) {
           return dtype_fact(np::result_type({np::zeros({1}, weft::kInt32), 1.5}));
         })},
        {"result_type_f32_i64", one([](const In&) {
           return dtype_fact(
               np::result_type({np::zeros({1}, weft::kFloat32), np::zeros({1}, weft::kInt64)}));
         })},
        {"result_type_f32_weak_float", one([](const In&) {
           return dtype_fact(np::result_type({np::zeros({1}, weft::kFloat32), 0.5}));
         })},
        {"result_type_scalars", one([](const In&) {
           return dtype_fact(np::result_type({1, 2.5}));
         })},
        {"promote_types_f16_i32", one([](const In&) {
           return dtype_fact(np::promote_types(weft::kFloat16, weft::kInt32));
         })},
        {"promote_types_u8_i32",
         one([](const In&) { return dtype_fact(np::promote_types(weft::kUInt8, weft::kInt32)); })},
        {"issubdtype", one([](const In&) {
           using K = np::DTypeKind;
           std::vector<uint8_t> facts = {np::issubdtype(weft::kInt32, K::kInteger),
                                         np::issubdtype(weft::kFloat32, K::kFloating),
                                         np::issubdtype(weft::kFloat32, K::kInteger),
                                         np::issubdtype(weft::kUInt8, K::kSignedInteger),
                                         np::issubdtype(weft::kBool, K::kNumber),
                                         np::issubdtype(weft::kInt64, K::kNumber),
                                         np::issubdtype(weft::kFloat64, weft::kFloat64),
                                         np::issubdtype(weft::kFloat64, weft::kFloat32)};
           return weft::cast(Tensor::from_vector(facts), weft::kBool);
         })},
    };
    // The dtype sweep: <fn>__<kind> for every kind the script writes.
    std::map<std::string, std::function<Tensor(const Tensor&)>> sweep = {
        {"ravel", [](const Tensor& a) { return np::ravel(a); }},
        {"flip", [](const Tensor& a) { return np::flip(a); }},
        {"fliplr", [](const Tensor& a) { return np::fliplr(a); }},
        {"flipud", [](const Tensor& a) { return np::flipud(a); }},
        {"rot90", [](const Tensor& a) { return np::rot90(a); }},
        {"swapaxes", [](const Tensor& a) { return np::swapaxes(a, 0, 1); }},
        {"moveaxis", [](const Tensor& a) { return np::moveaxis(a, 0, -1); }},
        {"roll", [](const Tensor& a) { return np::roll(a, 1, 1); }},
        {"tile",
         [](const Tensor& a) {
           return np::tile(a, {1, 2});
         }},
        {"repeat", [](const Tensor& a) { return np::repeat(a, 2, 0); }},
        {"tril", [](const Tensor& a) { return np::tril(a); }},
        {"triu", [](const Tensor& a) { return np::triu(a); }},
        {"diagonal", [](const Tensor& a) { return np::diagonal(a); }},
        {"trace", [](const Tensor& a) { return np::trace(a); }},
        {"pad",
         [](const Tensor& a) {
           return np::pad(a, {{1, 1}});
         }},
        {"sort", [](const Tensor& a) { return np::sort(a); }},
        {"argsort", [](const Tensor& a) { return np::argsort(a); }},
        {"atleast_3d", [](const Tensor& a) { return np::atleast_3d(a); }},
        {"append", [](const Tensor& a) { return np::append(a, a, 0); }},
        {"hstack",
         [](const Tensor& a) {
           return np::hstack({a, a});
         }},
        {"vstack",
         [](const Tensor& a) {
           return np::vstack({a, a});
         }},
        {"expand_dims", [](const Tensor& a) { return np::expand_dims(a, 1); }},
        {"take",
         [](const Tensor& a) {
           return np::take(a, Tensor::from_vector<int64_t>({0, -1}), 1);
         }},
    };
    for (const auto& [name, f] : sweep) {
      for (const char* kind : {"f32", "i32", "i64", "bool", "empty", "nan"}) {
        c[name + "__" + kind] = one([f = f](const In& in) { return f(in[0]); });
      }
    }
    return c;
  }();
  return m;
}

void expect_case(const std::string& name, const Fn& fn, const std::string& label = "") {
  SCOPED_TRACE(name + " " + label);
  std::vector<Tensor> got = fn(np_array_goldens().load(name, "in")),
                      want = np_array_goldens().load(name, "out");
  ASSERT_EQ(got.size(), want.size()) << name;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(weft::testing::matches_numpy(got[i], want[i])) << name << " #" << i;
  }
}

TEST(NpArray, EveryCaseMatchesNumPy) {
  std::set<std::string> files;
  for (const std::string& name : np_array_goldens().case_names()) {
    if (name.rfind("einsum_", 0) != 0) files.insert(name);
  }
  std::set<std::string> known;
  for (const auto& [name, fn] : cases()) known.insert(name);
  EXPECT_EQ(files, known) << "the golden script and this test must name the same cases";
  for (const auto& [name, fn] : cases()) expect_case(name, fn);
}

TEST(NpArray, EinsumMatchesNumPyOnEverySubscriptString) {
  std::vector<std::string> specs = einsum_subscripts();
  ASSERT_GE(specs.size(), 20u);
  for (size_t i = 0; i < specs.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "einsum_%02zu", i);
    expect_case(
        name, [&](const In& in) { return Out{np::einsum(specs[i], in)}; }, specs[i]);
  }
}

// ---- gradients
// -----------------------------------------------------------------------------------

using weft::testing::gradient_check;
using weft::testing::uniform;

TEST(NpArray, DifferentiableFunctionsPassTheGradientCheck) {
  using F = weft::testing::TensorFn;
  Tensor a = uniform({3, 4}, 1), b = uniform({4, 5}, 2), v = uniform({5}, 3);
  Tensor c3 = uniform({2, 3, 4}, 4), d3 = uniform({2, 4, 5}, 5);
  Tensor idx = Tensor::from_vector<int64_t>({2, 0, 3, 3, 1, 0}, {3, 2});
  std::vector<std::tuple<std::string, F, std::vector<Tensor>>> checks = {
      {"copy", [](auto& x) { return np::copy(x[0]); }, {a}},
      {"tril", [](auto& x) { return np::tril(x[0], 1); }, {a}},
      {"triu", [](auto& x) { return np::triu(x[0]); }, {a}},
      {"vander", [](auto& x) { return np::vander(x[0], 4); }, {v}},
      {"vander_at_zero", [](auto& x) { return np::vander(x[0], 3); }, {np::array({0.0, 0.5})}},
      {"diag_1d", [](auto& x) { return np::diag(x[0], 1); }, {v}},
      {"diag_2d", [](auto& x) { return np::diag(x[0], -1); }, {a}},
      {"meshgrid",
       [](auto& x) {
         return np::meshgrid({x[0], x[1]})[1];
       },
       {v, uniform({3}, 6)}},
      {"broadcast_arrays",
       [](auto& x) {
         return np::broadcast_arrays({x[0], x[1]})[0];
       },
       {uniform({3, 1}, 7), v}},
      {"swapaxes", [](auto& x) { return np::swapaxes(x[0], 0, 2); }, {c3}},
      {"ravel", [](auto& x) { return np::ravel(np::transpose(x[0])); }, {a}},
      {"squeeze", [](auto& x) { return np::squeeze(np::expand_dims(x[0], 1)); }, {a}},
      {"atleast_2d", [](auto& x) { return np::atleast_2d(x[0]); }, {v}},
      {"broadcast_to",
       [](auto& x) {
         return np::broadcast_to(x[0], {2, 3, 5});
       },
       {v}},
      {"fliplr", [](auto& x) { return np::fliplr(x[0]); }, {a}},
      {"flipud", [](auto& x) { return np::flipud(x[0]); }, {a}},
      {"hsplit", [](auto& x) { return np::hsplit(x[0], 2)[1]; }, {a}},
      {"moveaxis", [](auto& x) { return np::moveaxis(x[0], 0, -1); }, {c3}},
      {"flip",
       [](auto& x) {
         return np::flip(x[0], {0, 2});
       },
       {c3}},
      {"roll", [](auto& x) { return np::roll(x[0], 3); }, {a}},
      {"rot90", [](auto& x) { return np::rot90(x[0], 3); }, {a}},
      {"tile",
       [](auto& x) {
         return np::tile(x[0], {2, 1, 2});
       },
       {a}},
      {"repeat", [](auto& x) { return np::repeat(x[0], 2, 1); }, {a}},
      {"repeat_counts",
       [](auto& x) {
         return np::repeat(x[0], std::vector<int64_t>{2, 0, 1}, 0);
       },
       {a}},
      {"append", [](auto& x) { return np::append(x[0], x[1]); }, {a, v}},
      {"hstack",
       [](auto& x) {
         return np::hstack({x[0], x[1]});
       },
       {a, uniform({3, 2}, 8)}},
      {"vstack",
       [](auto& x) {
         return np::vstack({x[0], x[1]});
       },
       {v, uniform({2, 5}, 9)}},
      {"dstack",
       [](auto& x) {
         return np::dstack({x[0], x[1]});
       },
       {a, uniform({3, 4}, 18)}},
      {"split",
       [](auto& x) {
         return np::split(x[0], std::vector<int64_t>{1, 3}, 1)[1];
       },
       {a}},
      {"pad_constant",
       [](auto& x) {
         return np::pad(x[0], {{1, 2}, {0, 3}}, "constant", 5);
       },
       {a}},
      {"pad_edge",
       [](auto& x) {
         return np::pad(x[0], {{2, 1}, {1, 3}}, "edge");
       },
       {a}},
      {"pad_reflect",
       [](auto& x) {
         return np::pad(x[0], {{2, 2}, {3, 3}}, "reflect");
       },
       {a}},
      {"pad_symmetric",
       [](auto& x) {
         return np::pad(x[0], {{4, 1}}, "symmetric");
       },
       {v}},
      {"take", [idx](auto& x) { return np::take(x[0], idx, 1); }, {a}},
      {"take_along_axis", [idx](auto& x) { return np::take_along_axis(x[0], idx, 1); }, {a}},
      {"compress",
       [](auto& x) {
         return np::compress(np::greater(np::array({1.0, 0.0, 2.0}), 0), x[0], 0);
       },
       {a}},
      {"select",
       [](auto& x) {
         return np::select({np::less(x[0], 0), np::greater(x[0], 0.5)},
                           {np::multiply(x[0], 3), np::square(x[0])}, 0);
       },
       {a}},
      {"sort", [](auto& x) { return np::sort(x[0], 0); }, {a}},
      {"sort_flat", [](auto& x) { return np::sort(x[0], np::Axis()); }, {a}},
      {"tensordot", [](auto& x) { return np::tensordot(x[0], x[1], 1); }, {a, b}},
      {"inner", [](auto& x) { return np::inner(x[0], x[1]); }, {a, uniform({2, 4}, 10)}},
      {"outer", [](auto& x) { return np::outer(x[0], x[1]); }, {a, v}},
      {"vdot", [](auto& x) { return np::vdot(x[0], x[1]); }, {a, uniform({4, 3}, 11)}},
      {"cross",
       [](auto& x) { return np::cross(x[0], x[1]); },
       {uniform({4, 3}, 12), uniform({4, 3}, 13)}},
      {"kron", [](auto& x) { return np::kron(x[0], x[1]); }, {uniform({2, 2}, 14), a}},
      {"diagonal", [](auto& x) { return np::diagonal(x[0], 1, 1, 2); }, {c3}},
      {"trace", [](auto& x) { return np::trace(x[0], -1); }, {a}},
      {"polyval", [](auto& x) { return np::polyval(x[0], x[1]); }, {uniform({4}, 15), a}},
      {"einsum_matmul",
       [](auto& x) {
         return np::einsum("ij,jk->ik", {x[0], x[1]});
       },
       {a, b}},
      {"einsum_batch",
       [](auto& x) {
         return np::einsum("bij,bjk->bik", {x[0], x[1]});
       },
       {c3, d3}},
      {"einsum_trace", [](auto& x) { return np::einsum("ii", {x[0]}); }, {uniform({4, 4}, 16)}},
      {"einsum_diag",
       [](auto& x) { return np::einsum("bii->bi", {x[0]}); },
       {uniform({2, 3, 3}, 17)}},
      {"einsum_three",
       [](auto& x) {
         return np::einsum("ij,jk,k->i", {x[0], x[1], x[2]});
       },
       {a, b, v}},
      {"einsum_ellipsis",
       [](auto& x) {
         return np::einsum("...ij,...jk", {x[0], x[1]});
       },
       {c3, d3}},
  };
  for (const auto& [name, f, inputs] : checks) EXPECT_TRUE(gradient_check(f, inputs)) << name;
}

TEST(NpArray, SortIsStableAndPutsNanLast) {
  // 20000 values with many ties: argsort must keep equal values in their original order.
  std::vector<float> v(20000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7919) % 97) - 48.0f;
  v[5] = std::nanf("");
  v[17] = -0.0f;
  Tensor order = np::argsort(Tensor::from_vector(v));
  std::vector<int64_t> o = order.to_vector<int64_t>();
  for (size_t i = 1; i + 1 < o.size(); ++i) {
    float p = v[o[i - 1]], q = v[o[i]];
    ASSERT_TRUE(p < q || (p == q && o[i - 1] < o[i])) << "position " << i;
  }
  EXPECT_EQ(o.back(), 5);
}

// One long row takes the two-thread path (each half radix-sorted, then merged from both ends).
TEST(NpArray, SortOfALongRowEqualsASortedCopy) {
  std::vector<float> v(300001);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>((i * 2654435761u) % 100003) - 5e4f;
  v[7] = std::nanf("");
  v[99] = -0.0f;
  v[100] = std::numeric_limits<float>::infinity();
  v[200000] = -std::numeric_limits<float>::infinity();
  std::vector<float> want(v.begin(), v.end());
  std::sort(want.begin(), want.end(), [](float a, float b) { return b != b ? a == a : a < b; });
  std::vector<float> got = np::sort(Tensor::from_vector(v)).to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(std::isnan(got.back()));
  for (size_t i = 0; i + 1 < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
  std::vector<int32_t> iv(200000);
  for (size_t i = 0; i < iv.size(); ++i) iv[i] = static_cast<int32_t>((i * 40503u) % 65537) - 30000;
  std::vector<int32_t> iwant = iv;
  std::sort(iwant.begin(), iwant.end());
  EXPECT_EQ(np::sort(Tensor::from_vector(iv)).to_vector<int32_t>(), iwant);
}

TEST(NpArray, SignedZerosKeepTheirSign) {
  Tensor z = Tensor::from_vector<float>({0.0f, -0.0f, 1.0f, -0.0f});
  std::vector<float> sorted = np::sort(z).to_vector<float>();
  EXPECT_EQ(std::count_if(sorted.begin(), sorted.end(), [](float f) { return std::signbit(f); }),
            2);
  EXPECT_TRUE(std::signbit(np::copy(z).to_vector<float>()[1]));
}

TEST(NpArray, ErrorsNameTheFunctionAndWhatWasExpected) {
  auto message = [](auto f) {
    try {
      f();
    } catch (const weft::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Tensor a = np::ones({3, 4});
  EXPECT_NE(message([&] { np::split(a, 2); }).find("np::split: an axis of length 3"),
            std::string::npos);
  EXPECT_NE(message([&] { np::einsum("ij,jk->ik", {a}); }).find("2 operand terms but 1"),
            std::string::npos);
  EXPECT_NE(message([&] {
              np::einsum("ij,jk->ik", {a, a});
            }).find("label 'j' has sizes 4 and 3"),
            std::string::npos);
  EXPECT_NE(message([&] { np::einsum("i2", {a}); }).find("invalid subscript '2'"),
            std::string::npos);
  EXPECT_NE(message([&] {
              np::einsum("ii", {a});
            }).find("label 'i' repeats in one operand over axes of sizes 3 and 4"),
            std::string::npos);
  EXPECT_NE(message([&] { np::take(a, np::array({9.0})); }).find("indices must be int32 or int64"),
            std::string::npos);
  EXPECT_NE(message([&] { np::pad(a, {{1, 1}}, "wrap"); }).find("mode must be"), std::string::npos);
  EXPECT_NE(message([&] { (void)np::finfo(weft::kInt32); }).find("not a floating dtype"),
            std::string::npos);
}

TEST(NpRandom, GlobalSeedMakesTheSequenceReproducible) {
  np::random::seed(42);
  Tensor u1 = np::random::rand({1000}), k1 = np::random::randint(3, 9, {1000});
  np::random::seed(42);
  Tensor u2 = np::random::rand({1000}), k2 = np::random::randint(3, 9, {1000});
  EXPECT_EQ(u1.to_vector<double>(), u2.to_vector<double>());
  EXPECT_EQ(k1.to_vector<int64_t>(), k2.to_vector<int64_t>());
  EXPECT_NE(u1.to_vector<double>(), np::random::rand({1000}).to_vector<double>());
  EXPECT_EQ(k1.dtype(), weft::kInt64);
  EXPECT_EQ(np::min(k1).item<int64_t>(), 3);
  EXPECT_EQ(np::max(k1).item<int64_t>(), 8);
}

TEST(NpRandom, RandintCoversWideAndExtremeRanges) {
  np::random::seed(3);
  int64_t base = int64_t{1} << 60;
  std::vector<int64_t> k = np::random::randint(base, base + 10, {2000}).to_vector<int64_t>();
  std::set<int64_t> distinct(k.begin(), k.end());
  EXPECT_EQ(distinct.size(), 10u);
  EXPECT_EQ(*distinct.begin(), base);
  std::vector<int64_t> all = np::random::randint(INT64_MIN, INT64_MAX, {1000}).to_vector<int64_t>();
  EXPECT_LT(*std::min_element(all.begin(), all.end()), 0);
  EXPECT_GT(*std::max_element(all.begin(), all.end()), 0);
  EXPECT_THROW(np::random::randint(0, int64_t{1} << 40, {2}, weft::kInt32), weft::InvalidArgument);
}

TEST(NpRandom, DistributionsHaveTheirMoments) {
  np::random::seed(1);
  Tensor n = np::random::standard_normal({200000});
  EXPECT_NEAR(np::mean(n).item<double>(), 0, 0.01);
  EXPECT_NEAR(np::std(n).item<double>(), 1, 0.01);
  Tensor u = np::random::uniform(-2, 4, {200000});
  EXPECT_NEAR(np::mean(u).item<double>(), 1, 0.02);
  EXPECT_NEAR(np::var(u).item<double>(), 3, 0.03);  // (b - a)^2 / 12
  // Poisson: mean and variance both lam, on both algorithms (Knuth below 10, PTRS above).
  for (double lam : {0.5, 4.0, 30.0, 500.0}) {
    Tensor p = np::random::poisson(lam, {100000});
    EXPECT_EQ(p.dtype(), weft::kInt64);
    EXPECT_GE(np::min(p).item<int64_t>(), 0);
    EXPECT_NEAR(np::mean(p).item<double>() / lam, 1, 0.02) << lam;
    EXPECT_NEAR(np::var(p).item<double>() / lam, 1, 0.03) << lam;
  }
  // P(X = 0) for lam = 0.5 is e^-0.5.
  Tensor p = np::random::poisson(0.5, {100000});
  double zeros = np::mean(np::equal(p, 0)).item<double>();
  EXPECT_NEAR(zeros, std::exp(-0.5), 0.005);
}

}  // namespace
