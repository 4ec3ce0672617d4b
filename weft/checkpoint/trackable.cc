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
namespace {

// When `variable` is held elsewhere (HeldElsewhere), adds its slices to `held`, saved as `key`.
bool add_held_slices(const Variable& variable, const std::string& key,
                     std::vector<HeldSlice>* held) {
  const auto* elsewhere = dynamic_cast<const HeldElsewhere*>(variable.binding());
  if (elsewhere == nullptr) return false;
  for (HeldSlice& slice : elsewhere->held_slices()) {
    slice.path = key;
    slice.global_shape = variable.shape();
    held->push_back(std::move(slice));
  }
  return true;
}

}  // namespace

void collect_trackables(const NamedTrackables& objects, std::vector<SavedTensor>* tensors,
                        std::map<std::string, std::string>* state, std::vector<HeldSlice>* held) {
  for (const auto& [name, object] : objects) {
    for (const auto& [path, variable] : object->tracked_variables()) {
      if (held != nullptr && add_held_slices(variable, name + "/" + path, held)) continue;
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

void restore_trackables(const std::string& dir,
                        const std::vector<std::pair<std::string, Trackable*>>& objects) {
  bool pieces = false;  // a variable held elsewhere, or a DTensor: read by regions
  for (const auto& [name, object] : objects) {
    for (const auto& [path, variable] : object->tracked_variables()) {
      pieces = pieces || dynamic_cast<const HeldElsewhere*>(variable.binding()) ||
               (variable.binding() == nullptr && variable.value().parts());
    }
  }
  if (!pieces) return restore_trackables(read_checkpoint(dir), dir, objects);

  std::map<std::string, const TensorEntry*> stored;  // each tensor's first entry
  const CheckpointIndex index = read_index(dir);
  for (const TensorEntry& t : index.tensors) stored.try_emplace(t.path, &t);
  std::vector<Region> here;
  std::vector<Variable> assigned_here;
  struct LaidOut {  // a DVariable: one region per distinct block, after `here`
    Variable variable;
    std::string key;
    std::vector<TensorBlock> blocks;
  };
  std::vector<LaidOut> laid_out;
  std::vector<HeldSlice> held;
  for (const auto& [name, object] : objects) {
    for (const auto& [path, variable] : object->tracked_variables()) {
      std::string key = name + "/" + path;
      auto it = stored.find(key);
      WEFT_CHECK(it != stored.end(), InvalidArgument)
          << "restore " << dir << ": variable \"" << key << "\" (" << variable.name()
          << ") is not in the checkpoint";
      const TensorEntry& e = *it->second;
      const Shape& shape = e.global_shape ? *e.global_shape : e.shape;
      WEFT_CHECK(e.dtype == variable.dtype() && shape == variable.shape(), InvalidArgument)
          << "restore " << dir << ": variable \"" << key << "\" (" << variable.name() << ") is "
          << variable.dtype() << " " << shape_str(variable.shape()) << ", the checkpoint holds "
          << e.dtype << " " << shape_str(shape);
      if (add_held_slices(variable, key, &held)) continue;
      if (variable.binding() == nullptr && variable.value().parts()) {
        // A DTensor reads only the stored pieces that overlap its blocks, on any layout.
        laid_out.push_back({variable, key, variable.value().parts()->blocks()});
        continue;
      }
      here.push_back({key, std::vector<int64_t>(variable.shape().size(), 0), variable.shape()});
      assigned_here.push_back(variable);
    }
  }
  const size_t whole = here.size();
  for (const LaidOut& l : laid_out) {
    for (const TensorBlock& b : l.blocks) here.push_back({l.key, b.offsets, b.value.shape()});
  }
  std::map<std::string, std::string> state;
  std::vector<Tensor> values = read_checkpoint_regions(dir, here, &state);
  on_every_holder(by_holder(std::move(held)), [&](int, const std::vector<HeldSlice>& slices) {
    slices.front().holder->restore(dir, slices);
  });
  for (size_t i = 0; i < whole; ++i) assigned_here[i].assign(values[i]);
  size_t at = whole;
  for (LaidOut& l : laid_out) {
    // Each device's component is its block's value, assigned as a DTensor of the same layout.
    const TensorParts& parts = *l.variable.value().parts();
    std::map<uint64_t, Tensor> by_component;
    for (const TensorBlock& b : l.blocks) by_component[b.value.id()] = values[at++];
    std::vector<Tensor> components;
    for (const Tensor& c : parts.components()) components.push_back(by_component.at(c.id()));
    l.variable.assign(parts.with_components(std::move(components)));
  }
  for (const auto& [name, object] : objects) {
    if (auto it = state.find(name); it != state.end()) object->restore_state(it->second);
  }
}

}  // namespace checkpoint
}  // namespace weft
