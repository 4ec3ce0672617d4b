// DTensor parts and the moves between layouts, in one process: a cut (replicated -> sharded) is a
// slice of each device's component, a gather a concat over the devices of a mesh dimension, a
// pending sum a fixed tree over them. All of them are ordinary ops on the components, so a tape
// records them and their gradients come for free. Devices that hold the same block share one
// component tensor, and each move computes a shared result once.
#include "weft/dtensor/internal/parts.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <set>

#include "weft/autodiff/tape.h"
#include "weft/core/errors.h"
#include "weft/distribute/updates.h"
#include "weft/dtensor/clients.h"
#include "weft/dtensor/internal/across.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/shape_ops.h"

namespace weft::dtensor::internal {
namespace {

const char* reduce_name(SpmdRule::Reduce r) {
  switch (r) {
    case SpmdRule::Reduce::kSum:
      return "sum";
    case SpmdRule::Reduce::kMax:
      return "max";
    case SpmdRule::Reduce::kMin:
      return "min";
  }
  return "?";
}

// values combined in the fixed binary tree of distribute::tree_sum.
Tensor combine(const std::vector<Tensor>& values, SpmdRule::Reduce r) {
  if (r == SpmdRule::Reduce::kSum) return distribute::tree_sum(values);
  std::vector<Tensor> level = values;
  while (level.size() > 1) {
    std::vector<Tensor> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2) {
      next.push_back(r == SpmdRule::Reduce::kMax ? maximum(level[i], level[i + 1])
                                                 : minimum(level[i], level[i + 1]));
    }
    if (level.size() % 2 == 1) next.push_back(level.back());
    level = std::move(next);
  }
  return level[0];
}

std::atomic<int64_t> g_collectives{0}, g_bytes{0};

enum class Collective { kAllReduce, kAllGather, kAllToAll };

// Counts one collective of each of `groups` groups of n devices, each device holding `bytes`.
void count(Collective kind, size_t groups, int64_t n, int64_t bytes, bool backward) {
  if (n <= 1) return;
  const int64_t per_group = kind == Collective::kAllReduce   ? 2 * (n - 1) * bytes
                            : kind == Collective::kAllGather ? n * (n - 1) * bytes
                                                             : (n - 1) * bytes;
  const auto times = static_cast<int64_t>(groups) * (backward ? 2 : 1);
  g_collectives += times;
  g_bytes += times * per_group;
}

int64_t bytes_of(const Tensor& t) { return t.numel() * dtype_size(t.dtype()); }

std::vector<uint64_t> ids_of(const std::vector<Tensor>& ts) {
  std::vector<uint64_t> ids;
  for (const Tensor& t : ts) ids.push_back(t.defined() ? t.id() : 0);
  return ids;
}

// Local device i's coordinates on the mesh dimensions in `varying` (over which a tensor's values
// differ), `dim` left out: devices of equal keys on groups along `dim` hold equal values.
std::vector<uint64_t> key_of(const Mesh& mesh, size_t i, const std::string& dim,
                             const std::set<std::string>& varying) {
  std::vector<uint64_t> key;
  for (const std::string& v : varying) {
    if (v != dim) key.push_back(static_cast<uint64_t>(coordinate(mesh, i, mesh.dim_index(v))));
  }
  return key;
}

// Over each group along `dim`: `fn` of the group's components (in coordinate order), given to
// every device of the group. A group across clients: `fn` of this client's members, then `fn` of
// every client's result (in client order). Computed once for groups of the same components; across
// clients, once for groups of the same values (`varying`: the mesh dimensions over which the
// components differ), so that every client makes the same collectives.
template <typename Fn>
std::vector<Tensor> over_groups(const Mesh& mesh, const std::string& dim, Collective kind,
                                const std::set<std::string>& varying,
                                const std::vector<Tensor>& components, Fn fn) {
  std::vector<Tensor> out(components.size());
  std::map<std::vector<uint64_t>, Tensor> done;
  const Groups groups = groups_along(mesh, dim);
  count(kind, groups.local.size(), mesh.dim_size(dim), bytes_of(components[0]),
        autodiff::is_recording());
  for (const std::vector<size_t>& group : groups.local) {
    std::vector<Tensor> members;
    for (size_t i : group) members.push_back(components[i]);
    auto [it, fresh] =
        done.try_emplace(groups.across ? key_of(mesh, group[0], dim, varying) : ids_of(members));
    if (fresh) {
      it->second = fn(members);
      if (groups.across) {
        const Tensor stacked = all_stack(communicator_along(mesh, dim), it->second);
        std::vector<Tensor> results;
        for (int64_t c = 0; c < stacked.dim(0); ++c) results.push_back(select(stacked, 0, c));
        it->second = fn(results);
      }
    }
    for (size_t i : group) out[i] = it->second;
  }
  return out;
}

// Axis `from`, sharded over `dim`, moves to axis `to` over the same `dim`, whose groups span the
// clients (an all-to-all): each client joins its devices' blocks along `from`, sends every other
// client the part of axis `to` that client's devices will hold, and joins what it receives
// along `from`; each device then takes its block of `to` from its client's part.
std::vector<Tensor> exchange(const Mesh& mesh, const std::string& dim,
                             const std::set<std::string>& varying,
                             const std::vector<Tensor>& components, int64_t from, int64_t to) {
  const Groups groups = groups_along(mesh, dim);
  const auto held = static_cast<int64_t>(groups.local[0].size());
  count(Collective::kAllToAll, groups.local.size(), mesh.dim_size(dim), bytes_of(components[0]),
        autodiff::is_recording());
  std::vector<Tensor> out(components.size());
  std::map<std::vector<uint64_t>, Tensor> done;  // by values, as over_groups across clients
  for (const std::vector<size_t>& group : groups.local) {
    auto [it, fresh] = done.try_emplace(key_of(mesh, group[0], dim, varying));
    if (fresh) {
      std::vector<Tensor> members;
      for (size_t i : group) members.push_back(components[i]);
      const Tensor local = members.size() == 1 ? members[0] : concat(members, from);
      const Tensor received = all_exchange(communicator_along(mesh, dim),
                                           stack(split(local, mesh.dim_size(dim) / held, to), 0));
      std::vector<Tensor> parts;
      for (int64_t c = 0; c < received.dim(0); ++c) parts.push_back(select(received, 0, c));
      it->second = concat(parts, from);  // all of `from`, this client's part of `to`
    }
    const int64_t block = it->second.dim(to) / held;
    for (size_t k = 0; k < group.size(); ++k) {
      std::vector<Slice> slices(static_cast<size_t>(to) + 1);
      slices.back() = Slice{static_cast<int64_t>(k) * block, static_cast<int64_t>(k + 1) * block};
      out[group[k]] = slice(it->second, slices);
    }
  }
  return out;
}

// The mesh dimensions over which a tensor of `specs` with pending reductions `pending` varies.
std::set<std::string> varying_dims(const std::vector<std::string>& specs, const Pending& pending) {
  std::set<std::string> out;
  for (const std::string& s : specs) {
    if (s != kUnsharded) out.insert(s);
  }
  for (const auto& [dim, r] : pending) out.insert(dim);
  return out;
}

// Each device's block along `axis` (cut over mesh dimension `dim`) of its component.
std::vector<Tensor> cut(const Mesh& mesh, const std::string& dim, int64_t axis,
                        const std::vector<Tensor>& components) {
  const int d = mesh.dim_index(dim);
  const int64_t n = mesh.dim_size(dim);
  std::vector<Tensor> out(components.size());
  std::map<std::pair<uint64_t, int64_t>, Tensor> done;
  for (size_t i = 0; i < components.size(); ++i) {
    const int64_t c = coordinate(mesh, i, d);
    auto [it, fresh] = done.try_emplace(std::pair{components[i].id(), c});
    if (fresh) {
      const int64_t block = components[i].dim(axis) / n;
      std::vector<Slice> slices(static_cast<size_t>(axis) + 1);
      slices.back() = Slice{c * block, (c + 1) * block};
      it->second = slice(components[i], slices);
    }
    out[i] = it->second;
  }
  return out;
}

int axis_of(const Layout& layout, const std::string& dim) {
  const auto& specs = layout.sharding_specs();
  auto it = std::find(specs.begin(), specs.end(), dim);
  return it == specs.end() ? -1 : static_cast<int>(it - specs.begin());
}

}  // namespace

