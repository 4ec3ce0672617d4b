#include "weft/distribute/cluster/local_ports.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "weft/core/errors.h"

namespace weft::distribute {

ReservedLocalPorts::ReservedLocalPorts(int count) {
  std::string failure;
  for (int i = 0; i < count; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      failure = std::string("socket: ") + std::strerror(errno);
      break;
    }
    fds_.push_back(fd);
    // The port is held, not served: bound without listen(), shared only with a socket of this
    // user that also sets SO_REUSEPORT (the task's own listener).
    int on = 1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0 ||
        ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      failure = std::strerror(errno);
      break;
    }
    ports_.push_back(ntohs(addr.sin_port));
  }
  if (!failure.empty()) {
    for (int fd : fds_) ::close(fd);  // the destructor does not run for a constructor that throws
    WEFT_FAIL(Unavailable) << "cannot reserve " << count << " ports on 127.0.0.1: " << failure;
  }
}

ReservedLocalPorts::~ReservedLocalPorts() {
  for (int fd : fds_) ::close(fd);
}

std::string ReservedLocalPorts::address(int i) const {
  return "127.0.0.1:" + std::to_string(ports_.at(static_cast<size_t>(i)));
}

}  // namespace weft::distribute
