#include "weft/np/npy_format.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "weft/core/errors.h"
#include "weft/core/file_io.h"
#include "weft/np/internal/npy_header.h"
#include "weft/np/internal/zip.h"

namespace weft::np {

using internal::check_data_size;
using internal::decode_npy;
using internal::kMaxZipNameSize;
using internal::npy_header;
using internal::NpyHeader;
using internal::parse_header;
using internal::parse_preamble;
using internal::Preamble;
using internal::read_central_directory;
using internal::read_entry;
using internal::to_native;
using internal::write_zip;
using internal::ZipEntry;
using internal::ZipMember;

NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& source_name) {
  const NpyHeader h = parse_header(bytes, size, source_name);
  check_data_size(h, size - h.data_offset, source_name);
  return to_native(h, std::vector<uint8_t>(bytes + h.data_offset, bytes + size));
}

std::vector<uint8_t> serialize_npy(const NpyArray& a) {
  const std::string header = npy_header(a, "serialize_npy");
  std::vector<uint8_t> out(header.begin(), header.end());
  out.insert(out.end(), a.data.begin(), a.data.end());
  return out;
}

NpyArray read_npy_file(const std::string& path) {
  io::InputFile in(path);
  // Read the header first and then the data straight into place, not the file and then a copy.
  uint8_t preamble[12];
  const size_t preamble_size = static_cast<size_t>(std::min<uint64_t>(in.size(), sizeof preamble));
  in.read_exactly(0, preamble, preamble_size);
  const Preamble p = parse_preamble(preamble, preamble_size, path);
  std::vector<uint8_t> header(
      static_cast<size_t>(std::min<uint64_t>(in.size(), p.header_offset + p.header_size)));
  in.read_exactly(0, header.data(), header.size());
  const NpyHeader h = parse_header(header.data(), header.size(), path);
  check_data_size(h, in.size() - h.data_offset, path);
  std::vector<uint8_t> data(h.data_bytes);
  in.read_exactly(h.data_offset, data.data(), data.size());
  return to_native(h, std::move(data));
}

void write_npy_file(const std::string& path, const NpyArray& a) {
  const std::string header = npy_header(a, path);
  io::AtomicOutputFile out(path);
  out.append(header);
  out.append(a.data.data(), a.data.size());
  out.commit();
}

std::vector<std::pair<std::string, NpyArray>> read_npz_file(const std::string& path) {
  io::InputFile in(path);
  std::vector<std::pair<std::string, NpyArray>> arrays;
  for (const ZipEntry& e : read_central_directory(in, path)) {
    std::string name = e.name;
    if (name.ends_with(".npy")) name.resize(name.size() - 4);
    arrays.emplace_back(std::move(name),
                        decode_npy(read_entry(in, e, path), path + ": entry '" + e.name + "'"));
  }
  return arrays;
}

void write_npz_file(const std::string& path,
                    const std::vector<std::pair<std::string, NpyArray>>& arrays, bool compress) {
  // Everything is checked before the file is created, so bad input leaves no trace on disk.
  std::unordered_set<std::string_view> names;
  std::vector<std::string> headers;
  for (const auto& [name, array] : arrays) {
    WEFT_CHECK(names.insert(name).second, InvalidArgument)
        << path << ": duplicate array name '" << name << "'; names in an .npz must be unique";
    WEFT_CHECK(name.size() + 4 <= kMaxZipNameSize, InvalidArgument)
        << path << ": array name of " << name.size() << " bytes is longer than the "
        << kMaxZipNameSize - 4 << " a ZIP entry name allows";
    headers.push_back(npy_header(array, path + ": array '" + name + "'"));
  }
  io::AtomicOutputFile out(path);
  std::vector<ZipMember> members;
  for (size_t i = 0; i < arrays.size(); ++i)
    members.push_back({arrays[i].first + ".npy", headers[i], arrays[i].second.data});
  write_zip(out, members, compress);
  out.commit();
}

}  // namespace weft::np
