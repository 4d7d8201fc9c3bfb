// Wisdom files (engine/wisdom.h) on an in-memory database: the merge policy on conflicts,
// duplicates, bad lines, and lookups that insist on a machine fingerprint.
#include "engine/wisdom.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/records.h"
#include "engine/runs.h"
#include "storage/tuning_db.h"

namespace meshtune::engine {
namespace {

// SUMMA-like trace of the canonical matmul on x=2.
constexpr char kTrace[] =
    "distribute([i0], [mo], [mi], [x])\nshard(T0, i0@x)\nshard(T1, i0@x)\nshard(T2, i1@x)\n"
    "communicate(T2, i2)\ntensorize([mi, i1, i2], matmul)\n";

v1::Record Rec(const std::string& extents, double predicted, std::optional<double> measured,
               const std::string& machine, int64_t created) {
  v1::Record r;
  r.mutable_problem()->set_expr("T0[i0,i1] += T1[i0,i2] * T2[i2,i1]");
  r.mutable_problem()->set_extents(extents);
  r.mutable_problem()->set_dtype("f32");
  r.set_workload_mesh("x=2");
  r.set_profile("default");
  r.set_mesh("x=2");
  r.mutable_trace()->set_text(kTrace);
  r.set_predicted_s(predicted);
  if (measured) {
    r.set_measured_s(*measured);
    r.set_verified(true);
    r.set_checked("measured");
  } else {
    r.set_checked("simulated");
  }
  r.set_machine(machine);
  r.set_created_unix_ms(created);
  return r;
}

std::string Wisdom(const std::vector<v1::Record>& records) { return WisdomText(records); }

v1::LookupRequest Ask(const std::string& extents, const std::string& machine = "") {
  v1::LookupRequest q;
  q.mutable_problem()->set_expr("C[m,n] += A[m,k] * B[k,n]");
  q.mutable_problem()->set_extents(absl::StrCat(extents));
  q.mutable_mesh()->set_axes("x=2");
  q.set_machine(machine);
  return q;
}

TEST(WisdomTest, TheVerifiedFasterRecordStaysBestWhicheverSideItCameFrom) {
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  // Already here: workload a verified at 0.2 s, workload b verified at 0.1 s.
  ASSERT_TRUE(ImportWisdom(*db, Wisdom({Rec("i0=64,i1=64,i2=64", 0.1, 0.2, "m1", 1),
                                        Rec("i0=32,i1=32,i2=32", 0.1, 0.1, "m1", 2)}))
                  .ok());
  // The file: a faster verified record of a; for b a slower verified one and an unverified
  // one the model puts far lower.
  absl::StatusOr<ImportReport> report =
      ImportWisdom(*db, Wisdom({Rec("i0=64,i1=64,i2=64", 0.1, 0.15, "m2", 3),
                                Rec("i0=32,i1=32,i2=32", 0.1, 0.3, "m2", 4),
                                Rec("i0=32,i1=32,i2=32", 0.001, std::nullopt, "m2", 5)}));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->added, 3);
  EXPECT_EQ(report->duplicates, 0);
  ASSERT_EQ(report->workloads.size(), 2u);
  const ImportedWorkload* a = nullptr;
  const ImportedWorkload* b = nullptr;
  for (const ImportedWorkload& w : report->workloads) {
    (absl::StrContains(w.description, "i0=64") ? a : b) = &w;
  }
  ASSERT_TRUE(a != nullptr && b != nullptr);
  EXPECT_TRUE(a->best_imported);
  EXPECT_EQ(a->best.measured_s(), 0.15);
  EXPECT_EQ(a->best.machine(), "m2");
  EXPECT_FALSE(b->best_imported);
  EXPECT_EQ(b->best.measured_s(), 0.1);
  EXPECT_EQ(b->added, 2);
  EXPECT_EQ(a->description,
            "T0[i0,i1] += T1[i0,i2] * T2[i2,i1] (i0=64,i1=64,i2=64, f32) on x=2, profile default");
}

TEST(WisdomTest, ExportIsSortedStableAndImportsAsDuplicatesTheSecondTime) {
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  const std::vector<v1::Record> records = {Rec("i0=64,i1=64,i2=64", 0.3, std::nullopt, "m1", 1),
                                           Rec("i0=64,i1=64,i2=64", 0.1, 0.2, "m1", 2),
                                           Rec("i0=32,i1=32,i2=32", 0.1, 0.1, "m1", 3)};
  const std::string text = Wisdom(records);
  EXPECT_EQ(text, Wisdom({records[2], records[0], records[1]}));  // any input order
  ASSERT_TRUE(ImportWisdom(*db, text).ok());
  // An export, imported into another database and exported from there, is the same bytes.
  auto export_all = [](storage::TuningDb& from) {
    absl::StatusOr<v1::ListRecordsResponse> listed = ListRecords(from, v1::ListRecordsRequest());
    EXPECT_TRUE(listed.ok()) << listed.status();
    return Wisdom({listed->records().begin(), listed->records().end()});
  };
  const std::string exported = export_all(*db);
  std::unique_ptr<storage::TuningDb> other = storage::NewInMemoryTuningDb();
  ASSERT_TRUE(ImportWisdom(*other, exported).ok());
  EXPECT_EQ(export_all(*other), exported);
  EXPECT_EQ(std::count(exported.begin(), exported.end(), '\n'), 3);
  // Verified first within a workload.
  const size_t verified = text.find("\"measured_s\":0.2"), unverified = text.find("0.3");
  EXPECT_LT(verified, unverified);
  absl::StatusOr<ImportReport> again = ImportWisdom(*db, "# a comment\n\n" + text);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->added, 0);
  EXPECT_EQ(again->duplicates, 3);
}

