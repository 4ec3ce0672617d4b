// list_files, text_line_dataset, tfrecord_dataset and parse_example: a TFRecord file written by
// an independent writer (scripts/write_tfrecord.py: its own CRC-32C and protobuf encoding) is
// read back exactly; damaged and truncated files are refused naming the file and the offset;
// iterators resume mid-file; shard_by_file gives each worker its files and its rows of each
// global batch, or says why it cannot.
#include "weft/data/readers/records.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "weft/core/tfrecord.h"
#include "weft/data/auto_shard.h"
#include "weft/ops/cast.h"

namespace weft::data {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class RecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("weft_records_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write_examples(const std::string& name, int n) const {
    std::string p = path(name);
    std::string cmd = std::string(WEFT_PYTHON) + " " + WEFT_SOURCE_DIR +
                      "/scripts/write_tfrecord.py " + p + " " + std::to_string(n);
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return p;
  }
  static void write_text(const std::string& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
  }
  static std::string read_bytes(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  fs::path dir_;
};

const std::vector<std::pair<std::string, FeatureSpec>> kSpec = {
    {"label", FixedLenFeature{kInt64}},
    {"pixels", FixedLenFeature{kFloat32, {2, 2}}},
    {"name", FixedLenFeature{kUInt8}},
    {"tags", VarLenFeature{kInt64}},
};

TEST_F(RecordsTest, ExamplesFromAnIndependentWriterReadBackExactly) {
  std::string file = write_examples("a.tfrecord", 7);
  int i = 0;
  for (const Element& record : tfrecord_dataset({file})) {
    Element e = parse_example(record[0], kSpec);
    ASSERT_EQ(e.size(), 4u);
    EXPECT_EQ(e[0].shape(), Shape{});
    EXPECT_EQ(e[0].item<int64_t>(), i);
    EXPECT_EQ(e[1].shape(), (Shape{2, 2}));
    std::vector<float> px = e[1].to_vector<float>();
    for (int k = 0; k < 4; ++k) EXPECT_EQ(px[k], static_cast<float>(i / 2.0 + k));
    EXPECT_EQ(as_string(e[2]), "ex" + std::to_string(i));
    std::vector<int64_t> tags = e[3].to_vector<int64_t>();
    ASSERT_EQ(tags.size(), static_cast<size_t>(i % 3));
    for (int j = 0; j < i % 3; ++j) EXPECT_EQ(tags[j], 10 * i + j);
    ++i;
  }
  EXPECT_EQ(i, 7);
}

TEST_F(RecordsTest, DamagedAndTruncatedFilesNameTheFileAndTheOffset) {
  std::string file = write_examples("good.tfrecord", 3);
  std::string good = read_bytes(file);
  // The second record starts after the first: 12 header bytes, its data, 4 CRC bytes.
  uint64_t first_length;
  std::memcpy(&first_length, good.data(), 8);
  const uint64_t second = 12 + first_length + 4;
  auto read_all = [&](const std::string& bytes) {
    std::string p = path("damaged.tfrecord");
    write_text(p, bytes);
    for (const Element& e : tfrecord_dataset({p})) (void)e;
  };
  for (auto [offset, what] :
       {std::pair{second + 20, "data's CRC-32C"}, std::pair{second + 2, "length's CRC-32C"}}) {
    std::string bad = good;
    bad[offset] ^= 0x10;
    EXPECT_THAT([&] { read_all(bad); },
                ::testing::ThrowsMessage<DataLoss>(
                    AllOf(HasSubstr("damaged.tfrecord"),
                          HasSubstr("byte offset " + std::to_string(second)), HasSubstr(what))));
  }
  EXPECT_THAT([&] { read_all(good.substr(0, good.size() - 3)); },
              ::testing::ThrowsMessage<DataLoss>(
                  AllOf(HasSubstr("truncated"), HasSubstr("damaged.tfrecord"))));
}

TEST_F(RecordsTest, IgnoreErrorsSkipsTheRestOfADamagedFile) {
  std::string a = write_examples("a.tfrecord", 3), b = write_examples("b.tfrecord", 2);
  std::string bytes = read_bytes(a);
  bytes[20] ^= 0x10;  // the first record's data
  write_text(a, bytes);
  int n = 0;
  for (const Element& e : tfrecord_dataset({a, b}).ignore_errors()) {
    (void)e;
    ++n;
  }
  EXPECT_EQ(n, 2);  // b's records; a is given up at its damaged record
}

TEST_F(RecordsTest, WeftsFramingIsWhatTheReaderReads) {
  std::string p = path("own.tfrecord");
  write_text(p, frame_tfrecord("first") + frame_tfrecord("") + frame_tfrecord("third"));
  std::vector<std::string> got;
  for (const Element& e : tfrecord_dataset({p})) got.push_back(as_string(e[0]));
  EXPECT_THAT(got, ElementsAre("first", "", "third"));
}

TEST_F(RecordsTest, TextLinesAcrossFilesAndResumingMidFile) {
  write_text(path("a.txt"), "alpha\nbeta\r\n\ngamma");
  write_text(path("b.txt"), "delta\n");
  Dataset lines = text_line_dataset({path("a.txt"), path("b.txt")});
  std::vector<std::string> all;
  for (const Element& e : lines) all.push_back(as_string(e[0]));
  EXPECT_THAT(all, ElementsAre("alpha", "beta", "", "gamma", "delta"));
  for (size_t k = 0; k <= all.size(); ++k) {
    Dataset::Iterator it = lines.begin();
    for (size_t i = 0; i < k; ++i) it.next();
    Dataset::Iterator again = lines.begin();
    again.restore_state(it.save_state());
    std::vector<std::string> rest;
    while (std::optional<Element> e = again.next()) rest.push_back(as_string(e->at(0)));
    EXPECT_EQ(rest, std::vector<std::string>(all.begin() + k, all.end())) << "after " << k;
  }
}

TEST_F(RecordsTest, TFRecordIteratorsResumeMidFile) {
  std::string a = write_examples("a.tfrecord", 4), b = write_examples("b.tfrecord", 3);
  Dataset ds = tfrecord_dataset({a, b});
  std::vector<std::string> all;
  for (const Element& e : ds) all.push_back(as_string(e[0]));
  ASSERT_EQ(all.size(), 7u);
  Dataset::Iterator it = ds.begin();
  for (int i = 0; i < 5; ++i) it.next();
  Dataset::Iterator again = ds.begin();
  again.restore_state(it.save_state());
  std::vector<std::string> rest;
  while (std::optional<Element> e = again.next()) rest.push_back(as_string(e->at(0)));
  EXPECT_EQ(rest, std::vector<std::string>(all.begin() + 5, all.end()));
}

// The file names a list_files dataset yields, in its order.
std::vector<std::string> names_of(const Dataset& files) {
  std::vector<std::string> names;
  for (const Element& e : files) names.push_back(fs::path(as_string(e[0])).filename().string());
  return names;
}

TEST_F(RecordsTest, ListFilesSortsOrShufflesAndFeedsReaders) {
  for (const char* n : {"c.txt", "a.txt", "b.txt"}) write_text(path(n), std::string(n) + "\n");
  std::vector<std::string> sorted = names_of(list_files(path("*.txt"), /*shuffle=*/false));
  EXPECT_THAT(sorted, ElementsAre("a.txt", "b.txt", "c.txt"));
  std::vector<std::string> lines;
  for (const Element& e : text_line_dataset(list_files(path("*.txt"), true, 7))) {
    lines.push_back(as_string(e[0]));
  }
  EXPECT_THAT(lines, ::testing::UnorderedElementsAre("a.txt", "b.txt", "c.txt"));
  // The reader reads the files in the order the shuffled list gives them (each holds its name).
  EXPECT_EQ(lines, names_of(list_files(path("*.txt"), true, 7)));
  EXPECT_THAT([&] { list_files(path("*.none")); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("no files match")));

  // 20 files, made in reverse order: that a shuffle leaves them sorted, or that two seeds (or two
  // passes) give one order, is a chance of 1 in 20! (about 4e-19).
  std::vector<std::string> parts;
  for (int i = 0; i < 20; ++i) {
    parts.push_back("part-" + std::to_string(100 + i).substr(1) + ".log");  // part-00.log ...
  }
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) write_text(path(*it), *it + "\n");
  EXPECT_EQ(names_of(list_files(path("*.log"), /*shuffle=*/false)), parts);
  std::vector<std::string> shuffled = names_of(list_files(path("*.log"), true, 7));
  EXPECT_THAT(shuffled, ::testing::UnorderedElementsAreArray(parts));
  EXPECT_NE(shuffled, parts);
  EXPECT_EQ(names_of(list_files(path("*.log"), true, 7)), shuffled);  // same seed, same order
  EXPECT_NE(names_of(list_files(path("*.log"), true, 8)), shuffled);
  EXPECT_NE(names_of(list_files(path("*.log"))), parts);  // shuffled unless asked not to
  // As tf.data's list_files, each pass over one dataset has an order of its own.
  Dataset files = list_files(path("*.log"), true, 7);
  EXPECT_EQ(names_of(files), shuffled);
  std::vector<std::string> second_pass = names_of(files);
  EXPECT_THAT(second_pass, ::testing::UnorderedElementsAreArray(parts));
  EXPECT_NE(second_pass, shuffled);
}

