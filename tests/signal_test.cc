// SIGINT and SIGTERM to `meshtune run` (a 2x2 job made to hang) and to `meshtune tune`
// while it measures: meshtune kills the job's process group and its ranks, removes its
// temporary trace file (under $TMPDIR) and ends by the signal (130 or 143 to a shell).
// SIGINT goes to meshtune's whole process group, as Ctrl-C in a terminal sends it.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "tests/test_util.h"

namespace {

using ::meshtune::testing::ReadFile;

std::string TestTmp() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp ? tmp : "/tmp";
}

// Live (not zombie) processes, other than this test, whose command line contains `marker`.
std::vector<std::string> Marked(const std::string& marker) {
  std::vector<std::string> out;
  DIR* proc = opendir("/proc");
  while (dirent* e = readdir(proc)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    const std::string base = std::string("/proc/") + e->d_name;
    std::string cmd = ReadFile(base + "/cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    const std::string stat = ReadFile(base + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z') continue;
    if (cmd.find(marker) != std::string::npos)
      out.push_back(std::string(e->d_name) + " " + cmd.substr(0, 160));
  }
  closedir(proc);
  return out;
}

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  closedir(d);
  return out;
}

// `meshtune args...` in a process group of its own with TMPDIR=`tmpdir`; `marker` is a
// string every process of its job has on its command line (the trace file under tmpdir).
// Waits until `ready` appears in some process's command line, sends `signal` to the
// group (to meshtune alone with `group` false), and returns the wait status.
int RunAndSignal(const std::vector<std::string>& args, const std::string& tmpdir,
                 const std::string& ready, int signal, bool group) {
  mkdir(tmpdir.c_str(), 0755);
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    setenv("TMPDIR", tmpdir.c_str(), 1);
    const int out = open((tmpdir + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open((tmpdir + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> argv = {const_cast<char*>("cli/meshtune")};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv("cli/meshtune", argv.data());
    _exit(127);
  }
  setpgid(pid, pid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (Marked(ready).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(Marked(ready).empty()) << "the job did not start: " << ReadFile(tmpdir + ".err");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // well inside the job
  kill(group ? -pid : pid, signal);
  int status = 0;
  for (int i = 0; i < 300 && waitpid(pid, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (waitpid(pid, &status, WNOHANG) == 0) {
    ADD_FAILURE() << "meshtune did not end within 30 s of the signal";
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  return status;
}

// After the signal: nothing of the job left, the temporary directory empty.
void ExpectNothingLeft(const std::string& tmpdir) {
  std::vector<std::string> left, files;
  for (int i = 0; i < 50; ++i) {
    left = Marked(tmpdir + "/");
    files = Files(tmpdir);
    if (left.empty() && files.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(left.empty()) << absl::StrJoin(left, "\n");
  EXPECT_TRUE(files.empty()) << absl::StrJoin(files, ", ");
}

std::vector<std::string> HangingRun(const std::string& seed) {
  return {"run",
          "--expr",
          "C[m,n] += A[m,k] * B[k,n]",
          "--extents",
          "m=16,n=8,k=8",
          "--mesh",
          "x=2,y=2",
          "--trace",
          "tests/testdata/summa_2x2.trace",
          "--inject-fault",
          "hang",
          "--seed",
          seed,
          "--timeout",
          "120"};
}

TEST(SignalTest, CtrlCStopsARunAndItsRanks) {
  const std::string tmpdir = TestTmp() + "/sigint";
  const int status =
      RunAndSignal(HangingRun("515001"), tmpdir, tmpdir + "/meshtune-run-", SIGINT, true);
  ASSERT_TRUE(WIFSIGNALED(status))
      << "exit status " << WEXITSTATUS(status) << ": " << ReadFile(tmpdir + ".err");
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_EQ(ReadFile(tmpdir + ".err"), "meshtune: interrupted by SIGINT; the job was killed\n");
  EXPECT_EQ(ReadFile(tmpdir + ".out"), "");
  ExpectNothingLeft(tmpdir);
}

TEST(SignalTest, SigtermStopsARunAndItsRanks) {
  const std::string tmpdir = TestTmp() + "/sigterm";
  const int status =
      RunAndSignal(HangingRun("515002"), tmpdir, tmpdir + "/meshtune-run-", SIGTERM, false);
  ASSERT_TRUE(WIFSIGNALED(status))
      << "exit status " << WEXITSTATUS(status) << ": " << ReadFile(tmpdir + ".err");
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_EQ(ReadFile(tmpdir + ".err"), "meshtune: interrupted by SIGTERM; the job was killed\n");
  ExpectNothingLeft(tmpdir);
}

TEST(SignalTest, SigtermStopsATuneWhileItMeasures) {
  // A launcher that never ends stands in for a measurement that hangs (no MPI needed).
  const std::string launcher = TestTmp() + "/hang_launcher.sh";
  std::ofstream(launcher) << "#!/bin/sh\nsleep 617\n";
  chmod(launcher.c_str(), 0755);
  const std::string tmpdir = TestTmp() + "/tune";
  const int status =
      RunAndSignal({"tune", "--expr", "C[m,n] += A[m,k] * B[k,n]", "--extents", "m=64,n=64,k=64",
                    "--mesh", "x=2", "--top-k", "1", "--no-db", "--launcher", launcher, "--alpha",
                    "1e-6", "--beta", "1e-9", "--gamma", "3e-11"},
                   tmpdir, tmpdir + "/meshtune-run-", SIGTERM, false);
  ASSERT_TRUE(WIFSIGNALED(status))
      << "exit status " << WEXITSTATUS(status) << ": " << ReadFile(tmpdir + ".err");
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_NE(ReadFile(tmpdir + ".err").find("meshtune: the tune was cancelled\n"), std::string::npos)
      << ReadFile(tmpdir + ".err");
  ExpectNothingLeft(tmpdir);
  EXPECT_TRUE(Marked(launcher).empty()) << absl::StrJoin(Marked(launcher), "\n");
  EXPECT_TRUE(Marked("sleep 617").empty()) << absl::StrJoin(Marked("sleep 617"), "\n");
}

}  // namespace
