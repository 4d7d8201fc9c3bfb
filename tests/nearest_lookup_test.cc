// engine::Lookup with nearest over an in-memory database: an exact record first; else the
// schedule of a record of the same problem at other extents, replayed and re-costed at the
// requested ones (the cost model's own number for that program), the cheapest of those that
// replay legally, ties to the nearest extents and then the lower id; NotFound saying why when
// none replays; nothing stored.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "cost/cost_model.h"
#include "cost/cost_params.h"
#include "engine/prepare.h"
#include "engine/records.h"
#include "engine/tune/tune_options.h"
#include "ir/mesh.h"
#include "storage/tuning_db.h"

namespace meshtune::engine {
namespace {

constexpr char kMatmul[] = "C[m,n] += A[m,k] * B[k,n]";
constexpr char kMesh[] = "x=2,y=2";

// SUMMA and Cannon on 2x2, k in 2 steps.
constexpr char kSumma[] =
    "distribute([m,n], [mo,no], [mi,ni], [x,y])\n"
    "divide(k, ko, ki, 2)\n"
    "reorder(mo, no, ko, mi, ni, ki)\n"
    "shard(A, m@x, k@y)\n"
    "shard(B, k@x, n@y)\n"
    "shard(C, m@x, n@y)\n"
    "communicate(A, ko)\n"
    "communicate(B, ko)\n"
    "tensorize([mi, ni, ki], matmul)\n";
constexpr char kCannon[] =
    "distribute([m,n], [mo,no], [mi,ni], [x,y])\n"
    "divide(k, ko, ki, 2)\n"
    "reorder(mo, no, ko, mi, ni, ki)\n"
    "shard(A, m@x, k@(x+y)%2)\n"
    "shard(B, k@(x+y)%2, n@y)\n"
    "shard(C, m@x, n@y)\n"
    "communicate(A, ko, rotate=[mo,no])\n"
    "communicate(B, ko, rotate=[mo,no])\n"
    "tensorize([mi, ni, ki], matmul)\n";

v1::Problem Problem(const std::string& extents, const std::string& expr = kMatmul) {
  v1::Problem p;
  p.set_expr(expr);
  p.set_extents(extents);
  return p;
}

v1::Mesh Mesh() {
  v1::Mesh m;
  m.set_axes(kMesh);
  return m;
}

class NearestLookupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    // No hardware profile: the built-in machine numbers.
    setenv("MESHTUNE_HOME", (std::string(tmp ? tmp : "/tmp") + "/empty_home").c_str(), 1);
    db_ = storage::NewInMemoryTuningDb();
  }

  // Stores `trace` (in kMatmul's names) as a record of kMatmul at `extents` on kMesh.
  int64_t Store(const std::string& extents, const std::string& trace, double predicted = 1e-3) {
    absl::StatusOr<storage::Workload> w = RequestWorkload(Problem(extents), Mesh(), 0, "");
    EXPECT_TRUE(w.ok()) << w.status();
    v1::TuneResult result;
    result.mutable_record()->mutable_trace()->set_text(trace);
    result.mutable_record()->set_mesh(kMesh);
    result.mutable_record()->set_predicted_s(predicted);
    absl::Status s = StoreTuneResult(*db_, *w, &result);
    EXPECT_TRUE(s.ok()) << s;
    return result.record().id();
  }

  absl::StatusOr<v1::LookupResponse> Nearest(const std::string& extents,
                                             const std::string& expr = kMatmul) {
    v1::LookupRequest r;
    *r.mutable_problem() = Problem(extents, expr);
    *r.mutable_mesh() = Mesh();
    r.set_nearest(true);
    return Lookup(*db_, r);
  }

  std::unique_ptr<storage::TuningDb> db_;
};

// The cost model's seconds for `trace` at `extents` on kMesh with the built-in numbers.
double ModelSeconds(const std::string& extents, const std::string& trace) {
  v1::Trace t;
  t.set_text(trace);
  absl::StatusOr<codegen::Program> p = LowerTrace(Problem(extents), Mesh(), t);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return -1;
  return cost::EstimateCost(*p, cost::ForRanks(BuiltinCostParams(), 4)).seconds;
}

TEST_F(NearestLookupTest, TransfersTheRecordReCostedAtTheNewExtents) {
  const int64_t id = Store("m=16,n=16,k=16", kSumma, 1e-5);
  absl::StatusOr<v1::LookupResponse> r = Nearest("m=64,n=32,k=128");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->transferred());
  EXPECT_EQ(r->transferred_from(), id);
  EXPECT_EQ(r->transferred_extents(), "m=16,n=16,k=16");
  const v1::Record& record = r->record();
  EXPECT_EQ(record.id(), 0);
  EXPECT_EQ(record.fingerprint(), "");
  EXPECT_EQ(record.problem().extents(), "m=64,n=32,k=128");
  EXPECT_EQ(record.problem().dtype(), "f32");
  EXPECT_EQ(record.mesh(), kMesh);
  EXPECT_EQ(record.trace().text(), kSumma);
  EXPECT_EQ(record.predicted_s(), ModelSeconds("m=64,n=32,k=128", kSumma));
  EXPECT_NE(record.predicted_s(), 1e-5);
  EXPECT_FALSE(record.has_measured_s());
  EXPECT_FALSE(record.verified());
  EXPECT_EQ(record.checked(), "");
  EXPECT_EQ(record.patterns_size(), 2);
  EXPECT_EQ(record.profile(), "default");
  EXPECT_EQ(record.workload_mesh(), kMesh);
  // Never stored.
  EXPECT_EQ(db_->List("", 10, 0)->size(), 1u);
}

