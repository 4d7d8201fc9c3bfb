// meshtune: the command-line front end of the engine.
//
// Subcommands: explain (legality verdict and maps of one trace). Exit status: 0 when the
// command ran (whatever the verdict), 2 on bad input (message on stderr naming the
// offending token), 1 on an internal error.
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "ir/trace.h"
#include "service/cli_io.h"
#include "service/explain.h"

namespace meshtune::service {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;

int Fail(const absl::Status& status) {
  std::cerr << "meshtune: " << status.message() << "\n";
  return status.code() == absl::StatusCode::kInvalidArgument ? kExitBadInput : kExitInternal;
}

struct ProblemFlags {
  std::string expr, extents, dtype = "f32", mesh, mem_per_rank;

  void Add(CLI::App* cmd) {
    cmd->add_option("--expr", expr, "statement in index notation, e.g. 'C[m,n] += A[m,k] * B[k,n]'")
        ->required();
    cmd->add_option("--extents", extents, "index extents, e.g. m=512,n=1024,k=2048")->required();
    cmd->add_option("--dtype", dtype, "f32 or f64");
    cmd->add_option("--mesh", mesh, "mesh axes, e.g. x=8,y=8")->required();
    cmd->add_option("--mem-per-rank", mem_per_rank, "memory budget per rank, e.g. 2GiB");
  }
  void Fill(v1::Problem* p, v1::Mesh* m) const {
    p->set_expr(expr);
    p->set_extents(extents);
    p->set_dtype(dtype);
    m->set_axes(mesh);
    m->set_mem_per_rank(mem_per_rank);
  }
};

int RunExplain(const ProblemFlags& flags, const std::string& trace_path, bool json) {
  v1::ExplainRequest request;
  flags.Fill(request.mutable_problem(), request.mutable_mesh());
  absl::StatusOr<std::string> text = ReadInput(trace_path, ir::kMaxTraceBytes);
  if (!text.ok()) return Fail(text.status());
  request.mutable_trace()->set_text(*text);
  absl::StatusOr<v1::ExplainResponse> response = Explain(request);
  if (!response.ok()) return Fail(response.status());
  std::cout << (json ? ToJson(*response) + "\n" : ExplainText(*response));
  return kExitOk;
}

int Main(int argc, char** argv) {
  CLI::App app{"meshtune: distributed schedules for tensor computations"};
  app.require_subcommand(1);

  ProblemFlags explain_flags;
  std::string trace_path;
  bool json = false;
  CLI::App* explain = app.add_subcommand("explain", "legality verdict, reasons and maps of a trace");
  explain_flags.Add(explain);
  explain->add_option("--trace", trace_path, "trace file ('-' for stdin)")->required();
  explain->add_flag("--json", json, "print JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitBadInput;
  }
  if (explain->parsed()) return RunExplain(explain_flags, trace_path, json);
  return kExitBadInput;
}

}  // namespace
}  // namespace meshtune::service

int main(int argc, char** argv) {
  try {
    return meshtune::service::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "meshtune: internal error: " << e.what() << "\n";
    return 1;
  }
}
