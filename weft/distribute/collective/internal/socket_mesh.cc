#include "weft/distribute/collective/internal/socket_mesh.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "weft/core/errors.h"

namespace weft::distribute::collective::internal {
namespace {

using std::chrono::milliseconds;
constexpr uint32_t kMagic = 0x77656674;  // "weft"

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

}  // namespace

SocketMesh::SocketMesh(coordination::CoordinationClient& client, int rank, int size,
                       const std::string& host, const std::string& token,
                       const std::string& prefix, milliseconds timeout)
    : rank_(rank), size_(size), fds_(static_cast<size_t>(size), -1) {
  abort_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  WEFT_CHECK(abort_fd_ >= 0, Unavailable) << "collectives: eventfd: " << std::strerror(errno);
  auto deadline = Clock::now() + timeout;
  // Listen on this task's host, at a port the OS picks.
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  WEFT_CHECK(::getaddrinfo(host.c_str(), "0", &hints, &found) == 0 && found != nullptr,
             Unavailable)
      << "collectives: cannot resolve this task's host " << host;
  int listener = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool listening = listener >= 0 && ::bind(listener, found->ai_addr, found->ai_addrlen) == 0 &&
                   ::listen(listener, size) == 0;
  ::freeaddrinfo(found);
  if (!listening) {
    if (listener >= 0) ::close(listener);
    WEFT_FAIL(Unavailable) << "collectives: cannot listen on " << host << ": "
                           << std::strerror(errno);
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&bound), &len);
  int port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  client.insert_key_value(prefix + "/" + std::to_string(rank), host + ":" + std::to_string(port));

  auto fail = [&](const std::string& why) {
    ::close(listener);
    for (int& fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
    ::close(abort_fd_);
    throw Unavailable("collectives: " + why);
  };
  // Connect to the lower ranks, saying who this is; accept the higher ones.
  for (int peer = 0; peer < rank_; ++peer) {
    std::string address = client.get_key_value(prefix + "/" + std::to_string(peer), timeout);
    int fd = connect_to(address, deadline);
    if (fd < 0) fail("rank " + std::to_string(rank_) + " cannot connect to rank " +
                     std::to_string(peer) + " at " + address);
    set_options(fd);
    std::string hello(12 + token.size(), '\0');
    uint32_t fields[3] = {kMagic, static_cast<uint32_t>(rank_), static_cast<uint32_t>(token.size())};
    std::memcpy(hello.data(), fields, 12);
    std::memcpy(hello.data() + 12, token.data(), token.size());
    fds_[static_cast<size_t>(peer)] = fd;
    if (!io_all(fd, hello.data(), hello.size(), true, deadline)) {
      fail("rank " + std::to_string(rank_) + " lost rank " + std::to_string(peer) +
           " while connecting");
    }
  }
  for (int accepted = 0; accepted < size_ - 1 - rank_;) {
    pollfd pfd{listener, POLLIN, 0};
    if (::poll(&pfd, 1, poll_timeout(deadline)) <= 0) {
      std::string missing;
      for (int r = rank_ + 1; r < size_; ++r) {
        if (fds_[static_cast<size_t>(r)] < 0)
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
      fail("rank " + std::to_string(rank_) + " waited " + std::to_string(timeout.count()) +
           " ms for rank " + missing + " to connect (did it start within the start-up timeout?)");
    }
    int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    uint32_t fields[3] = {};
    std::string theirs;
    bool ok = io_all(fd, fields, sizeof(fields), false, deadline) && fields[0] == kMagic &&
              fields[2] == token.size();
    if (ok) {
      theirs.resize(fields[2]);
      ok = io_all(fd, theirs.data(), theirs.size(), false, deadline) && theirs == token;
    }
    int peer = static_cast<int>(fields[1]);
    if (!ok || peer <= rank_ || peer >= size_ || fds_[static_cast<size_t>(peer)] >= 0) {
      ::close(fd);  // not one of this cluster's ranks: refused
      continue;
    }
    set_options(fd);
    fds_[static_cast<size_t>(peer)] = fd;
    ++accepted;
  }
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
