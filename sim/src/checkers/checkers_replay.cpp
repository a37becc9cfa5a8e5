// checkers_replay: the no-replay checker.
//
// A WRITE may be sent again only under a new request id and only after the
// target refused the earlier one (a stale registration refreshed, say): it
// then cannot have executed. Anything else risks running it twice. The
// checker reads both sides: the target's server_executed events and the
// initiator's slice_dispatched events, and the relay taps of the wire. A
// WRITE that ended with a definite failure (not ambiguous_write) must not
// have run at all: its caller may send it again.
#include <fmt/format.h>

#include <map>
#include <set>
#include <tuple>
#include <unordered_set>

#include "checkers/checkers_support.hpp"
#include "faultlane/sim/checkers.hpp"

namespace faultlane::sim {
namespace {

using detail::hex;
using detail::name_of;

constexpr std::string_view replay_name = checker_name(check_no_replay);

// (a) A target executes one WRITE request id at most once.
void check_target_executions(const history& h, const detail::history_index& index,
                             checker_result& r) {
  std::map<std::tuple<std::string, std::uint32_t, std::uint64_t>, std::vector<const core_event*>>
      executed;
  for (const auto& e : h.events) {
    if (e.kind != event_kind::server_executed || e.op != wire::opcode::write ||
        e.outcome != status::ok) {
      continue;
    }
    executed[{e.transport, e.incarnation, e.request_id}].push_back(&e);
  }
  for (const auto& [key, list] : executed) {
    if (list.size() < 2) continue;
    std::string seqs;
    for (const auto* e : list) seqs += fmt::format("{}{}", seqs.empty() ? "" : ", ", e->seq);
    r.violations.push_back(
        detail::event_violation(replay_name, index, *list[1],
                                fmt::format("{} executed WRITE request {} {} times (seqs {})",
                                            name_of(std::get<0>(key), std::get<1>(key)),
                                            hex(std::get<2>(key)), list.size(), seqs)));
  }
}

// Request ids a target answered with a refusal, from the taps (a status on a
// response frame going down).
std::unordered_set<std::uint64_t> tapped_rejections(const history& h) {
  std::unordered_set<std::uint64_t> out;
  for (const auto& link : h.links) {
    for (const auto& t : link.tap) {
      if (t.kind == relays::record_kind::frame && t.dir == relays::direction::down && !t.request &&
          t.status != 0) {
        out.insert(t.request_id);
      }
    }
  }
  return out;
}

// (b) and (c): one WRITE op's dispatches and executions.
void check_write_op(const op_record& op, const detail::history_index& index,
                    const std::unordered_set<std::uint64_t>& refused, checker_result& r) {
  const auto* t = index.trace(op);
  if (t == nullptr) return;
  auto rejected = [&](std::uint64_t id) {
    if (refused.count(id) != 0) return true;
    for (const auto* e : index.executions(id)) {
      if (e->outcome != status::ok) return true;
    }
    return false;
  };
  for (std::size_t i = 0; i + 1 < t->slices.size(); ++i) {
    const auto& earlier = *t->slices[i];
    if (rejected(earlier.request_id)) continue;
    r.violations.push_back(detail::op_violation(
        replay_name, index, op,
        fmt::format("WRITE dispatched {} times: request {} (seq {}) was sent again as request "
                    "{} (seq {}) though the target never refused it",
                    t->slices.size(), hex(earlier.request_id), earlier.seq,
                    hex(t->slices[i + 1]->request_id), t->slices[i + 1]->seq),
        t->slices[i + 1]->seq));
  }
  std::vector<const core_event*> ok;
  std::set<std::uint64_t> ids;
  for (const auto* s : t->slices) ids.insert(s->request_id);
  for (auto id : ids) {
    for (const auto* e : index.executions(id)) {
      if (e->outcome == status::ok && e->op == wire::opcode::write) ok.push_back(e);
    }
  }
  // (d) A definite failure tells the caller the WRITE did not run, so the
  // caller may send it again: if it ran, that is a replay the core caused.
  // (A lane that sends several requests in one write must call each one
  // that had a byte leave ambiguous, not only the first.)
  const bool definite =
      op.complete_seq != 0 && op.outcome != status::ok && op.outcome != status::ambiguous_write;
  if (definite && !ok.empty()) {
    r.violations.push_back(detail::op_violation(
        replay_name, index, op,
        fmt::format("WRITE ended {}, a definite failure, but the target executed request {} "
                    "(seq {})",
                    to_string(op.outcome), hex(ok.front()->request_id), ok.front()->seq),
        ok.front()->seq));
  }
  if (ok.size() < 2) return;
  std::string where;
  for (const auto* e : ok) {
    where += fmt::format("{}request {} on {} at seq {}", where.empty() ? "" : ", ",
                         hex(e->request_id), name_of(e->transport, e->incarnation), e->seq);
  }
  r.violations.push_back(detail::op_violation(
      replay_name, index, op,
      fmt::format("WRITE executed {} times by the target: {}", ok.size(), where), ok[1]->seq));
}

struct sighting {
  const link_record* link = nullptr;
  std::uint64_t connection = 0;
};

std::string where_seen(const std::vector<sighting>& seen) {
  std::map<std::string, std::vector<std::uint64_t>> by_link;
  for (const auto& s : seen) by_link[s.link->name].push_back(s.connection);
  std::string out;
  for (const auto& [link, conns] : by_link) {
    if (!out.empty()) out += "; ";
    out += fmt::format("on link {} (connection{} ", link, conns.size() > 1 ? "s" : "");
    for (std::size_t i = 0; i < conns.size(); ++i) {
      out += fmt::format("{}{}", i == 0 ? "" : (i + 1 == conns.size() ? " and " : ", "), conns[i]);
    }
    out += ")";
  }
  return out;
}

// (d) The wire: a WRITE request id goes up at most once over all the links
// of its initiator.
void check_taps(const history& h, const detail::history_index& index, checker_result& r) {
  std::map<std::string, std::map<std::uint64_t, std::vector<sighting>>> by_initiator;
  for (const auto& link : h.links) {
    for (const auto& t : link.tap) {
      if (t.kind != relays::record_kind::frame || t.dir != relays::direction::up || !t.request ||
          t.op != wire::opcode::write) {
        continue;
      }
      ++r.checked;
      by_initiator[link.initiator][t.request_id].push_back({&link, t.connection});
    }
  }
  for (const auto& [initiator, requests] : by_initiator) {
    for (const auto& [id, seen] : requests) {
      if (seen.size() < 2) continue;
      auto times = seen.size() == 2 ? std::string("twice") : fmt::format("{} times", seen.size());
      auto evidence = fmt::format("WRITE sent {}: request {} seen {} times {}", times, hex(id),
                                  seen.size(), where_seen(seen));
      const auto* op = index.op_of_request(id);
      violation v{.checker = std::string(replay_name), .request_id = id, .transport = initiator};
      if (op != nullptr) {
        v = detail::op_violation(replay_name, index, *op, evidence);
        v.request_id = id;
      }
      v.evidence = std::move(evidence);
      r.violations.push_back(std::move(v));
    }
  }
}

}  // namespace

checker_result detail::no_replay_by_index(const history& h, const detail::history_index& index) {
  checker_result r{.name = std::string(replay_name)};
  check_target_executions(h, index, r);
  auto refused = tapped_rejections(h);
  for (const auto& op : h.ops) {
    if (op.op != wire::opcode::write || op.submit_failed) continue;
    ++r.checked;
    check_write_op(op, index, refused, r);
  }
  check_taps(h, index, r);
  return r;
}

checker_result check_no_replay(const history& h) {
  return detail::no_replay_by_index(h, detail::history_index(h));
}

}  // namespace faultlane::sim
