// The chief's marks and a worker's reader of the positions they name (input_positions.h), with a
// map as the store: the worker reads on, goes back, jumps ahead, follows a new lineage, and
// refuses a batch that is not the chief's.
#include "weft/train/internal/input_positions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "weft/core/errors.h"
#include "weft/ops/digest.h"

namespace weft::nn::internal {
namespace {

struct MapStore {
  std::map<std::string, std::string> kv;
  int gets = 0;
  MarkStore store() {
    return {[this](const std::string& k, const std::string& v) { kv[k] = v; },
            [this](const std::string& k) {
              ++gets;
              return kv.at(k);
            },
            [this](const std::string& k) { kv.erase(k); }, "worker:3"};
  }
};

// 10 batches of 4 a pass, each pass shuffled its own way.
data::Dataset numbers(uint64_t seed = 3) {
  return data::Dataset::range(40).shuffle(40, seed).batch(4);
}

// The chief's side: reads `count` batches, marking each epoch's start as fit does.
struct Chief {
  explicit Chief(MapStore& s) : reader(dataset, std::nullopt), marks(s.store()) {
    marks.begin_lineage(reader.next_state());
  }
  void read(int count) {
    for (int i = 0; i < count; ++i) {
      if (!positions.empty() && positions.size() % 10 == 0) marks.mark(reader.next_state());
      data::Element batch = *reader.next();
      positions.push_back(marks.next(batch));
      batches.push_back(batch);
    }
  }
  data::Dataset dataset = numbers();
  EpochReader reader;
  InputMarks marks;
  std::vector<BatchPosition> positions;
  std::vector<data::Element> batches;
};

std::vector<int64_t> values(const data::Element& batch) { return batch[0].to_vector<int64_t>(); }

TEST(InputPositions, AWorkerReadsOnGoesBackAndJumpsAheadToTheChiefsBatches) {
  MapStore store;
  Chief chief(store);
  PositionedInput worker(store.store(), numbers(), std::nullopt);
  chief.read(10);
  EXPECT_EQ(chief.positions[7].index, 7);
  EXPECT_EQ(chief.positions[7].mark, 0);
  auto expect_batch = [&](int i) {
    SCOPED_TRACE("batch " + std::to_string(i));
    EXPECT_EQ(values(worker.batch(chief.positions[static_cast<size_t>(i)])),
              values(chief.batches[static_cast<size_t>(i)]));
  };
  expect_batch(0);  // restores the lineage's first mark
  EXPECT_EQ(store.gets, 1);
  expect_batch(2);  // reads on past batch 1 (another worker's)
  expect_batch(9);
  expect_batch(9);  // the batch just read, again (a backup run of the step's other part)
  EXPECT_EQ(store.gets, 1);
  expect_batch(1);  // behind: back to the mark
  EXPECT_EQ(store.gets, 2);

  // The next epoch's mark replaces the first: the store holds one.
  chief.read(10);
  EXPECT_EQ(chief.positions[12].mark, 10);
  EXPECT_EQ(store.kv.size(), 1u);
  expect_batch(12);  // on the way from 2: reads on, across the pass's end
  EXPECT_EQ(store.gets, 2);
  expect_batch(11);
  EXPECT_EQ(store.gets, 3);

  // A mark more than 64 batches ahead of the worker (at 12): it restores the mark rather than
  // read 73 batches.
  chief.read(70);
  expect_batch(85);
  EXPECT_EQ(chief.positions[85].mark, 80);
  EXPECT_EQ(store.gets, 4);
  expect_batch(87);
  EXPECT_EQ(store.gets, 4);
}

TEST(InputPositions, ARollbackIsANewLineageTheWorkerFollows) {
  MapStore store;
  Chief chief(store);
  PositionedInput worker(store.store(), numbers(), std::nullopt);
  chief.read(5);
  EXPECT_EQ(values(worker.batch(chief.positions[4])), values(chief.batches[4]));
  // Back to the state after batch 2, as a restored backup would be.
  Chief other(store);
  other.read(3);
  chief.reader.kept()->restore_state(other.reader.next_state());
  chief.marks.begin_lineage(chief.reader.next_state());
  const data::Element expected = *other.reader.next();
  const BatchPosition at = chief.marks.next(expected);
  EXPECT_GT(at.lineage, chief.positions[4].lineage);
  EXPECT_EQ(at.index, 0);
  EXPECT_EQ(values(worker.batch(at)), values(expected));
  EXPECT_EQ(values(expected), values(chief.batches[3]));
}

TEST(InputPositions, AWorkerRefusesABatchThatIsNotTheChiefs) {
  MapStore store;
  Chief chief(store);
  chief.read(3);
  PositionedInput seeded_otherwise(store.store(), numbers(/*seed=*/4), std::nullopt);
  try {
    seeded_otherwise.batch(chief.positions[1]);
    FAIL() << "another pipeline took the chief's state";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("worker:3 cannot read the chief's training data"));
  }
  PositionedInput worker(store.store(), numbers(), std::nullopt);
  BatchPosition wrong = chief.positions[1];
  wrong.digest ^= 1;
  try {
    worker.batch(wrong);
    FAIL() << "a batch with another digest was taken";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("worker:3 read another batch 1 (lineage "));
  }
  EXPECT_EQ(values(worker.batch(chief.positions[2])), values(chief.batches[2]));
}

}  // namespace
}  // namespace weft::nn::internal
