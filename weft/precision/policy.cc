#include "weft/precision/policy.h"

#include "weft/core/config.h"
#include "weft/core/errors.h"

namespace weft::mixed_precision {

Policy::Policy(std::string_view name) : name_(name) {
  if (name == "mixed_bfloat16" || name == "mixed_float16") {
    compute_ = name == "mixed_bfloat16" ? kBFloat16 : kFloat16;
    variable_ = kFloat32;
    return;
  }
  bool known = false;
  try {
    compute_ = dtype_from_name(name);
    known = is_floating(compute_);
  } catch (const InvalidArgument&) {
  }
  WEFT_CHECK(known, InvalidArgument)
      << "unknown dtype policy \"" << name
      << "\": expected \"float32\", \"mixed_bfloat16\", \"mixed_float16\" or a floating dtype "
         "name (\"float64\", \"bfloat16\", \"float16\")";
  variable_ = compute_;
}

void set_global_policy(const Policy& policy) { config::set_default_policy(policy.name()); }
void set_global_policy(std::string_view name) { set_global_policy(Policy(name)); }
Policy global_policy() { return Policy(config::default_policy()); }

PolicyScope::PolicyScope(std::string_view name) : previous_(global_policy()) {
  set_global_policy(name);
}
PolicyScope::~PolicyScope() { set_global_policy(previous_); }

}  // namespace weft::mixed_precision
