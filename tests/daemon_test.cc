// End to end: the meshtuned daemon on a free loopback port with a temporary database,
// driven by a gRPC client. Health and reflection, Tune streaming progress then a result,
// Lookup (also under renamed indices and tensors), NOT_FOUND for untuned problems, Explain,
// Codegen, records, bad input as INVALID_ARGUMENT (the daemon keeps serving), bytes that do
// not parse never UNIMPLEMENTED, shared jobs,
// deadlines and cancellation (a measured tune's mpirun gone soon after its deadline, a
// calibration on first use not holding the call past it), 8 clients looking up during a
// tune, and a clean SIGTERM.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "proto/meshtune.grpc.pb.h"
#include "tests/meshtuned_process.h"
#include "tests/protos/health.grpc.pb.h"
#include "tests/protos/reflection.grpc.pb.h"
#include "tests/test_util.h"

namespace meshtune {
namespace {

using ::grpc::ClientContext;
using ::grpc::StatusCode;

constexpr char kMatmul[] = "C[m,n] += A[m,k] * B[k,n]";
constexpr char kSmall[] = "m=64,n=64,k=64";

std::string TmpDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp ? tmp : "/tmp";
}

// One meshtuned process: started on 127.0.0.1:0 with a database under $TEST_TMPDIR and an
// empty MESHTUNE_HOME (so the tuner uses the built-in machine numbers), logging at debug.
class Daemon : public testing::MeshtunedProcess {
 public:
  explicit Daemon(const std::string& name)
      : MeshtunedProcess(TmpDir() + "/" + name + ".db", TmpDir() + "/" + name + ".err",
                         TmpDir() + "/" + name + "_home", {"--log-level", "debug"}),
        db_(TmpDir() + "/" + name + ".db") {}

  const std::string& db() const { return db_; }

  std::unique_ptr<v1::Tuner::Stub> Tuner() const { return v1::Tuner::NewStub(Channel()); }
  std::shared_ptr<grpc::Channel> Channel() const {
    return grpc::CreateChannel(address(), grpc::InsecureChannelCredentials());
  }

 private:
  std::string db_;
};

v1::Problem Problem(const std::string& expr, const std::string& extents) {
  v1::Problem p;
  p.set_expr(expr);
  p.set_extents(extents);
  return p;
}

// A model-only tune of `expr` on `ranks` ranks (small enough for a few seconds).
v1::TuneRequest TuneRequest(const std::string& expr = kMatmul, const std::string& extents = kSmall,
                            int64_t ranks = 4, int64_t max_evaluations = 50) {
  v1::TuneRequest r;
  *r.mutable_problem() = Problem(expr, extents);
  r.set_ranks(ranks);
  r.set_model_only(true);
  r.set_max_evaluations(max_evaluations);
  return r;
}

v1::LookupRequest LookupRequest(const std::string& expr, const std::string& extents,
                                int64_t ranks = 4) {
  v1::LookupRequest r;
  *r.mutable_problem() = Problem(expr, extents);
  r.set_ranks(ranks);
  return r;
}

// What one Tune call streamed.
struct TuneCall {
  grpc::Status status;
  std::vector<v1::TuneProgress> progress;
  std::optional<v1::TuneResult> result;
  int events_after_result = 0;
};

TuneCall Tune(v1::Tuner::Stub& stub, const v1::TuneRequest& request, ClientContext* context) {
  TuneCall call;
  std::unique_ptr<grpc::ClientReader<v1::TuneEvent>> reader = stub.Tune(context, request);
  v1::TuneEvent event;
  while (reader->Read(&event)) {
    if (call.result.has_value()) ++call.events_after_result;
    if (event.has_progress()) call.progress.push_back(event.progress());
    if (event.has_result()) call.result = event.result();
  }
  call.status = reader->Finish();
  return call;
}

TuneCall Tune(v1::Tuner::Stub& stub, const v1::TuneRequest& request) {
  ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(240));
  return Tune(stub, request, &context);
}

grpc::Status Lookup(v1::Tuner::Stub& stub, const v1::LookupRequest& request,
                    v1::LookupResponse* response) {
  ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  return stub.Lookup(&context, request, response);
}

grpc::Status Explain(v1::Tuner::Stub& stub, const v1::ExplainRequest& request,
                     v1::ExplainResponse* response) {
  ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  return stub.Explain(&context, request, response);
}

v1::ExplainRequest ExplainRequest(const std::string& expr, const std::string& extents,
                                  const std::string& mesh, const std::string& trace) {
  v1::ExplainRequest r;
  *r.mutable_problem() = Problem(expr, extents);
  r.mutable_mesh()->set_axes(mesh);
  r.mutable_trace()->set_text(trace);
  return r;
}

