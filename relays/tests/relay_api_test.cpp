// The Toxiproxy-compatible API: proxy_set's answers (status codes, bodies,
// effects on live relays) and the HTTP routes over it.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <fstream>

#include "api/proxies.hpp"
#include "faultlane/relays/api.hpp"
#include "relay_fixture.hpp"

namespace faultlane::relays::testing {
namespace {

using nlohmann::json;

relay_config raw_defaults() {
  relay_config c;
  c.proto = protocol::raw;
  return c;
}

address listen_of(const api::reply& r) {
  return parse_endpoint(r.body.at("listen").get<std::string>()).value();
}

TEST(relay_api, proxies_are_created_listed_shown_and_deleted_with_toxiproxy_codes) {
  plain_peer peer(plain_peer::mode::echo);
  api::proxy_set set(raw_defaults());
  auto up = peer.where().str();
  auto made = set.create({{"name", "p"}, {"listen", "localhost:0"}, {"upstream", up}});
  ASSERT_EQ(made.status, 201) << made.body.dump();
  EXPECT_EQ(made.body.at("enabled"), true);
  EXPECT_EQ(made.body.at("toxics"), json::array());
  EXPECT_EQ(made.body.at("upstream"), up);
  auto at = listen_of(made);
  EXPECT_EQ(at.address, "127.0.0.1");  // localhost, bound
  EXPECT_NE(at.port, 0);
  {
    client c(at);
    c.send({'h', 'i'});
    EXPECT_EQ(c.read(2, 10s).data.size(), 2u);
  }
  EXPECT_EQ(set.create({{"name", "p"}, {"upstream", up}}).status, 409);
  auto missing = set.create({{"upstream", up}});
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(missing.body, (json{{"error", "missing required field: name"}, {"status", 400}}));
  EXPECT_EQ(set.create({{"name", "q"}}).body.at("error"), "missing required field: upstream");
  EXPECT_EQ(set.create({{"name", 5}, {"upstream", up}}).status, 400);
  EXPECT_EQ(set.create({{"name", "q"}, {"upstream", "192.0.2.1:9"}}).status, 400);  // not loopback
  EXPECT_EQ(set.create(json::array()).status, 400);
  EXPECT_EQ(set.list().body.size(), 1u);
  EXPECT_EQ(set.show("p").body, made.body);
  EXPECT_EQ(set.show("nope").status, 404);
  EXPECT_EQ(set.show("nope").body.at("error"), "proxy not found");
  EXPECT_EQ(set.remove("p").status, 204);
  EXPECT_EQ(set.remove("p").status, 404);
  EXPECT_TRUE(set.list().body.empty());
  client refused;
  EXPECT_THROW(refused.connect(at), std::system_error);  // its listener closed
}

TEST(relay_api, disabling_closes_the_listener_and_enabling_rebinds_it_with_its_toxics) {
  plain_peer peer(plain_peer::mode::echo);
  api::proxy_set set(raw_defaults());
  auto made = set.create({{"name", "p"}, {"upstream", peer.where().str()}});
  auto at = listen_of(made);
  ASSERT_EQ(set.add_toxic("p", {{"type", "stall"}, {"attributes", {{"after_bytes", 1}}}}).status,
            200);
  auto off = set.update("p", {{"enabled", false}});
  EXPECT_EQ(off.status, 200);
  EXPECT_EQ(off.body.at("enabled"), false);
  client refused;
  EXPECT_THROW(refused.connect(at), std::system_error);
  auto on = set.update("p", {{"enabled", true}});
  EXPECT_EQ(on.body.at("enabled"), true);
  EXPECT_EQ(listen_of(on), at);  // the address it bound before
  client c(at);
  c.send({'a', 'b', 'c'});
  EXPECT_EQ(c.read(1, 10s).data.size(), 1u);
  EXPECT_TRUE(c.read(2, 200ms).data.empty());  // the stall came back with it
  EXPECT_EQ(set.update("p", {{"enabled", "yes"}}).status, 400);
  EXPECT_EQ(set.update("nope", json::object()).status, 404);
}

TEST(relay_api, moving_a_proxy_restarts_it_elsewhere) {
  plain_peer first(plain_peer::mode::echo);
  plain_peer second(plain_peer::mode::source, 7);
  api::proxy_set set(raw_defaults());
  auto made = set.create({{"name", "p"}, {"upstream", first.where().str()}});
  auto moved = set.update("p", {{"upstream", second.where().str()}});
  ASSERT_EQ(moved.status, 200) << moved.body.dump();
  EXPECT_EQ(moved.body.at("upstream"), second.where().str());
  client c(listen_of(moved));
  EXPECT_EQ(c.read(7, 10s).data.size(), 7u);  // the source, not the echo
  EXPECT_EQ(set.update("p", {{"upstream", "nowhere"}}).status, 400);
  EXPECT_EQ(set.update("p", {{"listen", "bogus"}}).status, 400);
  EXPECT_EQ(set.update("p", {{"listen", "10.0.0.1:1"}}).status, 400);  // not loopback
  EXPECT_EQ(set.update("p", {{"upstream", "8.8.8.8:53"}, {"enabled", false}}).status, 400);
  EXPECT_EQ(set.show("p").body, moved.body);  // a refused change changes nothing
  // Moving onto a port in use fails (500) and leaves it where it was, enabled.
  auto other = set.create({{"name", "q"}, {"upstream", first.where().str()}}).body;
  auto taken = set.update("p", {{"listen", other.at("listen")}});
  EXPECT_EQ(taken.status, 500) << taken.body.dump();
  EXPECT_EQ(set.show("p").body, moved.body);
  client still(listen_of(moved));
  EXPECT_EQ(still.read(7, 10s).data.size(), 7u);
  // Disabled or not, a proxy's addresses are checked when it is made.
  EXPECT_EQ(set.create({{"name", "r"},
                        {"listen", "10.9.9.9:1"},
                        {"upstream", first.where().str()},
                        {"enabled", false}})
                .status,
            400);
  EXPECT_EQ(set.create({{"name", "a/b"}, {"upstream", first.where().str()}}).status, 400);
}

TEST(relay_api, toxics_are_added_shown_updated_and_removed_on_live_connections) {
  plain_peer peer(plain_peer::mode::echo);
  api::proxy_set set(raw_defaults());
  auto at = listen_of(set.create({{"name", "p"}, {"upstream", peer.where().str()}}));
  client c(at);
  c.send({'0'});
  ASSERT_EQ(c.read(1, 10s).data.size(), 1u);  // relayed: live before any toxic
  // The direction carried 1 byte: the stall holds from its 4th.
  auto stall = set.add_toxic("p", {{"type", "stall"}, {"attributes", {{"after_bytes", 3}}}});
  ASSERT_EQ(stall.status, 200) << stall.body.dump();
  EXPECT_EQ(stall.body, (json{{"name", "stall_downstream"},
                              {"type", "stall"},
                              {"stream", "downstream"},
                              {"toxicity", 1.0},
                              {"attributes", {{"after_bytes", 3}}}}));
  c.send({'a', 'b', 'c', 'd'});
  EXPECT_EQ(c.read(2, 10s).data.size(), 2u);
  EXPECT_TRUE(c.read(2, 200ms).data.empty());  // c and d are held
  auto up = set.add_toxic("p", {{"type", "latency"},
                                {"stream", "upstream"},
                                {"toxicity", 0.5},
                                {"attributes", {{"latency", 5}}}});
  EXPECT_EQ(up.body.at("name"), "latency_upstream");
  EXPECT_EQ(up.body.at("attributes"), (json{{"latency", 5}, {"jitter", 0}}));
  auto listed = set.toxics("p").body;  // upstream toxics first, as Toxiproxy lists them
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].at("name"), "latency_upstream");
  EXPECT_EQ(set.add_toxic("p", {{"type", "stall"}}).status, 409);
  EXPECT_EQ(set.add_toxic("p", {{"type", "bogus"}}).body.at("error"), "invalid toxic type");
  EXPECT_EQ(set.add_toxic("p", {{"type", "stall"}, {"stream", "sideways"}}).body.at("error"),
            "stream was invalid, can be either upstream or downstream");
  EXPECT_EQ(
      set.add_toxic("p", {{"type", "latency"}, {"name", "x"}, {"attributes", {{"ms", -1}}}}).status,
      400);
  EXPECT_EQ(set.add_toxic("p", {{"type", "stall"}, {"name", "connections.accepted"}}).status, 400);
  EXPECT_EQ(set.add_toxic("nope", {{"type", "stall"}}).status, 404);
  // Update merges attributes and keeps the toxicity unless given.
  auto changed = set.update_toxic("p", "latency_upstream", {{"attributes", {{"jitter", 2}}}});
  ASSERT_EQ(changed.status, 200) << changed.body.dump();
  EXPECT_EQ(changed.body.at("attributes"), (json{{"latency", 5}, {"jitter", 2}}));
  EXPECT_EQ(changed.body.at("toxicity"), 0.5);
  EXPECT_EQ(set.update_toxic("p", "latency_upstream", {{"attributes", {{"jitter", 9}}}}).status,
            400);  // jitter above latency: refused, the old one stays
  EXPECT_EQ(set.show_toxic("p", "latency_upstream").body.at("attributes").at("jitter"), 2);
  EXPECT_EQ(set.update_toxic("p", "nope", json::object()).status, 404);
  // Changing the stall does not release what it holds (it is the same
  // toxic, as in Toxiproxy); removing it does.
  EXPECT_EQ(set.update_toxic("p", "stall_downstream", {{"toxicity", 1.0}}).status, 200);
  EXPECT_TRUE(c.read(2, 200ms).data.empty());
  EXPECT_EQ(set.remove_toxic("p", "stall_downstream").status, 204);
  EXPECT_EQ(c.read(2, 10s).data.size(), 2u);
  EXPECT_EQ(set.remove_toxic("p", "stall_downstream").status, 404);
  EXPECT_EQ(set.show_toxic("p", "stall_downstream").body.at("error"), "toxic not found");
}

