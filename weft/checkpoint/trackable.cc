#include "weft/checkpoint/trackable.h"

namespace weft {

std::string unique_name(const std::string& name, std::set<std::string>& used) {
  std::string out = name;
  for (int k = 1; used.count(out); ++k) out = name + "_" + std::to_string(k);
  used.insert(out);
  return out;
}

}  // namespace weft
