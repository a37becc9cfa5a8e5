// run_digest: the 64-bit digest of a deterministic run (docs/dsim.md, "The
// run digest"): the world's chain of steps and socket events, then every
// recorded op, core event and mark, every relay's counters, every stats
// sample, each region's final bytes and the verdict.
#include "runner/run_digest.hpp"

#include <string_view>

#include "faultlane/base/hash.hpp"
#include "faultlane/core/stats.hpp"

namespace faultlane::sim {
namespace {

class chain {
 public:
  explicit chain(std::uint64_t start) : h_(start) {}
  chain& operator<<(std::uint64_t v) {
    h_ = stable_hash(h_ ^ stable_hash(v));
    return *this;
  }
  chain& operator<<(std::string_view text) { return *this << stable_hash(text); }
  chain& operator<<(status s) { return *this << static_cast<std::uint64_t>(s); }
  chain& bytes(const std::vector<std::byte>& b) {
    const std::string_view text(reinterpret_cast<const char*>(b.data()), b.size());
    return *this << b.size() << text;
  }
  std::uint64_t value() const noexcept { return h_; }

 private:
  std::uint64_t h_;
};

}  // namespace

std::uint64_t run_digest(std::uint64_t world_digest, const run_result& r) {
  chain c(world_digest);
  if (r.hist) {
    const history& h = *r.hist;
    for (const auto& op : h.ops) {
      c << op.id << op.stream << op.phase << static_cast<std::uint64_t>(op.op) << op.offset
        << op.length << op.data_seed << op.registration_id << op.task_id << op.submit_seq
        << op.complete_seq << op.submit_us << op.complete_us << op.outcome << op.bytes
        << op.callbacks << op.batch_status << op.initiator_incarnation << op.target_incarnation;
    }
    for (const auto& e : h.events) {
      c << e.seq << e.time_us << e.transport << e.incarnation << static_cast<std::uint64_t>(e.kind)
        << e.task_id << e.request_id << static_cast<std::uint64_t>(e.op) << e.segment
        << e.registration_id << e.remote_offset << e.length << e.offset << e.lane << e.rail
        << e.epoch;
    }
    for (const auto& m : h.marks) c << m.seq << m.kind << m.text;
    for (const auto& l : h.links) {
      c << l.name << l.tap.size();
      for (const auto& [name, n] : l.counters) c << name << n;
    }
    for (const auto& s : h.stats) {
      c << s.transport << s.incarnation << s.seq << s.time_us;
      for (const auto& counter : transport_counters) c << s.stats.*counter.field;
    }
    for (const auto& f : h.finals) c << f.transport << f.incarnation << f.region << f.seq;
    for (const auto& f : h.finals) c.bytes(f.bytes);
  }
  c << r.passed << r.skipped << r.error << r.ops_done << r.ops_total;
  for (const auto& checker : r.checkers) c << checker.name << checker.violations.size();
  return c.value();
}

}  // namespace faultlane::sim
