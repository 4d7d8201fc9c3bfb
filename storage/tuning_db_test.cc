// The tuning database: workloads and their fingerprints, trace translation between a
// requester's names and canonical ones, and the same behaviour from the SQLite and the
// in-memory database; then what only the SQLite file does (persistence, schema versions,
// errors naming the path, sharing between connections).
#include "storage/tuning_db.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "ir/computation.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/program_trace.h"
#include "ir/statement_program.h"
#include "ir/trace.h"
#include "storage/workload.h"

namespace meshtune::storage {
namespace {

constexpr char kMatmul[] = "C[m,n] += A[m,k] * B[k,n]";
constexpr char kMatmulExtents[] = "m=64,n=32,k=16";
constexpr char kRenamed[] = "Out[i,j] += X[i,l] * Y[l,j]";
constexpr char kRenamedExtents[] = "i=64,j=32,l=16";

// PUMMA on the matmul's names, 2x2.
constexpr char kPumma[] =
    "distribute([m,n], [mo,no], [mi,ni], [x,y])\n"
    "divide(k, ko, ki, 2)\n"
    "reorder(mo, no, ko, mi, ni, ki)\n"
    "shard(A, m@x, k@y)\n"
    "shard(B, k@x, n@y)\n"
    "shard(C, m@x, n@y)\n"
    "communicate(A, ko, rotate=[no])\n"
    "communicate(B, ko)\n"
    "tensorize([mi, ni, ki], matmul)\n";

// kPumma in canonical names: the matmul's loops start k, m, n (sorted names), the
// canonical problem's i0, i1, i2, so a reorder restores the order first.
constexpr char kPummaCanonical[] =
    "reorder(i2, i0, i1)\n"
    "distribute([i0,i1], [mo,no], [mi,ni], [x,y])\n"
    "divide(i2, ko, ki, 2)\n"
    "reorder(mo, no, ko, mi, ni, ki)\n"
    "shard(T1, i0@x, i2@y)\n"
    "shard(T2, i2@x, i1@y)\n"
    "shard(T0, i0@x, i1@y)\n"
    "communicate(T1, ko, rotate=[no])\n"
    "communicate(T2, ko)\n"
    "tensorize([mi, ni, ki], matmul)\n";

// kPumma for kRenamed: its loops start i, j, l; the matmul's started k, m, n = l, i, j.
constexpr char kPummaRenamed[] =
    "reorder(l, i, j)\n"
    "distribute([i,j], [mo,no], [mi,ni], [x,y])\n"
    "divide(l, ko, ki, 2)\n"
    "reorder(mo, no, ko, mi, ni, ki)\n"
    "shard(X, i@x, l@y)\n"
    "shard(Y, l@x, j@y)\n"
    "shard(Out, i@x, j@y)\n"
    "communicate(X, ko, rotate=[no])\n"
    "communicate(Y, ko)\n"
    "tensorize([mi, ni, ki], matmul)\n";

ir::Problem MakeProblem(const std::string& expr, const std::string& extents,
                        const std::string& dtype = "f32") {
  absl::StatusOr<ir::Problem> p = ir::ParseProblem(expr, extents, dtype);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

Workload MakeW(const std::string& expr = kMatmul, const std::string& extents = kMatmulExtents,
               const std::string& mesh = "x=2,y=2", const std::string& profile = "default",
               const std::string& dtype = "f32") {
  absl::StatusOr<Workload> w = ReadWorkload(MakeProblem(expr, extents, dtype), mesh, profile);
  EXPECT_TRUE(w.ok()) << w.status();
  return *w;
}

TuningRecord Rec(double predicted, std::optional<double> measured = std::nullopt,
                 bool verified = false) {
  TuningRecord r;
  r.trace = kPummaCanonical;
  r.predicted_s = predicted;
  r.measured_s = measured;
  r.verified = verified;
  r.patterns = {"T1: Shift(y, +1)", "T2: Broadcast(x)"};
  return r;
}

std::string TmpDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp != nullptr ? tmp : "/tmp";
}

// A per-test path in a directory that does not exist yet.
std::string FreshDbPath() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = absl::StrCat(info->test_suite_name(), "_", info->name());
  absl::StrReplaceAll({{"/", "_"}}, &name);
  return absl::StrCat(TmpDir(), "/", name, "/cache/meshtune/tuning.db");
}

// The first column of the first row of `sql` on the SQLite file `path`.
std::string QueryText(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK) << path;
  sqlite3_stmt* s = nullptr;
  std::string out = "<no row>";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW) {
    out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

void ExecSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

// The loops after replaying `trace` on `expr` over mesh x=2,y=2, as "name:extent:kind:axis".
std::vector<std::string> ReplayedLoops(const std::string& expr, const std::string& extents,
                                       const std::string& trace) {
  absl::StatusOr<ir::Mesh> mesh = ir::ParseMesh("x=2,y=2");
  absl::StatusOr<ir::Computation> base = ir::Computation::Create(MakeProblem(expr, extents), *mesh);
  EXPECT_TRUE(base.ok()) << base.status();
  absl::StatusOr<ir::Trace> parsed = ir::ParseTrace(trace);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  const ir::Replay replay = ir::ReplayTrace(*base, *parsed);
  EXPECT_TRUE(replay.status.ok()) << replay.status;
  std::vector<std::string> out;
  for (const ir::Loop& loop : replay.computation.loops()) {
    out.push_back(absl::StrCat(loop.name, ":", loop.extent, ":", static_cast<int>(loop.kind), ":",
                               loop.axis));
  }
  return out;
}

// ---- Workloads ----

TEST(WorkloadTest, CanonicalTextAndNames) {
  const Workload w = MakeW();
  EXPECT_EQ(w.expr, "T0[i0,i1] += T1[i0,i2] * T2[i2,i1]");
  EXPECT_EQ(w.extents, "i0=64,i1=32,i2=16");
  EXPECT_EQ(w.dtype, "f32");
  EXPECT_EQ(w.MeshText(), "x=2,y=2");
  EXPECT_EQ(w.profile, "default");
  EXPECT_EQ(w.canonical,
            "expr: T0[i0,i1] += T1[i0,i2] * T2[i2,i1]\nextents: i0=64,i1=32,i2=16\ndtype: f32\n"
            "mesh: x=2,y=2\nprofile: default\n");
  // sha256sum of the canonical text: stable across runs, builds and machines.
  EXPECT_EQ(w.fingerprint, "ae9006818447605a6cbfafa8cf303df577e657b2b1bc6744c84fb5bfbf1f1d23");
  EXPECT_EQ(w.index_names, (std::vector<std::string>{"m", "n", "k"}));
  EXPECT_EQ(w.tensor_names, (std::vector<std::string>{"C", "A", "B"}));
  EXPECT_FALSE(w.IsRankCount());
}

TEST(WorkloadTest, RenamedProblemHasTheSameFingerprint) {
  const Workload a = MakeW(), b = MakeW(kRenamed, kRenamedExtents);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  EXPECT_EQ(a.canonical, b.canonical);
  EXPECT_EQ(b.index_names, (std::vector<std::string>{"i", "j", "l"}));
  EXPECT_EQ(b.tensor_names, (std::vector<std::string>{"Out", "X", "Y"}));
  // Spelling of the mesh does not matter either.
  EXPECT_EQ(MakeW(kMatmul, kMatmulExtents, "x=2 y=2").fingerprint, a.fingerprint);
}

TEST(WorkloadTest, EveryPartOfTheIdentityChangesTheFingerprint) {
  const Workload base = MakeW();
  const std::vector<Workload> others = {
      MakeW(kMatmul, "m=64,n=32,k=32"),  // extents
      MakeW(kMatmul, "m=32,n=64,k=16"),  // extents swapped between indices
      MakeW(kMatmul, kMatmulExtents, "x=2,y=2", "default", "f64"),  // dtype
      MakeW(kMatmul, kMatmulExtents, "x=4"),                        // mesh
      MakeW(kMatmul, kMatmulExtents, "y=2,x=2"),                    // axis order
      MakeW(kMatmul, kMatmulExtents, "a=2,b=2"),                    // axis names (traces name axes)
      MakeW(kMatmul, kMatmulExtents, "ranks=4"),                    // a rank count
      MakeW(kMatmul, kMatmulExtents, "x=2,y=2", "other"),           // profile
      MakeW(kMatmul, kMatmulExtents, "x=2,y=2", ""),                // no profile
      MakeW("C[m,n] = A[m,k] * B[k,n]", kMatmulExtents),            // '=' instead of '+='
      MakeW("C[m,n] += A[k,m] * B[k,n]", kMatmulExtents),           // transposed A
  };
  std::set<std::string> fingerprints = {base.fingerprint};
  for (const Workload& w : others) {
    EXPECT_TRUE(fingerprints.insert(w.fingerprint).second) << w.canonical;
  }
}

TEST(WorkloadTest, RankCountMesh) {
  const Workload w = MakeW(kMatmul, kMatmulExtents, "ranks = 4");
  EXPECT_EQ(w.MeshText(), "ranks=4");
  EXPECT_TRUE(w.IsRankCount());
  EXPECT_EQ(w.ranks, 4);
  EXPECT_TRUE(w.mesh.axes.empty());
  // The same workload from the values: a rank count, not a mesh named "ranks".
  absl::StatusOr<Workload> from_values =
      MakeWorkload(MakeProblem(kMatmul, kMatmulExtents), int64_t{4}, "default");
  ASSERT_TRUE(from_values.ok()) << from_values.status();
  EXPECT_EQ(from_values->fingerprint, w.fingerprint);
  EXPECT_EQ(
      MakeWorkload(MakeProblem(kMatmul, kMatmulExtents), int64_t{0}, "default").status().message(),
      "ranks 0 is out of range: give 1 to 65536 ranks");
}

TEST(WorkloadTest, BadMeshOrProfileIsInvalidArgument) {
  const ir::Problem p = MakeProblem(kMatmul, kMatmulExtents);
  absl::StatusOr<Workload> w = ReadWorkload(p, "x=0", "default");
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  w = ReadWorkload(p, "ranks=4,y=2", "default");
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w.status().message(),
            "mesh \"ranks=4,y=2\": ranks=N gives a rank count and stands alone; 'ranks' is not a "
            "mesh axis name");
  w = ReadWorkload(p, "x=2", "a/b");
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(w.status().message().find("a/b"), absl::string_view::npos) << w.status();
}

