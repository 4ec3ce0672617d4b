#include "weft/checkpoint/internal/index.h"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include "weft/core/crc32c.h"
#include "weft/core/errors.h"

namespace weft::checkpoint::internal {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr std::string_view kEntryCrcKey = ",\"entry_crc32c\":\"";
constexpr std::string_view kTrailer = "\n}\n";

// The header line up to the index CRC's value; the CRC covers it, then the body.
std::string header_prefix(int64_t version) {
  return std::string("{\"magic\":\"") + kMagic +
         "\",\"format_version\":" + std::to_string(version) + ",\"index_crc32c\":\"";
}
std::string header_line(int64_t version, uint32_t crc) {
  return header_prefix(version) + hex32(crc) + "\",\"index\":\n";
}

// `entry` on one line, with entry_crc32c over the bytes before it.
std::string entry_line(const ordered_json& entry) {
  std::string s = entry.dump();
  s.pop_back();  // the closing brace
  uint32_t crc = crc32c(s.data(), s.size());
  return s + std::string(kEntryCrcKey) + hex32(crc) + "\"}";
}

void append_section(std::string& out, const char* name, const std::vector<ordered_json>& entries,
                    bool last) {
  out += std::string("\"") + name + "\":[\n";
  for (size_t i = 0; i < entries.size(); ++i) {
    out += entry_line(entries[i]);
    out += i + 1 < entries.size() ? ",\n" : "\n";
  }
  out += last ? "]}" : "],\n";
}

std::optional<uint32_t> parse_hex32(const std::string& s) {
  if (s.size() != 8) return std::nullopt;
  uint32_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<uint32_t>(d);
  }
  return v;
}

bool is_shard_name(const std::string& s) {
  int a = 0, b = 0;
  char tail = 0;
  return s.size() == 19 && std::sscanf(s.c_str(), "data-%5d-of-%5d%c", &a, &b, &tail) == 2 &&
         shard_file_name(a, b) == s;
}

// Where damage in the body is: the first entry line whose entry_crc32c does not match.
std::string locate_damage(const std::string& bytes, size_t body_begin, size_t body_end) {
  std::string section = "index";
  size_t line_no = 2;
  for (size_t pos = body_begin; pos < body_end; ++line_no) {
    size_t nl = bytes.find('\n', pos);
    if (nl == std::string::npos || nl > body_end) nl = body_end;
    std::string_view line(bytes.data() + pos, nl - pos);
    if (line.starts_with("\"shards\"")) section = "shard";
    if (line.starts_with("\"tensors\"")) section = "tensor";
    if (line.starts_with("\"state\"")) section = "state blob";
    size_t key = line.rfind(kEntryCrcKey);
    if (key != std::string_view::npos) {
      std::string_view covered = line.substr(0, key);
      std::string stored(line.substr(key + kEntryCrcKey.size(), 8));
      std::optional<uint32_t> want = parse_hex32(stored);
      if (!want || *want != crc32c(covered.data(), covered.size())) {
        // The entry's name as written, if its text still parses.
        std::string name = "(name unreadable)";
        std::string_view text = line.ends_with(',') ? line.substr(0, line.size() - 1) : line;
        json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
        for (const char* k : {"path", "name", "file"}) {
          if (j.is_object() && j.contains(k) && j[k].is_string()) {
            name = "\"" + j[k].get<std::string>() + "\"";
            break;
          }
        }
        return "the damage is in the entry of " + section + " " + name + " on line " +
               std::to_string(line_no) + " at byte offset " + std::to_string(pos);
      }
    }
    pos = nl + 1;
  }
  return "the damage is outside the entries (in the index's structure)";
}

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  WEFT_FAIL(DataLoss) << file << ": " << what;
  __builtin_unreachable();
}

const json& field(const json& entry, const char* key, const std::string& file,
                  const std::string& who) {
  if (!entry.is_object() || !entry.contains(key)) fail(file, who + " has no \"" + key + "\"");
  return entry[key];
}
uint64_t uint_field(const json& e, const char* key, const std::string& file,
                    const std::string& who) {
  const json& v = field(e, key, file, who);
  if (!v.is_number_unsigned()) fail(file, who + ": \"" + key + "\" is not a non-negative integer");
  return v.get<uint64_t>();
}
std::string string_field(const json& e, const char* key, const std::string& file,
                         const std::string& who) {
  const json& v = field(e, key, file, who);
  if (!v.is_string()) fail(file, who + ": \"" + key + "\" is not a string");
  return v.get<std::string>();
}
uint32_t crc_field(const json& e, const char* key, const std::string& file,
                   const std::string& who) {
  std::optional<uint32_t> v = parse_hex32(string_field(e, key, file, who));
  if (!v) fail(file, who + ": \"" + key + "\" is not 8 lowercase hex digits");
  return *v;
}
const json& list_field(const json& e, const char* key, const std::string& file) {
  const json& v = field(e, key, file, "the index");
  if (!v.is_array()) fail(file, std::string("\"") + key + "\" is not a list");
  return v;
}

}  // namespace

