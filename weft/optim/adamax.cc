#include "weft/optim/adamax.h"

#include <algorithm>
#include <cmath>

#include "weft/optim/internal/fused_update.h"
#include "weft/optim/internal/options.h"

namespace weft::optim {
namespace {

class AdamaxAlgorithm : public Optimizer::Algorithm {
 public:
  explicit AdamaxAlgorithm(const AdamaxOptions& o)
      : beta_1_(o.beta_1), beta_2_(o.beta_2), epsilon_(o.epsilon) {
    internal::check_betas(o.name, o.beta_1, o.beta_2, o.epsilon);
  }
  ConfigDict get_config() const override {
    return ConfigDict()
        .set("class_name", "Adamax")
        .set("beta_1", beta_1_)
        .set("beta_2", beta_2_)
        .set("epsilon", epsilon_);
  }
  bool elementwise() const override { return true; }  // fused_update

  std::vector<Slot> slots() const override { return {{"m", 0.0}, {"v", 0.0}}; }

  // ResourceApplyAdaMax.
  void update(const Tensor& grad, const Tensor& var, std::span<const Tensor> slots,
              const Step& step) const override {
    const double t = static_cast<double>(step.iterations + 1);
    const double alpha = step.learning_rate / (1 - std::pow(beta_1_, t));
    const double b1 = beta_1_, b2 = beta_2_, eps = epsilon_;
    internal::fused_update<2>(grad, var, slots, [=](auto g, auto& w, auto& m, auto& v) {
      using C = decltype(g);
      m += (g - m) * (C(1) - C(b1));
      v = std::max(C(b2) * v, std::abs(g));
      w -= C(alpha) * (m / (v + C(eps)));
    });
  }

 private:
  double beta_1_, beta_2_, epsilon_;
};

}  // namespace

Adamax::Adamax(AdamaxOptions o)
    : Optimizer(std::make_shared<AdamaxAlgorithm>(o), internal::common_options(o)) {}

Adamax::Adamax(schedules::LearningRateSchedule learning_rate)
    : Adamax(AdamaxOptions{.learning_rate = std::move(learning_rate)}) {}

}  // namespace weft::optim
