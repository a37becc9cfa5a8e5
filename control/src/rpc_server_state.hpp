// What the control plane's server and its sessions share, private to
// control/src: the server's state (server::impl) and a session, one per
// accepted connection. rpc_server.cpp holds the listener, the registry of
// methods and the ordered stop; rpc_session.cpp reads a session's calls,
// runs or queues their handlers and writes the answers.
//
// Threads: the acceptor lives on shard 0, each session on the shard it was
// accepted onto, and everything a session owns is touched only there.
// Pooled handlers run on the worker pool and post their answer back to the
// session's shard. Handlers keep the session alive, and the session keeps
// the server's state alive, so a late handler never outlives what it uses.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "faultlane/control/rpc_server.hpp"
#include "faultlane/core/accept_loop.hpp"
#include "faultlane/core/net.hpp"
#include "rpc_worker_pool.hpp"

namespace faultlane::rpc {

using clock_type = net::clock;

struct method_entry {
  placement where;
  handler fn;
};

class session;

class server::impl : public std::enable_shared_from_this<server::impl> {
 public:
  impl(io_pool& p, const server_options& o)
      : pool(p), options(o), listener(p.context(0), listener_hooks()) {
    if (o.workers > 0) workers = std::make_unique<rpc_worker_pool>(o.workers, o.queue_max);
  }

  result<void> listen();
  accept_hooks listener_hooks();
  void on_accept(net::socket socket, std::size_t shard);
  const method_entry* find(std::string_view name) const;
  void session_closed(std::uint64_t id);
  bool close_sessions(bool gracefully, clock_type::time_point deadline);

  io_pool& pool;
  const server_options options;
  std::unique_ptr<rpc_worker_pool> workers;  // null: every handler inline
  rpc_metrics metrics;
  std::atomic<bool> stopped{false};

  mutable std::shared_mutex methods_mutex;
  std::map<std::string, std::unique_ptr<method_entry>, std::less<>> methods;

  accept_loop listener;  // on shard 0

  std::mutex sessions_mutex;
  net::condition_variable sessions_gone;
  std::unordered_map<std::uint64_t, std::pair<std::size_t, std::weak_ptr<session>>> sessions;
  // Who else holds this impl: live session objects (a closed session
  // leaves `sessions` at once, but lives on in its handlers still queued on
  // its shard, its read cancelled by the close) and the accept loop's
  // handlers (through listener_owner(); the cancelled accept may still be
  // queued on shard 0). stop() waits for them too: a server that outlived
  // its owner would be destroyed by the pool's own destructor, its
  // listener's timer after shard 0's services. Kept apart from the impl so
  // that each holder lets go of the impl before it says so: a stop() it
  // wakes finds the impl held by the server alone.
  struct holders {
    std::mutex mutex;
    net::condition_variable released;
    std::size_t sessions = 0;
    bool listener = false;
    void session_gone();
    bool wait_until(clock_type::time_point deadline);
  };
  const std::shared_ptr<holders> holding = std::make_shared<holders>();
  std::shared_ptr<void> listener_owner();
  std::uint64_t next_session = 1;

  std::mutex stop_mutex;
  bool stop_done = false;
  result<void> stop_result;
};

class session : public std::enable_shared_from_this<session> {
 public:
  session(std::shared_ptr<server::impl> owner, net::socket socket, std::size_t shard,
          std::uint64_t id)
      : owner_(std::move(owner)), socket_(std::move(socket)), shard_(shard), id_(id) {}
  ~session() {
    auto holding = owner_->holding;
    owner_.reset();
    holding->session_gone();
  }
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  void start() { read_header(); }
  // From any thread: `respond` on the session's shard.
  void post_respond(std::uint64_t request_id, std::string method, reply r);
  void respond(std::uint64_t request_id, const std::string& method, reply r);
  // Closes once what is queued was written (or at once, when `gracefully`
  // is false).
  void finish(bool gracefully);

 private:
  void read_header();
  void on_header(const std::error_code& ec);
  void on_payload(const std::error_code& ec);
  void dispatch();
  void write_next();
  void maybe_resume_reading();
  void close();

  std::shared_ptr<server::impl> owner_;
  net::socket socket_;
  const std::size_t shard_;
  const std::uint64_t id_;
  header_bytes_array header_in_{};
  header current_;
  std::vector<std::byte> payload_;
  // Answers to write: a header and its body, sent together without being
  // copied into one buffer (a describe answer may be tens of MiB, and a
  // copy on the io thread would hold every ping behind it).
  struct frame {
    header_bytes_array head;
    std::vector<std::byte> body;
  };
  std::deque<frame> out_;
  std::size_t out_bytes_ = 0;   // bodies in out_
  std::size_t unanswered_ = 0;  // read, answer not yet written
  bool reading_ = false;
  bool writing_ = false;
  bool closing_ = false;
  bool closed_ = false;
};

}  // namespace faultlane::rpc
