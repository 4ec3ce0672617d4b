#include "weft/distribute/collective/tcp/internal/socket_mesh.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <thread>

#include "weft/core/errors.h"
#include "weft/distribute/collective/tcp/internal/handshake.h"

namespace weft::distribute::collective::internal {
namespace {

using std::chrono::milliseconds;
// How long an accepted connection has to complete its handshake; at most this many at once.
constexpr milliseconds kHandshakeTimeout{10000};
constexpr std::size_t kMaxPending = 64;

// An accepted connection during its handshake: the Hello, then the Proof, read as they come.
struct Pending {
  int fd;
  SocketMesh::Clock::time_point deadline;
  handshake::Nonce nonce;  // this side's
  handshake::Hello hello{};
  handshake::Proof proof{};
  std::size_t got = 0;  // bytes of hello then proof received
};

int poll_timeout(SocketMesh::Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - SocketMesh::Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
}

void set_options(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Reads or writes exactly `n` bytes on a blocking-with-deadline basis (the handshake).
bool io_all(int fd, void* p, std::size_t n, bool write, SocketMesh::Clock::time_point deadline) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    pollfd pfd{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
    if (::poll(&pfd, 1, poll_timeout(deadline)) <= 0) return false;
    ssize_t k = write ? ::send(fd, c, n, MSG_NOSIGNAL | MSG_DONTWAIT)
                      : ::recv(fd, c, n, MSG_DONTWAIT);
    if (k == 0 && !write) return false;
    if (k < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return false;
    }
    c += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

// "host:port" → a connected socket, retrying until the deadline (the peer may still be starting).
int connect_to(const std::string& address, SocketMesh::Clock::time_point deadline) {
  auto colon = address.rfind(':');
  std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) return -1;
  int fd = -1;
  while (SocketMesh::Clock::now() < deadline) {
    fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) break;
    if (fd >= 0) ::close(fd);
    fd = -1;
    std::this_thread::sleep_for(milliseconds(20));
  }
  ::freeaddrinfo(found);
  return fd;
}

// A listening socket on `host`, at a port of `ports` (the OS picks one when it is empty); its
// port in *port.
int listen_on(const std::string& host, SocketMesh::PortRange ports, int* port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  WEFT_CHECK(::getaddrinfo(host.c_str(), "0", &hints, &found) == 0 && found != nullptr,
             Unavailable)
      << "collectives: cannot resolve this task's host " << host;
  const bool any = ports.first == 0;
  int listener = -1, error = 0;
  for (int p = ports.first; listener < 0 && p <= (any ? 0 : ports.last); ++p) {
    auto* address = found->ai_addr;
    if (address->sa_family == AF_INET6) {
      reinterpret_cast<sockaddr_in6*>(address)->sin6_port = htons(static_cast<uint16_t>(p));
    } else {
      reinterpret_cast<sockaddr_in*>(address)->sin_port = htons(static_cast<uint16_t>(p));
    }
    listener = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener >= 0 && ::bind(listener, address, found->ai_addrlen) == 0 &&
        ::listen(listener, SOMAXCONN) == 0) {
      break;
    }
    error = errno;
    if (listener >= 0) ::close(listener);
    listener = -1;
  }
  ::freeaddrinfo(found);
  if (listener < 0) {
    std::string where = any ? std::string()
                            : " at any port of " + std::to_string(ports.first) + "-" +
                                  std::to_string(ports.last) + " (--data-ports)";
    WEFT_FAIL(Unavailable) << "collectives: cannot listen on " << host << where << ": "
                           << std::strerror(error);
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&bound), &len);
  *port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                      : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return listener;
}

}  // namespace