std::string Parts::describe() const {
  std::string text = layout_.to_string();
  for (const auto& [dim, r] : pending_) {
    text += " (pending " + std::string(reduce_name(r)) + " over " + dim + ")";
  }
  return text;
}

Tensor Parts::replicated_value() const {
  if (!pending_.empty()) {
    return parts_of(resolve(make(layout_, pending_, components_)))->replicated_value();
  }
  return layout_.is_fully_replicated() ? components_[0] : Tensor();
}

Tensor Parts::with_components(std::vector<Tensor> components) const {
  return make(layout_, pending_, std::move(components));
}

Tensor Parts::empty_like() const {
  const Mesh& mesh = layout_.mesh();
  const Shape global = layout_.global_shape(components_[0].shape());
  const Shape local = layout_.local_shape(global);
  std::vector<Tensor> out;
  std::map<std::vector<int64_t>, Tensor> blocks;  // devices that hold the same block share it
  for (int64_t id : mesh.local_device_ids()) {
    auto [it, fresh] = blocks.try_emplace(layout_.offsets(global, id));
    if (fresh) it->second = Tensor::empty(local, components_[0].dtype());
    out.push_back(it->second);
  }
  return make(layout_, {}, std::move(out));
}

std::vector<std::pair<Tensor, Tensor>> Parts::seeds(const Tensor& output_gradient) const {
  // Each block of the global tensor once: on the device at coordinate 0 of every mesh dimension
  // over which the tensor is replicated (a pending sum's devices each hold a term: all seeded).
  // A client that does not hold that device seeds its first device of the block with zeros, so
  // that every client runs the same backward pass and meets the same collectives.
  const Mesh& mesh = layout_.mesh();
  std::vector<Tensor> grads;
  if (output_gradient.defined()) {
    const Parts* given = parts_of(output_gradient);
    WEFT_CHECK(given == nullptr || given->layout().mesh() == mesh, InvalidArgument)
        << "GradientTape::gradient: an output gradient laid out as " << given->describe()
        << " for a target laid out as " << describe() << "; it must lie on the target's mesh";
    Tensor g = given ? output_gradient : replicate(output_gradient, mesh);
    g = move(resolve(g), layout_);
    grads = g.parts()->components();
  }
  const std::set<std::string> varying = varying_dims(layout_.sharding_specs(), pending_);
  std::vector<std::pair<Tensor, Tensor>> out;
  std::set<std::vector<uint64_t>> seen;
  std::set<uint64_t> seen_ids;  // (devices that share a component tensor hold one block)
  for (size_t i = 0; i < components_.size(); ++i) {
    if (!seen.insert(key_of(mesh, i, "", varying)).second ||
        !seen_ids.insert(components_[i].id()).second) {
      continue;
    }
    bool lowest = true;
    for (int d = 0; d < mesh.rank(); ++d) {
      if (!varying.count(mesh.dims()[static_cast<size_t>(d)].name) && coordinate(mesh, i, d) != 0) {
        lowest = false;
      }
    }
    Tensor seed = grads.empty() ? ones_like(components_[i]) : grads[i];
    out.emplace_back(components_[i], lowest ? seed : zeros_like(components_[i]));
  }
  return out;
}

