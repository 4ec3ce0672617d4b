#include "weft/distribute/parameter_server/internal/serving.h"

#include <unistd.h>

#include <random>

#include "weft/core/errors.h"
#include "weft/distribute/internal/grpc_glue.h"

namespace weft::distribute::parameter_server::internal {

Serving serve(const std::string& address, grpc::Service* service, const ServiceOptions& options,
              const std::string& what) {
  distribute::internal::quiet_grpc_logs();
  distribute::internal::keep_large_buffers();
  WEFT_CHECK(!options.token.empty(), InvalidArgument)
      << what << ": the cluster token is empty (set " << coordination::kTokenEnvironmentVariable
      << "; weft launch makes one)";
  grpc::ServerBuilder builder;
  Serving s;
  builder.AddListeningPort(address, distribute::internal::server_credentials(options.tls, what),
                           &s.port);
  // SO_REUSEPORT: `weft launch` holds the task's port until this binds it (local_ports.h).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 1);
  builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxMessageBytes));
  builder.SetMaxSendMessageSize(static_cast<int>(kMaxMessageBytes));
  // Clients ping every 10 s while idle (open_channel); allow it rather than answer GOAWAY.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.RegisterService(service);
  s.server = builder.BuildAndStart();
  WEFT_CHECK(s.server != nullptr && s.port != 0, Unavailable)
      << what << ": cannot listen on " << address
      << " (is the address this host's own, and the port free?)";
  s.address = address.substr(0, address.rfind(':') + 1) + std::to_string(s.port);
  return s;
}

std::shared_ptr<grpc::Channel> open_channel(const std::string& address,
                                            const ServiceOptions& options) {
  distribute::internal::quiet_grpc_logs();
  distribute::internal::keep_large_buffers();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(kMaxMessageBytes));
  args.SetMaxSendMessageSize(static_cast<int>(kMaxMessageBytes));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return grpc::CreateCustomChannel(address, distribute::internal::channel_credentials(options.tls),
                                   args);
}

uint64_t draw_incarnation() {
  std::random_device device;
  return (uint64_t{device()} << 32) ^ device() ^ static_cast<uint64_t>(::getpid());
}

}  // namespace weft::distribute::parameter_server::internal
