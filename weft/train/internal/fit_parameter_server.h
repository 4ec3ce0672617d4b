// Model::fit under ParameterServerStrategy (weft/train/fit.cc hands it over).
#pragma once

#include <functional>
#include <map>
#include <string>

#include "weft/data/dataset.h"
#include "weft/nn/model.h"

namespace weft::nn::internal {

// On the chief: trains as fit does, each step a closure the ClusterCoordinator runs on a worker
// with the batch as its arguments. On a worker: builds the model alike and serves those closures
// until the chief is done; on a ps task: serves variables until then. Both return an empty
// History. `prepare` turns a dataset element into the batch a step trains on (class weights).
History fit_on_parameter_servers(Model& model, const data::Dataset& dataset,
                                        const FitOptions& options,
                                        const std::function<data::Element(data::Element)>& prepare);

// Model::evaluate under ParameterServerStrategy. On the chief: one closure per batch on the
// workers, their partial logs added up in the dataset's order; returns the loss and metrics. On a
// worker or ps task: serves the chief's closures, as fit does there, until the chief is done;
// returns nothing.
std::map<std::string, double> evaluate_on_parameter_servers(Model& model,
                                                            const data::Dataset& dataset);

}  // namespace weft::nn::internal
