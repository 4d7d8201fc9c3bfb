#include "cli/cli_io.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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

namespace {

// The length of the UTF-8 sequence at data[i] (1 to 4), or 0 when no valid sequence starts
// there (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, or cut short).
size_t Utf8Length(const std::string& data, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(data[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80) return 1;
  size_t n = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) low = 0xA0;
    if (b == 0xED) high = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) low = 0x90;
    if (b == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (i + n > data.size()) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

absl::Status CheckText(const std::string& data, const std::string& path, const std::string& what,
                       size_t max_bytes) {
  const std::string named =
      absl::StrCat(what, " '", base::Excerpt(path, base::kMaxPathExcerpt), "' is not text: ");
  // Past the limit the caller reports the size; a sequence cut there is not this file's.
  const size_t end = std::min(data.size(), max_bytes);
  for (size_t i = 0; i < end;) {
    if (data[i] == '\0') {
      return absl::InvalidArgumentError(absl::StrCat(named, "it holds a NUL byte at offset ", i));
    }
    const size_t n = Utf8Length(data, i);
    if (n == 0 && !(data.size() > max_bytes && i + 4 > data.size())) {
      return absl::InvalidArgumentError(absl::StrFormat("%sbyte 0x%02X at offset %d is not UTF-8",
                                                        named, static_cast<unsigned char>(data[i]),
                                                        i));
    }
    i += n == 0 ? 1 : n;
  }
  return absl::OkStatus();
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
