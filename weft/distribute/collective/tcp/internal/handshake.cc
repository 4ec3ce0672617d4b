#include "weft/distribute/collective/tcp/internal/handshake.h"

#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <string>

#include "weft/core/errors.h"

namespace weft::distribute::collective::internal::handshake {

Nonce random_nonce() {
  Nonce n;
  WEFT_CHECK(RAND_bytes(n.data(), static_cast<int>(n.size())) == 1, Unavailable)
      << "collectives: the system's random number generator failed";
  return n;
}

Mac mac(std::string_view token, Role role, std::string_view mesh, uint32_t connecting,
        uint32_t accepting, const Nonce& connecting_nonce, const Nonce& accepting_nonce) {
  // role | ranks | nonces | mesh name: fixed-size fields first, so no two inputs read alike.
  std::string message(1 + 8 + 64, '\0');
  message[0] = static_cast<char>(role);
  for (int i = 0; i < 4; ++i) {
    message[1 + i] = static_cast<char>(connecting >> (8 * i));
    message[5 + i] = static_cast<char>(accepting >> (8 * i));
  }
  std::copy(connecting_nonce.begin(), connecting_nonce.end(), message.begin() + 9);
  std::copy(accepting_nonce.begin(), accepting_nonce.end(), message.begin() + 41);
  message.append(mesh);
  Mac out{};
  unsigned int length = 0;
  const unsigned char* done =
      HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), out.data(),
           &length);
  WEFT_CHECK(done != nullptr && length == out.size(), Internal)
      << "collectives: HMAC-SHA256 failed";
  return out;
}

bool same(const Mac& a, const Mac& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

}  // namespace weft::distribute::collective::internal::handshake
