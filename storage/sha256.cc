#include "storage/sha256.h"

#include <openssl/evp.h>

#include "absl/strings/escaping.h"

namespace meshtune::storage {

absl::StatusOr<std::string> Sha256Hex(absl::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha256(), nullptr) != 1) {
    return absl::InternalError("OpenSSL's SHA-256 failed");
  }
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), size));
}

}  // namespace meshtune::storage
