#include "base/paths.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace meshtune::base {

namespace fs = std::filesystem;

absl::Status MakeDirs(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec && ec != std::errc::file_exists) {
    return absl::ErrnoToStatus(ec.value(), absl::StrCat("cannot create the directory ", dir));
  }
  if (!fs::is_directory(dir, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(dir, " is not a directory"));
  }
  return absl::OkStatus();
}

std::string SelfExePath() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "" : self.string();
}

std::string FindCompanion(const std::string& env, const std::vector<std::string>& relative_paths) {
  auto executable = [](const fs::path& p) {
    std::error_code ec;
    return !p.empty() && fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
  };
  if (!env.empty()) {
    if (const char* path = std::getenv(env.c_str()); path != nullptr && executable(path))
      return path;
  }
  const std::string self = SelfExePath();
  const fs::path dir = self.empty() ? fs::path(".") : fs::path(self).parent_path();
  for (const std::string& rel : relative_paths) {
    for (const fs::path& c : {fs::path(self + ".runfiles/meshtune") / rel,
                              dir / fs::path(rel).filename(), dir / ".." / rel, fs::path(rel)}) {
      if (executable(c)) return c.string();
    }
  }
  return "";
}

}  // namespace meshtune::base