// ---- Trace translation ----

TEST(RenameTraceTest, WholeIdentifiersOnly) {
  absl::StatusOr<std::string> t =
      RenameTrace("divide(m, mo, mi, 2)\nreorder(mo, n, mi)\n", {{"m", "row"}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, "divide(row, mo, mi, 2)\nreorder(mo, n, mi)\n");
}

TEST(RenameTraceTest, SwapsAtOnceAndLeavesAxesAndKernels) {
  absl::StatusOr<std::string> t = RenameTrace(
      "distribute([m], [mo], [mi], [x])\nshard(A, m@(x+1)%2)\ntensorize([mi, n], matmul)\n",
      {{"m", "n"}, {"n", "m"}, {"A", "matmul"}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(
      *t,
      "distribute([n], [mo], [mi], [x])\nshard(matmul, n@(x+1)%2)\ntensorize([mi, m], matmul)\n");
}

TEST(RenameTraceTest, TraceLocalNameInTheWayIsRenamedToo) {
  // The requester's index `mo` meets the loop `mo` the trace creates; `mo_` is taken too.
  absl::StatusOr<std::string> t =
      RenameTrace("divide(i0, mo, mo_, 2)\nreorder(mo, mo_)\n", {{"i0", "mo"}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, "divide(mo, mo__, mo_, 2)\nreorder(mo__, mo_)\n");
  // A target is in the way even when the trace does not name its key: every index is a loop.
  t = RenameTrace("divide(i2, mo, mi, 2)\n", {{"i0", "mo"}, {"i2", "k"}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, "divide(k, mo_, mi, 2)\n");
}

TEST(RenameTraceTest, Errors) {
  absl::StatusOr<std::string> t = RenameTrace("divide(m, mo, mi)\n", {});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("trace line 1"), absl::string_view::npos) << t.status();
  t = RenameTrace("distribute([m], [mo], [mi], [x])\n", {{"m", "x"}});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(), "cannot rename m to x in the trace: x is a mesh axis there");
}

TEST(CanonicalTraceTest, ToAndFromCanonicalNames) {
  const Workload a = MakeW(), b = MakeW(kRenamed, kRenamedExtents);
  absl::StatusOr<std::string> canonical = ToCanonicalTrace(a, kPumma);
  ASSERT_TRUE(canonical.ok()) << canonical.status();
  EXPECT_EQ(*canonical, kPummaCanonical);
  absl::StatusOr<std::string> back = FromCanonicalTrace(a, *canonical);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, kPumma);  // the restoring reorder cancels out
  absl::StatusOr<std::string> renamed = FromCanonicalTrace(b, *canonical);
  ASSERT_TRUE(renamed.ok()) << renamed.status();
  EXPECT_EQ(*renamed, kPummaRenamed);
  absl::StatusOr<std::string> again = ToCanonicalTrace(b, *renamed);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, kPummaCanonical);
}

TEST(CanonicalTraceTest, PrefetchSurvivesTheTranslation) {
  const Workload a = MakeW(), b = MakeW(kRenamed, kRenamedExtents);
  std::string trace = kPumma;
  const size_t at = trace.find("communicate(A, ko, rotate=[no])");
  ASSERT_NE(at, std::string::npos) << trace;
  trace.replace(at, 31, "communicate(A, ko, rotate=[no], prefetch=1)");
  absl::StatusOr<std::string> canonical = ToCanonicalTrace(a, trace);
  ASSERT_TRUE(canonical.ok()) << canonical.status();
  EXPECT_NE(canonical->find(", prefetch=1)"), std::string::npos) << *canonical;
  absl::StatusOr<std::string> back = FromCanonicalTrace(a, *canonical);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, trace);
  absl::StatusOr<std::string> renamed = FromCanonicalTrace(b, *canonical);
  ASSERT_TRUE(renamed.ok()) << renamed.status();
  EXPECT_NE(renamed->find(", prefetch=1)"), std::string::npos) << *renamed;
}

TEST(CanonicalTraceTest, TranslatedTraceIsTheSameSchedule) {
  const Workload a = MakeW(), b = MakeW(kRenamed, kRenamedExtents);
  // Without a full reorder the starting loop order shows: k m n for one, i j l the other.
  for (const std::string& trace : {std::string(kPumma), std::string("divide(k, ko, ki, 2)\n")}) {
    absl::StatusOr<std::string> canonical = ToCanonicalTrace(a, trace);
    ASSERT_TRUE(canonical.ok()) << canonical.status();
    absl::StatusOr<std::string> renamed = FromCanonicalTrace(b, *canonical);
    ASSERT_TRUE(renamed.ok()) << renamed.status();
    std::vector<std::string> expected = ReplayedLoops(kMatmul, kMatmulExtents, trace);
    for (std::string& loop : expected) {
      const std::string name = loop.substr(0, loop.find(':'));
      const std::map<std::string, std::string> rename = {{"m", "i"}, {"n", "j"}, {"k", "l"}};
      if (rename.count(name) > 0) loop = rename.at(name) + loop.substr(name.size());
    }
    EXPECT_EQ(ReplayedLoops(kRenamed, kRenamedExtents, *renamed), expected) << *renamed;
  }
}

TEST(CanonicalTraceTest, RequesterIndexNamedLikeATraceLoop) {
  const char* expr = "C[mo,n] += A[mo,k] * B[k,n]";
  const char* extents = "mo=64,n=32,k=16";
  const Workload w = MakeW(expr, extents);
  EXPECT_EQ(w.fingerprint, MakeW().fingerprint);
  absl::StatusOr<std::string> t = FromCanonicalTrace(w, kPummaCanonical);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t,
            "distribute([mo,n], [mo_,no], [mi,ni], [x,y])\n"
            "divide(k, ko, ki, 2)\n"
            "reorder(mo_, no, ko, mi, ni, ki)\n"
            "shard(A, mo@x, k@y)\n"
            "shard(B, k@x, n@y)\n"
            "shard(C, mo@x, n@y)\n"
            "communicate(A, ko, rotate=[no])\n"
            "communicate(B, ko)\n"
            "tensorize([mi, ni, ki], matmul)\n");
  EXPECT_EQ(ReplayedLoops(expr, extents, *t).size(), 6u);
}

