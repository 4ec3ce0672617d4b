// Bytes as hex for error messages about binary files: "93 4e 55 4d", "no bytes".
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace weft {

inline std::string hex_bytes(const uint8_t* p, size_t n) {
  if (n == 0) return "no bytes";
  std::string s;
  char buf[4];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, i == 0 ? "%02x" : " %02x", p[i]);
    s += buf;
  }
  return s;
}

}  // namespace weft
