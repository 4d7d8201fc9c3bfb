// Hostile input, table-driven: the built meshtune and meshtuned binaries run as
// subprocesses with bad flags (every numeric flag with nan, inf, -1, 1e400, "", 100 KB of
// junk...), bad expressions, meshes, traces and batch files, output to a full disk; and a
// started meshtuned gets bad requests over gRPC. Every row asserts the exit status (or
// gRPC status code) and the message: exact, or a required part and a maximum length (no
// message may echo a huge input). At the end no process the test started is left.
// No row starts an MPI job: every one is refused before (or runs the cost model only).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grpcpp/grpcpp.h"
#include "proto/meshtune.grpc.pb.h"
#include "tests/meshtuned_process.h"
#include "tests/test_util.h"

namespace meshtune {
namespace {

using ::meshtune::testing::ReadFile;

std::string TestTmp() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp ? tmp : "/tmp";
}

// Where this test's subprocesses keep files: TMPDIR, XDG_CACHE_HOME, MESHTUNE_HOME.
std::string Dir(const std::string& name) {
  const std::string d = TestTmp() + "/" + name;
  mkdir(d.c_str(), 0755);
  return d;
}

const std::string kExpr = "C[m,n] += A[m,k] * B[k,n]";
const std::string kSumma = "tests/testdata/summa_2x2.trace";
const std::string kModel[] = {"--alpha", "1e-6", "--beta", "1e-9", "--gamma", "3e-11"};
const std::string k100K(100 * 1024, 'Z');
const size_t kShort = 300;  // the longest message a row with a huge input may print

struct ProcRun {
  int status = -1;  // exit status; 128 + N when killed by signal N
  std::string out, err;
};

// Runs `binary args...` without a shell (so 100 KB arguments pass as they are), stdin from
// `in`, stdout to `out_path` (a file of the test's when empty).
ProcRun Exec(const std::string& binary, const std::vector<std::string>& args,
             const std::string& in = "/dev/null", const std::string& out_path = "") {
  const std::string out = out_path.empty() ? TestTmp() + "/row.out" : out_path;
  const std::string err = TestTmp() + "/row.err";
  const pid_t pid = fork();
  if (pid == 0) {
    const int i = open(in.c_str(), O_RDONLY);
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(i, 0);
    dup2(o, 1);
    dup2(e, 2);
    setenv("TMPDIR", Dir("tmp").c_str(), 1);
    setenv("XDG_CACHE_HOME", Dir("cache").c_str(), 1);
    setenv("MESHTUNE_HOME", Dir("home").c_str(), 1);
    std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ProcRun r;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (out_path.empty()) r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

// How a row's message is checked.
struct Expect {
  int status = 2;
  std::string text;    // the message (stderr; stdout for batch rows)
  bool exact = false;  // text is the whole message, else a part of it
  size_t max_len = kShort;
  bool on_stdout = false;
};

struct CliRow {
  std::string name;
  std::string binary;  // "cli/meshtune" or "daemon/meshtuned"
  std::vector<std::string> args;
  Expect expect;
  std::string in = "/dev/null";
  std::string out_path;  // e.g. /dev/full
};

std::vector<std::string> Cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A valid problem on 2x2 with the SUMMA trace (as flags).
std::vector<std::string> Problem(const std::string& extents = "m=64,n=64,k=64",
                                 const std::string& mesh = "x=2,y=2") {
  return {"--expr", kExpr, "--extents", extents, "--mesh", mesh};
}

std::string Excerpt80(const std::string& s) {
  return s.size() <= 80 ? s : s.substr(0, 58) + "..." + s.substr(s.size() - 19);
}

void Check(const std::string& name, const ProcRun& r, const Expect& e) {
  SCOPED_TRACE(name);
  EXPECT_EQ(r.status, e.status) << "stderr: " << r.err.substr(0, 2000)
                                << "\nstdout: " << r.out.substr(0, 2000);
  const std::string& message = e.on_stdout ? r.out : r.err;
  if (e.exact) {
    EXPECT_EQ(message, e.text);
  } else {
    EXPECT_TRUE(absl::StrContains(message, e.text))
        << "expected a part: " << e.text << "\ngot: " << message.substr(0, 2000);
  }
  EXPECT_LE(message.size(), e.max_len) << message.substr(0, 2000);
}

// --- Rows generated from the flags -----------------------------------------------------

struct NumericFlag {
  std::string binary;
  std::vector<std::string> before;  // the command and its required flags
  std::string flag;
  bool integer;
  std::string range;  // as the message prints it
};

std::vector<NumericFlag> NumericFlags() {
  const std::string mt = "cli/meshtune", md = "daemon/meshtuned";
  const std::vector<std::string> run = Cat(Cat({"run"}, Problem()), {"--trace", kSumma});
  const std::vector<std::string> tune = Cat(Cat({"tune"}, Problem()), {"--model-only", "--no-db"});
  const std::vector<std::string> lookup = {"lookup", "--expr", kExpr, "--extents",
                                           "m=64,n=64,k=64"};
  const std::vector<std::string> records = {"records"};
  const std::vector<std::string> calibrate = {"calibrate", "--ranks", "2"};
  const std::string i64 = "-2^63 to 2^63-1", i32 = "-2^31 to 2^31-1";
  return {
      {mt, run, "--timeout", false, "(0, 604800]"},
      {mt, {"calibrate", "--ranks", "2"}, "--timeout", false, "(0, 604800]"},
      {mt, tune, "--budget-s", false, "(0, 604800]"},
      {mt, tune, "--alpha", false, "[0, 1]"},
      {mt, tune, "--beta", false, "[0, 1]"},
      {mt, tune, "--gamma", false, "[0, 1]"},
      {md, {}, "--shutdown-grace-s", false, "[0, 3600]"},
      {mt, run, "--reps", true, "1 to 100000"},
      {mt, run, "--warmup", true, "0 to 100000"},
      {mt, run, "--seed", true, "0 to 18446744073709551615"},
      {mt, tune, "--reps", true, "1 to 100000"},
      {mt, tune, "--warmup", true, "0 to 100000"},
      {mt, tune, "--seed", true, "0 to 18446744073709551615"},
      {mt,
       {"tune", "--expr", kExpr, "--extents", "m=64,n=64,k=64", "--model-only"},
       "--ranks",
       true,
       i64},
      {mt, tune, "--top-k", true, i32},
      {mt, tune, "--max-evaluations", true, i64},
      {mt, lookup, "--ranks", true, i64},
      {mt, records, "--limit", true, i32},
      {mt, records, "--after", true, "0 to 9223372036854775807"},
      {mt, records, "--id", true, "1 to 9223372036854775807"},
      {mt, {"calibrate"}, "--ranks", true, i64},
      {md, {}, "--max-concurrent-tunes", true, "1 to 1024"},
  };
}

// Every numeric flag with values no flag takes: each refused at parsing (exit 2) with
// "--flag: 'VALUE' <why>; give <a number in RANGE | an integer from RANGE>".
std::vector<CliRow> NumericFlagRows() {
  std::vector<CliRow> rows;
  for (const NumericFlag& f : NumericFlags()) {
    const std::string give =
        f.integer ? "; give an integer from " + f.range : "; give a number in " + f.range;
    std::vector<std::pair<std::string, std::string>> values;  // value, why
    if (f.integer) {
      values = {{"nan", "is not an integer"},
                {"1.5", "is not an integer"},
                {"99999999999999999999", "is out of range"},
                {"", "is not an integer"},
                {"0x10", "is not an integer"},
                {k100K, "is not an integer"}};
    } else {
      values = {{"nan", "is not a finite number"}, {"inf", "is not a finite number"},
                {"-1", "is out of range"},         {"1e400", "is out of range"},
                {"", "is not a number"},           {k100K, "is not a number"}};
    }
    for (const auto& [value, why] : values) {
      CliRow row;
      row.name = absl::StrCat(f.binary, " ", f.before.empty() ? "" : f.before[0] + " ", f.flag,
                              " '", value.substr(0, 24), "'");
      row.binary = f.binary;
      row.args = Cat(f.before, {f.flag, value});
      row.expect.text = absl::StrCat(f.flag, ": '", Excerpt80(value), "' ", why, give,
                                     "\nRun with --help for more information.\n");
      row.expect.exact = true;
      rows.push_back(row);
    }
  }
  return rows;
}

// String flags with 100 KB of junk: refused, naming the flag's role, quoting 80 characters.
std::vector<CliRow> HugeStringRows(const std::string& db) {
  const std::string big_ident(100 * 1024, 'q');
  std::vector<CliRow> rows;
  auto add = [&](const std::string& name, std::vector<std::string> args, const std::string& part,
                 int status = 2, const std::string& binary = "cli/meshtune") {
    CliRow row;
    row.name = name;
    row.binary = binary;
    row.args = std::move(args);
    row.expect.status = status;
    row.expect.text = part;
    rows.push_back(row);
  };
  const std::vector<std::string> trace = {"--trace", kSumma};
  for (const std::string cmd : {"explain", "codegen", "run"}) {
    add(cmd + " huge --expr",
        Cat({cmd, "--expr", k100K, "--extents", "m=4", "--mesh", "x=2"}, trace),
        "meshtune: expression is 102400 bytes long; the limit is 4096 bytes\n");
    add(cmd + " huge --extents",
        Cat({cmd, "--expr", kExpr, "--extents", k100K, "--mesh", "x=2"}, trace),
        "meshtune: extents is 102400 bytes long; the limit is 4096 bytes\n");
    add(cmd + " huge --mesh",
        Cat({cmd, "--expr", kExpr, "--extents", "m=4,n=4,k=4", "--mesh", k100K}, trace),
        "meshtune: mesh is 102400 bytes long; the limit is 1024 bytes\n");
    add(cmd + " huge --dtype", Cat(Cat({cmd}, Problem()), Cat(trace, {"--dtype", k100K})),
        "meshtune: unknown dtype '" + Excerpt80(k100K) + "' (expected f32 or f64)\n");
    add(cmd + " huge --mem-per-rank",
        Cat(Cat({cmd}, Problem()), Cat(trace, {"--mem-per-rank", k100K})),
        "meshtune: memory size '" + Excerpt80(k100K) +
            "' does not start with a number (e.g. 2GiB)\n");
    add(cmd + " huge --trace path",
        Cat(Cat({cmd}, Problem()), {"--trace", "/nonexistent/" + k100K}),
        "meshtune: cannot read trace file '/nonexistent/ZZZZ");
  }
  add("explain 4000-character identifier",
      Cat({"explain", "--expr",
           "C[m," + std::string(2000, 'i') + "," + std::string(2000, 'i') + "] += A[m,k] * B[k,n]",
           "--extents", "m=4", "--mesh", "x=2"},
          trace),
      "is repeated in tensor C");
  add("tune huge --profile",
      Cat(Cat({"tune"}, Problem()), {"--model-only", "--no-db", "--profile", k100K}),
      "meshtune: invalid hardware profile name \"" + Excerpt80(k100K) +
          "\": it has 102400 characters");
  add("lookup huge --profile",
      {"lookup", "--expr", kExpr, "--extents", "m=4,n=4,k=4", "--mesh", "x=2", "--profile", k100K,
       "--db", db},
      "meshtune: invalid hardware profile name \"" + Excerpt80(k100K) + "\"");
  add("huge --server",
      {"lookup", "--expr", kExpr, "--extents", "m=4,n=4,k=4", "--mesh", "x=2", "--server", k100K},
      "--server: '" + Excerpt80(k100K) + "': expected HOST:PORT");
  add("huge --inject-fault", Cat(Cat({"run"}, Problem()), Cat(trace, {"--inject-fault", k100K})),
      "--inject-fault: '" + Excerpt80(k100K) + "' is not one of crash, hang, wrong");
  add("meshtuned huge --log-level", {"--log-level", k100K},
      "--log-level: '" + Excerpt80(k100K) + "' is not one of trace, debug, info", 2,
      "daemon/meshtuned");
  add("meshtuned huge --listen", {"--listen", k100K},
      "--listen: '" + Excerpt80(k100K) + "': expected HOST:PORT", 2, "daemon/meshtuned");
  add("huge unknown command", {big_ident},
      "meshtune: unknown command '" + Excerpt80(big_ident) + "'");
  add("huge unexpected argument", {"records", k100K}, "ZZZZ...ZZZZ");
  add("huge batch path", {"batch", "/nonexistent/" + k100K},
      "meshtune: cannot read batch file '/nonexistent/ZZZZ");
  return rows;
}

// Hand-written rows: each a defect found with hostile input, or a neighbour of one.
std::vector<CliRow> CommandRows(const std::string& db) {
  const std::string mt = "cli/meshtune", md = "daemon/meshtuned";
  std::vector<CliRow> rows;
  auto add = [&](const std::string& name, const std::string& binary, std::vector<std::string> args,
                 Expect e, const std::string& in = "/dev/null", const std::string& out_path = "") {
    rows.push_back({name, binary, std::move(args), std::move(e), in, out_path});
  };
  auto exact = [](int status, const std::string& text) {
    Expect e;
    e.status = status;
    e.text = text;
    e.exact = true;
    return e;
  };
  auto part = [](int status, const std::string& text, size_t max_len = kShort) {
    Expect e;
    e.status = status;
    e.text = text;
    e.max_len = max_len;
    return e;
  };
  const std::vector<std::string> trace = {"--trace", kSumma};
  const std::string commands =
      "explain, run, codegen, calibrate, fidelity, tune, lookup, records, report, batch, serve";

  // Commands.
  add("unknown command", mt, {"frobnicate"},
      exact(2, "meshtune: unknown command 'frobnicate'; the commands are " + commands +
                   " (meshtune --help)\n"));
  add("unknown command with flags", mt, {"tunee", "--expr", kExpr},
      exact(2, "meshtune: unknown command 'tunee'; the commands are " + commands +
                   " (meshtune --help)\n"));
  add("no command", mt, {}, part(2, "A subcommand is required"));
  add("unknown flag", mt, {"records", "--bogus"}, part(2, "--bogus"));

  // Problems that overflow or cannot fit.
  add("extent overflowing int64", mt,
      Cat(Cat({"explain"}, Problem("m=99999999999999999999,n=4,k=4")), trace),
      exact(2,
            "meshtune: extents column 3: extent of m '99999999999999999999' overflows a 64-bit "
            "integer\n"));
  add("iteration space over 2^62", mt,
      Cat(Cat({"explain"}, Problem("m=4194304,n=4194304,k=4194304")), trace),
      exact(2,
            "meshtune: the iteration space of C[m,n] += A[m,k] * B[k,n] is too large: the extents "
            "of k, m, n "
            "multiply to more than 2^62 points\n"));
  add("run iteration space over 2^62", mt,
      Cat(Cat({"run"}, Problem("m=4194304,n=4194304,k=4194304")), trace),
      part(2, "is too large: the extents of k, m, n multiply to more than 2^62 points"));
  add("tensor over 2^48 elements", mt,
      Cat(Cat({"explain"}, Problem("m=16777216,n=33554432,k=4")), trace),
      exact(2, "meshtune: tensor C[m,n] is too large: more than 2^48 elements\n"));
  add("run that no machine holds", mt, Cat(Cat({"run"}, Problem("m=2147483648,n=24,k=16")), trace),
      // The rest of the message is this machine's memory.
      part(2,
           "meshtune: each rank needs 112 GiB (shards 80 GiB, transfer buffers 32 GiB), 448 GiB "
           "for the 4 ranks on "
           "this machine, but it has "));
  add("run that no rank holds (hostfile)", mt,
      Cat(Cat({"run"}, Problem("m=2147483648,n=24,k=16")), Cat(trace, {"--hostfile", "/dev/null"})),
      part(2,
           "meshtune: each rank needs 112 GiB (shards 80 GiB, transfer buffers 32 GiB) but this "
           "machine has "));
  add("run over --mem-per-rank", mt,
      Cat(Cat({"run"}, Problem("m=2147483648,n=24,k=16")), Cat(trace, {"--mem-per-rank", "1GiB"})),
      exact(2,
            "meshtune: the schedule is illegal: [over_memory_budget] per-rank footprint 112 GiB "
            "(shards 80 GiB, "
            "transfer buffers 32 GiB) exceeds the memory budget of 1 GiB\n"));
  add("run 1 TiB shards", mt, Cat(Cat({"run"}, Problem("m=1048576,n=1048576,k=1024")), trace),
      part(2, "meshtune: each rank needs 1.004 TiB (shards 1.002 TiB, transfer buffers 2 GiB)"));
  add("run illegal trace", mt, Cat(Cat({"run"}, Problem("m=64,n=64,k=64", "x=2")), trace),
      part(2,
           "meshtune: instruction 1, distribute([m,n], [mo,no], [mi,ni], [x,y]): unknown mesh axis "
           "y"));
  add("run --timeout 0 prints its range", mt,
      Cat(Cat({"run"}, Problem()), Cat(trace, {"--timeout", "0"})),
      exact(2,
            "--timeout: '0' is out of range; give a number in (0, 604800]\nRun with --help for "
            "more information.\n"));

  // Mesh axes named like an index, in every command.
  for (const std::string cmd : {"explain", "codegen", "run"}) {
    add(cmd + " mesh axis named like an index", mt,
        Cat(Cat({cmd}, Problem("m=64,n=64,k=64", "m=2,y=2")), trace),
        exact(2,
              "meshtune: mesh axis m has the same name as an index of C[m,n] += A[m,k] * B[k,n]; "
              "rename one\n"));
  }
  add("lookup mesh axis named like an index", mt,
      Cat({"lookup"}, Cat(Problem("m=64,n=64,k=64", "m=2,y=2"), {"--db", db})),
      exact(2,
            "meshtune: mesh axis m has the same name as an index of C[m,n] += A[m,k] * B[k,n]; "
            "rename one\n"));
  add("lookup mesh axis named like a tensor", mt,
      Cat({"lookup"}, Cat(Problem("m=64,n=64,k=64", "A=2"), {"--db", db})),
      exact(2,
            "meshtune: mesh axis A has the same name as a tensor of C[m,n] += A[m,k] * B[k,n]; "
            "rename one\n"));
  add("records mesh axis named like an index", mt,
      Cat({"records"}, Cat(Problem("m=64,n=64,k=64", "k=4"), {"--db", db})),
      exact(2,
            "meshtune: mesh axis k has the same name as an index of C[m,n] += A[m,k] * B[k,n]; "
            "rename one\n"));
  add("tune mesh axis named like an index", mt,
      Cat(Cat({"tune"}, Problem("m=64,n=64,k=64", "n=2")), {"--model-only", "--no-db"}),
      exact(2,
            "meshtune: mesh axis n has the same name as an index of C[m,n] += A[m,k] * B[k,n]; "
            "rename one\n"));

  // The records: ranges and read-only opening.
  add("records --after 20 digits", mt, {"records", "--db", db, "--after", "99999999999999999999"},
      exact(2,
            "--after: '99999999999999999999' is out of range; give an integer from 0 to "
            "9223372036854775807\n"
            "Run with --help for more information.\n"));
  add("records --limit 0", mt, {"records", "--db", db, "--limit", "0"},
      exact(2, "meshtune: --limit 0 is out of range: 1 to 1000\n"));
  add("records --id unknown", mt, {"records", "--db", db, "--id", "424242"},
      exact(1, "meshtune: no tuning record with id 424242\n"));
  add("report of an unknown record", mt,
      {"report", "424242", "-o", Dir("cache") + "/r.html", "--db", db},
      exact(1, "meshtune: no tuning record with id 424242\n"));
  add("report record not a number", mt, {"report", "one", "-o", Dir("cache") + "/r.html"},
      exact(2,
            "record: 'one' is not an integer; give an integer from 1 to 9223372036854775807\n"
            "Run with --help for more information.\n"));
  add("report to a directory", mt, {"report", "1", "-o", Dir("cache"), "--db", db},
      exact(2, "meshtune: cannot open '" + Dir("cache") + "' for writing: Is a directory\n"));
  const std::string missing = Dir("cache") + "/nonexistent/dir/tuning.db";
  add("lookup with a mistyped --db", mt, Cat({"lookup"}, Cat(Problem(), {"--db", missing})),
      exact(1, "meshtune: no tuning database at " + missing +
                   " (tune something first, or give --db PATH of an existing one)\n"));
  add("records with a mistyped --db", mt, {"records", "--db", missing},
      exact(1, "meshtune: no tuning database at " + missing +
                   " (tune something first, or give --db PATH of an existing one)\n"));
  add("records --db a directory", mt, {"records", "--db", Dir("cache")},
      exact(1, "meshtune: tuning database " + Dir("cache") + " is a directory, not a file\n"));
  add("records --db /dev/null", mt, {"records", "--db", "/dev/null"},
      exact(1,
            "meshtune: tuning database /dev/null holds no meshtune schema (an empty or another "
            "SQLite file)\n"));
  add("records --db a text file", mt, {"records", "--db", kSumma},
      part(1,
           "meshtune: tuning database tests/testdata/summa_2x2.trace: cannot read the schema "
           "version: file is not "
           "a database"));
  add("lookup untuned", mt, Cat({"lookup"}, Cat(Problem("m=64,n=64,k=32", "x=2"), {"--db", db})),
      exact(1,
            "meshtune: no tuning record for C[m,n] += A[m,k] * B[k,n] (m=64,n=64,k=32, f32) on x=2 "
            "with profile "
            "default; tune it first\n"));

  // Budgets.
  add("tune --budget-s 1e-300", mt,
      Cat(Cat({"tune"}, Problem()),
          Cat({"--model-only", "--no-db", "--budget-s", "1e-300"},
              {kModel[0], kModel[1], kModel[2], kModel[3], kModel[4], kModel[5]})),
      exact(1,
            "meshtune: the time budget of 1e-300 s ran out before any schedule was evaluated (the "
            "search gets "
            "half of it); give a larger budget (--budget-s)\n"));
  add("tune --budget-s 1e9", mt,
      Cat(Cat({"tune"}, Problem()), {"--model-only", "--no-db", "--budget-s", "1e9"}),
      part(2, "--budget-s: '1e9' is out of range; give a number in (0, 604800]"));

  // Daemon addresses.
  for (const auto& [listen, why] : std::vector<std::pair<std::string, std::string>>{
           {"127.0.0.1:99999", "port 99999 is out of range (0 to 65535; 0 picks a free port)"},
           {"127.0.0.1:4294967297",
            "port 4294967297 is out of range (0 to 65535; 0 picks a free port)"},
           {"127.0.0.1:-1", "the port '-1' is not a number"},
           {"127.0.0.1:", "the port '' is not a number"},
           {"localhost", "expected HOST:PORT, e.g. 127.0.0.1:50051"},
           {":50051", "the host is empty (expected HOST:PORT, e.g. 127.0.0.1:50051)"},
           {"[::1:50051",
            "the host is not a name, an IPv4 address or a bracketed IPv6 address ([::1])"},
           {"a b:1",
            "the host is not a name, an IPv4 address or a bracketed IPv6 address ([::1])"}}) {
    add("meshtuned --listen " + listen, md, {"--listen", listen, "--db", db},
        exact(2,
              "--listen: '" + listen + "': " + why + "\nRun with --help for more information.\n"));
  }
  for (const auto& [http, why] : std::vector<std::pair<std::string, std::string>>{
           {"127.0.0.1:70000", "port 70000 is out of range (0 to 65535; 0 picks a free port)"},
           {"localhost", "the port 'localhost' is not a number"},
           {"a b:1", "the host is not a name, an IPv4 address or a bracketed IPv6 address ([::1])"},
           {"unix:/tmp/s", "the pages are served over TCP only; give HOST:PORT, :PORT or PORT"}}) {
    add("meshtuned --http " + http, md, {"--http", http, "--db", db},
        exact(2, "--http: '" + http + "': " + why + "\nRun with --help for more information.\n"));
  }
  add("--server port 0", mt, {"records", "--server", "127.0.0.1:0"},
      exact(2,
            "--server: '127.0.0.1:0': port 0 is out of range (1 to 65535)\nRun with --help for "
            "more information.\n"));
  add("--server unreachable", mt, {"records", "--server", "127.0.0.1:1"},
      part(1, "meshtune: cannot reach meshtuned at 127.0.0.1:1"));

  // Output to a full disk: exit 1, never 0.
  const std::string full = "meshtune: cannot write to standard output: No space left on device\n";
  add("explain --json >/dev/full", mt, Cat(Cat({"explain", "--json"}, Problem()), trace),
      exact(1, full), "/dev/null", "/dev/full");
  add("explain >/dev/full", mt, Cat(Cat({"explain"}, Problem()), trace), exact(1, full),
      "/dev/null", "/dev/full");
  add("codegen >/dev/full", mt, Cat(Cat({"codegen"}, Problem("m=32,n=24,k=16")), trace),
      exact(1, full), "/dev/null", "/dev/full");
  add("codegen -o /dev/full", mt,
      Cat(Cat({"codegen"}, Problem("m=32,n=24,k=16")), Cat(trace, {"-o", "/dev/full"})),
      exact(1, "meshtune: cannot write '/dev/full': No space left on device\n"));
  add("tune >/dev/full", mt,
      Cat(Cat({"tune"}, Problem("m=64,n=64,k=64", "x=2")),
          {"--model-only", "--no-db", "--json", kModel[0], kModel[1], kModel[2], kModel[3],
           kModel[4], kModel[5]}),
      exact(1, full), "/dev/null", "/dev/full");
  add("records >/dev/full", mt, {"records", "--db", db}, exact(1, full), "/dev/null", "/dev/full");
  add("lookup >/dev/full", mt, Cat({"lookup"}, Cat(Problem("m=64,n=64,k=64", "x=2"), {"--db", db})),
      exact(1, full), "/dev/null", "/dev/full");
  add("lookup --json >/dev/full", mt,
      Cat({"lookup", "--json"}, Cat(Problem("m=64,n=64,k=64", "x=2"), {"--db", db})),
      exact(1, full), "/dev/null", "/dev/full");
  add("--help >/dev/full", mt, {"--help"}, exact(1, full), "/dev/null", "/dev/full");

  // Traces from stdin.
  const std::string token_file = TestTmp() + "/token.trace";
  std::ofstream(token_file) << std::string(30 * 1024, 'd') << "(k, ko, ki, 2)\n";
  add("30 KB trace token on stdin", mt, Cat(Cat({"explain"}, Problem()), {"--trace", "-"}),
      exact(2, "meshtune: trace line 1, column 1: unknown primitive '" +
                   Excerpt80(std::string(30 * 1024, 'd')) +
                   "' (primitives: split, divide, reorder, distribute, shard, communicate, "
                   "tensorize)\n"),
      token_file);
  const std::string big_trace = TestTmp() + "/big.trace";
  std::ofstream(big_trace) << std::string(100 * 1024, '#');
  add("100 KB trace on stdin", mt, Cat(Cat({"explain"}, Problem()), {"--trace", "-"}),
      exact(2, "meshtune: trace is 102400 bytes long; the limit is 65536 bytes\n"), big_trace);
  add("trace is a directory", mt, Cat(Cat({"explain"}, Problem()), {"--trace", Dir("tmp")}),
      exact(2, "meshtune: cannot read trace file '" + Dir("tmp") + "': Is a directory\n"));
  add("trace is missing", mt, Cat(Cat({"explain"}, Problem()), {"--trace", "/nonexistent.trace"}),
      exact(2,
            "meshtune: cannot read trace file '/nonexistent.trace': No such file or directory\n"));
  const std::string binary_trace = TestTmp() + "/binary.trace";
  std::ofstream(binary_trace) << "divide(k, ko, ki, 2)\n\x1b[2J\x07";
  add("terminal escapes in a trace", mt,
      Cat(Cat({"explain"}, Problem()), {"--trace", binary_trace}),
      exact(2, "meshtune: trace line 2, column 1: byte 0x1B is not printable ASCII\n"));

  // Statements files that are not text: refused as such, before they are split into
  // statements (a binary file was "N statements; the limit is 16").
  const std::string nul_expr = TestTmp() + "/nul.expr";
  std::ofstream(nul_expr, std::ios::binary) << kExpr << std::string(1, '\0') << "junk";
  add("NUL byte in --expr-file", mt,
      {"tune", "--expr-file", nul_expr, "--extents", "m=4,n=4,k=4", "--ranks", "2"},
      exact(2, "--expr-file: statements file '" + nul_expr +
                   "' is not text: it holds a NUL byte at offset 25\nRun with --help for more "
                   "information.\n"));
  const std::string binary_expr = TestTmp() + "/binary.expr";
  std::string junk;
  for (int i = 0; i < 40; ++i) junk += "x;";  // 41 statements, were it text
  std::ofstream(binary_expr, std::ios::binary) << junk << "\x89PNG\r\n\x1a\n";
  add("binary --expr-file", mt,
      {"tune", "--expr-file", binary_expr, "--extents", "m=4,n=4,k=4", "--ranks", "2"},
      exact(2, "--expr-file: statements file '" + binary_expr +
                   "' is not text: byte 0x89 at offset 80 is not UTF-8\nRun with --help for "
                   "more information.\n"));
  const std::string cut_expr = TestTmp() + "/cut.expr";
  std::ofstream(cut_expr, std::ios::binary) << kExpr << "\xC3";
  add("UTF-8 sequence cut short in --expr-file", mt,
      {"tune", "--expr-file", cut_expr, "--extents", "m=4,n=4,k=4", "--ranks", "2"},
      exact(2, "--expr-file: statements file '" + cut_expr +
                   "' is not text: byte 0xC3 at offset 25 is not UTF-8\nRun with --help for "
                   "more information.\n"));
  // Text that is UTF-8 but not ASCII reaches the parser, which says where.
  const std::string utf8_expr = TestTmp() + "/utf8.expr";
  std::ofstream(utf8_expr, std::ios::binary) << kExpr << "   # caf\xC3\xA9\n";
  add("non-ASCII text in --expr-file", mt,
      {"tune", "--expr-file", utf8_expr, "--extents", "m=4,n=4,k=4", "--ranks", "2"},
      exact(2, "meshtune: expression line 1, column 34: byte 0xC3 is not printable ASCII\n"));

  // --in-place with a program of several statements: the refusal names --in-place.
  add("--in-place with a program", mt,
      {"tune", "--expr", "H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]", "--extents",
       "b=8,d=8,e=8,f=8", "--mesh", "x=2,y=2", "--in-place", "--model-only", "--no-db"},
      exact(2,
            "meshtune: --in-place takes one statement: a program of several statements takes "
            "its inputs' and outputs' layouts with --layout\n"));
  add("--result-on-layer with a program", mt,
      {"explain", "--expr", "H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]", "--extents",
       "b=8,d=4,e=4,f=8", "--mesh", "x=4", "--trace", "examples/mlp_megatron.trace",
       "--result-on-layer"},
      exact(2,
            "meshtune: result_on_layer takes one statement; a program's outputs are held on "
            "every copy\n"));
  // A given layout on a program's intermediate: its layout is the schedules'.
  add("--layout of a program's intermediate", mt,
      {"tune", "--expr", "H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]", "--extents",
       "b=8,d=8,e=8,f=8", "--ranks", "4", "--layout", "H=cyclic(2,2)", "--model-only", "--no-db"},
      exact(2,
            "meshtune: H is an intermediate of the program (statement 1 writes it, statement 2 "
            "reads it): its layout is the schedules'; give layouts of the program's inputs and "
            "outputs\n"));
  add("--layout of a tensor the program lacks", mt,
      {"tune", "--expr", "H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]", "--extents",
       "b=8,d=8,e=8,f=8", "--ranks", "4", "--layout", "Q=cyclic(2,2)", "--model-only", "--no-db"},
      exact(2,
            "meshtune: --layout Q=cyclic(2,2): the program has no tensor Q (it has H, X, W1, Y, "
            "W2)\n"));

  // Batch: the file itself.
  add("batch a directory", mt, {"batch", Dir("tmp"), "--db", db},
      exact(2, "meshtune: cannot read batch file '" + Dir("tmp") + "': it is a directory\n"));
  add("batch a missing file", mt, {"batch", "/nonexistent/requests.jsonl", "--db", db},
      exact(2,
            "meshtune: cannot read batch file '/nonexistent/requests.jsonl': No such file or "
            "directory\n"));
  add("batch >/dev/full", mt, {"batch", "-", "--db", db}, exact(1, full),
      TestTmp() + "/batch_bad_json.jsonl", "/dev/full");
  return rows;
}

// Batch lines, each in a file of its own: the line's error (stdout) and exit 1.
const std::string kHugeLine = "{\"problem\": {\"expr\": \"" + std::string(2 << 20, 'e') + "\"}}";

std::vector<CliRow> BatchRows(const std::string& db) {
  const std::string problem =
      R"("problem": {"expr": "C[m,n] += A[m,k] * B[k,n]", "extents": "m=64,n=64,k=64"})";
  const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> lines = {
      {"bad_json", {"{not json", "not a meshtune.v1.TuneRequest in JSON: "}},
      {"unknown_field",
       {"{" + problem + R"(, "ranks": 2, "frobnicate": 1})",
        "not a meshtune.v1.TuneRequest in JSON: "}},
      {"wrong_type",
       {"{" + problem + R"(, "ranks": "two"})", "not a meshtune.v1.TuneRequest in JSON: "}},
      {"array", {"[1, 2, 3]", "not a meshtune.v1.TuneRequest in JSON: "}},
      {"string", {"\"tune\"", "not a meshtune.v1.TuneRequest in JSON: "}},
      {"empty_object",
       {"{}", "expression column 1: empty expression (expected e.g. C[m,n] += A[m,k] * B[k,n])"}},
      {"no_mesh",
       {"{" + problem + "}", "give exactly one of --mesh (e.g. x=2,y=2) and --ranks (e.g. 4)"}},
      {"budget_nan",
       {"{" + problem + R"(, "ranks": 2, "budget_s": "NaN"})", "--budget-s nan is out of range"}},
      {"budget_inf",
       {"{" + problem + R"(, "ranks": 2, "budget_s": "Infinity"})",
        "--budget-s inf is out of range"}},
      {"negative_ranks",
       {"{" + problem + R"(, "ranks": -2})", "--ranks -2 is out of range: give 1 to 65536 ranks"}},
      {"mesh_clash",
       {"{" + problem + R"(, "mesh": {"axes": "k=2"}})",
        "mesh axis k has the same name as an index of C[m,n] += A[m,k] * B[k,n]; rename one"}},
      {"huge_expr",
       {R"({"problem": {"expr": ")" + std::string(30 * 1024, 'E') +
            R"(", "extents": "m=4"}, "ranks": 2})",
        "expression is 30720 bytes long; the limit is 4096 bytes"}},
      {"huge_identifier",
       {R"({"problem": {"expr": "C[m,n] += A[m,k] * )" + std::string(3000, 'B') +
            R"([k,n]", "extents": "m=4,n=4,k=4,)" + std::string(600, 'j') + R"(=2"}, "ranks": 2})",
        "extent given for unknown index jjjj"}},
      {"huge_line",
       {kHugeLine,
        absl::StrCat("the line is ", kHugeLine.size(), " bytes long; the limit is 1048576 bytes")}},
      {"utf8_expr",
       {R"({"problem": {"expr": "C[m,n] += A[m,k] * B[k,ñ]", "extents": "m=4"}, "ranks": 2})",
        "expression line 1, column 24: byte 0xC3 is not printable ASCII"}},
  };
  std::vector<CliRow> rows;
  for (const auto& [name, line_and_error] : lines) {
    const std::string path = TestTmp() + "/batch_" + name + ".jsonl";
    std::ofstream(path) << line_and_error.first << "\n";
    CliRow row;
    row.name = "batch line " + name;
    row.binary = "cli/meshtune";
    row.args = {"batch", path, "--model-only", "--db", db};
    row.expect.status = 1;
    row.expect.text =
        "{\"line\":1,\"error\":\"" + line_and_error.second;  // a meshtune.v1.BatchLine
    row.expect.on_stdout = true;
    row.expect.max_len = 500;
    rows.push_back(row);
  }
  return rows;
}

