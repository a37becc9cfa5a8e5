// socket, acceptor: TCP endpoints on the simulated network, with the part
// of Asio's basic_stream_socket and basic_socket_acceptor interfaces the
// core and the relays use. A socket is an AsyncReadStream and an
// AsyncWriteStream, so asio::async_read and asio::async_write run over it
// unchanged. Completions are posted to the socket's executor, never run
// inside the call that starts them, as Asio's are.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/buffer.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/socket_base.hpp>

#include <cstddef>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include "faultlane/base/unique_function.hpp"
#include "faultlane/dsim/context_alive.hpp"
#include "faultlane/dsim/network.hpp"

namespace faultlane::dsim {

namespace detail {
using io_handler = unique_function<void(std::error_code, std::size_t)>;
using done_handler = unique_function<void(std::error_code)>;

// A completion handler wrapped to be posted to its associated executor
// (or `fallback`) with its arguments, unless that executor's context is
// gone.
template <typename Handler, typename Fallback>
io_handler posting_io(Handler h, const Fallback& fallback) {
  auto ex = asio::get_associated_executor(h, fallback);
  auto alive = alive_flag(ex);
  return [h = std::move(h), ex, alive](std::error_code ec, std::size_t n) mutable {
    if (!*alive) return;
    asio::post(ex, [h = std::move(h), ec, n]() mutable { std::move(h)(ec, n); });
  };
}
template <typename Handler, typename Fallback>
done_handler posting_done(Handler h, const Fallback& fallback) {
  auto ex = asio::get_associated_executor(h, fallback);
  auto alive = alive_flag(ex);
  return [h = std::move(h), ex, alive](std::error_code ec) mutable {
    if (!*alive) return;
    asio::post(ex, [h = std::move(h), ec]() mutable { std::move(h)(ec); });
  };
}
// A connect's result as the socket's thread finds it when the completion
// runs: Asio's reactor reads it (SO_ERROR) once the thread gets to the
// socket, so a reset that reached the socket after the connection was
// made but before then fails the connect with connection_reset, as on
// Linux (socket.cpp). Any other result stays as it was.
std::error_code connect_result(const std::weak_ptr<socket_state>& state, std::error_code ec);

// posting_done for a connect: the result is read when the handler runs.
template <typename Handler, typename Fallback>
done_handler posting_connect(Handler h, const Fallback& fallback,
                             std::weak_ptr<socket_state> state) {
  auto ex = asio::get_associated_executor(h, fallback);
  auto alive = alive_flag(ex);
  return [h = std::move(h), ex, alive, state = std::move(state)](std::error_code ec) mutable {
    if (!*alive) return;
    asio::post(ex, [h = std::move(h), ec, state = std::move(state)]() mutable {
      std::move(h)(connect_result(state, ec));
    });
  };
}
template <typename Buffers>
std::vector<asio::mutable_buffer> mutable_list(const Buffers& b) {
  return {asio::buffer_sequence_begin(b), asio::buffer_sequence_end(b)};
}
template <typename Buffers>
std::vector<asio::const_buffer> const_list(const Buffers& b) {
  return {asio::buffer_sequence_begin(b), asio::buffer_sequence_end(b)};
}
}  // namespace detail

// Both derive from asio::socket_base, as Asio's own do: the option types
// (linger, reuse_address, receive_low_watermark, ...), shutdown_type,
// wait_type and max_listen_connections come from there.
class socket : public asio::socket_base {
 public:
  using executor_type = asio::any_io_executor;
  using protocol_type = asio::ip::tcp;
  using endpoint_type = endpoint;

  explicit socket(const executor_type& ex);
  explicit socket(asio::io_context& context) : socket(executor_type(context.get_executor())) {}
  socket(socket&& other) noexcept;
  socket& operator=(socket&& other) noexcept;
  socket(const socket&) = delete;
  socket& operator=(const socket&) = delete;
  ~socket();

