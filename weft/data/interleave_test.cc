// Dataset::interleave: TF 2.4's documented example and its reference order (a C++ port of
// _interleave in TF's interleave_test.py) over cycle and block lengths and parallelism; errors in
// f and in inner datasets at their places; deterministic=false; iterator states restored at every
// cut, across parallel and sequential readers; argument errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <thread>

#include "weft/core/config.h"
#include "weft/data/dataset.h"
#include "weft/ops/elementwise.h"
#include "weft/testing/dataset_checks.h"

namespace weft::data {
namespace {

using ::testing::HasSubstr;
using weft::testing::Builder;
using weft::testing::every_cut;
using weft::testing::expect_restores_exactly;

std::vector<int64_t> values(const Dataset& ds) {
  std::vector<int64_t> out;
  for (const Element& e : ds) out.push_back(e[0].item<int64_t>());
  return out;
}

// tf.data.Dataset.interleave's docstring: range(1, 6), each x repeated 6 times.
Dataset doc_example(int64_t num_parallel_calls = 0) {
  return Dataset::range(1, 6).interleave(
      [](const Element& x) { return Dataset::from_tensors(x).repeat(6); },
      {.cycle_length = 2, .block_length = 4, .num_parallel_calls = num_parallel_calls});
}

TEST(Interleave, TheDocumentedExample) {
  const std::vector<int64_t> expected = {1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3,
                                         3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5};
  EXPECT_EQ(values(doc_example()), expected);
  EXPECT_EQ(values(doc_example(1)), expected);
  EXPECT_EQ(values(doc_example(2)), expected);
  EXPECT_EQ(doc_example().describe(),
            "from_tensor_slices((5,) int64).interleave(cycle_length=2, block_length=4)");
}

// TF's reference (interleave_test.py _interleave): the first cycle_length lists are opened at
// once; each turn takes up to block_length elements of a slot, an exhausted one being replaced
// by the next list on the slot's next turn.
std::vector<int64_t> reference_interleave(const std::vector<std::vector<int64_t>>& lists,
                                          int64_t cycle_length, int64_t block_length) {
  struct Open {
    size_t list;
    size_t pos;
  };
  std::deque<size_t> waiting;
  for (size_t i = 0; i < lists.size(); ++i) waiting.push_back(i);
  std::vector<std::optional<Open>> open(static_cast<size_t>(cycle_length));
  int64_t num_open = 0;
  for (auto& slot : open) {
    if (!waiting.empty()) {
      slot = Open{waiting.front(), 0};
      waiting.pop_front();
      ++num_open;
    }
  }
  std::vector<int64_t> out;
  while (num_open > 0 || !waiting.empty()) {
    for (auto& slot : open) {
      if (!slot) {
        if (waiting.empty()) continue;
        slot = Open{waiting.front(), 0};
        waiting.pop_front();
        ++num_open;
      }
      for (int64_t b = 0; b < block_length; ++b) {
        if (slot->pos == lists[slot->list].size()) {
          slot.reset();
          --num_open;
          break;
        }
        out.push_back(lists[slot->list][slot->pos++]);
      }
    }
  }
  return out;
}

// Inner dataset x is 100x, 100x + 1, ... of length kLengths[x] (some empty).
const std::vector<int64_t> kLengths = {3, 0, 5, 1, 2, 0, 4, 7, 1, 6};

Dataset numbered(const InterleaveOptions& o) {
  return Dataset::range(static_cast<int64_t>(kLengths.size()))
      .interleave(
          [](const Element& e) {
            const int64_t x = e[0].item<int64_t>();
            return Dataset::range(100 * x, 100 * x + kLengths[static_cast<size_t>(x)]);
          },
          o);
}

std::vector<std::vector<int64_t>> numbered_lists() {
  std::vector<std::vector<int64_t>> lists;
  for (size_t x = 0; x < kLengths.size(); ++x) {
    lists.emplace_back();
    for (int64_t j = 0; j < kLengths[x]; ++j) lists.back().push_back(100 * int64_t(x) + j);
  }
  return lists;
}

TEST(Interleave, FollowsTheReferenceOrderAtAnyParallelism) {
  for (int64_t cycle : {1, 2, 3, 7}) {
    for (int64_t block : {1, 2, 5}) {
      const std::vector<int64_t> expected = reference_interleave(numbered_lists(), cycle, block);
      ASSERT_EQ(expected.size(), 29u);
      for (int64_t parallel : {int64_t{0}, int64_t{1}, int64_t{2}, Dataset::kAutotune}) {
        if (parallel > cycle) continue;  // refused: see ArgumentErrorsNameWhatWasExpected
        SCOPED_TRACE("cycle " + std::to_string(cycle) + ", block " + std::to_string(block) +
                     ", num_parallel_calls " + std::to_string(parallel));
        EXPECT_EQ(values(numbered({.cycle_length = cycle,
                                   .block_length = block,
                                   .num_parallel_calls = parallel,
                                   .deterministic = true})),
                  expected);
      }
    }
  }
  // TF's Python reference itself, run by hand: cycle 2, block 2; list 1 is empty.
  EXPECT_EQ(values(numbered({.cycle_length = 2, .block_length = 2})),
            (std::vector<int64_t>{0,   1,   2,   200, 201, 300, 202, 203, 400, 401,
                                  204, 600, 601, 700, 701, 602, 603, 702, 703, 704,
                                  705, 800, 706, 900, 901, 902, 903, 904, 905}));
}

TEST(Interleave, CycleLengthOneIsFlatMap) {
  auto f = [](const Element& e) {
    const int64_t x = e[0].item<int64_t>();
    return Dataset::range(x, 2 * x + 1);
  };
  EXPECT_EQ(values(Dataset::range(6).interleave(f, {.cycle_length = 1, .block_length = 3})),
            values(Dataset::range(6).flat_map(f)));
}

TEST(Interleave, AutotunedCycleLengthsAreResolvedInTheDescription) {
  const int saved = config::num_threads();
  config::set_num_threads(4);
  auto f = [](const Element& e) { return Dataset::from_tensors(e); };
  const std::string sequential = Dataset::range(3).interleave(f).describe();
  const std::string parallel =
      Dataset::range(3).interleave(f, {.num_parallel_calls = 3}).describe();
  const std::string autotuned =
      Dataset::range(3).interleave(f, {.num_parallel_calls = Dataset::kAutotune}).describe();
  config::set_num_threads(saved);
  EXPECT_THAT(sequential, HasSubstr(".interleave(cycle_length=4, block_length=1)"));
  EXPECT_THAT(parallel, HasSubstr(".interleave(cycle_length=3, block_length=1)"));
  EXPECT_THAT(autotuned, HasSubstr(".interleave(cycle_length=2, block_length=1)"));
  EXPECT_EQ(Dataset::range(0).interleave(f).cardinality(), 0);
  EXPECT_EQ(Dataset::range(3).interleave(f).cardinality(), Dataset::kUnknownCardinality);
}

// An error raised at each next() in the sequence; nullopt for an element.
std::vector<std::string> run_with_errors(const Dataset& ds, std::vector<int64_t>& out) {
  std::vector<std::string> errors;
  Dataset::Iterator it = ds.begin();
  for (int i = 0; i < 20; ++i) {
    try {
      std::optional<Element> e = it.next();
      if (!e) break;
      out.push_back(e->at(0).item<int64_t>());
    } catch (const Error& e) {
      out.push_back(-1);
      errors.push_back(e.message());
    }
  }
  return errors;
}

TEST(Interleave, AnErrorInFOrAnInnerDatasetIsRaisedAtItsPlace) {
  for (int64_t parallel : {0, 1, 2}) {
    SCOPED_TRACE("num_parallel_calls " + std::to_string(parallel));
    Dataset failing_f = Dataset::range(4).interleave(
        [](const Element& e) {
          WEFT_CHECK(e[0].item<int64_t>() != 1, InvalidArgument) << "f refuses 1";
          return Dataset::from_tensors(e).repeat(2);
        },
        {.cycle_length = 2, .block_length = 1, .num_parallel_calls = parallel});
    std::vector<int64_t> out;
    EXPECT_THAT(run_with_errors(failing_f, out), ::testing::ElementsAre(HasSubstr("f refuses 1")));
    EXPECT_EQ(out, (std::vector<int64_t>{0, -1, 2, 0, 2, 3, 3}));

    Dataset failing_inner = Dataset::range(2).interleave(
        [](const Element& e) {
          const int64_t x = e[0].item<int64_t>();
          return Dataset::range(10 * x, 10 * x + 3).map([](const Tensor& v) {
            WEFT_CHECK(v.item<int64_t>() != 1, DataLoss) << "record 1 is damaged";
            return v;
          });
        },
        {.cycle_length = 2, .block_length = 2, .num_parallel_calls = parallel});
    out.clear();
    EXPECT_THAT(run_with_errors(failing_inner, out),
                ::testing::ElementsAre(HasSubstr("record 1 is damaged")));
    EXPECT_EQ(out, (std::vector<int64_t>{0, -1, 2, 10, 11, 12}));
  }
}

// Inner dataset 0 holds its first element until inner dataset 1's first element has been
// consumed (or 20 s have passed): only an interleave that may leave the order can yield it first.
Dataset gated(std::shared_ptr<std::atomic<bool>> gate, InterleaveOptions o,
              const Options& options = {}) {
  return Dataset::range(2).with_options(options).interleave(
      [gate](const Element& e) {
        const int64_t x = e[0].item<int64_t>();
        return Dataset::from_generator([gate, x] {
          return [gate, x, i = int64_t{0}]() mutable -> std::optional<Element> {
            if (x == 0 && i == 0) {
              for (int k = 0; k < 20000 && !gate->load(); ++k) {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
              }
            }
            if (i == 3) return std::nullopt;
            return Element{Tensor::scalar(100 * x + i++, kInt64)};
          };
        });
      },
      o);
}

void expect_out_of_order_but_each_inner_in_order(const Dataset& ds,
                                                 const std::shared_ptr<std::atomic<bool>>& gate) {
  Dataset::Iterator it = ds.begin();
  std::vector<int64_t> out;
  while (std::optional<Element> e = it.next()) {
    out.push_back(e->at(0).item<int64_t>());
    gate->store(true);
  }
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[0], 100);  // inner dataset 1 went first while 0 had nothing ready
  std::map<int64_t, std::vector<int64_t>> per_inner;
  for (int64_t v : out) per_inner[v / 100].push_back(v);
  EXPECT_EQ(per_inner[0], (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(per_inner[1], (std::vector<int64_t>{100, 101, 102}));
}

TEST(Interleave, NonDeterministicTakesWhatIsReadyAndKeepsEachInnerOrder) {
  auto gate = std::make_shared<std::atomic<bool>>(false);
  expect_out_of_order_but_each_inner_in_order(
      gated(gate, {.cycle_length = 2, .num_parallel_calls = 2, .deterministic = false}), gate);
  // Unset, `deterministic` is the Options::experimental_deterministic of the dataset interleave
  // is called on.
  auto gate2 = std::make_shared<std::atomic<bool>>(false);
  Options o;
  o.experimental_deterministic = false;
  expect_out_of_order_but_each_inner_in_order(
      gated(gate2, {.cycle_length = 2, .num_parallel_calls = 2}, o), gate2);
  // Bigger: the same multiset and every inner dataset in its order.
  Dataset sloppy = numbered(
      {.cycle_length = 3, .block_length = 2, .num_parallel_calls = 3, .deterministic = false});
  std::vector<int64_t> out = values(sloppy);
  std::vector<int64_t> expected = reference_interleave(numbered_lists(), 3, 2);
  std::map<int64_t, std::vector<int64_t>> per_inner;
  for (int64_t v : out) per_inner[v / 100].push_back(v);
  for (const auto& [x, seq] : per_inner) EXPECT_TRUE(std::is_sorted(seq.begin(), seq.end()));
  std::sort(out.begin(), out.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(out, expected);
}

TEST(Interleave, RestoresAtEveryCut) {
  expect_restores_exactly([] { return doc_example(); }, 30, every_cut(30));
  expect_restores_exactly([] { return doc_example(2); }, 30, every_cut(30));
  // A parallel reader's state (with what it read ahead) restores in a sequential one, and back.
  expect_restores_exactly([] { return doc_example(2); }, 30, every_cut(30),
                          [] { return doc_example(); });
  expect_restores_exactly([] { return doc_example(); }, 30, every_cut(30),
                          [] { return doc_example(1); });
  for (int64_t parallel : {0, 2}) {
    expect_restores_exactly(
        [parallel] {
          return numbered({.cycle_length = 3, .block_length = 2, .num_parallel_calls = parallel})
              .batch(2);
        },
        15, every_cut(15));
  }
  // Inner datasets with their own state (a shuffle), and an interleave inside an interleave.
  Builder nested = [] {
    return Dataset::range(3).interleave(
        [](const Element& e) {
          const int64_t x = e[0].item<int64_t>();
          return Dataset::range(4)
              .interleave(
                  [x](const Element& f) {
                    return Dataset::range(5)
                        .shuffle(3, static_cast<uint64_t>(x))
                        .map([x, f](const Tensor& t) {
                          return add(t, 10 * f[0].item<int64_t>() + 100 * x);
                        });
                  },
                  {.cycle_length = 2, .block_length = 3, .num_parallel_calls = 2})
              .take(7);
        },
        {.cycle_length = 2, .block_length = 2, .num_parallel_calls = 2});
  };
  expect_restores_exactly(nested, 21, every_cut(21));
}

TEST(Interleave, AnErrorReadAheadIsRestoredInItsPlace) {
  Builder build = [] {
    return Dataset::range(4).interleave(
        [](const Element& e) {
          WEFT_CHECK(e[0].item<int64_t>() != 1, InvalidArgument) << "f refuses 1";
          return Dataset::from_tensors(e).repeat(2);
        },
        {.cycle_length = 2, .block_length = 1, .num_parallel_calls = 2});
  };
  Dataset::Iterator it = build().begin();
  ASSERT_EQ(it.next().value()[0].item<int64_t>(), 0);
  const std::string state = it.save_state();  // input 1's error was read ahead
  Dataset::Iterator restored = build().begin();
  restored.restore_state(state);
  EXPECT_THAT([&] { restored.next(); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("f refuses 1")));
  std::vector<int64_t> rest;
  while (std::optional<Element> e = restored.next()) rest.push_back(e->at(0).item<int64_t>());
  EXPECT_EQ(rest, (std::vector<int64_t>{2, 0, 2, 3, 3}));
}

TEST(Interleave, ArgumentErrorsNameWhatWasExpected) {
  auto f = [](const Element& e) { return Dataset::from_tensors(e); };
  auto refused = [&](InterleaveOptions o) {
    try {
      Dataset::range(3).interleave(f, o);
    } catch (const InvalidArgument& e) {
      return e.message();
    }
    return std::string("accepted");
  };
  EXPECT_THAT(refused({.cycle_length = 0}),
              HasSubstr("Dataset::interleave: cycle_length must be > 0 or kAutotune (-1), got 0"));
  EXPECT_THAT(refused({.block_length = 0}),
              HasSubstr("Dataset::interleave: block_length must be > 0, got 0"));
  EXPECT_THAT(refused({.num_parallel_calls = -3}),
              HasSubstr("num_parallel_calls must be >= 1, kAutotune (-1) or 0 (none: "
                        "sequential), got -3"));
  EXPECT_THAT(refused({.cycle_length = 2, .num_parallel_calls = 3}),
              HasSubstr("Dataset::interleave: num_parallel_calls (3) must be <= cycle_length (2)"));
  EXPECT_THAT([] { Dataset::range(3).interleave(nullptr); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  HasSubstr("Dataset::interleave: the function is empty")));
}

}  // namespace
}  // namespace weft::data
