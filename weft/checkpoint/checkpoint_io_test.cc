// The checkpoint format: exact round trips of every dtype (0-d, empty and non-contiguous tensors,
// several shards, binary state), atomic replacement, and damage of every kind found and named:
// a flipped byte in a shard or anywhere in the index, a truncated or missing shard, a missing
// index, an uncommitted temporary directory.
#include "weft/checkpoint/checkpoint_io.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "weft/core/crc32c.h"
#include "weft/core/errors.h"
#include "weft/core/internal/io_faults.h"
#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/shape_ops.h"

namespace {

namespace fs = std::filesystem;
namespace ckpt = weft::checkpoint;
using ::testing::HasSubstr;
using weft::Tensor;

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}
void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}
void flip_byte(const std::string& path, uint64_t offset, char mask = 0x01) {
  std::string b = read_bytes(path);
  ASSERT_LT(offset, b.size()) << path;
  b[offset] ^= mask;
  write_bytes(path, b);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  Tensor ca = contiguous(a), cb = contiguous(b);
  return std::memcmp(ca.raw_data(), cb.raw_data(),
                     static_cast<size_t>(ca.numel() * weft::dtype_size(ca.dtype()))) == 0;
}

// Expects `f` to throw DataLoss and returns its message.
template <typename F>
std::string data_loss_message(F&& f) {
  try {
    f();
  } catch (const weft::DataLoss& e) {
    return e.message();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected DataLoss, got " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected DataLoss, nothing was thrown";
  return {};
}

class CheckpointIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::temp_directory_path() /
             ("weft_checkpoint_io_test_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Three tensors and a state blob, in one shard: a = float32 (2, 3), b = int64 (5,), c = 0-d.
  std::string write_small() {
    std::string dir = root_ + "/ckpt-7";
    ckpt::write_checkpoint(dir,
                           {{"model/a", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})},
                            {"model/b", Tensor::from_vector<int64_t>({10, 20, 30, 40, 50})},
                            {"model/c", Tensor::from_vector<double>({3.5}, {})}},
                           {{"iterator", std::string("pos=42\0tail", 11)}});
    return dir;
  }
  const ckpt::TensorEntry& entry(const std::string& dir, const std::string& path) {
    index_ = ckpt::read_index(dir);
    for (const auto& t : index_.tensors) {
      if (t.path == path) return t;
    }
    ADD_FAILURE() << "no tensor " << path;
    return index_.tensors.at(0);
  }

  std::string root_;
  ckpt::CheckpointIndex index_;
};

