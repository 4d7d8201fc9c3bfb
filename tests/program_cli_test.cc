// Programs of several statements through the command line: `tune` finds a schedule per
// statement (model only, and measured under MPI), its best program's traces are written in
// the program trace form and `run` runs them under mpirun — the attention-like pair and a
// TTM chain on 4 and 6 ranks (1D and 2D meshes), Megatron's MLP measured — every run
// verified against the serial reference of the whole program; bad programs and traces get
// their exact messages.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "proto/meshtune.pb.h"
#include "tests/proto_json.h"
#include "tests/test_util.h"

namespace {

using ::meshtune::testing::CliRun;
using ::meshtune::testing::Meshtune;
using ::meshtune::testing::Occurrences;
using ::meshtune::testing::ParsesAs;
using ::meshtune::testing::ReadFile;

std::string Dir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp ? tmp : "/tmp";
}

// Sets what every run here needs: MPI as root, one OpenBLAS thread, job files under the
// test's directory.
void MpiEnvironment() {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  setenv("TMPDIR", Dir().c_str(), 1);
}

// `tune --json` of `expr`; the parsed result.
meshtune::v1::TuneResult Tune(const std::string& expr, const std::string& extents,
                              const std::string& where, const std::string& extra) {
  const std::string statements = expr.empty() ? "" : "--expr '" + expr + "' ";
  const CliRun r = Meshtune("tune " + statements + "--extents " + extents + " " + where +
                            " --no-db --json " + extra);
  meshtune::v1::TuneResult result;
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(ParsesAs(r.out, &result)) << r.out;
  EXPECT_TRUE(result.has_program()) << r.out;
  return result;
}

// The best program's traces in the program trace form, written to a file; its path.
std::string TraceFile(const meshtune::v1::ProgramResult::Schedule& best) {
  std::string text;
  for (int s = 0; s < best.statements_size(); ++s) {
    if (s > 0) text += "---\n";
    text += "# statement " + std::to_string(s + 1) + "\n" + best.statements(s).trace();
  }
  const std::string path = Dir() + "/program.trace";
  std::ofstream(path) << text;
  return path;
}

// `run --json` of the traces at `path` on `mesh` (or, with --simulate, in this process).
meshtune::v1::RunResult RunProgram(const std::string& expr, const std::string& extents,
                                   const std::string& mesh, const std::string& path,
                                   const std::string& extra = "") {
  const CliRun r = Meshtune("run --expr '" + expr + "' --extents " + extents + " --mesh " + mesh +
                            " --trace " + path + " --reps 2 --timeout 60 --json " + extra);
  meshtune::v1::RunResult run;
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(ParsesAs(r.out, &run)) << r.out << r.err;
  return run;
}

struct Program {
  std::string expr, extents;
};

const Program kAttention{"S[i,j] = Q[i,d] * K[j,d]; O[i,e] = S[i,j] * V[j,e]",
                         "i=48,j=36,d=16,e=20"};
const Program kTtmChain{"Y[i,b,c] = X[a,b,c] * U[a,i]; Z[i,j,c] = Y[i,b,c] * V[b,j]",
                        "a=12,b=12,c=12,i=6,j=6"};

TEST(ProgramCliTest, AttentionAndTtmChainVerifyUnderMpiOn4And6Ranks) {
  MpiEnvironment();
  for (const Program& p : {kAttention, kTtmChain}) {
    for (const std::string mesh : {"x=4", "x=2,y=2", "x=6", "x=2,y=3"}) {
      SCOPED_TRACE(p.expr + " on " + mesh);
      const meshtune::v1::TuneResult tuned =
          Tune(p.expr, p.extents, "--mesh " + mesh, "--model-only");
      const meshtune::v1::ProgramResult::Schedule& best = tuned.program().best();
      ASSERT_EQ(best.statements_size(), 2);
      EXPECT_EQ(tuned.program().checked(), "simulated");
      const std::string path = TraceFile(best);
      const meshtune::v1::RunResult run = RunProgram(p.expr, p.extents, mesh, path);
      EXPECT_TRUE(run.verified()) << run.error();
      EXPECT_EQ(run.checked(), "measured");
      EXPECT_EQ(run.sample().n(), 2);  // two samples, of a batch of repetitions each
      EXPECT_EQ(run.seconds_size(), 2 * run.sample().batch());
      // What the model says moves between the statements, the run sends.
      bool moves = false;
      for (const auto& m : best.moves()) moves = moves || !m.in_place();
      if (!moves) {
        EXPECT_EQ(run.bytes_sent_max(), 0);
      }
      const meshtune::v1::RunResult simulated =
          RunProgram(p.expr, p.extents, mesh, path, "--simulate");
      EXPECT_TRUE(simulated.verified()) << simulated.error();
      EXPECT_EQ(simulated.checked(), "simulated");
    }
  }
}

