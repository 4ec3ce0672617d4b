// What a checkpoint saves of an object (tf.train.Checkpoint's "trackable"): its variables under
// stable names, and any other state as bytes (an iterator's position, an optimizer's step).
// Models, optimizers and dataset iterators implement it; weft::train::Checkpoint saves several
// trackables, each under its own prefix ("model/dense/kernel", "optimizer/iterations").
//
//   class MyState : public weft::Trackable { ... };
//   weft::train::Checkpoint ckpt({{"model", &model}, {"optimizer", &optimizer}});
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "weft/autodiff/variable.h"
#include "weft/checkpoint/checkpoint_io.h"
#include "weft/checkpoint/held_slices.h"

namespace weft {

class Trackable {
 public:
  virtual ~Trackable() = default;
  // Variables by path, in a stable order (the order a checkpoint writes and fingerprints them).
  virtual std::vector<std::pair<std::string, Variable>> tracked_variables() const = 0;
  // Anything else to save, serialised; restore_state receives exactly what this returned.
  virtual std::string tracked_state() const { return {}; }
  virtual void restore_state(const std::string& state) {}
};

// The one scheme by which weft makes names unique (layer names within a model, checkpoint keys of
// a model's and an optimizer's variables): `name` itself if `used` does not hold it yet, else
// the first free of name_1, name_2, ...; the result is added to `used`.
std::string unique_name(const std::string& name, std::set<std::string>& used);

namespace checkpoint {

// Several trackables, each under its own name (unique, non-empty, free of '/').
using NamedTrackables = std::vector<std::pair<std::string, const Trackable*>>;

// What a checkpoint of `objects` holds: variable `v` of object `o` as tensor "o/v", the state of
// `o` as blob "o". With `held`, a variable whose binding is a HeldElsewhere (a parameter
// server's) is not read here: its slices go to `held`, with their path and global shape, for
// their holders to write.
void collect_trackables(const NamedTrackables& objects, std::vector<SavedTensor>* tensors,
                        std::map<std::string, std::string>* state,
                        std::vector<HeldSlice>* held = nullptr);

// Assigns every variable of `objects` from `loaded` (read from `dir`), then calls each
// restore_state with its blob. Only when every variable matches: one absent from the checkpoint,
// or of another shape or dtype, is InvalidArgument naming it and `dir`, and nothing is assigned.
void restore_trackables(const LoadedCheckpoint& loaded, const std::string& dir,
                        const std::vector<std::pair<std::string, Trackable*>>& objects);
// Restores `objects` from the checkpoint `dir`. Variables held elsewhere (HeldElsewhere) are read
// by their holders, every holder at once, and the rest here (read_checkpoint_regions); without
// such variables, as above from read_checkpoint(dir). Every variable is checked against the index
// first (InvalidArgument as above, nothing assigned); damage found while reading is DataLoss,
// after which the holders that read theirs have taken them.
void restore_trackables(const std::string& dir,
                        const std::vector<std::pair<std::string, Trackable*>>& objects);

}  // namespace checkpoint

}  // namespace weft
