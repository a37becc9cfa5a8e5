// checkers_shutdown: the drained-shutdown and liveness checkers.
//
// Drained shutdown: shutdown() returns within its bound, every task of that
// transport settled before it returned, no task settled after, and the
// stats it left are all zero. Liveness: a liveness phase ran work, and all
// of it ended ok within the phase's deadline.
#include <fmt/format.h>

#include "checkers/checkers_support.hpp"
#include "faultlane/sim/checkers.hpp"

namespace faultlane::sim {
namespace {

using detail::name_of;

constexpr std::string_view shutdown_name = checker_name(check_drained_shutdown);
constexpr std::string_view liveness_name = checker_name(check_liveness);
constexpr std::uint64_t shutdown_slack_us = 1'000'000;  // scheduling noise on a loaded machine

void add_shutdown(checker_result& r, const shutdown_record& s, std::string evidence) {
  r.violations.push_back(violation{.checker = std::string(shutdown_name),
                                   .transport = s.transport,
                                   .seq = s.end_seq,
                                   .evidence = std::move(evidence)});
}

void check_return(const shutdown_record& s, checker_result& r) {
  auto who = name_of(s.transport, s.incarnation);
  auto took_us = s.end_us >= s.start_us ? s.end_us - s.start_us : 0;
  auto bound_us = std::uint64_t{s.bound_ms} * 1000 + shutdown_slack_us;
  if (took_us > bound_us) {
    add_shutdown(r, s,
                 fmt::format("shutdown of {} took {} us, over its bound of {} ms + 1 s slack", who,
                             took_us, s.bound_ms));
  }
  bool accepted =
      s.result == status::ok || (s.result == status::runtime_failed && s.after.runtime_failed);
  if (!accepted) {
    add_shutdown(
        r, s,
        fmt::format("shutdown of {} returned {} ({}){}", who, to_string(s.result), s.message,
                    s.result == status::runtime_failed ? " but stats say not failed" : ""));
  }
  const auto& a = s.after;
  auto nonzero = [&](std::string_view field, std::uint64_t v) {
    if (v != 0)
      add_shutdown(r, s, fmt::format("after shutdown of {}: {} = {}, expected 0", who, field, v));
  };
  nonzero("tasks_admitted_now", a.tasks_admitted_now);
  nonzero("bytes_admitted_now", a.bytes_admitted_now);
  nonzero("leases_live", a.leases_live);
  nonzero("lanes_connected", a.lanes_connected);
  nonzero("lanes_connecting", a.lanes_connecting);
  nonzero("sessions_live", a.sessions_live);
  if (a.tasks_submitted != a.tasks_completed) {
    add_shutdown(r, s,
                 fmt::format("after shutdown of {}: tasks_submitted {} != tasks_completed {}", who,
                             a.tasks_submitted, a.tasks_completed));
  }
}

void check_settled(const history& h, const detail::history_index& index, const shutdown_record& s,
                   checker_result& r) {
  auto who = name_of(s.transport, s.incarnation);
  for (const auto& op : h.ops) {
    if (op.initiator != s.transport || op.initiator_incarnation != s.incarnation ||
        op.submit_failed || op.submit_seq >= s.end_seq) {
      continue;
    }
    ++r.checked;
    if (op.complete_seq != 0 && op.complete_seq < s.end_seq) continue;
    auto when = op.complete_seq == 0 ? std::string("never completed")
                                     : fmt::format("completed at seq {}", op.complete_seq);
    r.violations.push_back(detail::op_violation(
        shutdown_name, index, op,
        fmt::format("submitted at seq {} before shutdown of {} returned (seq {}), but {}",
                    op.submit_seq, who, s.end_seq, when),
        s.end_seq));
  }
  for (const auto& e : h.events) {
    if (e.kind != event_kind::task_finalized || e.transport != s.transport ||
        e.incarnation != s.incarnation || e.seq <= s.end_seq) {
      continue;
    }
    r.violations.push_back(detail::event_violation(
        shutdown_name, index, e,
        fmt::format("task finalized ({}) at seq {}, after shutdown of {} returned (seq {})",
                    to_string(e.outcome), e.seq, who, s.end_seq)));
  }
}

}  // namespace

checker_result detail::drained_shutdown_by_index(const history& h,
                                                 const detail::history_index& index) {
  checker_result r{.name = std::string(shutdown_name)};
  for (const auto& s : h.shutdowns) {
    ++r.checked;
    check_return(s, r);
    check_settled(h, index, s, r);
  }
  return r;
}

checker_result check_drained_shutdown(const history& h) {
  return detail::drained_shutdown_by_index(h, detail::history_index(h));
}

checker_result detail::liveness_by_index(const history& h, const detail::history_index& index) {
  checker_result r{.name = std::string(liveness_name)};
  for (const auto& p : h.phases) {
    if (!p.liveness) continue;
    auto deadline_us = p.start_us + std::uint64_t{p.deadline_ms} * 1000;
    std::uint64_t ran = 0;
    for (const auto& op : h.ops) {
      if (op.phase != p.name) continue;
      ++ran;
      ++r.checked;
      auto add = [&](std::string evidence) {
        r.violations.push_back(detail::op_violation(liveness_name, index, op, std::move(evidence)));
      };
      if (op.submit_failed) {
        add(fmt::format("liveness phase {}: submit refused the op ({})", p.name,
                        to_string(op.outcome)));
      } else if (op.complete_seq == 0) {
        add(fmt::format("liveness phase {}: the op never completed", p.name));
      } else if (op.outcome != status::ok) {
        add(fmt::format("liveness phase {}: the op ended {}, expected ok", p.name,
                        to_string(op.outcome)));
      } else if (op.complete_us > deadline_us) {
        add(
            fmt::format("liveness phase {}: completed at {} us, after the deadline at {} us "
                        "(phase start {} us + {} ms)",
                        p.name, op.complete_us, deadline_us, p.start_us, p.deadline_ms));
      }
    }
    if (ran == 0) {
      r.violations.push_back(violation{
          .checker = std::string(liveness_name),
          .seq = p.start_seq,
          .evidence = fmt::format("liveness phase {} ran no ops: nothing showed the transports "
                                  "recovered",
                                  p.name)});
    }
  }
  return r;
}

checker_result check_liveness(const history& h) {
  return detail::liveness_by_index(h, detail::history_index(h));
}

}  // namespace faultlane::sim