grpc::health::v1::HealthCheckResponse::ServingStatus Health(const Daemon& d,
                                                            const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(d.Channel());
  ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response.status();
}

std::string Summa2x2() { return testing::ReadFile("tests/testdata/summa_2x2.trace"); }

// How many processes named `name` (their comm) have `parent` as their parent, from /proc.
int ChildrenNamed(pid_t parent, const std::string& name) {
  int n = 0;
  for (const std::filesystem::directory_entry& e : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = e.path().filename().string();
    if (pid.empty() || !std::isdigit(static_cast<unsigned char>(pid[0]))) continue;
    // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so read around the
    // last ')'.
    const std::string stat = testing::ReadFile(e.path().string() + "/stat");
    const size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %*c %d", &ppid) != 1) continue;
    if (ppid == parent && stat.substr(open + 1, close - open - 1) == name) ++n;
  }
  return n;
}

// Polls `done` every 50 ms for up to `timeout`; whether it came true.
bool WaitFor(const std::function<bool()>& done, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// The daemon every test but the shutdown ones shares, started once.
class DaemonTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { daemon_ = new Daemon("shared"); }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  void SetUp() override {
    ASSERT_FALSE(daemon_->address().empty()) << "meshtuned did not start:\n" << daemon_->log();
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << "meshtuned log:\n" << daemon_->log();
  }
  static Daemon* daemon_;
};

Daemon* DaemonTest::daemon_ = nullptr;