  executor_type get_executor() noexcept { return ex_; }
  bool is_open() const noexcept;
  void open(const protocol_type& p, std::error_code& ec);
  void open(const protocol_type& p = asio::ip::tcp::v4());
  void close(std::error_code& ec);
  void close();
  void cancel(std::error_code& ec);
  void cancel();
  void shutdown(shutdown_type what, std::error_code& ec);
  void shutdown(shutdown_type what);
  void bind(const endpoint& at, std::error_code& ec);

  endpoint local_endpoint(std::error_code& ec) const;
  endpoint local_endpoint() const;
  endpoint remote_endpoint(std::error_code& ec) const;
  endpoint remote_endpoint() const;

  // Options are kept; those the network models act: linger (a close with
  // linger 0 resets), receive_low_watermark (a read completes only when
  // that many bytes have arrived, or at end of file).
  template <typename Option>
  void set_option(const Option& o, std::error_code& ec) {
    ec.clear();
    if constexpr (std::is_same_v<Option, asio::socket_base::linger>) {
      set_linger(o.enabled(), o.timeout());
    } else if constexpr (std::is_same_v<Option, asio::socket_base::receive_low_watermark>) {
      set_low_watermark(static_cast<std::size_t>(o.value()));
    }
  }
  template <typename Option>
  void set_option(const Option& o) {
    std::error_code ec;
    set_option(o, ec);
  }
  void io_control(asio::socket_base::bytes_readable& command, std::error_code& ec);
  std::size_t available(std::error_code& ec) const;

  void non_blocking(bool on, std::error_code& ec) {
    ec.clear();
    non_blocking_ = on;
  }
  void non_blocking(bool on) { non_blocking_ = on; }
  bool non_blocking() const noexcept { return non_blocking_; }
  void native_non_blocking(bool on, std::error_code& ec) { non_blocking(on, ec); }
  // A simulated socket has no descriptor: -1, for code the dsim build
  // compiles but never runs (the relays' splice path).
  int native_handle() const noexcept { return -1; }

  // Non-blocking only: would_block when nothing can be done now.
  template <typename Buffers>
  std::size_t read_some(const Buffers& b, std::error_code& ec) {
    return read_now(detail::mutable_list(b), ec);
  }
  template <typename Buffers>
  std::size_t write_some(const Buffers& b, std::error_code& ec) {
    return write_now(detail::const_list(b), ec);
  }

  template <typename Buffers, typename Token>
  auto async_read_some(const Buffers& b, Token&& token) {
    return asio::async_initiate<Token, void(std::error_code, std::size_t)>(
        [this](auto handler, std::vector<asio::mutable_buffer> list) {
          start_read(std::move(list), detail::posting_io(std::move(handler), ex_));
        },
        token, detail::mutable_list(b));
  }
  template <typename Buffers, typename Token>
  auto async_write_some(const Buffers& b, Token&& token) {
    return asio::async_initiate<Token, void(std::error_code, std::size_t)>(
        [this](auto handler, std::vector<asio::const_buffer> list) {
          start_write(std::move(list), detail::posting_io(std::move(handler), ex_));
        },
        token, detail::const_list(b));
  }
  // Readiness: completes when a read would not wait (bytes, a FIN or a
  // reset) or a write would not (room), as a reactor reports it.
  template <typename Token>
  auto async_wait(wait_type what, Token&& token) {
    return asio::async_initiate<Token, void(std::error_code)>(
        [this, what](auto handler) {
          start_wait(what, detail::posting_done(std::move(handler), ex_));
        },
        token);
  }
  template <typename Token>
  auto async_connect(const endpoint& to, Token&& token) {
    return asio::async_initiate<Token, void(std::error_code)>(
        [this](auto handler, endpoint at) {
          // Opened first (start_connect would), so the result is read from
          // the state this connect uses.
          std::error_code ignored;
          if (!is_open()) open(asio::ip::tcp::v4(), ignored);
          start_connect(at, detail::posting_connect(std::move(handler), ex_,
                                                    std::weak_ptr<detail::socket_state>(state_)));
        },
        token, to);
  }