TEST_F(NearestLookupTest, AnExactRecordComesFirstAndWithoutNearestNothingIsTransferred) {
  const int64_t id = Store("m=16,n=16,k=16", kSumma, 1e-5);
  absl::StatusOr<v1::LookupResponse> r = Nearest("m=16,n=16,k=16");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->transferred());
  EXPECT_EQ(r->record().id(), id);
  EXPECT_EQ(r->record().predicted_s(), 1e-5);
  v1::LookupRequest plain;
  *plain.mutable_problem() = Problem("m=32,n=32,k=32");
  *plain.mutable_mesh() = Mesh();
  EXPECT_EQ(Lookup(*db_, plain).status().message(),
            "no tuning record for C[m,n] += A[m,k] * B[k,n] (m=32,n=32,k=32, f32) on x=2,y=2 "
            "with profile default; tune it first");
}

TEST_F(NearestLookupTest, TheCheapestAtTheNewExtentsWins) {
  const double summa = ModelSeconds("m=64,n=64,k=64", kSumma);
  const double cannon = ModelSeconds("m=64,n=64,k=64", kCannon);
  ASSERT_NE(summa, cannon);
  const std::string cheap = summa < cannon ? kSumma : kCannon;
  const std::string dear = summa < cannon ? kCannon : kSumma;
  // Neither the stored predictions (at the old extents) nor nearness decide: the new costs do.
  const int64_t far_and_cheap = Store("m=16,n=16,k=16", cheap, 9);
  Store("m=32,n=32,k=32", dear, 1e-9);
  absl::StatusOr<v1::LookupResponse> r = Nearest("m=64,n=64,k=64");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->transferred_from(), far_and_cheap);
  EXPECT_EQ(r->record().trace().text(), cheap);
  EXPECT_EQ(r->record().predicted_s(), std::min(summa, cannon));
}

TEST_F(NearestLookupTest, EqualCostsGoToTheNearestExtentsThenTheLowerId) {
  const int64_t far = Store("m=128,n=128,k=128", kSumma);
  const int64_t same_distance = Store("m=32,n=32,k=32", kSumma);
  (void)same_distance;
  absl::StatusOr<v1::LookupResponse> r = Nearest("m=64,n=64,k=64");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->transferred_from(), far);  // as near as the other, and the lower id
  const int64_t near = Store("m=48,n=64,k=64", kSumma);
  r = Nearest("m=64,n=64,k=64");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->transferred_from(), near);
  EXPECT_EQ(r->transferred_extents(), "m=48,n=64,k=64");
}

TEST_F(NearestLookupTest, ARenamedProblemGetsTheScheduleInItsNames) {
  const int64_t id = Store("m=16,n=16,k=16", kSumma);
  absl::StatusOr<v1::LookupResponse> r = Nearest("l=64,j=32,i=16", "Out[i,j] += X[i,l] * Y[l,j]");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->transferred_from(), id);
  EXPECT_EQ(r->transferred_extents(), "i=16,j=16,l=16");
  EXPECT_EQ(r->record().problem().expr(), "Out[i,j] += X[i,l] * Y[l,j]");
  EXPECT_NE(r->record().trace().text().find("shard(X, i@x, l@y)"), std::string::npos)
      << r->record().trace().text();
}

TEST_F(NearestLookupTest, NotFoundSaysWhyWhenNothingReplaysLegally) {
  absl::StatusOr<v1::LookupResponse> r = Nearest("m=64,n=64,k=64");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(),
            "no tuning record for C[m,n] += A[m,k] * B[k,n] (m=64,n=64,k=64, f32) on x=2,y=2 "
            "with profile default, and no record of this problem at other extents; tune it first");
  Store("m=16,n=16,k=16", kSumma);
  r = Nearest("m=1,n=1,k=2");  // rows wholly past the end: not lowered
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(),
            "no tuning record for C[m,n] += A[m,k] * B[k,n] (m=1,n=1,k=2, f32) on x=2,y=2 with "
            "profile default, and the one record of this problem at other extents does not "
            "replay legally at m=1,n=1,k=2; tune it first");
  Store("m=32,n=32,k=32", kCannon);
  r = Nearest("m=1,n=1,k=2");
  EXPECT_EQ(r.status().message(),
            "no tuning record for C[m,n] += A[m,k] * B[k,n] (m=1,n=1,k=2, f32) on x=2,y=2 with "
            "profile default, and none of the 2 records of this problem at other extents "
            "replays legally at m=1,n=1,k=2; tune it first");
}

}  // namespace
}  // namespace meshtune::engine