// --- The daemon --------------------------------------------------------------------------

struct GrpcRow {
  std::string name;
  std::function<grpc::Status(v1::Tuner::Stub&, grpc::ClientContext*)> call;
  grpc::StatusCode code;
  std::string part;  // of the message
  size_t max_len = kShort;
};

v1::Problem MakeProblem(const std::string& expr, const std::string& extents,
                        const std::string& dtype = "") {
  v1::Problem p;
  p.set_expr(expr);
  p.set_extents(extents);
  p.set_dtype(dtype);
  return p;
}

grpc::Status CallExplain(v1::Tuner::Stub& s, grpc::ClientContext* c, const v1::Problem& p,
                         const std::string& mesh, const std::string& trace,
                         const std::string& mem = "") {
  v1::ExplainRequest r;
  *r.mutable_problem() = p;
  r.mutable_mesh()->set_axes(mesh);
  r.mutable_mesh()->set_mem_per_rank(mem);
  r.mutable_trace()->set_text(trace);
  v1::ExplainResponse out;
  return s.Explain(c, r, &out);
}

grpc::Status CallCodegen(v1::Tuner::Stub& s, grpc::ClientContext* c, const v1::Problem& p,
                         const std::string& mesh, const std::string& trace, int64_t record = 0) {
  v1::CodegenRequest r;
  *r.mutable_problem() = p;
  r.mutable_mesh()->set_axes(mesh);
  r.mutable_trace()->set_text(trace);
  r.set_record_id(record);
  v1::CodegenResponse out;
  return s.Codegen(c, r, &out);
}

