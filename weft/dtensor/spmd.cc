// The SPMD rules (TensorFlow DTensor's, research/dtensor-profiler.md A2): for an op with a
// DTensor operand, where each operand must lie so that every device can compute its block of the
// result alone, and how the result lies. The handler moves the operands there (relayout), runs the
// op on each device's components (once for devices that hold the same ones), and packs the
// results, with a pending sum where a device holds a term of its block (a reduction or a matmul
// over a sharded axis), resolved by the op that consumes it.
#include <algorithm>
#include <map>
#include <set>

#include "weft/core/errors.h"
#include "weft/core/op_scope.h"
#include "weft/dtensor/internal/parts.h"

namespace weft::dtensor::internal {
namespace {

using Specs = std::vector<std::string>;

struct Plan {
  std::vector<Specs> operands;  // where each operand must lie (empty for an undefined one)
  Specs result;
  Pending pending;
  Shape result_global_shape;  // kReshape: the result's global shape
};

bool sharded(const std::string& spec) { return spec != kUnsharded; }

std::string layouts_text(const std::vector<Tensor>& operands) {
  std::string text;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i].defined()) continue;
    text += (text.empty() ? "" : "; ") + std::string("operand ") + std::to_string(i) + ": " +
            parts_of(operands[i])->describe();
  }
  return text;
}

// Broadcasting ops: the output's axis takes the first sharded spec of an operand whose axis is
// not broadcast; a mesh dimension that two axes would use shards neither (TensorFlow's merge).
Plan elementwise(const std::vector<Tensor>& operands) {
  size_t rank = 0;
  for (const Tensor& t : operands) rank = std::max(rank, static_cast<size_t>(t.rank()));
  Shape shape(rank, 1);
  for (const Tensor& t : operands) {
    const size_t lead = rank - static_cast<size_t>(t.rank());
    for (size_t a = 0; a < static_cast<size_t>(t.rank()); ++a) {
      if (t.shape()[a] != 1) shape[lead + a] = t.shape()[a];
    }
  }
  Specs out(rank, kUnsharded);
  std::map<std::string, std::set<size_t>> axes_of;
  for (const Tensor& t : operands) {
    const Specs& specs = parts_of(t)->layout().sharding_specs();
    const size_t lead = rank - specs.size();
    for (size_t a = 0; a < specs.size(); ++a) {
      if (!sharded(specs[a]) || t.shape()[a] != shape[lead + a]) continue;
      axes_of[specs[a]].insert(lead + a);
      if (!sharded(out[lead + a])) out[lead + a] = specs[a];
    }
  }
  for (auto& spec : out) {
    if (sharded(spec) && axes_of[spec].size() > 1) spec = kUnsharded;
  }
  Plan plan{{}, out, {}, {}};
  for (const Tensor& t : operands) {
    const size_t lead = rank - static_cast<size_t>(t.rank());
    Specs specs(static_cast<size_t>(t.rank()), kUnsharded);
    for (size_t a = 0; a < specs.size(); ++a) {
      if (t.shape()[a] == shape[lead + a]) specs[a] = out[lead + a];
    }
    plan.operands.push_back(std::move(specs));
  }
  return plan;
}

