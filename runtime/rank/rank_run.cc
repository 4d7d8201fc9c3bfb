// RankRuntime<T> (rank_runtime.h): runs. The timing loop (Measure) and a run on the caller's
// memory (Bind, Run); the shards' contents around a run (filled, given layouts'
// redistributions, replicated inputs' copies and the poisoning that makes a run without
// them fail, the output reset); verification of the output against the problem's reference.
#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "runtime/fill.h"
#include "runtime/oracle.h"
#include "runtime/rank/rank_runtime.h"

namespace meshtune::runtime::internal {

namespace {

// `t`'s shard `data` on the rank whose block starts at `start`: every data element set to
// `value`, the padding (past t.shape, codegen/program.h) to zero.
template <typename T>
void SetData(const TensorSpec& t, const std::vector<int64_t>& start, T* data, T value) {
  ForEachShardRow(t.local_shape, start, t.shape, [&](int64_t offset, int64_t n, int64_t length) {
    std::fill(data + offset, data + offset + n, value);
    std::fill(data + offset + n, data + offset + length, T(0));
  });
}

}  // namespace

template <typename T>
RunStats RankRuntime<T>::Measure(const std::function<void()>& body, int warmup, int reps,
                                 const std::string& fault, RepetitionGate* gate) {
  RunStats m;
  if (bound_) {
    m.error = "Measure needs a runtime that owns its shards (MakeRankRuntime)";
    return m;
  }
  for (int i = 0;; ++i) {
    const Repetition rep = NextRepetition(gate, i, warmup, reps);
    if (rep == Repetition::kStop) break;
    ResetOutput();
    PoisonCopies();
    bytes_ = 0;
    copied_ = 0;
    kernel_time_ = 0;
    kernel_calls_ = 0;
    comm_->Barrier();
    const double t0 = comm_->Now();
    MakeCopies();
    MoveGiven(true);
    body();
    for (auto& [name, b] : buffers_) Wait(name);  // a body that left one started
    MoveGiven(false);
    double worst[2] = {StepSeconds(t0, comm_->Now(), *comm_), kernel_time_};
    comm_->Allreduce(&worst[1], 1, DataType::kDouble, ReduceOp::kMax, comm_->AllAxes());
    if (gate != nullptr) gate->Timed(worst[0]);
    if (rep == Repetition::kTimed) {
      m.seconds.push_back(worst[0]);
      m.kernel_seconds.push_back(worst[1]);
    }
    m.kernel_calls = kernel_calls_;
  }
  long long most[2] = {bytes_, copied_};
  comm_->Allreduce(most, 2, DataType::kLongLong, ReduceOp::kMax, comm_->AllAxes());
  m.bytes_sent_max = most[0];
  m.bytes_copied_max = most[1];
  const TensorSpec& spec = Output();
  std::vector<T>& out = spec.given ? given_[spec.name] : shards_[spec.name].data;
  // The output element each slot holds: -1 for a slot no element uses, or padding.
  const std::vector<int64_t> start = spec.block_start(coords_);
  const auto global = [&](size_t i) {
    return spec.given ? spec.given->global[i]
                      : SlotGlobal(static_cast<int64_t>(i), spec.local_shape, start, spec.shape);
  };
  if (fault == "wrong" && rank_ == 0 && !out.empty()) {
    // An element rather than padding: the first from the middle on, else before it.
    size_t at = out.size() / 2;
    while (at < out.size() && global(at) < 0) ++at;
    if (at == out.size()) {
      at = out.size() / 2;
      while (at > 0 && global(at) < 0) --at;
    }
    out[at] += T(1);
  }
  m.checksum = 0;
  // Off the output's layer a shard holds no result (its given storage, if any, does).
  const bool holds = spec.given || IsCopySource(spec);
  for (size_t i = 0; i < out.size() && holds; ++i) {
    if (global(i) >= 0) m.checksum += out[i];
  }
  comm_->Allreduce(&m.checksum, 1, DataType::kDouble, ReduceOp::kSum, comm_->AllAxes());
  m.error = Verify(spec, holds ? out.data() : nullptr);
  m.verified = m.error.empty();
  return m;
}

template <typename T>
void RankRuntime<T>::Bind(const std::string& tensor, void* data) {
  bound_data_[tensor] = static_cast<T*>(data);
}

template <typename T>
std::string RankRuntime<T>::Run(const std::function<void()>& body) {
  if (!bound_) return "Run needs a runtime over the caller's memory (MakeBoundRankRuntime)";
  for (const TensorSpec& t : tensors_) {
    const int64_t held =
        t.given ? static_cast<int64_t>(t.given->global.size()) : Elements(t.local_shape);
    if (bound_data_[t.name] == nullptr && held > 0) return "tensor " + t.name + " is not bound";
  }
  if (!accumulate_) {
    const TensorSpec& out = Output();
    std::fill(Data(out.name), Data(out.name) + Elements(out.local_shape), T(0));
  }
  MoveGiven(true);
  body();
  for (auto& [name, b] : buffers_) Wait(name);  // a body that left one started
  MoveGiven(false);
  return "";
}

// Padding (past t.shape, codegen/program.h) is zero, never filled from the formula.
template <typename T>
void RankRuntime<T>::Fill(const TensorSpec& t) {
  Dense<T>& b = shards_[t.name];
  const std::vector<int64_t> start = t.block_start(coords_);
  int64_t i = 0;
  ForEachPoint(t.local_shape, [&](const std::vector<int64_t>& l) {
    const int64_t g = GlobalOf(l, start, t.shape);
    b.data[i++] = g < 0 ? T(0) : static_cast<T>(ElementValue(seed_, t.name, g));
  });
}

// The application's storage of `t` in its given layout, filled from the global indices.
template <typename T>
void RankRuntime<T>::FillGiven(const TensorSpec& t) {
  std::vector<T>& data = given_[t.name];
  for (size_t i = 0; i < data.size(); ++i) {
    const int64_t g = t.given->global[i];
    data[i] = g < 0 ? T(0) : static_cast<T>(ElementValue(seed_, t.name, g));
  }
}

// The redistributions of tensors in given layouts: into the shards (`in`) before the
// body, out of the output's shard after it.
template <typename T>
void RankRuntime<T>::MoveGiven(bool in) {
  for (const TensorSpec& t : tensors_) {
    if (!t.given) continue;
    const GivenSpec::Move& move = in ? t.given->in : t.given->out;
    if (!move) continue;
    bytes_ += in ? t.given->in_bytes_sent : t.given->out_bytes_sent;
    T* shard = shards_[t.name].data.data();
    T* given = bound_ ? bound_data_[t.name] : given_[t.name].data();
    if (in) {
      move(given, shard, *comm_);
    } else {
      move(shard, given, *comm_);
    }
  }
}

// The copies of replicated inputs (TensorSpec::replicated_axes) made wrong before a run,
// on every rank off coordinate 0 of those axes, so that a run without MakeCopies cannot
// verify; so are an output's shards off its layer, which hold no result. Only the data:
// padding (codegen/program.h) stays zero, as it starts.
template <typename T>
void RankRuntime<T>::PoisonCopies() {
  for (const TensorSpec& t : tensors_) {
    // A shard from the given layout at each run, or a copy made at each run.
    const bool made = (t.given && t.given->in) || (!t.replicated_axes.empty() && !IsCopySource(t));
    if (!made) continue;
    SetData(t, t.block_start(coords_), shards_[t.name].data.data(),
            std::numeric_limits<T>::quiet_NaN());
  }
}

// Whether this rank holds the copy of input `t` the others are made from, or output `t`'s
// result (AtCoordinateZero).
template <typename T>
bool RankRuntime<T>::IsCopySource(const TensorSpec& t) const {
  return AtCoordinateZero(t, coords_);
}

// Every replicated input broadcast along its replicated axes from coordinate 0 (timed:
// the copies are part of the schedule's cost).
template <typename T>
void RankRuntime<T>::MakeCopies() {
  for (const TensorSpec& t : tensors_) {
    if (t.replicated_axes.empty() || t.is_output) continue;
    Coords root = coords_;
    for (int a : t.replicated_axes) root[static_cast<size_t>(a)] = 0;
    std::vector<T>& data = shards_[t.name].data;
    comm_->Bcast(data.data(), static_cast<int64_t>(data.size()), TypeOf<T>(), t.replicated_axes,
                 root);
    if (IsCopySource(t)) bytes_ += static_cast<int64_t>(data.size() * sizeof(T));  // sent
  }
}

template <typename T>
void RankRuntime<T>::ResetOutput() {
  const TensorSpec& out = Output();
  if (out.given) {  // a `+=` output's shard comes from the given storage (PoisonCopies)
    if (accumulate_) {
      FillGiven(out);
    } else {
      std::fill(given_[out.name].begin(), given_[out.name].end(),
                std::numeric_limits<T>::quiet_NaN());
      std::fill(shards_[out.name].data.begin(), shards_[out.name].data.end(), T(0));
    }
    return;
  }
  if (accumulate_) {
    Fill(out);
  } else {
    std::fill(shards_[out.name].data.begin(), shards_[out.name].data.end(), T(0));
  }
}

// Collective: the output this rank holds (`out`, its shard or given storage; nullptr when
// it holds none) checked against the problem's reference, then the coverage of every
// rank's (runtime/oracle.h). "" or the first problem, the same on every rank.
template <typename T>
std::string RankRuntime<T>::Verify(const TensorSpec& spec, const T* out) {
  HeldOutput held;
  held.value = [out](int64_t i) { return static_cast<double>(out[i]); };
  if (out == nullptr) {
    held.global = [](int64_t) { return int64_t{-1}; };
  } else if (spec.given) {
    const std::vector<int64_t>& global = spec.given->global;
    held.slots = static_cast<int64_t>(global.size());
    held.global = [&global](int64_t i) { return global[i]; };
  } else {
    // Padding (past spec.shape, codegen/program.h) holds no element.
    const std::vector<int64_t> start = spec.block_start(coords_);
    held.slots = Elements(spec.local_shape);
    held.global = [&spec, start](int64_t i) {
      return SlotGlobal(i, spec.local_shape, start, spec.shape);
    };
  }
  // The bound of runtime/oracle.h for a run in T.
  const Precision precision = PrecisionOf(static_cast<int>(sizeof(T)));
  std::string error = FirstError(
      CheckHeldValues(problem_, seed_, held, precision, RankName(names_, coords_)), *comm_);
  if (!error.empty()) return error;
  return CheckCoverage(problem_, seed_, held, precision, *comm_);
}

template class RankRuntime<float>;
template class RankRuntime<double>;

}  // namespace meshtune::runtime::internal
