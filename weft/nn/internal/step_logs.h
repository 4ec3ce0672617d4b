// A step's logs between the replicas that computed them and the running logs fit and evaluate
// report: merged into the model's loss tracker and compiled metrics, and packed into one tensor
// to travel (summed across workers, or returned by a parameter-server closure).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "weft/core/tensor.h"
#include "weft/nn/model.h"

namespace weft::nn::internal {

// Adds the replicas' partial logs of one step, in replica order (in a cluster of synchronous
// workers, every worker's too), to `loss_tracker` and the compiled metrics; returns the running
// logs (loss and each metric).
std::map<std::string, double> merge_logs(ModelImpl& m, metrics::Mean& loss_tracker,
                                         const std::vector<PartialLogs>& replicas);

// `logs` as one float64 vector: the loss's sums, then each compiled metric's, each as long as its
// state (zeros for one the logs lack); and back.
Tensor pack_partial_logs(const ModelImpl& m, const metrics::Mean& loss_tracker,
                         const PartialLogs& logs);
PartialLogs unpack_partial_logs(const ModelImpl& m, const metrics::Mean& loss_tracker,
                                const Tensor& packed);

}  // namespace weft::nn::internal
