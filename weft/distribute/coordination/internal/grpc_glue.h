// What the coordination service and client share on the gRPC side: the token's metadata key,
// credentials from TlsOptions, and turning gRPC statuses into weft's errors. Included only by
// the coordination .cc files, so that no other part of weft sees gRPC.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "weft/distribute/coordination/options.h"

namespace weft::distribute::coordination::internal {

inline constexpr const char* kTokenMetadataKey = "weft-cluster-token";

// gRPC's own log lines ("Handshake failed ...") repeat what weft's errors say in their place;
// they stay off unless GRPC_VERBOSITY asks for them. Called before any gRPC use.
void quiet_grpc_logs();

std::shared_ptr<grpc::ServerCredentials> server_credentials(const TlsOptions& tls);
std::shared_ptr<grpc::ChannelCredentials> channel_credentials(const TlsOptions& tls);
// Compares in time that does not depend on where the strings first differ.
bool tokens_equal(std::string_view a, std::string_view b);
// The cluster's failure as every task hears it: "task worker:1 failed: <why>".
inline std::string failure_of(const std::string& task, const std::string& why) {
  return "task " + task + " failed: " + why;
}
// The task a failure_of() names ("worker:1"); empty for any other text.
inline std::string task_of_failure(const std::string& failure) {
  const std::string head = "task ";
  auto end = failure.find(" failed: ");
  if (failure.rfind(head, 0) != 0 || end == std::string::npos) return "";
  return failure.substr(head.size(), end - head.size());
}
// Throws the weft error for a failed call `what` ("get_key_value(\"k\")") to `service`.
[[noreturn]] void throw_status(const grpc::Status& status, const std::string& what,
                               const std::string& service);

}  // namespace weft::distribute::coordination::internal
