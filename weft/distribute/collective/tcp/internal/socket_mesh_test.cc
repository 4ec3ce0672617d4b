// The mesh's handshake, played against real SocketMesh ranks over 127.0.0.1 by the test itself:
// a connection that proves no token, or replays a proof made for another exchange, is refused;
// a silent one does not hold up the ranks; a listener that cannot prove the token is not trusted.
#include "weft/distribute/collective/tcp/internal/socket_mesh.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <thread>
#include <utility>

#include "weft/core/errors.h"
#include "weft/distribute/collective/tcp/internal/handshake.h"
#include "weft/distribute/coordination/service.h"

namespace weft::distribute::collective::internal {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

constexpr const char* kToken = "the cluster's token: 0123456789abcdef";
constexpr const char* kMesh = "test/weft";

struct Cluster {
  explicit Cluster(int n) {
    coordination::CoordinationOptions o;
    o.token = kToken;
    std::vector<std::string> tasks;
    for (int i = 0; i < n; ++i) tasks.push_back("worker:" + std::to_string(i));
    service = std::make_unique<coordination::CoordinationService>("127.0.0.1:0", tasks, o);
    for (const auto& t : tasks) {
      clients.push_back(std::make_unique<coordination::CoordinationClient>(
          t, "worker:0", service->address(), o));
      clients.back()->connect(milliseconds(10000));
    }
  }
  // Rank `rank`'s mesh, built on another thread.
  std::future<std::unique_ptr<SocketMesh>> start(int rank, milliseconds timeout) {
    return std::async(std::launch::async, [this, rank, timeout] {
      return std::make_unique<SocketMesh>(*clients[static_cast<size_t>(rank)], rank,
                                          static_cast<int>(clients.size()), "127.0.0.1", kToken,
                                          kMesh, timeout);
    });
  }
  std::unique_ptr<coordination::CoordinationService> service;
  std::vector<std::unique_ptr<coordination::CoordinationClient>> clients;
};

// A raw TCP connection to "127.0.0.1:port".
int dial(const std::string& address) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&at), sizeof(at)), 0) << address;
  return fd;
}

// A socket listening on 127.0.0.1 at a port the OS picked, and the port.
std::pair<int, int> listen_on_loopback() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof(at)), 0);
  EXPECT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof(at);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&at), &len);
  return {fd, ntohs(at.sin_port)};
}

// Reads exactly n bytes within 5 s; false if the connection ends first.
bool read_all(int fd, void* p, std::size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, 5000) <= 0) return false;
    ssize_t k = ::recv(fd, c, n, 0);
    if (k <= 0) return false;
    c += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

TEST(Handshake, AProofAnswersOneExchangeOfOneMeshOnly) {
  const handshake::Nonce a = handshake::random_nonce(), b = handshake::random_nonce();
  EXPECT_NE(a, b);
  using handshake::Role;
  const handshake::Mac m = handshake::mac(kToken, Role::kConnecting, kMesh, 1, 0, a, b);
  EXPECT_TRUE(handshake::same(m, handshake::mac(kToken, Role::kConnecting, kMesh, 1, 0, a, b)));
  for (const handshake::Mac& other : {
           handshake::mac("another token", Role::kConnecting, kMesh, 1, 0, a, b),
           handshake::mac(kToken, Role::kAccepting, kMesh, 1, 0, a, b),
           handshake::mac(kToken, Role::kConnecting, "other/weft", 1, 0, a, b),
           handshake::mac(kToken, Role::kConnecting, kMesh, 2, 0, a, b),
           handshake::mac(kToken, Role::kConnecting, kMesh, 1, 0, b, a),
       }) {
    EXPECT_FALSE(handshake::same(m, other));
  }
}

