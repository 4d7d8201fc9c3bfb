// The lookup cache answers as engine::Lookup does, from memory while the database is
// unchanged, and sees every new record.
#include "daemon/lookup_cache.h"

#include <gtest/gtest.h>

#include "engine/records.h"
#include "storage/tuning_db.h"
#include "storage/workload.h"

namespace meshtune::daemon {
namespace {

v1::LookupRequest Request(const std::string& expr, const std::string& extents) {
  v1::LookupRequest r;
  r.mutable_problem()->set_expr(expr);
  r.mutable_problem()->set_extents(extents);
  r.mutable_mesh()->set_axes("x=2");
  return r;
}

// Adds a record of `request`'s workload with `trace` (in its names) and `predicted` seconds.
void AddRecord(storage::TuningDb& db, const v1::LookupRequest& request, const std::string& trace,
               double predicted) {
  absl::StatusOr<storage::Workload> w =
      engine::RequestWorkload(request.problem(), request.mesh(), 0, "");
  ASSERT_TRUE(w.ok()) << w.status();
  absl::StatusOr<std::string> canonical = storage::ToCanonicalTrace(*w, trace);
  ASSERT_TRUE(canonical.ok()) << canonical.status();
  storage::TuningRecord r;
  r.trace = *canonical;
  r.predicted_s = predicted;
  ASSERT_TRUE(db.Add(*w, r).ok());
}

// Requests with nearest are answered by the engine every time (their cost depends on a
// hardware profile the generation does not track), transferred answers included.
TEST(LookupCacheTest, NearestRequestsAreNeverServedFromMemory) {
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  LookupCache cache;
  const v1::LookupRequest tuned = Request("C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=8");
  AddRecord(*db, tuned, "distribute([m], [mo], [mi], [x])\nshard(A, m@x)\nshard(C, m@x)\n", 2.0);
  v1::LookupRequest nearest = Request("C[m,n] += A[m,k] * B[k,n]", "m=16,n=8,k=8");
  nearest.set_nearest(true);
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<v1::LookupResponse> r = cache.Lookup(*db, nearest);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->transferred());
  }
  EXPECT_EQ(cache.hits(), 0);
  nearest.mutable_problem()->set_extents("m=8,n=8,k=8");
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(cache.Lookup(*db, nearest).ok());
  EXPECT_EQ(cache.hits(), 0);
}

TEST(LookupCacheTest, ServesFromMemoryUntilTheDatabaseChanges) {
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  LookupCache cache;
  const v1::LookupRequest mm = Request("C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=8");
  const v1::LookupRequest renamed = Request("Out[i,j] += X[i,l] * Y[l,j]", "i=8,j=8,l=8");

  absl::StatusOr<v1::LookupResponse> r = cache.Lookup(*db, mm);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  r = cache.Lookup(*db, mm);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(cache.hits(), 1);

  AddRecord(*db, mm, "distribute([m], [mo], [mi], [x])\nshard(A, m@x)\nshard(C, m@x)\n", 2.0);
  r = cache.Lookup(*db, mm);  // the new record, not the remembered NOT_FOUND
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t first = r->record().id();
  EXPECT_EQ(r->record().predicted_s(), 2.0);
  r = cache.Lookup(*db, mm);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->record().id(), first);
  EXPECT_EQ(cache.hits(), 2);
  const absl::StatusOr<v1::LookupResponse> direct = engine::Lookup(*db, mm);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(r->SerializeAsString(), direct->SerializeAsString());

  // A renamed problem is its own entry, in its own names.
  r = cache.Lookup(*db, renamed);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->record().id(), first);
  EXPECT_NE(r->record().trace().text().find("shard(X, i@x)"), std::string::npos)
      << r->record().trace().text();

  // A better record replaces the remembered answer.
  AddRecord(*db, mm, "distribute([n], [no], [ni], [x])\nshard(B, n@x)\nshard(C, n@x)\n", 1.0);
  r = cache.Lookup(*db, mm);
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->record().id(), first);
  EXPECT_EQ(r->record().predicted_s(), 1.0);
  EXPECT_EQ(cache.hits(), 2);

  // Bad input is answered (and remembered) with the parser's message.
  r = cache.Lookup(*db, Request("C[m,n] += A[m,k] * B[k,n]", "m=8,n=-8,k=8"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LookupCacheTest, TrustsAGenerationReadForTheRecheckTimeUntilInvalidated) {
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  LookupCache cache(/*capacity=*/16, /*recheck=*/absl::Hours(1));
  const v1::LookupRequest mm = Request("C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=8");
  EXPECT_EQ(cache.Lookup(*db, mm).status().code(), absl::StatusCode::kNotFound);

  // Within the recheck time a write the cache was not told of is not seen yet...
  AddRecord(*db, mm, "distribute([m], [mo], [mi], [x])\nshard(A, m@x)\nshard(C, m@x)\n", 2.0);
  EXPECT_EQ(cache.Lookup(*db, mm).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(cache.hits(), 1);

  // ...and once told, the next Lookup reads the database again.
  cache.Invalidate();
  absl::StatusOr<v1::LookupResponse> r = cache.Lookup(*db, mm);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->record().predicted_s(), 2.0);
  r = cache.Lookup(*db, mm);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(cache.hits(), 2);
}

}  // namespace
}  // namespace meshtune::daemon
