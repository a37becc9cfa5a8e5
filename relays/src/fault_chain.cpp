// fault_chain; see fault_chain.hpp.
#include "fault_chain.hpp"

#include <algorithm>

#include "connection.hpp"
#include "faultlane/base/assert.hpp"
#include "faultlane/base/hash.hpp"
#include "faultlane/base/probe.hpp"

namespace faultlane::relays::detail {

namespace {

bool in_class(const fault_spec& spec, fault_class c) { return traits(spec.kind).category == c; }

std::uint64_t request_id_of(const frame_info& frame) {
  return frame.dir == direction::up ? frame.request.request_id : frame.response.request_id;
}

// Whether a decoded frame meets a trigger's frame conditions.
bool frame_matches(const trigger& w, const frame_info& frame) {
  if (w.frame && *w.frame != frame.index) return false;
  if (w.opcode && *w.opcode != frame.op) return false;
  if (w.request_id && *w.request_id != request_id_of(frame)) return false;
  if (w.status && (frame.dir == direction::up ||
                   *w.status != static_cast<std::uint16_t>(frame.response.status))) {
    return false;
  }
  return true;
}

}  // namespace

fault_chain::fault_chain(connection& owner, direction dir, send_queue& out)
    : owner_(owner),
      relay_(owner.state()),
      dir_(dir),
      out_(out),
      jitter_(stable_hash(relay_.config.seed ^ stable_hash(owner.index()) ^
                          static_cast<std::uint64_t>(dir))) {
  if (owner.decoding()) decoder_.emplace(dir, owner.pairs());
}

fault_chain::~fault_chain() {
  for (auto& s : faults_) {
    if (s.holds_slot) relay_.release_effect_slot();
  }
}

void fault_chain::refresh() {
  auto generation = relay_.faults_generation.load(std::memory_order_acquire);
  if (generation == generation_) return;
  generation_ = generation;
  std::vector<fault_state> next;
  for (const auto& f : relay_.snapshot()) {
    // A fault is known by its id: one replaced in place (relay::replace_fault)
    // keeps what it did here (fired, counted, a stall's hold, its slot) and
    // takes up its new values.
    auto kept = std::find_if(faults_.begin(), faults_.end(),
                             [&](const fault_state& s) { return s.fault->id == f->id; });
    if (kept != faults_.end()) {
      auto s = *kept;
      kept->holds_slot = false;  // moved
      if (s.fault != f) {
        s.fault = f;
        s.applies = applies_here(*f);
        if (!s.applies && s.holds_slot) {
          relay_.release_effect_slot();
          s.holds_slot = false;
        }
      }
      next.push_back(s);
      continue;
    }
    fault_state s;
    s.fault = f;
    s.applies = applies_here(*f);
    next.push_back(s);
  }
  bool closing = false;
  for (auto& old : faults_) {
    if (old.holds_slot) relay_.release_effect_slot();  // removed faults give their slot back
    // A blackhole that swallowed part of the stream cannot hand it back:
    // removing it closes the connection, as removing Toxiproxy's timeout does.
    closing |= old.holds_slot && old.fault->spec.kind == fault_kind::blackhole;
  }
  faults_ = std::move(next);
  if (closing && !out_.ended()) {
    out_.push({out_item::kind::close, clock_type::now(), {}, "its blackhole fault was removed"});
    out_.expedite_closes();  // a timed close queued earlier goes now too
  }
  fire_timed();
}

bool fault_chain::applies_here(const installed_fault& f) const {
  const auto& w = f.spec.when;
  return !in_class(f.spec, fault_class::connection) && f.spec.dir == dir_ &&
         (!w.connection || *w.connection == owner_.index()) &&
         (!w.rail || *w.rail == relay_.config.rail) &&
         (f.spec.frame_aware() ||
          draw(relay_.config.seed, f.order, owner_.index(), 0) < w.probability);
}

bool fault_chain::transparent() const {
  if (relay_.taps_on() || mode_ != mode::passing) return false;
  // Bytes held for a header that have not left must leave with it.
  if (decoder_ && decoder_->holding_unsent()) return false;
  return std::none_of(faults_.begin(), faults_.end(),
                      [](const fault_state& s) { return s.applies; });
}

void fault_chain::process(std::byte* data, std::size_t n) {
  if (decoder_) {
    bool was_failed = decoder_->failed();
    decoder_->feed(data, n, [this](piece& p) { handle_piece(p); });
    if (!was_failed && decoder_->failed()) note_decode_failure();
  } else {
    piece p{piece::part::raw, received_, data, n, nullptr, 0};
    handle_piece(p);
  }
  note_received(n);
}

void fault_chain::passed_by(std::byte* data, std::size_t n) {
  FL_ASSERT(transparent());
  if (decoder_) {
    bool was_failed = decoder_->failed();
    decoder_->feed(data, n, [](piece&) {});  // only to follow the frames
    decoder_->held_were_sent();
    if (!was_failed && decoder_->failed()) note_decode_failure();
  }
  note_received(n);
}

void fault_chain::end_of_stream() {
  if (!decoder_) return;
  bool was_failed = decoder_->failed();
  decoder_->finish([this](piece& p) { handle_piece(p); });
  if (!was_failed && decoder_->failed()) note_decode_failure();
}

void fault_chain::note_decode_failure() {
  FAULTLANE_PROBE(relay_stream_decode_failed);
  relay_.decode_errors.fetch_add(1, std::memory_order_relaxed);
  if (!relay_.taps_on()) return;
  auto r = owner_.record_for(dir_);
  r.kind = record_kind::decode_error;
  r.fault = decoder_->failure();
  relay_.recorder.record(std::move(r));
}

bool fault_chain::release_if_unstalled() {
  if (mode_ != mode::holding) return false;
  bool still = std::any_of(faults_.begin(), faults_.end(), [](const fault_state& s) {
    return s.fault->spec.kind == fault_kind::stall && s.done && s.applies;
  });
  if (still) return false;
  mode_ = mode::passing;
  auto held = std::move(held_back_);
  held_back_.clear();
  if (!held.empty()) forward(held.data(), held.size());
  return true;
}

clock_type::time_point fault_chain::close_time() {
  auto when = clock_type::now();
  for (auto& s : faults_) {
    if (!s.applies || s.fault->spec.kind != fault_kind::slow_close) continue;
    if (!try_fire(s, 0)) continue;
    auto where = owner_.record_for(dir_);
    where.stream_offset = received_;
    relay_.fired(*s.fault, where);
    when += std::chrono::milliseconds(s.fault->spec.ms);
  }
  return when;
}

bool fault_chain::try_fire(fault_state& s, std::uint64_t frame) {
  auto& f = *s.fault;
  if (f.spec.frame_aware() && f.spec.when.probability < 1.0 &&
      draw(relay_.config.seed, f.order, owner_.index(), frame) >= f.spec.when.probability) {
    return false;
  }
  // `count` is relay-wide: claim one firing atomically.
  auto left = f.remaining.load(std::memory_order_acquire);
  while (true) {
    if (left == 0) return false;
    if (left == UINT64_MAX || f.remaining.compare_exchange_weak(left, left - 1)) break;
  }
  return true;
}

void fault_chain::count_once(fault_state& s) {
  if (s.counted) return;
  s.counted = true;
  if (traits(s.fault->spec.kind).lasting()) {
    if (!relay_.take_effect_slot()) {
      s.applies = false;  // over the cap: this connection goes without it
      return;
    }
    s.holds_slot = true;
  }
  auto where = owner_.record_for(dir_);
  where.stream_offset = received_;
  relay_.fired(*s.fault, where);
}

void fault_chain::handle_piece(piece& p) {
  if (mode_ == mode::holding) return keep(p.data, p.size);
  if (mode_ == mode::dropping) return;
  if (p.what == piece::part::header) {
    record_frame(p);
    // A header that began to leave before a fault applied is not faulted.
    if (p.sent_before == 0) apply_frame_faults(p);
  }
  if (p.frame && p.frame->dropped) return;
  flip_payload(p);
  cut_at_positions(p);
}

void fault_chain::record_frame(const piece& p) {
  if (!relay_.taps_on()) return;
  auto r = owner_.record_for(dir_);
  r.kind = record_kind::frame;
  r.frame_index = p.frame->index;
  r.stream_offset = p.frame->stream_offset;
  r.request = dir_ == direction::up;
  r.op = p.frame->op;
  if (r.request) {
    r.request_id = p.frame->request.request_id;
    r.registration_id = p.frame->request.registration_id;
    r.remote_offset = p.frame->request.remote_offset;
    r.length = p.frame->request.length;
  } else {
    r.request_id = p.frame->response.request_id;
    r.length = p.frame->response.committed_bytes;
    r.status = static_cast<std::uint16_t>(p.frame->response.status);
  }
  relay_.recorder.record(std::move(r));
}

void fault_chain::apply_frame_faults(piece& p) {
  FL_ASSERT(p.what == piece::part::header && p.frame);
  auto& frame = *p.frame;
  for (auto& s : faults_) {
    auto& spec = s.fault->spec;
    if (!s.applies || !in_class(spec, fault_class::frame)) continue;
    if (!frame_matches(spec.when, frame) || !try_fire(s, frame.index)) continue;
    auto where = owner_.record_for(dir_);
    where.frame_index = frame.index;
    where.stream_offset = frame.stream_offset;
    where.request_id = request_id_of(frame);
    relay_.fired(*s.fault, where);
    if (spec.kind == fault_kind::drop_frame) {
      FAULTLANE_PROBE(relay_frame_dropped);
      frame.dropped = true;
      continue;
    }
    if (spec.field == "payload") {
      if (!payload_flips_ || payload_flips_->frame != frame.index) {
        payload_flips_.emplace(payload_flips{frame.index, {}});
      }
      payload_flips_->flips.push_back({spec.payload_byte, static_cast<std::byte>(spec.mask)});
      continue;
    }
    auto layout = dir_ == direction::up ? wire::find_request_field(spec.field)
                                        : wire::find_response_field(spec.field);
    FL_ASSERT(layout && layout->offset + layout->size <= p.size);  // validate() checked the name
    // The low-order byte of the field: every field, from magic to length,
    // then fails or changes visibly.
    p.data[layout->offset + layout->size - 1] ^= static_cast<std::byte>(spec.mask);
  }
}

void fault_chain::flip_payload(piece& p) {
  if (p.what != piece::part::payload || !payload_flips_ ||
      payload_flips_->frame != p.frame->index) {
    return;
  }
  for (const auto& flip : payload_flips_->flips) {
    if (flip.byte >= p.offset_in_payload && flip.byte - p.offset_in_payload < p.size) {
      p.data[flip.byte - p.offset_in_payload] ^= flip.mask;
    }
  }
}

// Positional faults, earliest first, may cut the piece: what lies before a
// firing goes on, what lies after it follows the new mode.
void fault_chain::cut_at_positions(piece& p) {
  std::uint64_t begin = p.stream_offset;
  const std::uint64_t end = p.stream_offset + p.size;
  // A position equal to `end` fires too: "after N bytes" holds once the
  // N-th byte went by, even if no further byte ever comes.
  while (mode_ == mode::passing) {
    fault_state* next = nullptr;
    std::uint64_t at = end;
    for (auto& s : faults_) {
      if (!s.applies || s.done || !in_class(s.fault->spec, fault_class::positional)) continue;
      auto pos = position_of(s, p);
      if (!pos || *pos > end) continue;
      auto clamped = std::max(*pos, begin);
      if (!next || clamped < at) {
        next = &s;
        at = clamped;
      }
    }
    if (!next) break;
    forward(p.data + (begin - p.stream_offset), at - begin);
    begin = at;
    fire_positional(*next, p, at);
  }
  // What is left, if anything (keep and forward take 0 bytes as nothing).
  FL_ASSERT(begin <= end);  // every cut above was at most `end`
  auto* rest = p.data + (begin - p.stream_offset);
  if (mode_ == mode::holding) keep(rest, end - begin);
  else if (mode_ == mode::passing) forward(rest, end - begin);
}

std::optional<std::uint64_t> fault_chain::position_of(const fault_state& s, const piece& p) const {
  const auto& spec = s.fault->spec;
  const auto& w = spec.when;
  if (spec.kind == fault_kind::truncate) return spec.bytes;
  if (w.needs_frame()) {
    if (p.what != piece::part::header || !frame_matches(w, *p.frame)) return std::nullopt;
    return p.frame->stream_offset + w.header_byte.value_or(0);
  }
  return w.after_bytes.value_or(0);
}

void fault_chain::fire_positional(fault_state& s, const piece& p, std::uint64_t at) {
  FL_ASSERT(mode_ == mode::passing && !s.done);
  s.done = true;
  if (!try_fire(s, p.frame ? p.frame->index : 0)) return;
  auto kind = s.fault->spec.kind;
  if (traits(kind).lasting()) {
    if (!relay_.take_effect_slot()) return;
    s.holds_slot = true;
  }
  auto where = owner_.record_for(dir_);
  where.stream_offset = at;
  where.frame_index = p.frame ? p.frame->index : 0;
  relay_.fired(*s.fault, where);
  FAULTLANE_PROBE_IF(
      p.what == piece::part::header && at > p.stream_offset && at < p.stream_offset + p.size,
      relay_cut_inside_frame_header);
  auto now = clock_type::now();
  switch (kind) {
    case fault_kind::stall: mode_ = mode::holding; break;
    case fault_kind::blackhole: start_blackhole(s.fault->spec, now); break;
    case fault_kind::reset:
      FAULTLANE_PROBE_IF(at > 0, relay_reset_after_bytes);
      mode_ = mode::dropping;
      out_.push({out_item::kind::reset, now + std::chrono::milliseconds(s.fault->spec.ms), {}});
      break;
    case fault_kind::truncate:
      FAULTLANE_PROBE(relay_stream_truncated);
      mode_ = mode::dropping;
      out_.push({out_item::kind::fin, now, {}});
      out_.push({out_item::kind::close, now, {}});
      break;
    case fault_kind::half_close:
      FAULTLANE_PROBE(relay_half_closed);
      mode_ = mode::dropping;
      out_.push({out_item::kind::fin, now, {}});
      break;
    default: FL_ASSERT(false && "not a positional fault");
  }
}

void fault_chain::start_blackhole(const fault_spec& spec, clock_type::time_point now) {
  mode_ = mode::dropping;
  held_back_.clear();
  if (spec.ms == 0) return;
  out_.push({out_item::kind::close,
             now + std::chrono::milliseconds(spec.ms),
             {},
             "a blackhole fault closed it after its ms"});
}

// A blackhole with ms= and no byte or frame trigger starts its clock when it
// applies to the connection (at accept, or when added to a live one), as
// Toxiproxy's timeout toxic does: a connection that carries nothing is
// closed too.
void fault_chain::fire_timed() {
  for (auto& s : faults_) {
    const auto& spec = s.fault->spec;
    if (mode_ == mode::dropping || out_.ended()) return;
    if (!s.applies || s.done || spec.kind != fault_kind::blackhole || spec.ms == 0 ||
        spec.when.after_bytes || spec.when.needs_frame()) {
      continue;
    }
    s.done = true;
    if (!try_fire(s, 0)) continue;
    if (!relay_.take_effect_slot()) continue;
    s.holds_slot = true;
    auto where = owner_.record_for(dir_);
    where.stream_offset = received_;
    relay_.fired(*s.fault, where);
    start_blackhole(spec, clock_type::now());
  }
}

void fault_chain::keep(const std::byte* data, std::size_t n) {
  FL_ASSERT(mode_ == mode::holding);
  held_back_.insert(held_back_.end(), data, data + n);
}

// Queues bytes to leave, at the times the rate-shaping faults allow.
void fault_chain::forward(const std::byte* data, std::size_t n) {
  FL_ASSERT(mode_ == mode::passing);
  if (n == 0) return;
  auto now = clock_type::now();
  auto ready = now;
  const fault_spec* slicer = nullptr;
  const fault_spec* bandwidth = nullptr;
  for (auto& s : faults_) {
    if (!s.applies) continue;
    const auto& spec = s.fault->spec;
    if (!in_class(spec, fault_class::rate_shaping)) continue;
    count_once(s);
    if (!s.applies) continue;  // over the active-fault cap
    if (spec.kind == fault_kind::latency) {
      std::int64_t jitter =
          spec.jitter_ms == 0
              ? 0
              : static_cast<std::int64_t>(jitter_() % (2 * spec.jitter_ms + 1)) - spec.jitter_ms;
      ready = std::max(ready, now + std::chrono::milliseconds(spec.ms + jitter));
    } else if (spec.kind == fault_kind::slicer) {
      slicer = &spec;
    } else {
      FL_ASSERT(spec.kind == fault_kind::bandwidth);  // a rate-shaping kind shapes here
      bandwidth = &spec;
    }
  }
  std::size_t at = 0;
  for (std::size_t index = 0; at < n; ++index) {
    std::size_t size = n - at;
    auto when = ready;
    if (slicer) {
      std::size_t spread = slicer->variation == 0 ? 0 : jitter_() % (2 * slicer->variation + 1);
      size = std::min(size, slicer->size - slicer->variation + spread);
      when += std::chrono::microseconds(std::uint64_t{slicer->delay_us} * index);
    }
    if (bandwidth) {
      // Pieces of at most 1/200 s of the budget keep the rate smooth.
      size =
          std::min<std::size_t>(size, std::max<std::uint64_t>(1024, bandwidth->bytes_per_s / 200));
      auto start = std::max(bandwidth_free_, when);
      bandwidth_free_ =
          start + std::chrono::nanoseconds(size * 1'000'000'000ull / bandwidth->bytes_per_s);
      when = start;
    }
    out_.push({out_item::kind::data, when, std::vector<std::byte>(data + at, data + at + size)});
    at += size;
  }
}

}  // namespace faultlane::relays::detail