TEST(ProgramCliTest, MegatronsMlpIsMeasuredAndMovesNothing) {
  MpiEnvironment();
  const meshtune::v1::TuneResult tuned =
      Tune("H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]", "b=64,d=32,f=128,e=32",
           "--ranks 4", "--top-k 2 --reps 2");
  const meshtune::v1::ProgramResult& p = tuned.program();
  EXPECT_EQ(p.checked(), "measured");
  EXPECT_TRUE(p.best().verified()) << p.best().error();
  EXPECT_TRUE(p.best().has_measured_s());
  // The two joint programs the model ranks first, and `separate` unless it is one of them
  // (a schedule is measured once; which programs rank first moves with the profile, which
  // refits from measured runs).
  const auto schedule = [](const meshtune::v1::ProgramResult::Schedule& s) {
    std::vector<std::string> parts = {s.mesh()};
    for (const auto& statement : s.statements()) parts.push_back(statement.trace());
    return parts;
  };
  bool separate_measured = false, separate_is_joint = false;
  for (const auto& m : p.measured()) {
    if (m.label() == "separate") {
      separate_measured = true;
    } else if (schedule(m) == schedule(p.separate())) {
      separate_is_joint = true;
    }
  }
  EXPECT_NE(separate_measured, separate_is_joint);
  EXPECT_EQ(p.measured_size(), separate_measured ? 3 : 2);
  // The joint programs move nothing (at this size the times are too close to say which of
  // them, or `separate`, is fastest: the measured best may be any of them).
  for (const auto& m : p.measured()) {
    EXPECT_TRUE(m.verified()) << m.label() << ": " << m.error();
    if (m.label() == "separate") continue;
    ASSERT_EQ(m.moves_size(), 1) << m.label();
    EXPECT_TRUE(m.moves(0).in_place()) << m.label();
  }
}

TEST(ProgramCliTest, StatementsFromAFileWithCommentsAndLineBreaks) {
  std::ofstream(Dir() + "/mlp.expr") << "# a transformer's MLP\n"
                                        "H[b,f] = X[b,d] * W1[d,f]   # the first layer\n"
                                        "\n"
                                        "Y[b,e] = H[b,f] * W2[f,e];\n";
  const meshtune::v1::TuneResult from_file = Tune(
      "", "b=16,d=8,f=32,e=8", "--mesh x=2", "--model-only --expr-file " + Dir() + "/mlp.expr");
  const meshtune::v1::TuneResult from_flag =
      Tune("H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]", "b=16,d=8,f=32,e=8",
           "--mesh x=2", "--model-only");
  ASSERT_EQ(from_file.program().best().statements_size(), 2);
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(from_file.program().best().statements(s).trace(),
              from_flag.program().best().statements(s).trace());
  }
  EXPECT_EQ(from_file.program().best().statements(1).expr(), "Y[b,e] = H[b,f] * W2[f,e]");
  const CliRun missing = Meshtune("tune --expr-file " + Dir() +
                                  "/none.expr --extents b=1 --ranks 2 --model-only --no-db");
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(missing.err.rfind("--expr-file: cannot read statements file '", 0), 0u) << missing.err;
}