grpc::Status CallLookup(v1::Tuner::Stub& s, grpc::ClientContext* c, const v1::Problem& p,
                        const std::string& mesh, int64_t ranks, const std::string& mem = "",
                        const std::string& profile = "") {
  v1::LookupRequest r;
  *r.mutable_problem() = p;
  r.mutable_mesh()->set_axes(mesh);
  r.mutable_mesh()->set_mem_per_rank(mem);
  r.set_ranks(ranks);
  r.set_profile(profile);
  v1::LookupResponse out;
  return s.Lookup(c, r, &out);
}

grpc::Status CallTune(v1::Tuner::Stub& s, grpc::ClientContext* c, v1::TuneRequest r) {
  r.set_model_only(true);
  std::unique_ptr<grpc::ClientReader<v1::TuneEvent>> reader = s.Tune(c, r);
  v1::TuneEvent event;
  while (reader->Read(&event)) {
  }
  return reader->Finish();
}

std::vector<GrpcRow> GrpcRows(const std::string& summa) {
  using grpc::StatusCode;
  const v1::Problem ok = MakeProblem(kExpr, "m=64,n=64,k=64");
  const std::string big(30 * 1024, 'T');
  std::vector<GrpcRow> rows;
  rows.push_back({"Explain 30 KB expression",
                  [=](auto& s, auto* c) {
                    return CallExplain(s, c, MakeProblem(big, "m=4"), "x=2,y=2", summa);
                  },
                  StatusCode::INVALID_ARGUMENT,
                  "expression is 30720 bytes long; the limit is 4096 bytes"});
  rows.push_back(
      {"Explain 30 KB trace token",
       [=](auto& s, auto* c) { return CallExplain(s, c, ok, "x=2,y=2", big + "(k, ko, ki, 2)\n"); },
       StatusCode::INVALID_ARGUMENT,
       "trace line 1, column 1: unknown primitive '" + Excerpt80(big) + "' (primitives: "});
  rows.push_back({"Explain 30 KB loop name",
                  [=](auto& s, auto* c) {
                    return CallExplain(s, c, ok, "x=2,y=2", "divide(" + big + ", ko, ki, 2)\n");
                  },
                  StatusCode::INVALID_ARGUMENT, "unknown loop " + Excerpt80(big)});
  rows.push_back({"Explain 30 KB tensor in shard",
                  [=](auto& s, auto* c) {
                    return CallExplain(s, c, ok, "x=2,y=2", "shard(" + big + ", m@x)\n");
                  },
                  StatusCode::INVALID_ARGUMENT, "unknown tensor " + Excerpt80(big)});
  rows.push_back({"Explain 60 KB trace of one comment",
                  [=](auto& s, auto* c) {
                    return CallExplain(s, c, ok, "x=2,y=2", "#" + std::string(60000, 'c'));
                  },
                  StatusCode::OK, ""});
  rows.push_back({"Explain 100 KB trace",
                  [=](auto& s, auto* c) {
                    return CallExplain(s, c, ok, "x=2,y=2", std::string(100 * 1024, ' '));
                  },
                  StatusCode::INVALID_ARGUMENT,
                  "trace is 102400 bytes long; the limit is 65536 bytes"});
  rows.push_back({"Explain 30 KB dtype",
                  [=](auto& s, auto* c) {
                    return CallExplain(s, c, MakeProblem(kExpr, "m=4,n=4,k=4", big), "x=2,y=2",
                                       summa);
                  },
                  StatusCode::INVALID_ARGUMENT,
                  "unknown dtype '" + Excerpt80(big) + "' (expected f32 or f64)"});
  rows.push_back(
      {"Explain 30 KB mem_per_rank",
       [=](auto& s, auto* c) { return CallExplain(s, c, ok, "x=2,y=2", summa, "1" + big); },
       StatusCode::INVALID_ARGUMENT, "unknown unit '" + Excerpt80(big) + "' in memory size '"});
  rows.push_back({"Explain 1000-character mesh axis",
                  [=](auto& s, auto* c) {
                    return CallExplain(s, c, ok, std::string(1000, 'x') + "=2", summa);
                  },
                  StatusCode::INVALID_ARGUMENT, "unknown mesh axis x (mesh axes: xxxx"});
  rows.push_back(
      {"Explain mesh clash",
       [=](auto& s, auto* c) { return CallExplain(s, c, ok, "m=2,y=2", summa); },
       StatusCode::INVALID_ARGUMENT,
       "mesh axis m has the same name as an index of C[m,n] += A[m,k] * B[k,n]; rename one"});
  rows.push_back({"Explain iteration space over 2^62",
                  [=](auto& s, auto* c) {
                    return CallExplain(s, c, MakeProblem(kExpr, "m=4194304,n=4194304,k=4194304"),
                                       "x=2,y=2", summa);
                  },
                  StatusCode::INVALID_ARGUMENT, "multiply to more than 2^62 points"});
  rows.push_back({"Codegen 30 KB trace token",
                  [=](auto& s, auto* c) { return CallCodegen(s, c, ok, "x=2,y=2", big + "(k)\n"); },
                  StatusCode::INVALID_ARGUMENT, "unknown primitive '" + Excerpt80(big) + "'"});
  rows.push_back({"Codegen unknown record",
                  [=](auto& s, auto* c) { return CallCodegen(s, c, ok, "", "", 424242); },
                  StatusCode::NOT_FOUND, "no tuning record with id 424242"});
  rows.push_back(
      {"Lookup mesh clash", [=](auto& s, auto* c) { return CallLookup(s, c, ok, "m=2,y=2", 0); },
       StatusCode::INVALID_ARGUMENT,
       "mesh axis m has the same name as an index of C[m,n] += A[m,k] * B[k,n]; rename one"});
  rows.push_back(
      {"Lookup 30 KB mesh", [=](auto& s, auto* c) { return CallLookup(s, c, ok, big, 0); },
       StatusCode::INVALID_ARGUMENT, "mesh is 30720 bytes long; the limit is 1024 bytes"});
  rows.push_back(
      {"Lookup mesh and ranks",
       [=](auto& s, auto* c) { return CallLookup(s, c, ok, "x=2" + big.substr(0, 900), 4); },
       StatusCode::INVALID_ARGUMENT, "give exactly one of mesh (\"x=2TTT"});
  rows.push_back({"Lookup 30 KB memory budget",
                  [=](auto& s, auto* c) { return CallLookup(s, c, ok, "x=2", 0, big); },
                  StatusCode::INVALID_ARGUMENT,
                  "memory size '" + Excerpt80(big) + "' does not start with a number"});
  rows.push_back(
      {"Lookup 30 KB profile",
       [=](auto& s, auto* c) { return CallLookup(s, c, ok, "x=2", 0, "", big); },
       StatusCode::INVALID_ARGUMENT,
       "invalid hardware profile name \"" + Excerpt80(big) + "\": it has 30720 characters"});
  rows.push_back({"Lookup ranks out of range",
                  [=](auto& s, auto* c) { return CallLookup(s, c, ok, "", -5); },
                  StatusCode::INVALID_ARGUMENT, "ranks -5 is out of range: give 1 to 65536 ranks"});
  rows.push_back({"Lookup untuned",
                  [=](auto& s, auto* c) { return CallLookup(s, c, ok, "x=2", 0); },
                  StatusCode::NOT_FOUND,
                  "no tuning record for C[m,n] += A[m,k] * B[k,n] (m=64,n=64,k=64, f32) on x=2"});
  rows.push_back(
      {"ListRecords 30 KB page token",
       [=](auto& s, auto* c) {
         v1::ListRecordsRequest r;
         r.set_page_token(big);
         v1::ListRecordsResponse out;
         return s.ListRecords(c, r, &out);
       },
       StatusCode::INVALID_ARGUMENT,
       "page_token \"" + Excerpt80(big) + "\" is not a token that ListRecords returned"});
  rows.push_back({"ListRecords page size -1",
                  [=](auto& s, auto* c) {
                    v1::ListRecordsRequest r;
                    r.set_page_size(-1);
                    v1::ListRecordsResponse out;
                    return s.ListRecords(c, r, &out);
                  },
                  StatusCode::INVALID_ARGUMENT, "page_size -1 is out of range: 0 to 1000"});
  rows.push_back({"GetRecord unknown id",
                  [=](auto& s, auto* c) {
                    v1::GetRecordRequest r;
                    r.set_id(99);
                    v1::Record out;
                    return s.GetRecord(c, r, &out);
                  },
                  StatusCode::NOT_FOUND, "no tuning record with id 99"});
  auto tune = [&](v1::TuneRequest r, StatusCode code, const std::string& part,
                  const std::string& name) {
    rows.push_back({name, [r](auto& s, auto* c) { return CallTune(s, c, r); }, code, part});
  };
  v1::TuneRequest t;
  *t.mutable_problem() = ok;
  t.set_ranks(2);
  v1::TuneRequest nan_budget = t;
  nan_budget.set_budget_s(std::nan(""));
  tune(nan_budget, StatusCode::INVALID_ARGUMENT, "--budget-s nan is out of range",
       "Tune budget nan");
  v1::TuneRequest tiny_budget = t;
  tiny_budget.set_budget_s(1e-300);
  tune(tiny_budget, StatusCode::FAILED_PRECONDITION,
       "the time budget of 1e-300 s ran out before any schedule was evaluated",
       "Tune budget 1e-300");
  v1::TuneRequest both = t;
  both.mutable_mesh()->set_axes("x=2");
  tune(both, StatusCode::INVALID_ARGUMENT, "give exactly one of mesh (\"x=2\") and ranks (2)",
       "Tune mesh and ranks");
  v1::TuneRequest clash = t;
  clash.set_ranks(0);
  clash.mutable_mesh()->set_axes("k=2");
  tune(clash, StatusCode::INVALID_ARGUMENT, "mesh axis k has the same name as an index",
       "Tune mesh clash");
  // The mesh as values: checked as the text is.
  v1::TuneRequest zero_dim = t;
  zero_dim.set_ranks(0);
  v1::MeshAxis* axis = zero_dim.mutable_mesh()->add_dims();
  axis->set_name("x");
  axis->set_size(0);
  tune(zero_dim, StatusCode::INVALID_ARGUMENT, "mesh axis x has size 0; sizes must be at least 1",
       "Tune dims size 0");
  v1::TuneRequest bad_name = zero_dim;
  bad_name.mutable_mesh()->mutable_dims(0)->set_name(big);
  bad_name.mutable_mesh()->mutable_dims(0)->set_size(2);
  tune(bad_name, StatusCode::INVALID_ARGUMENT, "mesh is 30722 bytes long; the limit is 1024 bytes",
       "Tune dims 30 KB name");
  v1::TuneRequest spaced = bad_name;
  spaced.mutable_mesh()->mutable_dims(0)->set_name("x y");
  tune(spaced, StatusCode::INVALID_ARGUMENT, "mesh axis name x y is not an identifier (e.g. x)",
       "Tune dims name x y");
  v1::TuneRequest both_forms = zero_dim;
  both_forms.mutable_mesh()->mutable_dims(0)->set_size(2);
  both_forms.mutable_mesh()->set_axes("x=2");
  tune(both_forms, StatusCode::INVALID_ARGUMENT,
       "give the mesh's axes (\"x=2\") or its dims, not both", "Tune axes and dims");
  v1::TuneRequest huge_expr = t;
  huge_expr.mutable_problem()->set_expr(big);
  tune(huge_expr, StatusCode::INVALID_ARGUMENT, "expression is 30720 bytes long",
       "Tune 30 KB expression");
  v1::TuneRequest top_k = t;
  top_k.set_top_k(-1);
  tune(top_k, StatusCode::INVALID_ARGUMENT, "--top-k -1 is out of range: 0 to 1000",
       "Tune top_k -1");
  v1::TuneRequest evaluations = t;
  evaluations.set_max_evaluations(0);
  tune(evaluations, StatusCode::INVALID_ARGUMENT, "--max-evaluations 0 must be at least 1",
       "Tune max_evaluations 0");
  return rows;
}

