// Collectives between processes (DISTRIBUTED.md §3): a small Communicator interface and free
// functions with an options object, in the style of Gloo's allreduce(opts).
//
//   auto& comm = ...;  // e.g. TcpCommunicator (tcp/communicator.h), one per process
//   weft::Tensor total = collective::all_reduce(comm, partial, collective::Reduction::SUM);
//   weft::Tensor w0 = collective::broadcast(comm, w, /*root=*/0);
//
// Every rank makes the same calls in the same order. Each call carries its sequence number, kind,
// dtype and shape to its peers; ranks that disagree fail, naming both ranks and both shapes, and
// the failure reaches every rank of the cluster. Every wait has a deadline (timeout_seconds); a
// peer that dies is named within seconds.
//
// Sums are summed in one fixed tree, ((r0+r1)+(r2+r3))+..., when op determinism is on
// (weft::config::enable_op_determinism) and the ranks are a power of two: every rank gets the
// same bits, and the same bits as any other cut of the same micro-batches (DISTRIBUTED.md §2).
#pragma once

#include <chrono>
#include <memory>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/core/shape.h"
#include "weft/core/tensor.h"

namespace weft::distribute::collective {

enum class Reduction { SUM, MEAN, MAX, MIN };
const char* reduction_name(Reduction op);

// tf.distribute.experimental.CommunicationImplementation, with weft's algorithms. AUTO chooses by
// message size and number of ranks, from crossovers measured with `weft bench allreduce`.
enum class Implementation {
  AUTO,
  RECURSIVE_DOUBLING,     // log2(P) full exchanges: the fewest messages; the deterministic tree
  RING,                   // reduce-scatter then all-gather around the ranks: each rank sends and
                          // combines 2(P-1)/P of the data; large messages
  SHARED_MEMORY,          // ranks on one host: each copies its data into shared memory once and
                          // reduces every rank's from there (the fixed tree)
  GLOO_RING,              // Gloo's own ring, on Gloo's transport (for comparison)
  GLOO_HALVING_DOUBLING,  // Gloo's halving-doubling (float32, float64, int32, int64)
};
const char* implementation_name(Implementation implementation);

// How long any one wait of a collective may take when CommunicationOptions leave it at 0.
inline constexpr std::chrono::milliseconds kDefaultTimeout{30000};

// tf.distribute.experimental.CommunicationOptions.
struct CommunicationOptions {
  Implementation implementation = Implementation::AUTO;
  // Gradients are all-reduced in packs of about this many bytes (0: MultiWorkerMirroredStrategy's
  // measured 256 KiB during the backward pass, one pack per dtype after it).
  std::size_t bytes_per_pack = 0;
  // How long any one wait of a collective may take (0: the communicator's default).
  double timeout_seconds = 0;
};

// A run of one rank's elements, for all_reduce_gathered: `count` elements at `data` (null: zeros).
struct Piece {
  const void* data = nullptr;
  std::size_t count = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank r's task, for messages ("worker:1").
  virtual std::string task_of(int rank) const = 0;

  // In place, on a contiguous buffer of num_elements(shape) elements: the element-wise reduction
  // of every rank's buffer (MEAN: the sum divided by size()).
  virtual void all_reduce(void* data, const Shape& shape, DType dtype, Reduction op,
                          const CommunicationOptions& options) = 0;
  // The same on the concatenation of `pieces` (num_elements(shape) elements in all), the result
  // in `out`: what gathering the pieces into `out` and reducing it in place gives, without the
  // gathering copy where the path allows (shared memory reads the pieces directly); a piece may
  // lie in `out` only where it goes. A worker's gradients go this way, from where the backward
  // pass left them.
  virtual void all_reduce_gathered(std::span<const Piece> pieces, void* out, const Shape& shape,
                                   DType dtype, Reduction op, const CommunicationOptions& options);
  // In place: every rank gets root's buffer.
  virtual void broadcast(void* data, const Shape& shape, DType dtype, int root,
                         const CommunicationOptions& options) = 0;
  // `out` holds size() buffers of `shape`, rank r's at r.
  virtual void all_gather(const void* in, void* out, const Shape& shape, DType dtype,
                          const CommunicationOptions& options) = 0;
  // `in` holds size() blocks of `shape`; `out` gets this rank's block of their reduction.
  virtual void reduce_scatter(const void* in, void* out, const Shape& shape, DType dtype,
                              Reduction op, const CommunicationOptions& options) = 0;
  // `in` holds size() blocks of `shape`, block r for rank r; `out` gets size() blocks, block r
  // from rank r (MPI_Alltoall). The default gathers every rank's `in` and keeps what is this
  // rank's: (P - 1) times the data; TCP and MPI exchange the blocks pairwise.
  virtual void all_to_all(const void* in, void* out, const Shape& shape, DType dtype,
                          const CommunicationOptions& options);
  virtual void barrier(const CommunicationOptions& options) = 0;
  // MPI_Comm_split: every rank calls it; the ranks that pass the same `color` get a communicator
  // of their own, ranked as here (a sub-communicator over one dimension of a mesh). The default
  // fails (FailedPrecondition); TCP and MPI split.
  virtual std::unique_ptr<Communicator> split(int color, const CommunicationOptions& options);
  // The collective calls this rank has made so far (every rank makes the same ones): what a
  // step costs in messages, which on a network is latency more than bytes.
  virtual uint64_t calls() const = 0;
  // How the data of this rank's collectives travels: "shared_memory", "tcp" or "mpi".
  virtual std::string transport() const = 0;
};

// The same on tensors (any layout; the results are new tensors).
Tensor all_reduce(Communicator& comm, const Tensor& value, Reduction op = Reduction::SUM,
                  const CommunicationOptions& options = {});
Tensor broadcast(Communicator& comm, const Tensor& value, int root,
                 const CommunicationOptions& options = {});
// Concatenated along axis 0, in rank order (as tf.distribute's all_gather); the ranks' values may
// differ in length along axis 0 (not in the other axes or the dtype: InvalidArgument naming both
// ranks), and a rank may pass an undefined tensor for none (undefined on every rank: the result
// is undefined). `rows_of_rank`, when given, gets each rank's length.
Tensor all_gather(Communicator& comm, const Tensor& value, const CommunicationOptions& options = {},
                  std::vector<int64_t>* rows_of_rank = nullptr);
// value's axis 0 is cut into size() equal blocks, block r sent to rank r; the result holds the
// blocks every rank sent this one, in rank order along axis 0.
Tensor all_to_all(Communicator& comm, const Tensor& value,
                  const CommunicationOptions& options = {});
// value's axis 0 is cut into size() equal blocks; rank r gets block r of the reduction.
Tensor reduce_scatter(Communicator& comm, const Tensor& value, Reduction op = Reduction::SUM,
                      const CommunicationOptions& options = {});
void barrier(Communicator& comm, const CommunicationOptions& options = {});

}  // namespace weft::distribute::collective