TEST_F(RecordsTest, FixedLengthRecordsBetweenAHeaderAndAFooter) {
  write_text(path("f.bin"), "HDRabcdefghijklFT");  // 3-byte header, 3 records of 4, 2-byte footer
  std::vector<std::string> got;
  for (const Element& e : fixed_length_record_dataset({path("f.bin")}, 4, 3, 2)) {
    got.push_back(as_string(e[0]));
  }
  EXPECT_THAT(got, ElementsAre("abcd", "efgh", "ijkl"));
  EXPECT_THAT(
      [&] {
        for (const Element& e : fixed_length_record_dataset({path("f.bin")}, 5, 3, 2)) (void)e;
      },
      ::testing::ThrowsMessage<DataLoss>(HasSubstr("f.bin")));
}

TEST_F(RecordsTest, ParseExampleErrorsNameTheFeature) {
  std::string file = write_examples("e.tfrecord", 1);  // example 0: no "tags"
  Tensor record = tfrecord_dataset({file}).begin().next()->at(0);
  EXPECT_THAT(
      [&] {
        parse_example(record, {{"tags", FixedLenFeature{kInt64, {2}}}});
      },
      ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("no feature \"tags\"")));
  Element with_default = parse_example(record, {{"tags", FixedLenFeature{kInt64, {2}, {5, 6}}}});
  EXPECT_THAT(with_default[0].to_vector<int64_t>(), ElementsAre(5, 6));
  EXPECT_THAT(
      [&] {
        parse_example(record, {{"label", FixedLenFeature{kFloat32}}});
      },
      ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("feature \"label\"")));
  EXPECT_THAT(
      [&] {
        parse_example(record, {{"pixels", FixedLenFeature{kFloat32, {3}}}});
      },
      ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("4 values")));
  EXPECT_TRUE(parse_example(record, {{"tags", VarLenFeature{kInt64}}})[0].numel() == 0);
  EXPECT_THROW(parse_example(string_tensor("\xff\xff\xff"), kSpec), DataLoss);
}