Tensor Parts::gradient(const std::vector<Tensor>& component_gradients) const {
  // Devices that hold the same block (they differ only on mesh dimensions over which the tensor
  // is replicated) each computed a term of its gradient: the terms of distinct components add up.
  const Mesh& mesh = layout_.mesh();
  if (std::none_of(component_gradients.begin(), component_gradients.end(),
                   [](const Tensor& g) { return g.defined(); })) {
    return Tensor();
  }
  std::vector<Tensor> grads(component_gradients.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    grads[i] =
        component_gradients[i].defined() ? component_gradients[i] : zeros_like(components_[i]);
  }
  // Sum over the replicated dimensions one after another, each distinct component's term once.
  std::vector<uint64_t> ids = ids_of(components_);
  for (int d = 0; d < mesh.rank(); ++d) {
    const std::string& dim = mesh.dims()[static_cast<size_t>(d)].name;
    if (axis_of(layout_, dim) >= 0 || pending_.count(dim)) continue;
    const Groups groups = groups_along(mesh, dim);
    count(Collective::kAllReduce, groups.local.size(), mesh.dim_size(dim), bytes_of(grads[0]),
          false);
    std::vector<Tensor> summed(grads.size());
    std::vector<uint64_t> summed_ids(grads.size());  // which sum each device holds
    std::map<std::vector<uint64_t>, std::pair<Tensor, uint64_t>> done;
    for (const std::vector<size_t>& group : groups.local) {
      std::vector<Tensor> terms;
      std::vector<uint64_t> key;
      for (size_t i : group) {
        if (std::find(key.begin(), key.end(), ids[i]) != key.end()) continue;
        key.push_back(ids[i]);
        terms.push_back(grads[i]);
      }
      auto [it, fresh] = done.try_emplace(key);
      if (fresh) {
        it->second = {terms.size() == 1 ? terms[0] : distribute::tree_sum(terms), done.size()};
      }
      for (size_t i : group) {
        summed[i] = it->second.first;
        summed_ids[i] = it->second.second;
      }
    }
    grads = std::move(summed);
    ids = std::move(summed_ids);
  }
  // Across clients: each client has added its own devices' terms; over each replicated dimension
  // whose groups span clients, the clients of a group add theirs, block after block in the order
  // of their coordinates.
  const std::set<std::string> varying = varying_dims(layout_.sharding_specs(), pending_);
  for (const MeshDimension& dim : mesh.dims()) {
    if (varying.count(dim.name) || !groups_along(mesh, dim.name).across) continue;
    distribute::collective::Communicator& comm = communicator_along(mesh, dim.name);
    std::map<std::vector<uint64_t>, Tensor> totals;
    for (size_t i = 0; i < grads.size(); ++i) {
      totals.try_emplace(key_of(mesh, i, "", varying), grads[i]);
    }
    for (auto& [key, total] : totals) total = sum_across(comm, total);
    for (size_t i = 0; i < grads.size(); ++i) grads[i] = totals.at(key_of(mesh, i, "", varying));
  }
  return make(layout_, {}, std::move(grads));
}

