// TcpCommunicator with its ranks on threads of one process: each rank has its own coordination
// client and its own Gloo device, and they meet over real TCP on 127.0.0.1. (Ranks in separate
// processes, killed or stopped, are the multi-worker command tests' subject.)
#include "weft/distribute/collective/tcp/communicator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <sstream>
#include <thread>

#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/core/half.h"
#include "weft/distribute/collective/internal/reduce.h"
#include "weft/distribute/coordination/service.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"

namespace weft::distribute::collective {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

struct Ranks {
  explicit Ranks(int n, milliseconds timeout = milliseconds(10000)) {
    coordination::CoordinationOptions o;
    o.token = "test-token";
    o.heartbeat_interval = milliseconds(200);
    std::vector<std::string> tasks;
    for (int i = 0; i < n; ++i) tasks.push_back("worker:" + std::to_string(i));
    service = std::make_unique<coordination::CoordinationService>("127.0.0.1:0", tasks, o);
    comms.resize(static_cast<size_t>(n));
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      clients.push_back(std::make_unique<coordination::CoordinationClient>(
          tasks[static_cast<size_t>(r)], "worker:0", service->address(), o));
    }
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r, tasks] {
        clients[static_cast<size_t>(r)]->connect(milliseconds(10000));
        comms[static_cast<size_t>(r)] = std::make_unique<TcpCommunicator>(
            *clients[static_cast<size_t>(r)], tasks, r, "127.0.0.1",
            TcpOptions{.timeout = timeout});
      });
    }
    for (auto& t : threads) t.join();
  }
  // Runs fn(rank, communicator) on every rank at once; returns each rank's result.
  template <typename F>
  auto each(F fn) {
    using R = decltype(fn(0, *comms[0]));
    std::vector<std::future<R>> futures;
    for (int r = 0; r < static_cast<int>(comms.size()); ++r) {
      futures.push_back(std::async(std::launch::async, [&, r] { return fn(r, *comms[r]); }));
    }
    std::vector<R> out;
    for (auto& f : futures) out.push_back(f.get());
    return out;
  }
  std::unique_ptr<coordination::CoordinationService> service;
  std::vector<std::unique_ptr<coordination::CoordinationClient>> clients;
  std::vector<std::unique_ptr<TcpCommunicator>> comms;
};

CommunicationOptions options_for(Implementation impl, double timeout_seconds = 0) {
  CommunicationOptions o;
  o.implementation = impl;
  o.timeout_seconds = timeout_seconds;
  return o;
}

template <typename T>
Tensor values_of(int rank, int64_t n) {
  std::vector<T> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<T>((rank + 1) * 10 + i % 7));
  return Tensor::from_vector(v, {n});
}