TEST_F(CheckpointIoTest, RoundTripsEveryDtypeExactly) {
  std::vector<ckpt::SavedTensor> saved = {
      {"bool", Tensor::from_vector<bool>({true, false, true}, {3})},
      {"uint8", Tensor::from_vector<uint8_t>({0, 1, 255, 128}, {2, 2})},
      {"int32", Tensor::from_vector<int32_t>({-2147483647 - 1, 0, 2147483647}, {3})},
      {"int64", Tensor::from_vector<int64_t>({INT64_MIN, -1, INT64_MAX}, {3, 1})},
      {"float16", Tensor::from_vector<weft::float16>({0.5f, -65504.0f, 1e-7f}, {3})},
      {"bfloat16", Tensor::from_vector<weft::bfloat16>({1.0f / 3, -3e38f}, {2})},
      {"float32", Tensor::from_vector<float>({1.0f / 3, -0.0f, 1e-45f, 3.4e38f}, {1, 2, 2})},
      {"float64", Tensor::from_vector<double>({1.0 / 3, -1e-308, 1e308}, {3})},
      {"scalar_f32", Tensor::from_vector<float>({42.5f}, {})},
      {"scalar_bool", Tensor::from_vector<bool>({true}, {})},
      {"empty_f32", Tensor::from_vector<float>({}, {0})},
      {"empty_3d_i64", Tensor::from_vector<int64_t>({}, {2, 0, 3})},
      {"transposed", weft::transpose(Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3}))},
  };
  std::map<std::string, std::string> state = {
      {"binary", std::string("\0\1\2\xff", 4)}, {"empty", ""}, {"text", "epoch=3"}};
  std::string dir = root_ + "/ckpt-1";
  ckpt::write_checkpoint(dir, saved, state);

  ckpt::LoadedCheckpoint loaded = ckpt::read_checkpoint(dir);
  ASSERT_EQ(loaded.tensors.size(), saved.size());
  for (const auto& s : saved) {
    ASSERT_TRUE(loaded.tensors.count(s.path)) << s.path;
    const Tensor& got = loaded.tensors.at(s.path);
    EXPECT_TRUE(same_bytes(got, s.value)) << s.path << ": " << got << " vs " << s.value;
  }
  EXPECT_EQ(loaded.tensors.at("transposed").shape(), (weft::Shape{3, 2}));
  EXPECT_EQ(loaded.tensors.at("transposed").to_vector<int32_t>(),
            (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(loaded.state, state);

  // The layout SPEC §5 describes: one shard, every tensor 64-byte aligned, in write order.
  ckpt::CheckpointIndex index = ckpt::read_index(dir);
  ASSERT_EQ(index.shards.size(), 1u);
  EXPECT_EQ(index.shards[0].file, "data-00000-of-00001");
  ASSERT_EQ(index.tensors.size(), saved.size());
  for (size_t i = 0; i < saved.size(); ++i) {
    EXPECT_EQ(index.tensors[i].path, saved[i].path);
    EXPECT_EQ(index.tensors[i].offset % 64, 0u) << saved[i].path;
    EXPECT_EQ(index.tensors[i].dtype, saved[i].value.dtype());
  }
  EXPECT_EQ(index.tensors[6].length, 16u);  // float32 (1, 2, 2)
  EXPECT_EQ(read_bytes(dir + "/index.json").substr(0, 50),
            "{\"magic\":\"weft-checkpoint\",\"format_version\":2,\"ind");
  // Nothing but the checkpoint is left in the parent: the temporary directory was renamed.
  EXPECT_EQ(std::distance(fs::directory_iterator(root_), fs::directory_iterator()), 1);
  EXPECT_TRUE(ckpt::check_committed(dir).empty());
  EXPECT_TRUE(ckpt::verify_checkpoint(dir).ok);
}

TEST_F(CheckpointIoTest, SplitsIntoShardsAndReadsThemBack) {
  std::vector<ckpt::SavedTensor> saved;
  for (int i = 0; i < 5; ++i) {
    std::vector<float> v(100);
    for (int j = 0; j < 100; ++j) v[j] = static_cast<float>(i * 1000 + j);
    saved.push_back({"t" + std::to_string(i), Tensor::from_vector<float>(v, {10, 10})});
  }
  std::string dir = root_ + "/ckpt-2";
  ckpt::write_checkpoint(dir, saved, {{"s", "state"}}, {.max_shard_bytes = 900});
  ckpt::CheckpointIndex index = ckpt::read_index(dir);
  ASSERT_EQ(index.shards.size(), 3u);  // 400-byte tensors: two per 900-byte shard
  EXPECT_EQ(index.shards[2].file, "data-00002-of-00003");
  EXPECT_EQ(index.tensors[4].shard, "data-00002-of-00003");
  EXPECT_EQ(index.tensors[3].offset, 448u);  // 400 rounded up to 64
  ckpt::LoadedCheckpoint loaded = ckpt::read_checkpoint(dir);
  for (const auto& s : saved) EXPECT_TRUE(same_bytes(loaded.tensors.at(s.path), s.value));
  EXPECT_EQ(loaded.state.at("s"), "state");
}

TEST_F(CheckpointIoTest, RewritingReplacesTheWholeCheckpoint) {
  std::string dir = root_ + "/ckpt-3";
  ckpt::write_checkpoint(dir, {{"x", Tensor::from_vector<float>({1, 2})}}, {{"old", "1"}});
  ckpt::write_checkpoint(dir, {{"y", Tensor::from_vector<int32_t>({7})}}, {});
  ckpt::LoadedCheckpoint loaded = ckpt::read_checkpoint(dir);
  EXPECT_EQ(loaded.tensors.size(), 1u);
  EXPECT_EQ(loaded.tensors.at("y").to_vector<int32_t>(), std::vector<int32_t>{7});
  EXPECT_TRUE(loaded.state.empty());
  EXPECT_EQ(std::distance(fs::directory_iterator(root_), fs::directory_iterator()), 1);
}

TEST_F(CheckpointIoTest, RejectsBadInputAndLeavesNothingBehind) {
  Tensor x = Tensor::from_vector<float>({1});
  EXPECT_THROW(ckpt::write_checkpoint(root_ + "/c", {{"x", x}, {"x", x}}, {}),
               weft::InvalidArgument);
  EXPECT_THROW(ckpt::write_checkpoint(root_ + "/c", {{"", x}}, {}), weft::InvalidArgument);
  EXPECT_THROW(ckpt::write_checkpoint(root_ + "/c", {{"u", Tensor()}}, {}), weft::InvalidArgument);
  EXPECT_THROW(ckpt::write_checkpoint(root_ + "/c.tmp-5", {{"x", x}}, {}), weft::InvalidArgument);
  EXPECT_THROW(ckpt::write_checkpoint(root_ + "/no/such/parent/c", {{"x", x}}, {}),
               weft::FailedPrecondition);
  EXPECT_EQ(std::distance(fs::directory_iterator(root_), fs::directory_iterator()), 0);
  EXPECT_THROW(ckpt::read_checkpoint(root_ + "/absent"), weft::FailedPrecondition);
}

TEST_F(CheckpointIoTest, FlippedByteInShardNamesFileTensorAndOffset) {
  std::string dir = write_small();
  ckpt::TensorEntry b = entry(dir, "model/b");
  std::string shard = dir + "/data-00000-of-00001";
  flip_byte(shard, b.offset + 17);
  std::string msg = data_loss_message([&] { ckpt::read_checkpoint(dir); });
  EXPECT_THAT(msg, HasSubstr(shard));
  EXPECT_THAT(msg, HasSubstr("tensor \"model/b\" at offset " + std::to_string(b.offset)));
  EXPECT_THAT(msg, HasSubstr("CRC32C mismatch"));

  ckpt::VerifyReport report = ckpt::verify_checkpoint(dir);
  EXPECT_FALSE(report.ok);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0], msg);
  // The index is intact, so the damage is not visible to the cheap commit check.
  EXPECT_TRUE(ckpt::check_committed(dir).empty());
}

