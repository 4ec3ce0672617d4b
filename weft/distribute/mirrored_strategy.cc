#include "weft/distribute/mirrored_strategy.h"

#include "weft/core/config.h"
#include "weft/distribute/internal/replica_group.h"

namespace weft::distribute {
namespace {

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

}  // namespace

MirroredStrategy::MirroredStrategy(const std::vector<std::string>& devices)
    : Strategy(std::make_shared<MirroredImpl>(
          config::resolve_logical_devices(devices, "MirroredStrategy"))) {}

const std::vector<std::string>& MirroredStrategy::devices() const {
  return static_cast<const MirroredImpl&>(extended()).devices();
}

}  // namespace weft::distribute