TEST(WisdomTest, ABadLineNamesItsNumberAndNothingIsAdded) {
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  std::string text = Wisdom({Rec("i0=64,i1=64,i2=64", 0.1, 0.2, "m1", 1)});
  const absl::Status bad = ImportWisdom(*db, text + "{\"mesh\": 3}\n").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(bad.message(), "wisdom line 2: ")) << bad;
  v1::Record other = Rec("i0=64,i1=64,i2=64", 0.1, 0.2, "m1", 1);
  other.set_fingerprint("00ff");
  const absl::Status wrong = ImportWisdom(*db, text + Wisdom({other})).status();
  EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(wrong.message(), "wisdom line 2: fingerprint 00ff is not the "))
      << wrong;
  v1::Record illegal = Rec("i0=64,i1=64,i2=64", 0.1, 0.2, "m1", 1);
  illegal.mutable_trace()->set_text("shard(T0, i0@x");
  EXPECT_TRUE(absl::StartsWith(ImportWisdom(*db, text + Wisdom({illegal})).status().message(),
                               "wisdom line 2: "));
  v1::ListRecordsRequest all;
  EXPECT_EQ(ListRecords(*db, all)->records_size(), 0);
}

TEST(WisdomTest, LookupCanInsistOnTheMachine) {
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  ASSERT_TRUE(ImportWisdom(*db, Wisdom({Rec("i0=64,i1=64,i2=64", 0.1, 0.1, "fast0000", 1),
                                        Rec("i0=64,i1=64,i2=64", 0.1, 0.3, "here0000", 2)}))
                  .ok());
  absl::StatusOr<v1::LookupResponse> any = Lookup(*db, Ask("m=64,n=64,k=64"));
  ASSERT_TRUE(any.ok()) << any.status();
  EXPECT_EQ(any->record().machine(), "fast0000");
  absl::StatusOr<v1::LookupResponse> here = Lookup(*db, Ask("m=64,n=64,k=64", "here0000"));
  ASSERT_TRUE(here.ok()) << here.status();
  EXPECT_EQ(here->record().machine(), "here0000");
  EXPECT_EQ(here->record().measured_s(), 0.3);
  EXPECT_EQ(Lookup(*db, Ask("m=64,n=64,k=64", "elsewhere")).status().message(),
            "no tuning record for C[m,n] += A[m,k] * B[k,n] (m=64,n=64,k=64, f32) on x=2 with "
            "profile default from machine elsewhere; tune it first");
}

// The records of `db` as `records export` writes them, without programs.
std::string ExportAll(storage::TuningDb& db) {
  absl::StatusOr<v1::ListRecordsResponse> listed = ListRecords(db, v1::ListRecordsRequest());
  EXPECT_TRUE(listed.ok()) << listed.status();
  return WisdomText({listed->records().begin(), listed->records().end()});
}

