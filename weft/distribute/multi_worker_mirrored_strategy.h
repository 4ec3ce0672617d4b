// MultiWorkerMirroredStrategy (tf.distribute.MultiWorkerMirroredStrategy): synchronous training
// across processes and hosts. Every process runs the same program and learns its role from
// TF_CONFIG; each runs `replicas_per_worker` replicas on threads, and gradients meet in an
// all-reduce across the cluster (weft/distribute/collective). The chief (the "chief" task, else
// worker 0) serves the coordination service the others register with; a task that fails is
// named to every other task, whose training then stops with that error.
//
//   // TF_CONFIG='{"cluster": {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"]},
//   //             "task": {"type": "worker", "index": 0}}'   WEFT_CLUSTER_TOKEN=<same on all>
//   weft::distribute::MultiWorkerMirroredStrategy strategy;
//   { auto scope = strategy.scope(); model = build_model(); model.compile(...); }
//   model.fit(train_ds, {.epochs = 3});   // each global batch cut among all workers' replicas
//
// Without TF_CONFIG it is one worker (its local replicas only), unless it was started by
// `mpirun -np N` and weft was built with MPI: then MPI's ranks are the workers (rank 0 the chief)
// and the collectives are MPI's; or by `srun -n N`: then the step's tasks are the workers
// (SlurmClusterResolver, cluster/slurm.h). Variables made in scope() start with the chief's
// values (a broadcast), so every worker holds the same weights throughout.
#pragma once

#include <chrono>
#include <string>

#include "weft/distribute/cluster/slurm.h"
#include "weft/distribute/cluster/tf_config.h"
#include "weft/distribute/collective/communicator.h"
#include "weft/distribute/coordination/options.h"
#include "weft/distribute/strategy.h"

namespace weft::distribute {

struct MultiWorkerOptions {
  // Replicas on threads in each worker, each with its share of the process's cores.
  int replicas_per_worker = 1;
  // How gradients are all-reduced (implementation, pack size, each wait's timeout: 30 s unless
  // set).
  collective::CommunicationOptions communication;
  // fit's training steps all-reduce the gradients in packs of communication.bytes_per_pack
  // (0: 256 KiB) while the backward pass still runs, rather than all at once after it.
  bool overlap_all_reduce = true;
  // The control plane; an empty token is read from WEFT_CLUSTER_TOKEN.
  coordination::CoordinationOptions coordination;
  // How long a task waits at start for the chief's service and the other tasks (their
  // registration and the collectives' rendezvous): pods of a cluster may start minutes apart.
  std::chrono::milliseconds startup_timeout{std::chrono::minutes(10)};
  // The ports the collectives' connections listen on, first to last (a firewall's range; each
  // worker takes one); 0: a port the OS picks.
  int first_data_port = 0, last_data_port = 0;
};

class MultiWorkerMirroredStrategy : public Strategy {
 public:
  // The cluster from TF_CONFIG when it is set; else mpirun's ranks; else the Slurm job step's
  // tasks (SlurmClusterResolver); else one process.
  explicit MultiWorkerMirroredStrategy(MultiWorkerOptions options = {});
  // The cluster `resolver` describes (TFConfigClusterResolver, SlurmClusterResolver).
  MultiWorkerMirroredStrategy(const cluster_resolver::ClusterResolver& resolver,
                              MultiWorkerOptions options = {});

  int num_workers() const;
  // This process's rank among the workers (the chief is 0).
  int worker_index() const;
  bool is_chief() const;
  // This process's task ("worker:1"; "worker:0" in a single process).
  std::string task() const;
  // Tells every other task that this one failed with `message` (training code calls it when it
  // fails outside strategy.run, fit, evaluate and predict, which report their own failures).
  void report_error(const std::string& message) const;
  // The collective calls this worker has made across the workers so far (0 in a single
  // process): a training step makes one per gradient pack, one for the variable updates of its
  // layers (BatchNormalization's moving statistics) and one for its logs.
  uint64_t collective_calls() const;
  // How the workers' collectives travel: "shared_memory" (every worker on this host, sharing
  // /dev/shm), "tcp", "mpi" (under mpirun), or "none" in a single process.
  std::string transport() const;
};

}  // namespace weft::distribute
