#include "weft/np/internal/npy_header.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <optional>
#include <string_view>

#include "weft/core/errors.h"
#include "weft/np/internal/bytes.h"

namespace weft::np::internal {
namespace {

static_assert(std::endian::native == std::endian::little,
              "NpyArray::data is little-endian and is copied to and from files as is");

constexpr std::string_view kNpyMagic("\x93NUMPY", 6);
// NumPy starts the data at a multiple of this (numpy.lib.format.ARRAY_ALIGN) so that memory-mapped
// arrays are aligned for every dtype.
constexpr size_t kArrayAlign = 64;
// NumPy leaves room in the header for the first dimension to grow to this many digits, so that
// appending along it can rewrite the header in place; we pad alike to write the same bytes.
constexpr size_t kGrowthAxisMaxDigits = 21;
// NumPy 2's limit; it also keeps every header we write within version 1.0's 65535 bytes.
constexpr size_t kMaxRank = 64;

// Python's repr of the shape tuple: "()", "(3,)", "(2, 3)".
std::string shape_repr(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

// prod(shape) * itemsize for non-negative dims, or nullopt if it overflows 64 bits.
std::optional<uint64_t> data_bytes_for(const std::vector<int64_t>& shape, DType dtype) {
  uint64_t n = static_cast<uint64_t>(dtype_size(dtype));
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
  }
  return n;
}

struct DescrCode {
  DType dtype;
  std::string_view code;  // the descr without its byte-order character
};
constexpr DescrCode kDescrCodes[] = {{kBool, "b1"},   {kUInt8, "u1"},   {kInt32, "i4"},
                                     {kInt64, "i8"},  {kFloat16, "f2"}, {kFloat32, "f4"},
                                     {kFloat64, "f8"}};

// Parses the Python dict literal NumPy writes as the header, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// including what older writers produce: either quote style, keys in any order, no trailing comma
// and Python 2 long literals such as (3L,).
class HeaderParser {
 public:
  HeaderParser(std::string_view text, size_t offset, const std::string& source)
      : text_(text), offset_(offset), source_(source) {}

  NpyHeader parse() {
    NpyHeader h;
    bool has_descr = false;
    bool has_fortran_order = false;
    bool has_shape = false;
    skip_space();
    expect('{', "'{' starting the header dict");
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const size_t key_offset = offset();
      const std::string key = parse_string("a quoted key or '}'");
      skip_space();
      expect(':', "':' after '" + key + "'");
      skip_space();
      if (key == "descr") {
        WEFT_CHECK(peek() != '[', DataLoss)
            << source_ << ": structured dtype (a list as 'descr') at byte offset " << offset()
            << " is not supported; expected a plain numeric dtype such as '<f4'";
        const size_t descr_offset = offset();
        const std::string descr = parse_string("a quoted dtype such as '<f4'");
        set_dtype(descr, descr_offset, h);
        has_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = parse_bool();
        has_fortran_order = true;
      } else if (key == "shape") {
        h.shape = parse_shape();
        has_shape = true;
      } else {
        WEFT_FAIL(DataLoss) << source_ << ": unexpected key '" << key
                            << "' in the .npy header at byte offset " << key_offset
                            << "; expected only 'descr', 'fortran_order' and 'shape'";
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      WEFT_CHECK(peek() == '}', DataLoss) << error("',' or '}' after the value of '" + key + "'");
    }
    ++pos_;
    skip_space();
    WEFT_CHECK(pos_ == text_.size(), DataLoss) << error("the end of the header after '}'");
    const char* missing = !has_descr           ? "descr"
                          : !has_fortran_order ? "fortran_order"
                          : !has_shape         ? "shape"
                                               : nullptr;
    WEFT_CHECK(missing == nullptr, DataLoss)
        << source_ << ": the .npy header dict at byte offset " << offset_ << " has no '" << missing
        << "' key; expected 'descr', 'fortran_order' and 'shape'";
    return h;
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  size_t offset() const { return offset_ + pos_; }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  std::string error(std::string_view expected) const {
    std::string found = "the end of the header";
    if (pos_ < text_.size()) {
      found = "'";
      for (char c : text_.substr(pos_, 16)) found += (c >= 0x20 && c < 0x7f) ? c : '?';
      found += "'";
    }
    return source_ + ": malformed .npy header: expected " + std::string(expected) +
           " at byte offset " + std::to_string(offset()) + ", found " + found;
  }

  void expect(char c, std::string_view expected) {
    WEFT_CHECK(peek() == c, DataLoss) << error(expected);
    ++pos_;
  }

  std::string parse_string(std::string_view expected) {
    const char quote = peek();
    WEFT_CHECK(quote == '\'' || quote == '"', DataLoss) << error(expected);
    const size_t end = text_.find(quote, pos_ + 1);
    WEFT_CHECK(end != std::string_view::npos, DataLoss)
        << source_ << ": malformed .npy header: the string at byte offset " << offset()
        << " has no closing " << quote;
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return s;
  }

  bool parse_bool() {
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      if (text_.substr(pos_).starts_with(word)) {
        pos_ += std::strlen(word);
        return value;
      }
    }
    WEFT_FAIL(DataLoss) << error("True or False for 'fortran_order'");
    return false;
  }

