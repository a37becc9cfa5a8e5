// The Toxiproxy-compatible API's rules (docs/relay-api.md, Routes) that
// the walk-throughs in relay_api_test.cpp leave unchecked: what keeps a
// proxy in /populate, what a failed /populate answers, what /reset does to
// live connections, disabled proxies that are moved or created, toxic
// names and streams, stop_all, and the HTTP layer's guards; 404s on every
// route, the toxics list, whole numbers, the server's stop, and the
// received-bytes series.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "api/proxies.hpp"
#include "faultlane/relays/api.hpp"
#include "relay_fixture.hpp"

namespace faultlane::relays::testing {
namespace {

using nlohmann::json;

relay_config rules_raw_defaults() {
  relay_config c;
  c.proto = protocol::raw;
  return c;
}

address rules_listen_of(const json& proxy) {
  return parse_endpoint(proxy.at("listen").get<std::string>()).value();
}

// Rule: /populate keeps a proxy only if both its listen and its upstream
// are the same; either one differing replaces it (its toxics go).
TEST(relay_api_rules, populate_keeps_a_proxy_only_if_listen_and_upstream_both_match) {
  plain_peer peer(plain_peer::mode::echo);
  plain_peer other(plain_peer::mode::echo);
  api::proxy_set set(rules_raw_defaults());
  auto a = set.create({{"name", "a"}, {"upstream", peer.where().str()}}).body;
  auto b = set.create({{"name", "b"}, {"upstream", peer.where().str()}}).body;
  set.add_toxic("a", {{"type", "stall"}});
  set.add_toxic("b", {{"type", "stall"}});
  auto r = set.populate(
      json::array({{{"name", "a"}, {"listen", a.at("listen")}, {"upstream", other.where().str()}},
                   {{"name", "b"}, {"listen", "127.0.0.1:0"}, {"upstream", b.at("upstream")}}}));
  ASSERT_EQ(r.status, 201) << r.body.dump();
  EXPECT_EQ(set.show("a").body.at("upstream"), other.where().str());  // same listen only
  EXPECT_EQ(set.show("a").body.at("toxics"), json::array());
  EXPECT_EQ(set.show("b").body.at("toxics"), json::array());  // same upstream only
  EXPECT_NE(set.show("b").body.at("listen"), b.at("listen"));
}

// Rule: a port taken while /populate applies is a 500 that lists the
// proxies applied so far, and those stay applied.
TEST(relay_api_rules, a_populate_that_fails_while_applying_lists_what_it_applied) {
  plain_peer peer(plain_peer::mode::echo);
  api::proxy_set set(rules_raw_defaults());
  auto taken = set.create({{"name", "holder"}, {"upstream", peer.where().str()}}).body;
  auto r = set.populate(json::array(
      {{{"name", "first"}, {"upstream", peer.where().str()}},
       {{"name", "second"}, {"listen", taken.at("listen")}, {"upstream", "127.0.0.1:9"}}}));
  EXPECT_EQ(r.status, 500) << r.body.dump();
  ASSERT_TRUE(r.body.contains("proxies")) << r.body.dump();
  ASSERT_EQ(r.body.at("proxies").size(), 1u);
  EXPECT_EQ(r.body.at("proxies")[0].at("name"), "first");
  EXPECT_EQ(set.show("first").body.at("enabled"), true);
  EXPECT_EQ(set.show("second").status, 404);
}

// Rule: /reset removes every toxic from the running relays too: a stall
// holding a live connection's bytes lets them through.
TEST(relay_api_rules, reset_removes_toxics_from_live_connections) {
  plain_peer peer(plain_peer::mode::echo);
  api::proxy_set set(rules_raw_defaults());
  auto at = rules_listen_of(set.create({{"name", "p"}, {"upstream", peer.where().str()}}).body);
  ASSERT_EQ(set.add_toxic("p", {{"type", "stall"}, {"stream", "upstream"}}).status, 200);
  client c(at);
  c.send({'a', 'b'});
  EXPECT_TRUE(c.read(2, 200ms).data.empty());  // held by the stall
  EXPECT_EQ(set.reset().status, 204);
  EXPECT_EQ(c.read(2, 10s).data.size(), 2u);
}

// Rule: a disabled proxy that is moved stays disabled (nothing listens),
// and one whose move fails on a taken port stays disabled where it was.
TEST(relay_api_rules, a_disabled_proxy_stays_disabled_when_moved_or_refused) {
  plain_peer first(plain_peer::mode::echo);
  plain_peer second(plain_peer::mode::echo);
  api::proxy_set set(rules_raw_defaults());
  auto made = set.create({{"name", "p"}, {"upstream", first.where().str()}}).body;
  auto other = set.create({{"name", "q"}, {"upstream", first.where().str()}}).body;
  set.update("p", {{"enabled", false}});
  auto moved = set.update("p", {{"upstream", second.where().str()}});
  ASSERT_EQ(moved.status, 200) << moved.body.dump();
  EXPECT_EQ(moved.body.at("enabled"), false);
  client refused;
  EXPECT_THROW(refused.connect(rules_listen_of(made)), std::system_error);
  auto before = set.show("p").body;
  auto onto_taken = set.update("p", {{"listen", other.at("listen")}, {"enabled", true}});
  EXPECT_EQ(onto_taken.status, 500) << onto_taken.body.dump();
  EXPECT_EQ(set.show("p").body, before);  // still disabled, at its old address
  client still_refused;
  EXPECT_THROW(still_refused.connect(rules_listen_of(made)), std::system_error);
}

// Rule: a proxy created disabled does not listen; a toxic added while it
// is disabled applies once it is enabled.
TEST(relay_api_rules, a_proxy_created_disabled_listens_only_once_enabled_with_its_toxics) {
  plain_peer peer(plain_peer::mode::echo);
  api::proxy_set set(rules_raw_defaults());
  auto made = set.create({{"name", "p"}, {"upstream", peer.where().str()}, {"enabled", false}});
  ASSERT_EQ(made.status, 201) << made.body.dump();
  EXPECT_EQ(made.body.at("enabled"), false);
  EXPECT_EQ(made.body.at("listen"), "127.0.0.1:0");  // nothing bound yet
  ASSERT_EQ(set.add_toxic("p", {{"type", "stall"}, {"attributes", {{"after_bytes", 1}}}}).status,
            200);
  auto on = set.update("p", {{"enabled", true}});
  ASSERT_EQ(on.body.at("enabled"), true);
  client c(rules_listen_of(on.body));
  c.send({'a', 'b'});
  EXPECT_EQ(c.read(1, 10s).data.size(), 1u);
  EXPECT_TRUE(c.read(1, 200ms).data.empty());  // the stall added while disabled
}

// Rule: a toxic's name cannot hold '/' (it is a path segment); a stream's
// case does not matter.
TEST(relay_api_rules, toxic_names_refuse_a_slash_and_streams_ignore_case) {
  plain_peer peer(plain_peer::mode::echo);
  api::proxy_set set(rules_raw_defaults());
  set.create({{"name", "p"}, {"upstream", peer.where().str()}});
  auto slash = set.add_toxic("p", {{"type", "stall"}, {"name", "a/b"}});
  EXPECT_EQ(slash.status, 400);
  EXPECT_EQ(slash.body.at("error"), "bad request body: a name cannot hold '/'");
  EXPECT_EQ(set.toxics("p").body, json::array());
  auto up = set.add_toxic("p", {{"type", "stall"}, {"stream", "UpStream"}});
  ASSERT_EQ(up.status, 200) << up.body.dump();
  EXPECT_EQ(up.body.at("stream"), "upstream");
  EXPECT_EQ(up.body.at("name"), "stall_upstream");
}

// Rule: stop_all stops every relay and leaves the proxies listed, disabled.
TEST(relay_api_rules, stop_all_leaves_every_proxy_listed_and_disabled) {
  plain_peer peer(plain_peer::mode::echo);
  api::proxy_set set(rules_raw_defaults());
  auto at = rules_listen_of(set.create({{"name", "p"}, {"upstream", peer.where().str()}}).body);
  set.stop_all();
  ASSERT_EQ(set.list().body.size(), 1u);
  EXPECT_EQ(set.show("p").body.at("enabled"), false);
  client refused;
  EXPECT_THROW(refused.connect(at), std::system_error);
}

// An API server on 127.0.0.1:0 with an HTTP client that waits at most 10 s.
struct http_api {
  http_api() {
    api_config c;
    c.http = address{"127.0.0.1", 0};
    c.proxy_defaults = rules_raw_defaults();
    server = api_server::start(c).value();
    auto at = server->endpoint().value();
    http = std::make_unique<httplib::Client>(at.address, at.port);
    http->set_read_timeout(10, 0);
  }
  std::unique_ptr<api_server> server;
  std::unique_ptr<httplib::Client> http;
};

// Rule: only a User-Agent that starts with "Mozilla/" is refused (403).
TEST(relay_api_rules_http, only_a_user_agent_starting_with_mozilla_is_refused) {
  http_api api;
  auto browser = api.http->Get("/proxies", httplib::Headers{{"User-Agent", "Mozilla/5.0"}});
  ASSERT_TRUE(browser);
  EXPECT_EQ(browser->status, 403);
  auto tool = api.http->Get("/proxies", httplib::Headers{{"User-Agent", "probe Mozilla/5.0"}});
  ASSERT_TRUE(tool);
  EXPECT_EQ(tool->status, 200);
}

// Rule: an empty body is "bad request body: EOF", one that is not JSON
// "bad request body: not valid JSON", both 400 in the error shape.
TEST(relay_api_rules_http, an_empty_body_is_eof_and_a_broken_one_is_not_valid_json) {
  http_api api;
  for (const auto& [body, message] : {std::pair{"", "bad request body: EOF"},
                                      std::pair{"{not json", "bad request body: not valid JSON"}}) {
    auto r = api.http->Post("/proxies", body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(json::parse(r->body), (json{{"error", message}, {"status", 400}})) << r->body;
  }
}

// Rule: a POST with no body at all (no Content-Length) is a 400 EOF on
// every route that takes one, /populate and a toxic's included.
TEST(relay_api_rules_http, a_bodyless_post_is_eof_on_populate_and_toxic_routes) {
  http_api api;
  auto at = api.server->endpoint().value();
  for (const char* path : {"/populate", "/proxies/p/toxics", "/proxies/p/toxics/t"}) {
    auto request = fmt::format("POST {} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
    client raw(at);
    raw.send(std::vector<char>(request.begin(), request.end()));
    auto answer = raw.read(4096, 10s);
    std::string text(answer.data.begin(), answer.data.end());
    EXPECT_EQ(text.substr(0, 12), "HTTP/1.1 400") << path << "\n" << text;
    EXPECT_NE(text.find("bad request body: EOF"), std::string::npos) << path << "\n" << text;
  }
}

// Rule: /version answers the Toxiproxy API level it speaks, 2.12.0, and
// faultlane's own version.
TEST(relay_api_rules_http, version_names_toxiproxy_2_12_0_and_faultlane) {
  http_api api;
  auto r = api.http->Get("/version");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  auto body = json::parse(r->body);
  EXPECT_EQ(body.at("version"), "2.12.0");
  EXPECT_FALSE(body.at("faultlane").get<std::string>().empty());
}

// One request of `method` to `path`, with a body where the route takes
// one (a stall toxic for a toxics list, an empty object elsewhere).
httplib::Result request(httplib::Client& http, const std::string& method, const std::string& path) {
  const std::string body = path.ends_with("/toxics") ? R"({"type": "stall"})" : "{}";
  if (method == "GET") return http.Get(path);
  if (method == "DELETE") return http.Delete(path);
  if (method == "PATCH") return http.Patch(path, body, "application/json");
  return http.Post(path, body, "application/json");
}

// Creates the proxy "p" in front of `peer` through the HTTP API (201).
void create_p(httplib::Client& http, plain_peer& peer) {
  auto made = http.Post("/proxies", json{{"name", "p"}, {"upstream", peer.where().str()}}.dump(),
                        "application/json");
  ASSERT_TRUE(made);
  ASSERT_EQ(made->status, 201);
}

// Rule: every route that names a proxy answers 404 "proxy not found" when
// there is none of that name, every route that names a toxic 404 "toxic
// not found" when the proxy has none of that name, and neither creates one.
TEST(relay_api_rules_http, every_route_answers_404_for_an_unknown_proxy_or_toxic) {
  plain_peer peer(plain_peer::mode::echo);
  http_api api;
  ASSERT_NO_FATAL_FAILURE(create_p(*api.http, peer));
  // Each path with the methods its route takes.
  struct route {
    const char* path;
    std::vector<const char*> methods;
    const char* error;
  };
  const std::vector<const char*> all_four = {"GET", "POST", "PATCH", "DELETE"};
  for (const auto& r : {route{"/proxies/nope", all_four, "proxy not found"},
                        route{"/proxies/nope/toxics", {"GET", "POST"}, "proxy not found"},
                        route{"/proxies/nope/toxics/t", all_four, "proxy not found"},
                        route{"/proxies/p/toxics/nope", all_four, "toxic not found"}}) {
    for (const char* method : r.methods) {
      auto answer = request(*api.http, method, r.path);
      ASSERT_TRUE(answer) << method << " " << r.path;
      EXPECT_EQ(answer->status, 404) << method << " " << r.path;
      EXPECT_EQ(json::parse(answer->body, nullptr, false),
                (json{{"error", r.error}, {"status", 404}}))
          << method << " " << r.path << ": " << answer->body;
    }
  }
  auto all = json::parse(api.http->Get("/proxies")->body);
  ASSERT_EQ(all.size(), 1u) << all.dump();
  EXPECT_EQ(all.at("p").at("toxics"), json::array());
}

// Rule: GET /proxies/{proxy}/toxics lists every toxic in Toxiproxy's shape,
// the upstream ones first, each stream in the order added, as the proxy
// shows them.
TEST(relay_api_rules_http, a_proxys_toxics_are_listed_upstream_first_in_their_shape) {
  plain_peer peer(plain_peer::mode::echo);
  http_api api;
  auto& http = *api.http;
  ASSERT_NO_FATAL_FAILURE(create_p(http, peer));
  for (const char* toxic :
       {R"({"type": "latency", "attributes": {"latency": 5}})",
        R"({"type": "stall", "stream": "upstream", "name": "held"})",
        R"({"type": "slow_close", "name": "late", "attributes": {"delay": 1}})"}) {
    auto added = http.Post("/proxies/p/toxics", toxic, "application/json");
    ASSERT_TRUE(added);
    ASSERT_EQ(added->status, 200) << toxic << ": " << added->body;
  }
  const json expected = json::array({{{"name", "held"},
                                      {"type", "stall"},
                                      {"stream", "upstream"},
                                      {"toxicity", 1.0},
                                      {"attributes", json::object()}},
                                     {{"name", "latency_downstream"},
                                      {"type", "latency"},
                                      {"stream", "downstream"},
                                      {"toxicity", 1.0},
                                      {"attributes", {{"latency", 5}, {"jitter", 0}}}},
                                     {{"name", "late"},
                                      {"type", "slow_close"},
                                      {"stream", "downstream"},
                                      {"toxicity", 1.0},
                                      {"attributes", {{"delay", 1}}}}});
  auto listed = http.Get("/proxies/p/toxics");
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->status, 200);
  EXPECT_EQ(listed->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(json::parse(listed->body, nullptr, false), expected) << listed->body;
  EXPECT_EQ(json::parse(http.Get("/proxies/p")->body).at("toxics"), expected);
}

// Rule: whole numbers written as floats (1e3, 2.0) show as whole numbers,
// as typed clients read them, when a toxic is added and when it changes.
TEST(relay_api_rules, whole_numbers_show_whole_when_a_toxic_is_added_or_changed) {
  plain_peer peer(plain_peer::mode::echo);
  api::proxy_set set(rules_raw_defaults());
  set.create({{"name", "p"}, {"upstream", peer.where().str()}});
  auto added = set.add_toxic(
      "p",
      {{"type", "latency"}, {"name", "l"}, {"attributes", {{"latency", 1e3}, {"jitter", 2.0}}}});
  ASSERT_EQ(added.status, 200) << added.body.dump();
  EXPECT_EQ(added.body.at("attributes").dump(), R"({"jitter":2,"latency":1000})");
  EXPECT_EQ(set.show_toxic("p", "l").body.at("attributes").dump(),
            R"({"jitter":2,"latency":1000})");
  auto changed = set.update_toxic("p", "l", {{"attributes", {{"latency", 3e3}}}});
  ASSERT_EQ(changed.status, 200) << changed.body.dump();
  EXPECT_EQ(changed.body.at("attributes").dump(), R"({"jitter":2,"latency":3000})");
  EXPECT_EQ(set.show_toxic("p", "l").body.at("attributes").dump(),
            R"({"jitter":2,"latency":3000})");
}

// Rule: stopping the API server stops every proxy: once stop() returned
// nothing listens at their addresses, and each shows disabled.
TEST(relay_api_rules_http, stopping_the_server_stops_every_proxy) {
  plain_peer peer(plain_peer::mode::echo);
  http_api api;
  std::vector<address> listening;
  for (const char* name : {"a", "b"}) {
    auto made =
        api.http->Post("/proxies", json{{"name", name}, {"upstream", peer.where().str()}}.dump(),
                       "application/json");
    ASSERT_TRUE(made);
    ASSERT_EQ(made->status, 201);
    listening.push_back(rules_listen_of(json::parse(made->body)));
  }
  api.server->stop();
  for (const auto& at : listening) {
    client refused;
    EXPECT_THROW(refused.connect(at), std::system_error) << at.str();
  }
  auto metrics = api.server->metrics();
  for (const char* line :
       {"faultlane_relay_enabled{proxy=\"a\"} 0\n", "faultlane_relay_enabled{proxy=\"b\"} 0\n"}) {
    EXPECT_NE(metrics.find(line), std::string::npos) << line << metrics;
  }
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Rule: /metrics has one received-bytes series per direction of a proxy,
// each with its own count: upstream what clients sent, downstream what
// the upstream sent.
TEST(relay_api_rules_http, received_bytes_are_one_series_per_direction_with_its_own_count) {
  plain_peer source(plain_peer::mode::source, 3000);
  http_api api;
  auto made =
      api.http->Post("/proxies", json{{"name", "p"}, {"upstream", source.where().str()}}.dump(),
                     "application/json");
  ASSERT_TRUE(made);
  {
    client c(rules_listen_of(json::parse(made->body)));
    c.send(bytes(1000));
    EXPECT_EQ(c.read(3001, 10s).data.size(), 3000u);
  }
  const std::string up =
      "faultlane_relay_received_bytes_total{proxy=\"p\",direction=\"upstream\"} 1000\n";
  const std::string down =
      "faultlane_relay_received_bytes_total{proxy=\"p\",direction=\"downstream\"} 3000\n";
  std::string text;
  EXPECT_TRUE(eventually([&] {
    text = api.http->Get("/metrics")->body;
    return text.find(up) != std::string::npos && text.find(down) != std::string::npos;
  })) << text;
  EXPECT_EQ(occurrences(text, "\nfaultlane_relay_received_bytes_total{"), 2u) << text;
}

// Rule: on every route that takes a proxy or a toxic, a body that is JSON
// but not an object (an array, a number, a string, null) is a 400 "bad
// request body: expected a JSON object" and changes nothing.
TEST(relay_api_rules_http, a_body_that_is_not_a_json_object_is_refused_and_changes_nothing) {
  plain_peer peer(plain_peer::mode::echo);
  http_api api;
  auto& http = *api.http;
  ASSERT_NO_FATAL_FAILURE(create_p(http, peer));
  auto toxic = http.Post("/proxies/p/toxics",
                         R"({"name": "t", "type": "latency", "attributes": {"latency": 5}})",
                         "application/json");
  ASSERT_TRUE(toxic);
  ASSERT_EQ(toxic->status, 200) << toxic->body;
  const auto before = json::parse(http.Get("/proxies")->body);
  for (const char* path : {"/proxies", "/proxies/p", "/proxies/p/toxics", "/proxies/p/toxics/t"}) {
    for (const char* body : {"[]", "[{\"name\": \"q\"}]", "7", "\"p\"", "null"}) {
      for (const char* method : {"POST", "PATCH"}) {
        if (std::string_view(method) == "PATCH" &&
            (std::string_view(path) == "/proxies" || std::string_view(path).ends_with("/toxics"))) {
          continue;  // no PATCH route there
        }
        auto r = std::string_view(method) == "POST" ? http.Post(path, body, "application/json")
                                                    : http.Patch(path, body, "application/json");
        ASSERT_TRUE(r) << method << " " << path;
        EXPECT_EQ(r->status, 400) << method << " " << path << " " << body << ": " << r->body;
        EXPECT_EQ(json::parse(r->body, nullptr, false),
                  (json{{"error", "bad request body: expected a JSON object"}, {"status", 400}}))
            << method << " " << path << " " << body << ": " << r->body;
      }
    }
  }
  EXPECT_EQ(json::parse(http.Get("/proxies")->body), before);
}

}  // namespace
}  // namespace faultlane::relays::testing