// tf.data's auto-shard by file: five files of three numbered lines (file k: 10k, 10k+1, 10k+2)
// read as global batches of 4 by two workers with one replica each.
class ShardByFileTest : public RecordsTest {
 protected:
  void SetUp() override {
    RecordsTest::SetUp();
    for (int k = 0; k < 5; ++k) {
      write_text(path("part-" + std::to_string(k) + ".txt"),
                 std::to_string(10 * k) + "\n" + std::to_string(10 * k + 1) + "\n" +
                     std::to_string(10 * k + 2) + "\n");
    }
  }
  static Element number(const Element& line) {
    return {Tensor::scalar(std::stoll(as_string(line[0])), kInt64)};
  }
  // Worker w of 2's rows of a global batch of n (as the strategy cuts it: row_range).
  static FileShard worker(int64_t w) {
    return {.num_shards = 2, .index = w, .local_rows = [w](int64_t n) {
              return n * (w + 1) / 2 - n * w / 2;
            }};
  }
  static std::vector<std::vector<int64_t>> batches(const Dataset& ds) {
    std::vector<std::vector<int64_t>> out;
    for (const Element& b : ds) out.push_back(b[0].to_vector<int64_t>());
    return out;
  }
};

TEST_F(ShardByFileTest, EachWorkerReadsItsFilesInBatchesOfItsRows) {
  Dataset global = text_line_dataset(list_files(path("*.txt"), /*shuffle=*/false))
                       .map(number)
                       .batch(4);
  using Rows = std::vector<std::vector<int64_t>>;
  FileShard w0 = worker(0), w1 = worker(1);
  std::optional<Dataset> mine0 = shard_by_file(global, w0), mine1 = shard_by_file(global, w1);
  ASSERT_TRUE(mine0 && mine1) << w0.unshardable << w1.unshardable;
  EXPECT_EQ(w0.files, 5);
  EXPECT_THAT(mine1->describe(), HasSubstr(".shard(2, 1))"));
  EXPECT_THAT(mine1->describe(), HasSubstr(".batch(2)"));
  // Files 0, 2, 4 and 1, 3: every line once, two rows of each global batch of 4 per worker.
  EXPECT_EQ(batches(*mine0), (Rows{{0, 1}, {2, 20}, {21, 22}, {40, 41}, {42}}));
  EXPECT_EQ(batches(*mine1), (Rows{{10, 11}, {12, 30}, {31, 32}}));
  // A cache is the worker's own, even when the whole pipeline's is already filled.
  Dataset cached = text_line_dataset(list_files(path("*.txt"), /*shuffle=*/false))
                       .map(number)
                       .cache()
                       .batch(4);
  EXPECT_EQ(batches(cached).size(), 4u);  // fills the whole pipeline's cache
  FileShard again1 = worker(1);
  EXPECT_EQ(batches(*shard_by_file(cached, again1)), (Rows{{10, 11}, {12, 30}, {31, 32}}));
  // The tf.data idiom: a file list flat-mapped into a reader per file; and a shuffled list, whose
  // shuffle then draws among the worker's own files.
  Dataset idiom =
      list_files(path("*.txt"), /*shuffle=*/true, /*seed=*/3)
          .flat_map([](const Element& f) { return text_line_dataset({as_string(f[0])}); })
          .map(number)
          .batch(4);
  FileShard again = worker(1);
  std::optional<Dataset> mine = shard_by_file(idiom, again);
  ASSERT_TRUE(mine) << again.unshardable;
  std::vector<int64_t> rows;
  for (const auto& b : batches(*mine)) rows.insert(rows.end(), b.begin(), b.end());
  std::sort(rows.begin(), rows.end());
  EXPECT_THAT(rows, ElementsAre(10, 11, 12, 30, 31, 32));
}

