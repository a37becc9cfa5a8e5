// report_fixtures: what the report tests share: a tag-balance checker for
// the XML-ish outputs (it also rejects unescaped text, so a missing escape
// fails a test) and hand-made run results with a small history: two lanes,
// a target, a tapped link with frames and three faults, phases and marks,
// and a failing checker whose violation names op 2.
#pragma once

#include <cctype>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/sim/report.hpp"

namespace faultlane::sim::report_fixtures {

// --- a tag-balance checker ----------------------------------------------------

inline bool is_void(const std::string& name) {
  for (const char* v : {"meta", "br", "hr", "img", "input", "link", "col", "wbr"}) {
    if (name == v) return true;
  }
  return false;
}

// Text between tags: every & starts an entity, no raw < or >.
inline std::string check_text(std::string_view text) {
  static const std::regex entity("^&(amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);");
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '>') return "raw > in text";
    if (text[i] != '&') continue;
    std::string rest(text.substr(i, 12));
    if (!std::regex_search(rest, entity)) return "bad entity at: " + rest;
  }
  return {};
}

// Attributes of a start tag, from after its name to before > or />.
inline std::string check_attributes(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    if (std::isspace(static_cast<unsigned char>(s[i]))) {
      ++i;
      continue;
    }
    std::size_t name_start = i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '-' ||
                            s[i] == ':' || s[i] == '_')) {
      ++i;
    }
    if (i == name_start) return "bad attribute name in: " + std::string(s);
    if (i >= s.size() || s[i] != '=') return "attribute without value in: " + std::string(s);
    ++i;
    if (i >= s.size() || (s[i] != '"' && s[i] != '\''))
      return "unquoted attribute: " + std::string(s);
    char quote = s[i++];
    auto end = s.find(quote, i);
    if (end == std::string_view::npos) return "unterminated attribute: " + std::string(s);
    auto value = s.substr(i, end - i);
    if (value.find('<') != std::string_view::npos) return "< in attribute: " + std::string(value);
    if (auto e = check_text(value); !e.empty()) return e + " in attribute " + std::string(value);
    i = end + 1;
  }
  return {};
}

// Empty when `doc` is balanced: every element closed in order (void and
// self-closed elements excepted), attributes quoted, text escaped.
inline std::string check_balanced(const std::string& doc) {
  std::vector<std::string> open;
  std::size_t i = 0;
  while (i < doc.size()) {
    auto lt = doc.find('<', i);
    auto text = std::string_view(doc).substr(i, lt == std::string::npos ? lt : lt - i);
    bool raw = !open.empty() && (open.back() == "style" || open.back() == "script");
    if (!raw) {
      if (auto e = check_text(text); !e.empty()) return e;
    }
    if (lt == std::string::npos) break;
    if (doc.compare(lt, 4, "<!--") == 0) {
      i = doc.find("-->", lt) + 3;
      continue;
    }
    if (doc.compare(lt, 2, "<!") == 0 || doc.compare(lt, 2, "<?") == 0) {
      i = doc.find('>', lt) + 1;
      continue;
    }
    auto gt = doc.find('>', lt);
    if (gt == std::string::npos) return "unterminated tag";
    std::string_view tag = std::string_view(doc).substr(lt + 1, gt - lt - 1);
    if (tag.starts_with('/')) {
      std::string name(tag.substr(1));
      if (open.empty() || open.back() != name) {
        return "closing </" + name + "> but open is <" + (open.empty() ? "" : open.back()) + ">";
      }
      open.pop_back();
    } else {
      bool self_closed = tag.ends_with('/');
      if (self_closed) tag.remove_suffix(1);
      auto name_end = tag.find_first_of(" \t\n");
      std::string name(tag.substr(0, name_end));
      if (name.empty()) return "empty tag name";
      if (name_end != std::string_view::npos) {
        if (auto e = check_attributes(tag.substr(name_end)); !e.empty()) return e;
      }
      if (!self_closed && !is_void(name)) open.push_back(name);
    }
    i = gt + 1;
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  return {};
}

inline std::size_t count_of(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + 1)) ++n;
  return n;
}

// The start tag (up to and including '>') of the element with `attribute`.
inline std::vector<std::string> tags_with(const std::string& doc, const std::string& attribute) {
  std::vector<std::string> tags;
  for (auto pos = doc.find(attribute); pos != std::string::npos;
       pos = doc.find(attribute, pos + 1)) {
    auto start = doc.rfind('<', pos);
    tags.push_back(doc.substr(start, doc.find('>', pos) - start + 1));
  }
  return tags;
}

// --- fixtures -----------------------------------------------------------------

inline core_event event_of(std::uint64_t seq, std::uint64_t us, std::string transport,
                           event_kind kind) {
  core_event e;
  e.seq = seq;
  e.time_us = us;
  e.transport = std::move(transport);
  e.kind = kind;
  return e;
}

inline op_record op_of(std::uint64_t id, std::uint64_t task, status outcome,
                       std::uint64_t done_us) {
  op_record o;
  o.id = id;
  o.stream = "writes";
  o.initiator = "client#0";
  o.target = "server#0";
  o.op = wire::opcode::write;
  o.offset = 4096 * id;
  o.length = 4096;
  o.task_id = task;
  o.submit_seq = id;
  o.submit_us = 100 * id;
  o.complete_seq = done_us == 0 ? 0 : 100 + id;
  o.complete_us = done_us;
  o.outcome = outcome;
  return o;
}

