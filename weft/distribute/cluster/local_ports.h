// Ports on 127.0.0.1 for a cluster whose tasks all run on this host (`weft launch`, tests), held
// for the tasks until they have bound them:
//
//   weft::distribute::ReservedLocalPorts ports(2);  // two different ports the OS picked
//   ports.address(0);  // "127.0.0.1:40123": write it into TF_CONFIG, start the tasks
//
// Each port stays bound, not listening, to a socket with SO_REUSEPORT as long as the object
// lives. Linux then never hands the port out to a port-0 bind or an outgoing connection, and
// refuses it to a bind without SO_REUSEPORT or by another user; the task it is meant for binds it
// with SO_REUSEPORT and listens, as gRPC servers do by default on Linux (the coordination service
// asks for it explicitly). So no other process can take a port between its choice and the task's
// bind, and every connection to it reaches the task's listener: a socket that does not listen
// receives none. Keep the object until the tasks have bound their ports (`weft launch` keeps it
// until its workers exit). The sockets are close-on-exec: child processes do not inherit them.
#pragma once

#include <string>
#include <vector>

namespace weft::distribute {

class ReservedLocalPorts {
 public:
  // Reserves `count` different ports on 127.0.0.1. Unavailable when the OS gives none.
  explicit ReservedLocalPorts(int count);
  // Releases them.
  ~ReservedLocalPorts();
  ReservedLocalPorts(const ReservedLocalPorts&) = delete;
  ReservedLocalPorts& operator=(const ReservedLocalPorts&) = delete;

  const std::vector<int>& ports() const { return ports_; }
  // "127.0.0.1:<port>" of the i-th port.
  std::string address(int i) const;

 private:
  std::vector<int> fds_;
  std::vector<int> ports_;
};

}  // namespace weft::distribute