// While rank 0 waits for rank 1, the test opens a silent connection, one whose proof is made
// with another token, and one that replays a proof made for an earlier exchange; then rank 1
// starts. The three are refused (closed without the acceptance byte), and the silent one does
// not hold up the mesh, which forms at once and carries data.
TEST(SocketMesh, RefusesWrongAndReplayedProofsAndIsNotHeldUpByASilentConnection) {
  Cluster cluster(2);
  auto rank0 = cluster.start(0, milliseconds(20000));
  const std::string address =
      cluster.clients[1]->get_key_value(std::string(kMesh) + "/0", milliseconds(10000));
  using handshake::Role;
  // Says hello as rank 1; returns rank 0's challenge.
  auto hello = [&](int fd, const handshake::Nonce& nonce) {
    handshake::Hello h;
    h.rank = 1;
    h.nonce = nonce;
    EXPECT_EQ(::send(fd, &h, sizeof(h), MSG_NOSIGNAL), static_cast<ssize_t>(sizeof(h)));
    handshake::Challenge c;
    EXPECT_TRUE(read_all(fd, &c, sizeof(c)));
    // Rank 0 proves it holds the token.
    EXPECT_TRUE(handshake::same(c.proof, handshake::mac(kToken, Role::kAccepting, kMesh, 1, 0,
                                                        nonce, c.nonce)));
    return c;
  };
  auto refused = [&](int fd, const handshake::Mac& proof) {
    EXPECT_EQ(::send(fd, proof.data(), proof.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(proof.size()));
    char accepted = 0;
    bool answered = read_all(fd, &accepted, 1);
    ::close(fd);
    return !answered;
  };
  int silent = dial(address);

  const handshake::Nonce mine = handshake::random_nonce();
  int wrong = dial(address);
  handshake::Challenge c = hello(wrong, mine);
  EXPECT_TRUE(refused(wrong, handshake::mac("not the token", Role::kConnecting, kMesh, 1, 0, mine,
                                            c.nonce)));
  // A proof valid for one exchange (recorded, say, from an earlier connection), replayed in a
  // new one with the same hello: rank 0's new nonce makes it worthless.
  int first = dial(address);
  handshake::Challenge earlier = hello(first, mine);
  const handshake::Mac recorded =
      handshake::mac(kToken, Role::kConnecting, kMesh, 1, 0, mine, earlier.nonce);
  ::close(first);
  int replay = dial(address);
  handshake::Challenge now = hello(replay, mine);
  EXPECT_NE(now.nonce, earlier.nonce);
  EXPECT_TRUE(refused(replay, recorded));

  const auto started = Clock::now();
  auto rank1 = cluster.start(1, milliseconds(20000));
  std::unique_ptr<SocketMesh> m0 = rank0.get(), m1 = rank1.get();
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  EXPECT_LT(seconds, 5.0) << "the silent connection held up the mesh (its deadline is 10 s)";
  ::close(silent);

  const std::string sent = "over the mesh";
  std::string got(sent.size(), '\0');
  auto deadline = Clock::now() + milliseconds(5000);
  std::thread t([&] { m1->transfer(0, sent.data(), sent.size(), -1, nullptr, 0, deadline); });
  m0->transfer(-1, nullptr, 0, 1, got.data(), got.size(), deadline);
  t.join();
  EXPECT_EQ(got, sent);
}

// A listener published under rank 0's key that cannot prove the token (another cluster's, or
// not weft at all): rank 1 refuses it, naming it, instead of sending it data.
TEST(SocketMesh, AListenerThatCannotProveTheTokenIsRefused) {
  Cluster cluster(2);
  auto [listener, port] = listen_on_loopback();
  const std::string impostor = "127.0.0.1:" + std::to_string(port);
  cluster.clients[0]->insert_key_value(std::string(kMesh) + "/0", impostor);
  auto rank1 = cluster.start(1, milliseconds(10000));
  int fd = ::accept(listener, nullptr, nullptr);
  ASSERT_GE(fd, 0);
  handshake::Hello h;
  ASSERT_TRUE(read_all(fd, &h, sizeof(h)));
  EXPECT_EQ(h.rank, 1u);
  handshake::Challenge c;
  c.rank = 0;
  c.nonce = handshake::random_nonce();
  c.proof = handshake::mac("a guess", handshake::Role::kAccepting, kMesh, 1, 0, h.nonce, c.nonce);
  ASSERT_EQ(::send(fd, &c, sizeof(c), MSG_NOSIGNAL), static_cast<ssize_t>(sizeof(c)));
  try {
    rank1.get();
    FAIL() << "rank 1 trusted a listener without the token";
  } catch (const Unavailable& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 0 at " + impostor +
                                    " did not prove that it holds the cluster token"));
  }
  ::close(fd);
  ::close(listener);
}

// --data-ports: a rank listens at the first free port of its range, and names the range when
// none is free.
TEST(SocketMesh, ListensWithinItsPortRangeOrNamesIt) {
  Cluster cluster(1);
  auto [taken, port] = listen_on_loopback();
  try {
    SocketMesh mesh(*cluster.clients[0], 0, 1, "127.0.0.1", kToken, kMesh, milliseconds(1000),
                    {port, port});
    FAIL() << "a rank listened outside its range";
  } catch (const Unavailable& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot listen on 127.0.0.1 at any port of " +
                                    std::to_string(port) + "-" + std::to_string(port) +
                                    " (--data-ports)"));
  }
  ::close(taken);  // now free: the same range serves
  SocketMesh mesh(*cluster.clients[0], 0, 1, "127.0.0.1", kToken, kMesh, milliseconds(1000),
                  {port, port});
  EXPECT_EQ(cluster.clients[0]->get_key_value(std::string(kMesh) + "/0", milliseconds(1000)),
            "127.0.0.1:" + std::to_string(port));
}

}  // namespace
}  // namespace weft::distribute::collective::internal
