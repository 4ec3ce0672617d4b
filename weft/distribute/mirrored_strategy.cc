#include "weft/distribute/mirrored_strategy.h"

#include <algorithm>
#include <cctype>

#include "weft/core/config.h"
#include "weft/distribute/internal/replica_group.h"

namespace weft::distribute {
namespace {

// The index of a logical CPU device named in any of TensorFlow's spellings (any case):
// "[/job:localhost/replica:0/task:0][/device:|/]cpu:N".
int device_index(const std::string& name) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto strip = [&](const std::string& prefix) {
    if (n.rfind(prefix, 0) != 0) return false;
    n.erase(0, prefix.size());
    return true;
  };
  strip("/job:localhost/replica:0/task:0");
  if (!strip("/device:")) strip("/");
  bool ok = strip("cpu:") && !n.empty() && n.size() < 7 &&
            std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; });
  WEFT_CHECK(ok, InvalidArgument) << "MirroredStrategy: \"" << name
                                  << "\" is not a CPU device name (expected \"/cpu:N\" or "
                                  << "\"/job:localhost/replica:0/task:0/device:CPU:N\")";
  int index = std::stoi(n);
  int count = config::logical_cpu_devices();
  WEFT_CHECK(index < count, InvalidArgument)
      << "MirroredStrategy: device \"" << name << "\" does not exist: there are " << count
      << " logical CPU devices (weft::config::set_logical_cpu_devices)";
  return index;
}

class MirroredImpl : public StrategyImpl {
 public:
  explicit MirroredImpl(std::vector<std::string> devices)
      : devices_(std::move(devices)),
        group_(static_cast<int>(devices_.size()), config::num_threads()) {}
  int num_replicas_in_sync() const override { return group_.size(); }
  std::string name() const override { return "mirrored"; }
  void run_replicas(const std::function<void(int)>& fn) override { group_.run(fn); }
  const std::vector<std::string>& devices() const { return devices_; }

 private:
  std::vector<std::string> devices_;
  internal::ReplicaGroup group_;
};

std::vector<std::string> resolve(const std::vector<std::string>& names) {
  std::vector<std::string> all = config::list_logical_devices();
  if (names.empty()) return all;
  std::vector<int> seen;
  std::vector<std::string> out;
  for (const std::string& name : names) {
    int i = device_index(name);
    WEFT_CHECK(std::find(seen.begin(), seen.end(), i) == seen.end(), InvalidArgument)
        << "MirroredStrategy: device \"" << name << "\" is given twice";
    seen.push_back(i);
    out.push_back(all[static_cast<size_t>(i)]);
  }
  return out;
}

}  // namespace

MirroredStrategy::MirroredStrategy(const std::vector<std::string>& devices)
    : Strategy(std::make_shared<MirroredImpl>(resolve(devices))) {}

const std::vector<std::string>& MirroredStrategy::devices() const {
  return static_cast<const MirroredImpl&>(extended()).devices();
}

}  // namespace weft::distribute