std::vector<TensorBlock> Parts::blocks() const {
  if (!pending_.empty()) return parts_of(resolve(make(layout_, pending_, components_)))->blocks();
  const Mesh& mesh = layout_.mesh();
  const Shape global = layout_.global_shape(components_[0].shape());
  std::vector<TensorBlock> out;
  std::map<uint64_t, size_t> seen;  // component id -> its block
  for (size_t i = 0; i < components_.size(); ++i) {
    // The lowest device holding a block is at coordinate 0 of every mesh dimension that shards
    // no axis.
    bool lowest = true;
    for (int d = 0; d < mesh.rank(); ++d) {
      const std::string& dim = mesh.dims()[static_cast<size_t>(d)].name;
      if (axis_of(layout_, dim) < 0 && coordinate(mesh, i, d) != 0) lowest = false;
    }
    auto [it, fresh] = seen.try_emplace(components_[i].id(), out.size());
    if (fresh) {
      out.push_back({components_[i], layout_.offsets(global, mesh.local_device_ids()[i]), lowest});
    } else {
      out[it->second].saves = out[it->second].saves || lowest;
    }
  }
  return out;
}

Traffic traffic() { return {g_collectives.load(), g_bytes.load()}; }

Tensor make(Layout layout, Pending pending, std::vector<Tensor> components) {
  WEFT_ASSERT(!components.empty() && components[0].defined());
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = layout.global_shape(components[0].shape());
  impl->strides = contiguous_strides(impl->shape);
  impl->dtype = components[0].dtype();
  impl->id = next_tensor_id();
  impl->parts =
      std::make_shared<const Parts>(std::move(layout), std::move(pending), std::move(components));
  return Tensor(std::move(impl));
}

