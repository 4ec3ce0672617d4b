// For tests: every TCP payload that crosses the loopback interface while a LoopbackCapture lives,
// read from a packet socket (AF_PACKET, as tcpdump does; needs CAP_NET_RAW, i.e. root), searched
// for byte strings as it arrives. A string split across two segments of one connection is found
// too. Nothing is stored but the counts.
//
//   ASSERT_EQ(weft::testing::use_private_loopback(), "");  // not the other tests' traffic
//   weft::testing::LoopbackCapture wire({token, "tfew"});
//   ... run the cluster ...
//   wire.stop();
//   EXPECT_EQ(wire.found(0), 0);  // the token never crossed
//   EXPECT_GT(wire.found(1), 0);  // while the mesh's handshakes did
#pragma once

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace weft::testing {

// Moves the calling thread, and the threads and processes it starts from now on, into a network
// namespace of its own with its loopback interface up (127.0.0.1 and ::1). A capture made there
// sees this test's traffic alone: ctest runs other tests beside it, and their collectives send
// the same handshakes on the machine's loopback. Needs CAP_SYS_ADMIN (root); returns why not, or
// "" when done. The namespace goes away with the test's process.
inline std::string use_private_loopback() {
  if (::unshare(CLONE_NEWNET) != 0)
    return std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::string("socket(AF_INET): ") + std::strerror(errno);
  ifreq lo{};
  std::strncpy(lo.ifr_name, "lo", IFNAMSIZ - 1);
  std::string error;
  if (::ioctl(fd, SIOCGIFFLAGS, &lo) != 0) {
    error = std::string("SIOCGIFFLAGS lo: ") + std::strerror(errno);
  } else {
    lo.ifr_flags = static_cast<short>(lo.ifr_flags | IFF_UP);
    if (::ioctl(fd, SIOCSIFFLAGS, &lo) != 0) {
      error = std::string("SIOCSIFFLAGS lo up: ") + std::strerror(errno);
    }
  }
  ::close(fd);
  return error;
}

class LoopbackCapture {
 public:
  // Starts capturing; error() says why not (no CAP_NET_RAW, say) when it could not.
  explicit LoopbackCapture(std::vector<std::string> needles)
      : needles_(std::move(needles)), found_(needles_.size(), 0), ports_(needles_.size()) {
    fd_ = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
    if (fd_ < 0) {
      error_ = std::string("socket(AF_PACKET): ") + std::strerror(errno);
      return;
    }
    int size = 64 << 20;  // room for bursts while the reader is off the core
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size));
    sockaddr_ll at{};
    at.sll_family = AF_PACKET;
    at.sll_protocol = htons(ETH_P_ALL);
    at.sll_ifindex = static_cast<int>(::if_nametoindex("lo"));
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&at), sizeof(at)) != 0) {
      error_ = std::string("bind to lo: ") + std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
      return;
    }
    reader_ = std::thread([this] { read(); });
  }
  ~LoopbackCapture() { stop(); }
  LoopbackCapture(const LoopbackCapture&) = delete;
  LoopbackCapture& operator=(const LoopbackCapture&) = delete;

  const std::string& error() const { return error_; }
  // Ends the capture (reading what the socket still holds first).
  void stop() {
    if (fd_ < 0) return;
    stopping_ = true;
    reader_.join();
    tpacket_stats stats{};
    socklen_t len = sizeof(stats);
    if (::getsockopt(fd_, SOL_PACKET, PACKET_STATISTICS, &stats, &len) == 0) {
      dropped_ += stats.tp_drops;
    }
    ::close(fd_);
    fd_ = -1;
  }
  // How many times needle i crossed the wire; TCP payload bytes seen; packets the kernel dropped
  // before the capture read them (then a count may be short).
  int found(std::size_t i) const { return found_[i]; }
  // The destination ports of the segments in which needle i was found.
  const std::set<int>& ports(std::size_t i) const { return ports_[i]; }
  uint64_t payload_bytes() const { return bytes_; }
  uint64_t dropped() const { return dropped_; }

 private:
  void read() {
    std::vector<unsigned char> packet(1 << 17);
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) {
        if (stopping_) return;
        continue;
      }
      sockaddr_ll from{};
      socklen_t len = sizeof(from);
      ssize_t n = ::recvfrom(fd_, packet.data(), packet.size(), MSG_DONTWAIT,
                             reinterpret_cast<sockaddr*>(&from), &len);
      // Each loopback packet is seen leaving and arriving: count it once.
      if (n <= 0 || from.sll_pkttype == PACKET_OUTGOING) continue;
      tcp_payload(packet.data(), static_cast<std::size_t>(n));
    }
  }

  // A header of type T at p, copied out (headers in a packet need not be aligned for T).
  template <typename T>
  static T header_at(const unsigned char* p) {
    T h;
    std::memcpy(&h, p, sizeof(T));
    return h;
  }

  void tcp_payload(const unsigned char* p, std::size_t n) {
    if (n < sizeof(ether_header)) return;
    uint16_t type = ntohs(header_at<ether_header>(p).ether_type);
    p += sizeof(ether_header);
    n -= sizeof(ether_header);
    std::size_t ip_header = 0;
    int protocol = 0;
    if (type == ETHERTYPE_IP && n >= sizeof(iphdr)) {
      const auto ip = header_at<iphdr>(p);
      ip_header = ip.ihl * 4u;
      protocol = ip.protocol;
      n = std::min<std::size_t>(n, ntohs(ip.tot_len));
    } else if (type == ETHERTYPE_IPV6 && n >= sizeof(ip6_hdr)) {
      const auto ip = header_at<ip6_hdr>(p);
      ip_header = sizeof(ip6_hdr);
      protocol = ip.ip6_nxt;  // weft's connections carry no extension headers
      n = std::min<std::size_t>(n, sizeof(ip6_hdr) + ntohs(ip.ip6_plen));
    }
    if (protocol != IPPROTO_TCP || n < ip_header + sizeof(tcphdr)) return;
    const auto tcp = header_at<tcphdr>(p + ip_header);
    std::size_t start = ip_header + tcp.doff * 4u;
    if (start >= n) return;
    bytes_ += n - start;
    // The end of this connection's last segment, then this one: finds a needle split between.
    // (On loopback the two ports name a connection.)
    std::string& tail = tails_[{tcp.source, tcp.dest}];
    std::string text = tail + std::string(reinterpret_cast<const char*>(p + start), n - start);
    std::size_t longest = 0;
    for (std::size_t i = 0; i < needles_.size(); ++i) {
      const std::string& needle = needles_[i];
      longest = std::max(longest, needle.size());
      for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
        if (at + needle.size() > tail.size()) {  // not wholly in the last segment
          ++found_[i];
          ports_[i].insert(ntohs(tcp.dest));
        }
      }
    }
    std::size_t keep = longest > 0 ? longest - 1 : 0;
    tail = text.substr(text.size() > keep ? text.size() - keep : 0);
  }

  std::vector<std::string> needles_;
  std::vector<int> found_;
  std::vector<std::set<int>> ports_;
  std::map<std::pair<uint16_t, uint16_t>, std::string> tails_;
  uint64_t bytes_ = 0, dropped_ = 0;
  int fd_ = -1;
  std::string error_;
  std::atomic<bool> stopping_{false};
  std::thread reader_;
};

}  // namespace weft::testing
