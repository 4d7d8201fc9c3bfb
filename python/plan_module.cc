// The extension module meshtune._meshtune: meshtune::Plan (meshtune/plan.h) on an mpi4py
// communicator over NumPy arrays. python/package/__init__.py exports it as meshtune.Plan; the
// Python-facing contract is documented there and in python/README.md.
//
// Every method that is collective checks its arrays, then agrees with the other ranks
// (FirstFailure) before it calls the plan: a rank handing over a wrong array makes every rank
// raise, none waits forever. The GIL is released while a plan plans, runs or moves data.
#include <mpi.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "meshtune/broadcast.h"
#include "meshtune/plan.h"
#include "python/plan_options.h"
#include "python/shard_arrays.h"
#include "python/status_error.h"

namespace py = pybind11;

namespace meshtune::python {
namespace {

class PyPlan;
// The plans alive, released (destroyed) by ReleaseAll before MPI is finalized.
std::set<PyPlan*>& LivePlans() {
  static auto* live = new std::set<PyPlan*>();
  return *live;
}

// A meshtune::Plan with the Python objects it needs kept alive: the communicator.
class PyPlan {
 public:
  PyPlan(const std::string& expr, py::handle extents, py::object comm, const py::kwargs& kw)
      : comm_object_(std::move(comm)) {
    if (comm_object_.is_none()) {
      comm_object_ = py::module_::import("mpi4py.MPI").attr("COMM_WORLD");
    }
    comm_ = CommOf(comm_object_);
    const std::string extents_text = ExtentsText(extents);
    const PlanOptions options = OptionsOf(kw);
    absl::StatusOr<std::unique_ptr<Plan>> plan;
    {
      py::gil_scoped_release unlocked;
      plan = Plan::Create(expr, extents_text, comm_, options);
    }
    ThrowIfFailed(plan.status());
    plan_ = *std::move(plan);
    dtype_ = DtypeOf(plan_->dtype());
    LivePlans().insert(this);
  }
  ~PyPlan() { LivePlans().erase(this); }

  // Destroys the plan (its buffers, its communicators); later calls raise.
  void Close() { plan_.reset(); }

  const Plan& plan() const {
    if (plan_ == nullptr) {
      throw StatusError(absl::FailedPreconditionError(
          "the plan was closed (Plan.close(), or the interpreter is exiting)"));
    }
    return *plan_;
  }
  Plan& plan() { return const_cast<Plan&>(static_cast<const PyPlan*>(this)->plan()); }

  ShardLayout Layout(const std::string& tensor) const {
    absl::StatusOr<ShardLayout> s = plan().Shard(tensor);
    ThrowIfFailed(s.status());
    return *std::move(s);
  }
  std::vector<int64_t> Shape(const std::string& tensor) const {
    absl::StatusOr<std::vector<int64_t>> s = plan().Shape(tensor);
    ThrowIfFailed(s.status());
    return *std::move(s);
  }

  py::tuple Shard(const std::string& tensor) const {
    const ShardLayout s = Layout(tensor);
    return py::make_tuple(py::tuple(py::cast(s.start)), py::tuple(py::cast(s.extents)));
  }

  py::dict EmptyShards() const {
    py::dict shards;
    for (const std::string& t : plan().tensors())
      shards[py::str(t)] = NewShard(Layout(t), dtype_, Provides());
    return shards;
  }

  // Plan::ProvideStorage: whether this rank passes arrays of the shards' whole storage.
  bool Provides() const { return plan().provides_storage(); }
  void ProvideStorage(bool provides) { ThrowIfFailed(plan().ProvideStorage(provides)); }

  void Execute(py::handle arrays) {
    const std::vector<std::string>& tensors = plan().tensors();
    std::vector<void*> data(tensors.size(), nullptr);
    absl::Status mine = ArraysInOrder(arrays, tensors, &data);
    Agree(mine);
    absl::Status ran;
    {
      py::gil_scoped_release unlocked;
      ran = plan().Execute(data);
    }
    ThrowIfFailed(ran);
  }

