// unprobed_read: see unprobed_read.hpp.
#include "runtime/unprobed_read.hpp"

#include <asio/detail/reactor.hpp>
#include <asio/execution/context.hpp>
#include <asio/query.hpp>

#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <type_traits>
#include <utility>

#include "faultlane/base/assert.hpp"
#include "faultlane/core/net.hpp"

namespace faultlane::detail {

namespace {

// The read start() is queuing on this thread: the reactor's speculative
// call to perform() (the probe) happens inside start_op.
thread_local const void* starting = nullptr;

#if ASIO_VERSION / 100 == 1022 && !defined(FAULTLANE_READS_ALWAYS_PROBE) && !defined(FAULTLANE_DSIM)
static_assert(std::is_same_v<asio::detail::reactor, asio::detail::epoll_reactor>);

// A socket's descriptor and its reactor registration, which basic_socket
// keeps protected: a member pointer named through a derived class reads
// them without changing the socket's type.
struct socket_internals : net::socket {
  static auto& of(net::socket& socket) {
    return (socket.*&socket_internals::impl_).get_implementation();
  }
};
#endif

}  // namespace

// On the world: the read's completion, posted by the simulated socket. It
// ends the read as complete() does: run with the result, or, dropped unrun
// (its io_context gone), dropping the handler, which may hold this
// object's owner.
struct unprobed_read::world_completion {
  unprobed_read* self;
  explicit world_completion(unprobed_read* s) noexcept : self(s) {}
  world_completion(world_completion&& o) noexcept : self(std::exchange(o.self, nullptr)) {}
  world_completion(const world_completion&) = delete;
  world_completion& operator=(const world_completion&) = delete;
  world_completion& operator=(world_completion&&) = delete;
  ~world_completion() {
    if (self != nullptr) handler dropped = std::move(self->done_);
  }
  void operator()(std::error_code ec, std::size_t n, bool left_nothing) {
    auto* s = std::exchange(self, nullptr);
    handler done = std::move(s->done_);  // the handler leaves the object first
    s->left_nothing_ = left_nothing;
    done(ec, n);
  }
};

unprobed_read::unprobed_read() noexcept
    : reactor_op(std::error_code(), &unprobed_read::perform, &unprobed_read::complete) {}

unprobed_read::~unprobed_read() { FL_ASSERT(!pending()); }

bool unprobed_read::report_bytes_left(net::socket& socket) noexcept {
  FL_ASSERT(reads_skip_the_probe);
  return net::report_bytes_left(socket);
}

void unprobed_read::start(net::socket& socket, std::span<const asio::mutable_buffer> buffers,
                          handler done, probe how) {
  FL_ASSERT(reads_skip_the_probe);  // elsewhere callers read with async_read_some
  FL_ASSERT(!pending() && done && !buffers.empty() && buffers.size() <= buffers_max);
  std::size_t asked = 0;
  iov_count_ = 0;
  for (const auto& b : buffers) {
    iov_[iov_count_++] = iovec{b.data(), b.size()};
    asked += b.size();
  }
  FL_ASSERT(asked > 0);  // an empty read would find end of file in nothing
#if defined(FAULTLANE_DSIM) && !defined(FAULTLANE_READS_ALWAYS_PROBE)
  (void)context_;  // used by the reactor path only
  (void)reactor_;
  done_ = std::move(done);
  left_nothing_ = false;
  socket.start_edge_read({buffers.begin(), buffers.end()}, how == probe::first,
                         world_completion{this});
#elif ASIO_VERSION / 100 != 1022 || defined(FAULTLANE_READS_ALWAYS_PROBE)
  (void)socket;
  (void)done;
  (void)how;
  (void)context_;  // used by the reactor path only
  (void)reactor_;
#else
  done_ = std::move(done);
  skip_probe_ = how == probe::skip;
  left_nothing_ = false;
  auto& impl = socket_internals::of(socket);
  fd_ = impl.socket_;
  ec_ = std::error_code();
  bytes_transferred_ = 0;
  cancellation_key_ = nullptr;
  auto& context = asio::query(socket.get_executor(), asio::execution::context);
  if (&context != context_) {  // a registry lookup under a mutex: once per context
    context_ = &context;
    reactor_ = &asio::use_service<asio::detail::reactor>(context);
  }
  starting = this;
  // A closed socket has no registration: the reactor completes the read
  // at once with bad_descriptor, through complete().
  reactor_->start_op(asio::detail::reactor::read_op, fd_, impl.reactor_data_, this,
                     /*is_continuation=*/false, /*allow_speculative=*/true);
  starting = nullptr;
#endif
}

namespace {

// TCP_INQ's word on a read: the bytes it left, or 1 when it left none but
// the peer's FIN has come; -1 when the kernel did not say.
int bytes_left(msghdr& msg) {
  if ((msg.msg_flags & MSG_CTRUNC) != 0) return -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == IPPROTO_TCP && c->cmsg_type == TCP_CM_INQ &&
        c->cmsg_len >= CMSG_LEN(sizeof(int))) {
      int left = 0;
      std::memcpy(&left, CMSG_DATA(c), sizeof left);
      return left;
    }
  }
  return -1;
}

}  // namespace

asio::detail::reactor_op::status unprobed_read::perform(reactor_op* base) {
  auto* self = static_cast<unprobed_read*>(base);
  const bool probing = starting == self;
  if (probing && self->skip_probe_) return not_done;  // the probe this read exists to skip
  msghdr msg{};
  msg.msg_iov = self->iov_.data();
  msg.msg_iovlen = self->iov_count_;
  msg.msg_control = self->control_.data();
  msg.msg_controllen = self->control_.size();
  const std::ptrdiff_t n = net::recv_now_raw(self->fd_, msg);
  if (n > 0) {
    self->bytes_transferred_ = static_cast<std::size_t>(n);
    // A read done in the probe is posted: the reactor may report the
    // socket again before its handler runs.
    self->left_nothing_ = !probing && bytes_left(msg) == 0;
    return done;
  }
  if (n == 0) {
    self->ec_ = asio::error::eof;
    return done;
  }
  if (n == -EAGAIN || n == -EWOULDBLOCK) return not_done;  // a spurious edge
  self->ec_ = std::error_code(static_cast<int>(-n), asio::error::get_system_category());
  return done;
}

void unprobed_read::complete(void* owner, asio::detail::scheduler_operation* base,
                             const std::error_code& /*ec*/, std::size_t /*bytes*/) {
  auto* self = static_cast<unprobed_read*>(static_cast<reactor_op*>(base));
  // The handler leaves the object first: it may hold the object's owner,
  // and this may be the last reference.
  handler done = std::move(self->done_);
  if (owner == nullptr) return;  // the io_context is being destroyed: dropped, unrun
  const std::error_code ec = self->ec_;
  const std::size_t n = self->bytes_transferred_;
  done(ec, n);
}

}  // namespace faultlane::detail