TEST(TcpCommunicator, AllReduceEveryOpDtypeAndAlgorithm) {
  Ranks ranks(3);
  for (Implementation impl : {Implementation::AUTO, Implementation::RECURSIVE_DOUBLING,
                              Implementation::RING, Implementation::SHARED_MEMORY,
                              Implementation::GLOO_RING, Implementation::GLOO_HALVING_DOUBLING}) {
    for (Reduction op : {Reduction::SUM, Reduction::MEAN, Reduction::MAX, Reduction::MIN}) {
      SCOPED_TRACE(std::string(implementation_name(impl)) + " " + reduction_name(op));
      auto out = ranks.each([&](int r, Communicator& c) {
        return all_reduce(c, values_of<double>(r, 1000), op, options_for(impl))
            .to_vector<double>();
      });
      for (int64_t i = 0; i < 1000; ++i) {
        double a = 10 + i % 7, b = 20 + i % 7, cc = 30 + i % 7;
        double want = op == Reduction::SUM    ? a + b + cc
                      : op == Reduction::MEAN ? (a + b + cc) / 3
                      : op == Reduction::MAX  ? cc
                                              : a;
        for (int r = 0; r < 3; ++r) ASSERT_EQ(out[r][i], want) << "rank " << r << " element " << i;
      }
    }
  }
  // Shared memory splits chunks of 64 KiB and more among the ranks (uneven slices here), and
  // goes through its buffers in chunks of 8 MiB: 1 200 003 doubles are two chunks.
  for (Reduction op : {Reduction::SUM, Reduction::MEAN, Reduction::MAX, Reduction::MIN}) {
    SCOPED_TRACE(std::string("large, ") + reduction_name(op));
    auto out = ranks.each([&](int r, Communicator& c) {
      return all_reduce(c, values_of<double>(r, 1200003), op,
                        options_for(Implementation::SHARED_MEMORY))
          .to_vector<double>();
    });
    for (int64_t i = 0; i < 1200003; ++i) {
      double a = 10 + i % 7, cc = 30 + i % 7;
      double want = op == Reduction::SUM    ? 3 * (20 + i % 7)
                    : op == Reduction::MEAN ? 20 + i % 7
                    : op == Reduction::MAX  ? cc
                                            : a;
      for (int r = 0; r < 3; ++r) ASSERT_EQ(out[r][i], want) << "rank " << r << " element " << i;
    }
  }
  for (DType dtype : {kFloat32, kFloat16, kBFloat16, kInt32, kInt64}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    auto out = ranks.each([&](int r, Communicator& c) {
      return all_reduce(c, cast(values_of<double>(r, 100000), dtype)).to_vector<double>();
    });
    for (int64_t i = 0; i < 100000; i += 997) {
      for (int r = 0; r < 3; ++r) ASSERT_EQ(out[r][i], 60 + 3 * (i % 7));
    }
  }
  auto b = ranks.each([](int r, Communicator& c) {
    return broadcast(c, values_of<float>(r, 3), /*root=*/2).to_vector<float>();
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(b[r], (std::vector<float>{30, 31, 32})) << "rank " << r;
  EXPECT_THROW(ranks.comms[0]->all_reduce(nullptr, {1}, kBool, Reduction::SUM, {}),
               InvalidArgument);
}

// This process's TCP sockets that listen, or all of them (/proc/net/tcp{,6} against
// /proc/self/fd).
int tcp_sockets(bool listening) {
  std::set<std::string> own;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    std::string target = std::filesystem::read_symlink(fd.path(), error).string();
    if (!error && target.rfind("socket:[", 0) == 0) own.insert(target.substr(8, target.size() - 9));
  }
  int found = 0;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the heading
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      found += (!listening || state == "0A") && own.count(inode);
    }
  }
  return found;
}

// Gloo's mesh (its listener accepts anyone, its connections prove no token) is opened only when
// a call asks for a GLOO_* implementation: weft's own connections leave no listener behind.
TEST(TcpCommunicator, OpensGlooOnlyWhenAskedFor) {
  const int before = tcp_sockets(/*listening=*/true);
  Ranks ranks(2);
  const int service = 1;  // the coordination service's
  EXPECT_EQ(tcp_sockets(true), before + service);
  auto sums = ranks.each([](int r, Communicator& c) {
    return all_reduce(c, values_of<float>(r, 10), Reduction::SUM, options_for(Implementation::AUTO))
        .to_vector<float>();
  });
  EXPECT_EQ(tcp_sockets(true), before + service);
  // Gloo publishes each rank's addresses in the key-value store, and connects each pair.
  EXPECT_EQ(ranks.clients[0]->try_get_key_value("collectives/gloo/0"), std::nullopt);
  const int connected = tcp_sockets(false);
  sums = ranks.each([](int r, Communicator& c) {
    return all_reduce(c, values_of<float>(r, 10), Reduction::SUM,
                      options_for(Implementation::GLOO_RING))
        .to_vector<float>();
  });
  EXPECT_EQ(sums[1], sums[0]);
  EXPECT_EQ(sums[0][3], 10 + 3 + 20 + 3);
  EXPECT_NE(ranks.clients[0]->try_get_key_value("collectives/gloo/0"), std::nullopt);
  EXPECT_GE(tcp_sockets(false), connected + 2);  // both ends of Gloo's connection
}

