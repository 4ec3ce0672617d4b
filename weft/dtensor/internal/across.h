// The one place where a DTensor's data crosses processes. A mesh across clients numbers client k's
// devices after client k - 1's, so a group of devices along a mesh dimension holds a contiguous
// run of its members on each client; a move over such a group is local work on the members this
// client holds (the same work as in one process), then one of these collectives over the clients,
// then the same work again on the clients' results, over `comm`: the communicator of the clients
// that hold the group (dtensor::internal::communicator_along). Every client makes the same calls
// in the same order (the moves are planned from layouts, never from which tensors happen to be
// shared).
#pragma once

#include "weft/core/tensor.h"
#include "weft/distribute/collective/communicator.h"

namespace weft::dtensor::internal {

// Every client's `x` (the same shape and dtype on each), stacked along a new axis 0 in client
// order. Recorded on the tape: its gradient is the reduce-scatter of the output's gradients (each
// client's x receives the sum over the clients of their gradients of its slice).
Tensor all_stack(distribute::collective::Communicator& comm, const Tensor& x);

// x [clients, ...]: client c gets x[me] of every client, stacked in client order (an all-to-all).
// Recorded on the tape: its gradient is the same exchange of the output's gradients.
Tensor all_exchange(distribute::collective::Communicator& comm, const Tensor& x);

// The clients' sum of `x`, in the communicator's fixed order; not recorded (the tape's last step:
// the gradient of a source that several clients hold).
Tensor sum_across(distribute::collective::Communicator& comm, const Tensor& x);

}  // namespace weft::dtensor::internal
