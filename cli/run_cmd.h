// `meshtune run`: one trace of a problem on a mesh, judged and lowered first (an illegal or
// refused schedule is bad input here), then run under MPI (meshtune_worker on every rank,
// runtime/launch/launcher.h) or, with --simulate, every rank in this process (runtime/
// simulator.h), verified against the reference and timed. Prints the meshtune.v1.RunResult
// (checked "measured" or "simulated"; run_output.h): text, or with --json one JSON line.
#ifndef MESHTUNE_CLI_RUN_CMD_H_
#define MESHTUNE_CLI_RUN_CMD_H_

#include "CLI/CLI.hpp"
#include "cli/command.h"

namespace meshtune::cli {

// Declares `run` and its flags on `app`. Its exit status: 0 when the run verified; 2 on bad
// input (a flag, a trace that does not parse or cannot be read, an illegal schedule, a run
// that does not fit this machine's memory); 1 when the schedule is refused or the run did
// not verify — a crash, a timeout, a wrong answer, a worker or launcher that cannot be
// started: the result on stdout says why in its `error`, and so does stderr ("meshtune:
// WHY", on one line). Stopped by SIGINT or SIGTERM, it kills the job and says so.
Command AddRunCommand(CLI::App& app);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_RUN_CMD_H_
