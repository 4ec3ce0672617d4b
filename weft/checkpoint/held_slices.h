// Variables whose values live in other processes (a parameter server's shards) are saved and
// restored by those processes: a checkpoint asks each holder to write the slices it keeps as its
// own part of the checkpoint (format v2, write_checkpoint_part), and to read them back (only the
// stored pieces that overlap them), instead of moving every value through one process, as
// TensorFlow's sharded saves and restores run on each parameter server. The holders use their own
// file system, so the saving process must share it, as the workers of a multi-worker checkpoint
// do. A VariableBinding that is also a HeldElsewhere says where its pieces are.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/shape.h"

namespace weft::checkpoint {

class SliceHolder;

// One slice of a variable that a holder keeps: the holder's own name for it (a parameter server's
// variable `id`, and `which` of its tensors: 0 its value, k its optimizer's slot k - 1) and where
// it starts in the whole tensor. The checkpoint fills in `path` and `global_shape`.
struct HeldSlice {
  std::shared_ptr<SliceHolder> holder;
  uint64_t id = 0;
  uint32_t which = 0;
  std::vector<int64_t> offsets;
  std::string path;
  Shape global_shape;
};

class SliceHolder {
 public:
  virtual ~SliceHolder() = default;
  // Names the holder, uniquely among a checkpoint's holders ("ps:0").
  virtual const std::string& task() const = 0;
  // Writes `slices` (all of them its own) as part `part` of `parts` of the checkpoint `dir` that
  // is being saved as `save_id` (write_checkpoint_part's arguments).
  virtual void save(const std::string& dir, const std::string& save_id, int part, int parts,
                    const std::vector<HeldSlice>& slices) = 0;
  // Reads `slices` (all of them its own) from the checkpoint `dir`, each the region of its
  // `path` its piece covers (read_checkpoint_regions), and takes them as their values.
  virtual void restore(const std::string& dir, const std::vector<HeldSlice>& slices) = 0;
};

// A variable binding whose value is kept by holders, in slices that cover it exactly once.
class HeldElsewhere {
 public:
  virtual ~HeldElsewhere() = default;
  virtual std::vector<HeldSlice> held_slices() const = 0;
};

// `held` grouped by holder (SliceHolder::task()), in the holders' order.
std::map<std::string, std::vector<HeldSlice>> by_holder(std::vector<HeldSlice> held);
// Runs fn(k, slices) for the k-th holder's slices (k from 0), every holder at once; rethrows the
// first failure once all have ended.
void on_every_holder(const std::map<std::string, std::vector<HeldSlice>>& holders,
                     const std::function<void(int k, const std::vector<HeldSlice>&)>& fn);

}  // namespace weft::checkpoint
