#include "weft/distribute/collective/mpi/communicator.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "weft/core/errors.h"
#include "weft/distribute/collective/internal/call_header.h"
#include "weft/distribute/collective/internal/trace.h"
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

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
  }
  return "an unknown thread level";
}

// The most elements one MPI call carries (MPI's counts are ints): a larger buffer goes in pieces
// of this many. WEFT_MPI_MAX_COUNT lowers it, so that tests split small buffers.
std::size_t max_count() {
  static const std::size_t most = [] {
    const char* v = std::getenv("WEFT_MPI_MAX_COUNT");
    long long n = v != nullptr ? std::atoll(v) : 0;
    return n > 0 && n < INT_MAX ? static_cast<std::size_t>(n) : static_cast<std::size_t>(INT_MAX);
  }();
  return most;
}

// Calls fn(at, count) for consecutive pieces [at, at + count) of n elements, each at most
// max_count() long (once, with count 0, when n is 0).
template <typename F>
void in_pieces(std::size_t n, F fn) {
  std::size_t at = 0;
  do {
    std::size_t count = std::min(max_count(), n - at);
    fn(at, static_cast<int>(count));
    at += count;
  } while (at < n);
}

}  // namespace

class MpiCommunicator::Impl {
 public:
  Impl() {
    int initialized = 0, provided = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      std::atexit([] {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Finalize();
      });
    } else {
      MPI_Query_thread(&provided);
    }
    // weft calls MPI from the caller's thread and from its communication thread, one at a time.
    WEFT_CHECK(provided >= MPI_THREAD_SERIALIZED, FailedPrecondition)
        << "MpiCommunicator: MPI granted " << thread_level_name(provided)
        << ", and weft needs MPI_THREAD_SERIALIZED or more (it calls MPI from more than one "
           "thread, one at a time); "
        << (initialized ? "initialise MPI with MPI_Init_thread(MPI_THREAD_SERIALIZED) before "
                          "weft does, or let weft initialise it"
                        : "use an MPI library built with thread support");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  // A communicator MPI_Comm_split made, freed with this one.
  explicit Impl(MPI_Comm comm, std::string name) : comm_(comm), name_(std::move(name)) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~Impl() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_WORLD && !finalized) MPI_Comm_free(&comm_);
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  std::unique_ptr<Impl> split(int color) {
    internal::CollectiveTrace trace(name_, "mpi");
    check(trace, Kind::kSplit, {}, kInt32, 0);  // (the colors differ)
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_split(comm_, color, rank_, &sub);
    return std::make_unique<Impl>(
        sub, name_ + "/split" + std::to_string(splits_++) + "/" + std::to_string(color));
  }

  int rank() const { return rank_; }
  uint64_t calls() const { return sequence_.load(); }
  int size() const { return size_; }
  std::string task(int r) const { return "rank " + std::to_string(r) + " of mpirun"; }

  // Every rank's header against rank 0's: all fail alike on a disagreement. The exchange is the
  // call's wait in a trace.
  void check(internal::CollectiveTrace& trace, Kind kind, const Shape& shape, DType dtype,
             uint32_t op) {
    Header h = internal::make_header(++sequence_, kind, shape, dtype, op, rank_);
    trace.call(h);
    std::vector<Header> all(static_cast<size_t>(size_));
    MPI_Allgather(&h, sizeof(Header), MPI_BYTE, all.data(), sizeof(Header), MPI_BYTE,
                  comm_);
    internal::CollectiveTrace::arrived();
    for (int r = 1; r < size_; ++r) {
      if (!all[r].agrees(all[0])) {
        throw InvalidArgument(
            internal::disagreement(all[0], all[r], [&](int k) { return task(k); }));
      }
    }
  }

  void all_reduce(void* data, const Shape& shape, DType dtype, Reduction op) {
    internal::check_collective_dtype(dtype, "all_reduce");
    internal::CollectiveTrace trace(name_, "mpi");

    check(trace, Kind::kAllReduce, shape, dtype, static_cast<uint32_t>(op));
    std::size_t n = static_cast<std::size_t>(num_elements(shape));
    raw(data, n, dtype, op);
    if (op == Reduction::MEAN) internal::divide(data, n, dtype, size_);
  }

  void raw(void* data, std::size_t n, DType dtype, Reduction op) {
    char* bytes = static_cast<char*>(data);
    const std::size_t es = dtype_size(dtype);
    in_pieces(n, [&](std::size_t at, int count) {
      MPI_Allreduce(MPI_IN_PLACE, bytes + at * es, count, mpi_type(dtype), mpi_op(dtype, op),
                    comm_);
    });
  }

  void broadcast(void* data, const Shape& shape, DType dtype, int root) {
    internal::check_collective_dtype(dtype, "broadcast");
    WEFT_CHECK(root >= 0 && root < size_, InvalidArgument)
        << "broadcast: root " << root << " is not one of the " << size_ << " ranks";
    internal::CollectiveTrace trace(name_, "mpi");

    check(trace, Kind::kBroadcast, shape, dtype, static_cast<uint32_t>(root));
    char* bytes = static_cast<char*>(data);
    const std::size_t es = dtype_size(dtype);
    in_pieces(static_cast<std::size_t>(num_elements(shape)), [&](std::size_t at, int count) {
      MPI_Bcast(bytes + at * es, count, mpi_type(dtype), root, comm_);
    });
  }

  void all_gather(const void* in, void* out, const Shape& shape, DType dtype) {
    internal::check_collective_dtype(dtype, "all_gather");
    internal::CollectiveTrace trace(name_, "mpi");

    check(trace, Kind::kAllGather, shape, dtype, 0);
    const std::size_t n = static_cast<std::size_t>(num_elements(shape)), es = dtype_size(dtype);
    if (n <= max_count()) {
      MPI_Allgather(in, static_cast<int>(n), mpi_type(dtype), out, static_cast<int>(n),
                    mpi_type(dtype), comm_);
      return;
    }
    // Piece by piece: every rank's piece gathered, then put where its whole block goes.
    std::vector<char> pieces(static_cast<std::size_t>(size_) * max_count() * es);
    in_pieces(n, [&](std::size_t at, int count) {
      MPI_Allgather(static_cast<const char*>(in) + at * es, count, mpi_type(dtype), pieces.data(),
                    count, mpi_type(dtype), comm_);
      for (int r = 0; r < size_; ++r) {
        std::memcpy(static_cast<char*>(out) + (static_cast<std::size_t>(r) * n + at) * es,
                    pieces.data() + static_cast<std::size_t>(r) * count * es, count * es);
      }
    });
  }

  void all_to_all(const void* in, void* out, const Shape& shape, DType dtype) {
    internal::check_collective_dtype(dtype, "all_to_all");
    internal::CollectiveTrace trace(name_, "mpi");

    check(trace, Kind::kAllToAll, shape, dtype, 0);
    const std::size_t n = static_cast<std::size_t>(num_elements(shape)), es = dtype_size(dtype);
    if (n <= max_count()) {
      MPI_Alltoall(in, static_cast<int>(n), mpi_type(dtype), out, static_cast<int>(n),
                   mpi_type(dtype), comm_);
      return;
    }
    // Piece by piece: the same piece of every block laid side by side, then exchanged.
    std::vector<char> send(static_cast<std::size_t>(size_) * max_count() * es), got(send.size());
    in_pieces(n, [&](std::size_t at, int count) {
      for (int r = 0; r < size_; ++r) {
        std::memcpy(send.data() + static_cast<std::size_t>(r) * count * es,
                    static_cast<const char*>(in) + (static_cast<std::size_t>(r) * n + at) * es,
                    count * es);
      }
      MPI_Alltoall(send.data(), count, mpi_type(dtype), got.data(), count, mpi_type(dtype),
                   comm_);
      for (int r = 0; r < size_; ++r) {
        std::memcpy(static_cast<char*>(out) + (static_cast<std::size_t>(r) * n + at) * es,
                    got.data() + static_cast<std::size_t>(r) * count * es, count * es);
      }
    });
  }

  void reduce_scatter(const void* in, void* out, const Shape& shape, DType dtype, Reduction op) {
    internal::check_collective_dtype(dtype, "reduce_scatter");
    internal::CollectiveTrace trace(name_, "mpi");

    check(trace, Kind::kReduceScatter, shape, dtype, static_cast<uint32_t>(op));
    const std::size_t n = static_cast<std::size_t>(num_elements(shape)), es = dtype_size(dtype);
    if (n <= max_count()) {
      MPI_Reduce_scatter_block(in, out, static_cast<int>(n), mpi_type(dtype), mpi_op(dtype, op),
                               comm_);
    } else {
      // Piece by piece: the same piece of every rank's block laid side by side, then scattered.
      std::vector<char> pieces(static_cast<std::size_t>(size_) * max_count() * es);
      in_pieces(n, [&](std::size_t at, int count) {
        for (int r = 0; r < size_; ++r) {
          std::memcpy(pieces.data() + static_cast<std::size_t>(r) * count * es,
                      static_cast<const char*>(in) + (static_cast<std::size_t>(r) * n + at) * es,
                      count * es);
        }
        MPI_Reduce_scatter_block(pieces.data(), static_cast<char*>(out) + at * es, count,
                                 mpi_type(dtype), mpi_op(dtype, op), comm_);
      });
    }
    if (op == Reduction::MEAN) internal::divide(out, n, dtype, size_);
  }

  void barrier() {
    internal::CollectiveTrace trace(name_, "mpi");
    check(trace, Kind::kBarrier, {}, kFloat32, 0);
  }

 private:
  MPI_Comm comm_ = MPI_COMM_WORLD;
  int rank_ = 0;
  int size_ = 1;
  std::atomic<uint64_t> sequence_{0};
  std::string name_ = "mpi";  // ids of its calls in traces
  int splits_ = 0;
};

MpiCommunicator::MpiCommunicator() : impl_(std::make_unique<Impl>()) {}
MpiCommunicator::MpiCommunicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MpiCommunicator::~MpiCommunicator() = default;
std::unique_ptr<Communicator> MpiCommunicator::split(int color, const CommunicationOptions&) {
  return std::unique_ptr<Communicator>(new MpiCommunicator(impl_->split(color)));
}
int MpiCommunicator::rank() const { return impl_->rank(); }
uint64_t MpiCommunicator::calls() const { return impl_->calls(); }
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
void MpiCommunicator::all_to_all(const void* in, void* out, const Shape& shape, DType dtype,
                                 const CommunicationOptions&) {
  impl_->all_to_all(in, out, shape, dtype);
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
void MpiCommunicator::all_to_all(const void*, void*, const Shape&, DType,
                                 const CommunicationOptions&) {}
std::unique_ptr<Communicator> MpiCommunicator::split(int, const CommunicationOptions&) {
  return nullptr;
}
void MpiCommunicator::barrier(const CommunicationOptions&) {}
uint64_t MpiCommunicator::calls() const { return 0; }
void MpiCommunicator::raw_all_reduce(void*, std::size_t, DType) {}

#endif

}  // namespace weft::distribute::collective
