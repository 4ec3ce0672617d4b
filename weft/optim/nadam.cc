#include "weft/optim/nadam.h"

#include <cmath>
#include <mutex>

#include "weft/optim/internal/fused_update.h"
#include "weft/optim/internal/options.h"

namespace weft::optim {
namespace {

class NadamAlgorithm : public Optimizer::Algorithm {
 public:
  explicit NadamAlgorithm(const NadamOptions& o)
      : beta_1_(o.beta_1), beta_2_(o.beta_2), epsilon_(o.epsilon) {
    internal::check_betas(o.name, o.beta_1, o.beta_2, o.epsilon);
  }
  ConfigDict get_config() const override {
    return ConfigDict()
        .set("class_name", "Nadam")
        .set("beta_1", beta_1_)
        .set("beta_2", beta_2_)
        .set("epsilon", epsilon_);
  }
  bool elementwise() const override { return true; }  // fused_update

  std::vector<Slot> slots() const override { return {{"m", 0.0}, {"v", 0.0}}; }

  void update(const Tensor& grad, const Tensor& var, std::span<const Tensor> slots,
              const Step& step) const override {
    const int64_t t = step.iterations + 1;
    const double mu = momentum(t), mu_next = momentum(t + 1);
    const double schedule = schedule_product(t), schedule_next = schedule * mu_next;
    const double a = (1 - mu) / (1 - schedule), b = mu_next / (1 - schedule_next);
    const double v_scale = 1 / (1 - std::pow(beta_2_, static_cast<double>(t)));
    const double lr = step.learning_rate, b1 = beta_1_, b2 = beta_2_, eps = epsilon_;
    internal::fused_update<2>(grad, var, slots, [=](auto g, auto& w, auto& m, auto& v) {
      using C = decltype(g);
      m = C(b1) * m + (C(1) - C(b1)) * g;
      v = C(b2) * v + (C(1) - C(b2)) * g * g;
      C m_bar = C(a) * g + C(b) * m;
      w -= C(lr) * m_bar / (std::sqrt(v * C(v_scale)) + C(eps));
    });
  }

 private:
  // Dozat's momentum schedule at step t (from 1).
  double momentum(int64_t t) const {
    return beta_1_ * (1 - 0.5 * std::pow(0.96, 0.004 * static_cast<double>(t)));
  }
  // mu_1 ... mu_t, continued from the last step asked for (each step asks for the next one).
  double schedule_product(int64_t t) const {
    std::lock_guard lock(mu_);
    if (t < cached_step_) {
      cached_step_ = 0;
      cached_product_ = 1;
    }
    for (; cached_step_ < t; ++cached_step_) cached_product_ *= momentum(cached_step_ + 1);
    return cached_product_;
  }

  double beta_1_, beta_2_, epsilon_;
  mutable std::mutex mu_;
  mutable int64_t cached_step_ = 0;
  mutable double cached_product_ = 1;
};

}  // namespace

Nadam::Nadam(NadamOptions o)
    : Optimizer(std::make_shared<NadamAlgorithm>(o), internal::common_options(o)) {}

Nadam::Nadam(schedules::LearningRateSchedule learning_rate)
    : Nadam(NadamOptions{.learning_rate = std::move(learning_rate)}) {}

}  // namespace weft::optim