  std::vector<int64_t> parse_shape() {
    expect('(', "a tuple such as (2, 3) for 'shape'");
    std::vector<int64_t> shape;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      shape.push_back(parse_dim());
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      // "(3)" is the number 3 in Python, not a 1-tuple, and NumPy rejects it too.
      WEFT_CHECK(peek() == ')' && shape.size() > 1, DataLoss)
          << error(shape.size() == 1 ? "',' after the only dimension, as in (3,)"
                                     : "',' or ')' in the shape tuple");
      break;
    }
    ++pos_;
    return shape;
  }

  int64_t parse_dim() {
    const size_t start = offset();
    const bool negative = peek() == '-';
    if (negative) ++pos_;
    WEFT_CHECK(std::isdigit(static_cast<unsigned char>(peek())), DataLoss)
        << error("an integer dimension");
    uint64_t value = 0;
    bool overflow = false;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      const uint64_t digit = static_cast<uint64_t>(peek() - '0');
      overflow |= value > (static_cast<uint64_t>(INT64_MAX) - digit) / 10;
      value = value * 10 + digit;
      ++pos_;
    }
    if (peek() == 'L') ++pos_;
    WEFT_CHECK(!negative || value == 0, DataLoss)
        << source_ << ": negative dimension -" << value
        << " in the .npy header shape at byte offset " << start << "; expected sizes >= 0";
    WEFT_CHECK(!overflow, DataLoss) << source_ << ": dimension at byte offset " << start
                                    << " of the .npy header does not fit in 64 bits";
    return static_cast<int64_t>(value);
  }

  void set_dtype(const std::string& descr, size_t descr_offset, NpyHeader& h) const {
    const char order = descr.empty() ? '\0' : descr[0];
    const std::string_view code = std::string_view(descr).substr(descr.empty() ? 0 : 1);
    const auto it = std::find_if(std::begin(kDescrCodes), std::end(kDescrCodes),
                                 [&](const DescrCode& c) { return c.code == code; });
    // '|' ("byte order not applicable") is only valid for single-byte types.
    const bool known =
        it != std::end(kDescrCodes) &&
        (order == '<' || order == '>' || order == '=' || (order == '|' && code.ends_with('1')));
    WEFT_CHECK(known, DataLoss) << source_ << ": unsupported dtype '" << descr
                                << "' in the .npy header at byte offset " << descr_offset
                                << "; expected one of '<f2', '<f4', '<f8', '|u1', '|b1', '<i4', "
                                << "'<i8' (or their big-endian '>' forms)";
    h.dtype = it->dtype;
    h.big_endian = order == '>';
  }

  std::string_view text_;
  size_t offset_;  // of text_ within the input, for messages
  const std::string& source_;
  size_t pos_ = 0;
};

std::vector<uint8_t> fortran_to_c_order(const std::vector<uint8_t>& in,
                                        const std::vector<int64_t>& shape, size_t itemsize) {
  const size_t rank = shape.size();
  std::vector<int64_t> stride(rank);  // in elements, Fortran order: the first index is fastest
  int64_t count = 1;
  for (size_t k = 0; k < rank; ++k) {
    stride[k] = count;
    count *= shape[k];
  }
  std::vector<uint8_t> out(in.size());
  std::vector<int64_t> index(rank, 0);
  int64_t src = 0;
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(&out[static_cast<size_t>(i) * itemsize], &in[static_cast<size_t>(src) * itemsize],
                itemsize);
    // Advance `index` in C order, keeping `src` at its Fortran-order position.
    for (size_t k = rank; k-- > 0;) {
      if (++index[k] < shape[k]) {
        src += stride[k];
        break;
      }
      src -= stride[k] * (shape[k] - 1);
      index[k] = 0;
    }
  }
  return out;
}

}  // namespace

Preamble parse_preamble(const uint8_t* bytes, size_t size, const std::string& source) {
  WEFT_CHECK(size >= 8 && std::memcmp(bytes, kNpyMagic.data(), kNpyMagic.size()) == 0, DataLoss)
      << source << ": not a .npy file: expected the magic \\x93NUMPY and a version at byte offset "
      << "0, found " << hex_bytes(bytes, std::min<size_t>(size, 8));
  const int major = bytes[6];
  const int minor = bytes[7];
  WEFT_CHECK(minor == 0 && major >= 1 && major <= 3, DataLoss)
      << source << ": unsupported .npy format version " << major << "." << minor
      << " at byte offset 6; expected 1.0, 2.0 or 3.0";
  // Version 1.0 stores the header length in 2 bytes, later versions in 4.
  const size_t length_size = major == 1 ? 2 : 4;
  WEFT_CHECK(size >= 8 + length_size, DataLoss)
      << source << ": truncated .npy header: expected a " << length_size
      << "-byte header length at byte offset 8, found " << size - 8 << " bytes";
  const size_t header_size = major == 1 ? le16(bytes + 8) : le32(bytes + 8);
  return {8 + length_size, header_size};
}

