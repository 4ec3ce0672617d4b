#include "weft/dtensor/layout.h"

#include <algorithm>
#include <set>

#include "weft/core/errors.h"
#include "weft/dtensor/internal/text.h"

namespace weft::dtensor {
namespace {

constexpr const char* kEmptyLayout = "empty_layout";

// "(784, 512)".
std::string shape_text(const Shape& shape) { return "(" + internal::join(shape, ", ") + ")"; }

}  // namespace

Layout::Layout(std::vector<std::string> sharding_specs, Mesh mesh)
    : specs_(std::move(sharding_specs)), mesh_(std::move(mesh)) {
  WEFT_CHECK(!mesh_.is_empty(), InvalidArgument) << "Layout: the mesh is empty";
  std::set<std::string> used;
  for (const std::string& spec : specs_) {
    if (spec == kUnsharded || spec == kMatch) continue;
    WEFT_CHECK(mesh_.contains_dim(spec), InvalidArgument)
        << "Layout: sharding spec \"" << spec << "\" is neither a dimension of mesh "
        << mesh_.to_string() << " nor \"" << kUnsharded << "\"";
    WEFT_CHECK(used.insert(spec).second, InvalidArgument)
        << "Layout: mesh dimension \"" << spec << "\" shards two axes of sharding specs ["
        << internal::join(specs_, ", ") << "]; each mesh dimension shards one axis at most";
  }
}

Layout Layout::replicated(const Mesh& mesh, int rank) {
  return Layout(std::vector<std::string>(static_cast<size_t>(std::max(rank, 0)), kUnsharded), mesh);
}

Layout Layout::batch_sharded(const Mesh& mesh, const std::string& batch_dim, int rank, int axis) {
  WEFT_CHECK(axis >= 0 && axis < rank, InvalidArgument)
      << "Layout::batch_sharded: axis " << axis << " is outside rank " << rank;
  std::vector<std::string> specs(static_cast<size_t>(rank), kUnsharded);
  specs[static_cast<size_t>(axis)] = batch_dim;
  return Layout(std::move(specs), mesh);
}

Layout Layout::inner_sharded(const Mesh& mesh, const std::string& inner_dim, int rank) {
  WEFT_CHECK(rank >= 1, InvalidArgument)
      << "Layout::inner_sharded: rank " << rank << " has no axis";
  return batch_sharded(mesh, inner_dim, rank, rank - 1);
}

Layout Layout::delete_axes(const std::vector<int>& axes) const {
  std::vector<bool> deleted(specs_.size(), false);
  for (int axis : axes) {
    const int a = axis < 0 ? axis + rank() : axis;
    WEFT_CHECK(a >= 0 && a < rank(), InvalidArgument)
        << "Layout::delete_axes: axis " << axis << " is outside rank " << rank();
    WEFT_CHECK(!deleted[static_cast<size_t>(a)], InvalidArgument)
        << "Layout::delete_axes: axis " << axis << " is given twice";
    deleted[static_cast<size_t>(a)] = true;
  }
  std::vector<std::string> kept;
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (!deleted[i]) kept.push_back(specs_[i]);
  }
  return Layout(std::move(kept), mesh_);
}

int64_t Layout::num_shards(int axis) const {
  WEFT_CHECK(axis >= 0 && axis < rank(), InvalidArgument)
      << "Layout: axis " << axis << " is outside rank " << rank();
  const std::string& spec = specs_[static_cast<size_t>(axis)];
  WEFT_CHECK(spec != kMatch, InvalidArgument) << "Layout: axis " << axis << " of " << to_string()
                                              << " is \"match\", which only relayout takes";
  return spec == kUnsharded ? 1 : mesh_.dim_size(spec);
}

std::vector<int64_t> Layout::num_shards() const {
  std::vector<int64_t> out;
  for (int i = 0; i < rank(); ++i) out.push_back(num_shards(i));
  return out;
}

bool Layout::is_fully_replicated() const {
  const std::vector<int64_t> shards = num_shards();
  return std::all_of(shards.begin(), shards.end(), [](int64_t n) { return n == 1; });
}

Shape Layout::local_shape(const Shape& global_shape) const {
  WEFT_CHECK(static_cast<int>(global_shape.size()) == rank(), InvalidArgument)
      << "Layout: shape " << shape_text(global_shape) << " has rank " << global_shape.size()
      << ", layout " << to_string() << " rank " << rank();
  Shape local = global_shape;
  for (int i = 0; i < rank(); ++i) {
    const int64_t shards = num_shards(i);
    const auto a = static_cast<size_t>(i);
    WEFT_CHECK(global_shape[a] % shards == 0, InvalidArgument)
        << "Layout: axis " << i << " of shape " << shape_text(global_shape) << " has size "
        << global_shape[a] << ", which mesh dimension \"" << specs_[a] << "\" of size " << shards
        << " does not divide (layout " << to_string() << ")";
    local[a] = global_shape[a] / shards;
  }
  return local;
}

Shape Layout::global_shape(const Shape& local_shape) const {
  WEFT_CHECK(static_cast<int>(local_shape.size()) == rank(), InvalidArgument)
      << "Layout: shape " << shape_text(local_shape) << " has rank " << local_shape.size()
      << ", layout " << to_string() << " rank " << rank();
  Shape global = local_shape;
  for (int i = 0; i < rank(); ++i) global[static_cast<size_t>(i)] *= num_shards(i);
  return global;
}

std::vector<int64_t> Layout::offsets(const Shape& global_shape, int64_t device_id) const {
  const Shape local = local_shape(global_shape);
  const std::vector<int64_t> location = mesh_.device_location(device_id);
  std::vector<int64_t> out(specs_.size(), 0);
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (specs_[i] == kUnsharded) continue;
    out[i] = location[static_cast<size_t>(mesh_.dim_index(specs_[i]))] * local[i];
  }
  return out;
}

std::string Layout::to_string() const {
  if (is_empty()) return kEmptyLayout;
  std::string text = "sharding_specs:";
  for (const std::string& spec : specs_) text += spec + ",";
  return text + " mesh:" + mesh_.to_string();
}

Layout Layout::from_string(const std::string& text) {
  if (text == kEmptyLayout) return Layout();
  const std::string specs_prefix = "sharding_specs:", mesh_prefix = " mesh:";
  const size_t mesh_at = text.find(mesh_prefix);
  WEFT_CHECK(text.rfind(specs_prefix, 0) == 0 && mesh_at != std::string::npos, InvalidArgument)
      << "Layout::from_string: \"" << text
      << "\" is not \"sharding_specs:spec,...,spec, mesh:<mesh>\"";
  std::string specs = text.substr(specs_prefix.size(), mesh_at - specs_prefix.size());
  WEFT_CHECK(specs.empty() || specs.back() == ',', InvalidArgument)
      << "Layout::from_string: the sharding specs of \"" << text << "\" do not end with ','";
  if (!specs.empty()) specs.pop_back();
  std::vector<std::string> parts = internal::split(specs, ',');
  for (const std::string& spec : parts) {
    WEFT_CHECK(!spec.empty(), InvalidArgument)
        << "Layout::from_string: an empty sharding spec in \"" << text << "\"";
  }
  return Layout(std::move(parts), Mesh::from_string(text.substr(mesh_at + mesh_prefix.size())));
}

}  // namespace weft::dtensor