inline void add_lanes(history& h) {
  for (std::size_t lane : {0, 1}) {
    auto e = event_of(10 + lane, 50, "client#0", event_kind::lane_connected);
    e.lane = lane;
    e.local = "127.0.0.1:4000" + std::to_string(lane);
    e.remote = "127.0.0.1:5000";
    h.events.push_back(e);
  }
  // Op 1 on lane 0, ops 2 and 3 on lane 1; task ids differ from op ids.
  for (std::uint64_t id : {1, 2, 3}) {
    auto e = event_of(20 + id, 100 * id + 10, "client#0", event_kind::slice_dispatched);
    e.task_id = 100 + id;
    e.request_id = 0xa0 + id;
    e.lane = id == 1 ? 0 : 1;
    e.length = 4096;
    h.events.push_back(e);
  }
  auto closed = event_of(60, 900, "client#0", event_kind::lane_closed);
  closed.lane = 1;
  closed.outcome = status::connection_failed;
  h.events.push_back(closed);
}

inline void add_target(history& h) {
  auto opened = event_of(15, 60, "server#0", event_kind::session_opened);
  h.events.push_back(opened);
  for (std::uint64_t id : {1, 3}) {
    auto e = event_of(30 + id, 100 * id + 40, "server#0", event_kind::server_executed);
    e.request_id = 0xa0 + id;
    e.op = wire::opcode::write;
    e.registration_id = 7;
    e.remote_offset = 4096 * id;
    e.length = 4096;
    h.events.push_back(e);
  }
}

inline relays::tap_record tap_of(relays::record_kind kind, std::uint64_t us) {
  relays::tap_record t;
  t.kind = kind;
  t.time_us = us;
  t.relay = "c0-s0";
  t.connection = 1;
  return t;
}

inline void add_link(history& h) {
  link_record link;
  link.name = "c0-s0";
  link.initiator = "client#0";
  link.target = "server#0";
  link.tapped = true;
  link.counters = {{"drop_frame.down", 2}, {"reset.up", 1}, {"connections", 1}};
  auto open = tap_of(relays::record_kind::open, 55);
  open.client_address = "127.0.0.1:40000";
  link.tap.push_back(open);
  for (std::uint64_t id : {1, 2, 3}) {
    auto req = tap_of(relays::record_kind::frame, 100 * id + 20);
    req.request_id = 0xa0 + id;
    req.op = wire::opcode::write;
    link.tap.push_back(req);
    auto fault = tap_of(relays::record_kind::fault, 100 * id + 30);
    fault.fault = id == 3 ? "reset.up" : "drop_frame.down";
    link.tap.push_back(fault);
  }
  auto resp = tap_of(relays::record_kind::frame, 160);
  resp.request = false;
  resp.dir = relays::direction::down;
  link.tap.push_back(resp);
  link.tap.push_back(tap_of(relays::record_kind::write, 161));
  link.tap.push_back(tap_of(relays::record_kind::close, 800));
  h.links.push_back(link);
}

inline std::shared_ptr<const history> make_history() {
  auto h = std::make_shared<history>();
  h->seed = 42;
  h->ops = {op_of(1, 101, status::ok, 300), op_of(2, 102, status::ambiguous_write, 450),
            op_of(3, 103, status::ok, 500)};
  add_lanes(*h);
  add_target(*h);
  add_link(*h);
  h->phases = {{"faults", false, false, 0, 1, 70, 0, 600},
               {"heal", true, false, 500, 70, 90, 600, 1000}};
  h->marks = {{5, 40, "event", "restart server#0 <now> & then", true},
              {80, 700, "note", "liveness \"check\"", false}};
  return h;
}

inline violation make_violation(std::uint64_t op_id, std::string evidence) {
  return {"no_replay", op_id, 100 + op_id, 0xa0 + op_id, "server#0", 50, std::move(evidence)};
}

inline run_result failed_run() {
  run_result r;
  r.scenario = "lost <ack> & 'replay'";
  r.file = "sim/scenarios/lost_ack.yaml";
  r.seed = 42;
  r.ops_total = 3;
  r.ops_done = 3;
  r.faults_fired = {{"drop_frame.down", 2}, {"reset.up", 1}};
  r.seconds = 1.25;
  r.replay = "faultlane-sim run sim/scenarios/lost_ack.yaml --seed 42";
  r.checkers.push_back({"exactly_once", true, "", 3, {}});
  r.checkers.push_back({"no_replay",
                        true,
                        "",
                        3,
                        {make_violation(2, "WRITE executed 2 times, expected <= 1 & \"once\"")}});
  r.checkers.push_back({"liveness", false, "no heal phase", 0, {}});
  r.hist = make_history();
  return r;
}

// failed_run() whose failing checker (no_replay) has `total` violations:
// its own, then ones of op 9 "again".
inline run_result failed_run_with(std::size_t total) {
  auto r = failed_run();
  auto& violations = r.checkers[1].violations;
  while (violations.size() < total) violations.push_back(make_violation(9, "again"));
  return r;
}

inline run_result passed_run(std::string name, std::uint64_t seed) {
  run_result r;
  r.scenario = std::move(name);
  r.seed = seed;
  r.passed = true;
  r.ops_total = 10;
  r.ops_done = 10;
  r.checkers.push_back({"exactly_once", true, "", 10, {}});
  r.seconds = 0.5;
  return r;
}

inline run_result skipped_run() {
  auto r = passed_run("needs_failpoints", 7);
  r.passed = false;
  r.skipped = true;
  r.skip_reason = "needs failpoints";
  return r;
}

inline run_result error_run() {
  auto r = passed_run("unreachable", 9);
  r.passed = false;
  r.error = "child server#1 did not start\x01 within 5000 ms";
  r.replay = "faultlane-sim run unreachable.yaml --seed 9";
  return r;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace faultlane::sim::report_fixtures
