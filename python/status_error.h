// How the Python module turns meshtune's absl::Status into Python exceptions: a failed status
// is thrown as StatusError and raised in Python as meshtune.Error(code, message)
// (python/package/_error.py), its code the status code's name ("INVALID_ARGUMENT").
#ifndef MESHTUNE_PYTHON_STATUS_ERROR_H_
#define MESHTUNE_PYTHON_STATUS_ERROR_H_

#include <pybind11/pybind11.h>

#include <exception>
#include <string>

#include "absl/status/status.h"

namespace meshtune::python {

// A failed status on its way to Python.
class StatusError : public std::exception {
 public:
  explicit StatusError(const absl::Status& status);
  const char* what() const noexcept override { return message_.c_str(); }
  const std::string& code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  std::string code_, message_;
};

// Throws StatusError for a failed `status`; nothing for OK.
void ThrowIfFailed(const absl::Status& status);

// Throws StatusError(InvalidArgument(message)).
[[noreturn]] void ThrowInvalid(const std::string& message);

// The Python type name of `h` ("list", "NoneType"), for messages.
std::string TypeName(pybind11::handle h);

// Registers the translation of StatusError into meshtune.Error with pybind11 (once, at the
// module's import).
void RegisterStatusErrors();

}  // namespace meshtune::python

#endif  // MESHTUNE_PYTHON_STATUS_ERROR_H_
