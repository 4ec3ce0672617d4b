// index.json of a checkpoint: its exact bytes, and their decoding with every check.
//
// Layout (each entry on its own line, so damage can be pinned to one entry):
//   {"magic":"weft-checkpoint","format_version":2,"index_crc32c":"1a2b3c4d","index":
//   {"byte_order":"little",
//   "shards":[
//   {"file":"data-00000-of-00001","length":4160,"entry_crc32c":"..."}
//   ],
//   "tensors":[
//   {"path":"model/w","dtype":"float32","shape":[2,3],"shard":"data-00000-of-00001",
//    "offset":0,"length":24,"crc32c":"...","entry_crc32c":"..."},        (one line)
//   {"path":"model/v","dtype":"float32","shape":[2,3],"global_shape":[4,3],"slice_offsets":[2,0],
//    "shard":"data-00001-of-00002",...},       (version 2: a slice; a path's slices cover it once)
//   ...
//   ],
//   "state":[
//   {"name":"optimizer","shard":"...","offset":64,"length":8,"crc32c":"...","entry_crc32c":"..."}
//   ]}
//   }
// index_crc32c covers the header line up to its own value (magic and version), then every byte
// from the second line to the final "]}" (the body); the header line must be exactly the one the
// writer would produce, so no byte of the file is unchecked.
// entry_crc32c covers its line up to the `,"entry_crc32c"`, and only serves to say which entry
// is damaged when index_crc32c does not match.
#pragma once

#include <string>

#include "weft/checkpoint/checkpoint_io.h"

namespace weft::checkpoint::internal {

std::string encode_index(const CheckpointIndex& index);
// Throws DataLoss naming `file` (and the entry) for anything malformed, FailedPrecondition for a
// format version newer than kFormatVersion.
CheckpointIndex decode_index(const std::string& bytes, const std::string& file);

// "data-00000-of-00003"
std::string shard_file_name(int shard, int num_shards);
std::string hex32(uint32_t v);

}  // namespace weft::checkpoint::internal
