// The Communicator over MPI (OpenMPI, `libopenmpi-dev`), built when weft is configured with
// -DWEFT_WITH_MPI=ON (the default when MPI is found). Under `mpirun -np N`, MPI's ranks are the
// workers: MultiWorkerMirroredStrategy uses it when there is no TF_CONFIG, and
// `weft bench allreduce` measures MPI_Allreduce beside weft's own algorithms.
//
//   // mpirun -np 2 ./train
//   if (auto comm = weft::distribute::collective::MpiCommunicator::from_environment()) ...
//
// Buffers of more than INT_MAX elements (MPI's counts are ints) go in pieces. MPI must grant
// MPI_THREAD_SERIALIZED or more (weft initialises it so unless the program already has).
//
// MPI has no deadlines: a rank that stops makes the others wait until mpirun ends the job (it
// does when any rank exits with an error). Every call still carries its sequence number, kind,
// dtype and shape, checked across ranks (one small all-gather), so mismatched calls fail naming
// both ranks and shapes.
#pragma once

#include <memory>
#include <string>

#include "weft/distribute/collective/communicator.h"

namespace weft::distribute::collective {

// Whether this weft was built with MPI.
bool mpi_available();
// The number of ranks mpirun (OpenMPI or MPICH) started, from its environment; 0 when not run
// under mpirun.
int mpi_world_size_from_environment();

class MpiCommunicator : public Communicator {
 public:
  // Initialises MPI (serialized threads) unless it already is; MPI_COMM_WORLD's ranks.
  // FailedPrecondition when weft was built without MPI.
  MpiCommunicator();
  ~MpiCommunicator() override;

  int rank() const override;
  int size() const override;
  std::string task_of(int rank) const override;
  void all_reduce(void* data, const Shape& shape, DType dtype, Reduction op,
                  const CommunicationOptions& options) override;
  void broadcast(void* data, const Shape& shape, DType dtype, int root,
                 const CommunicationOptions& options) override;
  void all_gather(const void* in, void* out, const Shape& shape, DType dtype,
                  const CommunicationOptions& options) override;
  void reduce_scatter(const void* in, void* out, const Shape& shape, DType dtype, Reduction op,
                      const CommunicationOptions& options) override;
  void all_to_all(const void* in, void* out, const Shape& shape, DType dtype,
                  const CommunicationOptions& options) override;
  void barrier(const CommunicationOptions& options) override;
  // MPI_Comm_split.
  std::unique_ptr<Communicator> split(int color, const CommunicationOptions& options) override;
  uint64_t calls() const override;
  std::string transport() const override { return "mpi"; }

  // MPI_Allreduce itself, in place, without weft's consistency check (the benchmark's reference).
  void raw_all_reduce(void* data, std::size_t n, DType dtype);

 private:
  class Impl;
  explicit MpiCommunicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::distribute::collective
