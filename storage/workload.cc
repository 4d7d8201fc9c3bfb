#include "storage/workload.h"

#include <algorithm>
#include <set>
#include <utility>
#include <variant>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/excerpt.h"
#include "base/status_macros.h"
#include "ir/computation.h"
#include "ir/mesh.h"
#include "ir/program_trace.h"
#include "ir/trace.h"
#include "storage/hardware_profile.h"
#include "storage/sha256.h"

namespace meshtune::storage {
namespace {

// Every identifier of a trace, by role.
struct TraceNames {
  std::set<std::string> names;  // loops, indices, shard dims, tensors
  std::set<std::string> axes;   // mesh axes
};

TraceNames CollectNames(const ir::Trace& trace) {
  TraceNames out;
  auto add = [&out](const std::vector<std::string>& v) { out.names.insert(v.begin(), v.end()); };
  for (const ir::Instruction& inst : trace.instructions) {
    if (const auto* c = std::get_if<ir::SplitCall>(&inst)) {
      add({c->var, c->outer, c->inner});
    } else if (const auto* c = std::get_if<ir::DivideCall>(&inst)) {
      add({c->var, c->outer, c->inner});
    } else if (const auto* c = std::get_if<ir::ReorderCall>(&inst)) {
      add(c->order);
    } else if (const auto* c = std::get_if<ir::DistributeCall>(&inst)) {
      add(c->vars);
      add(c->outers);
      add(c->inners);
      out.axes.insert(c->axes.begin(), c->axes.end());
    } else if (const auto* c = std::get_if<ir::ShardCall>(&inst)) {
      add({c->tensor});
      for (const ir::ShardTarget& t : c->targets) {
        add({t.dim});
        for (const auto& term : t.target.terms) out.axes.insert(term.first);
      }
    } else if (const auto* c = std::get_if<ir::CommunicateCall>(&inst)) {
      add({c->tensor, c->loop});
      add(c->rotate);
    } else if (const auto* c = std::get_if<ir::TensorizeCall>(&inst)) {
      add(c->loops);
    }
  }
  return out;
}

// Applies `map` (complete over the trace's names) to every name field.
ir::Trace MapNames(const ir::Trace& trace, const std::map<std::string, std::string>& map) {
  auto one = [&map](std::string* s) { *s = map.at(*s); };
  auto all = [&one](std::vector<std::string>* v) {
    for (std::string& s : *v) one(&s);
  };
  ir::Trace out = trace;
  for (ir::Instruction& inst : out.instructions) {
    if (auto* c = std::get_if<ir::SplitCall>(&inst)) {
      for (std::string* s : {&c->var, &c->outer, &c->inner}) one(s);
    } else if (auto* c = std::get_if<ir::DivideCall>(&inst)) {
      for (std::string* s : {&c->var, &c->outer, &c->inner}) one(s);
    } else if (auto* c = std::get_if<ir::ReorderCall>(&inst)) {
      all(&c->order);
    } else if (auto* c = std::get_if<ir::DistributeCall>(&inst)) {
      for (std::vector<std::string>* v : {&c->vars, &c->outers, &c->inners}) all(v);
    } else if (auto* c = std::get_if<ir::ShardCall>(&inst)) {
      one(&c->tensor);
      for (ir::ShardTarget& t : c->targets) one(&t.dim);
    } else if (auto* c = std::get_if<ir::CommunicateCall>(&inst)) {
      one(&c->tensor);
      one(&c->loop);
      all(&c->rotate);
    } else if (auto* c = std::get_if<ir::TensorizeCall>(&inst)) {
      all(&c->loops);
    }
  }
  return out;
}

absl::StatusOr<ir::Trace> Rename(const ir::Trace& trace,
                                 const std::map<std::string, std::string>& renames) {
  const TraceNames names = CollectNames(trace);
  std::set<std::string> targets, taken = names.names;
  taken.insert(names.axes.begin(), names.axes.end());
  for (const auto& [from, to] : renames) {
    // Every target is in the way, named in the trace or not: a problem's indices are
    // loops from the start, and its tensors exist, whether a call names them or not.
    targets.insert(to);
    taken.insert(from);
    taken.insert(to);
    if (names.names.count(from) > 0 && names.axes.count(to) > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot rename ", base::Excerpt(from), " to ", base::Excerpt(to),
                       " in the trace: ", base::Excerpt(to), " is a mesh axis there"));
    }
  }
  std::map<std::string, std::string> map;
  for (const std::string& name : names.names) {
    if (auto it = renames.find(name); it != renames.end()) {
      map[name] = it->second;
    } else if (targets.count(name) > 0) {  // a trace-local name in the way of a rename
      std::string fresh = name + "_";
      while (taken.count(fresh) > 0) fresh += "_";
      taken.insert(fresh);
      map[name] = fresh;
    } else {
      map[name] = name;
    }
  }
  return MapNames(trace, map);
}

