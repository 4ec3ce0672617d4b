// How two ranks of a SocketMesh prove to each other that they hold the cluster token without
// sending it: a challenge-response over both sides' fresh nonces (HMAC-SHA256 keyed by the
// token, compared in constant time). The connecting rank sends a Hello, the accepting rank a
// Challenge (its nonce and its own proof), the connecting rank its Proof, the accepting rank one
// byte of acceptance. A proof answers one pair of nonces, so a recorded one is refused when
// replayed; the token never crosses the wire. OpenSSL's libcrypto is used here and only here.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace weft::distribute::collective::internal::handshake {

using Nonce = std::array<uint8_t, 32>;
using Mac = std::array<uint8_t, 32>;
constexpr uint32_t kMagic = 0x77656674;  // "weft"

// connecting rank → accepting rank
struct Hello {
  uint32_t magic = kMagic;
  uint32_t rank = 0;  // the connecting rank
  Nonce nonce{};
};
// accepting rank → connecting rank
struct Challenge {
  uint32_t magic = kMagic;
  uint32_t rank = 0;  // the accepting rank
  Nonce nonce{};
  Mac proof{};  // mac(kAccepting, ...): the accepting rank holds the token
};
// connecting rank → accepting rank
struct Proof {
  Mac proof{};  // mac(kConnecting, ...)
};
static_assert(sizeof(Hello) == 40 && sizeof(Challenge) == 72 && sizeof(Proof) == 32);

enum class Role : uint8_t { kConnecting = 1, kAccepting = 2 };

// 32 bytes from the operating system's generator (OpenSSL's RAND_bytes).
Nonce random_nonce();

// HMAC-SHA256 keyed by `token` over the role, the mesh's name, both ranks and both nonces: a
// proof for one connection of one mesh, in one direction.
Mac mac(std::string_view token, Role role, std::string_view mesh, uint32_t connecting,
        uint32_t accepting, const Nonce& connecting_nonce, const Nonce& accepting_nonce);

// Whether two proofs are equal, in time that does not depend on where they differ.
bool same(const Mac& a, const Mac& b);

}  // namespace weft::distribute::collective::internal::handshake