NpyHeader parse_header(const uint8_t* bytes, size_t size, const std::string& source) {
  const Preamble p = parse_preamble(bytes, size, source);
  WEFT_CHECK(size - p.header_offset >= p.header_size, DataLoss)
      << source << ": truncated .npy header: the length field at byte offset 8 announces "
      << p.header_size << " header bytes from byte offset " << p.header_offset << ", found "
      << size - p.header_offset;
  NpyHeader h =
      HeaderParser(
          std::string_view(reinterpret_cast<const char*>(bytes) + p.header_offset, p.header_size),
          p.header_offset, source)
          .parse();
  h.data_offset = p.header_offset + p.header_size;
  const std::optional<uint64_t> data_bytes = data_bytes_for(h.shape, h.dtype);
  WEFT_CHECK(data_bytes.has_value(), DataLoss)
      << source << ": the .npy shape " << shape_repr(h.shape) << " of " << dtype_name(h.dtype)
      << " needs more than 2^64 bytes";
  h.data_bytes = *data_bytes;
  return h;
}

void check_data_size(const NpyHeader& h, uint64_t available, const std::string& source) {
  WEFT_CHECK(available == h.data_bytes, DataLoss)
      << source << ": " << (available < h.data_bytes ? "truncated data" : "trailing bytes")
      << ": shape " << shape_repr(h.shape) << " of " << dtype_name(h.dtype) << " needs "
      << h.data_bytes << " data bytes after the header at byte offset " << h.data_offset
      << ", found " << available;
}

NpyArray to_native(const NpyHeader& h, std::vector<uint8_t> data) {
  const size_t itemsize = static_cast<size_t>(dtype_size(h.dtype));
  if (h.big_endian && itemsize > 1) {
    for (size_t i = 0; i < data.size(); i += itemsize) {
      std::reverse(data.begin() + i, data.begin() + i + itemsize);
    }
  }
  // NumPy treats any nonzero byte as True; weft's bool is exactly 0 or 1.
  if (h.dtype == kBool) {
    for (uint8_t& b : data) b = b != 0;
  }
  if (h.fortran_order && h.shape.size() > 1) data = fortran_to_c_order(data, h.shape, itemsize);
  return NpyArray{h.dtype, h.shape, std::move(data)};
}

NpyArray decode_npy(std::vector<uint8_t> bytes, const std::string& source) {
  const NpyHeader h = parse_header(bytes.data(), bytes.size(), source);
  check_data_size(h, bytes.size() - h.data_offset, source);
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(h.data_offset));
  return to_native(h, std::move(bytes));
}

std::string npy_header(const NpyArray& a, const std::string& context) {
  WEFT_CHECK(a.dtype != kBFloat16, InvalidArgument)
      << context << ": cannot write bfloat16 to .npy, NumPy has no bfloat16 dtype; cast to "
      << "float32 first";
  WEFT_CHECK(a.shape.size() <= kMaxRank, InvalidArgument)
      << context << ": rank " << a.shape.size() << " exceeds the " << kMaxRank
      << " dimensions NumPy supports";
  for (int64_t d : a.shape) {
    WEFT_CHECK(d >= 0, InvalidArgument)
        << context << ": negative dimension " << d << " in shape " << shape_repr(a.shape);
  }
  const std::optional<uint64_t> data_bytes = data_bytes_for(a.shape, a.dtype);
  WEFT_CHECK(data_bytes == a.data.size(), InvalidArgument)
      << context << ": data holds " << a.data.size() << " bytes, but shape " << shape_repr(a.shape)
      << " of " << dtype_name(a.dtype) << " needs "
      << (data_bytes ? std::to_string(*data_bytes) : "more than 2^64");

  const auto it = std::find_if(std::begin(kDescrCodes), std::end(kDescrCodes),
                               [&](const DescrCode& c) { return c.dtype == a.dtype; });
  const char order = dtype_size(a.dtype) == 1 ? '|' : '<';
  std::string dict = "{'descr': '" + (order + std::string(it->code)) +
                     "', 'fortran_order': False, 'shape': " + shape_repr(a.shape) + ", }";
  if (!a.shape.empty()) dict.append(kGrowthAxisMaxDigits - std::to_string(a.shape[0]).size(), ' ');
  const size_t preamble_size = kNpyMagic.size() + 2 + 2;
  const size_t unpadded = preamble_size + dict.size() + 1;  // + the closing newline
  // Like NumPy, this pads a full kArrayAlign bytes rather than none when already aligned.
  dict.append(kArrayAlign - unpadded % kArrayAlign, ' ');
  dict += '\n';

  std::string out(kNpyMagic);
  out += '\x01';  // version 1.0
  out += '\x00';
  put16(out, static_cast<uint16_t>(dict.size()));
  return out + dict;
}

}  // namespace weft::np::internal