// True when `inst` is a reorder of exactly the loops `indices` (any order, no repeats).
bool ReordersAll(const ir::Instruction& inst, const std::vector<std::string>& sorted_indices) {
  const auto* r = std::get_if<ir::ReorderCall>(&inst);
  if (r == nullptr) return false;
  std::vector<std::string> order = r->order;
  std::sort(order.begin(), order.end());
  return order == sorted_indices;
}

// Renames `source` with `renames`, then fixes the starting loop order: the source problem's
// loops start as `source_start` (source names), the target's as its sorted indices.
absl::StatusOr<std::string> Translate(const ir::Trace& source,
                                      const std::map<std::string, std::string>& renames,
                                      const std::vector<std::string>& source_start) {
  MT_ASSIGN_OR_RETURN(ir::Trace trace, Rename(source, renames));
  ir::ReorderCall start;
  for (const std::string& index : source_start) start.order.push_back(renames.at(index));
  std::vector<std::string> natural = start.order;
  std::sort(natural.begin(), natural.end());
  trace.instructions.insert(trace.instructions.begin(), start);
  // Only the last of a leading run of whole reorders matters; at the start, every loop is
  // an index, so a whole reorder is always legal and sets the order outright.
  while (trace.instructions.size() >= 2 && ReordersAll(trace.instructions[1], natural)) {
    trace.instructions.erase(trace.instructions.begin());
  }
  if (std::get<ir::ReorderCall>(trace.instructions[0]).order == natural) {
    trace.instructions.erase(trace.instructions.begin());
  }
  return trace.ToString();
}

// requester name -> canonical name, for indices and tensors.
std::map<std::string, std::string> ToCanonicalNames(const Workload& w) {
  std::map<std::string, std::string> m;
  for (size_t j = 0; j < w.index_names.size(); ++j) m[w.index_names[j]] = absl::StrCat("i", j);
  for (size_t j = 0; j < w.tensor_names.size(); ++j) m[w.tensor_names[j]] = absl::StrCat("T", j);
  return m;
}