  py::array Scatter(const std::string& tensor, py::handle whole, int root, py::object out) {
    const ShardLayout layout = Layout(tensor);
    if (out.is_none()) out = NewShard(layout, dtype_, Provides());
    void* shard = nullptr;
    const void* global = nullptr;
    absl::Status mine = CheckRoot(root);
    if (mine.ok()) mine = Assign(ShardData(tensor, out, layout, dtype_, Provides()), &shard);
    if (mine.ok() && Rank() == root) {
      void* g = nullptr;
      mine = Assign(WholeData(tensor, whole, Shape(tensor), dtype_), &g);
      global = g;
    }
    Agree(mine);
    absl::Status moved;
    {
      py::gil_scoped_release unlocked;
      moved = plan().Scatter(tensor, global, shard, root);
    }
    ThrowIfFailed(moved);
    return py::reinterpret_borrow<py::array>(out);
  }

  py::object Gather(const std::string& tensor, py::handle shard, int root) {
    const ShardLayout layout = Layout(tensor);
    void* data = nullptr;
    absl::Status mine = CheckRoot(root);
    if (mine.ok()) mine = Assign(ShardData(tensor, shard, layout, dtype_, Provides(), true), &data);
    Agree(mine);
    py::object whole = py::none();
    void* global = nullptr;
    if (Rank() == root) {
      py::array a(dtype_, Shape(tensor));
      global = a.mutable_data();
      whole = a;
    }
    absl::Status moved;
    {
      py::gil_scoped_release unlocked;
      moved = plan().Gather(tensor, data, global, root);
    }
    ThrowIfFailed(moved);
    return whole;
  }

  std::string Repr() const {
    if (plan_ == nullptr) return "<meshtune.Plan (closed)>";
    return absl::StrCat("<meshtune.Plan of ", absl::StrJoin(plan_->tensors(), ", "), " on ",
                        plan_->mesh(), plan_->active() ? "" : " (idle on this rank)", ">");
  }

 private:
  int Rank() const {
    int rank = 0;
    MPI_Comm_rank(comm_, &rank);
    return rank;
  }
  absl::Status CheckRoot(int root) const {
    int size = 0;
    MPI_Comm_size(comm_, &size);
    if (root >= 0 && root < size) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("root ", root, " is not a rank of the communicator (size ", size, ")"));
  }
  // Throws on every rank when `mine` failed on any: this rank's own failure, else the lowest
  // failing rank's ("rank R: ..."). Collective over the plan's communicator.
  void Agree(const absl::Status& mine) const {
    const absl::Status first = FirstFailure(mine, comm_);
    ThrowIfFailed(mine.ok() ? first : mine);
  }
  static absl::Status Assign(absl::StatusOr<void*> p, void** out) {
    if (!p.ok()) return p.status();
    *out = *p;
    return absl::OkStatus();
  }
  // `arrays` (a dict by tensor name, or a sequence in tensors() order) checked against this
  // rank's shards, their data into `data`.
  absl::Status ArraysInOrder(py::handle arrays, const std::vector<std::string>& tensors,
                             std::vector<void*>* data) const;