TEST_F(DaemonTest, HealthServingAndReflectionListsTheTuner) {
  EXPECT_EQ(Health(*daemon_, ""), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(Health(*daemon_, "meshtune.v1.Tuner"), grpc::health::v1::HealthCheckResponse::SERVING);

  auto stub = grpc::reflection::v1alpha::ServerReflection::NewStub(daemon_->Channel());
  ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto stream = stub->ServerReflectionInfo(&context);
  grpc::reflection::v1alpha::ServerReflectionRequest request;
  request.set_list_services("");
  ASSERT_TRUE(stream->Write(request));
  stream->WritesDone();
  grpc::reflection::v1alpha::ServerReflectionResponse response;
  ASSERT_TRUE(stream->Read(&response));
  std::vector<std::string> names;
  for (const auto& s : response.list_services_response().service()) names.push_back(s.name());
  EXPECT_NE(std::find(names.begin(), names.end(), "meshtune.v1.Tuner"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "grpc.health.v1.Health"), names.end());
  while (stream->Read(&response)) {
  }
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(DaemonTest, TuneStreamsProgressThenResultAndLookupFindsItUnderAnyNames) {
  auto stub = daemon_->Tuner();
  const TuneCall call = Tune(*stub, TuneRequest());
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  ASSERT_GE(call.progress.size(), 1u);
  ASSERT_TRUE(call.result.has_value());
  EXPECT_EQ(call.events_after_result, 0);
  const v1::TuneResult& result = *call.result;
  EXPECT_TRUE(result.stored());
  EXPECT_GT(result.record().id(), 0);
  EXPECT_EQ(result.record().fingerprint().size(), 64u);
  EXPECT_GT(result.legal(), 0);
  EXPECT_GT(result.costed(), 0);
  EXPECT_GT(result.record().predicted_s(), 0);
  EXPECT_FALSE(result.record().verified());  // model-only
  EXPECT_FALSE(result.record().trace().text().empty());
  EXPECT_EQ(result.record().workload_mesh(), "ranks=4");
  // The meshes as values too: the rank count asked, the axes chosen.
  EXPECT_EQ(result.record().workload_ranks(), 4);
  std::vector<std::string> dims;
  int64_t ranks = 1;
  for (const v1::MeshAxis& a : result.record().mesh_dims()) {
    dims.push_back(absl::StrCat(a.name(), "=", a.size()));
    ranks *= a.size();
  }
  EXPECT_EQ(absl::StrJoin(dims, ","), result.record().mesh());
  EXPECT_EQ(ranks, 4);

  v1::LookupResponse same;
  grpc::Status status = Lookup(*stub, LookupRequest(kMatmul, kSmall), &same);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(same.record().id(), result.record().id());
  EXPECT_EQ(same.record().trace().text(), result.record().trace().text());
  EXPECT_EQ(same.record().mesh(), result.record().mesh());
  EXPECT_EQ(same.record().mesh_dims_size(), result.record().mesh_dims_size());
  EXPECT_EQ(same.record().workload_ranks(), 4);
  // A request may give the mesh as values: the record's dims explain as its text does.
  {
    v1::ExplainRequest by_dims = ExplainRequest(kMatmul, kSmall, "", same.record().trace().text());
    *by_dims.mutable_mesh()->mutable_dims() = same.record().mesh_dims();
    v1::ExplainResponse legal;
    status = Explain(*stub, by_dims, &legal);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_TRUE(legal.legal());
    by_dims.mutable_mesh()->set_axes(same.record().mesh());
    status = Explain(*stub, by_dims, &legal);
    EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(status.error_message(), absl::StrCat("give the mesh's axes (\"", same.record().mesh(),
                                                   "\") or its dims, not both"));
  }

  // Renamed indices and tensors (and extents in another order): the same record, in the new names.
  const std::string renamed = "Out[i,j] += X[i,l] * Y[l,j]";
  v1::LookupResponse other;
  status = Lookup(*stub, LookupRequest(renamed, "l=64,j=64,i=64"), &other);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(other.record().id(), result.record().id());
  EXPECT_EQ(other.record().problem().expr(), renamed);
  const std::string& trace = other.record().trace().text();
  EXPECT_EQ(trace.find("A,"), std::string::npos) << trace;
  EXPECT_NE(trace.find("X"), std::string::npos) << trace;
  // ... and it is the same legal schedule on the renamed problem.
  v1::ExplainResponse verdict;
  status = Explain(*stub, ExplainRequest(renamed, "i=64,j=64,l=64", other.record().mesh(), trace),
                   &verdict);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(verdict.legal()) << trace;

  // The record by id, in canonical names and in the renamed problem's names.
  {
    ClientContext context;
    v1::GetRecordRequest get;
    get.set_id(result.record().id());
    v1::Record canonical;
    ASSERT_TRUE(stub->GetRecord(&context, get, &canonical).ok());
    EXPECT_NE(canonical.trace().text().find("T1"), std::string::npos) << canonical.trace().text();
    EXPECT_NE(canonical.problem().expr().find("T0[i0,i1]"), std::string::npos);
  }
  {
    ClientContext context;
    v1::GetRecordRequest get;
    get.set_id(result.record().id());
    *get.mutable_problem() = Problem(renamed, "i=64,j=64,l=64");
    v1::Record named;
    ASSERT_TRUE(stub->GetRecord(&context, get, &named).ok());
    EXPECT_EQ(named.trace().text(), trace);
  }
  {
    ClientContext context;
    v1::ListRecordsRequest list;
    *list.mutable_problem() = Problem(kMatmul, kSmall);
    list.set_ranks(4);
    v1::ListRecordsResponse page;
    ASSERT_TRUE(stub->ListRecords(&context, list, &page).ok());
    ASSERT_GE(page.records_size(), 1);
    EXPECT_EQ(page.records(0).problem().expr(), kMatmul);
  }
  // With a memory budget per rank: the record when its schedule fits, NOT_FOUND when not.
  {
    v1::LookupRequest roomy = LookupRequest(kMatmul, kSmall);
    roomy.mutable_mesh()->set_mem_per_rank("1GiB");
    v1::LookupResponse fits;
    ASSERT_TRUE(Lookup(*stub, roomy, &fits).ok());
    EXPECT_EQ(fits.record().id(), result.record().id());
    v1::LookupRequest tight = LookupRequest(kMatmul, kSmall);
    tight.mutable_mesh()->set_mem_per_rank("64B");
    v1::LookupResponse none;
    const grpc::Status s = Lookup(*stub, tight, &none);
    EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND) << s.error_message();
    EXPECT_NE(s.error_message().find("fits 64B per rank"), std::string::npos) << s.error_message();
  }
  // Codegen of the record, in the renamed problem's names.
  {
    ClientContext context;
    v1::CodegenRequest gen;
    gen.set_record_id(result.record().id());
    gen.set_main(true);  // the standalone program
    *gen.mutable_problem() = Problem(renamed, "i=64,j=64,l=64");
    v1::CodegenResponse source;
    const grpc::Status s = stub->Codegen(&context, gen, &source);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_NE(source.source().find("MPI_Init"), std::string::npos);
    EXPECT_EQ(source.header(), "");
  }
}

TEST_F(DaemonTest, AMeasuredTuneRunsUnderMpiAndLookupPrefersTheVerifiedRecord) {
  auto stub = daemon_->Tuner();
  v1::TuneRequest request = TuneRequest(kMatmul, "m=32,n=32,k=64", 2);
  request.set_model_only(false);
  request.set_top_k(1);
  const TuneCall call = Tune(*stub, request);
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  ASSERT_TRUE(call.result.has_value());
  ASSERT_EQ(call.result->measurements_size(), 1);
  EXPECT_TRUE(call.result->measurements(0).verified()) << call.result->measurements(0).error();
  EXPECT_TRUE(call.result->record().verified());
  EXPECT_TRUE(call.result->record().has_measured_s());
  EXPECT_TRUE(call.result->stored());
  // The schedule and the library's configurations, measured side by side.
  const int side_by_side = call.result->measurements_size() + call.result->library_size();
  bool measuring = false;
  for (const v1::TuneProgress& p : call.progress)
    measuring |= p.stage() == "measure" && p.to_measure() == side_by_side;
  EXPECT_TRUE(measuring);
  EXPECT_EQ(call.result->record().timing(), "measured");
  EXPECT_EQ(call.result->record().sample().n(), call.result->measurements(0).sample().n());

  // A model-only tune of the same workload adds an unverified record; Lookup keeps the verified
  // one.
  const TuneCall model = Tune(*stub, TuneRequest(kMatmul, "m=32,n=32,k=64", 2));
  ASSERT_TRUE(model.status.ok()) << model.status.error_message();
  EXPECT_NE(model.result->record().id(), call.result->record().id());
  v1::LookupResponse found;
  ASSERT_TRUE(Lookup(*stub, LookupRequest(kMatmul, "m=32,n=32,k=64", 2), &found).ok());
  EXPECT_EQ(found.record().id(), call.result->record().id());
  EXPECT_TRUE(found.record().verified());
  // Lookup's record carries the sample it was measured with: n, median, interval.
  EXPECT_EQ(found.record().timing(), "measured");
  EXPECT_EQ(found.record().sample().n(), call.result->record().sample().n());
  EXPECT_EQ(found.record().sample().median_s(), found.record().measured_s());
  EXPECT_LE(found.record().sample().ci_low_s(), found.record().measured_s());
  EXPECT_GE(found.record().sample().ci_high_s(), found.record().measured_s());
}

TEST_F(DaemonTest, LookupOfAnUntunedProblemIsNotFound) {
  auto stub = daemon_->Tuner();
  v1::LookupResponse response;
  const grpc::Status status =
      Lookup(*stub, LookupRequest(kMatmul, "m=128,n=64,k=32", 2), &response);
  EXPECT_EQ(status.error_code(), StatusCode::NOT_FOUND) << status.error_message();
  EXPECT_NE(status.error_message().find("tune it first"), std::string::npos)
      << status.error_message();
  ClientContext context;
  v1::GetRecordRequest get;
  get.set_id(999999);
  v1::Record record;
  EXPECT_EQ(stub->GetRecord(&context, get, &record).error_code(), StatusCode::NOT_FOUND);
}

// Lookup with nearest: for extents never tuned, the schedule of the record at other
// extents, re-costed at these and marked transferred (never served from the lookup cache,
// never stored); an exact record is returned as it is.
TEST_F(DaemonTest, LookupWithNearestTransfersARecordFromOtherExtents) {
  auto stub = daemon_->Tuner();
  const std::string matvec = "v[a] += M[a,b] * u[b]";
  const TuneCall call = Tune(*stub, TuneRequest(matvec, "a=64,b=64", 2));
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  ASSERT_TRUE(call.result.has_value() && call.result->stored());
  const int64_t source = call.result->record().id();

  v1::LookupRequest request = LookupRequest(matvec, "a=128,b=256", 2);
  v1::LookupResponse response;
  EXPECT_EQ(Lookup(*stub, request, &response).error_code(), StatusCode::NOT_FOUND);
  request.set_nearest(true);
  for (int i = 0; i < 2; ++i) {  // twice: the second is not a stale cached answer either
    response.Clear();
    const grpc::Status status = Lookup(*stub, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_TRUE(response.transferred());
    EXPECT_EQ(response.transferred_from(), source);
    EXPECT_EQ(response.transferred_extents(), "a=64,b=64");
    EXPECT_EQ(response.record().id(), 0);
    EXPECT_EQ(response.record().problem().extents(), "a=128,b=256");
    EXPECT_EQ(response.record().mesh(), call.result->record().mesh());
    EXPECT_EQ(response.record().workload_mesh(), "ranks=2");
    EXPECT_GT(response.record().predicted_s(), call.result->record().predicted_s());
    EXPECT_FALSE(response.record().has_measured_s());
  }
  // Nothing was stored: without nearest it is still not found.
  EXPECT_EQ(Lookup(*stub, LookupRequest(matvec, "a=128,b=256", 2), &response).error_code(),
            StatusCode::NOT_FOUND);
  // The tuned extents themselves: the record, not transferred.
  request = LookupRequest(matvec, "a=64,b=64", 2);
  request.set_nearest(true);
  response.Clear();
  ASSERT_TRUE(Lookup(*stub, request, &response).ok());
  EXPECT_FALSE(response.transferred());
  EXPECT_EQ(response.record().id(), source);
}

TEST_F(DaemonTest, ExplainAndCodegenAnswer) {
  auto stub = daemon_->Tuner();
  v1::ExplainResponse verdict;
  const grpc::Status status =
      Explain(*stub, ExplainRequest(kMatmul, "m=32,n=24,k=16", "x=2,y=2", Summa2x2()), &verdict);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(verdict.legal());
  EXPECT_FALSE(verdict.pseudocode().empty());
  ASSERT_EQ(verdict.transfers_size(), 2);
  EXPECT_EQ(verdict.transfers(0).pattern(), "Broadcast");

  ClientContext context;
  v1::CodegenRequest gen;
  *gen.mutable_problem() = Problem(kMatmul, "m=32,n=24,k=16");
  gen.mutable_mesh()->set_axes("x=2,y=2");
  gen.mutable_trace()->set_text(Summa2x2());
  gen.set_name("summa");
  v1::CodegenResponse source;
  const grpc::Status s = stub->Codegen(&context, gen, &source);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // The callable kernel: its header, and a self-contained source (no header name given).
  EXPECT_NE(source.header().find("\nint summa(float* C, const float* A, const float* B, "
                                 "MPI_Comm comm);\n"),
            std::string::npos)
      << source.header();
  EXPECT_EQ(source.source().rfind(source.header(), 0), 0u);
  EXPECT_NE(source.source().find("rt->Run("), std::string::npos);
}

// Checks that `text` contains `part`, printing `text` when it does not.
#define EXPECT_CONTAINS(text, part)                              \
  do {                                                           \
    const std::string mt_text = (text);                          \
    EXPECT_NE(mt_text.find(part), std::string::npos) << mt_text; \
  } while (0)

// The message of a failed call, after checking that it is INVALID_ARGUMENT.
std::string InvalidArgument(const grpc::Status& status) {
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT) << status.error_message();
  return status.error_message();
}

TEST_F(DaemonTest, BadInputIsInvalidArgumentNamingTheTokenAndTheDaemonKeepsServing) {
  auto stub = daemon_->Tuner();
  auto lookup = [&](const v1::LookupRequest& r) {
    v1::LookupResponse response;
    return InvalidArgument(Lookup(*stub, r, &response));
  };
  auto explain = [&](const v1::ExplainRequest& r) {
    v1::ExplainResponse response;
    return InvalidArgument(Explain(*stub, r, &response));
  };
  auto tune = [&](const v1::TuneRequest& r) {
    const TuneCall call = Tune(*stub, r);
    EXPECT_TRUE(call.progress.empty());
    return InvalidArgument(call.status);
  };
  // Malformed expressions.
  const std::string unbalanced = "C[m,n] += A[m,k] * B[k,n";
  EXPECT_CONTAINS(lookup(LookupRequest(unbalanced, kSmall)), "unbalanced '[' of B");
  EXPECT_CONTAINS(tune(TuneRequest(unbalanced)), "unbalanced '[' of B");
  EXPECT_CONTAINS(
      explain(ExplainRequest("C[m,n] += A[m,k] ** B[k,n]", kSmall, "x=2,y=2", Summa2x2())), "'*'");
  // Unknown tensors in traces.
  EXPECT_CONTAINS(
      explain(ExplainRequest(kMatmul, kSmall, "x=2,y=2", Summa2x2() + "shard(Z, m@x)\n")),
      "unknown tensor Z");
  {
    ClientContext context;
    v1::CodegenRequest gen;
    *gen.mutable_problem() = Problem(kMatmul, kSmall);
    gen.mutable_mesh()->set_axes("x=2,y=2");
    gen.mutable_trace()->set_text("shard(Q, m@x)\n");
    v1::CodegenResponse source;
    EXPECT_CONTAINS(InvalidArgument(stub->Codegen(&context, gen, &source)), "unknown tensor Q");
  }
  // A 1 MiB expression.
  const std::string big(1 << 20, 'A');
  EXPECT_CONTAINS(lookup(LookupRequest(big, kSmall)), "expression is 1048576 bytes long");
  EXPECT_CONTAINS(tune(TuneRequest(big)), "expression is 1048576 bytes long");
  EXPECT_CONTAINS(explain(ExplainRequest(big, kSmall, "x=2,y=2", Summa2x2())), "1048576");
  // A mesh of a million ranks, as a rank count and as axes.
  EXPECT_CONTAINS(lookup(LookupRequest(kMatmul, kSmall, 1000000)), "1000000");
  EXPECT_CONTAINS(tune(TuneRequest(kMatmul, kSmall, 1000000)), "1000000");
  {
    v1::LookupRequest r = LookupRequest(kMatmul, kSmall, 0);
    r.mutable_mesh()->set_axes("x=1000,y=1000");
    EXPECT_CONTAINS(lookup(r), "y=1000");
  }
  EXPECT_CONTAINS(explain(ExplainRequest(kMatmul, kSmall, "x=1000,y=1000", Summa2x2())), "y=1000");
  // Negative extents.
  EXPECT_CONTAINS(lookup(LookupRequest(kMatmul, "m=64,n=-4,k=64")),
                  "extent of n must be positive, got -4");
  EXPECT_CONTAINS(tune(TuneRequest(kMatmul, "m=64,n=-4,k=64")), "got -4");
  EXPECT_CONTAINS(explain(ExplainRequest(kMatmul, "m=-64,n=4,k=64", "x=2,y=2", Summa2x2())),
                  "got -64");
  // Other bad Tune and record requests.
  {
    v1::TuneRequest r = TuneRequest();
    r.mutable_mesh()->set_axes("x=2,y=2");
    EXPECT_CONTAINS(tune(r), "exactly one of mesh");
  }
  {
    v1::TuneRequest r = TuneRequest();
    r.set_top_k(-3);
    r.set_model_only(false);
    EXPECT_CONTAINS(tune(r), "-3");
  }
  {
    ClientContext context;
    v1::ListRecordsRequest list;
    list.set_page_token("bogus");
    v1::ListRecordsResponse page;
    EXPECT_CONTAINS(InvalidArgument(stub->ListRecords(&context, list, &page)), "bogus");
  }

  // Still serving.
  EXPECT_EQ(Health(*daemon_, ""), grpc::health::v1::HealthCheckResponse::SERVING);
  v1::ExplainResponse verdict;
  EXPECT_TRUE(
      Explain(*stub, ExplainRequest(kMatmul, "m=32,n=24,k=16", "x=2,y=2", Summa2x2()), &verdict)
          .ok());
  EXPECT_TRUE(verdict.legal());
}

// A request whose bytes do not parse — 64 random bytes, or a string field of invalid
// UTF-8 — is answered INVALID_ARGUMENT or INTERNAL by every unary RPC, never UNIMPLEMENTED
// (the method exists), and the daemon keeps serving.
TEST_F(DaemonTest, BytesThatDoNotParseAreNeverUnimplemented) {
  std::string random(64, '\0');
  uint32_t x = 12345;
  for (char& c : random) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  // problem (1) { expr (1): "\xff\xfe" }: a string that is not UTF-8 (GetRecordRequest has
  // no string field).
  const std::string bad_utf8 = std::string("\x0a\x04\x0a\x02\xff\xfe", 6);
  grpc::GenericStub generic(daemon_->Channel());
  for (const char* name : {"Lookup", "Explain", "Codegen", "ListRecords", "GetRecord"}) {
    const std::string method = name;
    for (const std::string* payload : std::vector<const std::string*>{&random, &bad_utf8}) {
      const std::string& bytes = *payload;
      if (method == "GetRecord" && payload == &bad_utf8) continue;
      SCOPED_TRACE(method + " with " + std::to_string(bytes.size()) + " bytes");
      grpc::Slice slice(bytes);
      grpc::ByteBuffer request(&slice, 1), response;
      ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      std::mutex mu;
      std::condition_variable done_cv;
      bool done = false;
      grpc::Status status;
      generic.UnaryCall(&context, "/meshtune.v1.Tuner/" + method, grpc::StubOptions(), &request,
                        &response, [&](grpc::Status s) {
                          std::lock_guard<std::mutex> lock(mu);
                          status = std::move(s);
                          done = true;
                          done_cv.notify_one();
                        });
      std::unique_lock<std::mutex> lock(mu);
      done_cv.wait(lock, [&] { return done; });
      EXPECT_TRUE(status.error_code() == StatusCode::INVALID_ARGUMENT ||
                  status.error_code() == StatusCode::INTERNAL)
          << status.error_code() << ": " << status.error_message();
    }
  }
  // And it still answers: a workload no test tunes is not found.
  v1::LookupResponse response;
  EXPECT_EQ(
      Lookup(*daemon_->Tuner(), LookupRequest(kMatmul, "m=40,n=40,k=40"), &response).error_code(),
      StatusCode::NOT_FOUND);
}

TEST_F(DaemonTest, IdenticalConcurrentTunesShareOneJob) {
  // Another seed than the other tests', so that no finished job or record is reused.
  v1::TuneRequest request = TuneRequest(kMatmul, "m=64,n=32,k=64", 4);
  request.set_seed(7);
  auto stub = daemon_->Tuner();
  TuneCall first, second;
  std::thread a([&] { first = Tune(*stub, request); });
  std::thread b([&] { second = Tune(*stub, request); });
  a.join();
  b.join();
  ASSERT_TRUE(first.status.ok()) << first.status.error_message();
  ASSERT_TRUE(second.status.ok()) << second.status.error_message();
  ASSERT_TRUE(first.result && second.result);
  // One job, one stored record.
  EXPECT_EQ(first.result->record().id(), second.result->record().id());
  EXPECT_NE(daemon_->log().find("joined a running job"), std::string::npos);
}

TEST_F(DaemonTest, DeadlinesAndCancellationEndTheCall) {
  auto stub = daemon_->Tuner();
  v1::TuneRequest slow = TuneRequest(kMatmul, "m=512,n=512,k=512", 16, 100000);
  {
    ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    const auto start = std::chrono::steady_clock::now();
    const TuneCall call = Tune(*stub, slow, &context);
    EXPECT_EQ(call.status.error_code(), StatusCode::DEADLINE_EXCEEDED)
        << call.status.error_message();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  }
  {
    ClientContext context;
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      context.TryCancel();
    });
    const TuneCall call = Tune(*stub, slow, &context);
    canceller.join();
    EXPECT_EQ(call.status.error_code(), StatusCode::CANCELLED) << call.status.error_message();
  }
  EXPECT_EQ(Health(*daemon_, ""), grpc::health::v1::HealthCheckResponse::SERVING);
}

