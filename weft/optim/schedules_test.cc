// Learning-rate schedules against NumPy: scripts/make_optim_goldens.py evaluates Keras' formulas
// at a list of steps (around every boundary: decay steps, warmup end, the end of the decay).
#include "weft/optim/schedules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>

#include "weft/core/errors.h"
#include "weft/np/np.h"
#include "weft/testing/goldens.h"

namespace weft::optim::schedules {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string& schedules_golden_dir() {
  static const std::string dir = testing::golden_dir("make_optim_goldens");
  return dir;
}

// The schedules of make_optim_goldens.py's SCHEDULES.
const std::map<std::string, LearningRateSchedule>& cases() {
  static const std::map<std::string, LearningRateSchedule> m = {
      {"exponential", ExponentialDecay(0.1, 10, 0.5)},
      {"exponential_staircase", ExponentialDecay(0.1, 10, 0.5, /*staircase=*/true)},
      {"piecewise", PiecewiseConstantDecay({10, 20}, {1.0, 0.5, 0.1})},
      {"cosine", CosineDecay(0.1, 100)},
      {"cosine_alpha", CosineDecay(0.1, 100, 0.2)},
      {"cosine_warmup", CosineDecay(0.0, 100, 0.1, /*warmup_target=*/0.5, /*warmup_steps=*/20)},
      {"cosine_warmup_from_nonzero", CosineDecay(0.01, 50, 0.0, 0.1, 10)},
  };
  return m;
}

class ScheduleGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ScheduleGolden, MatchesNumPy) {
  const std::string& name = GetParam();
  std::vector<int64_t> steps =
      np::load(schedules_golden_dir() + "/schedules.steps.npy").to_vector<int64_t>();
  std::vector<double> want =
      np::load(schedules_golden_dir() + "/schedules." + name + ".npy").to_vector<double>();
  ASSERT_EQ(steps.size(), want.size());
  const LearningRateSchedule& schedule = cases().at(name);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_NEAR(schedule(steps[i]), want[i], 1e-15 + 1e-13 * std::fabs(want[i]))
        << name << " at step " << steps[i];
  }
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& [name, s] : cases()) names.push_back(name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(All, ScheduleGolden, ::testing::ValuesIn(case_names()),
                         [](const auto& info) { return info.param; });

TEST(Schedules, HandValues) {
  ExponentialDecay exp(1.0, 2, 0.5, true);
  EXPECT_THAT((std::vector<double>{exp(0), exp(1), exp(2), exp(3), exp(4)}),
              ElementsAre(1.0, 1.0, 0.5, 0.5, 0.25));
  PiecewiseConstantDecay pw({1, 3}, {3.0, 2.0, 1.0});
  EXPECT_THAT((std::vector<double>{pw(0), pw(1), pw(2), pw(3), pw(4)}),
              ElementsAre(3.0, 3.0, 2.0, 2.0, 1.0));
  CosineDecay cos(1.0, 10, 0.5);
  EXPECT_DOUBLE_EQ(cos(0), 1.0);
  EXPECT_DOUBLE_EQ(cos(5), 0.75);
  EXPECT_DOUBLE_EQ(cos(10), 0.5);
  EXPECT_DOUBLE_EQ(cos(1000), 0.5);
  CosineDecay warm(0.0, 10, 0.0, 1.0, 4);
  EXPECT_DOUBLE_EQ(warm(0), 0.0);
  EXPECT_DOUBLE_EQ(warm(2), 0.5);
  EXPECT_DOUBLE_EQ(warm(4), 1.0);
  EXPECT_DOUBLE_EQ(warm(9), 0.5);
  EXPECT_NEAR(warm(14), 0.0, 1e-17);
  EXPECT_NEAR(warm(100), 0.0, 1e-17);
}

TEST(Schedules, ConstantAndCustom) {
  LearningRateSchedule constant = 0.25;
  EXPECT_TRUE(constant.is_constant());
  EXPECT_EQ(constant(0), 0.25);
  EXPECT_EQ(constant(1000000), 0.25);
  EXPECT_EQ(constant.name(), "constant");
  LearningRateSchedule custom([](int64_t step) { return 1.0 / (1 + step); }, "inverse_time");
  EXPECT_FALSE(custom.is_constant());
  EXPECT_EQ(custom(3), 0.25);
  EXPECT_EQ(custom.name(), "inverse_time");
  // The named schedules are plain LearningRateSchedules: copying one keeps its behaviour.
  LearningRateSchedule stored = ExponentialDecay(1.0, 1, 0.5);
  EXPECT_EQ(stored(2), 0.25);
  EXPECT_EQ(stored.name(), "ExponentialDecay");
}

TEST(Schedules, Errors) {
  EXPECT_THAT([] { ExponentialDecay(0.1, 0, 0.5); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("decay_steps")));
  EXPECT_THROW(CosineDecay(0.1, -5), InvalidArgument);
  EXPECT_THROW(CosineDecay(0.1, 5, 0.0, 1.0, -1), InvalidArgument);
  EXPECT_THAT(
      [] {
        PiecewiseConstantDecay({1, 2}, {1.0, 2.0});
      },
      ::testing::ThrowsMessage<InvalidArgument>(
          AllOf(HasSubstr("2 boundaries"), HasSubstr("2 values"))));
  EXPECT_THAT(
      [] {
        PiecewiseConstantDecay({5, 5}, {1.0, 2.0, 3.0});
      },
      ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("strictly increase")));
  EXPECT_THROW(LearningRateSchedule{LearningRateSchedule::Fn()}, InvalidArgument);
}

}  // namespace
}  // namespace weft::optim::schedules