TEST_F(CheckpointIoTest, EveryFlippedShardByteIsCaught) {
  std::string dir = write_small();
  std::string shard = dir + "/data-00000-of-00001";
  std::string good = read_bytes(shard);
  ckpt::CheckpointIndex index = ckpt::read_index(dir);
  // What each byte belongs to: a tensor, a state blob, or the zero padding between them.
  std::vector<std::string> owner(good.size(), "the padding at offset ");
  for (const auto& t : index.tensors) {
    std::fill_n(owner.begin() + t.offset, t.length, "tensor \"" + t.path + "\" at offset ");
  }
  for (const auto& s : index.state) {
    std::fill_n(owner.begin() + s.offset, s.length, "state blob \"" + s.name + "\" at offset ");
  }
  for (size_t i = 0; i < good.size(); ++i) {
    for (char mask : {'\x01', '\x80'}) {
      flip_byte(shard, i, mask);
      std::string msg = data_loss_message([&] { ckpt::read_checkpoint(dir); });
      EXPECT_THAT(msg, HasSubstr(shard + ": " + owner[i])) << "byte " << i;
      EXPECT_FALSE(ckpt::verify_checkpoint(dir).ok);
      write_bytes(shard, good);
    }
  }
  EXPECT_NO_THROW(ckpt::read_checkpoint(dir));
}

TEST_F(CheckpointIoTest, TruncatedShardNamesTheTensorsCutOff) {
  std::string dir = write_small();
  ckpt::TensorEntry b = entry(dir, "model/b");
  std::string shard = dir + "/data-00000-of-00001";
  fs::resize_file(shard, b.offset + 8);
  std::string msg = data_loss_message([&] { ckpt::read_checkpoint(dir); });
  EXPECT_THAT(msg, HasSubstr(shard + ": tensor \"model/b\" at offset " + std::to_string(b.offset)));
  EXPECT_THAT(msg, HasSubstr("truncated"));
  EXPECT_THAT(ckpt::check_committed(dir), HasSubstr("truncated"));
  ckpt::VerifyReport report = ckpt::verify_checkpoint(dir);
  // b, c and the state blob are all past the end; a is intact.
  ASSERT_EQ(report.problems.size(), 3u);
  EXPECT_THAT(report.problems[1], HasSubstr("tensor \"model/c\""));
  EXPECT_THAT(report.problems[2], HasSubstr("state blob \"iterator\""));
}