TEST(WisdomTest, LookupWisdomFindsWhatImportAndLookupFindReadingOnlyItsWorkload) {
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  ASSERT_TRUE(ImportWisdom(*db, Wisdom({Rec("i0=64,i1=64,i2=64", 0.1, 0.2, "m1", 1),
                                        Rec("i0=64,i1=64,i2=64", 0.1, 0.15, "m2", 2),
                                        Rec("i0=64,i1=64,i2=64", 0.01, std::nullopt, "m3", 3),
                                        Rec("i0=32,i1=32,i2=32", 0.1, std::nullopt, "m1", 4),
                                        Rec("i0=32,i1=32,i2=32", 0.05, std::nullopt, "m2", 5)}))
                  .ok());
  const std::string text = ExportAll(*db);
  for (const std::string extents : {"m=64,n=64,k=64", "m=32,n=32,k=32"}) {
    SCOPED_TRACE(extents);
    absl::StatusOr<v1::LookupResponse> want = Lookup(*db, Ask(extents));
    ASSERT_TRUE(want.ok()) << want.status();
    absl::StatusOr<WisdomRecord> got = LookupWisdom(text, Ask(extents));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->record.machine(), want->record().machine());
    EXPECT_EQ(got->trace, want->record().trace().text());
    EXPECT_FALSE(got->program_trusted);  // no program
  }
  // A bad line of another workload is not read; one without a fingerprint is.
  const std::string other = "{\"fingerprint\":\"" + std::string(64, 'a') + "\",\"mesh\": 3}\n";
  EXPECT_TRUE(LookupWisdom(text + other, Ask("m=64,n=64,k=64")).ok());
  EXPECT_EQ(
      std::string(LookupWisdom(text + "{\"mesh\": 3}\n", Ask("m=64,n=64,k=64")).status().message()),
      "wisdom line 6: (mesh): invalid value 3 for type TYPE_STRING");
  EXPECT_EQ(LookupWisdom(text, Ask("m=16,n=64,k=64")).status().message(),
            "no tuning record for C[m,n] += A[m,k] * B[k,n] (m=16,n=64,k=64, f32) on x=2 with "
            "profile default");
}

// A sample of 12 repetitions around 0.0153 s, as a tune measures one.
v1::TimeSample Sample() {
  v1::TimeSample s;
  s.set_n(12);
  s.set_batch(3);
  s.set_min_s(0.015);
  s.set_q1_s(0.0152);
  s.set_median_s(0.0153);
  s.set_q3_s(0.0155);
  s.set_max_s(0.0161);
  s.set_ci_low_s(0.0151);
  s.set_ci_high_s(0.0156);
  s.set_ci_level(0.9807);
  for (double x : {0.0153, 0.015, 0.0152, 0.0161, 0.0155, 0.0153, 0.0151, 0.0156, 0.0152, 0.0154,
                   0.0153, 0.0155}) {
    s.add_samples_s(x);
  }
  return s;
}

// Rec measured at `measured` s as every tune measures now: timing "measured", with a sample.
v1::Record Measured(const std::string& extents, double measured, const std::string& machine,
                    int64_t created) {
  v1::Record r = Rec(extents, 0.1, measured, machine, created);
  r.set_timing("measured");
  v1::TimeSample* s = r.mutable_sample();
  *s = Sample();
  s->set_median_s(measured);
  return r;
}

TEST(WisdomTest, ALineWrittenBeforeTimingsIsImportedAsPaced) {
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  // Lines as a meshtune before 0.9 wrote them: measured_s and no timing; and one not measured.
  const std::string old =
      absl::StrReplaceAll(Wisdom({Rec("i0=64,i1=64,i2=64", 0.1, 0.2, "m1", 1),
                                  Rec("i0=64,i1=64,i2=64", 0.05, std::nullopt, "m1", 2)}),
                          {{",\"timing\":\"\"", ""}});
  ASSERT_FALSE(absl::StrContains(old, "timing")) << old;
  absl::StatusOr<ImportReport> report = ImportWisdom(*db, old);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->added, 2);
  absl::StatusOr<v1::ListRecordsResponse> listed = ListRecords(*db, v1::ListRecordsRequest());
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->records_size(), 2);
  EXPECT_EQ(listed->records(0).measured_s(), 0.2);
  EXPECT_EQ(listed->records(0).timing(), "paced");
  EXPECT_FALSE(listed->records(0).has_sample());
  EXPECT_FALSE(listed->records(1).has_measured_s());
  EXPECT_EQ(listed->records(1).timing(), "");
  // The file read directly says the same.
  absl::StatusOr<WisdomRecord> found = LookupWisdom(old, Ask("m=64,n=64,k=64"));
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->record.measured_s(), 0.2);
  EXPECT_EQ(found->record.timing(), "paced");
  // Imported again, the paced record is a duplicate: it is the same record.
  absl::StatusOr<ImportReport> again = ImportWisdom(*db, old);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->added, 0);
  EXPECT_EQ(again->duplicates, 2);
  // A timing that is neither is refused, naming the line.
  v1::Record odd = Rec("i0=64,i1=64,i2=64", 0.1, 0.2, "m1", 3);
  odd.set_timing("scaled");
  EXPECT_EQ(ImportWisdom(*db, Wisdom({odd})).status().message(),
            "wisdom line 1: timing \"scaled\" is not \"measured\", \"paced\" or empty");
}

