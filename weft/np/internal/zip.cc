#include "weft/np/internal/zip.h"

#include <zlib.h>

#include <algorithm>
#include <initializer_list>

#include "weft/core/errors.h"
#include "weft/np/internal/bytes.h"

namespace weft::np::internal {
namespace {

// zlib counts bytes in 32-bit uInt, so larger buffers go through it in pieces of this size.
constexpr size_t kMaxZlibChunk = size_t{1} << 30;
constexpr size_t kIoChunk = size_t{1} << 20;

constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kEndSize = 22;
constexpr size_t kZip64EndSize = 56;
constexpr size_t kZip64LocatorSize = 20;
constexpr size_t kMaxCommentSize = 0xffff;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint32_t kMax32 = 0xffffffff;  // a 32-bit field holding this means "see ZIP64"
constexpr uint16_t kMax16 = 0xffff;
constexpr uint16_t kMethodStored = 0;
constexpr uint16_t kMethodDeflated = 8;
constexpr uint16_t kFlagEncrypted = 1 << 0;
constexpr uint16_t kFlagUtf8Name = 1 << 11;
// "Version needed to extract": 4.5 only where ZIP64 values are needed, as Python's zipfile does,
// so that tools without ZIP64 support still open ordinary archives.
constexpr uint16_t kVersionDefault = 20;
constexpr uint16_t kVersionZip64 = 45;
constexpr uint16_t kVersionMadeBy = (3 << 8) | kVersionZip64;  // 3: Unix, so the mode below counts
constexpr uint32_t kExternalAttributes = 0100644u << 16;       // regular file, rw-r--r--
// 1980-01-01 00:00, the earliest MS-DOS timestamp: a fixed time makes equal arrays give equal
// files.
constexpr uint16_t kDosTime = 0;
constexpr uint16_t kDosDate = (1 << 5) | 1;
// Deflate cannot expand data by more than this factor (258-byte matches in 2 bits), which bounds
// what a directory may honestly claim before we allocate it.
constexpr uint64_t kMaxDeflateRatio = 1032;

// Fills the fields of `e` that hold kMax32 from the ZIP64 extra field, which stores exactly those,
// in this order, as 64-bit values.
void apply_zip64_extra(const uint8_t* extra, size_t extra_size, uint64_t entry_offset,
                       const std::string& path, ZipEntry& e) {
  uint64_t* const fields[] = {&e.size, &e.compressed_size, &e.local_header_offset};
  while (extra_size >= 4) {
    const uint16_t id = le16(extra);
    const size_t field_size = std::min<size_t>(le16(extra + 2), extra_size - 4);
    if (id == kZip64ExtraId) {
      const uint8_t* p = extra + 4;
      size_t left = field_size;
      for (uint64_t* field : fields) {
        if (*field != kMax32) continue;
        WEFT_CHECK(left >= 8, DataLoss)
            << path << ": ZIP64 extra field of entry '" << e.name
            << "' in the central directory at byte offset " << entry_offset << " has " << field_size
            << " bytes, too few for its 64-bit sizes and offset";
        *field = le64(p);
        p += 8;
        left -= 8;
      }
    }
    extra += 4 + field_size;
    extra_size -= 4 + field_size;
  }
  for (const uint64_t* field : fields) {
    WEFT_CHECK(*field != kMax32, DataLoss)
        << path << ": entry '" << e.name << "' in the central directory at byte offset "
        << entry_offset << " has a size or offset of 0xffffffff but no ZIP64 extra field";
  }
}

}  // namespace

std::vector<ZipEntry> read_central_directory(const io::InputFile& in, const std::string& path) {
  // The end record is the last thing in the file except for a comment of up to 64 KiB.
  const uint64_t file_size = in.size();
  const size_t tail_size =
      static_cast<size_t>(std::min<uint64_t>(file_size, kEndSize + kMaxCommentSize));
  std::vector<uint8_t> tail(tail_size);
  in.read_exactly(file_size - tail_size, tail.data(), tail_size);
  size_t end_pos = tail_size;
  for (size_t i = tail_size >= kEndSize ? tail_size - kEndSize + 1 : 0; i-- > 0;) {
    if (le32(&tail[i]) == kEndSignature) {
      end_pos = i;
      break;
    }
  }
  WEFT_CHECK(end_pos < tail_size, DataLoss)
      << path << ": not a ZIP archive: expected an end-of-central-directory record (50 4b 05 06) "
      << "in the last " << tail_size << " bytes, found none; an .npz file is a ZIP archive "
      << "(truncated download?)";
  const uint64_t end_offset = file_size - tail_size + end_pos;
  const uint8_t* end = &tail[end_pos];
  uint64_t disk = le16(end + 4);
  uint64_t directory_disk = le16(end + 6);
  uint64_t count = le16(end + 10);
  uint64_t directory_size = le32(end + 12);
  uint64_t directory_offset = le32(end + 16);

  if (end_offset >= kZip64LocatorSize) {
    uint8_t locator[kZip64LocatorSize];
    in.read_exactly(end_offset - kZip64LocatorSize, locator, kZip64LocatorSize);
    if (le32(locator) == kZip64LocatorSignature) {
      const uint64_t record_offset = le64(locator + 8);
      WEFT_CHECK(end_offset - kZip64LocatorSize >= kZip64EndSize &&
                     record_offset <= end_offset - kZip64LocatorSize - kZip64EndSize,
                 DataLoss)
          << path << ": the ZIP64 locator at byte offset " << end_offset - kZip64LocatorSize
          << " points to byte offset " << record_offset
          << ", expected a ZIP64 end record before the locator";
      uint8_t record[kZip64EndSize];
      in.read_exactly(record_offset, record, kZip64EndSize);
      WEFT_CHECK(le32(record) == kZip64EndSignature, DataLoss)
          << path << ": expected a ZIP64 end-of-central-directory record (50 4b 06 06) at byte "
          << "offset " << record_offset << ", found " << hex_bytes(record, 4);
      disk = le32(record + 16);
      directory_disk = le32(record + 20);
      count = le64(record + 32);
      directory_size = le64(record + 40);
      directory_offset = le64(record + 48);
    }
  }
  WEFT_CHECK(disk == 0 && directory_disk == 0, DataLoss)
      << path << ": the end record at byte offset " << end_offset << " names disk " << disk
      << "; multi-part ZIP archives are not supported";
  WEFT_CHECK(directory_offset <= end_offset && directory_size <= end_offset - directory_offset,
             DataLoss)
      << path << ": the central directory of " << directory_size << " bytes at byte offset "
      << directory_offset << " does not fit before the end record at byte offset " << end_offset;

  std::vector<uint8_t> directory(directory_size);
  in.read_exactly(directory_offset, directory.data(), directory.size());
  std::vector<ZipEntry> entries;
  size_t pos = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t entry_offset = directory_offset + pos;
    const size_t left = directory.size() - pos;
    WEFT_CHECK(left >= kCentralHeaderSize && le32(&directory[pos]) == kCentralHeaderSignature,
               DataLoss)
        << path << ": expected central directory entry " << i << " of " << count
        << " (50 4b 01 02) at byte offset " << entry_offset << ", found "
        << hex_bytes(directory.data() + pos, std::min<size_t>(left, 4));
    const uint8_t* h = &directory[pos];
    const size_t name_size = le16(h + 28);
    const size_t extra_size = le16(h + 30);
    const size_t comment_size = le16(h + 32);
    const size_t entry_size = kCentralHeaderSize + name_size + extra_size + comment_size;
    WEFT_CHECK(entry_size <= left, DataLoss)
        << path << ": central directory entry at byte offset " << entry_offset << " needs "
        << entry_size << " bytes, found " << left << " before the end of the directory";
    ZipEntry e;
    e.name.assign(reinterpret_cast<const char*>(h + kCentralHeaderSize), name_size);
    e.flags = le16(h + 8);
    e.method = le16(h + 10);
    e.crc = le32(h + 16);
    e.compressed_size = le32(h + 20);
    e.size = le32(h + 24);
    e.local_header_offset = le32(h + 42);
    apply_zip64_extra(h + kCentralHeaderSize + name_size, extra_size, entry_offset, path, e);
    entries.push_back(std::move(e));
    pos += entry_size;
  }
  return entries;
}

