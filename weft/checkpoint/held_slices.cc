#include "weft/checkpoint/held_slices.h"

#include <future>

namespace weft::checkpoint {

std::map<std::string, std::vector<HeldSlice>> by_holder(std::vector<HeldSlice> held) {
  std::map<std::string, std::vector<HeldSlice>> out;
  for (HeldSlice& s : held) out[s.holder->task()].push_back(std::move(s));
  return out;
}

void on_every_holder(const std::map<std::string, std::vector<HeldSlice>>& holders,
                     const std::function<void(int k, const std::vector<HeldSlice>&)>& fn) {
  std::vector<std::future<void>> running;
  for (const auto& holder : holders) {
    const std::vector<HeldSlice>& slices = holder.second;
    const int k = static_cast<int>(running.size());
    running.push_back(std::async(std::launch::async, [&fn, &slices, k] { fn(k, slices); }));
  }
  for (std::future<void>& r : running) r.wait();
  for (std::future<void>& r : running) r.get();  // the first holder's failure, if any
}

}  // namespace weft::checkpoint