// A rank's values in several places (a worker's gradients) reduce as their concatenation would:
// pieces of its own memory, zeros for a null piece, and a piece already in the output buffer;
// small, and large enough for shared memory to split the work among the ranks (a slice then
// begins and ends inside pieces).
TEST(TcpCommunicator, AllReduceGatheredEqualsTheConcatenation) {
  Ranks ranks(3);
  for (std::size_t scale : {1, 20011}) {
    // Leaves other values in both of shared memory's buffers: the zeros must be the null piece's.
    for (int i = 0; i < 2; ++i) {
      ranks.each([&](int r, Communicator& c) {
        return all_reduce(c, values_of<float>(r, int64_t(16 * scale)), Reduction::SUM,
                          options_for(Implementation::SHARED_MEMORY))
            .numel();
      });
    }
    for (Implementation impl : {Implementation::AUTO, Implementation::RECURSIVE_DOUBLING,
                                Implementation::RING, Implementation::SHARED_MEMORY,
                                Implementation::GLOO_RING}) {
      SCOPED_TRACE(std::string(implementation_name(impl)) + " x" + std::to_string(scale));
      const std::size_t na = 5 * scale, nz = 3 * scale, nb = 4 * scale, nin = 4 * scale;
      auto out = ranks.each([&](int r, Communicator& c) {
        std::vector<float> a(na, float(r + 1)), b(nb, float(10 * (r + 1)));
        std::vector<float> result(na + nz + nb + nin, -1.0f);
        for (std::size_t i = 0; i < nin; ++i) {  // in place
          result[na + nz + nb + i] = float(100 * (r + 1) + int(i % 4));
        }
        const Piece pieces[] = {
            {a.data(), na}, {nullptr, nz}, {b.data(), nb}, {&result[na + nz + nb], nin}};
        c.all_reduce_gathered(pieces, result.data(), {int64_t(result.size())}, kFloat32,
                              Reduction::SUM, options_for(impl));
        return result;
      });
      std::vector<float> want(na, 6);
      want.resize(na + nz, 0);
      want.resize(na + nz + nb, 60);
      for (std::size_t i = 0; i < nin; ++i) want.push_back(float(600 + 3 * int(i % 4)));
      for (int r = 0; r < 3; ++r) ASSERT_EQ(out[r], want) << "rank " << r;
    }
  }
  // Cutting pieces: elements 3..9 of [5 at p][3 zeros][4 at q].
  float p[5] = {}, q[4] = {};
  const Piece whole[] = {{p, 5}, {nullptr, 3}, {q, 4}};
  std::vector<Piece> cut = internal::cut_pieces(whole, 3, 7, sizeof(float));
  ASSERT_EQ(cut.size(), 3u);
  EXPECT_EQ(cut[0].data, p + 3);
  EXPECT_EQ(cut[0].count, 2u);
  EXPECT_EQ(cut[1].data, nullptr);
  EXPECT_EQ(cut[1].count, 3u);
  EXPECT_EQ(cut[2].data, q);
  EXPECT_EQ(cut[2].count, 2u);
}

TEST(TcpCommunicator, BroadcastGatherScatterAndBarrier) {
  Ranks ranks(2);
  auto b = ranks.each([](int r, Communicator& c) {
    return broadcast(c, values_of<float>(r, 5), /*root=*/1).to_vector<float>();
  });
  EXPECT_EQ(b[0], (std::vector<float>{20, 21, 22, 23, 24}));
  EXPECT_EQ(b[1], b[0]);
  auto g = ranks.each([](int r, Communicator& c) {
    return all_gather(c, values_of<int64_t>(r, 2)).to_vector<int64_t>();
  });
  EXPECT_EQ(g[0], (std::vector<int64_t>{10, 11, 20, 21}));
  EXPECT_EQ(g[1], g[0]);
  auto s = ranks.each([](int r, Communicator& c) {
    return reduce_scatter(c, values_of<int32_t>(r, 4)).to_vector<int32_t>();
  });
  EXPECT_EQ(s[0], (std::vector<int32_t>{30, 32}));
  EXPECT_EQ(s[1], (std::vector<int32_t>{34, 36}));
  ranks.each([](int, Communicator& c) {
    barrier(c);
    return 0;
  });
}

