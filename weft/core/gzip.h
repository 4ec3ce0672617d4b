// gzip's format (RFC 1952), through zlib: the profiler's trace files, IDX files' .gz.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weft {

std::string gzip_compress(std::string_view data);
// What `size` bytes of gzip decode to (concatenated members to the concatenated data, as gzip's).
// DataLoss naming `source` for a truncated or corrupt stream.
std::vector<uint8_t> gunzip(const uint8_t* bytes, size_t size, const std::string& source);
// The same, as text.
std::string gzip_decompress(std::string_view data, const std::string& source);

}  // namespace weft