TEST_F(CheckpointIoTest, MissingShardIsDataLoss) {
  std::string dir = write_small();
  fs::remove(dir + "/data-00000-of-00001");
  std::string msg = data_loss_message([&] { ckpt::read_checkpoint(dir); });
  EXPECT_THAT(msg, HasSubstr(dir + "/data-00000-of-00001: tensor \"model/a\" at offset 0"));
  EXPECT_THAT(msg, HasSubstr("missing"));
  EXPECT_FALSE(ckpt::check_committed(dir).empty());
}

TEST_F(CheckpointIoTest, GrownShardIsDataLoss) {
  std::string dir = write_small();
  std::string shard = dir + "/data-00000-of-00001";
  write_bytes(shard, read_bytes(shard) + "x");
  EXPECT_THAT(data_loss_message([&] { ckpt::read_checkpoint(dir); }), HasSubstr(shard + ": "));
}

TEST_F(CheckpointIoTest, MissingIndexOrTemporaryNameIsNotCommitted) {
  std::string dir = write_small();
  fs::rename(dir, root_ + "/ckpt-7.tmp-12345");
  std::string msg = data_loss_message([&] { ckpt::read_checkpoint(root_ + "/ckpt-7.tmp-12345"); });
  EXPECT_THAT(msg, HasSubstr("uncommitted"));
  EXPECT_FALSE(ckpt::check_committed(root_ + "/ckpt-7.tmp-12345").empty());

  dir = write_small();
  fs::remove(dir + "/index.json");
  msg = data_loss_message([&] { ckpt::read_checkpoint(dir); });
  EXPECT_THAT(msg, HasSubstr(dir + "/index.json"));
  EXPECT_THAT(msg, HasSubstr("not a committed checkpoint"));
  EXPECT_FALSE(ckpt::verify_checkpoint(dir).ok);
}

TEST_F(CheckpointIoTest, CorruptedIndexEntryNamesTheTensor) {
  std::string dir = write_small();
  std::string path = dir + "/index.json";
  std::string index = read_bytes(path);
  // Change b's shape from [5] to [6]: valid JSON, but not what was written.
  size_t line = index.find("{\"path\":\"model/b\"");
  size_t at = index.find("[5]", line);
  ASSERT_NE(at, std::string::npos);
  index[at + 1] = '6';
  write_bytes(path, index);
  std::string msg = data_loss_message([&] { ckpt::read_checkpoint(dir); });
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("index CRC32C mismatch"));
  EXPECT_THAT(msg, HasSubstr("tensor \"model/b\""));
  EXPECT_THAT(msg, HasSubstr("byte offset " + std::to_string(line)));
}

TEST_F(CheckpointIoTest, EveryFlippedIndexByteIsCaught) {
  std::string dir = write_small();
  std::string path = dir + "/index.json";
  std::string good = read_bytes(path);
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x01;
    write_bytes(path, bad);
    std::string msg = data_loss_message([&] { ckpt::read_index(dir); });
    EXPECT_THAT(msg, HasSubstr(path)) << "byte " << i;
  }
  for (size_t n : {size_t{0}, size_t{10}, good.size() / 2, good.size() - 1}) {
    write_bytes(path, good.substr(0, n));
    EXPECT_THAT(data_loss_message([&] { ckpt::read_index(dir); }), HasSubstr(path));
  }
  write_bytes(path, good);
  EXPECT_NO_THROW(ckpt::read_checkpoint(dir));
}