// all_to_all: rank r's block b goes to rank b; on 3 ranks pairwise, and through the default
// (gathering) implementation every Communicator inherits, which must agree.
TEST(TcpCommunicator, AllToAllSendsEachRankItsBlock) {
  Ranks ranks(3);
  auto blocks_of = [](int r) {  // rank r's block b: 100 b + 10 r + i, i = 0, 1
    std::vector<float> v;
    for (int b = 0; b < 3; ++b) {
      v.insert(v.end(), {100.f * b + 10.f * r, 100.f * b + 10.f * r + 1});
    }
    return Tensor::from_vector(v, {6});
  };
  auto got = ranks.each(
      [&](int r, Communicator& c) { return all_to_all(c, blocks_of(r)).to_vector<float>(); });
  auto gathered = ranks.each([&](int r, Communicator& c) {
    std::vector<float> out(6);
    c.Communicator::all_to_all(blocks_of(r).raw_data(), out.data(), {2}, kFloat32, {});
    return out;
  });
  for (int r = 0; r < 3; ++r) {
    std::vector<float> want;  // from rank s: its block r
    for (int s = 0; s < 3; ++s) {
      want.insert(want.end(), {100.f * r + 10.f * s, 100.f * r + 10.f * s + 1});
    }
    EXPECT_EQ(got[static_cast<size_t>(r)], want) << "rank " << r;
    EXPECT_EQ(gathered[static_cast<size_t>(r)], want) << "rank " << r;
  }
}

// Three ranks (not a power of two): reduce_scatter around the ring gives rank r block r of the
// reduction for every op; all_gather takes values of different lengths (one rank has none) and
// refuses values that differ in another axis, naming both ranks.
TEST(TcpCommunicator, ReduceScatterAndUnevenAllGatherOnThreeRanks) {
  Ranks ranks(3);
  for (Reduction op : {Reduction::SUM, Reduction::MEAN, Reduction::MAX}) {
    auto s = ranks.each([op](int r, Communicator& c) {
      // Rank r's block b: 100 b + 10 r + i, i = 0, 1.
      std::vector<float> v;
      for (int b = 0; b < 3; ++b)
        v.insert(v.end(), {100.f * b + 10.f * r, 100.f * b + 10.f * r + 1});
      return reduce_scatter(c, Tensor::from_vector(v, {6}), op).to_vector<float>();
    });
    for (int r = 0; r < 3; ++r) {
      float sum = 300.f * r + 30, most = 100.f * r + 20;  // ranks 0, 10, 20 added to 100 r
      std::vector<float> want = op == Reduction::SUM    ? std::vector<float>{sum, sum + 3}
                                : op == Reduction::MEAN ? std::vector<float>{sum / 3, (sum + 3) / 3}
                                                        : std::vector<float>{most, most + 1};
      EXPECT_EQ(s[static_cast<size_t>(r)], want) << reduction_name(op) << ", rank " << r;
    }
  }
  auto g = ranks.each([](int r, Communicator& c) {
    std::vector<int64_t> rows(static_cast<size_t>(2 * (2 - r)));  // 2, 1 and 0 rows of 2
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = 10 * r + static_cast<int64_t>(i);
    return all_gather(c, Tensor::from_vector(rows, {2 - r, 2})).to_vector<int64_t>();
  });
  for (const auto& got : g) EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 2, 3, 10, 11}));
  auto e = ranks.each([](int r, Communicator& c) -> std::string {
    try {
      all_gather(c, zeros({1, r == 1 ? 3 : 2}, kFloat32));
      return "";
    } catch (const InvalidArgument& err) {
      return err.what();
    }
  });
  for (const auto& message : e) {
    EXPECT_THAT(message,
                HasSubstr("worker:0 passed (1, 2) float32, worker:1 passed (1, 3) float32"));
  }
}

