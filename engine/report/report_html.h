// The tuning report: one self-contained HTML page (inline SVG and style, no scripts, no
// network references) about one tuned schedule — the problem and mesh; the winner's trace,
// pseudo-code and the cost model's cost per transfer; each tensor's sharding on the mesh;
// the tuning curve; predicted against measured time of the measured candidates; the measured
// candidates and library configurations side by side (their samples as boxes on one time
// axis, engine/report/box_svg.h, and the tune's decision between the fastest two); the library; the
// gap to the communication lower bound; the pruning counts by reason. `meshtune tune --report`,
// `meshtune report` and meshtuned's HTTP pages write it.
//
// The winner's program, costs and shardings are recomputed from its trace when the report is
// made; the curve, measurements and counts come from the tune's summary (engine/
// tune_summary.h), which records written before schema version 4 lack: their report says so
// in those sections.
#ifndef MESHTUNE_ENGINE_REPORT_REPORT_HTML_H_
#define MESHTUNE_ENGINE_REPORT_REPORT_HTML_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cost/cost_params.h"
#include "proto/meshtune.pb.h"
#include "storage/tuning_db.h"

namespace meshtune::engine {

// What a report is made of.
struct ReportInput {
  v1::Record record;                       // the winner, in the names to show
  std::optional<v1::TuneSummary> summary;  // how the tune went; nullopt: none recorded
  cost::CostParams params;  // the machine numbers to cost the winner with (as the tuner
                            // does: scaled to the mesh's ranks, cost::ForRanks)
  std::string params_note;  // where they come from, said in the report
  std::string origin;       // "record 3", "tune (not stored)", ...
  std::string header_html;  // HTML put first in the body (navigation)
  // A program's tune (the record's problem a program of several statements): the schedules
  // it ranked and measured, and the moves between the statements; nullopt for a stored
  // record, whose report says what it cannot show without it.
  std::optional<v1::ProgramResult> program;
};

// The report page of `input`. A trace that no longer lowers gets its error in the sections
// that need the program; the others are drawn. For a program of several statements: the
// program and mesh, the schedules of its tune (input.program), the layouts between the
// statements (each intermediate, and each input read by several, read in place or moved),
// then a section per statement ("statement-N": its trace, pseudo-code, cost per transfer
// and sharding, element ids prefixed "sN-").
std::string ReportHtml(const ReportInput& input);

// The machine numbers of the hardware profile `profile` ("" means "default") for a report,
// and in `note` where they come from: the profile's own, or the built-in numbers when it
// does not exist (or cannot be read), which the note then says.
cost::CostParams ReportCostParams(const std::string& profile, std::string* note);

// The report of record `id` of `db`: in the names of the tune that wrote it when it has a
// summary (canonical names otherwise), costed with its profile's numbers (ReportCostParams).
// `header_html` goes first in the body. NotFound "no tuning record with id N" for an unknown
// id; the database's errors otherwise.
absl::StatusOr<std::string> RecordReportHtml(storage::TuningDb& db, int64_t id,
                                             const std::string& header_html = "");

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_REPORT_REPORT_HTML_H_
