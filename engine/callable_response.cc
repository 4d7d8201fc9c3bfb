#include "engine/callable_response.h"

#include <cctype>

#include "absl/strings/str_cat.h"
#include "base/excerpt.h"

namespace meshtune::engine {

namespace {

// A letter or '_', then letters, digits or '_'; at most 128 characters.
bool IsCIdentifier(const std::string& s) {
  if (s.empty() || s.size() > 128 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<v1::CodegenResponse> CallableResponse(
    const v1::CodegenRequest& request,
    const std::function<codegen::CallableKernel(const std::string& name)>& emit) {
  const std::string name = request.name().empty() ? "meshtune_kernel" : request.name();
  if (!IsCIdentifier(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel name '", base::Excerpt(name), "' is not a C identifier"));
  }
  const codegen::CallableKernel kernel = emit(name);
  v1::CodegenResponse out;
  out.set_header(kernel.header);
  out.set_source(request.header_name().empty() ? kernel.header + "\n" + kernel.source
                                               : kernel.source);
  return out;
}

}  // namespace meshtune::engine
