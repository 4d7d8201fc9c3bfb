#include "cli/cli_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "base/excerpt.h"

namespace meshtune::cli {

absl::StatusOr<std::string> ReadInput(const std::string& path, size_t max_bytes,
                                      const std::string& what) {
  FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    const int error = errno;
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", what, " '",
                                                   base::Excerpt(path, base::kMaxPathExcerpt),
                                                   "': ", std::strerror(error)));
  }
  std::string data;
  char buf[65536];
  while (data.size() <= max_bytes) {
    const size_t n = std::fread(buf, 1, sizeof(buf), f);
    if (n == 0) break;
    data.append(buf, n);
  }
  const bool failed = std::ferror(f) != 0;
  const int error = errno;
  if (f != stdin) std::fclose(f);
  if (failed) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", what, " '",
                                                   base::Excerpt(path, base::kMaxPathExcerpt),
                                                   "': ", std::strerror(error)));
  }
  if (data.size() > max_bytes + 1) data.resize(max_bytes + 1);
  return data;
}

absl::Status FlushStdout() {
  // std::cout writes through stdout's buffer: its flush is stdout's, and sets errno.
  errno = 0;
  std::cout.flush();
  int error = errno;
  const bool stream_failed = !std::cout;
  errno = 0;
  const bool flush_failed = std::fflush(stdout) != 0;
  if (error == 0) error = errno;
  if (!stream_failed && !flush_failed && std::ferror(stdout) == 0) return absl::OkStatus();
  // A write that failed before the final flush has lost its errno: say so plainly.
  return absl::UnavailableError(absl::StrCat("cannot write to standard output: ",
                                             error != 0 ? std::strerror(error) : "a write failed"));
}

int Fail(const absl::Status& status, std::ostream& err, engine::NotFoundIs not_found) {
  err << "meshtune: " << status.message() << "\n";
  return engine::ExitCodeFor(status, not_found);
}

namespace {

// InvalidArgument: `path` could not be opened for writing, for the system's reason `error`.
absl::Status CannotOpen(const std::string& path, int error) {
  return absl::InvalidArgumentError(absl::StrCat("cannot open '",
                                                 base::Excerpt(path, base::kMaxPathExcerpt),
                                                 "' for writing: ", std::strerror(error)));
}

}  // namespace

absl::Status CheckWritable(const std::string& path) {
  std::ofstream f(path, std::ios::app);
  return f ? absl::OkStatus() : CannotOpen(path, errno);
}

absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) return CannotOpen(path, errno);
  errno = 0;
  out << text;
  out.close();  // the last write happens here
  if (!out) {
    return absl::UnavailableError(
        absl::StrCat("cannot write '", base::Excerpt(path, base::kMaxPathExcerpt),
                     "': ", errno != 0 ? std::strerror(errno) : "a write failed"));
  }
  return absl::OkStatus();
}

}  // namespace meshtune::cli
