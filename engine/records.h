// Tuning records for callers: the in-process engine behind the Lookup, ListRecords and
// GetRecord RPCs (and the CLI's record commands), and the storing of a tune's winner.
//
// Requests name problems in their own index and tensor names; the database keeps traces
// (and the tensor and loop of each transfer pattern, "T1@i2 AllGather(axes=[0])") in each
// workload's canonical names (storage/workload.h). Everything here translates both ways, so
// a renamed but identical problem finds the same record, written in its names.
// Stateless; thread-safe when the database is (storage::TuningDb implementations are).
#ifndef MESHTUNE_ENGINE_RECORDS_H_
#define MESHTUNE_ENGINE_RECORDS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "ir/trace.h"
#include "proto/meshtune.pb.h"
#include "storage/tuning_db.h"
#include "storage/workload.h"

namespace meshtune::engine {

// The workload of a request: `problem` on `mesh.axes` or, instead, on `ranks` ranks, for
// the hardware profile `profile` ("" means "default"). InvalidArgument naming the offending
// token for a bad problem, mesh, rank count, profile name or memory budget, and when both
// or neither of mesh and ranks are given.
absl::StatusOr<storage::Workload> RequestWorkload(const v1::Problem& problem, const v1::Mesh& mesh,
                                                  int64_t ranks, const std::string& profile);

// The best record of the request's workload, in the request's names; with
// mesh.mem_per_rank, the best whose schedule fits that budget per rank; with machine, the
// best of the records from that machine (Record.machine). With `nearest`, when there is
// none, a schedule transferred from a record of the same problem at other extents
// (engine/nearest.h; never stored). NotFound when the workload has no (fitting) record (and
// no transfer replays legally); InvalidArgument for bad input (see RequestWorkload).
absl::StatusOr<v1::LookupResponse> Lookup(storage::TuningDb& db, const v1::LookupRequest& request);

// One page of records: of the request's workload (its names) or, without a problem, of
// every workload (canonical names). A page token is a record id in decimal: the page
// starts after that record. InvalidArgument for bad input, a page size outside 0..1000 or
// a page token that is not a record id.
absl::StatusOr<v1::ListRecordsResponse> ListRecords(storage::TuningDb& db,
                                                    const v1::ListRecordsRequest& request);

// The record `request.id`, in canonical names or in the names of `request.problem`.
// NotFound for an unknown id; InvalidArgument for a bad problem or one of another workload.
absl::StatusOr<v1::Record> GetRecord(storage::TuningDb& db, const v1::GetRecordRequest& request);

// `request` ready for Codegen (engine/explain.h): when it names a record (record_id set,
// trace empty), with that record's trace in the names of `request.problem` (the record's
// canonical problem when unset) and the record's mesh when `request.mesh.axes` is empty.
// NotFound for an unknown record; InvalidArgument as GetRecord.
absl::StatusOr<v1::CodegenRequest> ResolveCodegenRequest(storage::TuningDb& db,
                                                         const v1::CodegenRequest& request);

// Stores the winner of a tune of workload `w` (`result->record`, in the tuned problem's
// names), with `summary` (how the tune went, for the tuning report) when non-null, and fills
// in the record's id, fingerprint, tuner version and time. The record's sample and timing
// are stored with it: a tune's times are as measured, so a record with measured_s and
// timing left "" is stored, and filled in, as "measured". `best` is the winner's trace as
// the tuner found it; when null, the record's trace text is parsed. InvalidArgument for a
// timing other than "measured", "paced" or ""; errors from the database (or from
// translating the trace) are returned as they are.
absl::Status StoreTuneResult(storage::TuningDb& db, const storage::Workload& w,
                             v1::TuneResult* result, const v1::TuneSummary* summary = nullptr,
                             const ir::Trace* best = nullptr);

// The summary stored with record `id` (storage::TuningRecord::summary); nullopt when the
// record has none (it predates summaries). NotFound "no tuning record with id N" for an
// unknown id; DataLoss when the stored bytes do not parse.
absl::StatusOr<std::optional<v1::TuneSummary>> GetTuneSummary(storage::TuningDb& db, int64_t id);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_RECORDS_H_
