// The .npy format (numpy.lib.format): the header NumPy writes before an array's data, parsed and
// produced, and the conversion of the data to NpyArray's little-endian C order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "weft/np/npy_format.h"

namespace weft::np::internal {

struct NpyHeader {
  DType dtype = kFloat32;
  std::vector<int64_t> shape;
  bool fortran_order = false;
  bool big_endian = false;
  size_t data_offset = 0;
  uint64_t data_bytes = 0;
};

// Magic, version and header length: where the header dict starts and how long it is.
struct Preamble {
  size_t header_offset;
  size_t header_size;
};

// The first bytes of a file (at most 12 are needed); `source` names it in errors (DataLoss).
Preamble parse_preamble(const uint8_t* bytes, size_t size, const std::string& source);
// Parses everything before the data; `size` must cover at least the header.
NpyHeader parse_header(const uint8_t* bytes, size_t size, const std::string& source);
// DataLoss unless exactly `available` data bytes follow the header.
void check_data_size(const NpyHeader& h, uint64_t available, const std::string& source);
// Converts data laid out as `h` says to NpyArray's little-endian C order.
NpyArray to_native(const NpyHeader& h, std::vector<uint8_t> data);
// Takes ownership of a whole .npy file's bytes so the data need not be copied.
NpyArray decode_npy(std::vector<uint8_t> bytes, const std::string& source);
// The .npy bytes before the data of `a`; `context` names the array in errors (InvalidArgument).
std::string npy_header(const NpyArray& a, const std::string& context);

}  // namespace weft::np::internal