namespace {

struct InflateStream {
  z_stream zs{};
  InflateStream() {
    const int status = inflateInit2(&zs, -MAX_WBITS);  // raw deflate, no zlib header
    WEFT_ASSERT(status == Z_OK) << "inflateInit2 returned " << status;
  }
  ~InflateStream() { inflateEnd(&zs); }
};

std::vector<uint8_t> inflate_entry(const io::InputFile& in, const ZipEntry& e, uint64_t data_offset,
                                   const std::string& where) {
  WEFT_CHECK(e.size / kMaxDeflateRatio <= e.compressed_size, DataLoss)
      << where << ": the central directory claims " << e.size << " bytes from " << e.compressed_size
      << " deflated bytes, more than deflate can encode";
  std::vector<uint8_t> out(e.size);
  std::vector<uint8_t> chunk(static_cast<size_t>(std::min<uint64_t>(e.compressed_size, kIoChunk)));
  InflateStream stream;
  z_stream& zs = stream.zs;
  uint64_t read = 0;
  uint64_t produced = 0;
  uint8_t overflow_probe;  // stands in for output space once `out` is full
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    if (zs.avail_in == 0) {
      WEFT_CHECK(read < e.compressed_size, DataLoss)
          << where << ": the deflate stream at byte offset " << data_offset << " ends after "
          << e.compressed_size << " bytes without its end marker (" << produced << " of " << e.size
          << " bytes decoded); the data is truncated or corrupt";
      const size_t n = static_cast<size_t>(std::min<uint64_t>(e.compressed_size - read, kIoChunk));
      in.read_exactly(data_offset + read, chunk.data(), n);
      read += n;
      zs.next_in = chunk.data();
      zs.avail_in = static_cast<uInt>(n);
    }
    const bool full = produced == e.size;
    zs.next_out = full ? &overflow_probe : out.data() + produced;
    zs.avail_out =
        full ? 1 : static_cast<uInt>(std::min<uint64_t>(e.size - produced, kMaxZlibChunk));
    const uInt space = zs.avail_out;
    status = inflate(&zs, Z_NO_FLUSH);
    WEFT_CHECK(status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR, DataLoss)
        << where << ": corrupt deflate data at byte offset " << data_offset + read - zs.avail_in
        << ": " << (zs.msg ? zs.msg : "zlib error " + std::to_string(status));
    WEFT_CHECK(!full || zs.avail_out == space, DataLoss)
        << where << ": the deflated data at byte offset " << data_offset
        << " decodes to more than the " << e.size << " bytes the central directory records";
    if (!full) produced += space - zs.avail_out;
  }
  WEFT_CHECK(produced == e.size, DataLoss)
      << where << ": the deflated data at byte offset " << data_offset << " decodes to " << produced
      << " bytes, the central directory records " << e.size;
  return out;
}

}  // namespace

