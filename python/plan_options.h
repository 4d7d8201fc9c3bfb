// The arguments of meshtune.Plan(...) as the C++ plan API takes them: the mpi4py communicator,
// the extents and the keyword options (meshtune/plan.h, PlanOptions).
#ifndef MESHTUNE_PYTHON_PLAN_OPTIONS_H_
#define MESHTUNE_PYTHON_PLAN_OPTIONS_H_

#include <mpi.h>
#include <pybind11/pybind11.h>

#include <string>

#include "meshtune/plan.h"

namespace meshtune::python {

// The MPI communicator of an mpi4py intracommunicator (through its Fortran handle, so that
// no mpi4py header is needed). Throws StatusError (InvalidArgument) for anything else,
// MPI.COMM_NULL included.
MPI_Comm CommOf(pybind11::handle comm);

// "m=4,n=6": extents given as that text or as a dict of index name to extent (in its order).
// Throws StatusError (InvalidArgument) for another type or a value that is not an integer.
std::string ExtentsText(pybind11::handle extents);

// PlanOptions from Plan's keyword arguments: mode ("estimate", "wisdom", "measure"; default
// "wisdom" with a wisdom file, else "estimate"), wisdom, mesh, dtype ("f32", "f64" or the
// NumPy float32 / float64), profile, calibrate, allow_idle_ranks, top_k, reps, warmup,
// allow_library, layouts (a dict), result_on_layer. TypeError (pybind11::type_error) for an
// unknown keyword or a value of the wrong type; StatusError (InvalidArgument) for an unknown
// mode or dtype.
PlanOptions OptionsOf(const pybind11::kwargs& kw);

}  // namespace meshtune::python

#endif  // MESHTUNE_PYTHON_PLAN_OPTIONS_H_
