// A unary gRPC call with raw bytes, outside any weft client, for the services' tests that play
// misbehaving callers (no token, a wrong one, bytes that are no message, too many bytes).
// Header-only; the test needs gRPC.
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <future>
#include <string>

namespace weft::testing {

// Calls `method` ("/weft.ps.ParameterServer/Pull") at `address` with `payload`, carrying
// `token` as the cluster token unless it is null; the status the server answered.
inline grpc::Status raw_call(const std::string& address, const std::string& method,
                             const std::string& payload, const char* token) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  if (token != nullptr) ctx.AddMetadata("weft-cluster-token", token);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice slice(payload);
  grpc::ByteBuffer request(&slice, 1), response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) { done.set_value(s); });
  return done.get_future().get();
}

}  // namespace weft::testing
