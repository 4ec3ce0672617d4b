// weft's own connections between the ranks of a communicator: one TCP connection per pair of
// ranks, found through the coordination service's key-value store, each opened by a
// challenge-response proving that both sides hold the cluster token (handshake.h), which itself
// is never sent. The data that follows is not encrypted. transfer() sends to one peer while it
// receives from another (or the same), with a deadline, and ends at once when abort() is called
// from another thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "weft/distribute/coordination/client.h"

namespace weft::distribute::collective::internal {

// Why a transfer ended early; `peer` is the rank it was waiting for.
struct TransferError : std::runtime_error {
  enum Kind { kTimedOut, kAborted, kLost } kind;
  int peer;
  TransferError(Kind k, int p, const std::string& what) : std::runtime_error(what), kind(k), peer(p) {}
};

class SocketMesh {
 public:
  using Clock = std::chrono::steady_clock;
  // The ports a rank may listen on, first to last; {0, 0}: one the OS picks.
  struct PortRange {
    int first, last;
  };
  // Listens on `host` (at the first free port of `ports`), publishes the address under `prefix`,
  // and connects to every other rank. The handshakes of accepted connections run at once, each
  // closed unless it proves the token within 10 s. Unavailable when a rank cannot be reached
  // before `timeout`.
  SocketMesh(coordination::CoordinationClient& client, int rank, int size,
             const std::string& host, const std::string& token, const std::string& prefix,
             std::chrono::milliseconds timeout, PortRange ports = {0, 0});
  ~SocketMesh();
  SocketMesh(const SocketMesh&) = delete;
  SocketMesh& operator=(const SocketMesh&) = delete;

  // Sends send_bytes from `send` to rank `to` while it receives recv_bytes from rank `from` into
  // `recv` (a negative rank: that side is skipped); returns when both are done. Throws
  // TransferError at the deadline, on abort(), or when a peer's connection breaks.
  void transfer(int to, const void* send, std::size_t send_bytes, int from, void* recv,
                std::size_t recv_bytes, Clock::time_point deadline);
  // Ends every transfer in progress and every later one (any thread).
  void abort();

 private:
  int rank_;
  int size_;
  std::vector<int> fds_;  // fds_[r]: the connection to rank r (-1 for this rank)
  int abort_fd_ = -1;     // an eventfd: readable once aborted
};

}  // namespace weft::distribute::collective::internal