// Under op determinism four ranks sum in the fixed tree ((r0+r1)+(r2+r3)), whatever AUTO would
// have picked, and every rank gets the same bits.
TEST(TcpCommunicator, DeterministicSumIsTheFixedTree) {
  Ranks ranks(4);
  config::enable_op_determinism();
  std::vector<std::vector<float>> inputs(4);
  for (int r = 0; r < 4; ++r) {
    for (int i = 0; i < 300000; ++i) inputs[r].push_back(std::sin(float(i * (r + 1))) * 1e3f);
  }
  auto out = ranks.each([&](int r, Communicator& c) {
    return all_reduce(c, Tensor::from_vector(inputs[r], {300000})).to_vector<float>();
  });
  config::disable_op_determinism();
  for (int i = 0; i < 300000; ++i) {
    float want = (inputs[0][i] + inputs[1][i]) + (inputs[2][i] + inputs[3][i]);
    for (int r = 0; r < 4; ++r) ASSERT_EQ(out[r][i], want) << "rank " << r << " element " << i;
  }
}

TEST(TcpCommunicator, MismatchedCallsFailEveryRankNamingBothRanksAndShapes) {
  for (Implementation impl : {Implementation::RECURSIVE_DOUBLING, Implementation::RING,
                              Implementation::SHARED_MEMORY, Implementation::GLOO_RING}) {
    Ranks ranks(2);
    auto errors = ranks.each([&](int r, Communicator& c) -> std::string {
      try {
        all_reduce(c, Tensor::empty({r == 0 ? 10 : 12, 3}), Reduction::SUM,
                   options_for(impl));
      } catch (const Error& e) {
        return e.what();
      }
      return "no error";
    });
    for (const auto& e : errors) {
      EXPECT_THAT(e, HasSubstr("rank 0 (worker:0) called all_reduce #1 of float32 [10, 3] (sum), "
                               "rank 1 (worker:1) called all_reduce #1 of float32 [12, 3] (sum)"));
    }
  }
}

TEST(TcpCommunicator, AnErrorOnOneRankEndsTheOthersWaitsNamingIt) {
  Ranks ranks(3, milliseconds(30000));
  auto start = std::chrono::steady_clock::now();
  auto errors = ranks.each([&](int r, Communicator& c) -> std::string {
    try {
      if (r == 2) {
        std::this_thread::sleep_for(milliseconds(300));
        ranks.clients[2]->report_error("InvalidArgument: rank 2's bad batch");
        return "reported";
      }
      all_reduce(c, Tensor::empty({1000}), Reduction::SUM,
                 options_for(Implementation::RECURSIVE_DOUBLING));
    } catch (const Unavailable& e) {
      return e.what();
    }
    return "no error";
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(5000));
  EXPECT_THAT(errors[0], HasSubstr("task worker:2 failed: InvalidArgument: rank 2's bad batch"));
  EXPECT_THAT(errors[1], HasSubstr("task worker:2 failed: InvalidArgument: rank 2's bad batch"));
}

TEST(TcpCommunicator, ARankThatNeverComesIsNamedAtTheDeadline) {
  Ranks ranks(2, milliseconds(30000));
  auto start = std::chrono::steady_clock::now();
  try {
    all_reduce(*ranks.comms[0], Tensor::empty({10}), Reduction::SUM,
               options_for(Implementation::RECURSIVE_DOUBLING, 0.5));
    FAIL() << "no error";
  } catch (const DeadlineExceeded& e) {
    EXPECT_THAT(e.what(), HasSubstr("all_reduce #1 of float32 [10] (sum) timed out waiting for "
                                    "worker:1 (rank 1)"));
  }
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, milliseconds(500));
  EXPECT_LT(waited, milliseconds(4000));
}

}  // namespace
}  // namespace weft::distribute::collective