std::vector<uint8_t> read_entry(const io::InputFile& in, const ZipEntry& e,
                                const std::string& path) {
  const std::string where = path + ": entry '" + e.name + "'";
  WEFT_CHECK((e.flags & kFlagEncrypted) == 0, DataLoss)
      << where << " is encrypted; expected an unencrypted archive";
  WEFT_CHECK(e.method == kMethodStored || e.method == kMethodDeflated, DataLoss)
      << where << " uses compression method " << e.method
      << "; expected 0 (stored) or 8 (deflate), which np.savez and np.savez_compressed write";
  const uint64_t header_offset = e.local_header_offset;
  WEFT_CHECK(header_offset <= in.size() && in.size() - header_offset >= kLocalHeaderSize, DataLoss)
      << where << ": local header at byte offset " << header_offset
      << " lies past the end of the file (" << in.size() << " bytes)";
  uint8_t header[kLocalHeaderSize];
  in.read_exactly(header_offset, header, kLocalHeaderSize);
  WEFT_CHECK(le32(header) == kLocalHeaderSignature, DataLoss)
      << where << ": expected a local file header (50 4b 03 04) at byte offset " << header_offset
      << ", found " << hex_bytes(header, 4);
  const uint64_t data_offset =
      header_offset + kLocalHeaderSize + le16(header + 26) + le16(header + 28);
  WEFT_CHECK(data_offset <= in.size() && e.compressed_size <= in.size() - data_offset, DataLoss)
      << where << ": " << e.compressed_size << " bytes of data at byte offset " << data_offset
      << " run past the end of the file (" << in.size() << " bytes; truncated?)";

  std::vector<uint8_t> bytes;
  if (e.method == kMethodStored) {
    WEFT_CHECK(e.compressed_size == e.size, DataLoss)
        << where << ": stored (uncompressed) entry records " << e.compressed_size
        << " bytes in the archive but a size of " << e.size;
    bytes.resize(e.size);
    in.read_exactly(data_offset, bytes.data(), bytes.size());
  } else {
    bytes = inflate_entry(in, e, data_offset, where);
  }
  uint32_t crc = 0;
  for (size_t done = 0; done < bytes.size(); done += kMaxZlibChunk) {
    crc = static_cast<uint32_t>(
        crc32_z(crc, bytes.data() + done, std::min(kMaxZlibChunk, bytes.size() - done)));
  }
  WEFT_CHECK(crc == e.crc, DataLoss)
      << where << ": CRC-32 of the data at byte offset " << data_offset << " is " << hex32(crc)
      << ", the central directory records " << hex32(e.crc) << "; the archive is corrupt";
  return bytes;
}