// Live (not zombie) processes whose parent is this test, or whose command line mentions
// `marker`.
std::vector<std::string> LeftOver(const std::string& marker) {
  std::vector<std::string> out;
  const std::string self = std::to_string(getpid());
  DIR* proc = opendir("/proc");
  while (dirent* e = readdir(proc)) {
    if (std::atoi(e->d_name) <= 0 || std::to_string(std::atoi(e->d_name)) == self) continue;
    const std::string base = std::string("/proc/") + e->d_name;
    std::string cmd = ReadFile(base + "/cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    const std::string stat = ReadFile(base + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z') continue;
    const std::string rest = stat.substr(paren + 4);  // "PPID ..."
    const std::string ppid = rest.substr(0, rest.find(' '));
    if (ppid == self || cmd.find(marker) != std::string::npos)
      out.push_back(std::string(e->d_name) + " " + cmd.substr(0, 200));
  }
  closedir(proc);
  return out;
}

TEST(HostileInputTest, EveryRowIsRefusedWithAShortMessageAndNothingIsLeftBehind) {
  const auto start = std::chrono::steady_clock::now();
  // A database with one record, for the rows that read one.
  const std::string db = Dir("cache") + "/hostile.db";
  const ProcRun tuned = Exec("cli/meshtune", Cat(Cat({"tune"}, Problem("m=64,n=64,k=64", "x=2")),
                                                 {"--model-only", "--db", db, kModel[0], kModel[1],
                                                  kModel[2], kModel[3], kModel[4], kModel[5]}));
  ASSERT_EQ(tuned.status, 0) << tuned.err;
  std::ofstream(TestTmp() + "/batch_bad_json.jsonl") << "{not json\n";

  std::vector<CliRow> rows = NumericFlagRows();
  const size_t numeric = rows.size();
  for (CliRow& r : HugeStringRows(db)) rows.push_back(std::move(r));
  for (CliRow& r : CommandRows(db)) rows.push_back(std::move(r));
  for (CliRow& r : BatchRows(db)) rows.push_back(std::move(r));
  const size_t cli_rows = rows.size();
  for (const CliRow& row : rows) {
    Check(row.name, Exec(row.binary, row.args, row.in, row.out_path), row.expect);
  }
  // Nothing a read-only row ran created the mistyped database or its directories.
  struct stat st;
  EXPECT_NE(stat((Dir("cache") + "/nonexistent").c_str(), &st), 0);

  // The daemon.
  size_t grpc_rows = 0;
  {
    testing::MeshtunedProcess daemon(Dir("cache") + "/daemon.db", TestTmp() + "/meshtuned.err",
                                     Dir("home"));
    ASSERT_FALSE(daemon.address().empty()) << daemon.log();
    auto stub = v1::Tuner::NewStub(
        grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
    const std::vector<GrpcRow> grpc = GrpcRows(ReadFile(kSumma));
    grpc_rows = grpc.size();
    for (const GrpcRow& row : grpc) {
      SCOPED_TRACE(row.name);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      const grpc::Status s = row.call(*stub, &context);
      EXPECT_EQ(s.error_code(), row.code) << s.error_message().substr(0, 2000);
      EXPECT_TRUE(absl::StrContains(s.error_message(), row.part))
          << "expected a part: " << row.part << "\ngot: " << s.error_message().substr(0, 2000);
      EXPECT_LE(s.error_message().size(), row.max_len) << s.error_message().substr(0, 2000);
    }
    EXPECT_EQ(daemon.Stop(SIGTERM, 30), 0) << daemon.log();
  }

  const size_t total = cli_rows + grpc_rows;
  std::cerr << total << " rows: " << numeric << " numeric-flag rows, " << cli_rows - numeric
            << " other command-line and batch rows, " << grpc_rows << " gRPC rows, in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
            << " s\n";
  EXPECT_GE(total, 150u);

  // Nothing left: no child of this test, nothing that mentions its directories (workers,
  // mpirun, a daemon), no temporary file.
  std::vector<std::string> left;
  for (int i = 0; i < 50; ++i) {
    left = LeftOver(TestTmp());
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(left.empty()) << absl::StrJoin(left, "\n");
  std::vector<std::string> temp_files;
  DIR* tmp = opendir(Dir("tmp").c_str());
  while (dirent* e = readdir(tmp)) {
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
      temp_files.push_back(e->d_name);
  }
  closedir(tmp);
  EXPECT_TRUE(temp_files.empty()) << absl::StrJoin(temp_files, ", ");
}

}  // namespace
}  // namespace meshtune
