// checkers_data: the data-integrity checker.
//
// Keeps a model of every region per (target, incarnation): its bytes and
// which of them are known. Registrations fill it from their seed, ok WRITEs
// write their pattern into it, ambiguous WRITEs make their range unknown.
// Ops are swept in seq order of their submit and completion points with the
// set of ops in flight per region, so two ops are concurrent exactly when
// their [submit, complete] intervals intersect, without comparing all pairs.
// A byte a concurrent WRITE may have changed is not held against a READ.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

#include "checkers/checkers_support.hpp"
#include "faultlane/core/pattern.hpp"
#include "faultlane/sim/checkers.hpp"

namespace faultlane::sim {
namespace {

using detail::hex;
using detail::name_of;

constexpr std::string_view data_name = checker_name(check_data_integrity);

struct byte_range {
  std::uint64_t lo = 0;  // region offsets, [lo, hi)
  std::uint64_t hi = 0;
};

bool intersect(const byte_range& a, const byte_range& b, byte_range& out) {
  out = byte_range{std::max(a.lo, b.lo), std::min(a.hi, b.hi)};
  return out.lo < out.hi;
}

byte_range range_of(const op_record& op) { return {op.offset, op.offset + op.length}; }

struct model_key {
  std::string transport;
  std::uint32_t incarnation = 0;
  std::string region;
  friend auto operator<=>(const model_key&, const model_key&) = default;
};

struct region_model {
  std::vector<std::byte> bytes;
  std::vector<std::uint8_t> known;         // 1: bytes[i] is what the target holds
  std::vector<std::size_t> active_writes;  // op indices in flight
  std::vector<std::size_t> active_reads;
  void set_known(const byte_range& r, std::uint8_t k) {
    std::fill(known.begin() + static_cast<std::ptrdiff_t>(r.lo),
              known.begin() + static_cast<std::ptrdiff_t>(r.hi), k);
  }
};

// Ties on seq cannot happen (one counter); the order only makes sorting total.
enum class point_kind : std::uint8_t { fill, submit, complete, final_bytes };

struct point {
  std::uint64_t seq = 0;
  point_kind kind = point_kind::fill;
  std::size_t index = 0;
};

struct comparison {
  std::uint64_t compared = 0;
  std::uint64_t differing = 0;
  std::uint64_t first = 0;  // offset of the first differing byte, within the compared span
};

// Compares `n` seen bytes with the model's known bytes, skipping `skip`
// (offsets relative to the span's start).
comparison compare(const std::byte* model, const std::uint8_t* known, const std::byte* seen,
                   std::size_t n, const std::vector<byte_range>& skip) {
  comparison c;
  if (skip.empty() && std::memcmp(model, seen, n) == 0) {
    // Usually every byte is known: memchr (vectorised in libc) says so
    // faster than counting byte by byte.
    c.compared = std::memchr(known, 0, n) == nullptr
                     ? n
                     : static_cast<std::uint64_t>(std::count(known, known + n, std::uint8_t{1}));
    return c;
  }
  std::vector<std::uint8_t> masked(known, known + n);
  for (const auto& s : skip) {
    std::fill(masked.begin() + static_cast<std::ptrdiff_t>(s.lo),
              masked.begin() + static_cast<std::ptrdiff_t>(s.hi), std::uint8_t{0});
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (masked[i] == 0) continue;
    ++c.compared;
    if (model[i] != seen[i]) {
      if (c.differing == 0) c.first = i;
      ++c.differing;
    }
  }
  return c;
}

bool write_matters(const op_record& op) {
  return op.op == wire::opcode::write && !op.submit_failed &&
         (op.complete_seq == 0 || op.outcome == status::ok ||
          op.outcome == status::ambiguous_write);
}

bool read_matters(const op_record& op) {
  return op.op == wire::opcode::read && !op.submit_failed && op.complete_seq != 0 &&
         op.outcome == status::ok;
}

void drop(std::vector<std::size_t>& v, std::size_t i) { std::erase(v, i); }

class data_sweep {
 public:
  data_sweep(const history& h, const detail::history_index& index, checker_result& r)
      : h_(h), index_(index), r_(r) {}

  void run() {
    for (const auto& p : points()) {
      switch (p.kind) {
        case point_kind::fill: fill(h_.registrations[p.index]); break;
        case point_kind::submit: submit(p.index); break;
        case point_kind::complete:
          if (h_.ops[p.index].op == wire::opcode::write) {
            complete_write(p.index);
          } else {
            complete_read(p.index);
          }
          break;
        case point_kind::final_bytes: check_final(h_.finals[p.index]); break;
      }
    }
  }

