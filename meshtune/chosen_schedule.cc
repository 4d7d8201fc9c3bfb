#include "meshtune/chosen_schedule.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "codegen/program_proto.h"
#include "engine/prepare.h"
#include "engine/wisdom.h"

namespace meshtune::internal {
namespace {

// The caller's names of `program`'s tensors, which are canonical ("T<j>" is the caller's
// w.tensor_names[j]); empty when a name is not of that form.
std::vector<std::string> CallerTensorNames(const v1::Program& program, const storage::Workload& w) {
  std::vector<std::string> names;
  for (const v1::Program::Tensor& t : program.tensors()) {
    size_t j = 0;
    if (t.name().size() < 2 || t.name()[0] != 'T' || !absl::SimpleAtoi(t.name().substr(1), &j) ||
        j >= w.tensor_names.size() || absl::StrCat("T", j) != t.name()) {
      return {};
    }
    names.push_back(w.tensor_names[j]);
  }
  return names;
}

// The first broadcast's size: a schedule with its program (a few KiB) fits, so that the
// common case is one collective, which matters when ranks share cores.
constexpr int kFirstChunk = 16384;

// `parts`, each as an 8-byte length and its bytes.
std::string Pack(const std::vector<const std::string*>& parts) {
  std::string out;
  for (const std::string* p : parts) {
    const uint64_t n = p->size();
    out.append(reinterpret_cast<const char*>(&n), sizeof(n));
    out.append(*p);
  }
  return out;
}

// The inverse of Pack into `parts`; false when `packed` is not such a string.
bool Unpack(absl::string_view packed, const std::vector<std::string*>& parts) {
  for (std::string* p : parts) {
    uint64_t n = 0;
    if (packed.size() < sizeof(n)) return false;
    std::memcpy(&n, packed.data(), sizeof(n));
    packed.remove_prefix(sizeof(n));
    if (packed.size() < n) return false;
    p->assign(packed.data(), n);
    packed.remove_prefix(n);
  }
  return packed.empty();
}

// Sends rank 0's `s` to every rank of `comm`: one broadcast of kFirstChunk bytes (its
// length, then its start), and a second for the rest when it does not fit.
void BroadcastChunked(std::string* s, MPI_Comm comm) {
  std::string chunk(kFirstChunk, '\0');
  uint64_t n = s->size();
  std::memcpy(chunk.data(), &n, sizeof(n));
  const size_t head = std::min<size_t>(n, kFirstChunk - sizeof(n));
  if (head > 0) std::memcpy(chunk.data() + sizeof(n), s->data(), head);
  MPI_Bcast(chunk.data(), kFirstChunk, MPI_CHAR, 0, comm);
  std::memcpy(&n, chunk.data(), sizeof(n));
  const size_t got = std::min<size_t>(n, kFirstChunk - sizeof(n));
  std::string out(chunk.data() + sizeof(n), got);
  if (n > got) {
    std::string rest = n > got ? s->substr(std::min(s->size(), got)) : std::string();
    rest.resize(n - got);
    MPI_Bcast(rest.data(), static_cast<int>(n - got), MPI_CHAR, 0, comm);
    out += rest;
  }
  *s = std::move(out);
}

}  // namespace

absl::StatusOr<ChosenSchedule> ChooseFromWisdom(const std::string& path,
                                                const v1::LookupRequest& request) {
  if (path.empty()) return absl::InvalidArgumentError("give a wisdom file");
  absl::StatusOr<std::string> text = engine::ReadWisdomFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<engine::WisdomRecord> found = engine::LookupWisdom(*text, request);
  if (!found.ok()) {
    if (found.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(absl::StrCat(found.status().message(), " in wisdom file ", path));
    }
    return absl::Status(found.status().code(), absl::StrCat(path, ": ", found.status().message()));
  }
  ChosenSchedule c;
  c.trace = found->trace;
  c.mesh = found->record.mesh();
  if (found->record.has_measured_s()) c.measured_s = found->record.measured_s();
  if (found->record.has_library()) {
    c.library = found->record.library().SerializeAsString();
    return c;
  }
  if (!found->program_trusted) return c;  // no program, or not this record's: lower the trace
  // The program is used only when it reads back here too; otherwise the trace is lowered.
  v1::Program program;
  if (!program.ParseFromString(found->record.program()) || !codegen::FromProto(program).ok()) {
    return c;
  }
  std::vector<std::string> names = CallerTensorNames(program, found->workload);
  if (names.empty()) return c;
  c.program = found->record.program();
  c.tensors = std::move(names);
  return c;
}

void BroadcastSchedule(ChosenSchedule* c, MPI_Comm comm) {
  std::string names = absl::StrJoin(c->tensors, ",");
  std::string measured(reinterpret_cast<const char*>(&c->measured_s), sizeof(double));
  std::string packed = Pack({&c->trace, &c->mesh, &c->program, &names, &measured, &c->library});
  BroadcastChunked(&packed, comm);
  if (!Unpack(packed, {&c->trace, &c->mesh, &c->program, &names, &measured, &c->library}) ||
      measured.size() != sizeof(double)) {
    // Cannot happen (rank 0 packed it); lower the trace rather than trust a half message.
    c->program.clear();
    names.clear();
  } else {
    std::memcpy(&c->measured_s, measured.data(), sizeof(double));
  }
  c->tensors = names.empty() ? std::vector<std::string>{}
                             : std::vector<std::string>(absl::StrSplit(names, ','));
}

absl::StatusOr<codegen::Program> ScheduleProgram(const v1::Problem& problem,
                                                 const ChosenSchedule& c,
                                                 std::vector<std::string>* tensors) {
  tensors->clear();
  // A wisdom program holds the result on every copy: with the result on one layer, the
  // trace is lowered for it.
  if (!c.program.empty() && !problem.result_on_layer()) {
    v1::Program message;
    if (!message.ParseFromString(c.program)) {
      return absl::InternalError("the wisdom program sent by rank 0 does not parse");
    }
    absl::StatusOr<codegen::Program> program = codegen::FromProto(message);
    if (!program.ok()) return program.status();
    if (c.tensors.size() != program->tensors.size()) {
      return absl::InternalError("the wisdom program's tensor names do not match it");
    }
    *tensors = c.tensors;
    return program;
  }
  v1::Mesh mesh;
  mesh.set_axes(c.mesh);
  v1::Trace trace;
  trace.set_text(c.trace);
  absl::StatusOr<codegen::Program> program = engine::LowerTrace(problem, mesh, trace);
  if (!program.ok()) return program.status();
  for (const codegen::TensorInfo& t : program->tensors) tensors->push_back(t.name);
  return program;
}

}  // namespace meshtune::internal
