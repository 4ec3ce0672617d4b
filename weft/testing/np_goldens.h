// NumPy goldens for weft::np tests: a script under scripts/ writes, per case, its inputs
// (<case>.in0.npy, ...) and NumPy's results (<case>.out.npy, or .out0.npy, ... for several),
// once per build (goldens.h); these helpers load what it wrote and compare weft's results with
// NumPy's. Header-only; tests include it.
//
//   const weft::testing::NpGoldens& g = weft::testing::np_goldens("make_np_array_goldens.py");
//   std::vector<weft::Tensor> in = g.load(name, "in"), want = g.load(name, "out");
//   EXPECT_TRUE(weft::testing::matches_numpy(got, want[0]));
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "weft/np/io.h"
#include "weft/testing/goldens.h"

namespace weft::testing {

class NpGoldens {
 public:
  // What scripts/<script> wrote at build time.
  explicit NpGoldens(const std::string& script)
      : dir_(golden_dir(std::filesystem::path(script).stem().string())) {}
  NpGoldens(const NpGoldens&) = delete;
  NpGoldens& operator=(const NpGoldens&) = delete;

  const std::string& dir() const { return dir_; }
  // <name>.<kind>.npy, or <name>.<kind>0.npy, <name>.<kind>1.npy, ... (kind "in" or "out").
  std::vector<Tensor> load(const std::string& name, const std::string& kind) const {
    std::string base = dir_ + "/" + name + "." + kind;
    if (std::filesystem::exists(base + ".npy")) return {np::load(base + ".npy")};
    std::vector<Tensor> out;
    for (int i = 0; std::filesystem::exists(base + std::to_string(i) + ".npy"); ++i) {
      out.push_back(np::load(base + std::to_string(i) + ".npy"));
    }
    return out;
  }
  // Every case with a result, by name (the file name up to its first dot).
  std::set<std::string> case_names() const {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      std::string file = entry.path().filename().string();
      if (file.find(".out") != std::string::npos) names.insert(file.substr(0, file.find('.')));
    }
    return names;
  }

 private:
  std::string dir_;
};

// The goldens of `script`, loaded on first use and kept for the process.
inline const NpGoldens& np_goldens(const std::string& script) {
  static std::map<std::string, std::unique_ptr<NpGoldens>> made;
  auto& g = made[script];
  if (!g) g = std::make_unique<NpGoldens>(script);
  return *g;
}

// Same dtype and shape, and values within a tolerance for the dtype (NumPy's own SIMD math
// differs from libm by a few ulp): NaN matches NaN, infinities match exactly, integers and bools
// exactly; every value exactly when `exact` (for results that are exact by definition).
inline ::testing::AssertionResult matches_numpy(const Tensor& got, const Tensor& want,
                                                bool exact = false) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return ::testing::AssertionFailure() << "weft gives " << got.dtype() << shape_str(got.shape())
                                         << ", NumPy " << want.dtype() << shape_str(want.shape());
  }
  double rtol = 0, atol = 0;
  if (want.dtype() == kFloat64) rtol = 1e-12, atol = 1e-14;
  if (want.dtype() == kFloat32) rtol = 4e-6, atol = 1e-6;
  if (want.dtype() == kFloat16) rtol = 2e-3, atol = 1e-3;
  if (exact) rtol = atol = 0;
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < w.size(); ++i) {
    bool ok = std::isnan(w[i])   ? std::isnan(g[i])
              : std::isinf(w[i]) ? g[i] == w[i]
                                 : std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i]);
    if (!ok) {
      return ::testing::AssertionFailure()
             << "element " << i << ": weft " << g[i] << ", NumPy " << w[i];
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace weft::testing
