// The Toxiproxy-compatible API's rules (docs/relay-api.md, Routes) that
// the walk-throughs in relay_api_test.cpp leave unchecked: what keeps a
// proxy in /populate, what a failed /populate answers, what /reset does to
// live connections, disabled proxies that are moved or created, toxic
// names and streams, stop_all, and the HTTP layer's guards.
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

}  // namespace
}  // namespace faultlane::relays::testing
