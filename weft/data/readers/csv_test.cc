#include "weft/data/readers/csv.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "weft/core/errors.h"

namespace weft::data {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string invalid(const std::string& text, const CsvOptions& options = {}) {
  try {
    parse_csv(text, "data.csv", options);
  } catch (const InvalidArgument& e) {
    return e.message();
  }
  ADD_FAILURE() << "expected InvalidArgument for:\n" << text;
  return "";
}

TEST(Csv, ColumnsAreInt64OrFloat32ByTheirValues) {
  CsvTable t = parse_csv("id,weight,label\n1,0.5,3\n2,1e3,-4\n3,7,+5\n", "data.csv");
  EXPECT_THAT(t.names, ElementsAre("id", "weight", "label"));
  ASSERT_EQ(t.columns.size(), 3u);
  EXPECT_EQ(t.columns[0].dtype(), kInt64);
  EXPECT_EQ(t.columns[0].to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(t.columns[1].dtype(), kFloat32);
  EXPECT_EQ(t.columns[1].to_vector<float>(), (std::vector<float>{0.5f, 1000.f, 7.f}));
  EXPECT_EQ(t.columns[2].to_vector<int64_t>(), (std::vector<int64_t>{3, -4, 5}));
}

TEST(Csv, QuotesCrLfBlankLinesAndSpaces) {
  CsvTable t = parse_csv("\"a\", \"b,c\"\r\n\r\n\"1\" , 2.5\r\n 3,\"-4\"\r\n\n", "data.csv");
  EXPECT_THAT(t.names, ElementsAre("a", "b,c"));
  EXPECT_EQ(t.columns[0].to_vector<int64_t>(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(t.columns[1].to_vector<float>(), (std::vector<float>{2.5f, -4.f}));
}

TEST(Csv, SelectedColumnsAndGivenDtypes) {
  CsvOptions options;
  options.delimiter = ';';
  options.select_columns = {"y", "x"};
  options.column_dtypes = {{"x", kFloat64}, {"y", kInt32}};
  CsvTable t = parse_csv("x;skip;y\n1;a string;7\n2.25;;8\n", "data.csv", options);
  EXPECT_THAT(t.names, ElementsAre("y", "x"));
  EXPECT_EQ(t.columns[0].dtype(), kInt32);
  EXPECT_EQ(t.columns[0].to_vector<int32_t>(), (std::vector<int32_t>{7, 8}));
  EXPECT_EQ(t.columns[1].dtype(), kFloat64);
  EXPECT_EQ(t.columns[1].to_vector<double>(), (std::vector<double>{1, 2.25}));
}

TEST(Csv, MalformedRowsNameFileLineAndColumn) {
  EXPECT_EQ(invalid("a,b,c\n1,2,3\n4,5\n"),
            "CSV file data.csv, line 3: 2 fields, expected 3 as in the header (column 3 ('c') is "
            "missing)");
  EXPECT_EQ(invalid("a,b\n1,2,3\n"),
            "CSV file data.csv, line 2: 3 fields, expected 2 as in the header (column 3 is extra)");
  EXPECT_EQ(invalid("a,b\n1,2\n\n3,x7\n"),
            "CSV file data.csv, line 4, column 2 ('b'): 'x7' is not a number");
  EXPECT_EQ(invalid("a,b\n1,\n"),
            "CSV file data.csv, line 2, column 2 ('b'): empty value, expected a number");
  EXPECT_THAT(invalid("a,b\n1,\"2\n"),
              HasSubstr("CSV file data.csv, line 2, column 2: unterminated quoted field"));
  EXPECT_THAT(invalid("a,b\n1,\"2\"x\n"), HasSubstr("unexpected text after a closing quote"));
  CsvOptions ints;
  ints.column_dtypes = {{"a", kUInt8}};
  EXPECT_EQ(invalid("a\n1\n2.5\n", ints),
            "CSV file data.csv, line 3, column 1 ('a'): '2.5' is not an integer, expected one "
            "for dtype uint8");
  EXPECT_EQ(invalid("a\n300\n", ints),
            "CSV file data.csv, line 2, column 1 ('a'): 300 is out of range for dtype uint8");
}

TEST(Csv, BadHeadersAndOptions) {
  EXPECT_THAT(invalid(""), HasSubstr("has no header row"));
  EXPECT_THAT(invalid("\n\n"), HasSubstr("has no header row"));
  EXPECT_THAT(invalid("a,b,a\n1,2,3\n"), HasSubstr("columns 1 and 3 are both named 'a'"));
  CsvOptions select;
  select.select_columns = {"c"};
  EXPECT_THAT(invalid("a,b\n1,2\n", select),
              HasSubstr("no column named 'c'; the header has 'a', 'b'"));
  CsvOptions dtype;
  dtype.column_dtypes = {{"z", kFloat32}};
  EXPECT_THAT(invalid("a,b\n1,2\n", dtype), HasSubstr("a dtype is given for column 'z'"));
}

TEST(Csv, FileAsADataset) {
  auto path = std::filesystem::temp_directory_path() /
              ("weft_csv_test_" + std::to_string(::getpid()) + ".csv");
  std::ofstream(path) << "f,label\n0.25,1\n0.75,0\n";
  std::vector<std::pair<float, int64_t>> rows;
  for (const Element& e : read_csv_dataset(path.string())) {
    rows.emplace_back(e[0].item<float>(), e[1].item<int64_t>());
  }
  EXPECT_EQ(rows, (std::vector<std::pair<float, int64_t>>{{0.25f, 1}, {0.75f, 0}}));
  std::filesystem::remove(path);
  EXPECT_THAT([&] { read_csv(path.string()); },
              ::testing::ThrowsMessage<FailedPrecondition>(HasSubstr(path.string())));
}

}  // namespace
}  // namespace weft::data