// ---- Both databases ----

class TuningDbTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { db_ = Open(); }
  std::unique_ptr<TuningDb> Open() {
    if (GetParam() == "memory") return NewInMemoryTuningDb();
    if (path_.empty()) path_ = FreshDbPath();
    absl::StatusOr<std::unique_ptr<TuningDb>> db = OpenSqliteTuningDb(path_);
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? std::move(*db) : nullptr;
  }
  int64_t Add(const Workload& w, TuningRecord r) {
    absl::StatusOr<int64_t> id = db_->Add(w, std::move(r));
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : -1;
  }
  std::vector<int64_t> Ids(const std::string& fingerprint, int limit, int64_t after) {
    absl::StatusOr<std::vector<TuningRecord>> list = db_->List(fingerprint, limit, after);
    EXPECT_TRUE(list.ok()) << list.status();
    std::vector<int64_t> ids;
    if (list.ok()) {
      for (const TuningRecord& r : *list) ids.push_back(r.id);
    }
    return ids;
  }
  int64_t BestId(const std::string& fingerprint) {
    absl::StatusOr<std::optional<TuningRecord>> best = db_->Best(fingerprint);
    EXPECT_TRUE(best.ok()) << best.status();
    return best.ok() && best->has_value() ? (*best)->id : 0;
  }

  std::string path_;
  std::unique_ptr<TuningDb> db_;
};

TEST(TimingTest, NamesAndTheirParse) {
  EXPECT_EQ(TimingName(Timing::kNone), "");
  EXPECT_EQ(TimingName(Timing::kPaced), "paced");
  EXPECT_EQ(TimingName(Timing::kMeasured), "measured");
  for (Timing t : {Timing::kNone, Timing::kPaced, Timing::kMeasured})
    EXPECT_EQ(*ParseTiming(TimingName(t)), t);
  EXPECT_EQ(ParseTiming("scaled").status().message(),
            "timing \"scaled\" is not \"measured\", \"paced\" or empty");
  EXPECT_EQ(ParseTiming("scaled").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BetterRecordTest, VerifiedThenCheckedThenMeasuredBeforePacedThenTimeThenId) {
  auto rec = [](int64_t id, bool verified, const std::string& checked, Timing timing,
                double measured, double predicted) {
    TuningRecord r;
    r.id = id;
    r.verified = verified;
    r.checked = checked;
    r.timing = timing;
    if (verified || timing != Timing::kNone) r.measured_s = measured;
    r.predicted_s = predicted;
    return r;
  };
  const TuningRecord paced_fast = rec(1, true, "measured", Timing::kPaced, 0.001, 0.1);
  const TuningRecord measured_slow = rec(2, true, "measured", Timing::kMeasured, 0.5, 0.1);
  const TuningRecord measured_fast = rec(3, true, "measured", Timing::kMeasured, 0.4, 0.1);
  const TuningRecord unchecked = rec(4, true, "", Timing::kMeasured, 0.0001, 0.1);
  const TuningRecord unverified = rec(5, false, "simulated", Timing::kNone, 0, 0.0001);
  EXPECT_TRUE(BetterRecord(measured_slow, paced_fast));
  EXPECT_FALSE(BetterRecord(paced_fast, measured_slow));
  EXPECT_TRUE(BetterRecord(measured_fast, measured_slow));
  EXPECT_TRUE(BetterRecord(paced_fast, unchecked));   // checked first
  EXPECT_TRUE(BetterRecord(paced_fast, unverified));  // verified first
  // Among unverified records timing does not rank: their predictions do.
  const TuningRecord unverified_paced = rec(6, false, "simulated", Timing::kPaced, 0.01, 0.2);
  const TuningRecord unverified_measured = rec(7, false, "simulated", Timing::kMeasured, 0.01, 0.3);
  EXPECT_TRUE(BetterRecord(unverified_paced, unverified_measured));
  // Equal in everything but the id: the lower id.
  const TuningRecord twin = rec(8, true, "measured", Timing::kMeasured, 0.4, 0.1);
  EXPECT_TRUE(BetterRecord(measured_fast, twin));
  EXPECT_FALSE(BetterRecord(twin, measured_fast));
}

TEST_P(TuningDbTest, AddGetBestList) {
  const Workload w = MakeW();
  EXPECT_FALSE(db_->Best(w.fingerprint)->has_value());
  EXPECT_FALSE(db_->Get(1)->has_value());
  EXPECT_TRUE(db_->List("", 10, 0)->empty());

  TuningRecord r = Rec(0.5, 0.75, true);
  r.created_unix_ms = 1700000000123;
  EXPECT_EQ(Add(w, r), 1);
  TuningRecord unmeasured = Rec(0.25);
  unmeasured.patterns.clear();
  unmeasured.tuner_version = "meshtune 0.3";
  EXPECT_EQ(Add(w, unmeasured), 2);

  absl::StatusOr<std::optional<TuningRecord>> got = db_->Get(1);
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
  const TuningRecord& g = **got;
  EXPECT_EQ(g.id, 1);
  EXPECT_EQ(g.fingerprint, w.fingerprint);
  EXPECT_EQ(g.canonical_workload, w.canonical);
  EXPECT_EQ(g.trace, kPummaCanonical);
  EXPECT_EQ(g.mesh, "x=2,y=2");  // the workload's when left empty
  EXPECT_EQ(g.predicted_s, 0.5);
  EXPECT_EQ(g.measured_s, 0.75);
  EXPECT_TRUE(g.verified);
  EXPECT_EQ(g.patterns, r.patterns);
  EXPECT_EQ(g.tuner_version, kTunerVersion);
  EXPECT_EQ(g.created_unix_ms, 1700000000123);
  EXPECT_EQ(g.timing, Timing::kMeasured);  // filled in: a new record's time is measured

  got = db_->Get(2);
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
  EXPECT_EQ((*got)->measured_s, std::nullopt);
  EXPECT_FALSE((*got)->verified);
  EXPECT_TRUE((*got)->patterns.empty());
  EXPECT_EQ((*got)->tuner_version, "meshtune 0.3");
  EXPECT_GT((*got)->created_unix_ms, 1700000000000);  // now

  EXPECT_EQ(BestId(w.fingerprint), 1);  // verified beats the faster prediction
  EXPECT_EQ(Ids("", 10, 0), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Ids(w.fingerprint, 10, 0), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(Ids("no such fingerprint", 10, 0).empty());
  EXPECT_FALSE(db_->Get(3)->has_value());
  EXPECT_FALSE(db_->Get(-1)->has_value());
}

TEST_P(TuningDbTest, SummaryIsKeptWithItsRecord) {
  const Workload w = MakeW();
  TuningRecord with = Rec(0.3);
  with.summary = std::string("\x08\x01\x00binary\xff", 10);
  const int64_t a = Add(w, with);
  const int64_t b = Add(w, Rec(0.2));
  EXPECT_EQ((*db_->Get(a))->summary, with.summary);
  EXPECT_EQ((*db_->Get(b))->summary, "");
  absl::StatusOr<std::vector<TuningRecord>> list = db_->List(w.fingerprint, 10, 0);
  ASSERT_TRUE(list.ok() && list->size() == 2) << list.status();
  EXPECT_EQ((*list)[0].summary, with.summary);
  EXPECT_EQ((*db_->Best(w.fingerprint))->summary, "");  // record b, the faster
}

TEST_P(TuningDbTest, LibraryIsKeptWithItsRecordAndRanksByItsTime) {
  const Workload w = MakeW();
  // The library measured 0.1 s; the fastest schedule was predicted 0.3 s.
  TuningRecord library = Rec(0.3, 0.1, true);
  library.library = std::string("\x0a\x06PSGEMM\x10\x02\x00", 11);
  const int64_t a = Add(w, library);
  const int64_t b = Add(w, Rec(0.2, 0.2, true));
  EXPECT_EQ((*db_->Get(a))->library, library.library);
  EXPECT_EQ((*db_->Get(b))->library, "");
  absl::StatusOr<std::vector<TuningRecord>> list = db_->List(w.fingerprint, 10, 0);
  ASSERT_TRUE(list.ok() && list->size() == 2) << list.status();
  EXPECT_EQ((*list)[0].library, library.library);
  EXPECT_EQ((*db_->Best(w.fingerprint))->id, a);  // 0.1 s measured beats 0.2
}

TEST_P(TuningDbTest, RunsAreKeptAndListedByProfile) {
  StoredRun a;
  a.profile = "auto-4";
  a.machine = "0123456789abcdef";
  a.run = std::string("\x0a\x00run a\xff", 9);
  StoredRun b = a;
  b.profile = "";
  b.run = "run b";
  b.created_unix_ms = 1700000000000;
  const absl::StatusOr<int64_t> ia = db_->AddRun(a), ib = db_->AddRun(b), ic = db_->AddRun(a);
  ASSERT_TRUE(ia.ok() && ib.ok() && ic.ok()) << ia.status() << ib.status() << ic.status();
  EXPECT_LT(*ia, *ib);
  EXPECT_LT(*ib, *ic);
  absl::StatusOr<std::vector<StoredRun>> all = db_->ListRuns(std::nullopt, 10, 0);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].run, a.run);
  EXPECT_EQ((*all)[0].machine, a.machine);
  EXPECT_GT((*all)[0].created_unix_ms, 1700000000000);  // filled in: now
  EXPECT_EQ((*all)[1].created_unix_ms, 1700000000000);
  absl::StatusOr<std::vector<StoredRun>> auto4 = db_->ListRuns(std::string("auto-4"), 10, 0);
  ASSERT_TRUE(auto4.ok()) << auto4.status();
  ASSERT_EQ(auto4->size(), 2u);
  EXPECT_EQ((*auto4)[1].id, *ic);
  absl::StatusOr<std::vector<StoredRun>> builtin = db_->ListRuns(std::string(""), 10, 0);
  ASSERT_TRUE(builtin.ok() && builtin->size() == 1u) << builtin.status();
  EXPECT_EQ((*builtin)[0].run, "run b");
  absl::StatusOr<std::vector<StoredRun>> page = db_->ListRuns(std::nullopt, 1, *ia);
  ASSERT_TRUE(page.ok() && page->size() == 1u);
  EXPECT_EQ((*page)[0].id, *ib);
  EXPECT_EQ(db_->AddRun(StoredRun{}).status().message(), "a measured run must not be empty");
  EXPECT_FALSE(db_->ListRuns(std::nullopt, 0, 0).ok());
}

