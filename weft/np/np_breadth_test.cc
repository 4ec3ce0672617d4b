// weft::np's breadth against NumPy: scripts/make_np_breadth_goldens.py writes inputs and NumPy's
// results for every elementwise function, predicate and reduction (dtypes, broadcasting, empty
// arrays, NaN and infinities); each case <function>__<variant> is recomputed here by the weft::np
// function of that name. Below them, every differentiable function passes the finite-difference
// check.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "weft/np/np.h"
#include "weft/testing/gradient_check.h"
#include "weft/testing/np_goldens.h"

namespace np = weft::np;
using weft::Tensor;

namespace np_breadth {
namespace {

const weft::testing::NpGoldens& np_breadth_goldens() {
  return weft::testing::np_goldens("make_np_breadth_goldens.py");
}

using In = std::vector<Tensor>;
using Fn = std::function<std::vector<Tensor>(const In&)>;

template <typename F>
Fn one(F f) {
  return [f](const In& in) { return std::vector<Tensor>{f(in)}; };
}

Tensor to_tensor(bool b) { return Tensor::scalar(b, weft::kBool); }

// Functions by NumPy name. Unary and binary ones take the inputs as they are; reductions take
// the axis spelled in the case's variant.
const std::map<std::string, Fn>& functions() {
  using U = Tensor (*)(const Tensor&);
  using B = Tensor (*)(const np::ArrayLike&, const np::ArrayLike&);
  static const std::map<std::string, Fn> m = [] {
    std::map<std::string, Fn> f;
    std::map<std::string, U> unary = {
        {"abs", np::abs},
        {"absolute", np::absolute},
        {"fabs", np::fabs},
        {"negative", np::negative},
        {"positive", np::positive},
        {"sign", np::sign},
        {"sqrt", np::sqrt},
        {"square", np::square},
        {"cbrt", np::cbrt},
        {"reciprocal", np::reciprocal},
        {"exp", np::exp},
        {"exp2", np::exp2},
        {"expm1", np::expm1},
        {"log", np::log},
        {"log2", np::log2},
        {"log10", np::log10},
        {"log1p", np::log1p},
        {"sin", np::sin},
        {"cos", np::cos},
        {"tan", np::tan},
        {"arcsin", np::arcsin},
        {"arccos", np::arccos},
        {"arctan", np::arctan},
        {"sinh", np::sinh},
        {"cosh", np::cosh},
        {"tanh", np::tanh},
        {"arcsinh", np::arcsinh},
        {"arccosh", np::arccosh},
        {"arctanh", np::arctanh},
        {"deg2rad", np::deg2rad},
        {"rad2deg", np::rad2deg},
        {"sinc", np::sinc},
        {"floor", np::floor},
        {"ceil", np::ceil},
        {"fix", np::fix},
        {"isnan", np::isnan},
        {"isinf", np::isinf},
        {"isfinite", np::isfinite},
        {"isneginf", np::isneginf},
        {"isposinf", np::isposinf},
        {"signbit", np::signbit},
        {"logical_not", np::logical_not},
        {"bitwise_not", np::bitwise_not},
    };
    for (auto [name, fn] : unary) f[name] = one([fn = fn](const In& in) { return fn(in[0]); });
    f["round"] = one([](const In& in) { return np::round(in[0]); });
    f["around"] = one([](const In& in) { return np::around(in[0]); });
    std::map<std::string, B> binary = {
        {"add", np::add},
        {"subtract", np::subtract},
        {"multiply", np::multiply},
        {"divide", np::divide},
        {"true_divide", np::true_divide},
        {"power", np::power},
        {"float_power", np::float_power},
        {"maximum", np::maximum},
        {"minimum", np::minimum},
        {"floor_divide", np::floor_divide},
        {"mod", np::mod},
        {"remainder", np::remainder},
        {"arctan2", np::arctan2},
        {"hypot", np::hypot},
        {"logaddexp", np::logaddexp},
        {"logaddexp2", np::logaddexp2},
        {"heaviside", np::heaviside},
        {"nextafter", np::nextafter},
        {"gcd", np::gcd},
        {"lcm", np::lcm},
        {"bitwise_and", np::bitwise_and},
        {"bitwise_or", np::bitwise_or},
        {"bitwise_xor", np::bitwise_xor},
        {"equal", np::equal},
        {"not_equal", np::not_equal},
        {"less", np::less},
        {"less_equal", np::less_equal},
        {"greater", np::greater},
        {"greater_equal", np::greater_equal},
        {"logical_and", np::logical_and},
        {"logical_or", np::logical_or},
        {"logical_xor", np::logical_xor},
    };
    for (auto [name, fn] : binary)
      f[name] = one([fn = fn](const In& in) { return fn(in[0], in[1]); });
    f["isclose"] = one([](const In& in) { return np::isclose(in[0], in[1]); });
    f["divmod"] = [](const In& in) {
      auto [q, r] = np::divmod(in[0], in[1]);
      return std::vector<Tensor>{q, r};
    };
    f["allclose"] = one([](const In& in) { return to_tensor(np::allclose(in[0], in[1])); });
    f["array_equal"] = one([](const In& in) { return to_tensor(np::array_equal(in[0], in[1])); });
    return f;
  }();
  return m;
}

// Cases whose call differs from their function's plain one.
const std::map<std::string, Fn>& special_cases() {
  static const std::map<std::string, Fn> m = {
      {"round__decimals2", one([](const In& in) { return np::round(in[0], 2); })},
      {"around__decimals_neg1", one([](const In& in) { return np::around(in[0], -1); })},
      {"around__decimals_neg1_f64", one([](const In& in) { return np::around(in[0], -1); })},
      {"isclose__equal_nan",
       one([](const In& in) { return np::isclose(in[0], in[1], 1e-5, 1e-8, true); })},
      {"isclose__tolerances",
       one([](const In& in) { return np::isclose(in[0], in[1], 0.1, 0.01); })},
      {"clip__f64", one([](const In& in) { return np::clip(in[0], -1, 1.5); })},
      {"clip__i32_weak_scalars", one([](const In& in) { return np::clip(in[0], -1, 2); })},
      {"add__i32_weak_int", one([](const In& in) { return np::add(in[0], 1); })},
      {"add__i32_weak_float", one([](const In& in) { return np::add(in[0], 0.5); })},
      {"multiply__f32_weak_float", one([](const In& in) { return np::multiply(in[0], 0.5); })},
      {"power__weak_base", one([](const In& in) { return np::power(2, in[0]); })},
      {"where__weak_scalars",
       one([](const In& in) { return np::where(np::greater(in[0], 0), in[0], 0); })},
      {"add__bool_weak_bool", one([](const In& in) { return np::add(in[0], true); })},
      {"add__i32_weak_bool", one([](const In& in) { return np::add(in[0], true); })},
      {"add__i32_weak_big_int", one([](const In& in) { return np::add(in[0], 3000000000LL); })},
      {"var__ddof_too_big_none", one([](const In& in) { return np::var(in[0], {}, false, 3); })},
      {"var__ddof1_axis0", one([](const In& in) { return np::var(in[0], 0, false, 1); })},
      {"std__ddof1_none", one([](const In& in) { return np::std(in[0], {}, false, 1); })},
      {"average__weights_1d", one([](const In& in) { return np::average(in[0], 1, in[1]); })},
      {"average__weights_full", one([](const In& in) { return np::average(in[0], {}, in[1]); })},
      {"diff__n1_axis-1", one([](const In& in) { return np::diff(in[0], 1, -1); })},
      {"diff__n2_axis1", one([](const In& in) { return np::diff(in[0], 2, 1); })},
      {"diff__n1_axis0", one([](const In& in) { return np::diff(in[0], 1, 0); })},
      {"diff__i32", one([](const In& in) { return np::diff(in[0]); })},
      {"diff__bool", one([](const In& in) { return np::diff(in[0]); })},
      {"diff__special", one([](const In& in) { return np::diff(in[0]); })},
  };
  return m;
}

using Reduction = Tensor (*)(const Tensor&, const np::Axis&, bool);
using AxisReduction = Tensor (*)(const Tensor&, const np::Axis&);

const std::map<std::string, Reduction>& reductions() {
  static const std::map<std::string, Reduction> m = {
      {"sum", np::sum},
      {"prod", np::prod},
      {"mean", np::mean},
      {"var", [](const Tensor& a, const np::Axis& ax, bool k) { return np::var(a, ax, k); }},
      {"std", [](const Tensor& a, const np::Axis& ax, bool k) { return np::std(a, ax, k); }},
      {"max", np::max},
      {"min", np::min},
      {"amax", np::amax},
      {"amin", np::amin},
      {"ptp", np::ptp},
      {"all", np::all},
      {"any", np::any},
      {"count_nonzero", np::count_nonzero},
      {"nansum", np::nansum},
      {"nanprod", np::nanprod},
      {"nanmean", np::nanmean},
      {"average", [](const Tensor& a, const np::Axis& ax, bool) { return np::average(a, ax); }},
  };
  return m;
}

const std::map<std::string, AxisReduction>& axis_functions() {
  static const std::map<std::string, AxisReduction> m = {{"argmax", np::argmax},
                                                         {"argmin", np::argmin},
                                                         {"cumsum", np::cumsum},
                                                         {"cumprod", np::cumprod}};
  return m;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The axis a reduction case's variant names: ..._none, ..._axis0, ..._axis1, ..._axis_neg1,
// ..._axes02_keepdims (NumPy's axis=(0, 2), keepdims=True).
std::pair<np::Axis, bool> variant_axis(const std::string& variant) {
  if (ends_with(variant, "axes02_keepdims")) return {np::Axis{0, 2}, true};
  if (ends_with(variant, "axis_neg1")) return {np::Axis(-1), false};
  if (ends_with(variant, "axis0")) return {np::Axis(0), false};
  if (ends_with(variant, "axis1")) return {np::Axis(1), false};
  if (ends_with(variant, "none")) return {np::Axis(), false};
  ADD_FAILURE() << "no axis in variant " << variant;
  return {np::Axis(), false};
}

Fn case_function(const std::string& name) {
  if (auto it = special_cases().find(name); it != special_cases().end()) return it->second;
  std::string fn = name.substr(0, name.find("__"));
  std::string variant = name.substr(fn.size() + 2);
  if (auto it = functions().find(fn); it != functions().end()) return it->second;
  if (auto it = reductions().find(fn); it != reductions().end()) {
    auto [axis, keepdims] = variant_axis(variant);
    return one([f = it->second, axis = axis, keepdims = keepdims](const In& in) {
      return f(in[0], axis, keepdims);
    });
  }
  if (auto it = axis_functions().find(fn); it != axis_functions().end()) {
    auto axis = variant_axis(variant).first;
    return one([f = it->second, axis](const In& in) { return f(in[0], axis); });
  }
  return nullptr;
}

TEST(NpBreadth, EveryCaseMatchesNumPy) {
  std::set<std::string> names = np_breadth_goldens().case_names();
  ASSERT_GT(names.size(), 600u);
  std::set<std::string> covered;
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    Fn fn = case_function(name);
    ASSERT_TRUE(fn) << "no weft::np function for golden case " << name;
    std::vector<Tensor> got = fn(np_breadth_goldens().load(name, "in")),
                        want = np_breadth_goldens().load(name, "out");
    ASSERT_EQ(got.size(), want.size());
    // nextafter steps by one ulp, inside any tolerance: compare it exactly.
    bool exact = name.rfind("nextafter", 0) == 0;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(weft::testing::matches_numpy(got[i], want[i], exact)) << name;
    }
    covered.insert(name.substr(0, name.find("__")));
  }
  // Every function the tables name has goldens.
  for (const auto& table : {functions()}) {
    for (const auto& [fn, f] : table) EXPECT_TRUE(covered.count(fn)) << fn << " has no goldens";
  }
  for (const auto& [fn, f] : reductions()) EXPECT_TRUE(covered.count(fn)) << fn;
  for (const auto& [fn, f] : axis_functions()) EXPECT_TRUE(covered.count(fn)) << fn;
}

// ---- gradients
// -----------------------------------------------------------------------------------

using weft::testing::gradient_check;
using weft::testing::uniform;

struct GradCase {
  std::string name;
  weft::testing::TensorFn f;
  std::vector<Tensor> inputs;
};

std::vector<GradCase> grad_cases() {
  Tensor x = uniform({3, 4}, 1, -0.9, 0.9);
  Tensor pos = uniform({3, 4}, 2, 0.2, 3);
  Tensor big = uniform({3, 4}, 3, 1.2, 3);
  Tensor b = uniform({4}, 4, -2, 2);
  Tensor bpos = uniform({4}, 5, 0.5, 2);
  // Unary functions, each on inputs away from its poles and kinks.
  std::vector<std::pair<std::string, Tensor (*)(const Tensor&)>> on_x = {
      {"exp2", np::exp2},         {"expm1", np::expm1},     {"cbrt", np::cbrt},
      {"tan", np::tan},           {"arcsin", np::arcsin},   {"arccos", np::arccos},
      {"arctan", np::arctan},     {"sinh", np::sinh},       {"cosh", np::cosh},
      {"arcsinh", np::arcsinh},   {"arctanh", np::arctanh}, {"deg2rad", np::deg2rad},
      {"rad2deg", np::rad2deg},   {"sinc", np::sinc},       {"negative", np::negative},
      {"positive", np::positive}, {"square", np::square},   {"tanh", np::tanh},
      {"sin", np::sin},           {"cos", np::cos},         {"exp", np::exp}};
  std::vector<std::pair<std::string, Tensor (*)(const Tensor&)>> on_pos = {
      {"log2", np::log2},        {"log10", np::log10},
      {"log1p", np::log1p},      {"reciprocal", np::reciprocal},
      {"sqrt", np::sqrt},        {"log", np::log},
      {"fabs", np::fabs},        {"abs", np::abs},
      {"absolute", np::absolute}};
  std::vector<GradCase> cases;
  for (auto [name, f] : on_x) cases.push_back({name, [f = f](auto& in) { return f(in[0]); }, {x}});
  for (auto [name, f] : on_pos)
    cases.push_back({name, [f = f](auto& in) { return f(in[0]); }, {pos}});
  cases.push_back({"arccosh", [](auto& in) { return np::arccosh(in[0]); }, {big}});
  std::vector<std::pair<std::string, Tensor (*)(const np::ArrayLike&, const np::ArrayLike&)>>
      binary = {{"add", np::add},
                {"subtract", np::subtract},
                {"multiply", np::multiply},
                {"divide", np::divide},
                {"true_divide", np::true_divide},
                {"arctan2", np::arctan2},
                {"hypot", np::hypot},
                {"logaddexp", np::logaddexp},
                {"logaddexp2", np::logaddexp2},
                {"maximum", np::maximum},
                {"minimum", np::minimum}};
  for (auto [name, f] : binary) {
    cases.push_back({name, [f = f](auto& in) { return f(in[0], in[1]); }, {x, bpos}});
  }
  cases.push_back({"power", [](auto& in) { return np::power(in[0], in[1]); }, {pos, b}});
  cases.push_back(
      {"float_power", [](auto& in) { return np::float_power(in[0], in[1]); }, {pos, b}});
  // mod's gradient in a (1) and b (-floor(a / b)), away from the jumps.
  Tensor a_mod = np::reshape(np::add(np::multiply(np::arange(12.0), 0.7), 0.3), {3, 4});
  cases.push_back({"mod", [](auto& in) { return np::mod(in[0], in[1]); }, {a_mod, bpos}});
  cases.push_back(
      {"remainder", [](auto& in) { return np::remainder(in[0], in[1]); }, {a_mod, bpos}});
  // heaviside steps at x = 0, so only h0 (taken where x is 0) is checked.
  cases.push_back({"heaviside",
                   [](auto& in) {
                     return np::heaviside(np::array({-1.0, 0.0, 2.0, 0.0}), in[0]);
                   },
                   {uniform({4}, 6)}});
  cases.push_back({"clip", [](auto& in) { return np::clip(in[0], -0.5, 0.5); }, {x}});
  cases.push_back(
      {"where", [](auto& in) { return np::where(np::greater(in[0], 0), in[0], in[1]); }, {x, b}});
  // Reductions.
  std::vector<std::pair<std::string, Reduction>> reduced = {
      {"sum", np::sum},       {"prod", np::prod},       {"mean", np::mean},      {"max", np::max},
      {"min", np::min},       {"amax", np::amax},       {"amin", np::amin},      {"ptp", np::ptp},
      {"nansum", np::nansum}, {"nanprod", np::nanprod}, {"nanmean", np::nanmean}};
  for (auto [name, f] : reduced) {
    cases.push_back({name, [f = f](auto& in) { return f(in[0], 1, false); }, {x}});
  }
  cases.push_back({"var", [](auto& in) { return np::var(in[0], 0, false, 1); }, {x}});
  cases.push_back({"std", [](auto& in) { return np::std(in[0], 1); }, {x}});
  cases.push_back({"average", [](auto& in) { return np::average(in[0], 1, in[1]); }, {x, bpos}});
  cases.push_back({"cumsum", [](auto& in) { return np::cumsum(in[0], 1); }, {x}});
  cases.push_back({"cumsum_flat", [](auto& in) { return np::cumsum(in[0]); }, {x}});
  cases.push_back({"cumprod", [](auto& in) { return np::cumprod(in[0], 0); }, {x}});
  // Zeros in the running product: the gradient is exact there too.
  cases.push_back({"cumprod_zeros",
                   [](auto& in) { return np::cumprod(in[0], 1); },
                   {np::array({{1.5, 0.0, 2.0, -1.0}, {0.0, 0.0, 3.0, 2.0}})}});
  cases.push_back({"diff", [](auto& in) { return np::diff(in[0], 2, 1); }, {x}});
  return cases;
}

TEST(NpBreadth, DifferentiableFunctionsPassTheGradientCheck) {
  for (const GradCase& c : grad_cases()) {
    // cumprod's gradient is one scan: forward mode refuses it (autodiff/forward_test.cc).
    bool scan = c.name.rfind("cumprod", 0) == 0;
    EXPECT_TRUE(gradient_check(c.f, c.inputs, {.check_forward = !scan})) << c.name;
  }
}

TEST(NpBreadth, RoundingGivesZeroGradients) {
  Tensor x = uniform({5}, 7, -3, 3);
  for (auto f : {np::floor, np::ceil, np::fix, np::sign}) {
    weft::Variable v(x);
    weft::GradientTape tape;
    Tensor g = tape.gradient(np::sum(f(v)), v);
    ASSERT_TRUE(g.defined());
    EXPECT_EQ(g.to_vector<double>(), std::vector<double>(5, 0.0));
  }
  weft::Variable v(x);
  weft::GradientTape tape;
  Tensor g = tape.gradient(np::sum(np::round(v, 1)), v);
  EXPECT_EQ(g.to_vector<double>(), std::vector<double>(5, 0.0));
}

TEST(NpBreadth, IntegerOpsRefuseFloatsNamingTheOp) {
  Tensor f = np::ones({2});
  using Op = Tensor (*)(const np::ArrayLike&, const np::ArrayLike&);
  for (auto [op, name] : {std::pair<Op, const char*>{np::gcd, "gcd"},
                          {np::lcm, "lcm"},
                          {np::bitwise_and, "bitwise_and"},
                          {np::bitwise_or, "bitwise_or"},
                          {np::bitwise_xor, "bitwise_xor"}}) {
    try {
      op(f, f);
      ADD_FAILURE() << name << ": expected InvalidArgument";
    } catch (const weft::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("expected integer"), std::string::npos) << e.what();
      // The op's own name starts the message ("gcd: expected integer tensors, got ..."), so an
      // error from one op is not passed off as another's.
      EXPECT_NE(std::string(e.what()).find(std::string(name) + ": expected integer"),
                std::string::npos)
          << e.what();
    }
  }
  Tensor t = np::greater(np::array({1.0}), 0);
  EXPECT_THROW(np::mod(t, t), weft::InvalidArgument);
}

}  // namespace
}  // namespace np_breadth
