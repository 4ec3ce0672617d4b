// weft::np files: .npy and .npz that NumPy reads and writes.
#pragma once

#include <map>
#include <string>

#include "weft/core/tensor.h"

namespace weft::np {

// ---- files ------------------------------------------------------------------------------------
// .npy and .npz, readable and writable by NumPy. bfloat16 tensors must be cast first.
void save(const std::string& path, const Tensor& a);
Tensor load(const std::string& path);
void savez(const std::string& path, const std::map<std::string, Tensor>& arrays);
void savez_compressed(const std::string& path, const std::map<std::string, Tensor>& arrays);
std::map<std::string, Tensor> load_npz(const std::string& path);

}  // namespace weft::np