// A measured tune past its deadline: DEADLINE_EXCEEDED at about the deadline (far below
// the seconds it takes unhindered), and its work stops: the measurement under way is killed
// and none is started again, so no mpirun of the daemon's is left a few seconds later, and
// the daemon serves the next tune.
TEST_F(DaemonTest, AMeasuredTunePastItsDeadlineEndsAndStopsMeasuring) {
  auto stub = daemon_->Tuner();
  // A short search (50 evaluations), then seconds of measurements under MPI.
  v1::TuneRequest measured = TuneRequest(kMatmul, "m=256,n=256,k=256", 4);
  measured.set_model_only(false);
  measured.set_seed(11);
  const size_t logged = daemon_->log().size();
  ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1500));
  const auto start = std::chrono::steady_clock::now();
  const TuneCall call = Tune(*stub, measured, &context);
  EXPECT_EQ(call.status.error_code(), StatusCode::DEADLINE_EXCEEDED) << call.status.error_message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_FALSE(call.result.has_value());
  bool measuring = false;
  for (const v1::TuneProgress& p : call.progress) measuring |= p.stage() == "measure";
  EXPECT_TRUE(measuring) << "the deadline came before the measurements";

  // The job's end, as the daemon logs it: "tune FINGERPRINT: CANCELLED: ...".
  const std::string since = daemon_->log().substr(logged);
  const size_t started = since.find(" on ranks=4 (profile default): started");
  ASSERT_NE(started, std::string::npos) << since;
  const size_t from = since.rfind("tune ", started);
  ASSERT_NE(from, std::string::npos) << since;
  const std::string ended = absl::StrCat(since.substr(from, started - from), ": CANCELLED");
  EXPECT_TRUE(WaitFor([&] { return daemon_->log().find(ended, logged) != std::string::npos; },
                      std::chrono::seconds(6)))
      << "the tune still runs seconds after its deadline";
  EXPECT_EQ(ChildrenNamed(daemon_->pid(), "mpirun"), 0);
  EXPECT_EQ(Health(*daemon_, ""), grpc::health::v1::HealthCheckResponse::SERVING);
  const TuneCall next = Tune(*stub, TuneRequest(kMatmul, "m=32,n=64,k=32", 2));
  EXPECT_TRUE(next.status.ok()) << next.status.error_message();
}

