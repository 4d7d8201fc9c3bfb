#include "python/status_error.h"

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace meshtune::python {

StatusError::StatusError(const absl::Status& status)
    : code_(absl::StatusCodeToString(status.code())), message_(status.message()) {}

void ThrowIfFailed(const absl::Status& status) {
  if (!status.ok()) throw StatusError(status);
}

void ThrowInvalid(const std::string& message) {
  throw StatusError(absl::InvalidArgumentError(message));
}

std::string TypeName(py::handle h) { return py::str(h.get_type().attr("__name__")); }

void RegisterStatusErrors() {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      py::object error = py::module_::import("meshtune._error").attr("Error");
      py::object instance = error(e.code(), e.message());
      PyErr_SetObject(error.ptr(), instance.ptr());
    }
  });
}

}  // namespace meshtune::python
