// What a parameter server (ps_service.h) and its clients (ps_client.h) share: the token and TLS
// of the cluster, deadlines, the chunk size and message limit, and how a variable is described.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "weft/core/dtype.h"
#include "weft/core/shape.h"
#include "weft/distribute/coordination/options.h"

namespace weft::distribute::parameter_server {

struct ServiceOptions {
  // The cluster token every call carries (WEFT_CLUSTER_TOKEN); required.
  std::string token;
  // `--tls-*`, as for the coordination service.
  coordination::TlsOptions tls;
  // The deadline of every call a client makes.
  std::chrono::milliseconds call_timeout{30000};
  // How long a worker waits for a closure's function to be registered before failing the
  // closure: every process registers its functions as it starts, and a worker may get its first
  // closure while it is still building its model.
  std::chrono::milliseconds function_wait{60000};
};

// A tensor travels in pieces of at most this many bytes, one call each at most (BytePS cuts at
// 4 096 000); a message may hold kChunkBytes of data plus its fields, kMaxMessageBytes in all.
inline constexpr std::size_t kChunkBytes = std::size_t{4} << 20;
inline constexpr std::size_t kMaxMessageBytes = kChunkBytes + (std::size_t{64} << 10);

// A variable as the coordinator numbers it: `id` is its creation order in the strategy's scope,
// the same in every process of the (same) program.
struct VariableSpec {
  uint64_t id = 0;
  std::string name;  // "dense/kernel"
  DType dtype = kFloat32;
  Shape shape;
  bool trainable = true;
  // 0: the variable's value; k > 0: its optimizer's slot k - 1 (of its shape and dtype).
  uint32_t slot = 0;
  std::size_t bytes() const;
};

}  // namespace weft::distribute::parameter_server
