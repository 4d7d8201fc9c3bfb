// The schedule a plan is made of (meshtune/plan.h), from choice on rank 0 to a Program on
// every rank: from a wisdom file, the best record's program when the record carries a
// trusted one (engine/wisdom.h: its digest matches), so that no rank needs isl; otherwise,
// and for estimates, the trace, which every rank lowers. Internal to //:meshtune.
#ifndef MESHTUNE_MESHTUNE_CHOSEN_SCHEDULE_H_
#define MESHTUNE_MESHTUNE_CHOSEN_SCHEDULE_H_

#include <mpi.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "proto/meshtune.pb.h"

namespace meshtune::internal {

// A schedule chosen on rank 0.
struct ChosenSchedule {
  std::string trace, mesh;  // in the caller's names
  double measured_s = -1;   // the record's measured median; negative when not measured
  // A trusted wisdom program: its bytes (a meshtune.v1.Program, in the workload's
  // canonical names), and the caller's name of each of its tensors, in its order. Empty
  // when the trace is to be lowered.
  std::string program;
  std::vector<std::string> tensors;
  // When the record's answer is the library: a serialized meshtune.v1.LibraryRun (the plan
  // calls ScaLAPACK's GEMM on block-cyclic shards; trace and program are not used). Empty
  // for a schedule.
  std::string library;
};

// The best record of `request`'s workload in the wisdom file at `path` (rank 0 only), with
// its program when trusted and readable. NotFound "no tuning record for ... in wisdom file
// PATH"; InvalidArgument "PATH: wisdom line N: ..." for a bad line of the workload.
absl::StatusOr<ChosenSchedule> ChooseFromWisdom(const std::string& path,
                                                const v1::LookupRequest& request);

// Rank 0's `c` on every rank of `comm`, in one broadcast when it fits in 16 KiB (a
// schedule with its program does), else two. Collective.
void BroadcastSchedule(ChosenSchedule* c, MPI_Comm comm);

// The Program of `c` for `problem` (every rank): the program read back when `c` carries
// one, else the trace lowered (engine::LowerTrace: judged, lowered, validated). Sets
// `tensors` to the caller's names of the program's tensors, in its order.
absl::StatusOr<codegen::Program> ScheduleProgram(const v1::Problem& problem,
                                                 const ChosenSchedule& c,
                                                 std::vector<std::string>* tensors);

}  // namespace meshtune::internal

#endif  // MESHTUNE_MESHTUNE_CHOSEN_SCHEDULE_H_
