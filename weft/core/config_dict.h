// A configuration as Keras's get_config() returns it: named values (null, bool, integer, number,
// string, lists of them, nested configurations), written as JSON. Layers, models, losses,
// optimizers and learning-rate schedules describe themselves with one, and a saved model
// (weft/nn/saving.h) stores them. A getter names the field and what it expected when the field is
// absent or of another type (InvalidArgument), so a damaged or hand-edited file is refused plainly.
//
//   weft::ConfigDict c;
//   c.set("units", 10).set("activation", "relu").set("use_bias", true);
//   int64_t units = c.get_int("units");
//   std::string json = c.to_json();            // {"activation":"relu","units":10,"use_bias":true}
//   weft::ConfigDict back = weft::ConfigDict::from_json(json);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace weft {

class ConfigDict {
 public:
  ConfigDict();
  ~ConfigDict();
  ConfigDict(const ConfigDict& other);
  ConfigDict& operator=(const ConfigDict& other);
  ConfigDict(ConfigDict&&) noexcept;
  ConfigDict& operator=(ConfigDict&&) noexcept;

  // Each returns *this, so calls chain. A value replaces one already under `key`.
  ConfigDict& set(const std::string& key, std::nullptr_t);
  ConfigDict& set(const std::string& key, bool value);
  ConfigDict& set(const std::string& key, int value);
  ConfigDict& set(const std::string& key, int64_t value);
  ConfigDict& set(const std::string& key, double value);
  ConfigDict& set(const std::string& key, const char* value);
  ConfigDict& set(const std::string& key, const std::string& value);
  ConfigDict& set(const std::string& key, const std::vector<int64_t>& value);
  ConfigDict& set(const std::string& key, const std::vector<double>& value);
  ConfigDict& set(const std::string& key, const std::vector<std::string>& value);
  ConfigDict& set(const std::string& key, const ConfigDict& value);
  ConfigDict& set(const std::string& key, const std::vector<ConfigDict>& value);
  // An optional value: null when empty.
  ConfigDict& set(const std::string& key, const std::optional<double>& value);
  ConfigDict& set(const std::string& key, const std::optional<int64_t>& value);

  ConfigDict& erase(const std::string& key);  // nothing when absent

  bool has(const std::string& key) const;
  // True when `key` is absent or null.
  bool is_null(const std::string& key) const;
  std::vector<std::string> keys() const;  // sorted
  bool empty() const;

  // InvalidArgument naming the field when it is absent or of another type. get_double accepts an
  // integer; get_int refuses a number with a fraction.
  bool get_bool(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_double(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::vector<int64_t> get_ints(const std::string& key) const;
  std::vector<double> get_doubles(const std::string& key) const;
  std::vector<std::string> get_strings(const std::string& key) const;
  ConfigDict get_dict(const std::string& key) const;
  std::vector<ConfigDict> get_dicts(const std::string& key) const;
  // The same, with a default for an absent or null field.
  bool get_bool(const std::string& key, bool fallback) const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_double(const std::string& key, double fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  std::optional<double> get_optional_double(const std::string& key) const;
  std::optional<int64_t> get_optional_int(const std::string& key) const;

  // Compact JSON with sorted keys (indent >= 0: pretty-printed); from_json throws InvalidArgument
  // with the byte offset of a syntax error, or when the text is not a JSON object.
  std::string to_json(int indent = -1) const;
  static ConfigDict from_json(const std::string& json);

  bool operator==(const ConfigDict& other) const;

 private:
  struct Impl;  // the JSON value (nlohmann::json, behind this door)
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft
