// The optimizer algorithms of the parameter-server cluster, by their Keras config (JSON, as
// VariableBinding::GradientUpdate and ps.proto carry it): a ps task applies staged gradients with
// them, and a worker its closure's own earlier steps to the copies it reads.
#pragma once

#include <string>

#include "weft/optim/optimizer.h"

namespace weft::distribute::parameter_server::internal {

// The algorithm `config` describes, made once per process for each distinct algorithm and
// hyperparameters (two configs that differ only in, say, the learning rate give the same one);
// InvalidArgument when the config cannot be read. Thread-safe; it lives as long as the process.
const optim::Optimizer::Algorithm& algorithm_of(const std::string& config);

}  // namespace weft::distribute::parameter_server::internal
