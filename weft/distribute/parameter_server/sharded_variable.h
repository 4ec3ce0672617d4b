// tf.distribute.experimental.ShardedVariable (TensorFlow 2.4): a variable that
// ParameterServerStrategy's variable_partitioner (partitioners.h) cut along axis 0 into shards,
// each on a ps task, in TF's "div" split (the first shards a row longer when the rows do not
// divide). It stays one weft::Variable, read whole as its shards concatenated; this view names
// the shards, and embedding_lookup reads only the rows it needs, each from its shard's task.
//
//   weft::Variable table;  // made in strategy.scope() with a partitioner: 3 shards
//   weft::distribute::ShardedVariable sharded(table);
//   sharded.shards()[1].task;  // "ps:1"
//   weft::Tensor rows = weft::distribute::embedding_lookup(table, ids);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weft/autodiff/variable.h"
#include "weft/core/tensor.h"

namespace weft::distribute {

class ShardedVariable {
 public:
  // InvalidArgument unless `variable` lives on ps tasks (made in a ParameterServerStrategy's
  // scope); a variable the partitioner left whole is one shard.
  explicit ShardedVariable(Variable variable);
  // Whether `variable` lives on ps tasks.
  static bool is(const Variable& variable);

  struct Shard {
    std::string task;       // "ps:1"
    int64_t first_row = 0;  // of the whole variable
    Shape shape;            // its rows, and the variable's other axes
  };
  // TF's .variables, in order along axis 0.
  const std::vector<Shard>& shards() const { return shards_; }
  int num_shards() const { return static_cast<int>(shards_.size()); }
  // The shards concatenated (the variable's value).
  Tensor read_value() const { return variable_.value(); }
  const Variable& variable() const { return variable_; }

 private:
  Variable variable_;
  std::vector<Shard> shards_;
};

// tf.nn.embedding_lookup(params, ids): the rows `ids` names (int32 or int64, any shape), of shape
// ids.shape + params.shape[1:]. For a variable on ps tasks outside a closure (the chief's reads,
// evaluation and serving), only those rows travel, each shard's from its task, and a task
// holding none of them is not called; a read, without a gradient. In a closure (a training
// step, whose gradient reaches the variable) and for any other variable, gather(params.value(),
// ids): the closure's snapshot of the variable. InvalidArgument naming the id for one out of
// range.
Tensor embedding_lookup(const Variable& params, const Tensor& ids);

}  // namespace weft::distribute
