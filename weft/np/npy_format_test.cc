#include "weft/np/npy_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/core/errors.h"

namespace weft::np {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Whether a writer left its temporary file (`path` + ".tmp-<pid>") behind.
bool has_temporary_file(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string name = p.filename().string();
  for (const auto& e : std::filesystem::directory_iterator(p.parent_path())) {
    const std::string other = e.path().filename().string();
    if (other.starts_with(name) && other.substr(name.size()).starts_with(".tmp")) return true;
  }
  return false;
}

constexpr DType kNpyDTypes[] = {kBool, kUInt8, kInt32, kInt64, kFloat16, kFloat32, kFloat64};

// Element i of every test array; expected() in the Python scripts below computes the same values.
NpyArray make_array(DType dtype, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  const size_t itemsize = static_cast<size_t>(dtype_size(dtype));
  NpyArray a{dtype, shape, std::vector<uint8_t>(static_cast<size_t>(count) * itemsize)};
  for (int64_t i = 0; i < count; ++i) {
    dispatch_dtype(dtype, [&]<typename T>() {
      T v;
      if constexpr (std::is_same_v<T, bool>) {
        v = i % 3 == 0;
      } else if constexpr (std::is_same_v<T, uint8_t>) {
        v = static_cast<uint8_t>(i * 7 % 256);
      } else if constexpr (std::is_same_v<T, int32_t>) {
        v = static_cast<int32_t>(i * 37 - 100);
      } else if constexpr (std::is_same_v<T, int64_t>) {
        v = i * 1000000000000 - 7;
      } else if constexpr (std::is_same_v<T, double>) {
        v = static_cast<double>(i) * 0.25 - 1.5;
      } else {
        v = T(static_cast<float>(i) * 0.25f - 1.5f);
      }
      std::memcpy(a.data.data() + static_cast<size_t>(i) * itemsize, &v, itemsize);
    });
  }
  return a;
}

constexpr char kPythonExpected[] = R"(
import numpy as np, sys, zipfile

def expected(dtype, shape):
    i = np.arange(int(np.prod(shape)), dtype=np.int64)
    v = {'bool': i % 3 == 0, 'uint8': i * 7 % 256, 'int32': i * 37 - 100,
         'int64': i * 10**12 - 7}.get(dtype, i * 0.25 - 1.5)
    return v.astype(dtype).reshape(shape)

def check(a, dtype, shape, what):
    e = expected(dtype, shape)
    if a.dtype != e.dtype or a.shape != e.shape or not np.array_equal(a, e):
        sys.exit('%s: got %s %s %r, expected %s %s %r' % (what, a.dtype, a.shape, a, e.dtype,
                                                           e.shape, e))
)";