TEST_F(DaemonTest, EightClientsLookUpWhileATuneRuns) {
  auto stub = daemon_->Tuner();
  // A record to look up.
  const TuneCall seed = Tune(*stub, TuneRequest(kMatmul, "m=32,n=32,k=32", 2));
  ASSERT_TRUE(seed.status.ok()) << seed.status.error_message();
  const int64_t id = seed.result->record().id();

  // A tune that runs for seconds.
  std::atomic<bool> tune_started{false}, tune_ended{false};
  TuneCall background;
  std::thread tuner([&] {
    ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(240));
    std::unique_ptr<grpc::ClientReader<v1::TuneEvent>> reader =
        stub->Tune(&context, TuneRequest(kMatmul, "m=128,n=128,k=128", 8, 400));
    v1::TuneEvent event;
    while (reader->Read(&event)) {
      if (event.has_progress() && event.progress().stage() != "queued") tune_started = true;
      if (event.has_result()) background.result = event.result();
    }
    background.status = reader->Finish();
    tune_ended = true;
  });
  while (!tune_started) std::this_thread::sleep_for(std::chrono::milliseconds(20));

  constexpr int kClients = 8, kLookups = 25;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto own = daemon_->Tuner();  // a channel per client
      for (int i = 0; i < kLookups; ++i) {
        v1::LookupResponse response;
        // Half of the clients use renamed problems.
        const grpc::Status s =
            c % 2 == 0
                ? Lookup(*own, LookupRequest(kMatmul, "m=32,n=32,k=32", 2), &response)
                : Lookup(*own, LookupRequest("Z[a,b] += P[a,c] * Q[c,b]", "a=32,b=32,c=32", 2),
                         &response);
        if (s.ok() && response.record().id() == id) ++ok;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  const bool still_tuning = !tune_ended.load();
  tuner.join();
  EXPECT_EQ(ok.load(), kClients * kLookups);
  EXPECT_TRUE(still_tuning) << "the tune ended before the lookups did";
  EXPECT_TRUE(background.status.ok()) << background.status.error_message();
}