TEST(WisdomTest, SampleAndTimingRoundTripAndAMeasuredRecordRanksBeforeAFasterPacedOne) {
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  // A paced record at 0.001 s from an old file; a measured one at 0.0153 s, 15 times slower.
  const v1::Record paced = Rec("i0=64,i1=64,i2=64", 0.1, 0.001, "m1", 1);
  const v1::Record measured = Measured("i0=64,i1=64,i2=64", 0.0153, "m2", 2);
  const std::string text = Wisdom({paced, measured});
  // The measured record first: the database's ranking.
  EXPECT_LT(text.find("\"machine\":\"m2\""), text.find("\"machine\":\"m1\"")) << text;
  EXPECT_TRUE(absl::StrContains(text, "\"timing\":\"measured\"")) << text;
  EXPECT_TRUE(absl::StrContains(text, "\"sample\":{\"n\":12,\"batch\":3,")) << text;
  absl::StatusOr<ImportReport> report = ImportWisdom(*db, text);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->workloads.size(), 1u);
  const v1::Record& best = report->workloads[0].best;
  EXPECT_EQ(best.machine(), "m2");
  EXPECT_EQ(best.measured_s(), 0.0153);
  EXPECT_EQ(best.timing(), "measured");
  EXPECT_EQ(best.sample().SerializeAsString(), measured.sample().SerializeAsString());
  EXPECT_EQ(best.sample().n(), 12);
  EXPECT_EQ(best.sample().ci_low_s(), 0.0151);
  EXPECT_EQ(best.sample().ci_high_s(), 0.0156);
  EXPECT_EQ(best.sample().samples_s_size(), 12);
  EXPECT_EQ(best.sample().samples_s(3), 0.0161);
  absl::StatusOr<v1::LookupResponse> looked = Lookup(*db, Ask("m=64,n=64,k=64"));
  ASSERT_TRUE(looked.ok()) << looked.status();
  EXPECT_EQ(looked->record().machine(), "m2");
  absl::StatusOr<WisdomRecord> found = LookupWisdom(text, Ask("m=64,n=64,k=64"));
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->record.machine(), "m2");
  // Exported from the database and imported into another, the same bytes, and duplicates
  // when imported again.
  const std::string exported = ExportAll(*db);
  std::unique_ptr<storage::TuningDb> other = storage::NewInMemoryTuningDb();
  ASSERT_TRUE(ImportWisdom(*other, exported).ok());
  EXPECT_EQ(ExportAll(*other), exported);
  absl::StatusOr<ImportReport> again = ImportWisdom(*other, exported);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->duplicates, 2);
  EXPECT_EQ(again->added, 0);
  // The export marks the old record paced.
  EXPECT_TRUE(absl::StrContains(exported, "\"timing\":\"paced\",\"measured_s\":0.001}"))
      << exported;
}

