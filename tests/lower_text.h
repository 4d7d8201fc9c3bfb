// A test helper: a legal trace, from text to a lowered Program.
#ifndef MESHTUNE_TESTS_LOWER_TEXT_H_
#define MESHTUNE_TESTS_LOWER_TEXT_H_

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "codegen/lower.h"
#include "codegen/program.h"
#include "ir/layout.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/trace.h"
#include "ir/verdict.h"

namespace meshtune::testing {

// Parses, replays and judges `trace` (which must be legal), then lowers it, with the
// tensors in the given `layouts` ("C=replicated", as --layout takes them) and, with
// `result_on_layer`, the output's result left on one layer (ir::Problem::result_on_layer).
// Any failure is a test failure (naming the trace or the status) and gives an empty Program.
inline codegen::Program LowerText(const std::string& expr, const std::string& extents,
                                  const std::string& mesh, const std::string& trace,
                                  const std::vector<std::string>& layouts = {},
                                  bool result_on_layer = false) {
  absl::StatusOr<ir::Problem> p = ir::ParseProblem(expr, extents);
  absl::StatusOr<ir::Mesh> m = ir::ParseMesh(mesh);
  EXPECT_TRUE(p.ok() && m.ok());
  if (!p.ok() || !m.ok()) return codegen::Program{};
  p->result_on_layer = result_on_layer;
  const absl::Status given = ir::SetLayouts(layouts, &*p);
  EXPECT_TRUE(given.ok()) << given;
  if (!given.ok()) return codegen::Program{};
  absl::StatusOr<ir::Computation> base = ir::Computation::Create(*p, *m);
  absl::StatusOr<ir::Trace> t = ir::ParseTrace(trace);
  EXPECT_TRUE(base.ok() && t.ok()) << t.status();
  if (!base.ok() || !t.ok()) return codegen::Program{};
  absl::StatusOr<ir::Verdict> v = ir::Judge(*base, *t);
  EXPECT_TRUE(v.ok() && v->legal) << trace;
  if (!v.ok() || !v->legal) return codegen::Program{};
  absl::StatusOr<codegen::Program> prog = codegen::Lower(v->computation);
  EXPECT_TRUE(prog.ok()) << prog.status();
  return prog.ok() ? *std::move(prog) : codegen::Program{};
}

}  // namespace meshtune::testing

#endif  // MESHTUNE_TESTS_LOWER_TEXT_H_
