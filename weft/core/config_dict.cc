#include "weft/core/config_dict.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "weft/core/errors.h"

namespace weft {

struct ConfigDict::Impl {
  nlohmann::json j = nlohmann::json::object();
};

namespace {

using json = nlohmann::json;

const char* kind(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "a list";
    case json::value_t::object:
      return "an object";
    default:
      return "another kind of value";
  }
}

// `v` shown in a message: short values whole, long ones cut.
std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

[[noreturn]] void wrong(const std::string& key, const char* expected, const json& v) {
  WEFT_FAIL(InvalidArgument) << "config field \"" << key << "\": expected " << expected << ", got "
                             << kind(v) << " " << shown(v);
  std::abort();  // not reached
}

bool is_int(const json& v) { return v.is_number_integer() || v.is_number_unsigned(); }

int64_t as_int(const std::string& key, const json& v) {
  if (is_int(v)) return v.get<int64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15)
      return static_cast<int64_t>(d);
  }
  wrong(key, "an integer", v);
}

double as_double(const std::string& key, const json& v) {
  if (!v.is_number()) wrong(key, "a number", v);
  return v.get<double>();
}

std::string as_string(const std::string& key, const json& v) {
  if (!v.is_string()) wrong(key, "a string", v);
  return v.get<std::string>();
}

const json& list(const std::string& key, const json& v, const char* expected) {
  if (!v.is_array()) wrong(key, expected, v);
  return v;
}

}  // namespace

ConfigDict::ConfigDict() : impl_(std::make_unique<Impl>()) {}
ConfigDict::~ConfigDict() = default;
ConfigDict::ConfigDict(const ConfigDict& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
ConfigDict& ConfigDict::operator=(const ConfigDict& other) {
  if (this != &other) impl_ = std::make_unique<Impl>(*other.impl_);
  return *this;
}
ConfigDict::ConfigDict(ConfigDict&& other) noexcept : impl_(std::move(other.impl_)) {
  other.impl_ = std::make_unique<Impl>();
}
ConfigDict& ConfigDict::operator=(ConfigDict&& other) noexcept {
  std::swap(impl_, other.impl_);
  return *this;
}

ConfigDict& ConfigDict::set(const std::string& key, std::nullptr_t) {
  impl_->j[key] = nullptr;
  return *this;
}
ConfigDict& ConfigDict::set(const std::string& key, bool value) {
  impl_->j[key] = value;
  return *this;
}
ConfigDict& ConfigDict::set(const std::string& key, int value) {
  return set(key, static_cast<int64_t>(value));
}
ConfigDict& ConfigDict::set(const std::string& key, int64_t value) {
  impl_->j[key] = value;
  return *this;
}
ConfigDict& ConfigDict::set(const std::string& key, double value) {
  WEFT_CHECK(std::isfinite(value), InvalidArgument)
      << "config field \"" << key << "\": " << value << " is not finite (JSON has no such number)";
  impl_->j[key] = value;
  return *this;
}
ConfigDict& ConfigDict::set(const std::string& key, const char* value) {
  return set(key, std::string(value));
}
ConfigDict& ConfigDict::set(const std::string& key, const std::string& value) {
  impl_->j[key] = value;
  return *this;
}
ConfigDict& ConfigDict::set(const std::string& key, const std::vector<int64_t>& value) {
  impl_->j[key] = value;
  return *this;
}
ConfigDict& ConfigDict::set(const std::string& key, const std::vector<double>& value) {
  for (double d : value) {
    WEFT_CHECK(std::isfinite(d), InvalidArgument)
        << "config field \"" << key << "\": " << d << " is not finite";
  }
  impl_->j[key] = value;
  return *this;
}
ConfigDict& ConfigDict::set(const std::string& key, const std::vector<std::string>& value) {
  impl_->j[key] = value;
  return *this;
}
ConfigDict& ConfigDict::set(const std::string& key, const ConfigDict& value) {
  impl_->j[key] = value.impl_->j;
  return *this;
}
ConfigDict& ConfigDict::set(const std::string& key, const std::vector<ConfigDict>& value) {
  json a = json::array();
  for (const ConfigDict& d : value) a.push_back(d.impl_->j);
  impl_->j[key] = std::move(a);
  return *this;
}
ConfigDict& ConfigDict::set(const std::string& key, const std::optional<double>& value) {
  return value ? set(key, *value) : set(key, nullptr);
}
ConfigDict& ConfigDict::set(const std::string& key, const std::optional<int64_t>& value) {
  return value ? set(key, *value) : set(key, nullptr);
}

ConfigDict& ConfigDict::erase(const std::string& key) {
  impl_->j.erase(key);
  return *this;
}

bool ConfigDict::has(const std::string& key) const { return impl_->j.contains(key); }
bool ConfigDict::is_null(const std::string& key) const {
  return !has(key) || impl_->j.at(key).is_null();
}
std::vector<std::string> ConfigDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : impl_->j.items()) out.push_back(k);
  return out;
}
bool ConfigDict::empty() const { return impl_->j.empty(); }

