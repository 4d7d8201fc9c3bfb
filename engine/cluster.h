// The cluster an MPI job starts on: a hostfile and a launcher with its arguments, named by
// a command's flags or stored in the hardware profile that calibrated it
// (HardwareProfile.cluster), so that a cluster is named once, at calibration.
#ifndef MESHTUNE_ENGINE_CLUSTER_H_
#define MESHTUNE_ENGINE_CLUSTER_H_

#include <string>
#include <vector>

#include "proto/meshtune.pb.h"
#include "runtime/launch/launcher.h"

namespace meshtune::engine {

// The cluster of --hostfile, --launcher and --launcher-arg ("" and none: not given).
v1::Cluster ClusterOf(const std::string& hostfile, const std::string& launcher,
                      const std::vector<std::string>& launcher_args);

// Whether `c` names anything: a hostfile, a launcher or a launcher argument.
bool IsCluster(const v1::Cluster& c);

// Where a job launches: `given` when it names anything (a command's own flags win), else
// the cluster `profile` was calibrated on (nullptr or none: this node, with mpirun).
v1::Cluster LaunchCluster(const v1::Cluster& given, const v1::HardwareProfile* profile);

// Launch options for `c`: its launcher (mpirun when "") with its hostfile and arguments;
// the other options at their defaults.
runtime::LaunchOptions ClusterLaunch(const v1::Cluster& c);

// "hostfile H" (mpirun, no arguments), "hostfile H, mpirun --mca plm_rsh_agent A" or
// "srun" for messages and sources; "this node" when `c` names nothing.
std::string ClusterText(const v1::Cluster& c);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_CLUSTER_H_
