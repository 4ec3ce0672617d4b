// weft::np against NumPy: scripts/make_np_goldens.py writes inputs and NumPy's results as .npy;
// each case recomputes the result with weft::np and compares dtype, shape and values. weft then
// saves its results and the script checks, in NumPy, that they load and match.
#include "weft/np/np.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>

#include "weft/autodiff/tape.h"
#include "weft/ops/elementwise.h"

namespace np = weft::np;
using weft::Tensor;

namespace {

// A directory of this process's own: CTest runs the cases of one binary as parallel processes.
struct GoldenDir {
  std::string path =
      std::string(WEFT_BINARY_DIR) + "/testdata/np_goldens." + std::to_string(getpid());
  ~GoldenDir() { std::filesystem::remove_all(path); }
};

const std::string& golden_dir() {
  static const GoldenDir owner;
  static const std::string dir = [] {
    const std::string& d = owner.path;
    std::string cmd =
        std::string(WEFT_PYTHON) + " " + WEFT_SOURCE_DIR + "/scripts/make_np_goldens.py " + d;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return d;
  }();
  return dir;
}

using Case = std::function<Tensor(const std::vector<Tensor>&)>;

const std::map<std::string, Case>& np_cases() {
  static const std::map<std::string, Case> m = {
      {"dot_1d_1d", [](auto& in) { return np::dot(in[0], in[1]); }},
      {"dot_2d_2d", [](auto& in) { return np::dot(in[0], in[1]); }},
      {"dot_3d_1d", [](auto& in) { return np::dot(in[0], in[1]); }},
      {"dot_3d_3d", [](auto& in) { return np::dot(in[0], in[1]); }},
      {"matmul_batched", [](auto& in) { return np::matmul(in[0], in[1]); }},
      {"sum_all", [](auto& in) { return np::sum(in[0]); }},
      {"sum_axis1", [](auto& in) { return np::sum(in[0], 1); }},
      {"sum_axes02_keepdims",
       [](auto& in) {
         return np::sum(in[0], {0, 2}, true);
       }},
      {"mean_axis_neg1", [](auto& in) { return np::mean(in[0], -1); }},
      {"std_all", [](auto& in) { return np::std(in[0]); }},
      {"std_axis0", [](auto& in) { return np::std(in[0], 0); }},
      {"var_axis1_ddof1", [](auto& in) { return np::var(in[0], 1, false, 1); }},
      {"max_axis0", [](auto& in) { return np::max(in[0], 0); }},
      {"min_all", [](auto& in) { return np::min(in[0]); }},
      {"argmax_flat", [](auto& in) { return np::argmax(in[0]); }},
      {"argmax_axis1", [](auto& in) { return np::argmax(in[0], 1); }},
      {"clip", [](auto& in) { return np::clip(in[0], -0.5, 0.5); }},
      {"where", [](auto& in) { return np::where(weft::greater(in[0], 0), in[1], in[2]); }},
      {"abs", [](auto& in) { return np::abs(in[0]); }},
      {"exp", [](auto& in) { return np::exp(in[0]); }},
      {"log", [](auto& in) { return np::log(in[0]); }},
      {"sqrt", [](auto& in) { return np::sqrt(in[0]); }},
      {"transpose_perm",
       [](auto& in) {
         return np::transpose(in[0], {1, 2, 0});
       }},
      {"transpose_default", [](auto& in) { return np::transpose(in[0]); }},
      {"reshape",
       [](auto& in) {
         return np::reshape(in[0], {4, -1});
       }},
      {"concatenate_axis1",
       [](auto& in) {
         return np::concatenate({in[0], in[1]}, 1);
       }},
      {"stack_axis1",
       [](auto& in) {
         return np::stack({in[0], in[1], in[2]}, 1);
       }},
      {"broadcast_add", [](auto& in) { return in[0] + in[1]; }},
      {"promote_int32_float32", [](auto& in) { return in[0] + in[1]; }},
      {"int_sum_is_int64", [](auto& in) { return np::sum(in[0], 0); }},
      {"linspace", [](auto&) { return np::linspace(-1.0, 2.0, 7); }},
      {"linspace_no_endpoint", [](auto&) { return np::linspace(0.0, 1.0, 5, false); }},
      {"arange_int", [](auto&) { return np::arange(3, 17, 4); }},
      {"arange_float", [](auto&) { return np::arange(0.5, 3.0, 0.25); }},
      {"eye_rect", [](auto&) { return np::eye(3, 5); }},
      {"zeros_like_int", [](auto& in) { return np::zeros_like(in[0]); }},
      {"grad_sum_sigmoid_dot",
       [](auto& in) {
         weft::Variable wt(in[1]);
         weft::GradientTape tape;
         Tensor output = weft::sigmoid(np::dot(in[0], wt));
         return tape.gradient(np::sum(output), wt);
       }},
  };
  return m;
}

std::vector<Tensor> load_inputs(const std::string& name) {
  std::vector<Tensor> in;
  for (int i = 0;; ++i) {
    std::string path = golden_dir() + "/" + name + ".in" + std::to_string(i) + ".npy";
    if (!std::filesystem::exists(path)) return in;
    in.push_back(np::load(path));
  }
}

class NpGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(NpGolden, MatchesNumPy) {
  const std::string& name = GetParam();
  Tensor expected = np::load(golden_dir() + "/" + name + ".out.npy");
  Tensor got = np_cases().at(name)(load_inputs(name));
  ASSERT_EQ(got.dtype(), expected.dtype()) << name;
  ASSERT_EQ(got.shape(), expected.shape()) << name;
  std::vector<double> g = got.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < e.size(); ++i) {
    EXPECT_NEAR(g[i], e[i], 1e-12 + 1e-10 * std::fabs(e[i])) << name << " element " << i;
  }
  np::save(golden_dir() + "/" + name + ".weft.npy", got);
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : np_cases()) names.push_back(name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(All, NpGolden, ::testing::ValuesIn(case_names()),
                         [](const auto& info) { return info.param; });

// Runs after the cases above (gtest runs suites in declaration order within a binary).
TEST(NpInterop, NumPyLoadsWhatWeftWrote) {
  for (const std::string& name : case_names()) {
    if (!std::filesystem::exists(golden_dir() + "/" + name + ".weft.npy")) {
      np::save(golden_dir() + "/" + name + ".weft.npy", np_cases().at(name)(load_inputs(name)));
    }
  }
  std::string cmd = std::string(WEFT_PYTHON) + " " + WEFT_SOURCE_DIR +
                    "/scripts/make_np_goldens.py --check " + golden_dir();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

TEST(NpInterop, NpzRoundTrip) {
  std::string path = ::testing::TempDir() + "/np_roundtrip.npz";
  Tensor a = np::arange(6), b = np::random::randn({2, 3}, 7);
  np::savez_compressed(path, {{"a", a}, {"b", b}});
  auto loaded = np::load_npz(path);
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded.at("a").to_vector<int64_t>(), a.to_vector<int64_t>());
  EXPECT_EQ(loaded.at("b").to_vector<double>(), b.to_vector<double>());
}

TEST(NpErrors, MalformedNpyNamesTheFile) {
  std::string path = ::testing::TempDir() + "/bad.npy";
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fputs("not an npy file", f);
  std::fclose(f);
  try {
    np::load(path);
    FAIL() << "expected DataLoss";
  } catch (const weft::DataLoss& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("bad.npy"));
  }
}

TEST(NpRandom, SameSeedSameValuesAndStatistics) {
  Tensor a = np::random::randn({1000, 100}, 3), b = np::random::randn({1000, 100}, 3);
  EXPECT_EQ(a.to_vector<double>(), b.to_vector<double>());
  EXPECT_NE(a.to_vector<double>(), np::random::randn({1000, 100}, 4).to_vector<double>());
  EXPECT_NEAR(np::mean(a).item<double>(), 0.0, 0.01);
  EXPECT_NEAR(np::std(a).item<double>(), 1.0, 0.01);
  Tensor u = np::random::uniform(-2, 3, {100000}, 1);
  EXPECT_GE(np::min(u).item<double>(), -2.0);
  EXPECT_LT(np::max(u).item<double>(), 3.0);
}

}  // namespace