  // The reactor's edge-triggered read, which the core's unprobed read
  // (core/src/runtime/unprobed_read.hpp) is written against. With `probe` the
  // socket is tried first, as Asio's speculative read does; otherwise, and
  // when that found nothing, the read waits until something next arrives
  // at this end (bytes, a FIN, a reset): what arrived while no read waited
  // raised an edge that nobody saw, and a read queued after it without a
  // probe waits for the next one. An arrival reports the read, and a step
  // on the socket's context then performs it with what arrived up to then
  // and runs `done` at once (the reactor's dispatch). A read performed so
  // says whether it left the socket empty, no byte and no FIN (TCP_INQ's
  // word); a read done in its probe never does, and its `done` is posted.
  // Dropped unrun if the context is gone, as a reactor operation is.
  using edge_handler = unique_function<void(std::error_code, std::size_t, bool left_nothing)>;
  void start_edge_read(std::vector<asio::mutable_buffer> buffers, bool probe, edge_handler done);

  // The simulated counterparts of the seam's direct calls.
  // The bytes waiting to be read, and whether a FIN or reset waits too.
  std::size_t queued() const noexcept;
  bool peer_gone_or_ready() const noexcept;

  // For the acceptor: adopts one end of a connection.
  void adopt(std::shared_ptr<detail::socket_state> state);

 private:
  std::size_t read_now(std::vector<asio::mutable_buffer> buffers, std::error_code& ec);
  std::size_t write_now(std::vector<asio::const_buffer> buffers, std::error_code& ec);
  void start_read(std::vector<asio::mutable_buffer> buffers, detail::io_handler done);
  void start_write(std::vector<asio::const_buffer> buffers, detail::io_handler done);
  void start_connect(const endpoint& to, detail::done_handler done);
  void start_wait(wait_type what, detail::done_handler done);
  void set_linger(bool on, int seconds);
  void set_low_watermark(std::size_t bytes);

  executor_type ex_;
  std::shared_ptr<detail::socket_state> state_;
  bool non_blocking_ = false;
};

class acceptor : public asio::socket_base {
 public:
  using executor_type = asio::any_io_executor;
  using protocol_type = asio::ip::tcp;
  using endpoint_type = endpoint;

  explicit acceptor(const executor_type& ex) : ex_(ex) {}
  explicit acceptor(asio::io_context& context) : acceptor(executor_type(context.get_executor())) {}
  acceptor(const acceptor&) = delete;
  acceptor& operator=(const acceptor&) = delete;
  ~acceptor();

  executor_type get_executor() noexcept { return ex_; }
  bool is_open() const noexcept { return open_; }
  void open(const protocol_type& p, std::error_code& ec);
  void bind(const endpoint& at, std::error_code& ec);
  void listen(int backlog, std::error_code& ec);
  void close(std::error_code& ec);
  void close() {
    std::error_code ec;
    close(ec);
  }
  void cancel(std::error_code& ec);
  endpoint local_endpoint(std::error_code& ec) const;
  template <typename Option>
  void set_option(const Option&, std::error_code& ec) {
    ec.clear();
  }
  void non_blocking(bool on, std::error_code& ec) {
    ec.clear();
    non_blocking_ = on;
  }
  bool non_blocking() const noexcept { return non_blocking_; }

  // Non-blocking only: would_block when no connection waits.
  void accept(socket& into, std::error_code& ec);
  // Completes with a socket on `context`.
  template <typename Token>
  auto async_accept(asio::io_context& context, Token&& token) {
    return asio::async_initiate<Token, void(std::error_code, socket)>(
        [this, &context](auto handler) {
          auto ex = asio::get_associated_executor(handler, ex_);
          start_accept(context, [h = std::move(handler), ex](std::error_code ec, socket s) mutable {
            asio::post(ex, [h = std::move(h), ec, s = std::move(s)]() mutable {
              std::move(h)(ec, std::move(s));
            });
          });
        },
        token);
  }

 private:
  void start_accept(asio::io_context& context, unique_function<void(std::error_code, socket)> done);
  friend struct detail::listener;

  executor_type ex_;
  network* net_ = nullptr;
  bool open_ = false;
  bool non_blocking_ = false;
  endpoint bound_;
  std::shared_ptr<detail::listener> listener_;
};

}  // namespace faultlane::dsim