// A program's tune stores its winner as one record of the program's workload: the same
// program under other names looks it up (each statement's trace in its names), `run`
// verifies the looked-up traces on the renamed program, `records` lists it, export and
// import carry it to another database, and a program never tuned is not found.
TEST(ProgramCliTest, AProgramIsStoredAndLookedUpUnderOtherNames) {
  const std::string db = " --db " + Dir() + "/programs.db";
  CliRun r = Meshtune(
      "tune --expr 'H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]' "
      "--extents b=16,d=8,f=32,e=8 --mesh x=2 --model-only --json" +
      db);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  meshtune::v1::TuneResult tuned;
  ASSERT_TRUE(ParsesAs(r.out, &tuned)) << r.out;
  EXPECT_TRUE(tuned.stored());
  EXPECT_GT(tuned.record().id(), 0);
  const std::string renamed = "G[r,c] = In[r,k] * P[k,c]; Out[r,o] = G[r,c] * Q[c,o]";
  r = Meshtune("lookup --expr '" + renamed + "' --extents r=16,k=8,c=32,o=8 --mesh x=2 --json" +
               db);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  meshtune::v1::Record found;
  ASSERT_TRUE(ParsesAs(r.out, &found)) << r.out;
  EXPECT_EQ(found.id(), tuned.record().id());
  const std::string& trace = found.trace().text();
  EXPECT_EQ(trace.rfind("# statement 1: G[r,c] = In[r,k] * P[k,c]\n", 0), 0u) << trace;
  EXPECT_NE(trace.find("---\n# statement 2: Out[r,o] = G[r,c] * Q[c,o]\n"), std::string::npos)
      << trace;
  const std::string path = Dir() + "/looked_up.trace";
  std::ofstream(path) << trace;
  const meshtune::v1::RunResult run =
      RunProgram(renamed, "r=16,k=8,c=32,o=8", "x=2", path, "--simulate");
  EXPECT_TRUE(run.verified()) << run.error();
  EXPECT_EQ(run.statements(), 2);
  r = Meshtune(std::string("records") + db);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("T0[i0,i1] = T1[i0,i2] * T2[i2,i1]; T3[i0,i3] = T0[i0,i1] * T4[i1,i3]"),
            std::string::npos)
      << r.out;
  // Exported as a wisdom file and imported into another database, it is found there.
  r = Meshtune("records export" + db);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  std::ofstream(Dir() + "/programs.jsonl") << r.out;
  const std::string other = " --db " + Dir() + "/imported.db";
  r = Meshtune("records import " + Dir() + "/programs.jsonl" + other);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  r = Meshtune("lookup --expr '" + renamed + "' --extents r=16,k=8,c=32,o=8 --mesh x=2" + other);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(trace), std::string::npos) << r.out;
  r = Meshtune("lookup --expr '" + renamed + "' --extents r=16,k=8,c=32,o=4 --mesh x=2" + db);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("meshtune: no tuning record for G[r,c] = In[r,k] * P[k,c]; ", 0), 0u)
      << r.err;
}

TEST(ProgramCliTest, AProgramsReportHasASectionPerStatementAndTheLayoutsBetween) {
  const std::string db = " --db " + Dir() + "/report.db";
  CliRun r = Meshtune(
      "tune --expr 'H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]' --extents "
      "b=64,d=32,f=128,e=32 --mesh x=4 --model-only --report " +
      Dir() + "/mlp.html" + db);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::string html = ReadFile(Dir() + "/mlp.html");
  for (const std::string part :
       {"<h2>Statement 1: <code>H[b,f] = X[b,d] * W1[d,f]</code></h2>",
        "<h2>Statement 2: <code>Y[b,e] = H[b,f] * W2[f,e]</code></h2>", "<pre id=\"s1-trace\">",
        "<pre id=\"s2-pseudocode\">", "<table id=\"s2-transfers\">",
        // Megatron's MLP: H read where statement 1 leaves it.
        "<tr class=\"move\"><td>H</td><td class=\"num\">1</td><td class=\"num\">2</td><td>in "
        "place</td><td class=\"num\">0</td>",
        "<tr class=\"program-schedule\"><td>best</td><td>x=4</td>",
        "<tr class=\"program-schedule\"><td>separate</td><td>x=4</td>"}) {
    EXPECT_NE(html.find(part), std::string::npos) << part;
  }
  EXPECT_EQ(Occurrences(html, " id=\"pseudocode\""), 0);
  // The stored record's report: the same statements, in canonical names, without the tune.
  r = Meshtune("report 1 -o " + Dir() + "/record.html" + db);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::string stored = ReadFile(Dir() + "/record.html");
  EXPECT_NE(stored.find("<h2>Statement 2: <code>T3[i0,i3] = T0[i0,i1] * T4[i1,i3]</code></h2>"),
            std::string::npos);
  EXPECT_NE(stored.find("<td>T0</td><td class=\"num\">1</td><td class=\"num\">2</td><td>in "
                        "place</td><td class=\"num\">-</td>"),
            std::string::npos);
  EXPECT_NE(stored.find("A stored program record keeps its winner only"), std::string::npos);
}