// a [..., m, k] x b [..., k, n] (each transposed as flagged): the result is [..., m, n] with a's
// m and b's n shardings; a contracting axis sharded on either side shards both, and each device
// holds a term of its block (pending sum over that mesh dimension).
Plan matmul(const char* op, const SpmdRule& rule, const std::vector<Tensor>& operands) {
  const Specs& a = parts_of(operands[0])->layout().sharding_specs();
  const Specs& b = parts_of(operands[1])->layout().sharding_specs();
  const size_t ra = a.size(), rb = b.size();
  const size_t am = rule.transpose_a ? ra - 1 : ra - 2, ak = rule.transpose_a ? ra - 2 : ra - 1;
  const size_t bk = rule.transpose_b ? rb - 1 : rb - 2, bn = rule.transpose_b ? rb - 2 : rb - 1;
  std::string k = sharded(a[ak]) ? a[ak] : b[bk];
  WEFT_CHECK(!sharded(a[ak]) || !sharded(b[bk]) || a[ak] == b[bk], InvalidArgument)
      << op << ": the contracting axes are sharded on different mesh dimensions, \"" << a[ak]
      << "\" and \"" << b[bk] << "\" (" << layouts_text(operands)
      << "); relayout one of them to match the other";
  std::string m = a[am], n = b[bn];
  if (sharded(n) && n == m) n = kUnsharded;
  if (sharded(k) && (k == m || k == n)) k = kUnsharded;
  // The batch axes broadcast as an elementwise op's, without the mesh dimensions used above.
  const size_t batch = std::max(ra, rb) - 2;
  Specs out(batch, kUnsharded);
  for (const Specs* s : {&a, &b}) {
    const size_t lead = batch - (s->size() - 2);
    for (size_t i = 0; i + 2 < s->size(); ++i) {
      const std::string& d = (*s)[i];
      const Tensor& t = s == &a ? operands[0] : operands[1];
      if (!sharded(d) || d == m || d == n || d == k || t.shape()[i] == 1) continue;
      if (!sharded(out[lead + i]) && std::find(out.begin(), out.end(), d) == out.end()) {
        out[lead + i] = d;
      }
    }
  }
  auto operand = [&](const Tensor& t, size_t first, size_t second, const std::string& s1,
                     const std::string& s2) {
    Specs specs(static_cast<size_t>(t.rank()), kUnsharded);
    const size_t lead = batch - (specs.size() - 2);
    for (size_t i = 0; i + 2 < specs.size(); ++i) {
      if (t.shape()[i] != 1) specs[i] = out[lead + i];
    }
    specs[first] = s1;
    specs[second] = s2;
    return specs;
  };
  Plan plan;
  plan.operands = {operand(operands[0], am, ak, m, k), operand(operands[1], bk, bn, k, n)};
  plan.result = out;
  plan.result.push_back(m);
  plan.result.push_back(n);
  if (sharded(k)) plan.pending[k] = SpmdRule::Reduce::kSum;
  return plan;
}

// A reduction over rule.axes: the reduced axes' mesh dimensions become pending reductions.
Plan reduce(const SpmdRule& rule, const Tensor& x) {
  const Specs& specs = parts_of(x)->layout().sharding_specs();
  Plan plan{{specs}, {}, {}, {}};
  for (size_t a = 0; a < specs.size(); ++a) {
    const bool reduced =
        std::find(rule.axes.begin(), rule.axes.end(), static_cast<int64_t>(a)) != rule.axes.end();
    if (!reduced) {
      plan.result.push_back(specs[a]);
      continue;
    }
    if (sharded(specs[a])) plan.pending[specs[a]] = rule.reduce;
    if (rule.keepdims) plan.result.push_back(kUnsharded);
  }
  return plan;
}

// An op that needs rule.axes whole on each device (softmax, argmax): those axes gathered.
Plan along_axis(const SpmdRule& rule, const std::vector<Tensor>& operands) {
  Plan plan;
  Specs specs = parts_of(operands[0])->layout().sharding_specs();
  for (int64_t a : rule.axes) specs[static_cast<size_t>(a)] = kUnsharded;
  plan.operands.push_back(specs);
  for (size_t a = 0; a < specs.size(); ++a) {
    const bool listed =
        std::find(rule.axes.begin(), rule.axes.end(), static_cast<int64_t>(a)) != rule.axes.end();
    if (!(listed && rule.drop_axes)) plan.result.push_back(specs[a]);
  }
  for (size_t i = 1; i < operands.size(); ++i) {  // further operands: laid out alike
    plan.operands.push_back(parts_of(operands[i])->layout().sharding_specs());
  }
  return plan;
}

// labels [B...] and logits [B..., C]: the batch axes sharded as the logits' (else the labels'),
// the classes whole on each device; the result [B...] as the batch axes.
Plan sparse_cross_entropy(const std::vector<Tensor>& operands) {
  const Specs& labels = parts_of(operands[0])->layout().sharding_specs();
  const Specs& logits = parts_of(operands[1])->layout().sharding_specs();
  Specs batch(labels.size(), kUnsharded);
  for (size_t a = 0; a < batch.size(); ++a) {
    for (const std::string& d : {logits[a], labels[a]}) {
      if (sharded(d) && !sharded(batch[a]) &&
          std::find(batch.begin(), batch.end(), d) == batch.end()) {
        batch[a] = d;
      }
    }
  }
  Specs with_classes = batch;
  with_classes.push_back(kUnsharded);
  return Plan{{batch, with_classes}, batch, {}, {}};
}

