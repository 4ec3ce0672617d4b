// The options every optimizer shares, picked out of an optimizer's own options struct (each
// struct repeats them so that designated initializers stay flat: Adam({.learning_rate = 1e-3})).
#pragma once

#include <cmath>

#include "weft/core/errors.h"
#include "weft/optim/optimizer.h"

namespace weft::optim::internal {

template <typename Options>
OptimizerOptions common_options(const Options& o) {
  return {.name = o.name,
          .learning_rate = o.learning_rate,
          .clipnorm = o.clipnorm,
          .clipvalue = o.clipvalue,
          .global_clipnorm = o.global_clipnorm,
          .gradient_transformers = o.gradient_transformers,
          .gradient_aggregator = o.gradient_aggregator};
}

// InvalidArgument unless lo <= value <= hi (or < hi when !hi_inclusive), naming the optimizer.
inline void check_range(const std::string& optimizer, const char* what, double value, double lo,
                        double hi, bool hi_inclusive = true) {
  bool ok = std::isfinite(value) && value >= lo && (hi_inclusive ? value <= hi : value < hi);
  WEFT_CHECK(ok, InvalidArgument) << optimizer << ": " << what << " must be in [" << lo << ", "
                                  << hi << (hi_inclusive ? "]" : ")") << ", got " << value;
}

// The Adam family's beta_1, beta_2 in [0, 1) and epsilon >= 0.
inline void check_betas(const std::string& optimizer, double beta_1, double beta_2,
                        double epsilon) {
  check_range(optimizer, "beta_1", beta_1, 0, 1, /*hi_inclusive=*/false);
  check_range(optimizer, "beta_2", beta_2, 0, 1, /*hi_inclusive=*/false);
  check_range(optimizer, "epsilon", epsilon, 0, HUGE_VAL);
}

}  // namespace weft::optim::internal
