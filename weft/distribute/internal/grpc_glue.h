// What weft's gRPC services (the coordination service, the parameter servers) and their clients
// share: the cluster token's metadata key and its check before a request is parsed, credentials
// from TlsOptions (`--tls-*`), raw request bytes, and turning gRPC statuses into weft's errors.
// Included only by the services' .cc files, so that no other part of weft sees gRPC.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>

#include "weft/distribute/coordination/options.h"

namespace weft::distribute::internal {

inline constexpr const char* kTokenMetadataKey = "weft-cluster-token";

// gRPC's own log lines ("Handshake failed ...") repeat what weft's errors say in their place;
// they stay off unless GRPC_VERBOSITY asks for them. Called before any gRPC use.
void quiet_grpc_logs();

// Messages of megabytes (a parameter server's chunks) pass through several malloc'd buffers per
// call. glibc maps such sizes afresh or trims them from its arenas when they are freed, so every
// next buffer faults all its pages in again: a step of a 4 MiB variable (pull and push, one
// worker, one ps task) took 107 ms, and 12 ms without (`weft bench ps`). Raises glibc's mmap
// threshold to its maximum (32 MiB) and its trim threshold to 128 MiB for the process, once.
void keep_large_buffers();

// `service` names the server in errors ("the coordination service").
std::shared_ptr<grpc::ServerCredentials> server_credentials(const coordination::TlsOptions& tls,
                                                            const std::string& service);
std::shared_ptr<grpc::ChannelCredentials> channel_credentials(const coordination::TlsOptions& tls);
// Compares in time that does not depend on where the strings first differ.
bool tokens_equal(std::string_view a, std::string_view b);
// UNAUTHENTICATED when the call carries no token or another one than `token`; nullopt when it
// carries `token`. Servers check it before they read the request's bytes.
std::optional<grpc::Status> token_refusal(const grpc::CallbackServerContext& ctx,
                                          const std::string& token);
// A message's bytes, and a buffer holding bytes.
std::string bytes_of(const grpc::ByteBuffer& buffer);
grpc::ByteBuffer buffer_of(const std::string& bytes);
// Throws the weft error for the failed call `what` ("task worker:1: get_key_value(\"k\")") to
// `server` ("the coordination service at 10.0.0.1:2222"). ABORTED carries a task's failure,
// which the message names, and is thrown as Unavailable with the message alone;
// RESOURCE_EXHAUSTED (a message over a limit) as ResourceExhausted.
[[noreturn]] void throw_status(const grpc::Status& status, const std::string& what,
                               const std::string& server);

}  // namespace weft::distribute::internal
