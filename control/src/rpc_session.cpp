// A session of the control plane's server: reads one connection's calls,
// runs a handler inline or queues it on the worker pool, and writes the
// answers in the order they are ready; see rpc_server_state.hpp.
#include <fmt/format.h>

#include <array>
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include "faultlane/base/probe.hpp"
#include "faultlane/core/failpoint.hpp"
#include "rpc_server_state.hpp"

namespace faultlane::rpc {

namespace {

std::uint64_t micros_since(clock_type::time_point from) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - from).count());
}

reply run_handler(const method_entry& m, const call& c) {
  try {
    return m.fn(c);
  } catch (const std::exception& e) {
    return reply::failure(rpc_status::internal_error, fmt::format("handler threw: {}", e.what()));
  } catch (...) {
    return reply::failure(rpc_status::internal_error, "handler threw a non-exception");
  }
}

}  // namespace

void session::read_header() {
  if (closed_ || closing_) return;
  reading_ = true;
  asio::async_read(socket_, asio::buffer(header_in_),
                   [self = shared_from_this()](std::error_code ec, std::size_t) {
                     (void)FAULTLANE_FAILPOINT("rpc.session_read_done");
                     self->reading_ = false;
                     self->on_header(ec);
                   });
}

void session::on_header(const std::error_code& ec) {
  if (ec || closed_) return close();
  auto h = decode(header_in_, owner_->options.request_bytes_max);
  if (!h || h.value().type != kind::request) {
    owner_->metrics.malformed();
    return close();
  }
  current_ = h.value();
  payload_.assign(current_.payload_length, std::byte{0});
  reading_ = true;
  asio::async_read(socket_, asio::buffer(payload_),
                   [self = shared_from_this()](std::error_code ec2, std::size_t) {
                     self->reading_ = false;
                     self->on_payload(ec2);
                   });
}

void session::on_payload(const std::error_code& ec) {
  if (ec || closed_) return close();
  ++unanswered_;
  dispatch();
  maybe_resume_reading();
}

// Reads the next request unless this connection already holds its share:
// calls not yet answered, or answers not yet written (a client that sends
// and never reads is then pushed back by TCP instead of growing out_).
void session::maybe_resume_reading() {
  const auto& o = owner_->options;
  FAULTLANE_PROBE_IF(!reading_ && !closed_ &&
                         (unanswered_ >= o.unanswered_per_connection_max ||
                          out_bytes_ >= o.unwritten_bytes_per_connection_max),
                     rpc_reading_paused);
  if (!reading_ && !closed_ && unanswered_ < o.unanswered_per_connection_max &&
      out_bytes_ < o.unwritten_bytes_per_connection_max) {
    read_header();
  }
}

void session::dispatch() {
  const std::string name(reinterpret_cast<const char*>(payload_.data()), current_.method_length);
  const auto id = current_.request_id;
  const auto* m = valid_method_name(name) ? owner_->find(name) : nullptr;
  const std::string metric_name = valid_method_name(name) ? name : "(invalid)";
  if (m == nullptr) {
    return respond(id, metric_name,
                   reply::failure(rpc_status::unknown_method,
                                  fmt::format("no method named {:?}", name.substr(0, 64))));
  }
  if (owner_->stopped.load(std::memory_order_acquire)) {
    return respond(id, name, reply::failure(rpc_status::shutting_down, "the service is stopping"));
  }
  if (m->where == placement::inline_on_io || !owner_->workers) {
    const auto started = clock_type::now();
    call c{std::span(payload_).subspan(current_.method_length), &owner_->stopped};
    auto r = run_handler(*m, c);
    owner_->metrics.handled(micros_since(started));
    return respond(id, name, std::move(r));
  }
  std::vector<std::byte> body(payload_.begin() + current_.method_length, payload_.end());
  auto job = [self = shared_from_this(), id, name, m, body = std::move(body),
              queued = clock_type::now()](bool cancelled) mutable {
    auto& owner = *self->owner_;
    if (cancelled) {
      FAULTLANE_PROBE(rpc_call_cancelled_by_stop);
      return self->post_respond(
          id, std::move(name),
          reply::failure(rpc_status::cancelled, "the service stopped before the call ran"));
    }
    owner.metrics.waited(micros_since(queued));
    const auto started = clock_type::now();
    auto r = run_handler(*m, call{body, &owner.workers->stopping()});
    owner.metrics.handled(micros_since(started));
    self->post_respond(id, std::move(name), std::move(r));
  };
  switch (owner_->workers->try_push(std::move(job))) {
    case rpc_worker_pool::push_result::queued: return;
    case rpc_worker_pool::push_result::busy:
      FAULTLANE_PROBE(rpc_queue_full);
      owner_->metrics.busy_rejected();
      return respond(
          id, name,
          reply::failure(rpc_status::busy, fmt::format("the worker queue is full ({} calls); retry",
                                                       owner_->workers->queue_max())));
    case rpc_worker_pool::push_result::stopped:
      return respond(id, name,
                     reply::failure(rpc_status::shutting_down, "the service is stopping"));
  }
}

void session::post_respond(std::uint64_t request_id, std::string method, reply r) {
  FAULTLANE_PERTURB("rpc.respond");
  asio::post(owner_->pool.context(shard_),
             [self = shared_from_this(), request_id, method = std::move(method),
              r = std::move(r)]() mutable { self->respond(request_id, method, std::move(r)); });
}

void session::respond(std::uint64_t request_id, const std::string& method, reply r) {
  if (r.body.size() > owner_->options.response_bytes_max) {
    r = reply::failure(rpc_status::too_large,
                       fmt::format("the answer is {} bytes, over the {}-byte frame limit",
                                   r.body.size(), owner_->options.response_bytes_max));
  }
  owner_->metrics.answered(method, r.status);
  if (closed_) {
    FAULTLANE_PROBE(rpc_answer_for_closed_session);
    return;
  }
  header h{kind::response, 0, r.status, request_id, static_cast<std::uint32_t>(r.body.size())};
  out_bytes_ += r.body.size();
  out_.push_back({encode(h), std::move(r.body)});
  write_next();
}

void session::write_next() {
  if (writing_ || closed_) return;
  if (out_.empty()) {
    if (closing_) close();
    return;
  }
  writing_ = true;
  const auto& next = out_.front();
  const std::array<asio::const_buffer, 2> buffers{asio::buffer(next.head), asio::buffer(next.body)};
  asio::async_write(socket_, buffers, [self = shared_from_this()](std::error_code ec, std::size_t) {
    self->writing_ = false;
    if (ec || self->closed_) return self->close();  // close() already dropped out_
    self->out_bytes_ -= self->out_.front().body.size();
    self->out_.pop_front();
    --self->unanswered_;
    self->maybe_resume_reading();
    self->write_next();
  });
}

void session::finish(bool gracefully) {
  closing_ = true;
  if (!gracefully || (!writing_ && out_.empty())) close();
}

void session::close() {
  if (closed_) return;
  closed_ = true;
  std::error_code ignored;
  socket_.shutdown(net::socket::shutdown_both, ignored);
  socket_.close(ignored);
  out_.clear();
  out_bytes_ = 0;
  owner_->session_closed(id_);
}

}  // namespace faultlane::rpc