SocketMesh::SocketMesh(coordination::CoordinationClient& client, int rank, int size,
                       const std::string& host, const std::string& token,
                       const std::string& prefix, milliseconds timeout, PortRange ports)
    : rank_(rank), size_(size), fds_(static_cast<size_t>(size), -1) {
  abort_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  WEFT_CHECK(abort_fd_ >= 0, Unavailable) << "collectives: eventfd: " << std::strerror(errno);
  const auto deadline = Clock::now() + timeout;
  int listener = -1;
  int port = 0;
  try {
    listener = listen_on(host, ports, &port);
  } catch (...) {
    ::close(abort_fd_);
    throw;
  }
  std::vector<Pending> pending;  // accepted connections whose handshake is under way
  auto fail = [&](const std::string& why) {
    ::close(listener);
    for (const Pending& p : pending) ::close(p.fd);
    for (int& fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
    ::close(abort_fd_);
    throw Unavailable("collectives: " + why);
  };
  client.insert_key_value(prefix + "/" + std::to_string(rank), host + ":" + std::to_string(port));
  const std::string me = "rank " + std::to_string(rank_);

  // Connect to the lower ranks, proving this rank holds the token and checking that they do.
  for (int peer = 0; peer < rank_; ++peer) {
    const std::string address = client.get_key_value(prefix + "/" + std::to_string(peer), timeout);
    const std::string them = "rank " + std::to_string(peer) + " at " + address;
    int fd = connect_to(address, deadline);
    if (fd < 0) fail(me + " cannot connect to " + them);
    fds_[static_cast<size_t>(peer)] = fd;
    set_options(fd);
    handshake::Hello hello;
    hello.rank = static_cast<uint32_t>(rank_);
    hello.nonce = handshake::random_nonce();
    handshake::Challenge challenge;
    if (!io_all(fd, &hello, sizeof(hello), true, deadline) ||
        !io_all(fd, &challenge, sizeof(challenge), false, deadline)) {
      fail(me + " lost " + them + " while connecting (it refused the connection: is it a rank of "
                "this cluster, with the same cluster token?)");
    }
    auto expected = handshake::mac(token, handshake::Role::kAccepting, prefix, hello.rank,
                                   static_cast<uint32_t>(peer), hello.nonce, challenge.nonce);
    if (challenge.magic != handshake::kMagic || challenge.rank != static_cast<uint32_t>(peer) ||
        !handshake::same(challenge.proof, expected)) {
      fail(me + ": " + them + " did not prove that it holds the cluster token (another cluster's "
                "task, or not a weft rank, listens there)");
    }
    handshake::Proof proof{handshake::mac(token, handshake::Role::kConnecting, prefix, hello.rank,
                                          challenge.rank, hello.nonce, challenge.nonce)};
    char accepted = 0;
    if (!io_all(fd, &proof, sizeof(proof), true, deadline) ||
        !io_all(fd, &accepted, 1, false, deadline) || accepted != 1) {
      fail(me + ": " + them + " refused this rank's proof of the cluster token");
    }
  }

  // Accept the higher ranks, every handshake at once, each within its own deadline: a silent or
  // foreign connection is closed without holding up the others.
  int refused = 0;
  std::string last_refusal;
  auto refuse = [&](std::size_t i, const std::string& why) {
    ::close(pending[i].fd);
    pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
    ++refused;
    last_refusal = why;
  };
  for (int accepted = 0; accepted < size_ - 1 - rank_;) {
    auto now = Clock::now();
    for (std::size_t i = pending.size(); i-- > 0;) {
      if (pending[i].deadline <= now) refuse(i, "a connection sent no handshake in time");
    }
    if (now >= deadline) {
      std::string missing;
      for (int r = rank_ + 1; r < size_; ++r) {
        if (fds_[static_cast<size_t>(r)] < 0)
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
      std::string refusals;
      if (refused > 0) {
        refusals = "; " + std::to_string(refused) + " connection(s) refused, the last because " +
                   last_refusal;
      }
      fail(me + " waited " + std::to_string(timeout.count()) + " ms for rank " + missing +
           " to connect (did it start within the start-up timeout?)" + refusals);
    }
    std::vector<pollfd> polled{{listener, POLLIN, 0}};
    auto wake = deadline;
    for (const Pending& p : pending) {
      polled.push_back({p.fd, POLLIN, 0});
      wake = std::min(wake, p.deadline);
    }
    if (::poll(polled.data(), polled.size(), poll_timeout(wake)) <= 0) continue;
    for (std::size_t i = pending.size(); i-- > 0;) {
      if (polled[i + 1].revents == 0) continue;
      Pending& p = pending[i];
      bool proving = p.got >= sizeof(p.hello);
      char* into = proving ? reinterpret_cast<char*>(&p.proof) + (p.got - sizeof(p.hello))
                           : reinterpret_cast<char*>(&p.hello) + p.got;
      std::size_t want = proving ? sizeof(p.hello) + sizeof(p.proof) - p.got
                                 : sizeof(p.hello) - p.got;
      ssize_t k = ::recv(p.fd, into, want, MSG_DONTWAIT);
      if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
        refuse(i, "a connection closed during its handshake");
        continue;
      }
      if (k < 0) continue;
      p.got += static_cast<std::size_t>(k);
      if (!proving && p.got == sizeof(p.hello)) {
        const uint32_t peer = p.hello.rank;
        if (p.hello.magic != handshake::kMagic || peer <= static_cast<uint32_t>(rank_) ||
            peer >= static_cast<uint32_t>(size_) || fds_[peer] >= 0) {
          refuse(i, "a connection's hello named no rank still to connect");
          continue;
        }
        handshake::Challenge challenge;
        challenge.rank = static_cast<uint32_t>(rank_);
        challenge.nonce = p.nonce;
        challenge.proof = handshake::mac(token, handshake::Role::kAccepting, prefix, peer,
                                         challenge.rank, p.hello.nonce, p.nonce);
        if (!io_all(p.fd, &challenge, sizeof(challenge), true, p.deadline)) {
          refuse(i, "a connection did not take its challenge");
        }
      } else if (p.got == sizeof(p.hello) + sizeof(p.proof)) {
        const uint32_t peer = p.hello.rank;
        auto expected = handshake::mac(token, handshake::Role::kConnecting, prefix, peer,
                                       static_cast<uint32_t>(rank_), p.hello.nonce, p.nonce);
        char yes = 1;
        if (!handshake::same(p.proof.proof, expected) || fds_[peer] >= 0) {
          refuse(i, "a connection claiming rank " + std::to_string(peer) +
                        " answered its challenge without the cluster token");
        } else if (!io_all(p.fd, &yes, 1, true, p.deadline)) {
          refuse(i, "a connection closed during its handshake");
        } else {
          set_options(p.fd);
          fds_[peer] = p.fd;
          pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
          ++accepted;
        }
      }
    }
    if (polled[0].revents & POLLIN) {
      int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      if (pending.size() >= kMaxPending) refuse(0, "too many connections were handshaking");
      pending.push_back({fd, std::min(deadline, Clock::now() + kHandshakeTimeout),
                         handshake::random_nonce()});
    }
  }
  for (const Pending& p : pending) ::close(p.fd);
  ::close(listener);
}

SocketMesh::~SocketMesh() {
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
  if (abort_fd_ >= 0) ::close(abort_fd_);
}

void SocketMesh::abort() {
  uint64_t one = 1;
  (void)!::write(abort_fd_, &one, sizeof(one));
}

void SocketMesh::transfer(int to, const void* send, std::size_t send_bytes, int from, void* recv,
                          std::size_t recv_bytes, Clock::time_point deadline) {
  const char* out = static_cast<const char*>(send);
  char* in = static_cast<char*>(recv);
  std::size_t sent = to >= 0 ? 0 : send_bytes, got = from >= 0 ? 0 : recv_bytes;
  auto lost = [&](int peer, const std::string& why) {
    throw TransferError(TransferError::kLost, peer, why);
  };
  // Moves what the sockets take or give without waiting; false when nothing moved.
  auto step = [&]() {
    bool moved = false;
    if (sent < send_bytes) {
      ssize_t k = ::send(fds_[to], out + sent, send_bytes - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (k > 0) {
        sent += static_cast<std::size_t>(k);
        moved = true;
      } else if (k < 0 && errno != EAGAIN && errno != EINTR) {
        lost(to, std::string("send: ") + std::strerror(errno));
      }
    }
    if (got < recv_bytes) {
      ssize_t k = ::recv(fds_[from], in + got, recv_bytes - got, MSG_DONTWAIT);
      if (k > 0) {
        got += static_cast<std::size_t>(k);
        moved = true;
      } else if (k == 0) {
        lost(from, "the connection was closed");
      } else if (errno != EAGAIN && errno != EINTR) {
        lost(from, std::string("recv: ") + std::strerror(errno));
      }
    }
    return moved;
  };
  while (sent < send_bytes || got < recv_bytes) {
    if (step()) continue;
    pollfd fds[3];
    int n = 0;
    if (to >= 0 && to == from && sent < send_bytes && got < recv_bytes) {
      fds[n++] = {fds_[to], POLLIN | POLLOUT, 0};
    } else {
      if (sent < send_bytes) fds[n++] = {fds_[to], POLLOUT, 0};
      if (got < recv_bytes) fds[n++] = {fds_[from], POLLIN, 0};
    }
    fds[n++] = {abort_fd_, POLLIN, 0};
    int ready = ::poll(fds, static_cast<nfds_t>(n), poll_timeout(deadline));
    if (fds[n - 1].revents & POLLIN) throw TransferError(TransferError::kAborted, -1, "aborted");
    if (ready == 0) {
      throw TransferError(TransferError::kTimedOut, got < recv_bytes ? from : to, "timed out");
    }
  }
}

}  // namespace weft::distribute::collective::internal