namespace {
const json& field(const json& j, const std::string& key) {
  auto it = j.find(key);
  WEFT_CHECK(it != j.end(), InvalidArgument) << "config field \"" << key << "\" is missing";
  return *it;
}
}  // namespace

bool ConfigDict::get_bool(const std::string& key) const {
  const json& v = field(impl_->j, key);
  if (!v.is_boolean()) wrong(key, "a boolean", v);
  return v.get<bool>();
}
int64_t ConfigDict::get_int(const std::string& key) const {
  return as_int(key, field(impl_->j, key));
}
double ConfigDict::get_double(const std::string& key) const {
  return as_double(key, field(impl_->j, key));
}
std::string ConfigDict::get_string(const std::string& key) const {
  return as_string(key, field(impl_->j, key));
}
std::vector<int64_t> ConfigDict::get_ints(const std::string& key) const {
  std::vector<int64_t> out;
  for (const json& v : list(key, field(impl_->j, key), "a list of integers"))
    out.push_back(as_int(key, v));
  return out;
}
std::vector<double> ConfigDict::get_doubles(const std::string& key) const {
  std::vector<double> out;
  for (const json& v : list(key, field(impl_->j, key), "a list of numbers"))
    out.push_back(as_double(key, v));
  return out;
}
std::vector<std::string> ConfigDict::get_strings(const std::string& key) const {
  std::vector<std::string> out;
  for (const json& v : list(key, field(impl_->j, key), "a list of strings"))
    out.push_back(as_string(key, v));
  return out;
}
ConfigDict ConfigDict::get_dict(const std::string& key) const {
  const json& v = field(impl_->j, key);
  if (!v.is_object()) wrong(key, "an object", v);
  ConfigDict out;
  out.impl_->j = v;
  return out;
}
std::vector<ConfigDict> ConfigDict::get_dicts(const std::string& key) const {
  std::vector<ConfigDict> out;
  for (const json& v : list(key, field(impl_->j, key), "a list of objects")) {
    if (!v.is_object()) wrong(key, "a list of objects", v);
    out.emplace_back().impl_->j = v;
  }
  return out;
}
bool ConfigDict::get_bool(const std::string& key, bool fallback) const {
  return is_null(key) ? fallback : get_bool(key);
}
int64_t ConfigDict::get_int(const std::string& key, int64_t fallback) const {
  return is_null(key) ? fallback : get_int(key);
}
double ConfigDict::get_double(const std::string& key, double fallback) const {
  return is_null(key) ? fallback : get_double(key);
}
std::string ConfigDict::get_string(const std::string& key, const std::string& fallback) const {
  return is_null(key) ? fallback : get_string(key);
}
std::optional<double> ConfigDict::get_optional_double(const std::string& key) const {
  if (is_null(key)) return std::nullopt;
  return get_double(key);
}
std::optional<int64_t> ConfigDict::get_optional_int(const std::string& key) const {
  if (is_null(key)) return std::nullopt;
  return get_int(key);
}

std::string ConfigDict::to_json(int indent) const { return impl_->j.dump(indent); }

ConfigDict ConfigDict::from_json(const std::string& text) {
  ConfigDict out;
  try {
    out.impl_->j = json::parse(text);
  } catch (const json::parse_error& e) {
    WEFT_FAIL(InvalidArgument) << "not valid JSON at byte " << e.byte << ": " << e.what();
  }
  WEFT_CHECK(out.impl_->j.is_object(), InvalidArgument)
      << "expected a JSON object, got " << kind(out.impl_->j);
  return out;
}

bool ConfigDict::operator==(const ConfigDict& other) const { return impl_->j == other.impl_->j; }

}  // namespace weft
