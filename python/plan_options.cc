#include "python/plan_options.h"

#include <pybind11/stl.h>

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "python/status_error.h"

namespace py = pybind11;

namespace meshtune::python {
namespace {

// `value` as T, or TypeError naming the keyword and the type given.
template <typename T>
T As(const std::string& keyword, py::handle value, const char* wanted) {
  try {
    if constexpr (std::is_same_v<T, bool>) {
      if (!py::isinstance<py::bool_>(value)) throw py::cast_error();
    } else if constexpr (std::is_same_v<T, int>) {
      if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value)) {
        throw py::cast_error();
      }
    }
    return value.cast<T>();
  } catch (const py::cast_error&) {
    throw py::type_error(
        absl::StrCat("Plan: ", keyword, " must be ", wanted, ", got ", TypeName(value)));
  }
}

// "f32" or "f64" of a dtype given as text or as NumPy's float32 / float64.
std::string DtypeText(py::handle value) {
  if (py::isinstance<py::str>(value)) {
    const std::string s = value.cast<std::string>();
    if (s == "f32" || s == "float32") return "f32";
    if (s == "f64" || s == "float64") return "f64";
    ThrowInvalid(absl::StrCat("dtype: '", s.substr(0, 80), "' is not f32 or f64"));
  }
  py::object dtype;
  try {
    dtype = py::module_::import("numpy").attr("dtype")(value);
  } catch (const py::error_already_set&) {
    throw py::type_error(absl::StrCat(
        "Plan: dtype must be 'f32', 'f64' or a NumPy float type, got ", TypeName(value)));
  }
  const std::string name = py::str(dtype.attr("name"));
  if (name == "float32") return "f32";
  if (name == "float64") return "f64";
  ThrowInvalid(absl::StrCat("dtype: ", name, " is not float32 or float64"));
}

PlanMode ModeOf(const std::string& mode) {
  if (mode == "estimate") return PlanMode::kEstimate;
  if (mode == "wisdom") return PlanMode::kWisdom;
  if (mode == "measure") return PlanMode::kMeasure;
  ThrowInvalid(
      absl::StrCat("mode: '", mode.substr(0, 80), "' is not one of estimate, wisdom, measure"));
}

}  // namespace

MPI_Comm CommOf(py::handle comm) {
  py::module_ mpi = py::module_::import("mpi4py.MPI");
  if (comm.equal(mpi.attr("COMM_NULL"))) ThrowInvalid("comm: MPI.COMM_NULL is no communicator");
  if (!py::isinstance(comm, mpi.attr("Intracomm"))) {
    ThrowInvalid(absl::StrCat(
        "comm: expected an mpi4py intracommunicator (mpi4py.MPI.Intracomm), got ", TypeName(comm)));
  }
  return MPI_Comm_f2c(comm.attr("py2f")().cast<MPI_Fint>());
}

std::string ExtentsText(py::handle extents) {
  if (py::isinstance<py::str>(extents)) return extents.cast<std::string>();
  if (!py::isinstance<py::dict>(extents)) {
    ThrowInvalid(absl::StrCat("extents: expected 'm=..,n=..' or a dict of index to extent, got ",
                              TypeName(extents)));
  }
  std::vector<std::string> parts;
  for (auto item : py::reinterpret_borrow<py::dict>(extents)) {
    const std::string name = py::str(item.first);
    if (!py::isinstance<py::int_>(item.second) || py::isinstance<py::bool_>(item.second)) {
      ThrowInvalid(absl::StrCat("extents: ", name.substr(0, 80), " is ", TypeName(item.second),
                                ", not an integer"));
    }
    parts.push_back(absl::StrCat(name, "=", std::string(py::str(item.second))));
  }
  return absl::StrJoin(parts, ",");
}

PlanOptions OptionsOf(const py::kwargs& kw) {
  static const std::set<std::string> kKeywords = {
      "mode",  "wisdom", "mesh",   "dtype",         "profile", "calibrate",      "allow_idle_ranks",
      "top_k", "reps",   "warmup", "allow_library", "layouts", "result_on_layer"};
  PlanOptions o;
  std::string mode;
  for (auto item : kw) {
    const std::string key = py::str(item.first);
    py::handle v = item.second;
    if (!kKeywords.count(key)) {
      throw py::type_error(absl::StrCat("Plan: unexpected keyword argument '", key.substr(0, 80),
                                        "' (it takes ", absl::StrJoin(kKeywords, ", "), ")"));
    }
    if (v.is_none()) continue;  // the default
    if (key == "mode") mode = As<std::string>(key, v, "a str");
    if (key == "wisdom") o.wisdom_file = py::str(py::module_::import("os").attr("fspath")(v));
    if (key == "mesh") o.mesh = As<std::string>(key, v, "a str such as 'x=2,y=2'");
    if (key == "dtype") o.dtype = DtypeText(v);
    if (key == "profile") o.profile = As<std::string>(key, v, "a str");
    if (key == "calibrate") o.calibrate = As<bool>(key, v, "a bool");
    if (key == "allow_idle_ranks") o.allow_idle_ranks = As<bool>(key, v, "a bool");
    if (key == "top_k") o.top_k = As<int>(key, v, "an int");
    if (key == "reps") o.reps = As<int>(key, v, "an int");
    if (key == "warmup") o.warmup = As<int>(key, v, "an int");
    if (key == "allow_library") o.allow_library = As<bool>(key, v, "a bool");
    if (key == "layouts") {
      o.layouts = As<std::map<std::string, std::string>>(key, v, "a dict of tensor to layout");
    }
    if (key == "result_on_layer") o.result_on_layer = As<bool>(key, v, "a bool");
  }
  if (mode.empty()) mode = o.wisdom_file.empty() ? "estimate" : "wisdom";
  o.mode = ModeOf(mode);
  return o;
}

}  // namespace meshtune::python