std::string py_shape(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (int64_t d : shape) s += std::to_string(d) + ",";
  return s + ")";
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A .npy file with a hand-written header dict, padded like NumPy's, for inputs our writer never
// produces.
std::vector<uint8_t> npy_bytes(const std::string& dict, const std::vector<uint8_t>& data,
                               int major = 1) {
  const size_t preamble = major == 1 ? 10 : 12;
  std::string header = dict;
  header.append((64 - (preamble + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  for (size_t i = 0; i < preamble - 8; ++i) out.push_back((header.size() >> (8 * i)) & 0xff);
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

template <typename T>
std::vector<uint8_t> le_bytes(std::initializer_list<T> values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

// The message of the ErrorT that f throws; fails the test if it throws nothing.
template <typename ErrorT, typename F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const ErrorT& e) {
    return e.message();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

class NpyFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "weft_npy_format_test_" + std::to_string(::getpid()) + "/";
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs a script with Debian's python3, which has NumPy (the one first on PATH may not), and
  // returns its exit status and output.
  std::pair<int, std::string> run_python(const std::string& body) {
    const std::string script = dir_ + "script.py";
    std::ofstream(script) << kPythonExpected << body;
    FILE* pipe = ::popen(("/usr/bin/python3 " + script + " 2>&1").c_str(), "r");
    EXPECT_NE(pipe, nullptr);
    std::string output;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
    return {::pclose(pipe), output};
  }

  std::string dir_;
};

TEST_F(NpyFormatTest, RoundTripsEveryDtypeAndShape) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {5}, {2, 3}, {2, 0, 4}, {3, 1, 2, 2}};
  for (DType dtype : kNpyDTypes) {
    for (const auto& shape : shapes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + py_shape(shape));
      const NpyArray a = make_array(dtype, shape);
      const std::vector<uint8_t> bytes = serialize_npy(a);
      ASSERT_GE(bytes.size(), a.data.size());
      const size_t data_offset = bytes.size() - a.data.size();
      EXPECT_EQ(data_offset % 64, 0u);
      EXPECT_EQ(bytes[data_offset - 1], '\n');
      EXPECT_EQ(parse_npy(bytes.data(), bytes.size(), "mem.npy"), a);
    }
  }
}

TEST_F(NpyFormatTest, WritesNumPysHeaderLayout) {
  const NpyArray a = make_array(kFloat32, {2, 3});
  const std::vector<uint8_t> bytes = serialize_npy(a);
  ASSERT_EQ(bytes.size(), 128u + 24u);
  const std::string header(bytes.begin(), bytes.begin() + 128);
  EXPECT_EQ(header.substr(0, 10), std::string("\x93NUMPY\x01\x00\x76\x00", 10));
  EXPECT_EQ(header.substr(10), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" +
                                   std::string(58, ' ') + "\n");
  const auto header_of = [](DType dtype, std::vector<int64_t> shape) {
    const std::vector<uint8_t> b = serialize_npy(make_array(dtype, shape));
    return std::string(b.begin() + 10, b.end());
  };
  EXPECT_THAT(header_of(kUInt8, {5}), HasSubstr("'descr': '|u1', 'fortran_order': False, "
                                                "'shape': (5,), }"));
  EXPECT_THAT(header_of(kBool, {}), HasSubstr("'descr': '|b1', 'fortran_order': False, "
                                              "'shape': (), }"));
  EXPECT_THAT(header_of(kInt64, {0}), HasSubstr("'<i8'"));
  EXPECT_THAT(header_of(kFloat16, {0}), HasSubstr("'<f2'"));
}

TEST_F(NpyFormatTest, WritesAndReadsFiles) {
  const std::string path = dir_ + "a.npy";
  write_npy_file(path, make_array(kFloat64, {4, 2}));
  write_npy_file(path, make_array(kInt32, {3}));  // replaces the first file
  EXPECT_EQ(read_npy_file(path), make_array(kInt32, {3}));
  EXPECT_FALSE(has_temporary_file(path));
}

TEST_F(NpyFormatTest, RejectsArraysNumPyCannotRepresent) {
  EXPECT_THAT(error_message<InvalidArgument>([] { serialize_npy(make_array(kBFloat16, {2})); }),
              HasSubstr("cast to float32 first"));
  NpyArray short_data = make_array(kFloat32, {2, 3});
  short_data.data.pop_back();
  EXPECT_THAT(error_message<InvalidArgument>([&] { serialize_npy(short_data); }),
              HasSubstr("data holds 23 bytes, but shape (2, 3) of float32 needs 24"));
  EXPECT_THAT(error_message<InvalidArgument>([] {
                serialize_npy(NpyArray{kUInt8, {2, -1}, {}});
              }),
              HasSubstr("negative dimension -1 in shape (2, -1)"));

  const std::string path = dir_ + "bf16.npy";
  EXPECT_THAT(
      error_message<InvalidArgument>([&] { write_npy_file(path, make_array(kBFloat16, {})); }),
      HasSubstr(path + ": cannot write bfloat16"));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(has_temporary_file(path));
}

TEST_F(NpyFormatTest, ReadsBigEndian) {
  const std::vector<uint8_t> i4 =
      npy_bytes("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }",
                {0x00, 0x00, 0x01, 0x02, 0xff, 0xff, 0xff, 0xfe});
  EXPECT_EQ(parse_npy(i4.data(), i4.size(), "be.npy"),
            (NpyArray{kInt32, {2}, le_bytes<int32_t>({258, -2})}));
  const std::vector<uint8_t> f8 = npy_bytes(
      "{'descr': '>f8', 'fortran_order': False, 'shape': (), }", {0x3f, 0xf8, 0, 0, 0, 0, 0, 0});
  EXPECT_EQ(parse_npy(f8.data(), f8.size(), "be.npy"),
            (NpyArray{kFloat64, {}, le_bytes<double>({1.5})}));
  const std::vector<uint8_t> u1 =
      npy_bytes("{'descr': '>u1', 'fortran_order': False, 'shape': (2,), }", {7, 9});
  EXPECT_EQ(parse_npy(u1.data(), u1.size(), "be.npy"), (NpyArray{kUInt8, {2}, {7, 9}}));
}

TEST_F(NpyFormatTest, ReadsFortranOrderAsCOrder) {
  // [[0, 1, 2], [3, 4, 5]] stored column by column.
  const std::vector<uint8_t> bytes =
      npy_bytes("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }",
                le_bytes<int32_t>({0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(parse_npy(bytes.data(), bytes.size(), "f.npy"),
            (NpyArray{kInt32, {2, 3}, le_bytes<int32_t>({0, 1, 2, 3, 4, 5})}));
  // Element [i][j][k] = 100i + 10j + k, Fortran order: i varies fastest.
  std::vector<int64_t> fortran;
  for (int k = 0; k < 2; ++k) {
    for (int j = 0; j < 3; ++j) {
      for (int i = 0; i < 2; ++i) fortran.push_back(100 * i + 10 * j + k);
    }
  }
  std::vector<uint8_t> data(fortran.size() * 8);
  std::memcpy(data.data(), fortran.data(), data.size());
  const std::vector<uint8_t> rank3 =
      npy_bytes("{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3, 2), }", data);
  EXPECT_EQ(parse_npy(rank3.data(), rank3.size(), "f.npy"),
            (NpyArray{kInt64,
                      {2, 3, 2},
                      le_bytes<int64_t>({0, 1, 10, 11, 20, 21, 100, 101, 110, 111, 120, 121})}));
}

TEST_F(NpyFormatTest, ReadsVersions2And3AndOlderHeaderSpellings) {
  const NpyArray expected{kInt64, {3}, le_bytes<int64_t>({1, -2, 3})};
  for (int major : {2, 3}) {
    const std::vector<uint8_t> bytes = npy_bytes(
        "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", expected.data, major);
    EXPECT_EQ(parse_npy(bytes.data(), bytes.size(), "v.npy"), expected) << major;
  }
  // Python 2's long literals, double quotes, any key order and no trailing comma.
  const std::vector<uint8_t> old =
      npy_bytes("{\"shape\": (3L,), \"fortran_order\": False, \"descr\": \"=i8\"}", expected.data);
  EXPECT_EQ(parse_npy(old.data(), old.size(), "old.npy"), expected);
}

TEST_F(NpyFormatTest, ReadsAnyNonzeroBoolByteAsTrue) {
  const std::vector<uint8_t> bytes =
      npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", {0, 2, 255});
  EXPECT_EQ(parse_npy(bytes.data(), bytes.size(), "b.npy"), (NpyArray{kBool, {3}, {0, 1, 1}}));
}

TEST_F(NpyFormatTest, MalformedNpyIsDataLossNamingSourceOffsetAndFoundValue) {
  const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': ";
  const std::vector<uint8_t> six_floats(24, 0);
  std::vector<uint8_t> v4 = npy_bytes(f4 + "(6,), }", six_floats);
  v4[6] = 4;
  std::vector<uint8_t> short_header = npy_bytes(f4 + "(6,), }", {});
  short_header.resize(40);
  struct Case {
    std::string what;
    std::vector<uint8_t> bytes;
    std::vector<std::string> message_parts;
  };
  const std::vector<Case> cases = {
      {"zip instead of npy",
       {'P', 'K', 3, 4, 20, 0, 0, 0, 8, 0},
       {"not a .npy file", "byte offset 0", "found 50 4b 03 04 14 00 00 00"}},
      {"empty", {}, {"not a .npy file", "found no bytes"}},
      {"version 4.0", v4, {"unsupported .npy format version 4.0 at byte offset 6"}},
      {"truncated header",
       short_header,
       {"truncated .npy header", "announces 118 header bytes from byte offset 10, found 30"}},
      {"bad fortran_order",
       npy_bytes("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (6,), }", six_floats),
       {"malformed .npy header", "expected True or False", "at byte offset 44",
        "found 'Maybe, 'shape': "}},
      {"unterminated dict",
       npy_bytes("{'descr': '<f4'", {}),
       {"expected ',' or '}' after the value of 'descr'", "found the end of the header"}},
      {"not a 1-tuple", npy_bytes(f4 + "(6), }", six_floats), {"',' after the only dimension"}},
      {"unknown dtype",
       npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", six_floats),
       {"unsupported dtype '<c8'", "at byte offset 20", "expected one of '<f2'"}},
      {"structured dtype",
       npy_bytes("{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (3,), }", {}),
       {"structured dtype", "byte offset 20"}},
      {"negative dim",
       npy_bytes(f4 + "(2, -3), }", six_floats),
       {"negative dimension -3", "byte offset 64", "expected sizes >= 0"}},
      {"missing key",
       npy_bytes("{'descr': '<f4', 'fortran_order': False}", six_floats),
       {"has no 'shape' key"}},
      {"unknown key",
       npy_bytes(f4 + "(6,), 'order': 'C'}", six_floats),
       {"unexpected key 'order'", "byte offset 66"}},
      {"short data",
       npy_bytes(f4 + "(2, 3), }", std::vector<uint8_t>(20)),
       {"truncated data: shape (2, 3) of float32 needs 24 data bytes after the header at byte "
        "offset 128, found 20"}},
      {"trailing data",
       npy_bytes(f4 + "(2, 3), }", std::vector<uint8_t>(25)),
       {"trailing bytes", "needs 24 data bytes", "found 25"}},
      {"overflowing shape",
       npy_bytes(f4 + "(4294967296, 4294967296), }", {}),
       {"needs more than 2^64 bytes"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string message = error_message<DataLoss>(
        [&] { parse_npy(c.bytes.data(), c.bytes.size(), "bad_input.npy"); });
    EXPECT_THAT(message, HasSubstr("bad_input.npy: "));
    for (const std::string& part : c.message_parts) EXPECT_THAT(message, HasSubstr(part));
  }
}

TEST_F(NpyFormatTest, FileErrorsNameThePath) {
  const std::string missing = dir_ + "missing.npy";
  EXPECT_THAT(error_message<FailedPrecondition>([&] { read_npy_file(missing); }),
              HasSubstr("cannot open " + missing + ": No such file or directory"));

  const std::string truncated = dir_ + "truncated.npy";
  std::vector<uint8_t> bytes = serialize_npy(make_array(kFloat32, {10}));
  bytes.resize(bytes.size() - 3);
  write_bytes(truncated, bytes);
  EXPECT_THAT(error_message<DataLoss>([&] { read_npy_file(truncated); }),
              HasSubstr(truncated + ": truncated data: shape (10,) of float32 needs 40 data "
                                    "bytes after the header at byte offset 128, found 37"));

  const std::string unwritable = dir_ + "no_such_dir/a.npy";
  EXPECT_THAT(error_message<FailedPrecondition>(
                  [&] { write_npy_file(unwritable, make_array(kUInt8, {1})); }),
              HasSubstr("cannot create " + unwritable + ".tmp-"));
}

class NpzRoundTripTest : public NpyFormatTest, public ::testing::WithParamInterface<bool> {};

TEST_P(NpzRoundTripTest, RoundTripsNamesOrderAndValues) {
  std::vector<std::pair<std::string, NpyArray>> arrays;
  for (DType dtype : kNpyDTypes) {
    arrays.emplace_back(std::string("z_") + std::string(dtype_name(dtype)),
                        make_array(dtype, {3, 4}));
  }
  arrays.emplace_back("scalar", make_array(kFloat64, {}));
  arrays.emplace_back("empty", make_array(kInt32, {0, 5}));
  arrays.emplace_back("layer/0.kernel", make_array(kFloat32, {2, 2}));
  arrays.emplace_back("naïve", make_array(kUInt8, {1}));
  const std::string path = dir_ + "a.npz";
  write_npz_file(path, arrays, /*compress=*/GetParam());
  EXPECT_EQ(read_npz_file(path), arrays);
  EXPECT_FALSE(has_temporary_file(path));
}

INSTANTIATE_TEST_SUITE_P(StoredAndDeflated, NpzRoundTripTest, ::testing::Bool());

TEST_F(NpyFormatTest, CompressesWhenAsked) {
  const NpyArray zeros{kFloat32, {10000}, std::vector<uint8_t>(40000, 0)};
  write_npz_file(dir_ + "stored.npz", {{"z", zeros}});
  write_npz_file(dir_ + "deflated.npz", {{"z", zeros}}, /*compress=*/true);
  EXPECT_GT(std::filesystem::file_size(dir_ + "stored.npz"), 40000u);
  EXPECT_LT(std::filesystem::file_size(dir_ + "deflated.npz"), 1000u);
  EXPECT_EQ(read_npz_file(dir_ + "deflated.npz")[0].second, zeros);
}

TEST_F(NpyFormatTest, EmptyNpz) {
  write_npz_file(dir_ + "empty.npz", {});
  EXPECT_THAT(read_npz_file(dir_ + "empty.npz"), IsEmpty());
}

TEST_F(NpyFormatTest, RejectsDuplicateNamesBeforeWriting) {
  const std::string path = dir_ + "dup.npz";
  EXPECT_THAT(
      error_message<InvalidArgument>([&] {
        write_npz_file(path, {{"a", make_array(kUInt8, {1})}, {"a", make_array(kUInt8, {2})}});
      }),
      HasSubstr(path + ": duplicate array name 'a'"));
  EXPECT_THAT(error_message<InvalidArgument>([&] {
                write_npz_file(path, {{"w", make_array(kBFloat16, {1})}});
              }),
              HasSubstr(path + ": array 'w': cannot write bfloat16"));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(has_temporary_file(path));
}

TEST_F(NpyFormatTest, CorruptNpzIsDataLoss) {
  const NpyArray pattern{kUInt8, {64}, std::vector<uint8_t>(64, 0xab)};
  const std::string path = dir_ + "c.npz";
  write_npz_file(path, {{"a", pattern}});
  const std::vector<uint8_t> good = read_bytes(path);

  std::vector<uint8_t> flipped = good;
  const auto data = std::search_n(flipped.begin(), flipped.end(), 64, 0xab);
  ASSERT_NE(data, flipped.end());
  data[10] = 0xac;
  write_bytes(path, flipped);
  std::string message = error_message<DataLoss>([&] { read_npz_file(path); });
  EXPECT_THAT(message, HasSubstr(path + ": entry 'a.npy': CRC-32 of the data at byte offset 55"));
  EXPECT_THAT(message, HasSubstr("the archive is corrupt"));

  write_bytes(path, std::vector<uint8_t>(good.begin(), good.begin() + good.size() / 2));
  EXPECT_THAT(error_message<DataLoss>([&] { read_npz_file(path); }),
              HasSubstr(path + ": not a ZIP archive: expected an end-of-central-directory"));

  write_bytes(path, serialize_npy(pattern));
  EXPECT_THAT(error_message<DataLoss>([&] { read_npz_file(path); }),
              HasSubstr(path + ": not a ZIP archive"));

  // A central directory pointing past the data.
  std::vector<uint8_t> bad_offset = good;
  const size_t end = bad_offset.size() - 22;
  bad_offset[end + 16] -= 1;
  write_bytes(path, bad_offset);
  EXPECT_THAT(error_message<DataLoss>([&] { read_npz_file(path); }),
              HasSubstr("expected central directory entry 0 of 1 (50 4b 01 02)"));

  write_npz_file(path, {{"a", make_array(kFloat64, {500})}}, /*compress=*/true);
  std::vector<uint8_t> garbled = read_bytes(path);
  for (size_t i = 100; i < 140; ++i) garbled[i] ^= 0x5a;
  write_bytes(path, garbled);
  EXPECT_THAT(error_message<DataLoss>([&] { read_npz_file(path); }),
              HasSubstr(path + ": entry 'a.npy': "));
}

TEST_F(NpyFormatTest, NumPyLoadsOurFiles) {
  struct Case {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
  };
  std::vector<Case> cases;
  for (DType dtype : kNpyDTypes) {
    for (const auto& shape : std::vector<std::vector<int64_t>>{{}, {0}, {7}, {2, 3, 4}, {3, 0}}) {
      cases.push_back({"a" + std::to_string(cases.size()), dtype, shape});
    }
  }
  std::string py_cases = "cases = [";
  std::vector<std::pair<std::string, NpyArray>> arrays;
  for (const Case& c : cases) {
    arrays.emplace_back(c.name, make_array(c.dtype, c.shape));
    write_npy_file(dir_ + c.name + ".npy", arrays.back().second);
    py_cases += "('" + c.name + "', '" + std::string(dtype_name(c.dtype)) + "', " +
                py_shape(c.shape) + "), ";
  }
  py_cases += "]\n";
  write_npz_file(dir_ + "stored.npz", arrays);
  write_npz_file(dir_ + "deflated.npz", arrays, /*compress=*/true);
  write_npz_file(dir_ + "empty.npz", {});
  const auto [status, output] = run_python(py_cases + "d = '" + dir_ + R"('
for name, dtype, shape in cases:
    check(np.load(d + name + '.npy'), dtype, shape, name + '.npy')
for archive in ['stored.npz', 'deflated.npz']:
    with np.load(d + archive) as z:
        if z.files != [c[0] for c in cases]:
            sys.exit('%s names: %s' % (archive, z.files))
        for name, dtype, shape in cases:
            check(z[name], dtype, shape, archive + ':' + name)
    with zipfile.ZipFile(d + archive) as z:
        if z.testzip() is not None:
            sys.exit(archive + ': zipfile CRC check failed')
with np.load(d + 'empty.npz') as z:
    if z.files:
        sys.exit('empty.npz has %s' % z.files)
print('checked', len(cases))
)");
  EXPECT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("checked 35"));
}

TEST_F(NpyFormatTest, ReadsNumPysFiles) {
  const auto [status, output] = run_python("d = '" + dir_ + R"('
dtypes = ['bool', 'uint8', 'int32', 'int64', 'float16', 'float32', 'float64']
shapes = [(), (0,), (7,), (2, 3, 4)]
for t in dtypes:
    for s in shapes:
        np.save(d + '%s_%d.npy' % (t, len(s) if s != (0,) else 9), expected(t, s))
np.save(d + 'fortran.npy', np.asfortranarray(expected('int32', (2, 3, 4))))
np.save(d + 'fortran_f8.npy', np.asfortranarray(expected('float64', (3, 5))))
np.save(d + 'big_i4.npy', expected('int32', (5,)).astype('>i4'))
np.save(d + 'big_f8.npy', expected('float64', (2, 2)).astype('>f8'))
np.save(d + 'big_f2.npy', np.asfortranarray(expected('float16', (2, 3)).astype('>f2')))
arrays = {'w': expected('float32', (3, 4)), 'b': expected('int64', (4,)),
          'flag': expected('bool', ()), 'e': expected('uint8', (0, 2))}
np.savez(d + 'savez.npz', **arrays)
np.savez_compressed(d + 'savez_compressed.npz', **arrays)
np.savez(d + 'positional.npz', expected('float16', (2,)), expected('int32', (3,)))
print('written')
)");
  ASSERT_EQ(status, 0) << output;

  for (DType dtype : kNpyDTypes) {
    for (const auto& shape : std::vector<std::vector<int64_t>>{{}, {0}, {7}, {2, 3, 4}}) {
      const std::string name = std::string(dtype_name(dtype)) + "_" +
                               std::to_string(shape == std::vector<int64_t>{0} ? 9 : shape.size());
      EXPECT_EQ(read_npy_file(dir_ + name + ".npy"), make_array(dtype, shape)) << name;
    }
  }
  EXPECT_EQ(read_npy_file(dir_ + "fortran.npy"), make_array(kInt32, {2, 3, 4}));
  EXPECT_EQ(read_npy_file(dir_ + "fortran_f8.npy"), make_array(kFloat64, {3, 5}));
  EXPECT_EQ(read_npy_file(dir_ + "big_i4.npy"), make_array(kInt32, {5}));
  EXPECT_EQ(read_npy_file(dir_ + "big_f8.npy"), make_array(kFloat64, {2, 2}));
  EXPECT_EQ(read_npy_file(dir_ + "big_f2.npy"), make_array(kFloat16, {2, 3}));

  const std::vector<std::pair<std::string, NpyArray>> expected = {
      {"w", make_array(kFloat32, {3, 4})},
      {"b", make_array(kInt64, {4})},
      {"flag", make_array(kBool, {})},
      {"e", make_array(kUInt8, {0, 2})}};
  EXPECT_EQ(read_npz_file(dir_ + "savez.npz"), expected);
  EXPECT_EQ(read_npz_file(dir_ + "savez_compressed.npz"), expected);
  EXPECT_EQ(read_npz_file(dir_ + "positional.npz"),
            (std::vector<std::pair<std::string, NpyArray>>{{"arr_0", make_array(kFloat16, {2})},
                                                           {"arr_1", make_array(kInt32, {3})}}));
}

// Same header text and padding, and the same ZIP local headers and deflate stream as np.save,
// np.savez and np.savez_compressed; only the archive timestamps and directory attributes differ.
TEST_F(NpyFormatTest, WritesTheSameBytesAsNumPy) {
  struct Case {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
  };
  const std::vector<Case> cases = {
      {"f4", kFloat32, {2, 3}},
      {"u1_scalar", kUInt8, {}},
      {"b1", kBool, {7}},
      {"i8_empty", kInt64, {0}},
      {"i4", kInt32, {12345, 2}},
      {"f2", kFloat16, {5}},
      {"f8", kFloat64, {2, 2, 2}},
      // The header is 64-byte aligned before padding, and NumPy then pads a full 64 bytes.
      {"aligned", kUInt8, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 100}},
  };
  std::string script = "d = '" + dir_ + "'\n";
  for (const Case& c : cases) {
    script += "np.save(d + '" + c.name + ".npy', expected('" + std::string(dtype_name(c.dtype)) +
              "', " + py_shape(c.shape) + "))\n";
  }
  script +=
      "np.savez(d + 'numpy_stored.npz', a=expected('float32', (2, 3)))\n"
      "np.savez_compressed(d + 'numpy_deflated.npz', a=expected('float64', (50,)))\n";
  const auto [status, output] = run_python(script);
  ASSERT_EQ(status, 0) << output;
  for (const Case& c : cases) {
    EXPECT_EQ(read_bytes(dir_ + c.name + ".npy"), serialize_npy(make_array(c.dtype, c.shape)))
        << c.name;
  }

  write_npz_file(dir_ + "ours_stored.npz", {{"a", make_array(kFloat32, {2, 3})}});
  write_npz_file(dir_ + "ours_deflated.npz", {{"a", make_array(kFloat64, {50})}},
                 /*compress=*/true);
  for (const std::string kind : {"stored", "deflated"}) {
    const std::vector<uint8_t> theirs = read_bytes(dir_ + "numpy_" + kind + ".npz");
    const std::vector<uint8_t> ours = read_bytes(dir_ + "ours_" + kind + ".npz");
    const uint8_t directory_signature[] = {'P', 'K', 1, 2};
    const size_t entry_end = static_cast<size_t>(std::search(theirs.begin(), theirs.end(),
                                                             std::begin(directory_signature),
                                                             std::end(directory_signature)) -
                                                 theirs.begin());
    ASSERT_LT(entry_end, theirs.size());
    ASSERT_GE(ours.size(), entry_end);
    // Bytes 10 to 13 of the local header are the modification time and date.
    EXPECT_TRUE(std::equal(ours.begin(), ours.begin() + 10, theirs.begin())) << kind;
    EXPECT_TRUE(std::equal(ours.begin() + 14, ours.begin() + entry_end, theirs.begin() + 14))
        << kind;
  }
}

// Python's zipfile only writes ZIP64 central directory fields and end records past 2 GiB or 65535
// entries; lowering its limits produces those structures in a small archive.
TEST_F(NpyFormatTest, ReadsZip64DirectoriesAndEndRecords) {
  const auto [status, output] = run_python("d = '" + dir_ + R"('
zipfile.ZIP64_LIMIT = 16
zipfile.ZIP_FILECOUNT_LIMIT = 1
for name, savez in [('stored', np.savez), ('deflated', np.savez_compressed)]:
    savez(d + name + '.npz', a=expected('float32', (6,)), b=expected('int64', (2, 2)))
    with open(d + name + '.npz', 'rb') as f:
        if b'PK\x06\x06' not in f.read():
            sys.exit('no ZIP64 end record in ' + name)
)");
  ASSERT_EQ(status, 0) << output;
  const std::vector<std::pair<std::string, NpyArray>> expected = {
      {"a", make_array(kFloat32, {6})}, {"b", make_array(kInt64, {2, 2})}};
  EXPECT_EQ(read_npz_file(dir_ + "stored.npz"), expected);
  EXPECT_EQ(read_npz_file(dir_ + "deflated.npz"), expected);
}

// More than 65535 entries do not fit the classic end record: we write ZIP64 end records, which
// NumPy and our reader must both accept.
TEST_F(NpyFormatTest, WritesZip64EndRecordForManyEntries) {
  std::vector<std::pair<std::string, NpyArray>> arrays;
  for (int i = 0; i < 65536 + 3; ++i) {
    arrays.emplace_back(std::to_string(i), NpyArray{kUInt8, {}, {static_cast<uint8_t>(i % 251)}});
  }
  const std::string path = dir_ + "many.npz";
  write_npz_file(path, arrays);
  const std::vector<uint8_t> bytes = read_bytes(path);
  const uint8_t zip64_end[] = {'P', 'K', 6, 6};
  EXPECT_NE(std::search(bytes.begin(), bytes.end(), std::begin(zip64_end), std::end(zip64_end)),
            bytes.end());
  EXPECT_EQ(read_npz_file(path), arrays);
  const auto [status, output] = run_python("path = '" + path + R"('
with np.load(path) as z:
    assert len(z.files) == 65539, len(z.files)
    for i in [0, 1, 250, 251, 65535, 65538]:
        a = z[str(i)]
        assert a.dtype == np.uint8 and a.shape == () and a == i % 251, (i, a)
print('ok')
)");
  EXPECT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("ok"));
}

}  // namespace
}  // namespace weft::np
