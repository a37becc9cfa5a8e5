// server: the target's session sets; see server.hpp. A session's own work
// is in server_session.cpp, the listeners' in listener.cpp.
#include "target/server.hpp"

#include <asio/post.hpp>

#include <algorithm>
#include <vector>

#include "target/server_session.hpp"

#include "faultlane/core/net.hpp"

namespace faultlane::detail {

using asio::ip::tcp;

server::server(runtime& rt) : rt_(rt), sessions_(rt.pool->size()) {
  FL_ASSERT(!sessions_.empty());  // one session set per shard
}

// Runs after the pool's threads were joined. Sessions a timed-out shutdown
// left open are released here; any that a queued handler still holds goes
// when the pool destroys that handler.
server::~server() = default;

// The socket already belongs to its shard's io_context; the session starts
// there.
void server::start_session(std::size_t shard, net::socket socket) {
  FL_ASSERT(socket.is_open());
  auto s = std::make_shared<server_session>(rt_, *this, shard, std::move(socket));
  post_guarded(rt_, shard, [s] { s->start(); });
}

void server::session_started(std::size_t shard, const std::shared_ptr<server_session>& s) {
  FL_ASSERT(shard < sessions_.size() && s != nullptr);
  const auto order = started_.fetch_add(1, std::memory_order_relaxed);
  const bool inserted = sessions_[shard].emplace(s.get(), started_session{order, s}).second;
  FL_ASSERT(inserted);
}

void server::session_ended(std::size_t shard, server_session* s) {
  // Erasing may drop the last owner; `s` must not be used afterwards.
  const auto erased = sessions_[shard].erase(s);
  FL_ASSERT(erased == 1);
  const auto live_before = rt_.stats.sessions_live.fetch_sub(1, std::memory_order_acq_rel);
  FL_ASSERT(live_before > 0);
}

void server::close_sessions(std::size_t shard) {
  FL_ASSERT(shard < sessions_.size());
  std::vector<const started_session*> in_order;
  in_order.reserve(sessions_[shard].size());
  for (const auto& [raw, s] : sessions_[shard]) in_order.push_back(&s);
  std::sort(in_order.begin(), in_order.end(),
            [](const started_session* a, const started_session* b) { return a->order < b->order; });
  for (const auto* s : in_order) s->session->close_socket();
}

}  // namespace faultlane::detail
