// pipe: one direction of a relayed connection; see connection.hpp.
//
// Bytes are read into one buffer. With no fault and no tap on the direction
// they are written straight back out (the pass-through fast path). Otherwise
// they are cut into pieces (frames, when decoding), each piece goes through
// the fault chain, and what survives is queued with the time it may leave:
// latency, slicing and bandwidth only change those times, so reading goes
// on while data waits, up to a bound.
#include <asio/write.hpp>
#include <fcntl.h>
#include <unistd.h>

#include "connection.hpp"

namespace faultlane::relays::detail {

using asio::ip::tcp;

namespace {
constexpr std::size_t queued_bytes_max = 8u << 20;  // reading pauses above this

bool positional(fault_kind k) {
  return k == fault_kind::stall || k == fault_kind::reset || k == fault_kind::truncate ||
         k == fault_kind::half_close || k == fault_kind::blackhole;
}
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

bool lasting(fault_kind k) {
  return k == fault_kind::stall || k == fault_kind::blackhole || k == fault_kind::latency ||
         k == fault_kind::bandwidth || k == fault_kind::slicer;
}
}  // namespace

pipe::pipe(connection& owner, direction dir, tcp::socket& src, tcp::socket& dst)
    : owner_(owner),
      state_(owner.state()),
      dir_(dir),
      src_(src),
      dst_(dst),
      timer_(owner.state().context),
      buffer_(owner.state().config.buffer_bytes),
      jitter_(owner.state().config.seed ^ (owner.index() * 0x9e3779b97f4a7c15ull) ^
              static_cast<std::uint64_t>(dir)) {
  if (owner.decoding()) decoder_.emplace(dir, owner.pairs());
}

pipe::~pipe() {
  for (auto& s : faults_) {
    if (s.holds_slot) state_.release_effect_slot();
  }
  for (int fd : splice_pipe_) {
    if (fd >= 0) ::close(fd);
  }
}

void pipe::start() {
  refresh_faults();
  read_next();
}

tap_record pipe::base_record() const {
  tap_record r;
  r.time_us = state_.now_us();
  r.relay = state_.config.name;
  r.rail = state_.config.rail;
  r.connection = owner_.index();
  r.dir = dir_;
  return r;
}

void pipe::refresh_faults() {
  auto generation = state_.faults_generation.load(std::memory_order_acquire);
  if (generation == generation_) return;
  generation_ = generation;
  std::vector<fault_state> next;
  for (const auto& f : state_.snapshot()) {
    auto kept = std::find_if(faults_.begin(), faults_.end(),
                             [&](const fault_state& s) { return s.fault == f; });
    if (kept != faults_.end()) {
      next.push_back(*kept);
      kept->holds_slot = false;  // moved
      continue;
    }
    const auto& w = f->spec.when;
    fault_state s;
    s.fault = f;
    s.applies = f->spec.kind != fault_kind::refuse && f->spec.dir == dir_ &&
                (!w.connection || *w.connection == owner_.index()) &&
                (!w.rail || *w.rail == state_.config.rail) &&
                (f->spec.frame_aware() ||
                 draw(state_.config.seed, f->order, owner_.index(), 0) < w.probability);
    next.push_back(s);
  }
  for (auto& old : faults_) {
    if (old.holds_slot) state_.release_effect_slot();  // removed faults give their slot back
  }
  faults_ = std::move(next);
}

bool pipe::needs_slow_path() const {
  if (state_.taps_on() || stalled_ || swallowing_ || !out_.empty()) return true;
  for (const auto& s : faults_) {
    if (s.applies) return true;
  }
  return false;
}

void pipe::recheck() {
  refresh_faults();
  if (!stalled_) return;
  bool still = std::any_of(faults_.begin(), faults_.end(), [](const fault_state& s) {
    return s.fault->spec.kind == fault_kind::stall && s.done && s.applies;
  });
  if (still) return;
  // The stall was removed: what it held goes on, and so does reading.
  stalled_ = false;
  auto held = std::move(held_back_);
  held_back_.clear();
  if (!held.empty()) forward(held.data(), held.size());
  pump_out();
  if (!reading_ && !closed_src_) read_next();
}

// The pass-through fast path: with nothing to look at or change, bytes go
// socket -> kernel pipe -> socket with splice(2) and never enter user
// space. Not while decoding (frames must be seen) or while any fault or
// tap applies to this direction.
bool pipe::can_splice() {
  if (owner_.decoding() || needs_slow_path() || writing_) return false;
  if (splice_pipe_[0] < 0) {
    if (::pipe2(splice_pipe_, O_NONBLOCK | O_CLOEXEC) != 0) return false;
    ::fcntl(splice_pipe_[1], F_SETPIPE_SZ, static_cast<int>(state_.config.buffer_bytes));
    std::error_code ignored;
    src_.native_non_blocking(true, ignored);
    dst_.native_non_blocking(true, ignored);
  }
  return true;
}

void pipe::splice_step() {
  constexpr unsigned flags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
  for (int round = 0; round < 16; ++round) {
    while (in_splice_pipe_ > 0) {
      auto n = ::splice(splice_pipe_[0], nullptr, dst_.native_handle(), nullptr, in_splice_pipe_, flags);
      if (n > 0) {
        in_splice_pipe_ -= static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EAGAIN) {
        writing_ = true;
        dst_.async_wait(tcp::socket::wait_write, [self = owner_.self(), this](std::error_code ec) {
          writing_ = false;
          if (ec) return;
          splice_step();
        });
        return;
      }
      return owner_.abort(true);
    }
    refresh_faults();
    if (needs_slow_path()) return read_next();  // a fault arrived: the copying path takes over
    auto n = ::splice(src_.native_handle(), nullptr, splice_pipe_[1], nullptr,
                      state_.config.buffer_bytes, flags);
    if (n > 0) {
      in_splice_pipe_ = static_cast<std::size_t>(n);
      received_ += static_cast<std::uint64_t>(n);
      continue;
    }
    if (n == 0) return on_source_closed();
    if (errno == EAGAIN) {
      reading_ = true;
      src_.async_wait(tcp::socket::wait_read, [self = owner_.self(), this](std::error_code ec) {
        reading_ = false;
        if (ec) return;
        splice_step();
      });
      return;
    }
    return owner_.abort(true);
  }
  // Let other connections run, then go on.
  asio::post(state_.context, [self = owner_.self(), this] { splice_step(); });
}

void pipe::read_next() {
  if (reading_ || stalled_ || closed_src_) return;
  if (in_splice_pipe_ == 0 && can_splice()) return splice_step();
  if (out_bytes_ > queued_bytes_max) {
    read_paused_ = true;
    return;
  }
  reading_ = true;
  src_.async_read_some(asio::buffer(buffer_),
                       [self = owner_.self(), this](std::error_code ec, std::size_t n) {
                         on_read(ec, n);
                       });
}

void pipe::on_read(const std::error_code& ec, std::size_t n) {
  reading_ = false;
  if (ec == asio::error::eof) return on_source_closed();
  if (ec) {
    if (ec != asio::error::operation_aborted) owner_.abort(true);  // pass a reset on
    return;
  }
  refresh_faults();
  if (!needs_slow_path() && !writing_) {
    if (decoder_) decoder_->feed(buffer_.data(), n, [](piece&) {});
    received_ += n;
    writing_ = true;
    asio::async_write(dst_, asio::buffer(buffer_.data(), n),
                      [self = owner_.self(), this](std::error_code e, std::size_t) {
                        writing_ = false;
                        if (e) {
                          if (e != asio::error::operation_aborted) owner_.abort(true);
                          return;
                        }
                        read_next();
                      });
    return;
  }
  process(buffer_.data(), n);
  pump_out();
  read_next();
}

void pipe::process(std::byte* data, std::size_t n) {
  if (decoder_) {
    bool was_failed = decoder_->failed();
    decoder_->feed(data, n, [this](piece& p) { handle_piece(p); });
    if (!was_failed && decoder_->failed()) {
      state_.decode_errors.fetch_add(1, std::memory_order_relaxed);
      if (state_.taps_on()) {
        auto r = base_record();
        r.kind = record_kind::decode_error;
        r.fault = decoder_->failure();
        state_.recorder.record(std::move(r));
      }
    }
  } else {
    piece p{piece::part::raw, received_, data, n, nullptr, 0};
    handle_piece(p);
  }
  received_ += n;
}

bool pipe::try_fire(fault_state& s, std::uint64_t frame) {
  auto& f = *s.fault;
  if (f.spec.frame_aware() && f.spec.when.probability < 1.0 &&
      draw(state_.config.seed, f.order, owner_.index(), frame) >= f.spec.when.probability) {
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

void pipe::count_once(fault_state& s, const piece* p) {
  if (s.counted) return;
  s.counted = true;
  if (lasting(s.fault->spec.kind)) {
    if (!state_.take_effect_slot()) {
      s.applies = false;  // over the cap: this connection goes without it
      return;
    }
    s.holds_slot = true;
  }
  tap_record where = base_record();
  where.stream_offset = p ? p->stream_offset : received_;
  state_.fired(*s.fault, where);
}

void pipe::apply_frame_faults(piece& p) {
  auto& frame = *p.frame;
  for (auto& s : faults_) {
    auto& spec = s.fault->spec;
    if (!s.applies || (spec.kind != fault_kind::drop_frame && spec.kind != fault_kind::corrupt)) {
      continue;
    }
    if (!frame_matches(spec.when, frame) || !try_fire(s, frame.index)) continue;
    tap_record where = base_record();
    where.frame_index = frame.index;
    where.stream_offset = frame.stream_offset;
    where.request_id = request_id_of(frame);
    state_.fired(*s.fault, where);
    if (spec.kind == fault_kind::drop_frame) {
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
    // The low-order byte of the field: every field, from magic to length,
    // then fails or changes visibly.
    p.data[layout->offset + layout->size - 1] ^= static_cast<std::byte>(spec.mask);
  }
}

std::optional<std::uint64_t> pipe::position_of(const fault_state& s, const piece& p) const {
  const auto& spec = s.fault->spec;
  const auto& w = spec.when;
  if (spec.kind == fault_kind::truncate) return spec.bytes;
  if (w.needs_frame()) {
    if (p.what != piece::part::header || !frame_matches(w, *p.frame)) return std::nullopt;
    return p.stream_offset + w.header_byte.value_or(0);
  }
  return w.after_bytes.value_or(0);
}

void pipe::handle_piece(piece& p) {
  if (stalled_) {
    held_back_.insert(held_back_.end(), p.data, p.data + p.size);
    return;
  }
  if (swallowing_) return;
  if (p.what == piece::part::header) {
    if (state_.taps_on()) {
      auto r = base_record();
      r.kind = record_kind::frame;
      r.frame_index = p.frame->index;
      r.stream_offset = p.stream_offset;
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
      state_.recorder.record(std::move(r));
    }
    apply_frame_faults(p);
  }
  if (p.frame && p.frame->dropped) return;
  if (p.what == piece::part::payload && payload_flips_ && payload_flips_->frame == p.frame->index) {
    for (const auto& flip : payload_flips_->flips) {
      if (flip.byte >= p.offset_in_payload && flip.byte - p.offset_in_payload < p.size) {
        p.data[flip.byte - p.offset_in_payload] ^= flip.mask;
      }
    }
  }
  // Positional faults, earliest first, may cut this piece.
  std::uint64_t begin = p.stream_offset;
  const std::uint64_t end = p.stream_offset + p.size;
  // A position equal to `end` fires too: "after N bytes" holds once the
  // N-th byte went by, even if no further byte ever comes.
  while (!stalled_ && !swallowing_) {
    fault_state* next = nullptr;
    std::uint64_t at = end;
    for (auto& s : faults_) {
      if (!s.applies || s.done || !positional(s.fault->spec.kind)) continue;
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
  if (begin >= end) return;
  if (stalled_) {
    held_back_.insert(held_back_.end(), p.data + (begin - p.stream_offset), p.data + p.size);
  } else if (!swallowing_) {
    forward(p.data + (begin - p.stream_offset), end - begin);
  }
}

void pipe::fire_positional(fault_state& s, const piece& p, std::uint64_t at) {
  s.done = true;
  if (!try_fire(s, p.frame ? p.frame->index : 0)) return;
  auto kind = s.fault->spec.kind;
  if (lasting(kind)) {
    if (!state_.take_effect_slot()) return;
    s.holds_slot = true;
  }
  tap_record where = base_record();
  where.stream_offset = at;
  where.frame_index = p.frame ? p.frame->index : 0;
  state_.fired(*s.fault, where);
  switch (kind) {
    case fault_kind::stall: stalled_ = true; break;
    case fault_kind::blackhole: swallowing_ = true; break;
    case fault_kind::reset:
      swallowing_ = true;
      push({out_item::kind::reset, clock_type::now(), {}});
      break;
    case fault_kind::truncate:
      swallowing_ = true;
      push({out_item::kind::fin, clock_type::now(), {}});
      push({out_item::kind::close, clock_type::now(), {}});
      break;
    case fault_kind::half_close:
      swallowing_ = true;
      push({out_item::kind::fin, clock_type::now(), {}});
      break;
    default: break;
  }
}

// Queues bytes to leave, at the times the rate-shaping faults allow.
void pipe::forward(const std::byte* data, std::size_t n) {
  if (n == 0) return;
  auto now = clock_type::now();
  auto ready = now;
  const fault_spec* slicer = nullptr;
  const fault_spec* bandwidth = nullptr;
  for (auto& s : faults_) {
    if (!s.applies) continue;
    const auto& spec = s.fault->spec;
    if (spec.kind == fault_kind::latency) {
      count_once(s, nullptr);
      if (!s.applies) continue;
      std::int64_t jitter = spec.jitter_ms == 0 ? 0
          : static_cast<std::int64_t>(jitter_() % (2 * spec.jitter_ms + 1)) - spec.jitter_ms;
      ready = std::max(ready, now + std::chrono::milliseconds(spec.ms + jitter));
    } else if (spec.kind == fault_kind::slicer) {
      count_once(s, nullptr);
      if (s.applies) slicer = &spec;
    } else if (spec.kind == fault_kind::bandwidth) {
      count_once(s, nullptr);
      if (s.applies) bandwidth = &spec;
    }
  }
  std::size_t at = 0;
  std::size_t index = 0;
  while (at < n) {
    std::size_t size = n - at;
    auto when = ready;
    if (slicer) {
      std::size_t spread = slicer->variation == 0 ? 0 : jitter_() % (2 * slicer->variation + 1);
      size = std::min(size, slicer->size - slicer->variation + spread);
      when += std::chrono::microseconds(std::uint64_t{slicer->delay_us} * index);
    }
    if (bandwidth) {
      // Pieces of at most 1/200 s of the budget keep the rate smooth.
      size = std::min<std::size_t>(size, std::max<std::uint64_t>(1024, bandwidth->bytes_per_s / 200));
      auto start = std::max(bandwidth_free_, when);
      bandwidth_free_ = start + std::chrono::nanoseconds(size * 1'000'000'000ull / bandwidth->bytes_per_s);
      when = start;
    }
    push({out_item::kind::data, when, std::vector<std::byte>(data + at, data + at + size)});
    at += size;
    ++index;
  }
}

void pipe::push(out_item item) {
  out_bytes_ += item.bytes.size();
  out_.push_back(std::move(item));
}

void pipe::pump_out() {
  if (writing_ || out_.empty()) return;
  auto& item = out_.front();
  if (item.not_before > clock_type::now()) {
    writing_ = true;
    timer_.expires_at(item.not_before);
    timer_.async_wait([self = owner_.self(), this](std::error_code ec) {
      writing_ = false;
      if (!ec) pump_out();
    });
    return;
  }
  switch (item.what) {
    case out_item::kind::data:
      writing_ = true;
      asio::async_write(dst_, asio::buffer(item.bytes),
                        [self = owner_.self(), this](std::error_code ec, std::size_t) {
                          writing_ = false;
                          if (ec) {
                            if (ec != asio::error::operation_aborted) owner_.abort(true);
                            return;
                          }
                          out_bytes_ -= out_.front().bytes.size();
                          out_.pop_front();
                          if (read_paused_ && out_bytes_ <= queued_bytes_max) {
                            read_paused_ = false;
                            read_next();
                          }
                          pump_out();
                        });
      return;
    case out_item::kind::fin: {
      std::error_code ignored;
      dst_.shutdown(tcp::socket::shutdown_send, ignored);
      out_.pop_front();
      if (!finished_) {
        finished_ = true;
        owner_.pipe_finished();
      }
      return pump_out();
    }
    case out_item::kind::reset: out_.clear(); return owner_.abort(true);
    case out_item::kind::close: out_.clear(); return owner_.abort(false);
  }
}

void pipe::on_source_closed() {
  closed_src_ = true;
  auto when = clock_type::now();
  for (auto& s : faults_) {
    if (!s.applies || s.fault->spec.kind != fault_kind::slow_close) continue;
    if (!try_fire(s, 0)) continue;
    tap_record where = base_record();
    where.stream_offset = received_;
    state_.fired(*s.fault, where);
    when += std::chrono::milliseconds(s.fault->spec.ms);
  }
  if (swallowing_ && !stalled_) {
    // A half-closed or black-holed direction has nothing more to pass on.
    if (!finished_) {
      finished_ = true;
      owner_.pipe_finished();
    }
    return;
  }
  push({out_item::kind::fin, when, {}});
  pump_out();
}

}  // namespace faultlane::relays::detail