std::string hex32(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

std::string shard_file_name(int shard, int num_shards) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "data-%05d-of-%05d", shard, num_shards);
  return buf;
}

std::string encode_index(const CheckpointIndex& index) {
  std::vector<ordered_json> shards, tensors, state;
  for (const ShardEntry& s : index.shards) {
    shards.push_back(ordered_json{{"file", s.file}, {"length", s.length}});
  }
  for (const TensorEntry& t : index.tensors) {
    ordered_json e{{"path", t.path}, {"dtype", std::string(dtype_name(t.dtype))}, {"shape", t.shape}};
    if (t.global_shape) {
      e["global_shape"] = *t.global_shape;
      e["slice_offsets"] = t.slice_offsets;
    }
    e["shard"] = t.shard;
    e["offset"] = t.offset;
    e["length"] = t.length;
    e["crc32c"] = hex32(t.crc32c);
    tensors.push_back(std::move(e));
  }
  for (const StateEntry& s : index.state) {
    state.push_back(ordered_json{{"name", s.name},
                                 {"shard", s.shard},
                                 {"offset", s.offset},
                                 {"length", s.length},
                                 {"crc32c", hex32(s.crc32c)}});
  }
  std::string body = "{\"byte_order\":\"little\",\n";
  append_section(body, "shards", shards, false);
  append_section(body, "tensors", tensors, false);
  append_section(body, "state", state, true);
  std::string prefix = header_prefix(kFormatVersion);
  uint32_t crc = crc32c(body.data(), body.size(), crc32c(prefix.data(), prefix.size()));
  return header_line(kFormatVersion, crc) + body + std::string(kTrailer);
}