// Rewrites dir's index header to `version`, with a valid CRC.
void set_format_version(const std::string& dir, int version) {
  std::string path = dir + "/index.json";
  std::string index = read_bytes(path);
  size_t nl = index.find('\n');
  std::string body = index.substr(nl + 1, index.size() - nl - 1 - 3);
  std::string prefix =
      "{\"magic\":\"weft-checkpoint\",\"format_version\":" + std::to_string(version) +
      ",\"index_crc32c\":\"";
  uint32_t crc = weft::crc32c(body.data(), body.size(), weft::crc32c(prefix.data(), prefix.size()));
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", crc);
  write_bytes(path, prefix + hex + "\",\"index\":\n" + body + "\n}\n");
}

TEST_F(CheckpointIoTest, NewerFormatVersionIsFailedPrecondition) {
  // What a future weft would write: a valid index of version 3.
  std::string dir = write_small();
  set_format_version(dir, 3);
  EXPECT_THROW(ckpt::read_checkpoint(dir), weft::FailedPrecondition);
}

TEST_F(CheckpointIoTest, VersionOneCheckpointsStillRead) {
  // A checkpoint of whole tensors is the same in version 1 but for its header.
  std::string dir = write_small();
  set_format_version(dir, 1);
  ckpt::LoadedCheckpoint loaded = ckpt::read_checkpoint(dir);
  EXPECT_EQ(ckpt::read_index(dir).format_version, 1);
  EXPECT_EQ(loaded.tensors.at("model/a").to_vector<float>(),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(loaded.state.at("iterator"), std::string("pos=42\0tail", 11));
}

// Writer `part` of `parts`: rows of "w" (5 x 2) and "v" (3,) as row_range cuts them, and, on
// part 0, the scalar "s" and the state.
void write_part(const std::string& dir, const std::string& id, int part, int parts, float base) {
  Tensor w = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {5, 2});
  Tensor v = Tensor::from_vector<int64_t>({7, 8, 9}, {3});
  std::vector<ckpt::SavedSlice> slices;
  for (auto [name, t] : {std::pair{"w", w}, {"v", v}}) {
    int64_t rows = t.dim(0), lo = rows * part / parts, hi = rows * (part + 1) / parts;
    Tensor rows_of = weft::slice(t, {weft::Slice{lo, hi}});
    if (t.dtype() == weft::kFloat32) {
      rows_of = weft::add(rows_of, Tensor::scalar(base, weft::kFloat32));
    }
    weft::Shape offsets(static_cast<size_t>(t.rank()), 0);
    offsets[0] = lo;
    slices.push_back({name, rows_of, t.shape(), offsets});
  }
  std::map<std::string, std::string> state;
  if (part == 0) {
    slices.push_back({"s", Tensor::from_vector<double>({base}, {}), {}, {}});
    state["step"] = std::to_string(base);
  }
  ckpt::write_checkpoint_part(dir, id, part, parts, slices, state);
}

