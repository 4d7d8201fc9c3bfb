// Helpers shared by meshtune's tests.
#ifndef MESHTUNE_TESTS_TEST_UTIL_H_
#define MESHTUNE_TESTS_TEST_UTIL_H_

#include <fstream>
#include <sstream>
#include <string>

namespace meshtune::testing {

// The whole file at `path` (a runfiles-relative path in Bazel tests); "" when unreadable.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace meshtune::testing

#endif  // MESHTUNE_TESTS_TEST_UTIL_H_
