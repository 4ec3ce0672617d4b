// tf.experimental.dtensor.DTensorDataset: a data::Dataset whose elements are DTensors. It batches
// `dataset` into global batches of global_batch_size rows (the last, shorter one dropped: every
// device must get an equal share) and lays each component out by its layout, each client keeping
// the blocks of its own devices (the tutorial's repack_batch, without hand-written splitting).
//
//   dtensor::Layout images({"batch", dtensor::kUnsharded}, mesh), labels({"batch"}, mesh);
//   dtensor::DTensorDataset train(data::Dataset::from_tensor_slices({x, y}), mesh,
//                                 {images, labels}, /*global_batch_size=*/128);
//   for (const weft::data::Element& batch : train) { ... batch[0], batch[1] ... }
//
// Global batch b holds the dataset's elements b * global_batch_size onwards, as
// dataset.batch(global_batch_size) in one process, whatever the mesh: every client reads the
// whole batch and keeps its blocks (no rows cross processes). It is a data::Dataset, so its
// iterators save and restore their position. InvalidArgument, naming what differs, for layouts
// on another mesh, a layout whose first axis is not sharded over batch_dim (when given), an
// element with another number of components than layouts, or an already batched element of
// another batch size.
#pragma once

#include <string>
#include <vector>

#include "weft/data/dataset.h"
#include "weft/dtensor/layout.h"

namespace weft::dtensor {

class DTensorDataset : public data::Dataset {
 public:
  DTensorDataset(const data::Dataset& dataset, const Mesh& mesh, std::vector<Layout> layouts,
                 int64_t global_batch_size, bool dataset_already_batched = false,
                 const std::string& batch_dim = "");
};

}  // namespace weft::dtensor