// A reshape keeps a sharded axis that survives whole (the same size, after the same number of
// elements); any other sharded axis is gathered first.
Plan reshape(const SpmdRule& rule, const Tensor& x) {
  const Specs& specs = parts_of(x)->layout().sharding_specs();
  Plan plan{
      {Specs(specs.size(), kUnsharded)}, Specs(rule.shape.size(), kUnsharded), {}, rule.shape};
  int64_t before_in = 1;
  for (size_t a = 0; a < specs.size(); ++a) {
    int64_t before_out = 1;
    for (size_t b = 0; b < rule.shape.size(); ++b) {
      if (sharded(specs[a]) && before_out == before_in && rule.shape[b] == x.shape()[a]) {
        plan.operands[0][a] = specs[a];
        plan.result[b] = specs[a];
        break;
      }
      before_out *= rule.shape[b];
    }
    before_in *= x.shape()[a];
  }
  return plan;
}

// concat along `axis`: every operand laid out as the first, with that axis whole.
Plan concat(const SpmdRule& rule, const std::vector<Tensor>& operands) {
  Specs specs = parts_of(operands[0])->layout().sharding_specs();
  specs[static_cast<size_t>(rule.axes[0])] = kUnsharded;
  return Plan{std::vector<Specs>(operands.size(), specs), specs, {}, {}};
}

// A new unsharded axis at rule.axes[0] of the result; the operands lie as the first.
Plan new_axis(const SpmdRule& rule, const std::vector<Tensor>& operands) {
  const Specs& specs = parts_of(operands[0])->layout().sharding_specs();
  Specs out = specs;
  out.insert(out.begin() + rule.axes[0], kUnsharded);
  return Plan{std::vector<Specs>(operands.size(), specs), out, {}, {}};
}

// gather(params, indices, axis): params' axis whole on each device, the indices as they lie; the
// result is params' axes before and after `axis` around the indices' (a mesh dimension that both
// would use stays with params).
Plan gather(const SpmdRule& rule, const std::vector<Tensor>& operands) {
  const auto axis = static_cast<size_t>(rule.axes[0]);
  Specs params = parts_of(operands[0])->layout().sharding_specs();
  params[axis] = kUnsharded;
  Specs indices = parts_of(operands[1])->layout().sharding_specs();
  for (std::string& d : indices) {
    if (std::find(params.begin(), params.end(), d) != params.end()) d = kUnsharded;
  }
  Specs out(params.begin(), params.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), params.begin() + static_cast<std::ptrdiff_t>(axis) + 1, params.end());
  return Plan{{params, indices}, out, {}, {}};
}

// Per example: the first operand's batch axis keeps its sharding (and the batch axes of the
// operands rule.axes lists: an RNN's initial states), everything else whole.
Plan batch(const SpmdRule& rule, const std::vector<Tensor>& operands) {
  Plan plan;
  for (const Tensor& t : operands) {
    plan.operands.emplace_back(t.defined() ? static_cast<size_t>(t.rank()) : 0, kUnsharded);
  }
  plan.operands[0][0] = parts_of(operands[0])->layout().sharding_specs()[0];
  for (int64_t j : rule.axes) {
    if (operands[static_cast<size_t>(j)].defined()) {
      plan.operands[static_cast<size_t>(j)][0] = plan.operands[0][0];
    }
  }
  plan.result = {plan.operands[0][0]};  // the rest of the result's axes follow from its rank
  return plan;
}

Plan plan_for(const char* op, const SpmdRule& rule, const std::vector<Tensor>& operands) {
  using Kind = SpmdRule::Kind;
  switch (rule.kind) {
    case Kind::kElementwise:
      return elementwise(operands);
    case Kind::kMatmul:
      return matmul(op, rule, operands);
    case Kind::kReduce:
      return reduce(rule, operands[0]);
    case Kind::kAlongAxis:
      return along_axis(rule, operands);
    case Kind::kSparseCrossEntropy:
      return sparse_cross_entropy(operands);
    case Kind::kReshape:
      return reshape(rule, operands[0]);
    case Kind::kTranspose: {
      const Specs& specs = parts_of(operands[0])->layout().sharding_specs();
      Specs out;
      for (int64_t a : rule.axes) out.push_back(specs[static_cast<size_t>(a)]);
      return Plan{{specs}, out, {}, {}};
    }
    case Kind::kAssign: {
      const Specs& dst = parts_of(operands[0])->layout().sharding_specs();
      return Plan{{dst, dst}, dst, {}, {}};
    }
    case Kind::kConcat:
      return concat(rule, operands);
    case Kind::kNewAxis:
      return new_axis(rule, operands);
    case Kind::kGather:
      return gather(rule, operands);
    case Kind::kBatch:
      return batch(rule, operands);
    case Kind::kReplicated:
      break;
  }
  Plan plan;
  for (const Tensor& t : operands) {
    const Specs& specs = parts_of(t)->layout().sharding_specs();
    WEFT_CHECK(std::none_of(specs.begin(), specs.end(), sharded), InvalidArgument)
        << op << ": has no SPMD rule for a sharded operand (" << layouts_text(operands)
        << "); relayout it to a replicated layout first";
    plan.operands.push_back(specs);
  }
  return plan;  // the result's specs follow from its rank
}

