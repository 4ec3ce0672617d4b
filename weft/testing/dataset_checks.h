// Checks for Dataset pipelines, for tests: elements flattened to numbers so that sequences
// compare with ==, expect_restores_exactly, which saves an iterator at every given cut and
// restores the state into a freshly built pipeline, and DirectoryTest, a fixture with a fresh
// directory for pipelines that write files. Header-only.
//
//   weft::testing::expect_restores_exactly([] { return Dataset::range(9).batch(2); }, 5,
//                                          {0, 1, 4, 5});
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "weft/core/config.h"
#include "weft/data/dataset.h"

namespace weft::testing {

// Every element flattened to numbers, so sequences of batches compare with ==.
using Flat = std::vector<std::vector<double>>;

inline std::vector<double> flat(const data::Element& e) {
  std::vector<double> out;
  for (const Tensor& t : e) {
    for (double v : t.to_vector<double>()) out.push_back(v);
    out.push_back(-1e9);  // component separator
  }
  return out;
}

// Every element of `ds`, flattened.
inline Flat all(const data::Dataset& ds) {
  Flat out;
  for (const data::Element& e : ds) out.push_back(flat(e));
  return out;
}

// A fixture whose test gets its own empty directory, path() (named by `prefix`, the process and
// the test), removed after the test, as is any change to config::num_threads().
class DirectoryTest : public ::testing::Test {
 protected:
  explicit DirectoryTest(const std::string& prefix)
      : dir_(std::filesystem::path(::testing::TempDir()) /
             (prefix + "_" + std::to_string(getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::remove_all(dir_);
  }
  ~DirectoryTest() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    config::set_num_threads(threads_);
  }
  std::string path() const { return dir_.string(); }

  std::filesystem::path dir_;
  int threads_ = config::num_threads();
};

inline Flat take_n(data::Dataset::Iterator& it, int64_t n) {
  Flat out;
  for (int64_t i = 0; i < n; ++i) {
    std::optional<data::Element> e = it.next();
    if (!e) break;
    out.push_back(flat(*e));
  }
  return out;
}

inline Flat tail(const Flat& v, size_t from) { return Flat(v.begin() + from, v.end()); }

// Builds the pipeline afresh each time, as a new process would.
using Builder = std::function<data::Dataset()>;

// Runs `build()` uninterrupted for n elements, then for each cut k: reads k elements from one
// fresh pipeline, saves, and restores the state into another fresh pipeline's iterator (made by
// `restore_into`, by default `build`), which must yield exactly the uninterrupted run's elements
// k..n-1. The saving iterator continues unchanged.
inline void expect_restores_exactly(const Builder& build, int64_t n,
                                    const std::vector<int64_t>& cuts,
                                    const Builder& restore_into = nullptr) {
  data::Dataset::Iterator reference_it = build().begin();
  const Flat reference = take_n(reference_it, n);
  ASSERT_EQ(static_cast<int64_t>(reference.size()), n);
  for (int64_t k : cuts) {
    SCOPED_TRACE("cut after " + std::to_string(k) + " elements");
    data::Dataset::Iterator it = build().begin();
    Flat head = take_n(it, k);
    ASSERT_EQ(head, Flat(reference.begin(), reference.begin() + k));
    const std::string state = it.save_state();
    data::Dataset::Iterator restored = (restore_into ? restore_into : build)().begin();
    restored.restore_state(state);
    EXPECT_EQ(take_n(restored, n - k), tail(reference, k));
    EXPECT_EQ(take_n(it, n - k), tail(reference, k));  // saving did not disturb it
  }
}

// 0, 1, ..., n: every cut of a run of n elements.
inline std::vector<int64_t> every_cut(int64_t n) {
  std::vector<int64_t> cuts;
  for (int64_t k = 0; k <= n; ++k) cuts.push_back(k);
  return cuts;
}

}  // namespace weft::testing
