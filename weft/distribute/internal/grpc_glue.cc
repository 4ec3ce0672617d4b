#include "weft/distribute/internal/grpc_glue.h"

#include <grpc/support/log.h>
#include <malloc.h>

#include <cstdlib>

#include "weft/core/errors.h"
#include "weft/core/file_io.h"

namespace weft::distribute::internal {
namespace {

std::string read_pem(const std::string& path, const char* flag) {
  std::string text, why;
  WEFT_CHECK(io::read_whole_file(path, &text, &why), InvalidArgument)
      << flag << " " << path << ": " << why;
  return text;
}

}  // namespace

void quiet_grpc_logs() {
  static const bool once = [] {
    if (std::getenv("GRPC_VERBOSITY") == nullptr) gpr_set_log_function([](gpr_log_func_args*) {});
    return true;
  }();
  (void)once;
}

void keep_large_buffers() {
  static const bool once = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 128 << 20);
    return true;
  }();
  (void)once;
}

std::shared_ptr<grpc::ServerCredentials> server_credentials(const coordination::TlsOptions& tls,
                                                            const std::string& service) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  WEFT_CHECK(!tls.cert_file.empty() && !tls.key_file.empty(), InvalidArgument)
      << "TLS for " << service << " needs both --tls-cert and --tls-key";
  grpc::SslServerCredentialsOptions options(
      tls.ca_file.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  if (!tls.ca_file.empty()) options.pem_root_certs = read_pem(tls.ca_file, "--tls-ca");
  options.pem_key_cert_pairs.push_back(
      {read_pem(tls.key_file, "--tls-key"), read_pem(tls.cert_file, "--tls-cert")});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> channel_credentials(const coordination::TlsOptions& tls) {
  if (!tls.enabled()) return grpc::InsecureChannelCredentials();
  WEFT_CHECK(tls.cert_file.empty() == tls.key_file.empty(), InvalidArgument)
      << "a client certificate needs both --tls-cert and --tls-key";
  grpc::SslCredentialsOptions options;
  if (!tls.ca_file.empty()) options.pem_root_certs = read_pem(tls.ca_file, "--tls-ca");
  if (!tls.cert_file.empty()) {
    options.pem_private_key = read_pem(tls.key_file, "--tls-key");
    options.pem_cert_chain = read_pem(tls.cert_file, "--tls-cert");
  }
  return grpc::SslCredentials(options);
}

bool tokens_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ (i < b.size() ? b[i] : 0);
  return diff == 0;
}

std::optional<grpc::Status> token_refusal(const grpc::CallbackServerContext& ctx,
                                          const std::string& token) {
  const auto& metadata = ctx.client_metadata();
  auto found = metadata.find(kTokenMetadataKey);
  if (found == metadata.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "the call carries no cluster token");
  }
  if (!tokens_equal({found->second.data(), found->second.size()}, token)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "the call's cluster token is wrong");
  }
  return std::nullopt;
}

std::string bytes_of(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (buffer.Dump(&slices).ok()) {
    for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return bytes;
}

grpc::ByteBuffer buffer_of(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

void throw_status(const grpc::Status& status, const std::string& what, const std::string& server) {
  const std::string& message = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::ABORTED:  // a task failed: the message names it
      throw Unavailable(message);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      throw DeadlineExceeded(what + ": " + message);
    case grpc::StatusCode::INVALID_ARGUMENT:
      throw InvalidArgument(what + ": " + message);
    case grpc::StatusCode::DATA_LOSS:  // a damaged file the server read
      throw DataLoss(what + ": " + message);
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      throw ResourceExhausted(what + " refused by " + server + ": " + message);
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::FAILED_PRECONDITION:
      throw FailedPrecondition(what + " refused by " + server + ": " + message);
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED:
      throw Unavailable(what + ": " + server + " is unreachable: " + message);
    default:
      throw Internal(what + ": " + server + " answered " + std::to_string(status.error_code()) +
                     ": " + message);
  }
}

}  // namespace weft::distribute::internal
