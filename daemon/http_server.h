// meshtuned's HTTP server (--http HOST:PORT): HttpPages (daemon/http_pages.h) over
// cpp-httplib, on its own threads beside the gRPC server. Read-only: GET and HEAD are
// answered, every other method is 405 with "Allow: GET, HEAD".
#ifndef MESHTUNE_DAEMON_HTTP_SERVER_H_
#define MESHTUNE_DAEMON_HTTP_SERVER_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "daemon/http_pages.h"

namespace httplib {
class Server;
}

namespace meshtune::daemon {

// Where --http listens.
struct HttpAddress {
  std::string host;  // as given, brackets of an IPv6 address removed
  int port = 0;      // 0: a free port
};

// Parses --http's value: "HOST:PORT" as --listen takes it (a name, an IPv4 address or a
// bracketed IPv6 address; the port 0 to 65535, 0 for a free one), or ":PORT" or "PORT" with
// the host 127.0.0.1 (loopback only). InvalidArgument "'TEXT': WHY" otherwise (WHY as
// engine::CheckHostPort says it), for the flag parser to prefix with "--http: ".
absl::StatusOr<HttpAddress> ParseHttpAddress(const std::string& text);

class HttpServer {
 public:
  // Binds `address` and serves `pages` (which must outlive the server) on a thread of its
  // own. Unavailable "cannot listen for HTTP on HOST:PORT" when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpAddress& address,
                                                           const HttpPages* pages);
  // Stops serving and joins the thread.
  ~HttpServer();

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port.
  int port() const { return port_; }

 private:
  HttpServer() = default;

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace meshtune::daemon

#endif  // MESHTUNE_DAEMON_HTTP_SERVER_H_
