#include "weft/data/readers/csv.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <deque>
#include <optional>
#include <sstream>

#include "weft/core/errors.h"
#include "weft/core/file_io.h"
#include "weft/ops/cast.h"

namespace weft::data {
namespace {

// Splits the text into records (lists of fields), RFC 4180 style: a field may be quoted, a quote
// inside a quoted field is doubled, and a quoted field may hold delimiters and newlines.
class RecordParser {
 public:
  RecordParser(std::string_view text, char delimiter, const std::string& source)
      : text_(text), delimiter_(delimiter), source_(source) {}

  // The next record's fields, or false at the end. `line` is the line it starts on (1-based).
  bool next(std::vector<std::string_view>& fields, int64_t& line) {
    fields.clear();
    unescaped_.clear();
    if (pos_ >= text_.size()) return false;
    line = line_;
    while (true) {
      fields.push_back(field(line, fields.size() + 1));
      if (pos_ >= text_.size()) return true;
      const char c = text_[pos_++];
      if (c == '\n') {
        ++line_;
        return true;
      }
      // Otherwise c is the delimiter: another field follows.
    }
  }

 private:
  static std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
      s.remove_suffix(1);
    }
    return s;
  }

  // Reads one field, leaving pos_ on the delimiter, newline or end after it.
  std::string_view field(int64_t line, size_t column) {
    size_t start = pos_;
    while (start < text_.size() && (text_[start] == ' ' || text_[start] == '\t')) ++start;
    if (start < text_.size() && text_[start] == '"') {
      std::string value;
      size_t i = start + 1;
      while (true) {
        WEFT_CHECK(i < text_.size(), InvalidArgument)
            << "CSV file " << source_ << ", line " << line << ", column " << column
            << ": unterminated quoted field (expected a closing \")";
        if (text_[i] == '"') {
          if (i + 1 < text_.size() && text_[i + 1] == '"') {
            value += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        if (text_[i] == '\n') ++line_;
        value += text_[i++];
      }
      size_t end = i;
      while (end < text_.size() && text_[end] != delimiter_ && text_[end] != '\n') ++end;
      WEFT_CHECK(trim(text_.substr(i, end - i)).empty(), InvalidArgument)
          << "CSV file " << source_ << ", line " << line_ << ", column " << column
          << ": unexpected text after a closing quote; expected '" << delimiter_
          << "' or the end of the line";
      pos_ = end;
      unescaped_.push_back(std::move(value));
      return unescaped_.back();
    }
    size_t end = pos_;
    while (end < text_.size() && text_[end] != delimiter_ && text_[end] != '\n') ++end;
    std::string_view out = trim(text_.substr(pos_, end - pos_));
    pos_ = end;
    return out;
  }

  std::string_view text_;
  char delimiter_;
  const std::string& source_;
  size_t pos_ = 0;
  int64_t line_ = 1;
  std::deque<std::string> unescaped_;  // quoted fields of the current record
};

bool parse_int(std::string_view s, int64_t& v) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

bool parse_double(std::string_view s, double& v) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

struct Column {
  std::string name;
  size_t index;                 // in the file's records
  std::optional<DType> forced;  // from CsvOptions::column_dtypes
  bool integral = true;         // every value so far is an integer (or the forced dtype is)
  std::vector<int64_t> ints;
  std::vector<double> reals;

  void add(std::string_view value, const std::string& source, int64_t line) {
    auto where = [&] {
      std::ostringstream s;
      s << "CSV file " << source << ", line " << line << ", column " << index + 1 << " ('" << name
        << "')";
      return s.str();
    };
    WEFT_CHECK(!value.empty(), InvalidArgument) << where() << ": empty value, expected a number";
    int64_t i;
    double d;
    if (forced && is_integral(*forced)) {
      WEFT_CHECK(parse_int(value, i), InvalidArgument)
          << where() << ": '" << value << "' is not an integer, expected one for dtype " << *forced;
      const int64_t lo = *forced == kUInt8 ? 0 : *forced == kInt32 ? INT32_MIN : INT64_MIN;
      const int64_t hi = *forced == kUInt8 ? 255 : *forced == kInt32 ? INT32_MAX : INT64_MAX;
      WEFT_CHECK(i >= lo && i <= hi, InvalidArgument)
          << where() << ": " << i << " is out of range for dtype " << *forced;
      ints.push_back(i);
    } else if (!forced && integral && parse_int(value, i)) {
      ints.push_back(i);
    } else {
      WEFT_CHECK(parse_double(value, d), InvalidArgument)
          << where() << ": '" << value << "' is not a number";
      if (integral) {
        reals.assign(ints.begin(), ints.end());
        ints.clear();
        integral = false;
      }
      reals.push_back(d);
    }
  }

  Tensor tensor() const {
    if (forced && is_integral(*forced)) return cast(Tensor::from_vector(ints), *forced);
    if (integral && !forced) return Tensor::from_vector(ints);
    Tensor t = integral ? cast(Tensor::from_vector(ints), kFloat64) : Tensor::from_vector(reals);
    return cast(t, forced.value_or(kFloat32));
  }
};

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

bool blank(const std::vector<std::string_view>& fields) {
  return fields.size() == 1 && fields[0].empty();
}

}  // namespace

CsvTable parse_csv(std::string_view text, const std::string& source_name,
                   const CsvOptions& options) {
  WEFT_CHECK(options.delimiter != '"' && options.delimiter != '\n', InvalidArgument)
      << "CSV file " << source_name << ": the delimiter cannot be a quote or a newline";
  for (const auto& [name, dtype] : options.column_dtypes) {
    WEFT_CHECK(dtype != kBool, InvalidArgument)
        << "CSV file " << source_name << ": column '" << name
        << "' is given dtype bool; expected a numeric dtype";
  }
  RecordParser parser(text, options.delimiter, source_name);
  std::vector<std::string_view> fields;
  int64_t line = 0;
  do {
    WEFT_CHECK(parser.next(fields, line), InvalidArgument)
        << "CSV file " << source_name << " has no header row";
  } while (blank(fields));
  std::vector<std::string> header(fields.begin(), fields.end());
  for (size_t i = 0; i < header.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      WEFT_CHECK(header[i] != header[j], InvalidArgument)
          << "CSV file " << source_name << ", line " << line << ": columns " << j + 1 << " and "
          << i + 1 << " are both named '" << header[i] << "'";
    }
  }

