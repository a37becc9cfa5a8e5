// api_server: Toxiproxy's routes over proxy_set; see api.hpp. cpp-httplib
// serves HTTP on its own threads; every call goes to proxy_set, which
// serialises them.
#include <fmt/format.h>
#include <httplib.h>

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <regex>
#include <thread>

#include "faultlane/relays/api.hpp"
#include "loopback.hpp"
#include "proxies.hpp"

#include "faultlane/core/net.hpp"

namespace faultlane::relays {

using nlohmann::json;

namespace {

constexpr const char* toxiproxy_api_version = "2.12.0";

void send(httplib::Response& res, const api::reply& r) {
  res.status = r.status;
  if (!r.body.is_null()) res.set_content(r.body.dump(), "application/json");
}

// The request body as JSON; an empty body is an empty object where the
// route allows one (POST /reset needs none).
std::optional<json> body_of(const httplib::Request& req, httplib::Response& res) {
  auto parsed = json::parse(req.body, nullptr, false);
  if (parsed.is_discarded()) {
    send(res, api::error_reply(400, req.body.empty() ? "bad request body: EOF"
                                                     : "bad request body: not valid JSON"));
    return std::nullopt;
  }
  return parsed;
}

}  // namespace

class api_server::impl {
 public:
  explicit impl(api_config c) : config(std::move(c)), proxies(config.proxy_defaults) {}

  void routes();
  void guards();

  api_config config;
  api::proxy_set proxies;
  httplib::Server http;
  std::optional<address> bound;
  net::thread thread;
  std::atomic<bool> serving_done{false};
  std::mutex stop_mutex;
  bool stopped = false;
};

// What runs before the routes (browsers, body-less requests) and after
// them (no route matched).
void api_server::impl::guards() {
  auto& p = proxies;
  // Toxiproxy refuses browsers, so that a web page cannot drive the API.
  http.set_pre_routing_handler([&p](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("User-Agent").rfind("Mozilla/", 0) == 0) {
      res.status = 403;
      res.set_content("User agent not allowed\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    // cpp-httplib answers 400 to a POST or PATCH with neither
    // Content-Length nor chunks, before any route runs; `curl -X POST
    // .../reset` sends one. Such a request has an empty body: /reset needs
    // none, the other routes say so, and a path that is no route is a 404.
    if ((req.method == "POST" || req.method == "PATCH") && !req.has_header("Content-Length") &&
        !req.has_header("Transfer-Encoding")) {
      static const std::regex routes(R"(/proxies(/[^/]+(/toxics(/[^/]+)?)?)?|/populate)");
      if (req.method == "POST" && req.path == "/reset") {
        send(res, p.reset());
      } else if (std::regex_match(req.path, routes)) {
        send(res, api::error_reply(400, "bad request body: EOF"));
      } else {
        res.status = 404;
      }
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // What Go's server (and so Toxiproxy) answers where no route matches.
  http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404 && res.body.empty()) {
      res.set_content("404 page not found\n", "text/plain; charset=utf-8");
    }
  });
}

void api_server::impl::routes() {
  auto& p = proxies;
  guards();
  using req_t = const httplib::Request&;
  using res_t = httplib::Response&;
  http.Get("/proxies", [&p](req_t, res_t res) { send(res, p.list()); });
  http.Post("/proxies", [&p](req_t req, res_t res) {
    if (auto b = body_of(req, res)) send(res, p.create(*b));
  });
  http.Post("/populate", [&p](req_t req, res_t res) {
    if (auto b = body_of(req, res)) send(res, p.populate(*b));
  });
  http.Post("/reset", [&p](req_t, res_t res) { send(res, p.reset()); });
  const std::string proxy = R"(/proxies/([^/]+))";
  const std::string toxic = proxy + R"(/toxics/([^/]+))";
  http.Get(proxy, [&p](req_t req, res_t res) { send(res, p.show(req.matches[1])); });
  auto update = [&p](req_t req, res_t res) {
    if (auto b = body_of(req, res)) send(res, p.update(req.matches[1], *b));
  };
  http.Post(proxy, update);
  http.Patch(proxy, update);
  http.Delete(proxy, [&p](req_t req, res_t res) { send(res, p.remove(req.matches[1])); });
  http.Get(proxy + "/toxics", [&p](req_t req, res_t res) { send(res, p.toxics(req.matches[1])); });
  http.Post(proxy + "/toxics", [&p](req_t req, res_t res) {
    if (auto b = body_of(req, res)) send(res, p.add_toxic(req.matches[1], *b));
  });
  http.Get(toxic,
           [&p](req_t req, res_t res) { send(res, p.show_toxic(req.matches[1], req.matches[2])); });
  auto update_toxic = [&p](req_t req, res_t res) {
    if (auto b = body_of(req, res)) send(res, p.update_toxic(req.matches[1], req.matches[2], *b));
  };
  http.Post(toxic, update_toxic);
  http.Patch(toxic, update_toxic);
  http.Delete(toxic, [&p](req_t req, res_t res) {
    send(res, p.remove_toxic(req.matches[1], req.matches[2]));
  });
  http.Get("/version", [](req_t, res_t res) {
    res.set_content(
        json{{"version", toxiproxy_api_version}, {"faultlane", FAULTLANE_VERSION}}.dump(),
        "application/json");
  });
  http.Get("/metrics", [&p](req_t, res_t res) {
    res.set_content(p.metrics(), "text/plain; version=0.0.4; charset=utf-8");
  });
}

result<std::unique_ptr<api_server>> api_server::start(api_config config) {
  auto i = std::make_unique<impl>(std::move(config));
  if (i->config.http) {
    const auto& at = *i->config.http;
    if (auto r = detail::check_loopback("api", at.address, i->config.allow_non_loopback); !r) {
      return r.error();
    }
    i->routes();
    // cpp-httplib's default adds SO_REUSEPORT, with which a second relay
    // could bind the same API port and take half its requests.
    i->http.set_socket_options([](int sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    i->bound = at;
    if (at.port == 0) {
      int port = i->http.bind_to_any_port(at.address);
      i->bound->port = static_cast<std::uint16_t>(port > 0 ? port : 0);
    } else if (!i->http.bind_to_port(at.address, at.port)) {
      i->bound->port = 0;
    }
    if (i->bound->port == 0) {
      return error{status::connection_failed,
                   fmt::format("api: cannot listen on {} (in use?)", at.str())};
    }
    i->thread = net::thread([raw = i.get()] {
      raw->http.listen_after_bind();
      raw->serving_done = true;
    });
  }
  // new-ok: the constructor is private, out of make_unique's reach
  return std::unique_ptr<api_server>(new api_server(std::move(i)));
}

api_server::api_server(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

api_server::~api_server() { stop(); }

std::optional<address> api_server::endpoint() const { return impl_->bound; }

result<address> api_server::add_relay(const relay_config& config) {
  return impl_->proxies.add_configured(config);
}

std::string api_server::metrics() const { return impl_->proxies.metrics(); }

std::string api_server::report() const { return impl_->proxies.report(); }

void api_server::stop() {
  std::lock_guard guard(impl_->stop_mutex);
  if (impl_->stopped) return;
  impl_->stopped = true;
  if (impl_->thread.joinable()) {
    // cpp-httplib's stop() does nothing until its thread marked itself
    // running, so a stop right after start would leave it serving forever:
    // stop until the thread has returned.
    while (!impl_->serving_done) {
      if (impl_->http.is_running()) impl_->http.stop();
      net::sleep_for(std::chrono::milliseconds(1));
    }
    impl_->thread.join();
  }
  impl_->proxies.stop_all();
}

}  // namespace faultlane::relays