const Parts* parts_of(const Tensor& t) {
  return t.defined() ? static_cast<const Parts*>(t.parts()) : nullptr;
}

int64_t coordinate(const Mesh& mesh, size_t local_device, int dim) {
  return mesh.device_location(mesh.local_device_ids()[local_device])[static_cast<size_t>(dim)];
}

Groups groups_along(const Mesh& mesh, const std::string& dim) {
  const int d = mesh.dim_index(dim);
  std::map<std::vector<int64_t>, std::vector<size_t>> groups;
  const auto& ids = mesh.local_device_ids();
  for (size_t i = 0; i < ids.size(); ++i) {
    std::vector<int64_t> key = mesh.device_location(ids[i]);
    key[static_cast<size_t>(d)] = 0;
    groups[key].push_back(i);  // local ids ascend, so each group is in coordinate order
  }
  Groups out;
  for (auto& [key, group] : groups) {
    const auto held = static_cast<int64_t>(group.size());
    out.across = held < mesh.dim_size(dim);
    WEFT_CHECK(mesh.dim_size(dim) % held == 0, FailedPrecondition)
        << "DTensor: this client holds " << held << " of the " << mesh.dim_size(dim)
        << " devices of a group along mesh dimension \"" << dim << "\" of mesh " << mesh.to_string()
        << "; each client of a group must hold as many";
    out.local.push_back(std::move(group));
  }
  return out;
}

Tensor resolve(const Tensor& t) {
  const Parts* p = parts_of(t);
  if (p->pending().empty()) return t;
  std::vector<Tensor> components = p->components();
  Pending left = p->pending();
  for (const auto& [dim, r] : p->pending()) {
    components =
        over_groups(p->layout().mesh(), dim, Collective::kAllReduce,
                    varying_dims(p->layout().sharding_specs(), left), components,
                    [r = r](const std::vector<Tensor>& terms) { return combine(terms, r); });
    left.erase(dim);
  }
  return make(p->layout(), {}, std::move(components));
}

Tensor move(const Tensor& t, const Layout& target) {
  const Parts* p = parts_of(t);
  WEFT_ASSERT(p->pending().empty());
  const Layout& from = p->layout();
  if (from == target) return t;
  const Mesh& mesh = from.mesh();
  std::vector<std::string> specs = from.sharding_specs();
  std::vector<Tensor> components = p->components();
  // Gathers first, then cuts: an axis moving to another is gathered, then cut again.
  for (size_t axis = 0; axis < specs.size(); ++axis) {
    const std::string dim = specs[axis];
    if (dim == kUnsharded || target.sharding_specs()[axis] == dim) continue;
    const int to = axis_of(target, dim);
    if (to >= 0 && specs[static_cast<size_t>(to)] == kUnsharded && groups_along(mesh, dim).across) {
      components =
          exchange(mesh, dim, varying_dims(specs, {}), components, static_cast<int64_t>(axis), to);
      specs[axis] = kUnsharded;
      specs[static_cast<size_t>(to)] = dim;
      continue;
    }
    components = over_groups(
        mesh, dim, Collective::kAllGather, varying_dims(specs, {}), components,
        [axis](const std::vector<Tensor>& blocks) {
          return blocks.size() == 1 ? blocks[0] : concat(blocks, static_cast<int64_t>(axis));
        });
    specs[axis] = kUnsharded;
  }
  for (size_t axis = 0; axis < specs.size(); ++axis) {
    const std::string& dim = target.sharding_specs()[axis];
    if (dim == kUnsharded || specs[axis] == dim) continue;
    components = cut(mesh, dim, static_cast<int64_t>(axis), components);
    specs[axis] = dim;
  }
  return make(target, {}, std::move(components));
}

Tensor replicate(const Tensor& t, const Mesh& mesh) {
  return make(Layout::replicated(mesh, static_cast<int>(t.rank())), {},
              std::vector<Tensor>(static_cast<size_t>(mesh.num_local_devices()), t));
}

}  // namespace weft::dtensor::internal