  std::vector<Column> columns;
  auto add_column = [&](size_t index) {
    Column c;
    c.name = header[index];
    c.index = index;
    if (auto it = options.column_dtypes.find(header[index]); it != options.column_dtypes.end()) {
      c.forced = it->second;
      c.integral = is_integral(it->second);
    }
    columns.push_back(std::move(c));
  };
  if (options.select_columns.empty()) {
    for (size_t i = 0; i < header.size(); ++i) add_column(i);
  } else {
    for (const std::string& name : options.select_columns) {
      auto it = std::find(header.begin(), header.end(), name);
      WEFT_CHECK(it != header.end(), InvalidArgument)
          << "CSV file " << source_name << ": no column named '" << name << "'; the header has "
          << join(header);
      add_column(it - header.begin());
    }
  }
  for (const auto& [name, dtype] : options.column_dtypes) {
    WEFT_CHECK(std::find(header.begin(), header.end(), name) != header.end(), InvalidArgument)
        << "CSV file " << source_name << ": a dtype is given for column '" << name
        << "', but the header has " << join(header);
  }

  while (parser.next(fields, line)) {
    if (blank(fields)) continue;
    WEFT_CHECK(fields.size() == header.size(), InvalidArgument)
        << "CSV file " << source_name << ", line " << line << ": " << fields.size()
        << " fields, expected " << header.size() << " as in the header ("
        << (fields.size() < header.size()
                ? "column " + std::to_string(fields.size() + 1) + " ('" + header[fields.size()] +
                      "') is missing)"
                : "column " + std::to_string(header.size() + 1) + " is extra)");
    for (Column& c : columns) c.add(fields[c.index], source_name, line);
  }

  CsvTable table;
  for (const Column& c : columns) {
    table.names.push_back(c.name);
    table.columns.push_back(c.tensor());
  }
  return table;
}

CsvTable read_csv(const std::string& path, const CsvOptions& options) {
  return parse_csv(io::read_whole_file(path), path, options);
}

Dataset read_csv_dataset(const std::string& path, const CsvOptions& options) {
  return Dataset::from_tensor_slices(read_csv(path, options).columns);
}

}  // namespace weft::data
