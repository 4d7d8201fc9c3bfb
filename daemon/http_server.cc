#include "daemon/http_server.h"

#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/excerpt.h"
#include "httplib.h"
#include "spdlog/spdlog.h"

namespace meshtune::daemon {

namespace {

constexpr char kDefaultHost[] = "127.0.0.1";

absl::Status BadAddress(const std::string& text, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--http '", base::Excerpt(text), "': ", why,
      "; give HOST:PORT, :PORT or PORT (port 0 to 65535, 0 for a free one; HOST defaults to ",
      kDefaultHost, ")"));
}

void Send(const HttpPage& page, httplib::Response& res) {
  res.status = page.status;
  res.set_content(page.html, "text/html; charset=utf-8");
}

}  // namespace

absl::StatusOr<HttpAddress> ParseHttpAddress(const std::string& text) {
  if (text.empty()) return BadAddress(text, "the address is empty");
  HttpAddress out;
  std::string port_text = text;
  const size_t colon = text.rfind(':');
  if (colon != std::string::npos) {
    out.host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']') {
      out.host = out.host.substr(1, out.host.size() - 2);
    } else if (out.host.find(':') != std::string::npos) {
      return BadAddress(text, "an IPv6 host goes in brackets, [::1]:8080");
    }
  }
  if (out.host.empty()) out.host = kDefaultHost;
  int port = -1;
  if (!absl::SimpleAtoi(port_text, &port) || port < 0 || port > 65535 ||
      port_text.find_first_not_of("0123456789") != std::string::npos) {
    return BadAddress(text, absl::StrCat("'", base::Excerpt(port_text), "' is not a port"));
  }
  out.port = port;
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
