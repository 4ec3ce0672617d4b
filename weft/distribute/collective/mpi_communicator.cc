#include "weft/distribute/collective/mpi_communicator.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#include "weft/core/errors.h"
#include "weft/distribute/collective/internal/call_header.h"
#include "weft/distribute/collective/internal/reduce.h"

#if WEFT_WITH_MPI
#include <mpi.h>
#endif

namespace weft::distribute::collective {

int mpi_world_size_from_environment() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

#if WEFT_WITH_MPI

bool mpi_available() { return true; }

namespace {

using internal::Header;
using internal::Kind;

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case kFloat32: return MPI_FLOAT;
    case kFloat64: return MPI_DOUBLE;
    case kInt32: return MPI_INT32_T;
    case kInt64: return MPI_INT64_T;
    default: return MPI_UINT16_T;  // float16 and bfloat16 travel as 16-bit words
  }
}

// A user-defined MPI_Op per (16-bit float type, reduction), combining as weft does.
template <DType D, Reduction R>
void combine_16(void* in, void* inout, int* len, MPI_Datatype*) {
  internal::combine(inout, in, inout, static_cast<std::size_t>(*len), D, R);
}

MPI_Op mpi_op(DType dtype, Reduction op) {
  if (dtype == kFloat16 || dtype == kBFloat16) {
    // Made once, on first use (after MPI_Init), whichever thread comes first.
    struct HalfOps {
      MPI_Op ops[2][4] = {};
      HalfOps() {
        MPI_Op_create(&combine_16<kFloat16, Reduction::SUM>, 1, &ops[0][0]);
        MPI_Op_create(&combine_16<kFloat16, Reduction::MAX>, 1, &ops[0][2]);
        MPI_Op_create(&combine_16<kFloat16, Reduction::MIN>, 1, &ops[0][3]);
        MPI_Op_create(&combine_16<kBFloat16, Reduction::SUM>, 1, &ops[1][0]);
        MPI_Op_create(&combine_16<kBFloat16, Reduction::MAX>, 1, &ops[1][2]);
        MPI_Op_create(&combine_16<kBFloat16, Reduction::MIN>, 1, &ops[1][3]);
        ops[0][1] = ops[0][0];
        ops[1][1] = ops[1][0];
      }
    };
    static const HalfOps half;
    const auto& ops = half.ops;
    return ops[dtype == kBFloat16 ? 1 : 0][static_cast<int>(op)];
  }
  switch (op) {
    case Reduction::MAX: return MPI_MAX;
    case Reduction::MIN: return MPI_MIN;
    default: return MPI_SUM;
  }
}

}  // namespace

class MpiCommunicator::Impl {
 public:
  Impl() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      std::atexit([] {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Finalize();
      });
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::string task(int r) const { return "rank " + std::to_string(r) + " of mpirun"; }

  // Every rank's header against rank 0's: all fail alike on a disagreement.
  void check(Kind kind, const Shape& shape, DType dtype, uint32_t op) {
    Header h = internal::make_header(++sequence_, kind, shape, dtype, op, rank_);
    std::vector<Header> all(static_cast<size_t>(size_));
    MPI_Allgather(&h, sizeof(Header), MPI_BYTE, all.data(), sizeof(Header), MPI_BYTE,
                  MPI_COMM_WORLD);
    for (int r = 1; r < size_; ++r) {
      if (!all[r].agrees(all[0])) {
        throw InvalidArgument(
            internal::disagreement(all[0], all[r], [&](int k) { return task(k); }));
      }
    }
  }

  void all_reduce(void* data, const Shape& shape, DType dtype, Reduction op) {
    internal::check_collective_dtype(dtype, "all_reduce");
    check(Kind::kAllReduce, shape, dtype, static_cast<uint32_t>(op));
    std::size_t n = static_cast<std::size_t>(num_elements(shape));
    raw(data, n, dtype, op);
    if (op == Reduction::MEAN) internal::divide(data, n, dtype, size_);
  }

