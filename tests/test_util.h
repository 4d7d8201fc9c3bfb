// Helpers shared by meshtune's tests.
#ifndef MESHTUNE_TESTS_TEST_UTIL_H_
#define MESHTUNE_TESTS_TEST_UTIL_H_

#include <sys/wait.h>

#include <cstdlib>
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

// How many times `what` occurs in `text` (overlapping occurrences counted).
inline int Occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The record id a tune's text names on its "record     N" line; "" when it stored none.
inline std::string RecordIdOf(const std::string& tune_text) {
  const size_t at = tune_text.find("record     ");
  if (at == std::string::npos) return "";
  const std::string id = tune_text.substr(at + 11, tune_text.find('\n', at) - at - 11);
  return id.find_first_not_of("0123456789") == std::string::npos ? id : "";
}

// What a command-line run printed and how it exited.
struct CliRun {
  int status = -1;  // exit status; -1 when killed by a signal
  std::string out, err;
};

// Runs `cli/meshtune <args>` through the shell (args are shell text), stdin from
// `stdin_path`, capturing stdout and stderr in files under $TEST_TMPDIR. Unless the test set
// MESHTUNE_HOME, the command's is $TEST_TMPDIR/meshtune_home: profiles of the machine's
// own home never reach a test.
inline CliRun Meshtune(const std::string& args, const std::string& stdin_path = "/dev/null") {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = tmp ? tmp : "/tmp";
  const std::string out = dir + "/out.txt", err = dir + "/err.txt";
  const char* home = std::getenv("MESHTUNE_HOME");
  const std::string env =
      home != nullptr && *home != '\0' ? "" : "MESHTUNE_HOME='" + dir + "/meshtune_home' ";
  const std::string cmd =
      env + "cli/meshtune " + args + " <" + stdin_path + " >" + out + " 2>" + err;
  const int rc = std::system(cmd.c_str());
  CliRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

// Runs `program <args>` under `mpirun -n ranks --oversubscribe` (within 120 s), as root if
// need be, one OpenBLAS thread a rank and MESHTUNE_HOME under $TEST_TMPDIR; stdout and
// stderr together in `out`.
inline CliRun Mpirun(int ranks, const std::string& program, const std::string& args = "") {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = tmp ? tmp : "/tmp";
  setenv("MESHTUNE_HOME", (dir + "/home").c_str(), 1);
  const std::string out = dir + "/mpirun_out.txt";
  const std::string cmd = "timeout 120 mpirun -n " + std::to_string(ranks) + " --oversubscribe " +
                          program + " " + args + " >" + out + " 2>&1";
  const int rc = std::system(cmd.c_str());
  CliRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = ReadFile(out);
  return r;
}

}  // namespace meshtune::testing

#endif  // MESHTUNE_TESTS_TEST_UTIL_H_
