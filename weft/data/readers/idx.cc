#include "weft/data/readers/idx.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "weft/core/errors.h"
#include "weft/core/gzip.h"
#include "weft/core/hex.h"

namespace weft::data {
namespace {

static_assert(std::endian::native == std::endian::little,
              "IDX data is converted from big-endian to little-endian host order");

constexpr size_t kReadChunk = size_t{1} << 20;

struct IdxType {
  uint8_t code;  // the third magic byte
  int size;      // bytes per element in the file
  DType dtype;   // what it is decoded to
};
constexpr IdxType kIdxTypes[] = {
    {0x08, 1, kUInt8},    // uint8
    {0x09, 1, kInt32},    // int8
    {0x0b, 2, kInt32},    // int16
    {0x0c, 4, kInt32},    // int32
    {0x0d, 4, kFloat32},  // float32
    {0x0e, 8, kFloat64},  // float64
};

uint64_t read_big_endian(const uint8_t* p, int size) {
  uint64_t v = 0;
  for (int i = 0; i < size; ++i) v = v << 8 | p[i];
  return v;
}

IdxArray parse_raw_idx(const uint8_t* bytes, size_t size, const std::string& source) {
  WEFT_CHECK(size >= 4 && bytes[0] == 0 && bytes[1] == 0, DataLoss)
      << source << ": bad IDX magic at byte offset 0: found "
      << hex_bytes(bytes, std::min<size_t>(size, 4)) << ", expected 00 00 <type code> <ndims>";
  const auto type = std::find_if(std::begin(kIdxTypes), std::end(kIdxTypes),
                                 [&](const IdxType& t) { return t.code == bytes[2]; });
  WEFT_CHECK(type != std::end(kIdxTypes), DataLoss)
      << source << ": unknown IDX type code " << hex_bytes(bytes + 2, 1)
      << " at byte offset 2; expected 08 (uint8), 09 (int8), 0b (int16), 0c (int32), "
      << "0d (float32) or 0e (float64)";
  const size_t rank = bytes[3];
  const size_t header_size = 4 + 4 * rank;
  WEFT_CHECK(size >= header_size, DataLoss)
      << source << ": truncated IDX header: " << rank << " dimensions need " << header_size
      << " header bytes (4 per dimension after the magic), found " << size;

  IdxArray out;
  out.dtype = type->dtype;
  uint64_t count = 1;
  bool overflow = false;
  for (size_t k = 0; k < rank; ++k) {
    const uint64_t dim = read_big_endian(bytes + 4 + 4 * k, 4);
    out.shape.push_back(static_cast<int64_t>(dim));
    overflow |= __builtin_mul_overflow(count, dim, &count);
  }
  uint64_t data_size = 0;
  overflow |= __builtin_mul_overflow(count, static_cast<uint64_t>(type->size), &data_size);
  const size_t found = size - header_size;
  WEFT_CHECK(!overflow && data_size == found, DataLoss)
      << source << ": " << (overflow || data_size > found ? "truncated" : "trailing bytes")
      << ": expected " << (overflow ? "more than 2^64" : std::to_string(data_size))
      << " data bytes after the header at offset " << header_size << ", found " << found;

  const size_t out_size = static_cast<size_t>(dtype_size(out.dtype));
  out.data.resize(count * out_size);
  const uint8_t* src = bytes + header_size;
  uint8_t* dst = out.data.data();
  for (uint64_t i = 0; i < count; ++i, src += type->size, dst += out_size) {
    if (type->size == static_cast<int>(out_size)) {
      std::reverse_copy(src, src + type->size, dst);
    } else {
      const uint64_t bits = read_big_endian(src, type->size);
      const int32_t v = type->size == 1 ? static_cast<int8_t>(bits) : static_cast<int16_t>(bits);
      std::memcpy(dst, &v, sizeof v);
    }
  }
  return out;
}

}  // namespace

IdxArray parse_idx(const uint8_t* bytes, size_t size, const std::string& source_name) {
  if (size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
    const std::vector<uint8_t> raw = gunzip(bytes, size, source_name);
    // Offsets in IDX errors then refer to the decompressed bytes, which the name makes clear.
    return parse_raw_idx(raw.data(), raw.size(), source_name + " (gunzipped)");
  }
  return parse_raw_idx(bytes, size, source_name);
}

IdxArray read_idx_file(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  WEFT_CHECK(file != nullptr, FailedPrecondition)
      << "cannot open " << path << ": " << std::strerror(errno);
  std::vector<uint8_t> bytes;
  while (true) {
    const size_t old_size = bytes.size();
    bytes.resize(old_size + kReadChunk);
    const size_t n = std::fread(bytes.data() + old_size, 1, kReadChunk, file.get());
    bytes.resize(old_size + n);
    if (n < kReadChunk) break;
  }
  WEFT_CHECK(!std::ferror(file.get()), FailedPrecondition)
      << "cannot read " << path << ": " << std::strerror(errno);
  return parse_idx(bytes.data(), bytes.size(), path);
}

}  // namespace weft::data