CheckpointIndex decode_index(const std::string& bytes, const std::string& file) {
  // The header line, checked before anything else is believed.
  size_t nl = bytes.find('\n');
  if (nl == std::string::npos) {
    fail(file, bytes.empty() ? "is empty" : "has no header line (not a weft checkpoint index)");
  }
  json header = json::parse(bytes.substr(0, nl) + "null}", nullptr, /*allow_exceptions=*/false);
  if (!header.is_object() || !header.contains("magic") || header["magic"] != kMagic) {
    fail(file, std::string("not a weft checkpoint index: the first line does not carry magic \"") +
                   kMagic + "\"");
  }
  if (!header.contains("format_version") || !header["format_version"].is_number_integer() ||
      header["format_version"].get<int64_t>() < 1) {
    fail(file, "the header's format_version is missing or not a positive integer");
  }
  int64_t version = header["format_version"].get<int64_t>();
  std::optional<uint32_t> stored;
  if (header.contains("index_crc32c") && header["index_crc32c"].is_string()) {
    stored = parse_hex32(header["index_crc32c"].get<std::string>());
  }
  if (!stored) fail(file, "the header's index_crc32c is missing or not 8 lowercase hex digits");
  if (bytes.size() < nl + 1 + kTrailer.size() || !bytes.ends_with(kTrailer)) {
    fail(file, "does not end with the index trailer: truncated (" + std::to_string(bytes.size()) +
                   " bytes)");
  }

  // The CRC covers the header up to its own value (so magic and version too), then the body.
  std::string prefix = header_prefix(version);
  size_t body_begin = nl + 1, body_end = bytes.size() - kTrailer.size();
  uint32_t actual = crc32c(bytes.data() + body_begin, body_end - body_begin,
                           crc32c(prefix.data(), prefix.size()));
  if (actual != *stored) {
    fail(file, "index CRC32C mismatch over bytes 0 to " + std::to_string(body_end) + " (stored " +
                   hex32(*stored) + ", computed " + hex32(actual) + "); " +
                   locate_damage(bytes, body_begin, body_end));
  }
  WEFT_CHECK(version <= kFormatVersion, FailedPrecondition)
      << file << ": checkpoint format version " << version << " is newer than this weft reads ("
      << kFormatVersion << ")";
  if (bytes.substr(0, nl + 1) != header_line(version, *stored)) {
    fail(file, "the header line (bytes 0 to " + std::to_string(nl) +
                   ") is not in the form weft writes: damaged");
  }
  json body = json::parse(bytes.begin() + static_cast<std::ptrdiff_t>(body_begin),
                          bytes.begin() + static_cast<std::ptrdiff_t>(body_end), nullptr,
                          /*allow_exceptions=*/false);
  if (!body.is_object()) fail(file, "the index body is not a JSON object");
  if (!body.contains("byte_order") || body["byte_order"] != "little") {
    fail(file, "byte_order is not \"little\"");
  }

  CheckpointIndex index;
  index.format_version = static_cast<int>(version);
  std::map<std::string, uint64_t> shard_length;
  for (const json& s : list_field(body, "shards", file)) {
    ShardEntry e;
    e.file = string_field(s, "file", file, "a shard entry");
    std::string who = "shard entry \"" + e.file + "\"";
    e.length = uint_field(s, "length", file, who);
    if (!is_shard_name(e.file)) fail(file, who + ": not a shard file name (data-NNNNN-of-NNNNN)");
    if (!shard_length.emplace(e.file, e.length).second) fail(file, who + " appears twice");
    index.shards.push_back(std::move(e));
  }
  auto check_extent = [&](const std::string& who, const std::string& shard, uint64_t offset,
                          uint64_t length) {
    auto it = shard_length.find(shard);
    if (it == shard_length.end()) fail(file, who + ": shard \"" + shard + "\" is not listed");
    if (offset % kDataAlignment != 0 || offset > it->second || length > it->second - offset) {
      fail(file, who + ": offset " + std::to_string(offset) + " and length " +
                     std::to_string(length) + " do not lie (aligned) within shard " + shard +
                     " of " + std::to_string(it->second) + " bytes");
    }
  };
  std::set<std::string> seen;
  std::map<std::string, bool> sliced;  // path -> its entries are slices
  for (const json& t : list_field(body, "tensors", file)) {
    TensorEntry e;
    e.path = string_field(t, "path", file, "a tensor entry");
    std::string who = "tensor \"" + e.path + "\"";
    const bool is_slice = version >= 2 && t.contains("global_shape");
    if (auto [it, first] = sliced.emplace(e.path, is_slice); !first && !(it->second && is_slice)) {
      fail(file, who + " appears twice");
    }
    std::string dtype = string_field(t, "dtype", file, who);
    try {
      e.dtype = dtype_from_name(dtype);
    } catch (const Error&) {
      fail(file, who + ": unknown dtype \"" + dtype + "\"");
    }
    const json& shape = field(t, "shape", file, who);
    uint64_t numel = 1;
    bool shape_ok = shape.is_array();
    for (size_t i = 0; shape_ok && i < shape.size(); ++i) {
      const json& d = shape[i];
      shape_ok = d.is_number_unsigned() && d.get<uint64_t>() <= uint64_t{INT64_MAX} &&
                 !__builtin_mul_overflow(numel, d.get<uint64_t>(), &numel);
      if (shape_ok) e.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
    }
    if (!shape_ok) fail(file, who + ": \"shape\" is not a list of non-negative integers");
    if (is_slice) {
      const json& g = t["global_shape"];
      const json& o = field(t, "slice_offsets", file, who);
      bool ok = g.is_array() && o.is_array() && g.size() == e.shape.size() &&
                o.size() == e.shape.size();
      Shape global;
      for (size_t i = 0; ok && i < g.size(); ++i) {
        ok = g[i].is_number_unsigned() && o[i].is_number_unsigned() &&
             g[i].get<uint64_t>() <= uint64_t{INT64_MAX} &&
             o[i].get<uint64_t>() <= g[i].get<uint64_t>() &&
             static_cast<uint64_t>(e.shape[i]) <= g[i].get<uint64_t>() - o[i].get<uint64_t>();
        if (ok) {
          global.push_back(static_cast<int64_t>(g[i].get<uint64_t>()));
          e.slice_offsets.push_back(static_cast<int64_t>(o[i].get<uint64_t>()));
        }
      }
      if (!ok) {
        fail(file, who + ": the slice at \"slice_offsets\" " + o.dump() + " of shape " +
                       shape_str(e.shape) + " does not lie within \"global_shape\" " + g.dump());
      }
      e.global_shape = std::move(global);
    }
    e.shard = string_field(t, "shard", file, who);
    e.offset = uint_field(t, "offset", file, who);
    e.length = uint_field(t, "length", file, who);
    e.crc32c = crc_field(t, "crc32c", file, who);
    uint64_t expected = 0;
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(dtype_size(e.dtype)), &expected) ||
        expected != e.length) {
      fail(file, who + ": length " + std::to_string(e.length) + " does not match its dtype " +
                     dtype + " and shape " + shape_str(e.shape));
    }
    check_extent(who, e.shard, e.offset, e.length);
    index.tensors.push_back(std::move(e));
  }
  seen.clear();
  for (const json& s : list_field(body, "state", file)) {
    StateEntry e;
    e.name = string_field(s, "name", file, "a state entry");
    std::string who = "state blob \"" + e.name + "\"";
    if (!seen.insert(e.name).second) fail(file, who + " appears twice");
    e.shard = string_field(s, "shard", file, who);
    e.offset = uint_field(s, "offset", file, who);
    e.length = uint_field(s, "length", file, who);
    e.crc32c = crc_field(s, "crc32c", file, who);
    check_extent(who, e.shard, e.offset, e.length);
    index.state.push_back(std::move(e));
  }
  return index;
}

}  // namespace weft::checkpoint::internal
