#include "weft/nn/regularizers.h"

#include <map>
#include <mutex>
#include <utility>

#include "weft/core/errors.h"
#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/reduce.h"

namespace weft::nn {
namespace internal {

namespace {

constexpr double kEpsilon = 1e-7;  // Keras's backend.epsilon()

// The axes as a config holds them: a single axis as an integer (Keras's default form), several
// as a list.
void set_axis(ConfigDict& c, const std::vector<int64_t>& axis) {
  if (axis.size() == 1) {
    c.set("axis", axis[0]);
  } else {
    c.set("axis", axis);
  }
}
std::vector<int64_t> axis_of(const ConfigDict& c) {
  if (c.is_null("axis")) return {0};
  try {
    return {c.get_int("axis")};
  } catch (const InvalidArgument&) {
    return c.get_ints("axis");
  }
}

Tensor norms(const Tensor& w, const std::vector<int64_t>& axis) {
  return sqrt(sum(square(w), axis, /*keepdims=*/true));
}

// w * desired / (eps + norm): a weight rescaled to `desired` norms.
Tensor rescaled(const Tensor& w, const Tensor& norm, const Tensor& desired) {
  return mul(w, div(desired, add(norm, kEpsilon)));
}

}  // namespace

struct RegularizerKind {
  static constexpr const char* what = "regularizer";
  static constexpr const char* registrar = "register_regularizer";
  static std::map<std::string, Regularizer::Factory> built_ins() {
    return {
        {"L1", [](const ConfigDict& c) { return regularizers::l1(c.get_double("l1", 0.01)); }},
        {"L2", [](const ConfigDict& c) { return regularizers::l2(c.get_double("l2", 0.01)); }},
        {"L1L2",
         [](const ConfigDict& c) {
           return regularizers::l1_l2(c.get_double("l1", 0.0), c.get_double("l2", 0.0));
         }},
    };
  }
  static std::map<std::string, std::function<Regularizer()>> names() {
    return {{"l1", [] { return regularizers::l1(); }},
            {"l2", [] { return regularizers::l2(); }},
            {"l1_l2", [] { return regularizers::l1_l2(); }}};
  }
};

struct ConstraintKind {
  static constexpr const char* what = "constraint";
  static constexpr const char* registrar = "register_constraint";
  static std::map<std::string, Constraint::Factory> built_ins() {
    return {
        {"MaxNorm",
         [](const ConfigDict& c) {
           return constraints::max_norm(c.get_double("max_value", 2), axis_of(c));
         }},
        {"MinMaxNorm",
         [](const ConfigDict& c) {
           return constraints::min_max_norm(c.get_double("min_value", 0),
                                            c.get_double("max_value", 1), c.get_double("rate", 1),
                                            axis_of(c));
         }},
        {"NonNeg", [](const ConfigDict&) { return constraints::non_neg(); }},
        {"UnitNorm", [](const ConfigDict& c) { return constraints::unit_norm(axis_of(c)); }},
    };
  }
  static std::map<std::string, std::function<Constraint()>> names() {
    return {{"max_norm", [] { return constraints::max_norm(); }},
            {"min_max_norm", [] { return constraints::min_max_norm(); }},
            {"non_neg", [] { return constraints::non_neg(); }},
            {"unit_norm", [] { return constraints::unit_norm(); }}};
  }
};

namespace {

template <typename Kind>
struct Registry {
  std::mutex mu;
  std::map<std::string, typename ConfiguredFn<Kind>::Factory> factories;
};
template <typename Kind>
Registry<Kind>& registry() {
  static Registry<Kind> r;
  return r;
}

}  // namespace

template <typename Kind>
ConfiguredFn<Kind>::ConfiguredFn(const char* name) : ConfiguredFn(std::string(name)) {}

template <typename Kind>
ConfiguredFn<Kind>::ConfiguredFn(const std::string& name) {
  if (name.empty()) return;
  auto known = Kind::names();
  auto it = known.find(name);
  if (it == known.end()) {
    std::string list;
    for (const auto& [n, make] : known) list += (list.empty() ? "" : ", ") + n;
    WEFT_FAIL(InvalidArgument) << "unknown " << Kind::what << " \"" << name
                               << "\"; known names: " << list;
  }
  *this = it->second();
}

template <typename Kind>
ConfiguredFn<Kind>::ConfiguredFn(std::string class_name, Fn fn, ConfigDict config)
    : class_name_(std::move(class_name)), fn_(std::move(fn)), config_(std::move(config)) {
  WEFT_CHECK(!class_name_.empty() && fn_, InvalidArgument)
      << "a " << Kind::what << " needs a class name and a function";
}

template <typename Kind>
Tensor ConfiguredFn<Kind>::operator()(const Tensor& x) const {
  WEFT_CHECK(defined(), FailedPrecondition) << "calling an empty " << Kind::what;
  return fn_(x);
}

template <typename Kind>
ConfigDict ConfiguredFn<Kind>::serialize() const {
  return ConfigDict().set("class_name", class_name_).set("config", config_);
}

template <typename Kind>
ConfiguredFn<Kind> ConfiguredFn<Kind>::deserialize(const ConfigDict& config) {
  std::string kind = config.get_string("class_name");
  ConfigDict c = config.has("config") ? config.get_dict("config") : ConfigDict();
  auto built_in = Kind::built_ins();
  if (auto it = built_in.find(kind); it != built_in.end()) return it->second(c);
  Registry<Kind>& r = registry<Kind>();
  std::lock_guard lock(r.mu);
  auto it = r.factories.find(kind);
  WEFT_CHECK(it != r.factories.end(), InvalidArgument)
      << "unknown " << Kind::what << " class \"" << kind
      << "\": register it with weft::nn::" << Kind::registrar << "(\"" << kind
      << "\", factory) before loading";
  return it->second(c);
}

template <typename Kind>
void ConfiguredFn<Kind>::register_class(const std::string& class_name, Factory factory) {
  WEFT_CHECK(!class_name.empty() && factory, InvalidArgument)
      << Kind::registrar << ": a class name and a factory are needed";
  WEFT_CHECK(!Kind::built_ins().count(class_name), InvalidArgument)
      << Kind::registrar << ": \"" << class_name << "\" is a built-in " << Kind::what
      << "; give yours another name";
  Registry<Kind>& r = registry<Kind>();
  std::lock_guard lock(r.mu);
  r.factories[class_name] = std::move(factory);
}

template class ConfiguredFn<RegularizerKind>;
template class ConfiguredFn<ConstraintKind>;

}  // namespace internal

namespace regularizers {

Regularizer l1(double l1) {
  return Regularizer(
      "L1", [l1](const Tensor& x) { return mul(sum(abs(x)), l1); }, ConfigDict().set("l1", l1));
}
Regularizer l2(double l2) {
  return Regularizer(
      "L2", [l2](const Tensor& x) { return mul(sum(square(x)), l2); }, ConfigDict().set("l2", l2));
}
Regularizer l1_l2(double l1, double l2) {
  return Regularizer(
      "L1L2",
      [l1, l2](const Tensor& x) { return add(mul(sum(abs(x)), l1), mul(sum(square(x)), l2)); },
      ConfigDict().set("l1", l1).set("l2", l2));
}

}  // namespace regularizers

namespace constraints {

Constraint max_norm(double max_value, std::vector<int64_t> axis) {
  ConfigDict c;
  c.set("max_value", max_value);
  internal::set_axis(c, axis);
  return Constraint(
      "MaxNorm",
      [max_value, axis](const Tensor& w) {
        Tensor norm = internal::norms(w, axis);
        return internal::rescaled(w, norm, clip(norm, 0.0, max_value));
      },
      c);
}

Constraint min_max_norm(double min_value, double max_value, double rate,
                        std::vector<int64_t> axis) {
  ConfigDict c;
  c.set("min_value", min_value).set("max_value", max_value).set("rate", rate);
  internal::set_axis(c, axis);
  return Constraint(
      "MinMaxNorm",
      [=](const Tensor& w) {
        Tensor norm = internal::norms(w, axis);
        Tensor desired = add(mul(clip(norm, min_value, max_value), rate), mul(norm, 1.0 - rate));
        return internal::rescaled(w, norm, desired);
      },
      c);
}

Constraint non_neg() {
  return Constraint("NonNeg", [](const Tensor& w) {
    return mul(w, cast(greater_equal(w, Tensor::scalar(0, w.dtype())), w.dtype()));
  });
}

Constraint unit_norm(std::vector<int64_t> axis) {
  ConfigDict c;
  internal::set_axis(c, axis);
  return Constraint(
      "UnitNorm",
      [axis](const Tensor& w) { return div(w, add(internal::norms(w, axis), internal::kEpsilon)); },
      c);
}

}  // namespace constraints

void register_regularizer(const std::string& class_name, Regularizer::Factory factory) {
  Regularizer::register_class(class_name, std::move(factory));
}
void register_constraint(const std::string& class_name, Constraint::Factory factory) {
  Constraint::register_class(class_name, std::move(factory));
}

}  // namespace weft::nn
