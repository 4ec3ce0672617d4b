#include "weft/checkpoint/trackable.h"

#include "weft/core/errors.h"

namespace weft {

std::string unique_name(const std::string& name, std::set<std::string>& used) {
  std::string out = name;
  for (int k = 1; used.count(out); ++k) out = name + "_" + std::to_string(k);
  used.insert(out);
  return out;
}

namespace checkpoint {

void collect_trackables(const NamedTrackables& objects, std::vector<SavedTensor>* tensors,
                        std::map<std::string, std::string>* state, std::vector<HeldSlice>* held) {
  for (const auto& [name, object] : objects) {
    for (const auto& [path, variable] : object->tracked_variables()) {
      const auto* elsewhere = dynamic_cast<const HeldElsewhere*>(variable.binding());
      if (held != nullptr && elsewhere != nullptr) {
        for (HeldSlice& slice : elsewhere->held_slices()) {
          slice.path = name + "/" + path;
          slice.global_shape = variable.shape();
          held->push_back(std::move(slice));
        }
        continue;
      }
      tensors->push_back({name + "/" + path, variable.value()});
    }
    (*state)[name] = object->tracked_state();
  }
}

void restore_trackables(const LoadedCheckpoint& loaded, const std::string& dir,
                        const std::vector<std::pair<std::string, Trackable*>>& objects) {
  std::vector<std::pair<Variable, const Tensor*>> assignments;
  for (const auto& [name, object] : objects) {
    for (const auto& [path, variable] : object->tracked_variables()) {
      std::string key = name + "/" + path;
      auto it = loaded.tensors.find(key);
      WEFT_CHECK(it != loaded.tensors.end(), InvalidArgument)
          << "restore " << dir << ": variable \"" << key << "\" (" << variable.name()
          << ") is not in the checkpoint";
      const Tensor& value = it->second;
      WEFT_CHECK(value.dtype() == variable.dtype() && value.shape() == variable.shape(),
                 InvalidArgument)
          << "restore " << dir << ": variable \"" << key << "\" (" << variable.name() << ") is "
          << variable.dtype() << " " << shape_str(variable.shape()) << ", the checkpoint holds "
          << value.dtype() << " " << shape_str(value.shape());
      assignments.emplace_back(variable, &value);
    }
  }
  for (auto& [variable, value] : assignments) variable.assign(*value);
  for (const auto& [name, object] : objects) {
    if (auto it = loaded.state.find(name); it != loaded.state.end()) {
      object->restore_state(it->second);
    }
  }
}

}  // namespace checkpoint
}  // namespace weft
