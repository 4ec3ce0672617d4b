#include "weft/distribute/collective/communicator.h"

#include "weft/core/errors.h"
#include "weft/distribute/collective/internal/reduce.h"
#include "weft/ops/cast.h"

namespace weft::distribute::collective {

const char* reduction_name(Reduction op) {
  switch (op) {
    case Reduction::SUM: return "sum";
    case Reduction::MEAN: return "mean";
    case Reduction::MAX: return "max";
    case Reduction::MIN: return "min";
  }
  return "?";
}

const char* implementation_name(Implementation implementation) {
  switch (implementation) {
    case Implementation::AUTO: return "AUTO";
    case Implementation::RECURSIVE_DOUBLING: return "RECURSIVE_DOUBLING";
    case Implementation::RING: return "RING";
    case Implementation::SHARED_MEMORY: return "SHARED_MEMORY";
    case Implementation::GLOO_RING: return "GLOO_RING";
    case Implementation::GLOO_HALVING_DOUBLING: return "GLOO_HALVING_DOUBLING";
  }
  return "?";
}

void Communicator::all_reduce_gathered(std::span<const Piece> pieces, void* out,
                                       const Shape& shape, DType dtype, Reduction op,
                                       const CommunicationOptions& options) {
  internal::gather_pieces(pieces, 0, static_cast<std::size_t>(num_elements(shape)),
                          dtype_size(dtype), out);
  all_reduce(out, shape, dtype, op, options);
}

Tensor all_reduce(Communicator& comm, const Tensor& value, Reduction op,
                  const CommunicationOptions& options) {
  Tensor out = copy(value);
  comm.all_reduce(out.raw_data(), out.shape(), out.dtype(), op, options);
  return out;
}

Tensor broadcast(Communicator& comm, const Tensor& value, int root,
                 const CommunicationOptions& options) {
  Tensor out = copy(value);
  comm.broadcast(out.raw_data(), out.shape(), out.dtype(), root, options);
  return out;
}

Tensor all_gather(Communicator& comm, const Tensor& value, const CommunicationOptions& options) {
  WEFT_CHECK(value.rank() >= 1, InvalidArgument)
      << "all_gather: the value must have an axis 0 to concatenate along, got a scalar";
  Tensor in = contiguous(value);
  Shape shape = value.shape();
  shape[0] *= comm.size();
  Tensor out = Tensor::empty(shape, value.dtype());
  comm.all_gather(in.raw_data(), out.raw_data(), value.shape(), value.dtype(), options);
  return out;
}

Tensor reduce_scatter(Communicator& comm, const Tensor& value, Reduction op,
                      const CommunicationOptions& options) {
  WEFT_CHECK(value.rank() >= 1 && value.dim(0) % comm.size() == 0, InvalidArgument)
      << "reduce_scatter: axis 0 of " << shape_str(value.shape()) << " must divide among "
      << comm.size() << " ranks";
  Tensor in = contiguous(value);
  Shape shape = value.shape();
  shape[0] /= comm.size();
  Tensor out = Tensor::empty(shape, value.dtype());
  comm.reduce_scatter(in.raw_data(), out.raw_data(), shape, value.dtype(), op, options);
  return out;
}

void barrier(Communicator& comm, const CommunicationOptions& options) { comm.barrier(options); }

}  // namespace weft::distribute::collective