TEST(ProgramCliTest, BadProgramsAndTracesGetTheirMessages) {
  CliRun r = Meshtune(
      "tune --expr 'H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,d] * W2[d,e]' --extents "
      "b=4,d=4,f=8,e=4 --ranks 2 --model-only --no-db");
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.err, "meshtune: tensor H is [4,8] in statement 1 but [4,4] in statement 2\n");
  std::ofstream(Dir() + "/none.trace") << "distribute([i], [io], [ii], [x])\n";
  r = Meshtune("codegen --expr '" + kAttention.expr + "' --extents " + kAttention.extents +
               " --mesh x=2 --trace " + Dir() + "/none.trace");
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.err,
            "meshtune: the trace has 1 part but the program has 2 statements; separate the "
            "statements' traces with lines ---\n");
  r = Meshtune("codegen --expr '" + kAttention.expr + "' --extents " + kAttention.extents +
               " --mesh x=2 --trace " + Dir() + "/none.trace --main");
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.err,
            "meshtune: --main writes one statement's standalone program; a program of several "
            "statements is generated as a callable kernel (without --main)\n");
  std::ofstream(Dir() + "/one.trace") << "distribute([f], [fo], [fi], [x])\n";
  r = Meshtune("run --expr '" + kAttention.expr + "' --extents " + kAttention.extents +
               " --mesh x=2 --trace " + Dir() + "/one.trace --simulate");
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.err,
            "meshtune: the trace has 1 part but the program has 2 statements; separate the "
            "statements' traces with lines ---\n");
  std::ofstream(Dir() + "/two.trace") << "distribute([i], [io], [ii], [x])\n---\nbogus(\n";
  r = Meshtune("run --expr '" + kAttention.expr + "' --extents " + kAttention.extents +
               " --mesh x=2 --trace " + Dir() + "/two.trace --simulate");
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("meshtune: statement 2: ", 0), 0u) << r.err;
}

// A program's trace is read whole, up to a statement's limit for each of the most
// statements: 80 KB of comments over two parts, each within a statement's 64 KiB, and the
// bad line after them is read and refused (it was once cut at 64 KiB, unread); past 1 MiB
// the whole is refused for its size.
TEST(ProgramCliTest, AProgramsTraceIsReadWholeOrRefusedForItsSize) {
  const std::string comments(40 * 1024, '#');
  std::string trace = meshtune::testing::ReadFile("examples/mlp_megatron.trace");
  const std::string mlp = "H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]";
  const std::string at = "--extents b=8,d=4,f=8,e=4 --mesh x=4 --trace ";
  std::string commented;
  for (absl::string_view part : absl::StrSplit(trace, "---\n")) {
    commented += (commented.empty() ? "" : "---\n") + ("#" + comments + "\n") + std::string(part);
  }
  std::ofstream(Dir() + "/commented.trace") << commented;
  CliRun r = Meshtune("explain --expr '" + mlp + "' " + at + Dir() + "/commented.trace");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  std::ofstream(Dir() + "/bad_after.trace") << commented << "bogus(1)\n";
  r = Meshtune("explain --expr '" + mlp + "' " + at + Dir() + "/bad_after.trace");
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("meshtune: statement 2: trace line ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("bogus"), std::string::npos) << r.err;
  std::ofstream(Dir() + "/huge.trace") << std::string(1024 * 1024 + 10, '#') << "\n";
  r = Meshtune("explain --expr '" + mlp + "' " + at + Dir() + "/huge.trace");
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.err,
            "meshtune: the program's trace is 1048577 bytes long; the limit is 1048576 bytes\n");
}

