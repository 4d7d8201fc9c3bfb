// meshtuned: the meshtune gRPC daemon. Serves meshtune.v1.Tuner (daemon/tuner_service.h)
// with the standard health service and server reflection, from and into a SQLite tuning
// database.
//
//   meshtuned [--listen 127.0.0.1:50051] [--db PATH] [--max-concurrent-tunes 1]
//             [--log-level trace|debug|info|warn|error|critical|off] [--shutdown-grace-s 10]
//             [--http HOST:PORT]
//
// With --http (off by default) it also serves read-only HTML pages (daemon/http_pages.h:
// the records, each record's tuning report, the tunes in progress) on HOST:PORT — HOST
// 127.0.0.1 when only :PORT or PORT is given — and prints "meshtuned http on
// http://HOST:PORT/" once that listens.
// Once it listens it prints "meshtuned listening on HOST:PORT" on stdout (the bound port:
// --listen HOST:0 picks a free one; a port above 65535 or an address that is not HOST:PORT
// is bad input). Logs go to stderr. SIGTERM or SIGINT stops it: health
// turns NOT_SERVING, running tunes are cancelled, calls still in flight get the grace
// period, then the database is closed and the exit status is 0. Exit status 2 for bad
// flags, 1 when the database cannot be opened or the address cannot be bound.
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "daemon/http_pages.h"
#include "daemon/http_server.h"
#include "daemon/tuner_service.h"
#include "engine/exit_codes.h"
#include "engine/flag_checks.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"
#include "storage/tuning_db.h"