namespace {

struct DeflateStream {
  z_stream zs{};
  DeflateStream() {
    // Raw deflate (negative window bits): ZIP frames the stream itself. Level and memory as zlib's
    // defaults, which Python's zipfile uses for np.savez_compressed.
    const int status =
        deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    WEFT_ASSERT(status == Z_OK) << "deflateInit2 returned " << status;
  }
  ~DeflateStream() { deflateEnd(&zs); }
};

// Writes the concatenation of `parts` to `out` as one raw deflate stream; returns its size.
uint64_t write_deflated(io::OutputFile& out,
                        std::initializer_list<std::span<const uint8_t>> parts) {
  DeflateStream stream;
  z_stream& zs = stream.zs;
  std::vector<uint8_t> buffer(kIoChunk);
  const uint64_t start = out.offset();
  auto run = [&](int flush) {
    int status;
    do {
      zs.next_out = buffer.data();
      zs.avail_out = static_cast<uInt>(buffer.size());
      status = deflate(&zs, flush);
      WEFT_ASSERT(status != Z_STREAM_ERROR) << "deflate returned Z_STREAM_ERROR";
      out.append(buffer.data(), buffer.size() - zs.avail_out);
    } while (zs.avail_out == 0);
    return status;
  };
  for (std::span<const uint8_t> part : parts) {
    for (size_t done = 0; done < part.size(); done += kMaxZlibChunk) {
      zs.next_in = const_cast<Bytef*>(part.data() + done);
      zs.avail_in = static_cast<uInt>(std::min(kMaxZlibChunk, part.size() - done));
      run(Z_NO_FLUSH);
    }
  }
  const int status = run(Z_FINISH);
  WEFT_ASSERT(status == Z_STREAM_END) << "deflate(Z_FINISH) returned " << status;
  return out.offset() - start;
}

class ZipWriter {
 public:
  ZipWriter(io::OutputFile& out, bool compress)
      : out_(out), method_(compress ? kMethodDeflated : kMethodStored) {}

  void add(const ZipMember& m) {
    ZipEntry e;
    e.method = method_;
    e.name = m.name;
    // Python's zipfile, and so numpy.load, reads names as cp437 unless this flag is set.
    e.flags = std::any_of(e.name.begin(), e.name.end(), [](char c) { return c & 0x80; })
                  ? kFlagUtf8Name
                  : 0;
    e.size = m.prefix.size() + m.data.size();
    e.local_header_offset = out_.offset();
    // Rewritten below once the CRC and the compressed size are known.
    out_.append(local_header(e));
    const std::span<const uint8_t> prefix(reinterpret_cast<const uint8_t*>(m.prefix.data()),
                                          m.prefix.size());
    e.crc = static_cast<uint32_t>(crc32_z(0, prefix.data(), prefix.size()));
    for (size_t done = 0; done < m.data.size(); done += kMaxZlibChunk) {
      e.crc = static_cast<uint32_t>(
          crc32_z(e.crc, m.data.data() + done, std::min(kMaxZlibChunk, m.data.size() - done)));
    }
    if (method_ == kMethodDeflated) {
      e.compressed_size = write_deflated(out_, {prefix, m.data});
    } else {
      out_.append(m.prefix);
      out_.append(m.data.data(), m.data.size());
      e.compressed_size = e.size;
    }
    const std::string header = local_header(e);
    out_.write_at(e.local_header_offset, header.data(), header.size());
    entries_.push_back(std::move(e));
  }

