// NumPy's .npy and .npz file formats as raw bytes, both directions: files written here load with
// numpy.load, and files from np.save, np.savez and np.savez_compressed load here.
//
//   weft::np::NpyArray w{weft::kFloat32, {2, 3}, bytes};  // bytes: 24 bytes, C order
//   weft::np::write_npz_file("model.npz", {{"w", w}}, /*compress=*/true);
//   auto arrays = weft::np::read_npz_file("model.npz");   // {{"w", w}}
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "weft/core/dtype.h"

namespace weft::np {

// An n-d array as bytes: prod(shape) elements of `dtype`, C order, little-endian. An empty shape is
// a 0-d array holding one element.
struct NpyArray {
  DType dtype = kFloat32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  bool operator==(const NpyArray&) const = default;
};

// Decodes a whole .npy file held in memory. Reads format versions 1.0, 2.0 and 3.0, big-endian
// dtypes and fortran_order arrays, which it converts to little-endian C order. Throws DataLoss,
// naming `source_name`, for malformed input and for dtypes weft has no DType for.
NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& source_name);

// Encodes `a` as a version 1.0 .npy file whose data starts at a multiple of 64 bytes, as NumPy
// writes it. Throws InvalidArgument for bfloat16 (NumPy has no such dtype) and when a.data does
// not hold exactly prod(a.shape) elements.
std::vector<uint8_t> serialize_npy(const NpyArray& a);

// File versions of the above. Writers write `path + ".tmp-<pid>-<n>"`, sync it and rename it over
// `path` only once complete (weft::io::AtomicOutputFile, as checkpoints do), so a failure never
// leaves a partial file under `path`. Files that cannot be opened, written or renamed throw
// FailedPrecondition.
NpyArray read_npy_file(const std::string& path);
void write_npy_file(const std::string& path, const NpyArray& a);

// An .npz file is a ZIP archive holding one "<name>.npy" entry per array. Reads stored and
// deflated entries (with ZIP64 extensions, which np.savez always uses), checks each CRC-32, and
// returns the arrays in archive order with the ".npy" suffix removed.
std::vector<std::pair<std::string, NpyArray>> read_npz_file(const std::string& path);
// Writes `arrays` in order, deflated when `compress` (np.savez_compressed) and stored otherwise
// (np.savez). Throws InvalidArgument for duplicate names.
void write_npz_file(const std::string& path,
                    const std::vector<std::pair<std::string, NpyArray>>& arrays,
                    bool compress = false);

}  // namespace weft::np