// SIGTERM with a tune in flight: the tune's caller hears UNAVAILABLE, the daemon exits 0,
// and the database file is consistent.
TEST(DaemonShutdownTest, SigtermCancelsTunesAndLeavesAConsistentDatabase) {
  Daemon daemon("shutdown");
  ASSERT_FALSE(daemon.address().empty()) << daemon.log();
  auto stub = daemon.Tuner();
  const TuneCall stored = Tune(*stub, TuneRequest());
  ASSERT_TRUE(stored.status.ok()) << stored.status.error_message() << daemon.log();

  std::atomic<bool> started{false};
  TuneCall inflight;
  std::thread tuner([&] {
    ClientContext context;
    std::unique_ptr<grpc::ClientReader<v1::TuneEvent>> reader =
        stub->Tune(&context, TuneRequest(kMatmul, "m=512,n=512,k=512", 16, 100000));
    v1::TuneEvent event;
    while (reader->Read(&event)) started = true;
    inflight.status = reader->Finish();
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(daemon.Stop(SIGTERM, 120), 0) << daemon.log();
  tuner.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  EXPECT_EQ(inflight.status.error_code(), StatusCode::UNAVAILABLE)
      << inflight.status.error_message();
  EXPECT_NE(daemon.log().find("shutting down"), std::string::npos);

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(daemon.db().c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::string integrity;
  sqlite3_exec(
      db, "PRAGMA integrity_check",
      [](void* out, int, char** values, char**) {
        *static_cast<std::string*>(out) += values[0] ? values[0] : "";
        return 0;
      },
      &integrity, nullptr);
  sqlite3_close(db);
  EXPECT_EQ(integrity, "ok");
}

// A tune that calibrates a hardware profile on first use (seconds under mpirun) still ends
// at its deadline: the calibration runs in the tune's job, not in the handler, which answers
// DEADLINE_EXCEEDED while it runs; the job, cancelled, does not search once it is done.
TEST(DaemonFirstUseTest, ATuneThatCalibratesFirstEndsAtItsDeadline) {
  unsetenv("MESHTUNE_CALIBRATE");  // the suite sets it to 0 (.bazelrc)
  Daemon daemon("first_use");
  setenv("MESHTUNE_CALIBRATE", "0", 1);
  ASSERT_FALSE(daemon.address().empty()) << daemon.log();
  auto stub = daemon.Tuner();
  ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  const TuneCall call = Tune(*stub, TuneRequest(kMatmul, kSmall, 2), &context);
  EXPECT_EQ(call.status.error_code(), StatusCode::DEADLINE_EXCEEDED) << call.status.error_message();

  ASSERT_TRUE(WaitFor([&] { return daemon.log().find("calibrated one in") != std::string::npos; },
                      std::chrono::seconds(120)))
      << daemon.log();
  const std::string log = daemon.log();
  const size_t late = log.find(": deadline exceeded");
  ASSERT_NE(late, std::string::npos) << log;
  EXPECT_LT(late, log.find("calibrated one in")) << log;
  EXPECT_EQ(log.find("(profile default): started"), std::string::npos) << log;

  // Still serving; the next tune uses the profile made.
  const TuneCall next = Tune(*stub, TuneRequest(kMatmul, kSmall, 2));
  ASSERT_TRUE(next.status.ok()) << next.status.error_message() << daemon.log();
  EXPECT_EQ(testing::Occurrences(daemon.log(), "calibrated one in"), 1) << daemon.log();
}

TEST(DaemonShutdownTest, SigintStopsAnIdleDaemon) {
  Daemon daemon("sigint");
  ASSERT_FALSE(daemon.address().empty()) << daemon.log();
  EXPECT_EQ(Health(daemon, ""), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(daemon.Stop(SIGINT, 60), 0) << daemon.log();
}

}  // namespace
}  // namespace meshtune
