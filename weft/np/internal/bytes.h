// Byte-level helpers shared by the .npy and ZIP codecs: little-endian fields, and hex for messages
// (with weft/core/hex.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "weft/core/hex.h"

namespace weft::np::internal {

inline std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

inline uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
inline uint32_t le32(const uint8_t* p) {
  return le16(p) | static_cast<uint32_t>(le16(p + 2)) << 16;
}
inline uint64_t le64(const uint8_t* p) {
  return le32(p) | static_cast<uint64_t>(le32(p + 4)) << 32;
}

inline void put16(std::string& s, uint16_t v) {
  s += static_cast<char>(v & 0xff);
  s += static_cast<char>(v >> 8);
}
inline void put32(std::string& s, uint32_t v) {
  put16(s, static_cast<uint16_t>(v & 0xffff));
  put16(s, static_cast<uint16_t>(v >> 16));
}
inline void put64(std::string& s, uint64_t v) {
  put32(s, static_cast<uint32_t>(v & 0xffffffff));
  put32(s, static_cast<uint32_t>(v >> 32));
}

}  // namespace weft::np::internal
