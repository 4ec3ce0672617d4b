// Collectives across clients for DTensor moves (internal/across.h), on the communicator of the
// clients a group of devices reaches (dtensor::internal::communicator_along).
#include "weft/dtensor/internal/across.h"

#include "weft/autodiff/tape.h"
#include "weft/distribute/collective/communicator.h"
#include "weft/ops/shape_ops.h"

namespace weft::dtensor::internal {
namespace {

namespace collective = distribute::collective;

Shape stacked_shape(const Shape& shape, int64_t n) {
  Shape out{n};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

}  // namespace

Tensor all_stack(collective::Communicator& comm, const Tensor& x) {
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

Tensor all_exchange(collective::Communicator& comm, const Tensor& x) {
  Tensor out = collective::all_to_all(comm, x);
  if (autodiff::is_recording()) {
    autodiff::record("dtensor_all_exchange", {x}, {out}, [&comm](const autodiff::Grads& g) {
      return std::vector<Tensor>{collective::all_to_all(comm, g[0])};
    });
  }
  return out;
}

Tensor sum_across(collective::Communicator& comm, const Tensor& x) {
  return collective::all_reduce(comm, x);
}

}  // namespace weft::dtensor::internal