std::vector<Tensor> handle(const char* op, const SpmdRule& rule,
                           const std::vector<Tensor>& operands, const SpmdResultsFn& fn) {
  // One mesh for all: DTensor operands must share it; local tensors join it replicated.
  const Mesh* mesh = nullptr;
  for (const Tensor& t : operands) {
    const Parts* p = parts_of(t);
    if (p == nullptr) continue;
    if (mesh == nullptr) mesh = &p->layout().mesh();
    WEFT_CHECK(*mesh == p->layout().mesh(), InvalidArgument)
        << op << ": operands lie on different meshes (" << layouts_text(operands)
        << "); copy one to the other's mesh first";
  }
  WEFT_ASSERT(mesh != nullptr);
  std::vector<Tensor> laid;
  for (const Tensor& t : operands) {
    if (!t.defined()) {
      laid.push_back(t);
    } else if (rule.kind == SpmdRule::Kind::kAssign && &t == &operands[0]) {
      WEFT_CHECK(parts_of(t) != nullptr, InvalidArgument)
          << op << ": a DTensor (" << parts_of(operands[1])->describe()
          << ") cannot be written into a local tensor";
      laid.push_back(t);
    } else {
      laid.push_back(resolve(parts_of(t) ? t : replicate(t, *mesh)));
    }
  }
  if (rule.kind == SpmdRule::Kind::kAssign && parts_of(operands[1]) != nullptr) {
    const Layout& dst = parts_of(laid[0])->layout();
    const Layout& src = parts_of(laid[1])->layout();
    WEFT_CHECK(dst == src, InvalidArgument)
        << op << ": a DVariable's layout is fixed: it is " << dst.to_string() << ", the value's is "
        << src.to_string() << " (relayout the value first)";
  }
  Plan plan = plan_for(op, rule, laid);
  std::vector<std::vector<Tensor>> per_device(static_cast<size_t>(mesh->num_local_devices()));
  for (size_t j = 0; j < laid.size(); ++j) {
    Tensor moved = laid[j];
    if (moved.defined()) moved = move(moved, Layout(plan.operands[j], *mesh));
    for (size_t i = 0; i < per_device.size(); ++i) {
      per_device[i].push_back(moved.defined() ? parts_of(moved)->components()[i] : Tensor());
    }
  }
  Shape local_shape;
  if (rule.kind == SpmdRule::Kind::kReshape) {
    local_shape = Layout(plan.result, *mesh).local_shape(plan.result_global_shape);
  }
  std::vector<std::vector<Tensor>> per_result;                // [result][device]
  std::map<std::vector<uint64_t>, std::vector<Tensor>> done;  // devices with the same components
  for (const std::vector<Tensor>& components : per_device) {
    std::vector<uint64_t> key;
    for (const Tensor& c : components) key.push_back(c.defined() ? c.id() : 0);
    auto [it, fresh] = done.try_emplace(std::move(key));
    if (fresh) it->second = fn(SpmdArgs{components, local_shape});
    per_result.resize(it->second.size());
    for (size_t k = 0; k < it->second.size(); ++k) per_result[k].push_back(it->second[k]);
  }
  std::vector<Tensor> out;
  for (std::vector<Tensor>& results : per_result) {
    if (!results[0].defined()) {  // an op that writes (assign_into), or a result it lacks
      out.emplace_back();
      continue;
    }
    Specs specs = plan.result;
    if (rule.kind == SpmdRule::Kind::kReplicated) {
      specs = Specs(static_cast<size_t>(results[0].rank()), kUnsharded);
    } else if (rule.kind == SpmdRule::Kind::kBatch) {
      specs.resize(static_cast<size_t>(results[0].rank()), kUnsharded);
    }
    out.push_back(make(Layout(specs, *mesh), plan.pending, std::move(results)));
  }
  return out;
}

const bool registered = [] {
  OpScope::set_handler(&handle);
  return true;
}();

}  // namespace
}  // namespace weft::dtensor::internal
