#include "weft/np/io.h"

#include <cstring>

#include "weft/np/npy_format.h"
#include "weft/ops/cast.h"

namespace weft::np {

namespace {

NpyArray to_npy(const Tensor& t) {
  WEFT_CHECK(t.defined(), InvalidArgument) << "np::save: the tensor is undefined";
  Tensor c = contiguous(t);
  NpyArray a{c.dtype(), c.shape(), {}};
  auto* p = static_cast<const uint8_t*>(c.raw_data());
  a.data.assign(p, p + c.numel() * dtype_size(c.dtype()));
  return a;
}

Tensor from_npy(const NpyArray& a) {
  Tensor t = Tensor::empty(a.shape, a.dtype);
  if (!a.data.empty()) std::memcpy(t.raw_data(), a.data.data(), a.data.size());
  return t;
}

std::vector<std::pair<std::string, NpyArray>> to_entries(const std::map<std::string, Tensor>& m) {
  std::vector<std::pair<std::string, NpyArray>> entries;
  for (const auto& [name, t] : m) entries.emplace_back(name, to_npy(t));
  return entries;
}

}  // namespace

void save(const std::string& path, const Tensor& a) { write_npy_file(path, to_npy(a)); }
Tensor load(const std::string& path) { return from_npy(read_npy_file(path)); }
void savez(const std::string& path, const std::map<std::string, Tensor>& arrays) {
  write_npz_file(path, to_entries(arrays), false);
}
void savez_compressed(const std::string& path, const std::map<std::string, Tensor>& arrays) {
  write_npz_file(path, to_entries(arrays), true);
}
std::map<std::string, Tensor> load_npz(const std::string& path) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, a] : read_npz_file(path)) out.emplace(name, from_npy(a));
  return out;
}

}  // namespace weft::np