  void finish() {
    const uint64_t directory_offset = out_.offset();
    std::string directory;
    for (const ZipEntry& e : entries_) {
      // ZIP64 values for just the fields that do not fit in 32 bits, in the order APPNOTE fixes.
      std::string zip64;
      if (e.size >= kMax32) put64(zip64, e.size);
      if (e.compressed_size >= kMax32) put64(zip64, e.compressed_size);
      if (e.local_header_offset >= kMax32) put64(zip64, e.local_header_offset);
      put32(directory, kCentralHeaderSignature);
      put16(directory, kVersionMadeBy);
      put_common_fields(directory, e);
      put16(directory, static_cast<uint16_t>(zip64.empty() ? 0 : 4 + zip64.size()));
      put16(directory, 0);  // comment length
      put16(directory, 0);  // disk number
      put16(directory, 0);  // internal attributes
      put32(directory, kExternalAttributes);
      put32(directory, clamp32(e.local_header_offset));
      directory += e.name;
      if (!zip64.empty()) {
        put16(directory, kZip64ExtraId);
        put16(directory, static_cast<uint16_t>(zip64.size()));
        directory += zip64;
      }
    }
    out_.append(directory);

    const uint64_t count = entries_.size();
    const uint64_t directory_size = directory.size();
    std::string end;
    if (count >= kMax16 || directory_size >= kMax32 || directory_offset >= kMax32) {
      const uint64_t record_offset = out_.offset();
      put32(end, kZip64EndSignature);
      put64(end, kZip64EndSize - 12);  // the record's size, not counting these first 12 bytes
      put16(end, kVersionMadeBy);
      put16(end, kVersionZip64);
      put32(end, 0);  // this disk
      put32(end, 0);  // disk with the directory
      put64(end, count);
      put64(end, count);
      put64(end, directory_size);
      put64(end, directory_offset);
      put32(end, kZip64LocatorSignature);
      put32(end, 0);  // disk with the ZIP64 end record
      put64(end, record_offset);
      put32(end, 1);  // number of disks
    }
    put32(end, kEndSignature);
    put16(end, 0);  // this disk
    put16(end, 0);  // disk with the directory
    put16(end, static_cast<uint16_t>(std::min<uint64_t>(count, kMax16)));
    put16(end, static_cast<uint16_t>(std::min<uint64_t>(count, kMax16)));
    put32(end, clamp32(directory_size));
    put32(end, clamp32(directory_offset));
    put16(end, 0);  // comment length
    out_.append(end);
  }

 private:
  static uint32_t clamp32(uint64_t v) {
    return static_cast<uint32_t>(std::min<uint64_t>(v, kMax32));
  }

  static uint16_t version_needed(const ZipEntry& e) {
    return std::max({e.size, e.compressed_size, e.local_header_offset}) >= kMax32 ? kVersionZip64
                                                                                  : kVersionDefault;
  }

  // The fields local and central headers share, from "version needed" to the name's length.
  static void put_common_fields(std::string& h, const ZipEntry& e) {
    put16(h, version_needed(e));
    put16(h, e.flags);
    put16(h, e.method);
    put16(h, kDosTime);
    put16(h, kDosDate);
    put32(h, e.crc);
    put32(h, clamp32(e.compressed_size));
    put32(h, clamp32(e.size));
    put16(h, static_cast<uint16_t>(e.name.size()));
  }

  // Always with a ZIP64 extra field, as np.savez writes it (force_zip64), so the header's size does
  // not change when it is rewritten with the final sizes.
  std::string local_header(const ZipEntry& e) const {
    std::string h;
    put32(h, kLocalHeaderSignature);
    put_common_fields(h, e);
    put16(h, 4 + 16);  // extra field length
    h += e.name;
    put16(h, kZip64ExtraId);
    put16(h, 16);
    put64(h, e.size);
    put64(h, e.compressed_size);
    return h;
  }

  io::OutputFile& out_;
  uint16_t method_;
  std::vector<ZipEntry> entries_;
};

}  // namespace

void write_zip(io::OutputFile& out, std::span<const ZipMember> members, bool compress) {
  ZipWriter zip(out, compress);
  for (const ZipMember& m : members) zip.add(m);
  zip.finish();
}

}  // namespace weft::np::internal
