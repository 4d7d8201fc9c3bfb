// A meshtuned child process for end-to-end tests (header-only; the tests run from the
// runfiles root, where the daemon is daemon/meshtuned).
#ifndef MESHTUNE_TESTS_MESHTUNED_PROCESS_H_
#define MESHTUNE_TESTS_MESHTUNED_PROCESS_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/test_util.h"

namespace meshtune::testing {

// meshtuned started on 127.0.0.1:0 over the database `db`, its stderr written to
// `err_path`, with MESHTUNE_HOME set to `home` when not empty and `extra` flags appended.
// Its stdout stays open. The constructor waits (up to 60 s) for the "meshtuned listening on
// HOST:PORT" line (and, with --http among `extra`, for the "meshtuned http on URL" line). The
// destructor stops a daemon still running: SIGTERM, then SIGKILL after 10 s.
class MeshtunedProcess {
 public:
  MeshtunedProcess(const std::string& db, const std::string& err_path, const std::string& home = "",
                   const std::vector<std::string>& extra = {})
      : err_(err_path) {
    int out[2];
    if (pipe(out) != 0) return;
    std::vector<std::string> args = {"meshtuned", "--listen", "127.0.0.1:0", "--db", db};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      const int err = open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(err, STDERR_FILENO);
      close(out[0]);
      if (!home.empty()) setenv("MESHTUNE_HOME", home.c_str(), 1);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv("daemon/meshtuned", argv.data());
      _exit(127);
    }
    close(out[1]);
    std::string line;
    const bool http = std::find(extra.begin(), extra.end(), "--http") != extra.end();
    const auto lines = [&line] { return std::count(line.begin(), line.end(), '\n'); };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (lines() < (http ? 2 : 1) && std::chrono::steady_clock::now() < deadline) {
      pollfd p{out[0], POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      char buf[256];
      const ssize_t n = read(out[0], buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, n);
    }
    out_ = out[0];  // kept open: a daemon writing to stdout later must not get SIGPIPE
    const std::string prefix = "meshtuned listening on ";
    if (line.rfind(prefix, 0) == 0)
      address_ = line.substr(prefix.size(), line.find('\n') - prefix.size());
    const std::string http_prefix = "\nmeshtuned http on ";
    if (const size_t at = line.find(http_prefix); at != std::string::npos) {
      const size_t from = at + http_prefix.size();
      http_url_ = line.substr(from, line.find('\n', from) - from);
    }
  }

  ~MeshtunedProcess() {
    if (pid_ > 0 && Stop(SIGTERM, 10) == -1) Kill9();
    if (out_ >= 0) close(out_);
  }

  MeshtunedProcess(const MeshtunedProcess&) = delete;
  MeshtunedProcess& operator=(const MeshtunedProcess&) = delete;

  // "127.0.0.1:PORT"; "" when the daemon did not come up.
  const std::string& address() const { return address_; }
  // With --http: "http://127.0.0.1:PORT/"; "" otherwise or when it did not come up.
  const std::string& http_url() const { return http_url_; }
  // The daemon's process id; -1 once it was stopped (or when it did not start).
  pid_t pid() const { return pid_; }
  // What the daemon wrote on stderr so far.
  std::string log() const { return ReadFile(err_); }

  // Sends `signal` and waits up to `timeout_s` for the exit. The exit status; -1 when it
  // did not exit in time or died of a signal.
  int Stop(int signal, int timeout_s) {
    if (pid_ <= 0) return -1;
    kill(pid_, signal);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }

  // kill -9, as a crash or the OOM killer would, and reap it.
  void Kill9() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  std::string err_, address_, http_url_;
  pid_t pid_ = -1;
  int out_ = -1;
};

}  // namespace meshtune::testing

#endif  // MESHTUNE_TESTS_MESHTUNED_PROCESS_H_