TEST_P(TuningDbTest, GenerationMovesWithEveryAdd) {
  const absl::StatusOr<int64_t> g0 = db_->Generation();
  ASSERT_TRUE(g0.ok()) << g0.status();
  EXPECT_EQ(*db_->Generation(), *g0);  // reading changes nothing
  Add(MakeW(), Rec(0.5));
  const absl::StatusOr<int64_t> g1 = db_->Generation();
  ASSERT_TRUE(g1.ok()) << g1.status();
  EXPECT_NE(*g1, *g0);
  db_->Best(MakeW().fingerprint).IgnoreError();
  EXPECT_EQ(*db_->Generation(), *g1);
}

TEST_P(TuningDbTest, Pagination) {
  const Workload a = MakeW(), b = MakeW(kMatmul, "m=8,n=8,k=8");
  std::vector<int64_t> of_a, of_b;
  for (int i = 0; i < 7; ++i) {
    (i % 3 == 2 ? of_b : of_a).push_back(Add(i % 3 == 2 ? b : a, Rec(1.0 + i)));
  }
  EXPECT_EQ(of_a, (std::vector<int64_t>{1, 2, 4, 5, 7}));
  EXPECT_EQ(of_b, (std::vector<int64_t>{3, 6}));
  EXPECT_EQ(Ids(a.fingerprint, 2, 0), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Ids(a.fingerprint, 2, 2), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(Ids(a.fingerprint, 2, 5), (std::vector<int64_t>{7}));
  EXPECT_TRUE(Ids(a.fingerprint, 2, 7).empty());
  EXPECT_EQ(Ids(b.fingerprint, 10, 3), (std::vector<int64_t>{6}));
  EXPECT_EQ(Ids("", 3, 0), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(Ids("", 3, 3), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(Ids("", 3, 6), (std::vector<int64_t>{7}));
  EXPECT_EQ(Ids("", 1 << 30, 0).size(), 7u);  // a huge limit is lowered, not an error
  EXPECT_EQ(BestId(a.fingerprint), 1);
  EXPECT_EQ(BestId(b.fingerprint), 3);

  absl::StatusOr<std::vector<TuningRecord>> bad = db_->List("", 0, 0);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      bad.status().message(),
      "listing tuning records: limit is 0 and after_id 0; limit must be >= 1 and after_id >= 0");
  EXPECT_EQ(db_->List("", 5, -1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(TuningDbTest, BestPrefersVerifiedFastest) {
  const Workload w = MakeW();
  const int64_t predicted_fast = Add(w, Rec(0.1));
  EXPECT_EQ(BestId(w.fingerprint), predicted_fast);
  const int64_t predicted_faster = Add(w, Rec(0.05));
  EXPECT_EQ(BestId(w.fingerprint), predicted_faster);
  // A measured run that failed verification ranks by its prediction, like any unverified.
  Add(w, Rec(0.2, 0.001, false));
  EXPECT_EQ(BestId(w.fingerprint), predicted_faster);
  const int64_t verified_slow = Add(w, Rec(0.3, 0.5, true));
  EXPECT_EQ(BestId(w.fingerprint), verified_slow);
  Add(w, Rec(0.01));  // a faster prediction does not beat a verified run
  EXPECT_EQ(BestId(w.fingerprint), verified_slow);
  const int64_t verified_fast = Add(w, Rec(0.9, 0.4, true));
  EXPECT_EQ(BestId(w.fingerprint), verified_fast);
  Add(w, Rec(0.01, 0.4, true));  // a tie keeps the earlier record
  EXPECT_EQ(BestId(w.fingerprint), verified_fast);
  Add(w, Rec(0.01, 0.45, true));
  EXPECT_EQ(BestId(w.fingerprint), verified_fast);
  absl::StatusOr<std::optional<TuningRecord>> best = db_->Best(w.fingerprint);
  ASSERT_TRUE(best.ok() && best->has_value());
  EXPECT_EQ((*best)->measured_s, 0.4);
  EXPECT_EQ((*best)->predicted_s, 0.9);
}

TEST_P(TuningDbTest, RenamedProblemReadsTheRecordInItsOwnNames) {
  const Workload a = MakeW(), b = MakeW(kRenamed, kRenamedExtents);
  TuningRecord r = Rec(0.5, 0.6, true);
  absl::StatusOr<std::string> canonical = ToCanonicalTrace(a, kPumma);
  ASSERT_TRUE(canonical.ok()) << canonical.status();
  r.trace = *canonical;
  const int64_t id = Add(a, r);
  absl::StatusOr<std::optional<TuningRecord>> best = db_->Best(b.fingerprint);
  ASSERT_TRUE(best.ok() && best->has_value()) << best.status();
  EXPECT_EQ((*best)->id, id);
  absl::StatusOr<std::string> trace = FromCanonicalTrace(b, (*best)->trace);
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(*trace, kPummaRenamed);
  // Both spellings add to one workload.
  Add(b, Rec(0.4, 0.45, true));
  EXPECT_EQ(Ids(a.fingerprint, 10, 0), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(BestId(a.fingerprint), 2);
}

// A program of statements is one workload whatever its names: the renamed program finds
// the record, each statement's trace written in its names; a program's record holds one
// trace per statement, and one statement alone is the statement's workload.
TEST_P(TuningDbTest, ProgramsAreWorkloadsUpToRenamingWithATracePerStatement) {
  const ir::Mesh mesh = *ir::ParseMesh("x=2");
  const ir::StatementProgram mlp = *ir::ParseStatementProgram(
      "H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]", "b=8,d=4,f=16,e=4", "f32");
  const ir::StatementProgram renamed = *ir::ParseStatementProgram(
      "G[r,c] = In[r,k] * P[k,c]\nOut[r,o] = G[r,c] * Q[c,o]", "r=8,k=4,c=16,o=4", "f32");
  const Workload a = *MakeWorkload(mlp, mesh, "default");
  const Workload b = *MakeWorkload(renamed, mesh, "default");
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  EXPECT_EQ(a.expr, "T0[i0,i1] = T1[i0,i2] * T2[i2,i1]; T3[i0,i3] = T0[i0,i1] * T4[i1,i3]");
  EXPECT_EQ(a.extents, "i0=8,i1=16,i2=4,i3=4");
  const Workload other = *MakeWorkload(
      *ir::ParseStatementProgram("H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]",
                                 "b=8,d=4,f=16,e=8", "f32"),
      mesh, "default");
  EXPECT_NE(other.fingerprint, a.fingerprint);
  const ir::StatementProgram one = *ir::ParseStatementProgram(kMatmul, kMatmulExtents, "f32");
  EXPECT_EQ(MakeWorkload(one, mesh, "default")->fingerprint,
            MakeWorkload(one.statements[0], mesh, "default")->fingerprint);

  const std::string trace =
      "distribute([f], [fo], [fi], [x])\nshard(H, f@x)\nshard(W1, f@x)\n---\n"
      "distribute([f], [fo], [fi], [x])\nshard(H, f@x)\nshard(W2, f@x)\ncommunicate(Y, fo)\n";
  TuningRecord r = Rec(0.5, 0.6, true);
  absl::StatusOr<std::string> canonical = ToCanonicalTrace(a, trace);
  ASSERT_TRUE(canonical.ok()) << canonical.status();
  r.trace = *canonical;
  const int64_t id = Add(a, r);
  absl::StatusOr<std::optional<TuningRecord>> best = db_->Best(b.fingerprint);
  ASSERT_TRUE(best.ok() && best->has_value()) << best.status();
  EXPECT_EQ((*best)->id, id);
  absl::StatusOr<std::string> theirs = FromCanonicalTrace(b, (*best)->trace);
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  EXPECT_EQ(*theirs,
            // Each statement's loops start as the tuner's did (b, d, f is r, k, c here).
            "# statement 1: G[r,c] = In[r,k] * P[k,c]\nreorder(r, k, c)\n"
            "distribute([c], [fo], [fi], [x])\nshard(G, c@x)\nshard(P, c@x)\n---\n"
            "# statement 2: Out[r,o] = G[r,c] * Q[c,o]\nreorder(r, o, c)\n"
            "distribute([c], [fo], [fi], [x])\nshard(G, c@x)\nshard(Q, c@x)\n"
            "communicate(Out, fo)\n");
  // Back in the tuner's names, the same trace.
  absl::StatusOr<std::string> ours = FromCanonicalTrace(a, (*best)->trace);
  ASSERT_TRUE(ours.ok()) << ours.status();
  const std::vector<ir::Trace> got = *ir::ParseProgramTrace(*ours, 2);
  const std::vector<ir::Trace> want = *ir::ParseProgramTrace(trace, 2);
  for (int s = 0; s < 2; ++s) EXPECT_EQ(got[s].ToString(), want[s].ToString());

  TuningRecord one_part = Rec(0.5, 0.6, true);
  one_part.trace = "distribute([i1], [o], [n], [x])\n";
  EXPECT_EQ(db_->Add(a, one_part).status().message(),
            "tuning record: the trace has 1 part but the program has 2 statements; separate "
            "the statements' traces with lines ---");
}

TEST_P(TuningDbTest, RankCountWorkloadsKeepTheChosenMesh) {
  const Workload w = MakeW(kMatmul, kMatmulExtents, "ranks=4");
  TuningRecord r = Rec(0.5);
  EXPECT_EQ(db_->Add(w, r).status().message(),
            "tuning record: mesh is empty; a record of a ranks=4 workload names the mesh it chose");
  r.mesh = "x=8";
  EXPECT_EQ(db_->Add(w, r).status().message(),
            "tuning record: mesh x=8 has 8 ranks, not the workload's ranks=4");
  r.mesh = "x=2 y=2";
  const int64_t id = Add(w, r);
  EXPECT_EQ((*db_->Get(id))->mesh, "x=2,y=2");
  r.mesh = "x=4";
  EXPECT_EQ((*db_->Get(Add(w, r)))->mesh, "x=4");
}

TEST_P(TuningDbTest, BadRecordsAreRejectedAndNothingIsStored) {
  const Workload w = MakeW();
  struct Case {
    std::function<void(TuningRecord*)> spoil;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](TuningRecord* r) { r->trace = "divide(i0, a, b)"; },
       "tuning record: trace line 1, column 16: "},
      {[](TuningRecord* r) { r->trace = "# nothing\n"; }, "tuning record: the trace has no call"},
      {[](TuningRecord* r) { r->mesh = "x=4"; },
       "tuning record: mesh x=4 is not the workload's mesh x=2,y=2"},
      {[](TuningRecord* r) { r->predicted_s = -1; },
       "tuning record: predicted_s is -1; it must be finite and >= 0"},
      {[](TuningRecord* r) { r->measured_s = std::nan(""); }, "tuning record: measured_s is nan;"},
      {[](TuningRecord* r) { r->verified = true; }, "tuning record: verified without measured_s"},
      {[](TuningRecord* r) { r->patterns = {"a\nb"}; },
       "tuning record: pattern \"a\\nb\" is empty or holds a newline"},
      {[](TuningRecord* r) { r->patterns = {""}; }, "tuning record: pattern \"\" is empty"},
      {[](TuningRecord* r) { r->fingerprint = "abc"; },
       "tuning record: fingerprint abc is not the workload's"},
      {[](TuningRecord* r) { r->created_unix_ms = -5; }, "tuning record: created_unix_ms is -5"},
      {[](TuningRecord* r) { r->sample = "\x08\x0c"; },
       "tuning record: a sample without measured_s"},
      {[](TuningRecord* r) { r->timing = Timing::kPaced; },
       "tuning record: timing paced without measured_s"},
      {[](TuningRecord* r) { r->timing = Timing::kMeasured; },
       "tuning record: timing measured without measured_s"},
  };
  for (const Case& c : cases) {
    TuningRecord r = Rec(1.0);
    c.spoil(&r);
    absl::StatusOr<int64_t> id = db_->Add(w, r);
    EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_EQ(id.status().message().substr(0, c.message.size()), c.message) << id.status();
  }
  EXPECT_TRUE(Ids("", 10, 0).empty());
  EXPECT_EQ(Add(w, Rec(1.0)), 1);
}

TEST_P(TuningDbTest, SampleAndTimingAreKeptWithTheRecord) {
  const Workload w = MakeW();
  TuningRecord sampled = Rec(0.5, 0.0153, true);
  sampled.sample = std::string("\x08\x0c\x10\x01\x00\xff", 6);  // bytes, kept as they are
  const int64_t a = Add(w, sampled);    // timing left kNone: a new record is measured
  const int64_t b = Add(w, Rec(0.25));  // not measured
  TuningRecord paced = Rec(0.5, 0.02, true);
  paced.timing = Timing::kPaced;
  const int64_t c = Add(w, paced);
  TuningRecord measured = Rec(0.5, 0.03, false);
  measured.timing = Timing::kMeasured;
  const int64_t d = Add(w, measured);
  const TuningRecord ga = **db_->Get(a), gb = **db_->Get(b), gc = **db_->Get(c), gd = **db_->Get(d);
  EXPECT_EQ(ga.timing, Timing::kMeasured);
  EXPECT_EQ(ga.sample, sampled.sample);
  EXPECT_EQ(ga.measured_s, 0.0153);
  EXPECT_EQ(gb.timing, Timing::kNone);
  EXPECT_EQ(gb.sample, "");
  EXPECT_EQ(gc.timing, Timing::kPaced);
  EXPECT_EQ(gc.sample, "");
  EXPECT_EQ(gd.timing, Timing::kMeasured);
  EXPECT_EQ(gd.sample, "");
  absl::StatusOr<std::vector<TuningRecord>> list = db_->List(w.fingerprint, 10, 0);
  ASSERT_TRUE(list.ok() && list->size() == 4) << list.status();
  EXPECT_EQ((*list)[0].sample, sampled.sample);
  EXPECT_EQ((*list)[0].timing, Timing::kMeasured);
  EXPECT_EQ((*list)[2].timing, Timing::kPaced);
  absl::StatusOr<std::optional<TuningRecord>> best = db_->Best(w.fingerprint);
  ASSERT_TRUE(best.ok() && best->has_value()) << best.status();
  EXPECT_EQ((*best)->id, a);  // measured 0.0153 s; the paced 0.02 s ranks after it anyway
  EXPECT_EQ((*best)->sample, sampled.sample);
}

TEST_P(TuningDbTest, AMeasuredRecordRanksAboveAFasterPacedOne) {
  const Workload w = MakeW();
  TuningRecord paced = Rec(0.1, 0.001, true);  // paced at 1 ms: no measurement
  paced.timing = Timing::kPaced;
  const int64_t fast_paced = Add(w, paced);
  EXPECT_EQ(BestId(w.fingerprint), fast_paced);  // the only verified record
  Add(w, Rec(0.001));                            // unverified: after every verified one
  EXPECT_EQ(BestId(w.fingerprint), fast_paced);
  const int64_t slow_measured = Add(w, Rec(0.9, 0.5, true));
  EXPECT_EQ(BestId(w.fingerprint), slow_measured);  // 0.5 s measured beats 1 ms paced
  paced.measured_s = 0.0001;
  Add(w, paced);  // a faster paced one still ranks after
  EXPECT_EQ(BestId(w.fingerprint), slow_measured);
  const int64_t fast_measured = Add(w, Rec(0.9, 0.4, true));
  EXPECT_EQ(BestId(w.fingerprint), fast_measured);  // among measured ones, the faster
  // Unverified records rank by their predictions, however their time was taken.
  const Workload other = MakeW(kMatmul, "m=8,n=8,k=8");
  TuningRecord unverified_paced = Rec(0.2, 0.001);
  unverified_paced.timing = Timing::kPaced;
  const int64_t lower_prediction = Add(other, unverified_paced);
  Add(other, Rec(0.3, 0.002));
  EXPECT_EQ(BestId(other.fingerprint), lower_prediction);
}

TEST_P(TuningDbTest, ConcurrentAddsAllLand) {
  const Workload a = MakeW(), b = MakeW(kRenamed, "i=8,j=8,l=8");
  constexpr int kThreads = 8, kEach = 25;
  std::vector<std::thread> threads;
  std::vector<std::vector<int64_t>> ids(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        absl::StatusOr<int64_t> id =
            db_->Add(t % 2 ? a : b, Rec(1.0 + t * kEach + i, 1.0 + i, i == 7 && t == 3));
        if (id.ok())
          ids[t].push_back(*id);
        else
          ADD_FAILURE() << id.status();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<int64_t> all;
  for (const auto& v : ids) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kEach));
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), kThreads * kEach);
  EXPECT_EQ(Ids("", 1000, 0).size(), static_cast<size_t>(kThreads * kEach));
  EXPECT_EQ(Ids(a.fingerprint, 1000, 0).size(), static_cast<size_t>(kThreads / 2 * kEach));
  EXPECT_EQ(BestId(a.fingerprint), ids[3][7]);  // the only verified record
  EXPECT_EQ(BestId(b.fingerprint), ids[0][0]);  // the lowest prediction
}

TEST_P(TuningDbTest, BestOfSameStructureFindsTheBestAtOtherExtentsOnly) {
  const Workload here = MakeW(kMatmul, "m=128,n=128,k=128");
  auto ids = [&](const Workload& w) {
    absl::StatusOr<std::vector<TuningRecord>> found = db_->BestOfSameStructure(w);
    EXPECT_TRUE(found.ok()) << found.status();
    std::vector<int64_t> out;
    if (found.ok()) {
      for (const TuningRecord& r : *found) out.push_back(r.id);
    }
    return out;
  };
  EXPECT_TRUE(ids(here).empty());
  const Workload small = MakeW(kMatmul, "m=64,n=64,k=64");
  Add(small, Rec(0.5));                                    // 1
  const int64_t small_best = Add(small, Rec(0.25));        // 2: the best of its workload
  Add(MakeW(kRenamed, "i=32,j=16,l=8"), Rec(0.1));         // 3: renamed, same structure
  Add(MakeW(kMatmul, "m=64,n=64,k=64", "x=4"), Rec(0.1));  // 4: another mesh
  Add(MakeW(kMatmul, "m=64,n=64,k=64", "x=2,y=2", "other"), Rec(0.1));  // 5: another profile
  Add(MakeW(kMatmul, "m=64,n=64,k=64", "x=2,y=2", "default", "f64"), Rec(0.1));  // 6: dtype
  Add(MakeW("C[m,n] += A[m,k] * B[n,k]", "m=64,n=64,k=64"), Rec(0.1));           // 7: another expr
  const int64_t own = Add(here, Rec(0.01));                                      // 8: `here` itself
  EXPECT_EQ(ids(here), (std::vector<int64_t>{small_best, 3}));
  absl::StatusOr<std::vector<TuningRecord>> found = db_->BestOfSameStructure(here);
  ASSERT_TRUE(found.ok() && found->size() == 2) << found.status();
  EXPECT_EQ((*found)[0].canonical_workload, small.canonical);
  EXPECT_EQ((*found)[0].predicted_s, 0.25);
  EXPECT_EQ(ids(small), (std::vector<int64_t>{3, own}));
  // Rank-count workloads match on "ranks=N", whatever mesh their records chose.
  const Workload ranks = MakeW(kMatmul, "m=64,n=64,k=64", "ranks=4");
  TuningRecord r = Rec(0.1);
  r.mesh = "x=2,y=2";
  const int64_t of_ranks = Add(ranks, r);
  EXPECT_EQ(ids(MakeW(kMatmul, "m=8,n=8,k=8", "ranks=4")), (std::vector<int64_t>{of_ranks}));
  EXPECT_TRUE(ids(ranks).empty());
}

INSTANTIATE_TEST_SUITE_P(Both, TuningDbTest, ::testing::Values("memory", "sqlite"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// ---- SQLite only ----

TEST(SqliteTuningDbTest, GenerationSeesOtherConnectionsCommits) {
  const std::string path = FreshDbPath();
  absl::StatusOr<std::unique_ptr<TuningDb>> reader = OpenSqliteTuningDb(path);
  absl::StatusOr<std::unique_ptr<TuningDb>> writer = OpenSqliteTuningDb(path);
  ASSERT_TRUE(reader.ok() && writer.ok());
  const absl::StatusOr<int64_t> before = (*reader)->Generation();
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE((*writer)->Add(MakeW(), Rec(0.3)).ok());
  const absl::StatusOr<int64_t> after = (*reader)->Generation();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_NE(*after, *before);
}

TEST(SqliteTuningDbTest, RecordsPersistAcrossReopening) {
  const std::string path = FreshDbPath();
  const Workload w = MakeW();
  {
    absl::StatusOr<std::unique_ptr<TuningDb>> db = OpenSqliteTuningDb(path);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->Add(w, Rec(0.3)).ok());
    TuningRecord machined = Rec(0.5, 0.6, true);
    machined.machine = "0123456789abcdef";
    ASSERT_TRUE((*db)->Add(w, machined).ok());
  }
  absl::StatusOr<std::unique_ptr<TuningDb>> db = OpenSqliteTuningDb(path);
  ASSERT_TRUE(db.ok()) << db.status();
  absl::StatusOr<std::optional<TuningRecord>> best = (*db)->Best(w.fingerprint);
  ASSERT_TRUE(best.ok() && best->has_value()) << best.status();
  EXPECT_EQ((*best)->id, 2);
  EXPECT_EQ((*best)->machine, "0123456789abcdef");
  EXPECT_EQ((*(*db)->Get(1))->machine, "");
  EXPECT_EQ((*best)->trace, kPummaCanonical);
  EXPECT_EQ((*best)->patterns, Rec(0).patterns);
  EXPECT_EQ((*db)->List("", 10, 0)->size(), 2u);
  absl::StatusOr<int64_t> id = (*db)->Add(w, Rec(0.1));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, 3);

  EXPECT_EQ(QueryText(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(QueryText(path, "PRAGMA foreign_key_check"), "<no row>");
  EXPECT_EQ(QueryText(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(QueryText(path, "PRAGMA user_version"), "7");
  EXPECT_EQ(
      QueryText(path, "SELECT profile || ' ' || mesh || ' ' || best_record_id FROM workloads"),
      "default x=2,y=2 2");
}

TEST(SqliteTuningDbTest, CheckedRecordsPersistAndRankBeforeUncheckedOnes) {
  const std::string path = FreshDbPath();
  const Workload w = MakeW();
  {
    absl::StatusOr<std::unique_ptr<TuningDb>> db = OpenSqliteTuningDb(path);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->Add(w, Rec(0.1)).ok());  // predicted faster, written before checks existed
    TuningRecord checked = Rec(0.2);
    checked.checked = "simulated-scaled";
    checked.checked_extents = "k=4,m=4,n=4";
    ASSERT_TRUE((*db)->Add(w, checked).ok());
  }
  absl::StatusOr<std::unique_ptr<TuningDb>> db = OpenSqliteTuningDb(path);
  ASSERT_TRUE(db.ok()) << db.status();
  absl::StatusOr<std::optional<TuningRecord>> best = (*db)->Best(w.fingerprint);
  ASSERT_TRUE(best.ok() && best->has_value()) << best.status();
  EXPECT_EQ((*best)->id, 2);
  EXPECT_EQ((*best)->checked, "simulated-scaled");
  EXPECT_EQ((*best)->checked_extents, "k=4,m=4,n=4");
}

// The schema of meshtune 0.6 before summaries (version 3), with one record, as such a file
// holds it.
constexpr char kSchemaVersion3[] = R"sql(
CREATE TABLE workloads (fingerprint TEXT PRIMARY KEY NOT NULL, canonical TEXT NOT NULL,
  expr TEXT NOT NULL, extents TEXT NOT NULL, dtype TEXT NOT NULL, mesh TEXT NOT NULL,
  profile TEXT NOT NULL, best_record_id INTEGER REFERENCES records(id));
CREATE TABLE records (id INTEGER PRIMARY KEY AUTOINCREMENT,
  fingerprint TEXT NOT NULL REFERENCES workloads(fingerprint), trace TEXT NOT NULL,
  mesh TEXT NOT NULL, predicted_s REAL NOT NULL, measured_s REAL,
  verified INTEGER NOT NULL CHECK (verified IN (0, 1)), patterns TEXT NOT NULL,
  tuner_version TEXT NOT NULL, created_unix_ms INTEGER NOT NULL,
  checked TEXT NOT NULL DEFAULT '', checked_extents TEXT NOT NULL DEFAULT '',
  machine TEXT NOT NULL DEFAULT '');
CREATE INDEX records_by_fingerprint ON records(fingerprint);
PRAGMA user_version = 3;
)sql";

TEST(SqliteTuningDbTest, Version3FileIsReadAndMigratedKeepingItsRecordsWithoutSummary) {
  const std::string path = TmpDir() + "/version3.db";
  const Workload w = MakeW();
  ExecSql(path, kSchemaVersion3);
  ExecSql(path,
          absl::StrCat("INSERT INTO workloads VALUES ('", w.fingerprint, "', '", w.canonical,
                       "', '", w.expr, "', '", w.extents, "', '", w.dtype, "', '", w.MeshText(),
                       "', '", w.profile, "', 1); INSERT INTO records (fingerprint, trace, ",
                       "mesh, predicted_s, verified, patterns, tuner_version, ",
                       "created_unix_ms, checked) VALUES ('", w.fingerprint, "', '",
                       kPummaCanonical, "', 'x=2,y=2', 0.5, 0, 'A: Shift', 'meshtune 0.6', ",
                       "1700000000000, 'simulated');"));
  {
    // A reader leaves a version-3 file as it is and reads its records, without summary.
    absl::StatusOr<std::unique_ptr<TuningDb>> reader = OpenSqliteTuningDbReadOnly(path);
    ASSERT_TRUE(reader.ok()) << reader.status();
    absl::StatusOr<std::optional<TuningRecord>> old = (*reader)->Get(1);
    ASSERT_TRUE(old.ok() && old->has_value()) << old.status();
    EXPECT_EQ((*old)->predicted_s, 0.5);
    EXPECT_EQ((*old)->summary, "");
    EXPECT_EQ(QueryText(path, "PRAGMA user_version"), "3");
  }
  absl::StatusOr<std::unique_ptr<TuningDb>> db = OpenSqliteTuningDb(path);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(QueryText(path, "PRAGMA user_version"), "7");
  absl::StatusOr<std::optional<TuningRecord>> old = (*db)->Get(1);
  ASSERT_TRUE(old.ok() && old->has_value()) << old.status();
  EXPECT_EQ((*old)->trace, kPummaCanonical);
  EXPECT_EQ((*old)->checked, "simulated");
  EXPECT_EQ((*old)->summary, "");
  EXPECT_EQ(QueryText(path, "SELECT summary IS NULL FROM records WHERE id = 1"), "1");
  TuningRecord with = Rec(0.25);
  with.checked = "simulated";
  with.summary = std::string("\x0a\x00\xff summary bytes", 17);
  absl::StatusOr<int64_t> id = (*db)->Add(w, with);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ((*(*db)->Get(*id))->summary, with.summary);
  EXPECT_EQ((*(*db)->Best(w.fingerprint))->id, *id);
}

// The schema of a meshtune before sampled times (version 6): version 3's, a summary and a
// library column, and the runs table.
constexpr char kSchemaVersion6[] = R"sql(
CREATE TABLE workloads (fingerprint TEXT PRIMARY KEY NOT NULL, canonical TEXT NOT NULL,
  expr TEXT NOT NULL, extents TEXT NOT NULL, dtype TEXT NOT NULL, mesh TEXT NOT NULL,
  profile TEXT NOT NULL, best_record_id INTEGER REFERENCES records(id));
CREATE TABLE records (id INTEGER PRIMARY KEY AUTOINCREMENT,
  fingerprint TEXT NOT NULL REFERENCES workloads(fingerprint), trace TEXT NOT NULL,
  mesh TEXT NOT NULL, predicted_s REAL NOT NULL, measured_s REAL,
  verified INTEGER NOT NULL CHECK (verified IN (0, 1)), patterns TEXT NOT NULL,
  tuner_version TEXT NOT NULL, created_unix_ms INTEGER NOT NULL,
  checked TEXT NOT NULL DEFAULT '', checked_extents TEXT NOT NULL DEFAULT '',
  machine TEXT NOT NULL DEFAULT '', summary BLOB, library BLOB);
CREATE INDEX records_by_fingerprint ON records(fingerprint);
CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created_unix_ms INTEGER NOT NULL,
  profile TEXT NOT NULL, machine TEXT NOT NULL, run BLOB NOT NULL);
CREATE INDEX runs_by_profile ON runs(profile, id);
PRAGMA user_version = 6;
)sql";

TEST(SqliteTuningDbTest, Version6FileIsMigratedItsMeasuredRecordsReadingPaced) {
  const std::string path = TmpDir() + "/version6.db";
  const Workload w = MakeW();
  ExecSql(path, kSchemaVersion6);
  // Record 1 paced at 0.001 s and verified (the best), record 2 not measured.
  ExecSql(path,
          absl::StrCat("INSERT INTO workloads VALUES ('", w.fingerprint, "', '", w.canonical,
                       "', '", w.expr, "', '", w.extents, "', '", w.dtype, "', '", w.MeshText(),
                       "', '", w.profile, "', 1); INSERT INTO records (fingerprint, trace, mesh, ",
                       "predicted_s, measured_s, verified, patterns, tuner_version, ",
                       "created_unix_ms, checked) VALUES ('", w.fingerprint, "', '",
                       kPummaCanonical, "', 'x=2,y=2', 0.5, 0.001, 1, 'A: Shift', 'meshtune 0.6', ",
                       "1700000000000, 'measured'), ('", w.fingerprint, "', '", kPummaCanonical,
                       "', 'x=2,y=2', 0.25, NULL, 0, '', 'meshtune 0.6', 1700000000001, ",
                       "'simulated');"));
  {
    // A reader leaves the file at version 6 and reads the measured record as paced.
    absl::StatusOr<std::unique_ptr<TuningDb>> reader = OpenSqliteTuningDbReadOnly(path);
    ASSERT_TRUE(reader.ok()) << reader.status();
    absl::StatusOr<std::optional<TuningRecord>> best = (*reader)->Best(w.fingerprint);
    ASSERT_TRUE(best.ok() && best->has_value()) << best.status();
    EXPECT_EQ((*best)->id, 1);
    EXPECT_EQ((*best)->measured_s, 0.001);
    EXPECT_EQ((*best)->timing, Timing::kPaced);
    EXPECT_EQ((*best)->sample, "");
    EXPECT_EQ((*(*reader)->Get(2))->timing, Timing::kNone);
    EXPECT_EQ(QueryText(path, "PRAGMA user_version"), "6");
  }
  absl::StatusOr<std::unique_ptr<TuningDb>> db = OpenSqliteTuningDb(path);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(QueryText(path, "PRAGMA user_version"), "7");
  EXPECT_EQ(QueryText(path,
                      "SELECT group_concat(id || ':' || timing || ':' || "
                      "coalesce(sample, 'NULL'), ' ') FROM records"),
            "1:paced:NULL 2::NULL");
  absl::StatusOr<std::optional<TuningRecord>> old = (*db)->Get(1);
  ASSERT_TRUE(old.ok() && old->has_value()) << old.status();
  EXPECT_EQ((*old)->timing, Timing::kPaced);
  EXPECT_EQ((*old)->measured_s, 0.001);
  EXPECT_EQ((*old)->sample, "");
  EXPECT_EQ((*(*db)->Get(2))->timing, Timing::kNone);
  EXPECT_EQ((*(*db)->Best(w.fingerprint))->id, 1);
  // A new measured record, 500 times slower than the paced one, is the best.
  TuningRecord measured = Rec(0.5, 0.5, true);
  measured.checked = "measured";
  measured.sample = std::string("\x08\x0c\x29\x00\x00\x00\x00\x00\x00\xe0\x3f", 11);
  absl::StatusOr<int64_t> id = (*db)->Add(w, measured);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, 3);
  const TuningRecord got = **(*db)->Get(3);
  EXPECT_EQ(got.timing, Timing::kMeasured);
  EXPECT_EQ(got.sample, measured.sample);
  EXPECT_EQ((*(*db)->Best(w.fingerprint))->id, 3);
  EXPECT_EQ(QueryText(path, "SELECT timing || ' ' || length(sample) FROM records WHERE id = 3"),
            "measured 11");
  EXPECT_EQ(QueryText(path, "SELECT best_record_id FROM workloads"), "3");
}

