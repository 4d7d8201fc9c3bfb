// Files and directories: creating directories and finding this program's companions.
#ifndef MESHTUNE_BASE_PATHS_H_
#define MESHTUNE_BASE_PATHS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace meshtune::base {

// mkdir -p: `dir` and its missing parents (mode 0755). OK when it exists as a directory;
// FailedPrecondition "PATH is not a directory" when it (or a parent) is something else;
// the system's error naming the directory that could not be created otherwise.
absl::Status MakeDirs(const std::string& dir);

// The absolute path of the running executable ("" when /proc/self/exe cannot be read).
std::string SelfExePath();

// A program installed with this one, found as the first executable file of, in order:
//   - the value of the environment variable `env` (when `env` is not empty);
//   - for each `rel` of `relative_paths` ("runtime/meshtune_worker"): `rel` in this
//     executable's Bazel runfiles, its base name beside this executable, `rel` beside this
//     executable's folder (../runtime/meshtune_worker), `rel` under the working directory.
// "" when none is.
std::string FindCompanion(const std::string& env, const std::vector<std::string>& relative_paths);

}  // namespace meshtune::base

#endif  // MESHTUNE_BASE_PATHS_H_
