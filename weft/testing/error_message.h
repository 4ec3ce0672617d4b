// For tests: the message of the InvalidArgument a call throws, so several parts of it can be
// checked (a test failure, and "", when it throws nothing). Header-only.
//
//   std::string m = weft::testing::invalid_argument_message([] { weft::nn::Reshape({-1, -1}); });
//   EXPECT_THAT(m, HasSubstr("more than one -1"));
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "weft/core/errors.h"

namespace weft::testing {

template <typename F>
std::string invalid_argument_message(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.message();
  }
  ADD_FAILURE() << "expected InvalidArgument";
  return "";
}

}  // namespace weft::testing
