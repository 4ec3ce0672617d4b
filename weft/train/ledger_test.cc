// The parameter-server fit's ledger: ranges merge where they meet, a row committed twice and an
// epoch ending with rows missing are errors naming them, and its state survives a backup.
#include "weft/train/internal/ledger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/errors.h"

namespace weft::nn::internal {
namespace {

using ::testing::HasSubstr;
using Ranges = std::vector<std::pair<int64_t, int64_t>>;

TEST(Ledger, RangesMergeWhereTheyMeetAndEachEpochIsCountedApart) {
  Ledger ledger;
  ledger.add(0, 64, 64);  // committed out of order
  ledger.add(0, 0, 64);
  ledger.add(0, 192, 8);
  ledger.add(1, 0, 32);
  EXPECT_EQ(ledger.ranges(0), (Ranges{{0, 128}, {192, 200}}));
  EXPECT_EQ(ledger.rows(0), 136);
  EXPECT_EQ(ledger.rows(1), 32);
  EXPECT_EQ(ledger.rows(2), 0);
  EXPECT_EQ(ledger.total(), 168);
  ledger.add(0, 128, 64);  // fills the gap
  EXPECT_EQ(ledger.ranges(0), (Ranges{{0, 200}}));
  EXPECT_NO_THROW(ledger.check_complete(0, 200));
}

TEST(Ledger, ARowCommittedTwiceIsAnErrorNamingTheRows) {
  Ledger ledger;
  ledger.add(2, 0, 64);
  ledger.add(2, 128, 64);
  for (auto [first, rows] : {std::pair<int64_t, int64_t>{32, 8}, {60, 10}, {120, 10}, {0, 64}}) {
    try {
      ledger.add(2, first, rows);
      ADD_FAILURE() << "rows " << first << " + " << rows << " were taken twice";
    } catch (const Internal& e) {
      EXPECT_THAT(e.what(), HasSubstr("of epoch 2 were committed, but rows"));
      EXPECT_THAT(e.what(), HasSubstr("applied twice"));
    }
  }
  EXPECT_EQ(ledger.ranges(2), (Ranges{{0, 64}, {128, 192}}));  // nothing added by a refusal
}

TEST(Ledger, AnEpochThatEndsWithRowsMissingOrExtraIsAnErrorNamingThem) {
  Ledger ledger;
  ledger.add(0, 0, 64);
  ledger.add(0, 128, 64);
  try {
    ledger.check_complete(0, 192);
    ADD_FAILURE() << "a gap passed";
  } catch (const Internal& e) {
    EXPECT_THAT(e.what(), HasSubstr("epoch 0 ended with its rows 0-63, 128-191 trained, not each "
                                    "of its 192 rows once"));
  }
  EXPECT_THROW(ledger.check_complete(0, 100), Internal);  // rows past the epoch's end
  EXPECT_THROW(ledger.check_complete(1, 10), Internal);   // none
  EXPECT_NO_THROW(ledger.check_complete(1, 0));
}

TEST(Ledger, ItsStateIsWhatABackupRestores) {
  Ledger ledger;
  ledger.add(0, 0, 512);
  ledger.add(1, 0, 64);
  ledger.add(1, 128, 64);
  const std::string state = ledger.tracked_state();
  EXPECT_EQ(state, "0:0-512;1:0-64,128-192");
  Ledger restored;
  restored.add(5, 0, 1);  // replaced
  restored.restore_state(state);
  EXPECT_EQ(restored.tracked_state(), state);
  EXPECT_EQ(restored.rows(5), 0);
  restored.restore_state("");
  EXPECT_EQ(restored.total(), 0);
  EXPECT_THROW(restored.restore_state("0:0-512;1:64"), DataLoss);
  EXPECT_THROW(restored.restore_state("x"), DataLoss);
}

}  // namespace
}  // namespace weft::nn::internal
