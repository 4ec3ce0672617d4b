#include "weft/distribute/parameter_server/sharded_variable.h"

#include <cstring>
#include <map>

#include "weft/core/errors.h"
#include "weft/distribute/parameter_server/internal/remote_variable.h"
#include "weft/ops/cast.h"
#include "weft/ops/shape_ops.h"

namespace weft::distribute {

namespace {

using parameter_server::internal::RemoteVariable;

const RemoteVariable* remote(const Variable& v) {
  return dynamic_cast<const RemoteVariable*>(v.binding());
}

// The bytes of one row along axis 0 of a variable of `shape`.
size_t row_bytes(const Shape& shape, DType dtype) {
  size_t n = static_cast<size_t>(dtype_size(dtype));
  for (size_t i = 1; i < shape.size(); ++i) n *= static_cast<size_t>(shape[i]);
  return n;
}

// The row along axis 0 a shard starts at.
int64_t first_row(const RemoteVariable::Shard& s, const Shape& shape, DType dtype) {
  const size_t n = row_bytes(shape, dtype);
  return n == 0 ? 0 : static_cast<int64_t>(s.offset / n);
}

}  // namespace

bool ShardedVariable::is(const Variable& variable) { return remote(variable) != nullptr; }

ShardedVariable::ShardedVariable(Variable variable) : variable_(std::move(variable)) {
  const RemoteVariable* r = remote(variable_);
  WEFT_CHECK(r != nullptr, InvalidArgument)
      << "ShardedVariable: variable \"" << variable_.name()
      << "\" does not live on ps tasks (make it in a ParameterServerStrategy's scope)";
  for (const RemoteVariable::Shard& s : r->shards()) {
    shards_.push_back(
        {s.ps->task(), first_row(s, variable_.shape(), variable_.dtype()), s.spec.shape});
  }
}

Tensor embedding_lookup(const Variable& params, const Tensor& ids) {
  WEFT_CHECK(ids.dtype() == kInt32 || ids.dtype() == kInt64, InvalidArgument)
      << "embedding_lookup(\"" << params.name() << "\"): ids must be int32 or int64, got "
      << dtype_name(ids.dtype());
  const RemoteVariable* r = remote(params);
  if (r == nullptr || parameter_server::internal::SnapshotScope::active()) {
    return gather(params.value(), ids);
  }
  const Shape& shape = params.shape();
  WEFT_CHECK(!shape.empty(), InvalidArgument)
      << "embedding_lookup(\"" << params.name() << "\"): the variable is a scalar";
  const std::vector<int64_t> flat = contiguous(cast(ids, kInt64)).to_vector<int64_t>();
  for (int64_t id : flat) {
    WEFT_CHECK(id >= 0 && id < shape[0], InvalidArgument)
        << "embedding_lookup(\"" << params.name() << "\"): id " << id << " is out of range [0, "
        << shape[0] << ")";
  }
  // Each shard's ids (local rows), then its rows pulled in one go.
  const auto& shards = r->shards();
  std::vector<int64_t> starts;
  const ShardedVariable view(params);
  for (const ShardedVariable::Shard& s : view.shards()) starts.push_back(s.first_row);
  std::map<size_t, std::vector<int64_t>> local;  // shard → its rows asked for, in ids' order
  std::vector<std::pair<size_t, size_t>> where;  // each id: its shard, its place there
  for (int64_t id : flat) {
    size_t k = 0;
    while (k + 1 < shards.size() && starts[k + 1] <= id) ++k;
    auto& rows = local[k];
    where.emplace_back(k, rows.size());
    rows.push_back(id - starts[k]);
  }
  std::map<size_t, Tensor> pulled;
  for (const auto& [k, rows] : local) pulled[k] = shards[k].ps->pull_rows(shards[k].spec, rows);
  Shape out_shape = ids.shape();
  out_shape.insert(out_shape.end(), shape.begin() + 1, shape.end());
  Tensor out = Tensor::empty(out_shape, params.dtype());
  const size_t bytes = row_bytes(shape, params.dtype());
  for (size_t i = 0; i < where.size(); ++i) {
    const auto [k, at] = where[i];
    std::memcpy(static_cast<char*>(out.raw_data()) + i * bytes,
                static_cast<const char*>(pulled[k].raw_data()) + at * bytes, bytes);
  }
  return out;
}

}  // namespace weft::distribute
