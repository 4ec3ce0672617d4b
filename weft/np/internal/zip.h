// ZIP archives as far as .npz needs them (PKWARE APPNOTE.TXT): the central directory and stored or
// deflated entries read back with their CRC-32 checked, and archives written as np.savez writes
// them (ZIP64 local extra fields, a fixed timestamp so that equal arrays give equal files).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "weft/core/file_io.h"

namespace weft::np::internal {

// The longest entry name a ZIP header can record.
inline constexpr size_t kMaxZipNameSize = 0xffff;

struct ZipEntry {
  std::string name;
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t compressed_size = 0;
  uint64_t size = 0;
  uint64_t local_header_offset = 0;
};

// The entries of the archive `in`, in directory order; DataLoss naming `path` if malformed.
std::vector<ZipEntry> read_central_directory(const io::InputFile& in, const std::string& path);
// The uncompressed bytes of `e`, its CRC-32 checked.
std::vector<uint8_t> read_entry(const io::InputFile& in, const ZipEntry& e,
                                const std::string& path);

// One entry to write: its bytes are `prefix` followed by `data`.
struct ZipMember {
  std::string name;
  std::string_view prefix;
  std::span<const uint8_t> data;
};
// Writes `members` as a whole archive to `out`, deflated when `compress`, stored otherwise.
void write_zip(io::OutputFile& out, std::span<const ZipMember> members, bool compress);

}  // namespace weft::np::internal