// The rest of `*w`, whose mesh or rank count is set: the profile, `p` and its canonical
// form, the canonical text and its fingerprint. InvalidArgument for a bad profile name.
// With `w->statements` set (a program), the statements stand for `p`, which is the first.
absl::Status Complete(const ir::Problem& p, const std::string& profile, Workload* w) {
  if (!profile.empty()) MT_RETURN_IF_ERROR(ValidateProfileName(profile));
  w->profile = profile;
  w->problem = p;
  w->dtype = std::string(ir::DTypeName(p.dtype));
  const std::vector<ir::Problem> statements =
      w->IsProgram() ? w->statements : std::vector<ir::Problem>{p};

  std::map<std::string, std::string> index_map, tensor_map;
  auto visit = [&](const ir::TensorAccess& a) {
    if (tensor_map.emplace(a.tensor, absl::StrCat("T", tensor_map.size())).second) {
      w->tensor_names.push_back(a.tensor);
    }
    for (const std::string& i : a.indices) {
      if (index_map.emplace(i, absl::StrCat("i", index_map.size())).second)
        w->index_names.push_back(i);
    }
  };
  std::map<std::string, int64_t> all_extents;
  for (const ir::Problem& statement : statements) {
    visit(statement.output);
    for (const ir::TensorAccess& a : statement.operands) visit(a);
    all_extents.insert(statement.extents.begin(), statement.extents.end());
  }

  auto rename = [&](ir::TensorAccess* a) {
    a->tensor = tensor_map.at(a->tensor);
    for (std::string& i : a->indices) i = index_map.at(i);
  };
  std::vector<std::string> exprs;
  for (const ir::Problem& statement : statements) {
    ir::Problem canonical = statement;
    rename(&canonical.output);
    for (ir::TensorAccess& a : canonical.operands) rename(&a);
    exprs.push_back(canonical.ToString());
  }
  w->expr = absl::StrJoin(exprs, "; ");
  std::vector<std::string> extents;
  for (size_t j = 0; j < w->index_names.size(); ++j) {
    extents.push_back(absl::StrCat("i", j, "=", all_extents.at(w->index_names[j])));
  }
  w->extents = absl::StrJoin(extents, ",");

  std::map<std::string, std::string> layouts;
  for (const ir::Problem& statement : statements) {
    for (const auto& [tensor, layout] : statement.layouts)
      layouts[tensor_map.at(tensor)] = layout.ToString();
  }
  std::vector<std::string> given;
  for (const auto& [tensor, spec] : layouts) given.push_back(tensor + "=" + spec);
  w->layouts = absl::StrJoin(given, ",");
  w->canonical = absl::StrCat("expr: ", w->expr, "\nextents: ", w->extents, "\ndtype: ", w->dtype,
                              "\nmesh: ", w->MeshText(), "\nprofile: ", w->profile, "\n");
  if (!w->layouts.empty()) absl::StrAppend(&w->canonical, "layouts: ", w->layouts, "\n");
  MT_ASSIGN_OR_RETURN(w->fingerprint, Sha256Hex(w->canonical));
  return absl::OkStatus();
}

}  // namespace

std::string Workload::MeshText() const {
  return IsRankCount() ? absl::StrCat("ranks=", ranks) : mesh.ToString();
}

absl::StatusOr<Workload> MakeWorkload(const ir::Problem& p, const ir::Mesh& mesh,
                                      const std::string& profile) {
  // "ranks" is the key's name for a rank count: alone, the axis ranks=N is one.
  if (mesh.AxisIndex("ranks") >= 0) {
    if (mesh.axes.size() == 1) return MakeWorkload(p, mesh.axes[0].size, profile);
    return absl::InvalidArgumentError(absl::StrCat(
        "mesh \"", base::Excerpt(mesh.ToString()),
        "\": ranks=N gives a rank count and stands alone; 'ranks' is not a mesh axis name"));
  }
  // As ir::Computation::Create would say for the same problem and mesh.
  MT_RETURN_IF_ERROR(ir::CheckMeshNames(p, mesh));
  Workload w;
  w.mesh = mesh;
  w.mesh.mem_per_rank_bytes.reset();
  MT_RETURN_IF_ERROR(Complete(p, profile, &w));
  return w;
}

absl::StatusOr<Workload> MakeWorkload(const ir::Problem& p, int64_t ranks,
                                      const std::string& profile) {
  if (ranks < 1 || ranks > ir::kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("ranks ", ranks, " is out of range: give 1 to ", ir::kMaxRanks, " ranks"));
  }
  Workload w;
  w.ranks = ranks;
  MT_RETURN_IF_ERROR(Complete(p, profile, &w));
  return w;
}

absl::StatusOr<Workload> ReadWorkload(const ir::Problem& p, const std::string& mesh_text,
                                      const std::string& profile) {
  MT_ASSIGN_OR_RETURN(const ir::Mesh mesh, ir::ParseMesh(mesh_text));
  return MakeWorkload(p, mesh, profile);
}

absl::StatusOr<Workload> MakeWorkload(const ir::StatementProgram& program, const ir::Mesh& mesh,
                                      const std::string& profile) {
  if (program.single()) return MakeWorkload(program.statements[0], mesh, profile);
  for (const ir::Problem& statement : program.statements) {
    MT_RETURN_IF_ERROR(MakeWorkload(statement, mesh, profile).status());
  }
  if (mesh.axes.size() == 1 && mesh.axes[0].name == "ranks")
    return MakeWorkload(program, mesh.axes[0].size, profile);
  Workload w;
  w.mesh = mesh;
  w.mesh.mem_per_rank_bytes.reset();
  w.statements = program.statements;
  MT_RETURN_IF_ERROR(Complete(program.statements[0], profile, &w));
  return w;
}

