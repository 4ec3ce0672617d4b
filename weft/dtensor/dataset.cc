#include "weft/dtensor/dataset.h"

#include "weft/core/errors.h"
#include "weft/dtensor/dtensor.h"

namespace weft::dtensor {
namespace {

data::Dataset laid_out(const data::Dataset& dataset, const Mesh& mesh, std::vector<Layout> layouts,
                       int64_t global_batch_size, bool dataset_already_batched,
                       const std::string& batch_dim) {
  WEFT_CHECK(global_batch_size > 0, InvalidArgument)
      << "DTensorDataset: global_batch_size " << global_batch_size << " must be positive";
  WEFT_CHECK(!layouts.empty(), InvalidArgument) << "DTensorDataset: no layouts";
  for (size_t i = 0; i < layouts.size(); ++i) {
    WEFT_CHECK(layouts[i].mesh() == mesh, InvalidArgument)
        << "DTensorDataset: layout " << i << " (" << layouts[i].to_string()
        << ") is not on the dataset's mesh " << mesh.to_string();
    WEFT_CHECK(layouts[i].rank() >= 1, InvalidArgument)
        << "DTensorDataset: layout " << i << " (" << layouts[i].to_string()
        << ") has rank 0; a batch has a batch axis";
    WEFT_CHECK(batch_dim.empty() || layouts[i].sharding_specs()[0] == batch_dim, InvalidArgument)
        << "DTensorDataset: layout " << i << " (" << layouts[i].to_string()
        << ") shards the batch axis over \"" << layouts[i].sharding_specs()[0]
        << "\", not over batch_dim \"" << batch_dim << "\"";
  }
  data::Dataset batches =
      dataset_already_batched ? dataset : dataset.batch(global_batch_size, /*drop_remainder=*/true);
  return batches.map([layouts = std::move(layouts), global_batch_size](const data::Element& e) {
    WEFT_CHECK(e.size() == layouts.size(), InvalidArgument)
        << "DTensorDataset: an element has " << e.size() << " components, but " << layouts.size()
        << " layouts were given";
    data::Element out;
    for (size_t i = 0; i < e.size(); ++i) {
      WEFT_CHECK(e[i].rank() >= 1 && e[i].dim(0) == global_batch_size, InvalidArgument)
          << "DTensorDataset: component " << i << " of a batch has shape "
          << shape_str(e[i].shape()) << ", not a batch of global_batch_size " << global_batch_size
          << " (dataset_already_batched: batch it with drop_remainder)";
      out.push_back(copy_to_mesh(e[i], layouts[i]));
    }
    return out;
  });
}

}  // namespace

DTensorDataset::DTensorDataset(const data::Dataset& dataset, const Mesh& mesh,
                               std::vector<Layout> layouts, int64_t global_batch_size,
                               bool dataset_already_batched, const std::string& batch_dim)
    : data::Dataset(laid_out(dataset, mesh, std::move(layouts), global_batch_size,
                             dataset_already_batched, batch_dim)) {}

}  // namespace weft::dtensor
