#include "weft/distribute/cluster/local_ports.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "weft/core/errors.h"

namespace weft::distribute {

std::vector<int> unused_local_ports(int count) {
  std::vector<int> fds;
  std::vector<int> ports;
  std::string failure;
  for (int i = 0; i < count; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      failure = std::string("socket: ") + std::strerror(errno);
      break;
    }
    fds.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      failure = std::strerror(errno);
      break;
    }
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) ::close(fd);
  WEFT_CHECK(failure.empty(), Unavailable)
      << "cannot pick " << count << " ports on 127.0.0.1: " << failure;
  return ports;
}

}  // namespace weft::distribute
