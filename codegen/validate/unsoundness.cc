#include "codegen/validate/unsoundness.h"

#include "absl/strings/str_cat.h"

namespace meshtune::codegen {

std::string Unsoundness::ToString() const {
  return absl::StrCat(code, ": ", tensor, loop.empty() ? "" : " at " + loop, ": ", message);
}

}  // namespace meshtune::codegen
