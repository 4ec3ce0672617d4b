// Model::fit under ParameterServerStrategy (weft/train/fit.cc hands it over).
#pragma once

#include <functional>

#include "weft/data/dataset.h"
#include "weft/nn/model.h"

namespace weft::nn::internal {

// On the chief: trains as fit does, each step a closure the ClusterCoordinator runs on a worker
// with the batch as its arguments. On a worker: builds the model alike and serves those closures
// until the chief is done; on a ps task: serves variables until then. Both return an empty
// History. `prepare` turns a dataset element into the batch a step trains on (class weights).
train::History fit_on_parameter_servers(Model& model, const data::Dataset& dataset,
                                        const FitOptions& options,
                                        const std::function<data::Element(data::Element)>& prepare);

}  // namespace weft::nn::internal
