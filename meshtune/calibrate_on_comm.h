// A plan's calibration on first use: when no hardware profile answers for the
// communicator's size, the plan measures one on the communicator itself (no mpirun from
// inside an application) and stores it as the automatic profile of that size
// (engine/tune/machine_profile.h), before rank 0 searches.
#ifndef MESHTUNE_MESHTUNE_CALIBRATE_ON_COMM_H_
#define MESHTUNE_MESHTUNE_CALIBRATE_ON_COMM_H_

#include <mpi.h>

#include <string>

namespace meshtune::internal {

// Collective over `comm`. Rank 0 decides: nothing to do when a profile answers for the
// communicator's size, when MESHTUNE_CALIBRATE=0, or when rank 0's node holds more ranks
// than engine::MaxFirstUseRanks(); otherwise every rank takes part in the quick
// measurement (runtime::MeasureMachine) and rank 0 fits and stores it. Returns rank 0's
// one-line note ("" when nothing was done, and on the other ranks); a failure to fit or
// store is in the note, not an error: the search then uses what there is.
std::string CalibrateOnFirstUse(MPI_Comm comm);

}  // namespace meshtune::internal

#endif  // MESHTUNE_MESHTUNE_CALIBRATE_ON_COMM_H_