namespace meshtune::daemon {
namespace {

constexpr char kServiceName[] = "meshtune.v1.Tuner";

struct Flags {
  std::string listen = "127.0.0.1:50051";
  std::string db;
  int max_concurrent_tunes = 1;
  std::string log_level = "info";
  double shutdown_grace_s = 10;
  std::optional<HttpAddress> http;  // --http: the HTML pages' address
  bool no_calibrate = false;        // --no-calibrate
};

// "HOST:PORT" with the port actually bound.
std::string BoundAddress(const std::string& listen, int port) {
  const size_t colon = listen.rfind(':');
  return (colon == std::string::npos ? listen : listen.substr(0, colon)) + ":" +
         std::to_string(port);
}

// The pipe SIGTERM and SIGINT are written to (OnStopSignal) and the stopping thread reads.
int g_stop_pipe[2] = {-1, -1};

extern "C" void OnStopSignal(int signal_number) {
  const char c = static_cast<char>(signal_number);
  const int saved = errno;
  (void)!write(g_stop_pipe[1], &c, 1);
  errno = saved;
}

// Parses the command line into `flags`. Returns an exit status when the process should end
// now (--help: kExitOk; a bad flag: kExitBadInput, CLI11 having printed the message).
std::optional<int> ParseFlags(int argc, char** argv, Flags& flags) {
  flags.db = storage::DefaultDbPath();
  CLI::App app{"meshtuned: the meshtune gRPC daemon (meshtune.v1.Tuner)"};
  app.add_option("--listen", flags.listen,
                 "address to listen on, HOST:PORT (port 0: any free port)")
      ->check(engine::HostPort(/*allow_port_zero=*/true));
  app.add_option("--db", flags.db, "SQLite tuning database (created when missing)");
  app.add_option("--max-concurrent-tunes", flags.max_concurrent_tunes,
                 "tunes running at once; more queue")
      ->transform(engine::IntegerIn(1, 1024));
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error, critical or off")
      ->check(engine::OneOf({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.add_option("--shutdown-grace-s", flags.shutdown_grace_s,
                 "seconds calls and tunes get to end after SIGTERM/SIGINT")
      ->check(engine::NumberIn(0, 3600));
  app.add_flag("--no-calibrate", flags.no_calibrate,
               "a tune on a rank count without a hardware profile uses built-in machine numbers "
               "instead of calibrating one first");
  std::string http;
  CLI::Option* http_opt =
      app.add_option("--http", http,
                     "also serve read-only HTML pages (records, reports, tunes) on HOST:PORT, "
                     ":PORT or PORT (HOST 127.0.0.1 unless given; port 0: any free port); off by "
                     "default")
          ->check(CLI::Validator(
              [](std::string& value) -> std::string {
                const absl::StatusOr<HttpAddress> a = ParseHttpAddress(value);
                return a.ok() ? "" : std::string(a.status().message());
              },
              "HOST:PORT"));
  app.failure_message(engine::ParseFailureMessage);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? engine::kExitOk : engine::kExitBadInput;
  }
  if (http_opt->count() > 0) flags.http = *ParseHttpAddress(http);  // checked by the parser
  return std::nullopt;
}

// Routes SIGTERM and SIGINT through a handler that writes the signal to g_stop_pipe, read by
// one stopping thread. (Whichever thread the kernel picks runs the handler: libraries such
// as OpenBLAS start threads before main, so blocking the signals here would not cover
// every thread.) False, with the reason on stderr, when the pipe cannot be made.
bool InstallStopPipe() {
  if (pipe(g_stop_pipe) != 0) {
    std::cerr << "meshtuned: cannot create a pipe for signals: " << std::strerror(errno) << "\n";
    return false;
  }
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  return true;
}

// spdlog's default logger on stderr at `level`, flushed at every message.
void SetUpLogging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("meshtuned");
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

// Serves the Tuner service on `db` until a stop signal arrives, then stops the tunes and
// the server within the grace period. kExitFailed when it cannot listen.
int Serve(const Flags& flags, storage::TuningDb* db) {
  TunerService service(db, flags.max_concurrent_tunes, flags.no_calibrate);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(flags.listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    spdlog::critical("cannot listen on {}", flags.listen);
    return engine::kExitFailed;
  }
  server->GetHealthCheckService()->SetServingStatus(kServiceName, true);
  const HttpPages pages(db, flags.db, [&service] { return service.ActiveTunes(); });
  std::unique_ptr<HttpServer> http;
  if (flags.http) {
    absl::StatusOr<std::unique_ptr<HttpServer>> started = HttpServer::Start(*flags.http, &pages);
    if (!started.ok()) {
      spdlog::critical("{}", std::string(started.status().message()));
      server->Shutdown();
      return engine::kExitFailed;
    }
    http = *std::move(started);
  }
  const std::string address = BoundAddress(flags.listen, port);
  spdlog::info("listening on {} (at most {} concurrent tunes)", address,
               flags.max_concurrent_tunes);
  std::cout << "meshtuned listening on " << address << std::endl;
  if (http) {
    const std::string host = flags.http->host.find(':') == std::string::npos
                                 ? flags.http->host
                                 : absl::StrCat("[", flags.http->host, "]");
    spdlog::info("HTML pages on http://{}:{}/", host, http->port());
    std::cout << "meshtuned http on http://" << host << ":" << http->port() << "/" << std::endl;
  }

  std::thread stopper([&] {
    char received = 0;
    while (read(g_stop_pipe[0], &received, 1) < 0 && errno == EINTR) {
    }
    const int signal_number = received;
    const absl::Duration grace = absl::Seconds(flags.shutdown_grace_s);
    spdlog::info("{}: shutting down", strsignal(signal_number));
    server->GetHealthCheckService()->Shutdown();
    if (!service.Stop(grace)) {
      spdlog::warn("tunes still running after {} s (a measurement under MPI ends at its timeout)",
                   flags.shutdown_grace_s);
    }
    spdlog::debug("tunes stopped; shutting the server down");
    server->Shutdown(absl::ToChronoTime(absl::Now() + grace));
    spdlog::debug("server shut down");
  });
  server->Wait();
  stopper.join();
  http.reset();  // before `pages` and `service` go
  server.reset();
  spdlog::debug("server released");
  return engine::kExitOk;  // `service` waits for its tune threads as it goes out of scope
}

int Main(int argc, char** argv) {
  Flags flags;
  if (std::optional<int> done = ParseFlags(argc, argv, flags)) return *done;
  if (!InstallStopPipe()) return engine::kExitFailed;
  // Debian's absl is built with deadlock detection on: every lock of gRPC's and ours would
  // update a global lock graph. Lock order is a test-time concern; the daemon skips it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  SetUpLogging(flags.log_level);

  absl::StatusOr<std::unique_ptr<storage::TuningDb>> db = storage::OpenSqliteTuningDb(flags.db);
  if (!db.ok()) {
    spdlog::critical("cannot open the tuning database: {}", std::string(db.status().message()));
    return engine::kExitFailed;
  }
  spdlog::info("tuning database {}", flags.db);
  const int status = Serve(flags, db->get());
  db->reset();
  if (status == engine::kExitOk) spdlog::info("stopped");
  return status;
}

}  // namespace
}  // namespace meshtune::daemon

int main(int argc, char** argv) {
  try {
    return meshtune::daemon::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "meshtuned: internal error: " << e.what() << "\n";
    return 1;
  }
}
