// What the coordination service and its clients share: the cluster token, TLS files, heartbeat
// timing and the message size limit (weft/distribute/coordination/service.h, client.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace weft::distribute::coordination {

// TLS for the control plane (`--tls-cert/--tls-key/--tls-ca`). With cert and key the service
// speaks TLS; with a CA as well it also requires every client to present a certificate that CA
// signed (mutual TLS). A client given a CA verifies the service's certificate against it, and
// presents its own cert and key when given them.
struct TlsOptions {
  std::string cert_file;
  std::string key_file;
  std::string ca_file;
  bool enabled() const { return !cert_file.empty() || !key_file.empty() || !ca_file.empty(); }
};

struct CoordinationOptions {
  // The cluster token every call carries (WEFT_CLUSTER_TOKEN; `weft launch` makes one). Required:
  // an empty token is refused.
  std::string token;
  TlsOptions tls;
  // Each task's heartbeat period, and how long the service waits for one before it declares the
  // task failed (a stopped process, a cut cable). A killed process is noticed at once, when its
  // connection breaks.
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds heartbeat_timeout{10000};
};

// Limits on what a call may carry; larger requests are refused naming the limit.
inline constexpr std::size_t kMaxKeyBytes = 1024;
inline constexpr std::size_t kMaxValueBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxMessageBytes = 2 * kMaxValueBytes;

// The environment variable that carries the token to every task.
inline constexpr const char* kTokenEnvironmentVariable = "WEFT_CLUSTER_TOKEN";

}  // namespace weft::distribute::coordination