absl::StatusOr<Workload> MakeWorkload(const ir::StatementProgram& program, int64_t ranks,
                                      const std::string& profile) {
  if (program.single()) return MakeWorkload(program.statements[0], ranks, profile);
  for (const ir::Problem& statement : program.statements) {
    MT_RETURN_IF_ERROR(MakeWorkload(statement, ranks, profile).status());
  }
  Workload w;
  w.ranks = ranks;
  w.statements = program.statements;
  MT_RETURN_IF_ERROR(Complete(program.statements[0], profile, &w));
  return w;
}

absl::StatusOr<Workload> ReadWorkload(const ir::StatementProgram& program,
                                      const std::string& mesh_text, const std::string& profile) {
  MT_ASSIGN_OR_RETURN(const ir::Mesh mesh, ir::ParseMesh(mesh_text));
  return MakeWorkload(program, mesh, profile);
}

absl::StatusOr<std::string> RenameTrace(const std::string& trace_text,
                                        const std::map<std::string, std::string>& renames) {
  MT_ASSIGN_OR_RETURN(ir::Trace trace, ir::ParseTrace(trace_text));
  MT_ASSIGN_OR_RETURN(ir::Trace renamed, Rename(trace, renames));
  return renamed.ToString();
}

absl::StatusOr<std::string> ToCanonicalTrace(const Workload& w, const std::string& trace) {
  if (w.IsProgram()) {
    MT_ASSIGN_OR_RETURN(const std::vector<ir::Trace> parts,
                        ir::ParseProgramTrace(trace, static_cast<int>(w.statements.size())));
    const std::map<std::string, std::string> renames = ToCanonicalNames(w);
    std::vector<std::string> out;
    for (size_t s = 0; s < parts.size(); ++s) {
      std::vector<std::string> start = w.statements[s].indices;  // they start sorted
      std::sort(start.begin(), start.end());
      MT_ASSIGN_OR_RETURN(out.emplace_back(), Translate(parts[s], renames, start));
    }
    return absl::StrJoin(out, "---\n");
  }
  MT_ASSIGN_OR_RETURN(const ir::Trace parsed, ir::ParseTrace(trace));
  return ToCanonicalTrace(w, parsed);
}

absl::StatusOr<std::string> ToCanonicalTrace(const Workload& w, const ir::Trace& trace) {
  std::vector<std::string> start = w.index_names;  // the requester's loops start sorted
  std::sort(start.begin(), start.end());
  return Translate(trace, ToCanonicalNames(w), start);
}

absl::StatusOr<std::string> FromCanonicalTrace(const Workload& w, const std::string& trace) {
  const std::map<std::string, std::string> to_canonical = ToCanonicalNames(w);
  std::map<std::string, std::string> back;
  for (const auto& [name, canonical] : to_canonical) back[canonical] = name;
  std::vector<std::string> start;  // the canonical loops start sorted: i0, i1, i10, i2, ...
  for (const auto& [canonical, name] : back) {
    if (canonical[0] == 'i') start.push_back(canonical);
  }
  if (!w.IsProgram()) {
    MT_ASSIGN_OR_RETURN(const ir::Trace parsed, ir::ParseTrace(trace));
    return Translate(parsed, back, start);
  }
  MT_ASSIGN_OR_RETURN(const std::vector<ir::Trace> parts,
                      ir::ParseProgramTrace(trace, static_cast<int>(w.statements.size())));
  std::vector<std::string> out;
  for (size_t s = 0; s < parts.size(); ++s) {
    std::vector<std::string> canonical_start;  // the statement's canonical indices, sorted
    for (const std::string& index : w.statements[s].indices)
      canonical_start.push_back(to_canonical.at(index));
    std::sort(canonical_start.begin(), canonical_start.end());
    MT_ASSIGN_OR_RETURN(out.emplace_back(), Translate(parts[s], back, canonical_start));
  }
  ir::StatementProgram program;
  program.statements = w.statements;
  return ir::ProgramTraceText(program, out);
}

}  // namespace meshtune::storage
