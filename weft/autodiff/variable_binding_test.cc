// A bound variable (VariableBinding: its value lives elsewhere, as ParameterServerStrategy's do)
// refreshes its value before every read and writes every assignment through, with a binding
// that keeps its "remote" value in memory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "weft/autodiff/variable.h"
#include "weft/core/errors.h"
#include "weft/ops/creation.h"

namespace weft {
namespace {

// The value "where the variable lives", and how often it was read and written.
struct Remote : VariableBinding {
  explicit Remote(std::vector<float> v) : value(std::move(v)) {}
  void refresh(const Tensor& cache) const override {
    ++refreshes;
    std::memcpy(cache.raw_data(), value.data(), value.size() * sizeof(float));
  }
  void write(const Tensor& v) const override {
    ++writes;
    value = v.to_vector<float>();
  }
  mutable std::vector<float> value;
  mutable int refreshes = 0, writes = 0;
};

TEST(VariableBinding, ReadsRefreshAndAssignmentsWriteThrough) {
  Variable v(zeros({3}), "bound");
  EXPECT_EQ(v.binding(), nullptr);
  auto remote = std::make_shared<Remote>(std::vector<float>{1, 2, 3});
  v.bind(remote);
  EXPECT_EQ(v.binding(), remote.get());
  EXPECT_EQ(v.value().to_vector<float>(), (std::vector<float>{1, 2, 3}));
  remote->value = {7, 8, 9};  // changed where it lives: the next read sees it
  EXPECT_EQ(v.value().to_vector<float>(), (std::vector<float>{7, 8, 9}));

  v.assign(Tensor::from_vector<float>({4, 5, 6}, {3}));
  EXPECT_EQ(remote->value, (std::vector<float>{4, 5, 6}));
  v.assign_add(full({3}, 10.0f));
  EXPECT_EQ(remote->value, (std::vector<float>{14, 15, 16}));
  remote->value = {0, 0, 1};
  v.assign_sub(full({3}, 1.0f));  // from the value where it lives
  EXPECT_EQ(remote->value, (std::vector<float>{-1, -1, 0}));
  EXPECT_EQ(remote->writes, 3);
  // The two reads and the two read-modify-writes pulled; assign, and what never changes, do not.
  EXPECT_EQ(remote->refreshes, 4);
  EXPECT_EQ(v.name(), "bound");
  EXPECT_EQ(v.shape(), (Shape{3}));
  EXPECT_EQ(v.dtype(), kFloat32);
  EXPECT_TRUE(v.trainable());
  EXPECT_EQ(remote->refreshes, 4);

  try {
    v.bind(remote);
    FAIL() << "a second binding was accepted";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("Variable \"bound\" is bound already"));
  }
}

}  // namespace
}  // namespace weft
