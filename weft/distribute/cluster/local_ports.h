// Ports for a cluster whose tasks all run on this host (`weft launch`, tests):
//
//   std::vector<int> ports = weft::distribute::unused_local_ports(2);  // two different ports
#pragma once

#include <vector>

namespace weft::distribute {

// `count` different ports on 127.0.0.1 that the OS picked, all free when this returns (each task
// binds its own moments later). The sockets are held until every port is picked, so the OS
// cannot hand out the same port twice. Unavailable when the OS gives none.
std::vector<int> unused_local_ports(int count);

}  // namespace weft::distribute
