#include "daemon/http_server.h"

#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/excerpt.h"
#include "engine/flag_checks.h"
#include "httplib.h"
#include "spdlog/spdlog.h"

namespace meshtune::daemon {

namespace {

constexpr char kDefaultHost[] = "127.0.0.1";

void Send(const HttpPage& page, httplib::Response& res) {
  res.status = page.status;
  res.set_content(page.html, "text/html; charset=utf-8");
}

}  // namespace

absl::StatusOr<HttpAddress> ParseHttpAddress(const std::string& text) {
  const std::string quoted = absl::StrCat("'", base::Excerpt(text), "': ");
  if (absl::StartsWith(text, "unix:")) {
    return absl::InvalidArgumentError(
        absl::StrCat(quoted, "the pages are served over TCP only; give HOST:PORT, :PORT or PORT"));
  }
  std::string full = text;  // HOST:PORT
  if (text.find(':') == std::string::npos) {
    full = absl::StrCat(kDefaultHost, ":", text);
  } else if (text.front() == ':') {
    full = absl::StrCat(kDefaultHost, text);
  }
  if (absl::Status s = engine::CheckHostPort("", full, /*allow_port_zero=*/true); !s.ok()) {
    // CheckHostPort's message is " 'FULL': WHY"; say WHY of what the user wrote.
    const absl::string_view m = s.message();
    const size_t at = m.find("': ");
    return absl::InvalidArgumentError(
        absl::StrCat(quoted, at == absl::string_view::npos ? m : m.substr(at + 3)));
  }
  const size_t colon = full.rfind(':');
  HttpAddress out;
  out.host = full.substr(0, colon);
  if (out.host.front() == '[') out.host = out.host.substr(1, out.host.size() - 2);
  if (!absl::SimpleAtoi(full.substr(colon + 1), &out.port)) {
    return absl::InvalidArgumentError(absl::StrCat(quoted, "the port is not a number"));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpAddress& address,
                                                              const HttpPages* pages) {
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->server_ = std::make_unique<httplib::Server>();
  httplib::Server& server = *s->server_;
  // Read-only pages: any method but GET and HEAD is refused before routing.
  server.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET" || req.method == "HEAD")
      return httplib::Server::HandlerResponse::Unhandled;
    Send(MethodNotAllowedPage(req.method), res);
    res.set_header("Allow", "GET, HEAD");
    return httplib::Server::HandlerResponse::Handled;
  });
  server.Get(".*", [pages](const httplib::Request& req, httplib::Response& res) {
    std::map<std::string, std::string> query;
    for (const auto& [key, value] : req.params) query.emplace(key, value);
    Send(pages->Get(req.path, query), res);
    spdlog::debug("HTTP {} {} from {}: {}", req.method, req.path, req.remote_addr, res.status);
  });
  const std::string where = absl::StrCat(address.host, ":", address.port);
  if (address.port == 0) {
    s->port_ = server.bind_to_any_port(address.host);
    if (s->port_ <= 0) return absl::UnavailableError("cannot listen for HTTP on " + where);
  } else {
    if (!server.bind_to_port(address.host, address.port))
      return absl::UnavailableError("cannot listen for HTTP on " + where);
    s->port_ = address.port;
  }
  s->thread_ = std::thread([&server] { server.listen_after_bind(); });
  return s;
}

HttpServer::~HttpServer() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace meshtune::daemon
