#include "engine/cluster.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace meshtune::engine {

v1::Cluster ClusterOf(const std::string& hostfile, const std::string& launcher,
                      const std::vector<std::string>& launcher_args) {
  v1::Cluster c;
  c.set_hostfile(hostfile);
  c.set_launcher(launcher);
  for (const std::string& arg : launcher_args) c.add_launcher_args(arg);
  return c;
}

bool IsCluster(const v1::Cluster& c) {
  return !c.hostfile().empty() || !c.launcher().empty() || c.launcher_args_size() > 0;
}

v1::Cluster LaunchCluster(const v1::Cluster& given, const v1::HardwareProfile* profile) {
  if (IsCluster(given) || profile == nullptr) return given;
  return profile->cluster();
}

runtime::LaunchOptions ClusterLaunch(const v1::Cluster& c) {
  runtime::LaunchOptions launch;
  if (!c.launcher().empty()) launch.launcher = {c.launcher()};
  launch.hostfile = c.hostfile();
  launch.extra_args.assign(c.launcher_args().begin(), c.launcher_args().end());
  return launch;
}

std::string ClusterText(const v1::Cluster& c) {
  if (!IsCluster(c)) return "this node";
  std::string text = c.hostfile().empty() ? "" : absl::StrCat("hostfile ", c.hostfile());
  if (c.launcher().empty() && c.launcher_args_size() == 0) return text;  // mpirun, as given
  if (!text.empty()) absl::StrAppend(&text, ", ");
  absl::StrAppend(&text, c.launcher().empty() ? "mpirun" : c.launcher());
  if (c.launcher_args_size() > 0)
    absl::StrAppend(&text, " ", absl::StrJoin(c.launcher_args(), " "));
  return text;
}

}  // namespace meshtune::engine
