#include "weft/optim/ftrl.h"

#include <cmath>

#include "weft/optim/internal/fused_update.h"
#include "weft/optim/internal/options.h"

namespace weft::optim {
namespace {

class FtrlAlgorithm : public Optimizer::Algorithm {
 public:
  explicit FtrlAlgorithm(const FtrlOptions& o) : o_(o) {
    internal::check_range(o.name, "learning_rate_power", o.learning_rate_power, -HUGE_VAL, 0);
    internal::check_range(o.name, "initial_accumulator_value", o.initial_accumulator_value, 0,
                          HUGE_VAL);
    internal::check_range(o.name, "l1_regularization_strength", o.l1_regularization_strength, 0,
                          HUGE_VAL);
    internal::check_range(o.name, "l2_regularization_strength", o.l2_regularization_strength, 0,
                          HUGE_VAL);
    internal::check_range(o.name, "l2_shrinkage_regularization_strength",
                          o.l2_shrinkage_regularization_strength, 0, HUGE_VAL);
    internal::check_range(o.name, "beta", o.beta, 0, HUGE_VAL);
  }
  ConfigDict get_config() const override {
    return ConfigDict()
        .set("class_name", "Ftrl")
        .set("learning_rate_power", o_.learning_rate_power)
        .set("initial_accumulator_value", o_.initial_accumulator_value)
        .set("l1_regularization_strength", o_.l1_regularization_strength)
        .set("l2_regularization_strength", o_.l2_regularization_strength)
        .set("l2_shrinkage_regularization_strength", o_.l2_shrinkage_regularization_strength)
        .set("beta", o_.beta);
  }
  bool elementwise() const override { return true; }  // fused_update

  std::vector<Slot> slots() const override {
    return {{"accumulator", o_.initial_accumulator_value}, {"linear", 0.0}};
  }

  // ResourceApplyFtrl (ResourceApplyFtrlV2 with shrinkage), with Keras's l2 + beta / (2 lr).
  void update(const Tensor& grad, const Tensor& var, std::span<const Tensor> slots,
              const Step& step) const override {
    const double lr = step.learning_rate, power = -o_.learning_rate_power;
    const double l1 = o_.l1_regularization_strength;
    const double l2 = o_.l2_regularization_strength + o_.beta / (2 * lr);
    const double shrink = o_.l2_shrinkage_regularization_strength;
    const bool sqrt_power = power == 0.5;
    internal::fused_update<2>(grad, var, slots, [=](auto g, auto& w, auto& n, auto& z) {
      using C = decltype(g);
      auto pw = [&](C x) { return sqrt_power ? std::sqrt(x) : std::pow(x, C(power)); };
      C n_new = n + g * g;
      C g_shrunk = shrink != 0 ? g + C(2 * shrink) * w : g;
      z += g_shrunk - (pw(n_new) - pw(n)) / C(lr) * w;
      C quadratic = pw(n_new) / C(lr) + C(2 * l2);
      C l1_z = z > C(0) ? C(l1) : -C(l1);
      w = std::abs(z) > C(l1) ? (l1_z - z) / quadratic : C(0);
      n = n_new;
    });
  }

 private:
  FtrlOptions o_;
};

}  // namespace

Ftrl::Ftrl(FtrlOptions o)
    : Optimizer(std::make_shared<FtrlAlgorithm>(o), internal::common_options(o)) {}

Ftrl::Ftrl(schedules::LearningRateSchedule learning_rate)
    : Ftrl(FtrlOptions{.learning_rate = std::move(learning_rate)}) {}

}  // namespace weft::optim