  py::object comm_object_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::unique_ptr<Plan> plan_;
  py::dtype dtype_;
};

absl::Status PyPlan::ArraysInOrder(py::handle arrays, const std::vector<std::string>& tensors,
                                   std::vector<void*>* data) const {
  const std::string names = absl::StrJoin(tensors, ", ");
  std::vector<py::handle> in_order;
  if (py::isinstance<py::dict>(arrays)) {
    py::dict d = py::reinterpret_borrow<py::dict>(arrays);
    for (auto item : d) {
      const std::string key = py::str(item.first);
      if (std::find(tensors.begin(), tensors.end(), key) == tensors.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "execute: ", key.substr(0, 80), " is not a tensor of the plan (", names, ")"));
      }
    }
    for (const std::string& t : tensors) {
      if (!d.contains(t)) {
        return absl::InvalidArgumentError(
            absl::StrCat("execute: no array for ", t, " (the plan's tensors: ", names, ")"));
      }
      in_order.push_back(d[py::str(t)]);
    }
  } else if (py::isinstance<py::sequence>(arrays) && !py::isinstance<py::str>(arrays) &&
             !py::isinstance<py::array>(arrays)) {
    py::sequence s = py::reinterpret_borrow<py::sequence>(arrays);
    if (s.size() != tensors.size()) {
      return absl::InvalidArgumentError(absl::StrCat("execute: ", s.size(),
                                                     " arrays, but the plan has ", tensors.size(),
                                                     " tensors (", names, ")"));
    }
    for (size_t t = 0; t < s.size(); ++t) in_order.push_back(s[t]);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "execute: expected a dict of arrays by tensor name (plan.empty_shards()) or a list in "
        "plan.tensors order, got ",
        TypeName(arrays)));
  }
  for (size_t t = 0; t < tensors.size(); ++t) {
    absl::StatusOr<void*> p =
        ShardData(tensors[t], in_order[t], Layout(tensors[t]), dtype_, Provides());
    if (!p.ok()) return p.status();
    (*data)[t] = *p;
  }
  return absl::OkStatus();
}

// Closes every plan still open: registered with atexit, so that no plan outlives MPI.
void ReleaseAll() {
  for (PyPlan* p : LivePlans()) p->Close();
}

}  // namespace
}  // namespace meshtune::python

PYBIND11_MODULE(_meshtune, m) {
  using meshtune::python::PyPlan;
  m.doc() = "meshtune's plan API on mpi4py communicators and NumPy arrays (meshtune/plan.h)";
  meshtune::python::RegisterStatusErrors();
  py::class_<PyPlan>(m, "Plan")
      .def(py::init<const std::string&, py::handle, py::object, const py::kwargs&>(),
           py::arg("expr"), py::arg("extents"), py::arg("comm") = py::none())
      .def_property_readonly("tensors", [](const PyPlan& p) { return p.plan().tensors(); })
      .def_property_readonly("trace", [](const PyPlan& p) { return p.plan().trace(); })
      .def_property_readonly("mesh", [](const PyPlan& p) { return p.plan().mesh(); })
      .def_property_readonly("active", [](const PyPlan& p) { return p.plan().active(); })
      .def_property_readonly("library", [](const PyPlan& p) { return p.plan().library(); })
      .def_property_readonly("dtype", [](const PyPlan& p) { return p.plan().dtype(); })
      .def_property_readonly("measured_seconds",
                             [](const PyPlan& p) { return p.plan().measured_seconds(); })
      .def_property_readonly("program_from_wisdom",
                             [](const PyPlan& p) { return p.plan().program_from_wisdom(); })
      .def("shard", &PyPlan::Shard, py::arg("tensor"))
      .def(
          "shape",
          [](const PyPlan& p, const std::string& t) { return py::tuple(py::cast(p.Shape(t))); },
          py::arg("tensor"))
      .def(
          "storage",
          [](const PyPlan& p, const std::string& t) {
            return py::tuple(py::cast(p.Layout(t).storage));
          },
          py::arg("tensor"))
      .def("provide_storage", &PyPlan::ProvideStorage, py::arg("provides"))
      .def_property_readonly("provides_storage", &PyPlan::Provides)
      .def("empty_shards", &PyPlan::EmptyShards)
      .def("execute", &PyPlan::Execute, py::arg("arrays"))
      .def("scatter", &PyPlan::Scatter, py::arg("tensor"), py::arg("whole") = py::none(),
           py::arg("root") = 0, py::arg("out") = py::none())
      .def("gather", &PyPlan::Gather, py::arg("tensor"), py::arg("shard"), py::arg("root") = 0)
      .def("close", &PyPlan::Close)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyPlan& p, py::args) { p.Close(); })
      .def("__repr__", &PyPlan::Repr);
  m.def("_close_all", &meshtune::python::ReleaseAll);
}