// --mem-per-rank bounds what a rank holds over the whole program: Megatron's MLP at
// b=8,d=4,f=8,e=4 on x=4 (f32) keeps 192 B of blocks (X, W1, H, W2 and Y) and statement 1
// adds X's all-gather buffer, 128 B: 320 B, over 300 B though each statement alone holds
// 256 B. The tuner drops programs over it, and refuses when none is within it.
TEST(ProgramCliTest, MemPerRankBoundsTheWholeProgram) {
  const std::string mlp = "H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]";
  const std::string at = "--expr '" + mlp + "' --extents b=8,d=4,f=8,e=4 ";
  CliRun r = Meshtune("run --simulate " + at +
                      "--mesh x=4 --mem-per-rank 300B --trace examples/mlp_megatron.trace");
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.err,
            "meshtune: the schedule is illegal: [over_memory_budget] program footprint 320 B a "
            "rank (blocks of its tensors 192 B, the most one statement adds 128 B: statement 1) "
            "exceeds the memory budget of 300 B\n");
  r = Meshtune("run --simulate " + at +
               "--mesh x=4 --mem-per-rank 320B --trace examples/mlp_megatron.trace");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  r = Meshtune("tune --model-only --no-db " + at + "--ranks 4 --mem-per-rank 250B");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  r = Meshtune("tune --model-only --no-db " + at + "--ranks 4 --mem-per-rank 200B");
  EXPECT_NE(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.err,
            "meshtune: no hardware profile \"default\": using built-in machine numbers; run "
            "`meshtune calibrate --ranks P` for this machine's own numbers\n"
            "meshtune: every program is over the memory budget as a whole: program footprint "
            "224 B a rank (blocks of its tensors 192 B, the most one statement adds 32 B: "
            "statement 1) exceeds the memory budget of 200 B\n");
  // A stored program's record is looked up under a budget its whole footprint fits, and
  // not under one it does not.
  const std::string db = " --db " + Dir() + "/budget.db";
  r = Meshtune("tune --model-only " + at + "--mesh x=4" + db);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  r = Meshtune("lookup " + at + "--mesh x=4 --mem-per-rank 1MiB" + db);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  r = Meshtune("lookup " + at + "--mesh x=4 --mem-per-rank 200B" + db);
  EXPECT_NE(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("no tuning record"), std::string::npos) << r.err;
}

TEST(ProgramCliTest, InputsAndOutputsInGivenLayoutsAreTunedRunAndStored) {
  // X block-cyclic, W2 on rank 0 and Y block-cyclic: measured on 2 ranks under mpirun, the
  // moves from and to the application's layouts in the statements that read X and W2 first
  // and write Y, every run verified where the application holds Y.
  const std::string mlp = "H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]";
  const std::string at = "--expr '" + mlp + "' --extents b=12,d=10,f=9,e=6 ";
  const std::string given = "--layout 'X=cyclic(2,2)' --layout W2=root --layout 'Y=cyclic(3,2)' ";
  const std::string db = " --db " + Dir() + "/given.db";
  CliRun r = Meshtune("tune --no-calibrate --top-k 2 " + at + given + "--ranks 2" + db);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("X@layout "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("W2@layout "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Y@layout-out "), std::string::npos) << r.out;
  int runs = 0;
  for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
    if (!absl::StartsWith(line, "run        ")) continue;
    ++runs;
    EXPECT_TRUE(absl::EndsWith(line, ", verified")) << line;
  }
  EXPECT_GE(runs, 2) << r.out;
  // Its record (the workload with its layouts, cyclic's commas and all) runs under mpirun,
  // and a wrong element of Y is caught where the application holds it.
  const std::string id = meshtune::testing::RecordIdOf(r.out);
  ASSERT_FALSE(id.empty()) << r.out;
  r = Meshtune("run --record " + id + db);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  r = Meshtune("run --record " + id + " --inject-fault wrong" + db);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  // (In the record's own names: Y is T3.)
  EXPECT_NE(r.err.find("statement 2: rank (x=0): T3["), std::string::npos) << r.err;
  // codegen writes a program's kernel over its shards only.
  r = Meshtune("codegen " + at + given + "--mesh x=2 --trace examples/mlp_megatron.trace");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "meshtune: codegen writes a program's kernel over its schedules' shards: give a "
            "program no --layout here (tune and run take its inputs' and outputs' layouts)\n");
}

}  // namespace
