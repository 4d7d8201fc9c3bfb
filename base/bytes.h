// Byte counts for messages.
#ifndef MESHTUNE_BASE_BYTES_H_
#define MESHTUNE_BASE_BYTES_H_

#include <cstdint>
#include <string>

namespace meshtune::base {

// `bytes` in binary units with four significant digits: "1.5 GiB", "64 KiB", "12 B".
std::string FormatBytes(int64_t bytes);

}  // namespace meshtune::base

#endif  // MESHTUNE_BASE_BYTES_H_
