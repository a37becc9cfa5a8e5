// connection; see connection.hpp.
#include "connection.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "faultlane/base/assert.hpp"
#include "faultlane/base/probe.hpp"
#include "faultlane/core/net.hpp"

namespace faultlane::relays::detail {

using asio::ip::tcp;

namespace {

bool decodes(const relay_state& s) {
  if (s.config.proto != protocol::faultlane) return false;
  if (s.taps_on()) return true;
  auto faults = s.snapshot();
  return std::any_of(faults.begin(), faults.end(),
                     [](const fault_ptr& f) { return f->spec.frame_aware(); });
}

std::string text_of(const tcp::endpoint& e) {
  return fmt::format("{}:{}", e.address().to_string(), e.port());
}

}  // namespace

connection::connection(std::shared_ptr<relay_state> state, net::socket client, std::uint64_t index)
    : state_(std::move(state)),
      client_(std::move(client)),
      upstream_(state_->context),
      index_(index),
      decode_(decodes(*state_)) {
  state_->live.fetch_add(1, std::memory_order_acq_rel);
}

connection::~connection() { state_->live.fetch_sub(1, std::memory_order_acq_rel); }

void connection::start() {
  FL_ASSERT(phase_ == phase::created);
  phase_ = phase::connecting;
  std::error_code ec;
  client_.set_option(tcp::no_delay(true), ec);
  auto remote = client_.remote_endpoint(ec);
  client_address_ = ec ? "?" : text_of(remote);
  const auto& c = state_->config;
  const auto target = state_->current_upstream();
  upstream_target_ = target.str();
  tcp::endpoint upstream(asio::ip::make_address(target.address), target.port);
  upstream_.open(tcp::v4(), ec);
  if (!ec && c.upstream_source) {
    upstream_.bind(tcp::endpoint(asio::ip::make_address(*c.upstream_source), 0), ec);
  }
  if (ec) return upstream_failed(upstream_target_, ec);
  upstream_.async_connect(
      upstream, [self = shared_from_this()](std::error_code e) { self->on_upstream_connected(e); });
}

// The upstream refused, or its socket could not be set up: counted, written
// to stderr once per burst, tapped with the error; the client is reset or
// FIN-closed as configured. No open or close record follows.
void connection::upstream_failed(const std::string& target, const std::error_code& ec) {
  FL_ASSERT(phase_ == phase::connecting);
  FAULTLANE_PROBE(relay_upstream_refused);
  state_->note_connect_failure(target, ec);
  if (state_->taps_on()) {
    auto r = record_for(direction::up);
    r.kind = record_kind::connect_failed;
    r.client_address = client_address_;
    r.upstream_remote = target;
    r.reason = ec.message();
    state_->recorder.record(std::move(r));
  }
  abort(state_->config.on_upstream_failure == close_mode::reset, {});
}

void connection::on_upstream_connected(const std::error_code& ec) {
  if (phase_ == phase::closed) return;
  FL_ASSERT(phase_ == phase::connecting);
  if (ec) return upstream_failed(upstream_target_, ec);
  std::error_code ignored;
  upstream_.set_option(tcp::no_delay(true), ignored);
  upstream_local_ = text_of(upstream_.local_endpoint(ignored));
  upstream_remote_ = text_of(upstream_.remote_endpoint(ignored));
  phase_ = phase::relaying;
  record(record_kind::open);
  up_ = std::make_unique<pipe>(*this, direction::up, client_, upstream_);
  down_ = std::make_unique<pipe>(*this, direction::down, upstream_, client_);
  up_->start();
  if (phase_ == phase::closed) return;  // the up direction failed at once
  down_->start();
}

void connection::recheck() {
  if (phase_ != phase::relaying) return;
  up_->recheck();
  down_->recheck();
}

void connection::pipe_finished() {
  FL_ASSERT(phase_ == phase::relaying);
  FL_ASSERT(up_ && down_);
  if (up_->finished() && down_->finished()) abort(false, "both directions ended");
}

std::string connection::failure_reason(direction dir, bool at_source, const std::error_code& ec) {
  // Up reads from the client and writes to the upstream; down the reverse.
  bool client = (dir == direction::up) == at_source;
  return fmt::format("{} {}: {}", client ? "client" : "upstream", at_source ? "read" : "write",
                     ec.message());
}

void connection::abort(bool with_reset, std::string_view reason) {
  if (phase_ == phase::closed) return;
  const bool opened = phase_ == phase::relaying;
  phase_ = phase::closed;
  std::error_code ignored;
  for (auto* s : {&client_, &upstream_}) {
    if (with_reset && s->is_open()) s->set_option(asio::socket_base::linger(true, 0), ignored);
    s->close(ignored);
  }
  if (up_) up_->cancel();
  if (down_) down_->cancel();
  if (opened) record(record_kind::close, reason);
}

tap_record connection::record_for(direction dir) const {
  tap_record r;
  r.time_us = state_->now_us();
  r.relay = state_->config.name;
  r.rail = state_->config.rail;
  r.connection = index_;
  r.dir = dir;
  return r;
}

void connection::record(record_kind kind, std::string_view reason) {
  if (!state_->taps_on()) return;
  auto r = record_for(direction::up);
  r.kind = kind;
  r.client_address = client_address_;
  r.upstream_local = upstream_local_;
  r.upstream_remote = upstream_remote_;
  if (kind == record_kind::open) opened_us_ = r.time_us;
  if (kind == record_kind::close) {
    r.bytes_up = up_ ? up_->received() : 0;
    r.bytes_down = down_ ? down_->received() : 0;
    r.duration_us = r.time_us - std::min(r.time_us, opened_us_);
    r.reason = reason;
  }
  state_->recorder.record(std::move(r));
}

}  // namespace faultlane::relays::detail
