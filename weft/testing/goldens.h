// Where the build wrote a golden script's files: tests/CMakeLists.txt runs each
// scripts/make_*_goldens.py once per build (target weft_goldens, again when the script changes)
// into <build>/testdata/<script name>, rather than once in every test process (CTest runs each case
// of a binary as a process of its own, and a script run cost 2-6 s of each of 66 optimizer cases).
// Header-only; tests include it.
//
//   std::string dir = weft::testing::golden_dir("make_optim_goldens");
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace weft::testing {

inline std::string golden_dir(const std::string& name) {
  std::string dir = std::string(WEFT_BINARY_DIR) + "/testdata/" + name;
  EXPECT_TRUE(std::filesystem::is_directory(dir))
      << dir << " is missing: the build's weft_goldens target writes it";
  return dir;
}

}  // namespace weft::testing
