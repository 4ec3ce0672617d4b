// The Communicator between processes over TCP. weft's own algorithms (recursive doubling, the
// ring all-gather, the binomial broadcast) run on weft's own connections, one per pair of ranks,
// each opened by a challenge-response on the cluster token; Gloo's ring and halving-doubling
// (libgloo) run on Gloo's TCP transport, connected only when a call asks for them (`weft bench
// allreduce` compares them). Ranks find each other through the coordination service's key-value
// store (each publishes the address it listens on: its task's host, at a port the OS picks or
// one of TcpOptions' range), and every rank's failure reaches the others through it. (Gloo's
// transport holds data that arrives before its receive is posted in the socket until the next
// event, which on loopback cost 44 ms per all-reduce of 16-256 KiB; weft's connections read
// whatever arrives.)
//
//   coordination::CoordinationClient client("worker:1", "worker:0", chief_address, {.token = t});
//   client.connect(std::chrono::seconds(60));
//   collective::TcpCommunicator comm(client, {"worker:0", "worker:1"}, /*rank=*/1, "10.0.0.2");
//   weft::Tensor sum = collective::all_reduce(comm, partial);
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "weft/distribute/collective/communicator.h"
#include "weft/distribute/coordination/client.h"

namespace weft::distribute::collective {

struct TcpOptions {
  // Bounds each wait of a collective unless a call's options say otherwise.
  std::chrono::milliseconds timeout = kDefaultTimeout;
  // How long the rendezvous waits for the other ranks (0: `timeout`): tasks may start minutes
  // apart.
  std::chrono::milliseconds startup_timeout{0};
  // Keeps the keys of two communicators of one cluster apart.
  std::string name = "collectives";
  // The ports weft's connections may listen on, first to last (a firewall's range); 0: a port
  // the OS picks. Gloo's connections (GLOO_* implementations only) always take OS-picked ports.
  int first_port = 0, last_port = 0;
};

class TcpCommunicator : public Communicator {
 public:
  // Connects the ranks `tasks` (rank r is tasks[r]; this process is `rank`), listening on
  // `hostname`, each pair of ranks by one TCP connection opened by a challenge-response on the
  // cluster token (the token is not sent). Gloo's own mesh is connected only when a call first
  // asks for a GLOO_* implementation. `client` must outlive the communicator.
  TcpCommunicator(coordination::CoordinationClient& client, std::vector<std::string> tasks,
                  int rank, const std::string& hostname, TcpOptions options = {});
  ~TcpCommunicator() override;

  int rank() const override;
  int size() const override;
  std::string task_of(int rank) const override;
  void all_reduce(void* data, const Shape& shape, DType dtype, Reduction op,
                  const CommunicationOptions& options) override;
  void all_reduce_gathered(std::span<const Piece> pieces, void* out, const Shape& shape,
                           DType dtype, Reduction op, const CommunicationOptions& options) override;
  void broadcast(void* data, const Shape& shape, DType dtype, int root,
                 const CommunicationOptions& options) override;
  void all_gather(const void* in, void* out, const Shape& shape, DType dtype,
                  const CommunicationOptions& options) override;
  void reduce_scatter(const void* in, void* out, const Shape& shape, DType dtype, Reduction op,
                      const CommunicationOptions& options) override;
  void all_to_all(const void* in, void* out, const Shape& shape, DType dtype,
                  const CommunicationOptions& options) override;
  // The new communicator connects its ranks afresh (their keys under this one's name).
  std::unique_ptr<Communicator> split(int color, const CommunicationOptions& options) override;
  void barrier(const CommunicationOptions& options) override;
  uint64_t calls() const override;
  // "shared_memory" when every rank runs on this host and could map every other's memory, else
  // "tcp".
  std::string transport() const override;

  // The algorithm AUTO picks for an all-reduce of `bytes` on this communicator.
  Implementation auto_implementation(std::size_t bytes) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::distribute::collective
