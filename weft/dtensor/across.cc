// Collectives across clients for DTensor moves (internal/across.h), on the communicator of the
// cluster that initialize_accelerator_system joined.
#include "weft/dtensor/internal/across.h"

#include "weft/autodiff/tape.h"
#include "weft/distribute/cluster_connection.h"
#include "weft/distribute/collective/communicator.h"
#include "weft/dtensor/clients.h"
#include "weft/ops/shape_ops.h"

namespace weft::dtensor::internal {
namespace {

namespace collective = distribute::collective;

collective::Communicator& communicator() {
  collective::Communicator* comm = connection().communicator();
  WEFT_ASSERT(comm != nullptr);
  return *comm;
}

Shape stacked_shape(const Shape& shape, int64_t n) {
  Shape out{n};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

}  // namespace

Tensor all_stack(const Tensor& x) {
  collective::Communicator& comm = communicator();
  Tensor out;
  {
    autodiff::NoRecordScope quiet;  // the reshapes are not the op: all_stack records itself
    out = collective::all_gather(comm, reshape(x, stacked_shape(x.shape(), 1)));
  }
  if (autodiff::is_recording()) {
    const Shape shape = x.shape();
    autodiff::record("dtensor_all_stack", {x}, {out}, [&comm, shape](const autodiff::Grads& g) {
      return std::vector<Tensor>{reshape(collective::reduce_scatter(comm, g[0]), shape)};
    });
  }
  return out;
}

Tensor all_exchange(const Tensor& x) {
  collective::Communicator& comm = communicator();
  Tensor out = collective::all_to_all(comm, x);
  if (autodiff::is_recording()) {
    autodiff::record("dtensor_all_exchange", {x}, {out}, [&comm](const autodiff::Grads& g) {
      return std::vector<Tensor>{collective::all_to_all(comm, g[0])};
    });
  }
  return out;
}

Tensor sum_across(const Tensor& x) { return collective::all_reduce(communicator(), x); }

}  // namespace weft::dtensor::internal