TEST_F(CheckpointIoTest, SeveralWritersWriteOneCheckpointOfSlices) {
  std::string dir = root_ + "/ckpt-3";
  std::vector<std::thread> writers;
  for (int k = 0; k < 3; ++k) writers.emplace_back([&, k] { write_part(dir, "save1", k, 3, 100); });
  for (auto& t : writers) t.join();
  EXPECT_FALSE(fs::exists(dir)) << "visible before the commit";
  ckpt::commit_checkpoint(dir, "save1", 3);
  ckpt::LoadedCheckpoint loaded = ckpt::read_checkpoint(dir);
  EXPECT_EQ(loaded.tensors.at("w").shape(), (weft::Shape{5, 2}));
  EXPECT_EQ(loaded.tensors.at("w").to_vector<float>(),
            (std::vector<float>{100, 101, 102, 103, 104, 105, 106, 107, 108, 109}));
  EXPECT_EQ(loaded.tensors.at("v").to_vector<int64_t>(), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(loaded.tensors.at("s").item<double>(), 100);
  EXPECT_EQ(loaded.state.at("step"), std::to_string(100.0f));
  ckpt::CheckpointIndex index = ckpt::read_index(dir);
  EXPECT_EQ(index.format_version, 2);
  ASSERT_EQ(index.shards.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(index.shards[static_cast<size_t>(k)].file,
              "data-0000" + std::to_string(k) + "-of-00003");
  }
  // Only the data files and the index are committed; no temporary directory is left.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 4);
  EXPECT_EQ(std::distance(fs::directory_iterator(root_), fs::directory_iterator()), 1);
  EXPECT_TRUE(ckpt::verify_checkpoint(dir).ok);
}

// A region is read from the stored entries that overlap it only (a parameter server restoring its
// shard): across slices of other boundaries, of a whole tensor, of a 0-d one; damage elsewhere
// goes unread, damage in an entry it needs is DataLoss naming it.
TEST_F(CheckpointIoTest, RegionsAreReadFromTheEntriesThatOverlapThemOnly) {
  std::string dir = root_ + "/ckpt-3";
  for (int k = 0; k < 3; ++k) write_part(dir, "save1", k, 3, 100);  // w's rows: [0,1) [1,3) [3,5)
  ckpt::commit_checkpoint(dir, "save1", 3);
  std::map<std::string, std::string> state;
  std::vector<Tensor> got = ckpt::read_checkpoint_regions(
      dir, {{"w", {2, 1}, {2, 1}}, {"w", {0, 0}, {5, 2}}, {"v", {1}, {2}}, {"s", {}, {}}}, &state);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].shape(), (weft::Shape{2, 1}));
  EXPECT_EQ(got[0].to_vector<float>(), (std::vector<float>{105, 107}));
  EXPECT_EQ(got[1].to_vector<float>(),
            (std::vector<float>{100, 101, 102, 103, 104, 105, 106, 107, 108, 109}));
  EXPECT_EQ(got[2].to_vector<int64_t>(), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(got[3].item<double>(), 100);
  EXPECT_EQ(state.at("step"), std::to_string(100.0f));

  // w's last slice damaged: the first rows still read, the last ones are DataLoss naming it.
  ckpt::TensorEntry last = entry(dir, "w");
  for (const auto& t : index_.tensors) {
    if (t.path == "w" && t.slice_offsets[0] == 3) last = t;
  }
  ASSERT_EQ(last.slice_offsets[0], 3);
  flip_byte(dir + "/" + last.shard, last.offset + 2);
  EXPECT_EQ(ckpt::read_checkpoint_regions(dir, {{"w", {0, 0}, {3, 2}}})[0].to_vector<float>(),
            (std::vector<float>{100, 101, 102, 103, 104, 105}));
  std::string msg = data_loss_message([&] {
    ckpt::read_checkpoint_regions(dir, {{"w", {4, 0}, {1, 2}}});
  });
  EXPECT_THAT(msg, HasSubstr(dir + "/" + last.shard + ": tensor \"w\" at offset"));
  EXPECT_THAT(msg, HasSubstr("CRC32C mismatch"));

  // A whole tensor, and what is not there.
  std::string small = write_small();
  EXPECT_EQ(
      ckpt::read_checkpoint_regions(small, {{"model/a", {1, 0}, {1, 3}}})[0].to_vector<float>(),
      (std::vector<float>{4, 5, 6}));
  try {
    ckpt::read_checkpoint_regions(small, {{"model/a", {1, 1}, {1, 3}}});
    ADD_FAILURE() << "a region outside the tensor was read";
  } catch (const weft::InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("a region of shape (1, 3) at (1, 1) lies outside tensor "
                                       "\"model/a\" of shape (2, 3)"));
  }
  EXPECT_THROW(ckpt::read_checkpoint_regions(small, {{"model/z", {0}, {1}}}),
               weft::InvalidArgument);
}