TEST(WisdomTest, RunsCarryTheirSampleAndTimingAndOldOnesReadPaced) {
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  v1::MeasuredRun measured;
  measured.set_group("tune-1");
  measured.set_trace(kTrace);
  measured.set_mesh("x=2");
  measured.set_predicted_s(0.01);
  measured.set_measured_s(0.0153);
  measured.set_verified(true);
  measured.set_timing("measured");
  *measured.mutable_sample() = Sample();
  v1::MeasuredRun old = measured;  // as kept before meshtune 0.9
  old.set_group("tune-0");
  old.clear_timing();
  old.clear_sample();
  v1::MeasuredRun unmeasured = old;
  unmeasured.set_group("tune-2");
  unmeasured.clear_measured_s();
  unmeasured.set_verified(false);
  const std::string text = WisdomRunsText({old, measured, unmeasured});
  absl::StatusOr<ImportReport> report = ImportWisdom(*db, text);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->runs_added, 3);
  absl::StatusOr<std::vector<v1::MeasuredRun>> runs = ListMeasuredRuns(*db, std::nullopt);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[0].group(), "tune-0");
  EXPECT_EQ((*runs)[0].timing(), "paced");
  EXPECT_FALSE((*runs)[0].has_sample());
  EXPECT_EQ((*runs)[1].timing(), "measured");
  EXPECT_EQ((*runs)[1].sample().SerializeAsString(), Sample().SerializeAsString());
  EXPECT_EQ((*runs)[2].timing(), "");
  // A run stored without timing (kept before meshtune 0.9) reads paced too.
  ASSERT_TRUE(KeepRuns(*db, {old}).ok());
  runs = ListMeasuredRuns(*db, std::nullopt);
  ASSERT_TRUE(runs.ok() && runs->size() == 4u) << runs.status();
  EXPECT_EQ((*runs)[3].timing(), "paced");
  // A tune's candidates become runs with their sample, timed "measured".
  google::protobuf::RepeatedPtrField<v1::MeasuredCandidate> candidates;
  v1::MeasuredCandidate* c = candidates.Add();
  c->mutable_trace()->set_text(kTrace);
  c->set_mesh("x=2");
  c->set_predicted_s(0.01);
  c->set_measured_s(0.0153);
  c->set_verified(true);
  *c->mutable_sample() = Sample();
  v1::MeasuredCandidate* failed = candidates.Add();
  failed->mutable_trace()->set_text(kTrace);
  failed->set_mesh("x=2");
  v1::Problem problem;
  problem.set_expr("C[m,n] += A[m,k] * B[k,n]");
  problem.set_extents("m=64,n=64,k=64");
  const std::vector<v1::MeasuredRun> made =
      RunsOf("tune", problem, /*in_place=*/true, candidates, RunNumbers{});
  ASSERT_EQ(made.size(), 2u);
  EXPECT_EQ(made[0].timing(), "measured");
  EXPECT_EQ(made[0].sample().SerializeAsString(), Sample().SerializeAsString());
  EXPECT_EQ(made[1].timing(), "");
  EXPECT_FALSE(made[1].has_sample());
}

// A legal trace of the canonical matmul on x=2: T2 all-gathered before the kernel.
constexpr char kLegalTrace[] =
    "distribute([i0], [mo], [mi], [x])\nshard(T0, i0@x)\nshard(T1, i0@x)\nshard(T2, i1@x)\n"
    "communicate(T2, mi)\ntensorize([mi, i1, i2], matmul)\n";

TEST(WisdomTest, AnExportedProgramIsTrustedOnlyWithItsRecord) {
  v1::Record r = Rec("i0=64,i1=64,i2=64", 0.1, 0.2, "m1", 1);
  r.mutable_trace()->set_text(kLegalTrace);
  // kTrace is not legal: it gets no program.
  v1::Record illegal = Rec("i0=64,i1=64,i2=64", 0.1, 0.2, "m1", 1);
  EXPECT_FALSE(AddProgram(&illegal).ok());
  EXPECT_FALSE(illegal.has_program() || illegal.has_program_digest());
  const absl::Status added = AddProgram(&r);
  ASSERT_TRUE(added.ok()) << added;
  ASSERT_TRUE(r.has_program() && r.has_program_digest());
  EXPECT_EQ(r.program_digest().size(), 64u);
  v1::Record again = Rec("i0=64,i1=64,i2=64", 0.1, 0.2, "m1", 1);
  again.mutable_trace()->set_text(kLegalTrace);
  ASSERT_TRUE(AddProgram(&again).ok());
  EXPECT_EQ(WisdomText({again}), WisdomText({r}));  // deterministic
  absl::StatusOr<WisdomRecord> found = LookupWisdom(WisdomText({r}), Ask("m=64,n=64,k=64"));
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_TRUE(found->program_trusted);
  EXPECT_EQ(found->record.program(), r.program());
  // Not trusted: another trace text, an altered program, no digest.
  v1::Record trace = r, program = r, digest = r;
  trace.mutable_trace()->set_text(absl::StrCat("# the same schedule\n", kLegalTrace));
  program.mutable_program()->back() ^= 1;
  digest.clear_program_digest();
  for (const v1::Record& x : {trace, program, digest}) {
    absl::StatusOr<WisdomRecord> f = LookupWisdom(WisdomText({x}), Ask("m=64,n=64,k=64"));
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_FALSE(f->program_trusted);
  }
  // Import drops the program; what the database lists has none until AddProgram.
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  ASSERT_TRUE(ImportWisdom(*db, WisdomText({r})).ok());
  EXPECT_FALSE(absl::StrContains(ExportAll(*db), "program"));
}

}  // namespace
}  // namespace meshtune::engine