TEST(SqliteTuningDbTest, NewerSchemaIsRejectedUntouched) {
  const std::string path = TmpDir() + "/future.db";
  ExecSql(path, "CREATE TABLE t (x); PRAGMA user_version = 8;");
  absl::StatusOr<std::unique_ptr<TuningDb>> db = OpenSqliteTuningDb(path);
  EXPECT_EQ(db.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(db.status().message(),
            "tuning database " + path +
                " has schema version 8, but meshtune 0.6 knows versions up to 7; "
                "use a newer meshtune or another database file");
  EXPECT_EQ(QueryText(path, "PRAGMA user_version"), "8");
  EXPECT_EQ(QueryText(path, "PRAGMA journal_mode"), "delete");
}

TEST(SqliteTuningDbTest, NotADatabaseIsDataLossNamingThePath) {
  const std::string path = TmpDir() + "/junk.db";
  std::ofstream(path) << std::string(4096, 'j');
  absl::StatusOr<std::unique_ptr<TuningDb>> db = OpenSqliteTuningDb(path);
  EXPECT_EQ(db.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(db.status().message(),
            "tuning database " + path + ": cannot read the schema version: file is not a database");
}

TEST(SqliteTuningDbTest, UnusablePlaceIsAnErrorNamingThePath) {
  const std::string blocker = TmpDir() + "/blocker";
  std::ofstream(blocker) << "a file, not a directory\n";
  const std::string path = blocker + "/sub/tuning.db";
  absl::StatusOr<std::unique_ptr<TuningDb>> db = OpenSqliteTuningDb(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().message(), "tuning database " + path + ": cannot create the directory " +
                                       blocker + "/sub: Not a directory");
  db = OpenSqliteTuningDb("");
  EXPECT_EQ(db.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SqliteTuningDbTest, TwoConnectionsShareTheFile) {
  // Two connections stand for two processes: SQLite's locks, not our mutex, keep them apart.
  const std::string path = FreshDbPath();
  absl::StatusOr<std::unique_ptr<TuningDb>> first = OpenSqliteTuningDb(path);
  absl::StatusOr<std::unique_ptr<TuningDb>> second = OpenSqliteTuningDb(path);
  ASSERT_TRUE(first.ok() && second.ok()) << first.status() << second.status();
  const Workload w = MakeW();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      TuningDb* db = (t % 2 ? *first : *second).get();
      for (int i = 0; i < 10; ++i) {
        absl::StatusOr<int64_t> id = db->Add(w, Rec(1.0 + t * 10 + i));
        if (!id.ok()) ADD_FAILURE() << id.status();
        absl::StatusOr<std::optional<TuningRecord>> best = db->Best(w.fingerprint);
        if (!best.ok()) ADD_FAILURE() << best.status();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ((*first)->List("", 1000, 0)->size(), 80u);
  EXPECT_EQ((*second)->List(w.fingerprint, 1000, 0)->size(), 80u);
  EXPECT_EQ((*(*second)->Best(w.fingerprint))->predicted_s, 1.0);
  EXPECT_EQ(QueryText(path, "PRAGMA integrity_check"), "ok");
}

TEST(SqliteTuningDbTest, ConcurrentOpensOfANewFileMigrateOnce) {
  const std::string path = FreshDbPath();
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      absl::StatusOr<std::unique_ptr<TuningDb>> db = OpenSqliteTuningDb(path);
      if (!db.ok()) {
        ADD_FAILURE() << db.status();
      } else if (absl::StatusOr<int64_t> id = (*db)->Add(MakeW(), Rec(1.0)); !id.ok()) {
        ADD_FAILURE() << id.status();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(QueryText(path, "SELECT count(*) FROM records"), "6");
  EXPECT_EQ(QueryText(path, "PRAGMA user_version"), "7");
}

TEST(DefaultDbPathTest, FollowsXdgCacheHomeThenHome) {
  setenv("XDG_CACHE_HOME", "/var/cache/me", 1);
  EXPECT_EQ(DefaultDbPath(), "/var/cache/me/meshtune/tuning.db");
  setenv("XDG_CACHE_HOME", "relative", 1);  // the XDG spec ignores relative paths
  setenv("HOME", "/home/me", 1);
  EXPECT_EQ(DefaultDbPath(), "/home/me/.cache/meshtune/tuning.db");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(DefaultDbPath(), "/home/me/.cache/meshtune/tuning.db");
}

}  // namespace
}  // namespace meshtune::storage
