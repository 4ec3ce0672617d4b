// The string forms of meshes and layouts: joining, splitting and reading integers.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

#include "weft/core/errors.h"

namespace weft::dtensor::internal {

inline std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? "" : separator) + parts[i];
  return out;
}

inline std::string join(const std::vector<int64_t>& values, const std::string& separator) {
  std::vector<std::string> parts;
  for (int64_t v : values) parts.push_back(std::to_string(v));
  return join(parts, separator);
}

// `text` cut at each `separator`; none for an empty text.
inline std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  size_t start = 0;
  for (size_t at = text.find(separator); at != std::string::npos;
       at = text.find(separator, start)) {
    out.push_back(text.substr(start, at - start));
    start = at + 1;
  }
  out.push_back(text.substr(start));
  return out;
}

// The decimal integer `text` is; InvalidArgument naming `who` and the text otherwise.
inline int64_t parse_int(const std::string& text, const char* who) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  WEFT_CHECK(error == std::errc() && end == text.data() + text.size(), InvalidArgument)
      << who << ": \"" << text << "\" is not an integer";
  return value;
}

}  // namespace weft::dtensor::internal
