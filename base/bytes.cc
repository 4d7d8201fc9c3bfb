#include "base/bytes.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace meshtune::base {

std::string FormatBytes(int64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return absl::StrCat(bytes, " B");
  return absl::StrFormat("%.4g %s", v, kUnits[u]);
}

}  // namespace meshtune::base