  void raw(void* data, std::size_t n, DType dtype, Reduction op) {
    MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), mpi_type(dtype), mpi_op(dtype, op),
                  MPI_COMM_WORLD);
  }

  void broadcast(void* data, const Shape& shape, DType dtype, int root) {
    internal::check_collective_dtype(dtype, "broadcast");
    WEFT_CHECK(root >= 0 && root < size_, InvalidArgument)
        << "broadcast: root " << root << " is not one of the " << size_ << " ranks";
    check(Kind::kBroadcast, shape, dtype, static_cast<uint32_t>(root));
    MPI_Bcast(data, static_cast<int>(num_elements(shape)), mpi_type(dtype), root, MPI_COMM_WORLD);
  }

  void all_gather(const void* in, void* out, const Shape& shape, DType dtype) {
    internal::check_collective_dtype(dtype, "all_gather");
    check(Kind::kAllGather, shape, dtype, 0);
    int n = static_cast<int>(num_elements(shape));
    MPI_Allgather(in, n, mpi_type(dtype), out, n, mpi_type(dtype), MPI_COMM_WORLD);
  }

  void reduce_scatter(const void* in, void* out, const Shape& shape, DType dtype, Reduction op) {
    internal::check_collective_dtype(dtype, "reduce_scatter");
    check(Kind::kReduceScatter, shape, dtype, static_cast<uint32_t>(op));
    int n = static_cast<int>(num_elements(shape));
    MPI_Reduce_scatter_block(in, out, n, mpi_type(dtype), mpi_op(dtype, op), MPI_COMM_WORLD);
    if (op == Reduction::MEAN) internal::divide(out, static_cast<std::size_t>(n), dtype, size_);
  }

  void barrier() {
    check(Kind::kBarrier, {}, kFloat32, 0);
  }

 private:
  int rank_ = 0;
  int size_ = 1;
  uint64_t sequence_ = 0;
};

MpiCommunicator::MpiCommunicator() : impl_(std::make_unique<Impl>()) {}
MpiCommunicator::~MpiCommunicator() = default;
int MpiCommunicator::rank() const { return impl_->rank(); }
int MpiCommunicator::size() const { return impl_->size(); }
std::string MpiCommunicator::task_of(int rank) const { return impl_->task(rank); }
void MpiCommunicator::all_reduce(void* data, const Shape& shape, DType dtype, Reduction op,
                                 const CommunicationOptions&) {
  impl_->all_reduce(data, shape, dtype, op);
}
void MpiCommunicator::broadcast(void* data, const Shape& shape, DType dtype, int root,
                                const CommunicationOptions&) {
  impl_->broadcast(data, shape, dtype, root);
}
void MpiCommunicator::all_gather(const void* in, void* out, const Shape& shape, DType dtype,
                                 const CommunicationOptions&) {
  impl_->all_gather(in, out, shape, dtype);
}
void MpiCommunicator::reduce_scatter(const void* in, void* out, const Shape& shape, DType dtype,
                                     Reduction op, const CommunicationOptions&) {
  impl_->reduce_scatter(in, out, shape, dtype, op);
}
void MpiCommunicator::barrier(const CommunicationOptions&) { impl_->barrier(); }
void MpiCommunicator::raw_all_reduce(void* data, std::size_t n, DType dtype) {
  impl_->raw(data, n, dtype, Reduction::SUM);
}

#else  // built without MPI

bool mpi_available() { return false; }

class MpiCommunicator::Impl {};

MpiCommunicator::MpiCommunicator() {
  WEFT_FAIL(FailedPrecondition) << "MpiCommunicator: this weft was built without MPI; configure "
                                   "with -DWEFT_WITH_MPI=ON (Debian: libopenmpi-dev)";
}
MpiCommunicator::~MpiCommunicator() = default;
int MpiCommunicator::rank() const { return 0; }
int MpiCommunicator::size() const { return 1; }
std::string MpiCommunicator::task_of(int) const { return ""; }
void MpiCommunicator::all_reduce(void*, const Shape&, DType, Reduction,
                                 const CommunicationOptions&) {}
void MpiCommunicator::broadcast(void*, const Shape&, DType, int, const CommunicationOptions&) {}
void MpiCommunicator::all_gather(const void*, void*, const Shape&, DType,
                                 const CommunicationOptions&) {}
void MpiCommunicator::reduce_scatter(const void*, void*, const Shape&, DType, Reduction,
                                     const CommunicationOptions&) {}
void MpiCommunicator::barrier(const CommunicationOptions&) {}
void MpiCommunicator::raw_all_reduce(void*, std::size_t, DType) {}

#endif

}  // namespace weft::distribute::collective