TEST_F(ShardByFileTest, InterleaveOfFileReadersIsDividedByFile) {
  // tf.data's idiom: a file list interleaved into a reader per file. Each worker interleaves its
  // own files: worker 0 files 0, 2, 4, worker 1 files 1, 3, two at a time.
  auto build = [this](int64_t num_parallel_calls) {
    return list_files(path("*.txt"), /*shuffle=*/false)
        .interleave([](const Element& f) { return text_line_dataset({as_string(f[0])}); },
                    {.cycle_length = 2, .num_parallel_calls = num_parallel_calls})
        .map(number)
        .batch(4);
  };
  using Rows = std::vector<std::vector<int64_t>>;
  for (int64_t parallel : {0, 2}) {
    FileShard w0 = worker(0), w1 = worker(1);
    std::optional<Dataset> mine0 = shard_by_file(build(parallel), w0);
    std::optional<Dataset> mine1 = shard_by_file(build(parallel), w1);
    ASSERT_TRUE(mine0 && mine1) << w0.unshardable << w1.unshardable;
    EXPECT_EQ(batches(*mine0), (Rows{{0, 20}, {1, 21}, {2, 22}, {40, 41}, {42}}));
    EXPECT_EQ(batches(*mine1), (Rows{{10, 30}, {11, 31}, {12, 32}}));
  }
}

TEST_F(ShardByFileTest, SaysWhyAPipelineCannotBeDivided) {
  auto why = [](const Dataset& ds) {
    FileShard shard = worker(0);
    EXPECT_FALSE(shard_by_file(ds, shard).has_value()) << ds.describe();
    return shard.unshardable;
  };
  EXPECT_THAT(why(Dataset::range(8).batch(4)), HasSubstr("from_tensor_slices"));
  EXPECT_THAT(why(text_line_dataset({path("part-0.txt")}).batch(4)),
              HasSubstr("has 1 files for 2 workers"));
  EXPECT_THAT(why(text_line_dataset(list_files(path("*.txt")))), HasSubstr("no batch()"));
  EXPECT_THAT(why(text_line_dataset(list_files(path("*.txt"))).batch(1)),
              HasSubstr("global batch of 1 rows is smaller than the 2 workers"));
  Dataset files = text_line_dataset(list_files(path("*.txt"))).map(number);
  EXPECT_THAT(why(Dataset::sample_from_datasets({files, files}).batch(4)),
              HasSubstr("sample_from_datasets"));
}

}  // namespace
}  // namespace weft::data