// Toxiproxy's timeout on a connection that carries nothing: it closes
// `timeout` ms after the toxic was added; changing it leaves the
// connection alone; removing one that has not closed yet closes at once.
TEST(relay_api, a_timeout_toxic_closes_idle_connections_and_its_removal_closes_at_once) {
  plain_peer peer(plain_peer::mode::echo);
  api::proxy_set set(raw_defaults());
  auto at = listen_of(set.create({{"name", "p"}, {"upstream", peer.where().str()}}));
  client idle(at);
  idle.send({'0'});
  ASSERT_EQ(idle.read(1, 10s).data.size(), 1u);
  auto added = std::chrono::steady_clock::now();
  ASSERT_EQ(set.add_toxic("p", {{"type", "timeout"}, {"attributes", {{"timeout", 300}}}}).status,
            200);
  EXPECT_EQ(set.update_toxic("p", "timeout_downstream", {{"toxicity", 1.0}}).status, 200);
  auto got = idle.read(1, 10s);  // nothing sent: only the toxic's clock closes it
  EXPECT_EQ(got.end, asio::error::eof) << got.end.message();
  EXPECT_GE(std::chrono::steady_clock::now() - added, 300ms);

  ASSERT_EQ(
      set.update_toxic("p", "timeout_downstream", {{"attributes", {{"timeout", 60'000}}}}).status,
      200);
  client later(at);
  EXPECT_EQ(later.read(1, 300ms).end, asio::error::would_block);  // open, swallowing
  auto removed = std::chrono::steady_clock::now();
  EXPECT_EQ(set.remove_toxic("p", "timeout_downstream").status, 204);
  EXPECT_EQ(later.read(1, 10s).end, asio::error::eof);
  EXPECT_LT(std::chrono::steady_clock::now() - removed, 30s);  // not at the 60 s deadline
}

TEST(relay_api, reset_enables_every_proxy_and_removes_every_toxic) {
  plain_peer peer(plain_peer::mode::echo);
  api::proxy_set set(raw_defaults());
  auto at = listen_of(set.create({{"name", "p"}, {"upstream", peer.where().str()}}));
  set.add_toxic("p", {{"type", "stall"}});
  set.update("p", {{"enabled", false}});
  EXPECT_EQ(set.reset().status, 204);
  auto shown = set.show("p").body;
  EXPECT_EQ(shown.at("enabled"), true);
  EXPECT_EQ(shown.at("toxics"), json::array());
  client c(at);
  c.send({'a'});
  EXPECT_EQ(c.read(1, 10s).data.size(), 1u);
  // A proxy that cannot start again does not keep the others from it.
  set.update("p", {{"enabled", false}});
  auto blocker = set.create({{"name", "a"}, {"upstream", peer.where().str()}}).body;
  set.update("a", {{"enabled", false}});
  set.create({{"name", "b"}, {"listen", blocker.at("listen")}, {"upstream", peer.where().str()}});
  set.add_toxic("b", {{"type", "stall"}});
  auto partial = set.reset();
  EXPECT_EQ(partial.status, 500) << partial.body.dump();  // a's port is b's now
  EXPECT_EQ(set.show("p").body.at("enabled"), true);
  EXPECT_EQ(set.show("b").body.at("toxics"), json::array());
}

TEST(relay_api, populate_checks_everything_first_then_keeps_or_replaces) {
  plain_peer peer(plain_peer::mode::echo);
  plain_peer other(plain_peer::mode::echo);
  api::proxy_set set(raw_defaults());
  auto kept = set.create({{"name", "kept"}, {"upstream", peer.where().str()}}).body;
  set.add_toxic("kept", {{"type", "stall"}});
  auto replaced = set.create({{"name", "replaced"}, {"upstream", peer.where().str()}}).body;
  auto dup = set.populate(json::array({{{"name", "n"}, {"upstream", peer.where().str()}},
                                       {{"name", "n"}, {"upstream", peer.where().str()}}}));
  EXPECT_EQ(dup.status, 400);
  EXPECT_EQ(set.populate(json::array({{{"name", "m"}, {"upstream", peer.where().str()}},
                                      {{"name", "bad"}}}))
                .body.at("error"),
            "missing required field: upstream at proxy 2");
  auto bad_listen = set.populate(
      json::array({{{"name", "kept"}, {"upstream", other.where().str()}},
                   {{"name", "m"}, {"listen", "10.0.0.1:1"}, {"upstream", peer.where().str()}}}));
  EXPECT_EQ(bad_listen.status, 400);
  EXPECT_NE(bad_listen.body.at("error").get<std::string>().find("at proxy 2"), std::string::npos)
      << bad_listen.body.dump();
  EXPECT_EQ(set.list().body.size(), 2u);  // nothing applied
  EXPECT_EQ(set.show("kept").body.at("upstream"), peer.where().str());
  auto r = set.populate(json::array(
      {{{"name", "kept"}, {"listen", kept.at("listen")}, {"upstream", kept.at("upstream")}},
       {{"name", "replaced"}, {"upstream", other.where().str()}},
       {{"name", "new"}, {"upstream", peer.where().str()}, {"enabled", false}}}));
  ASSERT_EQ(r.status, 201) << r.body.dump();
  ASSERT_EQ(r.body.at("proxies").size(), 3u);
  EXPECT_EQ(set.show("kept").body.at("toxics").size(), 1u);
  EXPECT_EQ(set.show("replaced").body.at("upstream"), other.where().str());
  EXPECT_EQ(set.show("new").body.at("enabled"), false);
  EXPECT_EQ(set.populate(json::object()).status, 400);
}

TEST(relay_api, metrics_export_every_counter_and_carry_them_across_a_disable) {
  plain_peer peer(plain_peer::mode::echo);
  api::proxy_set set(raw_defaults());
  auto at = listen_of(set.create({{"name", "p\"q"}, {"upstream", peer.where().str()}}));
  set.add_toxic("p\"q", {{"type", "latency"}, {"name", "slow"}, {"attributes", {{"latency", 1}}}});
  {
    client c(at);
    c.send(std::vector<char>(1000, 'x'));
    EXPECT_EQ(c.read(1000, 10s).data.size(), 1000u);
  }
  set.update("p\"q", {{"enabled", false}});
  auto text = set.metrics();
  for (const char* line :
       {"# TYPE faultlane_relay_connections_accepted_total counter\n",
        "faultlane_relay_connections_accepted_total{proxy=\"p\\\"q\"} 1\n",
        "faultlane_relay_received_bytes_total{proxy=\"p\\\"q\",direction=\"upstream\"} 1000\n",
        "faultlane_relay_received_bytes_total{proxy=\"p\\\"q\",direction=\"downstream\"} 1000\n",
        "faultlane_relay_fault_firings_total{proxy=\"p\\\"q\",fault=\"slow\"} 1\n",
        "faultlane_relay_enabled{proxy=\"p\\\"q\"} 0\n",
        "faultlane_relay_active_faults_peak{proxy=\"p\\\"q\"} 1\n",  // kept past the disable
        "faultlane_relay_toxics{proxy=\"p\\\"q\"} 1\n", "# HELP faultlane_relay_live_connections ",
        "# TYPE faultlane_relay_active_faults gauge\n",
        "faultlane_relay_upstream_connect_failures_total{proxy=\"p\\\"q\"} 0\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  EXPECT_NE(set.report().find("connections.accepted         1"), std::string::npos);
}

// The HTTP routes, through a real HTTP client.
TEST(relay_api_http, routes_answer_as_toxiproxy_does) {
  plain_peer peer(plain_peer::mode::echo);
  api_config c;
  c.http = address{"127.0.0.1", 0};
  c.proxy_defaults = raw_defaults();
  auto server = api_server::start(c);
  ASSERT_TRUE(server.ok()) << server.error().message;
  auto at = server.value()->endpoint().value();
  httplib::Client http(at.address, at.port);
  http.set_read_timeout(10, 0);
  auto made = http.Post("/proxies", json{{"name", "p"}, {"upstream", peer.where().str()}}.dump(),
                        "application/json");
  ASSERT_TRUE(made);
  EXPECT_EQ(made->status, 201);
  EXPECT_EQ(made->get_header_value("Content-Type"), "application/json");
  auto patched = http.Patch("/proxies/p", R"({"enabled": false})", "application/json");
  ASSERT_TRUE(patched);
  EXPECT_EQ(json::parse(patched->body).at("enabled"), false);
  auto toxic =
      http.Post("/proxies/p/toxics", R"({"type": "latency", "attributes": {"latency": 3}})",
                "application/json");
  ASSERT_TRUE(toxic);
  EXPECT_EQ(toxic->status, 200);
  EXPECT_EQ(
      http.Patch("/proxies/p/toxics/latency_downstream", R"({"toxicity": 0.5})", "application/json")
          ->status,
      200);
  EXPECT_EQ(http.Get("/proxies/p/toxics")->status, 200);
  EXPECT_EQ(http.Get("/proxies/p/toxics/latency_downstream")->status, 200);
  EXPECT_EQ(http.Post("/proxies", "{not json", "application/json")->status, 400);
  EXPECT_EQ(http.Delete("/proxies/p/toxics/latency_downstream")->status, 204);
  EXPECT_EQ(json::parse(http.Get("/version")->body).at("version").get<std::string>().substr(0, 2),
            "2.");
  auto metrics = http.Get("/metrics");
  EXPECT_EQ(metrics->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(metrics->body.find("faultlane_relay_enabled{proxy=\"p\"} 0"), std::string::npos);
  auto no_route = http.Post("/foo", "{}", "application/json");
  EXPECT_EQ(no_route->status, 404);
  EXPECT_EQ(no_route->body, "404 page not found\n");
  httplib::Headers browser{{"User-Agent", "Mozilla/5.0"}};
  EXPECT_EQ(http.Get("/proxies", browser)->status, 403);
  EXPECT_EQ(http.Delete("/proxies/p")->status, 204);
  EXPECT_EQ(http.Get("/proxies/p")->status, 404);
  EXPECT_EQ(http.Get("/nothing/here")->status, 404);
}

// `curl -X POST .../reset` sends no Content-Length, which cpp-httplib would
// refuse with a 400 before any route ran.
TEST(relay_api_http, a_post_without_a_body_resets) {
  api_config c;
  c.http = address{"127.0.0.1", 0};
  auto server = api_server::start(c);
  ASSERT_TRUE(server.ok());
  auto at = server.value()->endpoint().value();
  for (const auto& [request, status] :
       {std::pair{"POST /reset HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "204"},
        std::pair{"POST /proxies HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "400"},
        std::pair{"PATCH /proxies/p HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "400"},
        std::pair{"POST /foo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "404"}}) {
    client raw(at);
    raw.send(std::vector<char>(request, request + std::strlen(request)));
    auto answer = raw.read(4096, 10s);
    std::string text(answer.data.begin(), answer.data.end());
    EXPECT_EQ(text.substr(0, 12), std::string("HTTP/1.1 ") + status) << text;
  }
}

// cpp-httplib's stop() is a no-op until its thread has marked itself
// running: a server stopped at once (a relay flag that fails right after
// --api started) used to serve forever and hang the program's exit.
TEST(relay_api_http, stopping_right_after_starting_returns) {
  api_config c;
  c.http = address{"127.0.0.1", 0};
  for (int i = 0; i < 200; ++i) {
    auto server = api_server::start(c);
    ASSERT_TRUE(server.ok());
    server.value()->stop();
  }
}

TEST(relay_api_http, the_api_address_follows_the_loopback_rule) {
  api_config c;
  c.http = address{"192.0.2.1", 0};
  auto refused = api_server::start(c);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("not a loopback address"), std::string::npos);
  c.http = address{"127.0.0.1", 0};
  auto first = api_server::start(c).value();
  c.http = first->endpoint();
  auto taken = api_server::start(c);
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.error().message.find("cannot listen"), std::string::npos);
}

}  // namespace
}  // namespace faultlane::relays::testing

namespace faultlane::relays::testing {
namespace {

TEST(relay_api, configured_relays_keep_their_tap_across_restarts_and_unique_toxic_names) {
  plain_peer peer(plain_peer::mode::echo);
  auto tap_path =
      ::testing::TempDir() + std::to_string(::getpid()) + "-relay_api_restart_tap.jsonl";
  auto c = config_to(peer.where(), {"latency dir=down ms=1", "latency dir=down ms=2"});
  c.name = "cfg";
  c.tap_path = tap_path;
  api::proxy_set set(raw_defaults());
  auto bound = set.add_configured(c);
  ASSERT_TRUE(bound.ok()) << bound.error().message;
  auto toxics = set.toxics("cfg").body;
  ASSERT_EQ(toxics.size(), 2u);
  EXPECT_EQ(toxics[0].at("name"), "latency.down");
  EXPECT_EQ(toxics[1].at("name"), "latency.down.2");  // reachable on its own
  EXPECT_EQ(set.show_toxic("cfg", "latency.down.2").body.at("attributes").at("latency"), 2);
  auto relay_once = [&] {
    client k(bound.value());
    k.send({'x'});
    EXPECT_EQ(k.read(1, 10s).data.size(), 1u);
  };
  relay_once();
  set.update("cfg", {{"enabled", false}});
  set.update("cfg", {{"enabled", true}});
  relay_once();
  set.stop_all();
  std::ifstream in(tap_path);
  std::string line;
  int opens = 0;
  while (std::getline(in, line)) opens += line.find(R"("kind": "open")") != std::string::npos;
  EXPECT_EQ(opens, 2);  // the restart added to the file
  std::remove(tap_path.c_str());
}

// relay::replace_fault: live connections keep what the fault did, and the
// firings left of `count` carry over unless the count changed.
TEST(relay_api, a_replaced_fault_keeps_its_state_and_its_count) {
  plain_peer peer(plain_peer::mode::echo);
  auto r = start_relay(config_to(peer.where(), {"stall dir=down count=1"}));
  ASSERT_TRUE(r);
  auto id = r->faults().at(0).first;
  client first(r->listen_endpoint());
  first.send({'a'});
  EXPECT_TRUE(eventually([&] { return r->counter("stall.down") == 1; }));
  ASSERT_TRUE(r->replace_fault(id, parse_fault("stall dir=down count=1").value()));
  EXPECT_TRUE(first.read(1, 200ms).data.empty());  // still held
  client second(r->listen_endpoint());
  second.send({'b'});
  EXPECT_EQ(second.read(1, 10s).data.size(), 1u);  // the one firing was used
  ASSERT_TRUE(r->replace_fault(id, parse_fault("stall dir=down count=2").value()));
  client third(r->listen_endpoint());
  third.send({'c'});
  EXPECT_TRUE(eventually([&] { return r->counter("stall.down") == 2; }));
  EXPECT_TRUE(third.read(1, 200ms).data.empty());  // a new count: it stalls again
  ASSERT_TRUE(r->remove_fault(id));
  EXPECT_EQ(first.read(1, 10s).data.size(), 1u);
  EXPECT_EQ(third.read(1, 10s).data.size(), 1u);
}

}  // namespace
}  // namespace faultlane::relays::testing
