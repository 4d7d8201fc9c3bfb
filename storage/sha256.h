// SHA-256 of a text, as the storage layer's identities (workload and machine fingerprints)
// use it.
#ifndef MESHTUNE_STORAGE_SHA256_H_
#define MESHTUNE_STORAGE_SHA256_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace meshtune::storage {

// Lowercase hex SHA-256 of `text` (64 characters), by OpenSSL; Internal if OpenSSL fails.
absl::StatusOr<std::string> Sha256Hex(absl::string_view text);

}  // namespace meshtune::storage

#endif  // MESHTUNE_STORAGE_SHA256_H_
