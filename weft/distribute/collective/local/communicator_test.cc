// The in-process communicator: every collective on 3 replica threads, the fixed summation tree,
// an all-reduce of pieces into one shared result, calls that disagree, and a replica that never
// comes.
#include "weft/distribute/collective/local/communicator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <string>
#include <vector>

#include "weft/core/errors.h"
#include "weft/ops/creation.h"

namespace weft::distribute::collective {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// fn(rank, comm) on a thread per rank; what each returned, in rank order.
template <typename R>
std::vector<R> each(LocalGroup& group, const std::function<R(int, Communicator&)>& fn) {
  std::vector<std::future<R>> futures;
  for (int r = 0; r < group.size(); ++r) {
    futures.push_back(std::async(std::launch::async, [&, r] { return fn(r, group.rank(r)); }));
  }
  std::vector<R> out;
  for (auto& f : futures) out.push_back(f.get());
  return out;
}

TEST(LocalCommunicator, EveryCollectiveOnThreeReplicaThreads) {
  LocalGroup group(3);
  // Sums in the fixed tree, r0 + (r1 + r2) (tree_sum's), the same bits on every rank.
  const std::vector<float> terms{1e8f, -1e8f, 0.1f};
  auto sums = each<std::vector<float>>(group, [&](int r, Communicator& c) {
    return all_reduce(c, Tensor::from_vector(std::vector<float>(7, terms[r]))).to_vector<float>();
  });
  const float tree = terms[0] + (terms[1] + terms[2]);
  ASSERT_NE(tree, (terms[0] + terms[1]) + terms[2]);
  for (const auto& s : sums) EXPECT_EQ(s, std::vector<float>(7, tree));
  auto means = each<std::vector<double>>(group, [](int r, Communicator& c) {
    return all_reduce(c, Tensor::from_vector(std::vector<double>{1.0 * r, 3.0}), Reduction::MEAN)
        .to_vector<double>();
  });
  for (const auto& m : means) EXPECT_EQ(m, (std::vector<double>{1.0, 3.0}));
  auto gathered = each<std::vector<int64_t>>(group, [](int r, Communicator& c) {
    return all_gather(c, Tensor::from_vector(std::vector<int64_t>{10 * r, 10 * r + 1}))
        .to_vector<int64_t>();
  });
  for (const auto& g : gathered) EXPECT_EQ(g, (std::vector<int64_t>{0, 1, 10, 11, 20, 21}));
  auto scattered = each<std::vector<int32_t>>(group, [](int r, Communicator& c) {
    // Rank r's block b: 100 b + r.
    return reduce_scatter(c, Tensor::from_vector(std::vector<int32_t>{r, 100 + r, 200 + r}))
        .to_vector<int32_t>();
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(scattered[r], (std::vector<int32_t>{300 * r + 3}));
  auto exchanged = each<std::vector<int32_t>>(group, [](int r, Communicator& c) {
    return all_to_all(c, Tensor::from_vector(std::vector<int32_t>{r, 10 + r, 20 + r}))
        .to_vector<int32_t>();
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(exchanged[r], (std::vector<int32_t>{10 * r, 10 * r + 1, 10 * r + 2}));
  }
  auto broadcast_ = each<std::vector<float>>(group, [](int r, Communicator& c) {
    barrier(c);
    return broadcast(c, Tensor::from_vector(std::vector<float>{1.f * r}), 2).to_vector<float>();
  });
  for (const auto& b : broadcast_) EXPECT_EQ(b, (std::vector<float>{2.f}));
  EXPECT_EQ(group.rank(1).calls(), 8u);  // all_gather's tensor form calls twice (shapes, data)
  EXPECT_EQ(group.rank(0).transport(), "in_process");
}

TEST(LocalCommunicator, AllReduceGatheredReadsPiecesWhereTheyLieIntoOneSharedResult) {
  // MirroredStrategy's use: 4 replicas (spinning waits), each passing its values as pieces cut
  // its own way (a null piece: zeros), all writing one result; more than one block of elements.
  LocalGroup group(4, kDefaultTimeout, /*spin=*/true);
  constexpr std::size_t n = 2500;
  const std::vector<float> base{1e8f, -1e8f, 0.1f, 0.3f};
  std::vector<std::vector<float>> values(4);
  for (std::size_t r = 0; r < 4; ++r) {
    for (std::size_t i = 0; i < n; ++i)
      values[r].push_back(base[r] + 1e-3f * static_cast<float>(i));
  }
  const std::vector<std::vector<std::size_t>> cuts{{}, {1000}, {500, 501}, {1}};
  std::vector<float> out(n, -1.f);
  each<int>(group, [&](int r, Communicator& c) {
    std::vector<Piece> pieces;
    std::size_t at = 0;
    for (std::size_t cut : cuts[static_cast<std::size_t>(r)]) {
      // Rank 2's first 500 elements are not there: zeros.
      pieces.push_back({r == 2 && at == 0 ? nullptr : values[r].data() + at, cut - at});
      at = cut;
    }
    pieces.push_back({values[r].data() + at, n - at});
    c.all_reduce_gathered(pieces, out.data(), {static_cast<int64_t>(n)}, kFloat32, Reduction::SUM,
                          {});
    return 0;
  });
  for (std::size_t i = 0; i < n; ++i) {
    const float third = i < 500 ? 0.f : values[2][i];
    ASSERT_EQ(out[i], (values[0][i] + values[1][i]) + (third + values[3][i])) << "element " << i;
  }
}

TEST(LocalCommunicator, RanksThatDisagreeFailAlikeNamingBoth) {
  LocalGroup group(2);
  auto errors = each<std::string>(group, [](int r, Communicator& c) -> std::string {
    try {
      all_reduce(c, zeros({r == 0 ? 4 : 5}));
      return "";
    } catch (const InvalidArgument& e) {
      return e.what();
    }
  });
  for (const auto& e : errors) {
    EXPECT_THAT(e, AllOf(HasSubstr("replica 0"), HasSubstr("replica 1"), HasSubstr("[4]"),
                         HasSubstr("[5]")));
  }
  // The group goes on: the next calls agree.
  auto sums = each<float>(group, [](int, Communicator& c) {
    return all_reduce(c, Tensor::scalar(1.0f, kFloat32)).item<float>();
  });
  EXPECT_EQ(sums, (std::vector<float>{2.f, 2.f}));
}

TEST(LocalCommunicator, AReplicaThatNeverComesIsNamedWhenTheWaitEnds) {
  LocalGroup group(3, std::chrono::milliseconds(100));
  auto errors = each<std::string>(group, [](int r, Communicator& c) -> std::string {
    if (r == 2) return "";
    try {
      barrier(c);
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  });
  EXPECT_THAT(errors[0], HasSubstr("replica 2"));
  EXPECT_THAT(errors[1], HasSubstr("replica 2"));
  EXPECT_THAT(errors[0], HasSubstr("did not come"));
}

}  // namespace
}  // namespace weft::distribute::collective
