// The callable kernel a codegen request asks for, named and packaged: what every kind of
// kernel (a statement's, a program's, the library's) is returned as.
#ifndef MESHTUNE_ENGINE_CALLABLE_RESPONSE_H_
#define MESHTUNE_ENGINE_CALLABLE_RESPONSE_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "codegen/emit/emit_cpp.h"
#include "proto/meshtune.pb.h"

namespace meshtune::engine {

// The callable kernel `request` asks for, as `emit` writes it under the request's name
// ("meshtune_kernel" when unset): its header, and its source (after the header when the
// request names no header file). InvalidArgument for a name that is not a C identifier (a
// letter or '_', then letters, digits or '_'; at most 128 characters).
absl::StatusOr<v1::CodegenResponse> CallableResponse(
    const v1::CodegenRequest& request,
    const std::function<codegen::CallableKernel(const std::string& name)>& emit);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_CALLABLE_RESPONSE_H_