TEST_F(CheckpointIoTest, AMissingOrMixedPartIsRefusedNamingTheFile) {
  std::string dir = root_ + "/ckpt-4";
  // Part 1 never written: the commit names its index file.
  write_part(dir, "a", 0, 2, 1);
  EXPECT_THAT(data_loss_message([&] { ckpt::commit_checkpoint(dir, "a", 2); }),
              HasSubstr("ckpt-4.tmp-a/index-00001-of-00002.json: part 1 of 2"));
  EXPECT_FALSE(fs::exists(dir));
  // A part written for another number of writers: its rows overlap this save's.
  write_part(dir, "b", 0, 2, 1);
  write_part(dir, "b", 1, 3, 1);
  fs::rename(root_ + "/ckpt-4.tmp-b/index-00001-of-00003.json",
             root_ + "/ckpt-4.tmp-b/index-00001-of-00002.json");
  std::string mixed = data_loss_message([&] { ckpt::commit_checkpoint(dir, "b", 2); });
  EXPECT_THAT(mixed, HasSubstr("tensor \"w\""));
  EXPECT_THAT(mixed, ::testing::AnyOf(HasSubstr("overlap"), HasSubstr("is missing")));
  // A committed checkpoint whose data file is swapped for another save's: the CRC names it.
  write_part(dir, "c", 0, 2, 1);
  write_part(dir, "c", 1, 2, 1);
  ckpt::commit_checkpoint(dir, "c", 2);
  write_part(root_ + "/other", "d", 1, 2, 2);
  fs::copy_file(root_ + "/other.tmp-d/data-00001-of-00002", dir + "/data-00001-of-00002",
                fs::copy_options::overwrite_existing);
  EXPECT_THAT(data_loss_message([&] { ckpt::read_checkpoint(dir); }),
              HasSubstr("ckpt-4/data-00001-of-00002: tensor \"w\""));
}

TEST_F(CheckpointIoTest, KillingTheWritersAtEveryStepLeavesTheOldOrTheNewCheckpoint) {
  // A two-writer save of "new" values over a committed checkpoint of "old" ones, killed (in a
  // forked child) at each of its file-system steps in turn. Afterwards the checkpoint reads back
  // whole, old or new, never mixed, and never refused: a save writes only under its temporary
  // name and replaces the checkpoint in one rename (an exchange), so at every step the name holds
  // one complete checkpoint. (A killed process loses nothing it wrote; a power cut is another
  // matter, which the fsyncs before each rename are for.)
  std::string dir = root_ + "/ckpt-9";
  auto save = [&](float base, const std::string& id) {
    write_part(dir, id, 0, 2, base);
    write_part(dir, id, 1, 2, base);
    ckpt::commit_checkpoint(dir, id, 2);
  };
  save(1, "first");
  const uint64_t before = weft::io::internal::io_steps();
  save(2, "counted");
  const uint64_t steps = weft::io::internal::io_steps() - before;
  ASSERT_GE(steps, 20u) << "a save has fewer steps than the crash points to test";
  RecordProperty("crash_points", std::to_string(steps));
  int old_seen = 0, new_seen = 0, refused = 0, old_after_new = 0;
  for (uint64_t k = 1; k <= steps; ++k) {
    SCOPED_TRACE("killed at step " + std::to_string(k) + " of " + std::to_string(steps));
    fs::remove_all(root_);
    fs::create_directories(root_);
    save(1, "old");
    EXPECT_EXIT(
        {
          weft::io::internal::crash_after_io_steps(k);
          save(2, "new");
        },
        testing::ExitedWithCode(weft::io::internal::kIoFaultExitStatus), "");
    try {
      ckpt::LoadedCheckpoint loaded = ckpt::read_checkpoint(dir);
      const double base = loaded.tensors.at("s").item<double>();
      ASSERT_TRUE(base == 1 || base == 2) << base;
      (base == 1 ? old_seen : new_seen)++;
      if (base == 1 && new_seen > 0) ++old_after_new;
      std::vector<float> w;
      for (int i = 0; i < 10; ++i) w.push_back(static_cast<float>(base) + static_cast<float>(i));
      EXPECT_EQ(loaded.tensors.at("w").to_vector<float>(), w);
      EXPECT_EQ(loaded.state.at("step"), std::to_string(static_cast<float>(base)));
    } catch (const weft::DataLoss& e) {
      ++refused;
      ADD_FAILURE() << "refused: " << e.message();
      EXPECT_THAT(e.message(), HasSubstr(dir)) << "a refusal must name the checkpoint's file";
    }
  }
  // Every crash point recovered: the old checkpoint until the rename, the new one after it.
  EXPECT_EQ(refused, 0);
  EXPECT_EQ(static_cast<uint64_t>(old_seen + new_seen), steps);
  EXPECT_GT(old_seen, 0);
  EXPECT_GT(new_seen, 0);
  EXPECT_EQ(old_after_new, 0) << "the old checkpoint came back after the new one was seen";
}

}  // namespace
