// The rpc client's typed calls of the built-in methods, and the descriptor
// source built on them; see rpc_client.hpp.
#include <fmt/format.h>

#include "faultlane/control/rpc_client.hpp"

namespace faultlane::rpc {

namespace {

// Calls `method` and reads its answer with `decode`.
template <typename Decode>
auto decoded_call(client& c, std::string_view method, std::span<const std::byte> body,
                  Decode decode) -> decltype(decode(std::span<const std::byte>{})) {
  auto r = c.call(method, body);
  if (!r) return r.error();
  return decode(r.value());
}

}  // namespace

result<void> client::ping() { return decoded_call(*this, "ping", {}, decode_empty); }

result<bool> client::service_ready() {
  return decoded_call(*this, "service_ready", {}, decode_ready);
}

result<segment_descriptor> client::describe() {
  return decoded_call(*this, "describe", {}, decode_descriptor);
}

result<std::vector<named_registration>> client::list_registrations(std::string_view pattern) {
  if (pattern.size() > pattern_bytes_max) {
    return error{
        status::invalid_argument,
        fmt::format("list_registrations: the pattern is over {} bytes", pattern_bytes_max)};
  }
  return decoded_call(*this, "list_registrations", encode_pattern(pattern), decode_registrations);
}

result<stat_list> client::stats() { return decoded_call(*this, "stats", {}, decode_stats); }

result<std::shared_ptr<rpc_descriptor_source>> rpc_descriptor_source::create(
    const client_options& options) {
  auto c = client::create(options);
  if (!c) return c.error();
  std::shared_ptr<client> shared = std::move(c).value();
  // new-ok: the constructor is private to create(), which owns the result at once.
  return std::shared_ptr<rpc_descriptor_source>(new rpc_descriptor_source(std::move(shared)));
}

std::shared_ptr<client> rpc_descriptor_source::current() const {
  std::lock_guard lock(mutex_);
  return client_;
}

result<segment_descriptor> rpc_descriptor_source::fetch() {
  auto c = current();
  if (!c) return error{status::cancelled, "the descriptor source is closed"};
  return c->describe();
}

void rpc_descriptor_source::fetch_async(unique_function<void(result<segment_descriptor>)> done) {
  auto c = current();
  if (!c) return done(error{status::cancelled, "the descriptor source is closed"});
  c->call_async("describe", {}, [done = std::move(done)](result<std::vector<std::byte>> r) mutable {
    if (!r) return done(r.error());
    done(decode_descriptor(r.value()));
  });
}

// The client goes when its last user lets go: here, or at the end of a
// fetch() still running on another thread.
void rpc_descriptor_source::close() {
  std::shared_ptr<client> closing;
  {
    std::lock_guard lock(mutex_);
    closing = std::move(client_);
  }
}

}  // namespace faultlane::rpc
