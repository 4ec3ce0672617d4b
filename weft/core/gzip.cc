#include "weft/core/gzip.h"

#include <zlib.h>

#include <algorithm>

#include "weft/core/errors.h"

namespace weft {
namespace {

// zlib counts bytes in 32-bit uInt, so larger buffers go through it in pieces of this size.
constexpr size_t kMaxZlibChunk = size_t{1} << 30;

struct InflateStream {
  z_stream zs{};
  InflateStream() {
    const int status = inflateInit2(&zs, 16 + MAX_WBITS);  // 16: expect a gzip wrapper
    WEFT_ASSERT(status == Z_OK) << "inflateInit2 returned " << status;
  }
  ~InflateStream() { inflateEnd(&zs); }
};

}  // namespace

std::string gzip_compress(std::string_view data) {
  z_stream zs{};
  // Z_BEST_SPEED: a profiler's trace (8.7 MB of JSON, 100k events) in 34 ms, not 91 ms at
  // zlib's default level, for a file 1.2 times the size (1.03 MB, not 0.86).
  int status = deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8,
                            Z_DEFAULT_STRATEGY);  // 16: a gzip wrapper
  WEFT_ASSERT(status == Z_OK) << "deflateInit2 returned " << status;
  WEFT_ASSERT(data.size() <= kMaxZlibChunk) << "gzip_compress: " << data.size() << " bytes at once";
  std::string out(deflateBound(&zs, data.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  status = deflate(&zs, Z_FINISH);
  WEFT_ASSERT(status == Z_STREAM_END) << "deflate returned " << status;
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::vector<uint8_t> gunzip(const uint8_t* bytes, size_t size, const std::string& source) {
  InflateStream stream;
  z_stream& zs = stream.zs;
  std::vector<uint8_t> out(std::max<size_t>(2 * size, 1 << 16));
  size_t fed = 0;  // bytes handed to zlib so far
  size_t produced = 0;
  while (true) {
    if (zs.avail_in == 0 && fed < size) {
      const size_t n = std::min(size - fed, kMaxZlibChunk);
      zs.next_in = const_cast<Bytef*>(bytes + fed);
      zs.avail_in = static_cast<uInt>(n);
      fed += n;
    }
    if (produced == out.size()) out.resize(2 * out.size());
    zs.next_out = out.data() + produced;
    zs.avail_out = static_cast<uInt>(std::min(out.size() - produced, kMaxZlibChunk));
    const uInt space = zs.avail_out;
    const int status = inflate(&zs, Z_NO_FLUSH);
    produced += space - zs.avail_out;
    const size_t consumed = fed - zs.avail_in;
    if (status == Z_STREAM_END) {
      if (consumed == size) break;
      // Concatenated gzip members (`cat a.gz b.gz`) decode to the concatenated data, as with gzip.
      inflateReset(&zs);
      continue;
    }
    WEFT_CHECK(!(status == Z_BUF_ERROR && consumed == size), DataLoss)
        << source << ": truncated gzip stream: all " << size
        << " compressed bytes were read without reaching its end (" << produced
        << " bytes decompressed so far)";
    WEFT_CHECK(status == Z_OK || status == Z_BUF_ERROR, DataLoss)
        << source << ": corrupt gzip stream at compressed byte offset " << consumed << ": "
        << (zs.msg ? zs.msg : "zlib error " + std::to_string(status));
  }
  out.resize(produced);
  return out;
}

std::string gzip_decompress(std::string_view data, const std::string& source) {
  const std::vector<uint8_t> out =
      gunzip(reinterpret_cast<const uint8_t*>(data.data()), data.size(), source);
  return std::string(out.begin(), out.end());
}

}  // namespace weft