 private:
  std::vector<point> points() const;
  void fill(const registration_record& reg);
  void submit(std::size_t i);
  void complete_write(std::size_t i);
  void forget_untracked(const op_record& op);
  void complete_read(std::size_t i);
  void check_final(const region_final& f);
  region_model* model_of(const op_record& op);
  bool in_bounds(const op_record& op, const region_model& m);
  void report_read(const op_record& op, const comparison& c);

  const history& h_;
  const detail::history_index& index_;
  checker_result& r_;
  std::map<model_key, region_model> models_;
  std::unordered_map<std::size_t, std::vector<byte_range>> taint_;  // per op in flight
  std::vector<std::byte> pattern_;
};

std::vector<point> data_sweep::points() const {
  std::vector<point> out;
  for (std::size_t i = 0; i < h_.registrations.size(); ++i) {
    out.push_back({h_.registrations[i].registered_seq, point_kind::fill, i});
  }
  for (std::size_t i = 0; i < h_.ops.size(); ++i) {
    const auto& op = h_.ops[i];
    if (!write_matters(op) && !read_matters(op)) continue;
    out.push_back({op.submit_seq, point_kind::submit, i});
    if (op.complete_seq != 0) out.push_back({op.complete_seq, point_kind::complete, i});
  }
  for (std::size_t i = 0; i < h_.finals.size(); ++i) {
    out.push_back({h_.finals[i].seq, point_kind::final_bytes, i});
  }
  std::sort(out.begin(), out.end(), [](const point& a, const point& b) {
    return a.seq != b.seq ? a.seq < b.seq : a.kind < b.kind;
  });
  return out;
}

// fill_seed != 0: the region's bytes are the seed's pattern. 0: they carried
// over, from this incarnation's model or else the latest earlier one's.
void data_sweep::fill(const registration_record& reg) {
  auto& m = models_[model_key{reg.transport, reg.incarnation, reg.region}];
  if (reg.fill_seed != 0) {
    m.bytes.resize(reg.size);
    fill_pattern(m.bytes.data(), m.bytes.size(), reg.fill_seed);
    m.known.assign(reg.size, 1);
    return;
  }
  if (m.bytes.empty()) {
    for (auto it = models_.begin(); it != models_.end(); ++it) {
      const auto& [k, earlier] = *it;
      if (k.transport == reg.transport && k.region == reg.region &&
          k.incarnation < reg.incarnation) {
        m.bytes = earlier.bytes;
        m.known = earlier.known;
      }
    }
  }
  m.bytes.resize(reg.size);
  m.known.resize(reg.size, 0);
}

region_model* data_sweep::model_of(const op_record& op) {
  auto it = models_.find(model_key{op.target, op.target_incarnation, op.region});
  return it == models_.end() ? nullptr : &it->second;
}

bool data_sweep::in_bounds(const op_record& op, const region_model& m) {
  if (op.offset <= m.bytes.size() && op.length <= m.bytes.size() - op.offset) return true;
  if (op.outcome == status::ok) {
    r_.violations.push_back(detail::op_violation(
        data_name, index_, op,
        fmt::format("{} ok over [{}, {}) of region {} on {}, which holds {} bytes",
                    op.op == wire::opcode::write ? "WRITE" : "READ", op.offset,
                    op.offset + op.length, op.region, name_of(op.target, op.target_incarnation),
                    m.bytes.size())));
  }
  return false;
}

void data_sweep::submit(std::size_t i) {
  const auto& op = h_.ops[i];
  auto* m = model_of(op);
  if (m == nullptr || !in_bounds(op, *m)) return;
  (op.op == wire::opcode::write ? m->active_writes : m->active_reads).push_back(i);
  taint_[i].clear();
}

// Every op in flight beside it shares the uncertainty of the bytes both
// touch: a READ may have seen either version, a WRITE may land before or
// after.
// A WRITE the sweep did not track from its submit (its incarnation's region
// was recorded after it): never dropped silently. What it may have written
// is unknown in its incarnation and every later one.
void data_sweep::forget_untracked(const op_record& op) {
  if (op.outcome != status::ok && op.outcome != status::ambiguous_write) return;
  const auto range = range_of(op);
  for (auto& [key, model] : models_) {
    if (key.transport == op.target && key.region == op.region &&
        key.incarnation >= op.target_incarnation && range.hi <= model.bytes.size()) {
      model.set_known(range, 0);
    }
  }
}

void data_sweep::complete_write(std::size_t i) {
  const auto& op = h_.ops[i];
  auto* m = model_of(op);
  auto own = taint_.find(i);
  if (own == taint_.end()) return forget_untracked(op);
  FL_ASSERT(m != nullptr);  // tracked at its submit, so its model was there
  auto mine = std::move(own->second);
  taint_.erase(own);
  drop(m->active_writes, i);
  auto range = range_of(op);
  byte_range both;
  for (const auto* active : {&m->active_reads, &m->active_writes}) {
    for (auto j : *active) {
      if (intersect(range, range_of(h_.ops[j]), both)) taint_.at(j).push_back(both);
    }
  }
  if (op.outcome == status::ok) {
    pattern_.resize(op.length);
    fill_pattern(pattern_.data(), pattern_.size(), op.data_seed);
    std::copy(pattern_.begin(), pattern_.end(),
              m->bytes.begin() + static_cast<std::ptrdiff_t>(op.offset));
    m->set_known(range, 1);
    for (const auto& t : mine) m->set_known(t, 0);
    for (auto j : m->active_writes) {
      if (intersect(range, range_of(h_.ops[j]), both)) m->set_known(both, 0);
    }
  } else {
    m->set_known(range, 0);  // ambiguous: it may or may not have executed
  }
  // Submitted to one incarnation, it may have run on a later one: a WRITE
  // still queued when its target restarted is answered stale by the new
  // incarnation, refreshed by name and executed there. Its bytes are
  // unknown in every later incarnation that started before it completed.
  for (auto& [key, later] : models_) {
    if (key.transport == op.target && key.region == op.region &&
        key.incarnation > op.target_incarnation && range.hi <= later.bytes.size()) {
      later.set_known(range, 0);
    }
  }
}

void data_sweep::complete_read(std::size_t i) {
  const auto& op = h_.ops[i];
  auto* m = model_of(op);
  auto own = taint_.find(i);
  if (m == nullptr || own == taint_.end()) return;
  drop(m->active_reads, i);
  auto skip = std::move(own->second);
  taint_.erase(own);
  const auto* inc = index_.incarnation(op.target, op.target_incarnation);
  if (inc != nullptr && inc->end_seq != 0 && inc->end_seq < op.complete_seq) return;
  if (op.data.size() != op.length) {
    r_.violations.push_back(detail::op_violation(
        data_name, index_, op,
        fmt::format("ok READ returned {} bytes, expected {}", op.data.size(), op.length)));
    return;
  }
  auto range = range_of(op);
  byte_range both;
  for (auto j : m->active_writes) {
    if (intersect(range, range_of(h_.ops[j]), both)) skip.push_back(both);
  }
  for (auto& s : skip) s = byte_range{s.lo - op.offset, s.hi - op.offset};
  auto c = compare(m->bytes.data() + op.offset, m->known.data() + op.offset, op.data.data(),
                   op.length, skip);
  r_.checked += c.compared;
  if (c.differing != 0) report_read(op, c);
}

void data_sweep::report_read(const op_record& op, const comparison& c) {
  auto at = op.offset + c.first;
  const auto* m = model_of(op);
  r_.violations.push_back(detail::op_violation(
      data_name, index_, op,
      fmt::format("READ of region {} on {} [{}, {}) returned {:#04x} at region offset {} "
                  "(byte {} of the READ), the model has {:#04x}; {} of {} compared bytes differ",
                  op.region, name_of(op.target, op.target_incarnation), op.offset,
                  op.offset + op.length, std::to_integer<unsigned>(op.data[c.first]), at, c.first,
                  std::to_integer<unsigned>(m->bytes[at]), c.differing, c.compared)));
}

void data_sweep::check_final(const region_final& f) {
  auto it = models_.find(model_key{f.transport, f.incarnation, f.region});
  if (it == models_.end()) return;
  const auto& m = it->second;
  violation v{.checker = std::string(data_name), .transport = f.transport, .seq = f.seq};
  if (f.bytes.size() != m.bytes.size()) {
    v.evidence =
        fmt::format("final bytes of region {} on {}: {} bytes read, the model has {}", f.region,
                    name_of(f.transport, f.incarnation), f.bytes.size(), m.bytes.size());
    r_.violations.push_back(std::move(v));
    return;
  }
  std::vector<byte_range> skip;
  for (auto j : m.active_writes) skip.push_back(range_of(h_.ops[j]));
  auto c = compare(m.bytes.data(), m.known.data(), f.bytes.data(), f.bytes.size(), skip);
  r_.checked += c.compared;
  if (c.differing == 0) return;
  v.evidence = fmt::format(
      "final bytes of region {} on {} hold {:#04x} at offset {}, the model has {:#04x}; "
      "{} of {} compared bytes differ",
      f.region, name_of(f.transport, f.incarnation), std::to_integer<unsigned>(f.bytes[c.first]),
      c.first, std::to_integer<unsigned>(m.bytes[c.first]), c.differing, c.compared);
  r_.violations.push_back(std::move(v));
}

}  // namespace

checker_result detail::data_integrity_by_index(const history& h,
                                               const detail::history_index& index) {
  checker_result r{.name = std::string(data_name)};
  data_sweep(h, index, r).run();
  return r;
}

checker_result check_data_integrity(const history& h) {
  return detail::data_integrity_by_index(h, detail::history_index(h));
}

}  // namespace faultlane::sim
