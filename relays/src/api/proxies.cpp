// proxy_set; see proxies.hpp. Status codes and error texts follow
// Toxiproxy 2.x's API (docs/relay-api.md lists them).
#include "proxies.hpp"

#include "faultlane/relays/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <tuple>

namespace faultlane::relays::api {
namespace {

using nlohmann::json;

reply status_only(int status) { return {status, nullptr}; }

int status_of(const error& e) { return e.code == status::invalid_argument ? 400 : 500; }

reply failed(const error& e) { return error_reply(status_of(e), e.message); }

result<address> parse_address(const std::string& what, const std::string& text) {
  auto a = parse_relay_address(text);
  if (!a.ok())
    return error{status::invalid_argument, fmt::format("{}: {}", what, a.error().message)};
  return a;
}

// A field of a request body: absent (the fallback), or of the right type.
template <typename T>
result<T> field(const json& body, const char* key, T fallback) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return fallback;
  bool right = false;
  if constexpr (std::is_same_v<T, std::string>) right = it->is_string();
  else if constexpr (std::is_same_v<T, bool>) right = it->is_boolean();
  else right = it->is_number();
  if (!right) {
    return error{status::invalid_argument,
                 fmt::format("bad request body: {} has the wrong type ({})", key, it->dump())};
  }
  return it->get<T>();
}

// What relay::start will check of `listen` and `config`.
result<void> check_addresses(const std::string& listen, relay_config config) {
  auto at = parse_address("listen", listen);
  if (!at.ok()) return at.error();
  config.listen = at.value();
  config.faults.clear();
  return relay::check(config);
}

std::vector<proxy_set::proxy::installed>::iterator find_toxic(proxy_set::proxy& p,
                                                              const std::string& name) {
  return std::find_if(p.toxics.begin(), p.toxics.end(),
                      [&](const auto& t) { return t.shown.name == name; });
}

}  // namespace

reply error_reply(int status, const std::string& message) {
  return {status, json{{"error", message}, {"status", status}}};
}

proxy_set::proxy_set(relay_config defaults) : defaults_(std::move(defaults)) {}

proxy_set::~proxy_set() { stop_all(); }

proxy_set::proxy* proxy_set::find(const std::string& name) const {
  for (const auto& p : proxies_) {
    if (p->name == name) return p.get();
  }
  return nullptr;
}

result<void> proxy_set::start(proxy& p) {
  FL_ASSERT(!p.running);
  auto config = p.config;
  auto listen = parse_address("listen", p.listen);
  if (!listen.ok()) return listen.error();
  config.listen = listen.value();
  config.faults.clear();
  for (const auto& t : p.toxics) config.faults.push_back(t.spec);
  config.tap_append = p.started_before;  // a restart adds to the tap file
  p.started_before = true;
  auto started = relay::start(config);
  if (!started.ok()) return started.error();
  auto ids = started.value()->faults();
  FL_ASSERT(ids.size() == p.toxics.size());
  for (std::size_t i = 0; i < ids.size(); ++i) p.toxics[i].id = ids[i].first;
  p.listen = started.value()->listen_endpoint().str();
  p.running = std::move(started).value();
  p.enabled = true;
  return {};
}

void proxy_set::stop(proxy& p) {
  p.enabled = false;
  if (!p.running) return;
  p.running->stop();
  for (const auto& [name, count] : p.running->counters()) p.carried[name] += count;
  p.carried_bytes[0] += p.running->bytes_received(direction::up);
  p.carried_bytes[1] += p.running->bytes_received(direction::down);
  p.carried_peak = std::max(p.carried_peak, p.running->active_faults_peak());
  p.running.reset();
}

void proxy_set::stop_all() {
  std::lock_guard lock(mutex_);
  for (auto& p : proxies_) stop(*p);
}

json proxy_set::to_json(const proxy& p) const {
  json toxics = json::array();
  for (auto dir : {direction::up, direction::down}) {  // Toxiproxy lists upstream first
    for (const auto& t : p.toxics) {
      if (t.shown.dir == dir) toxics.push_back(api::to_json(t.shown));
    }
  }
  return {{"name", p.name},
          {"listen", p.listen},
          {"upstream", p.upstream},
          {"enabled", p.enabled},
          {"toxics", std::move(toxics)}};
}

result<std::unique_ptr<proxy_set::proxy>> proxy_set::make_proxy(const json& body) const {
  if (!body.is_object()) {
    return error{status::invalid_argument, "bad request body: expected a JSON object"};
  }
  auto p = std::make_unique<proxy>();
  auto name = field<std::string>(body, "name", "");
  auto listen = field<std::string>(body, "listen", "127.0.0.1:0");
  auto upstream = field<std::string>(body, "upstream", "");
  auto enabled = field<bool>(body, "enabled", true);
  auto protocol = field<std::string>(body, "protocol", "");
  for (const auto* r : {&name, &listen, &upstream, &protocol}) {
    if (!r->ok()) return r->error();
  }
  if (!enabled.ok()) return enabled.error();
  if (name.value().empty()) {
    return error{status::invalid_argument, "missing required field: name"};
  }
  if (name.value().find('/') != std::string::npos) {
    return error{status::invalid_argument, "bad request body: a name cannot hold '/'"};
  }
  if (upstream.value().empty()) {
    return error{status::invalid_argument, "missing required field: upstream"};
  }
  auto target = parse_address("upstream", upstream.value());
  if (!target.ok()) return target.error();
  p->name = name.value();
  p->listen = listen.value();
  p->upstream = upstream.value();
  p->enabled = enabled.value();
  p->config = defaults_;
  p->config.name = p->name;
  p->config.upstream = target.value();
  if (protocol.value() == "raw") p->config.proto = protocol::raw;
  else if (protocol.value() == "faultlane") p->config.proto = protocol::faultlane;
  else if (!protocol.value().empty()) {
    return error{status::invalid_argument, "bad request body: protocol must be faultlane or raw"};
  }
  // Addresses are checked now, enabled or not: a proxy the API accepted
  // can always be enabled (unless its port is taken).
  if (auto r = check_addresses(p->listen, p->config); !r.ok()) return r.error();
  return p;
}

result<address> proxy_set::add_configured(const relay_config& config) {
  std::lock_guard lock(mutex_);
  if (find(config.name)) {
    return error{status::invalid_argument, fmt::format("two relays are named {}", config.name)};
  }
  auto p = std::make_unique<proxy>();
  p->name = config.name;
  p->listen = config.listen.str();
  p->upstream = config.upstream.str();
  p->config = config;
  // Toxic names are unique within a proxy: a name the file repeats (two
  // `latency dir=down` are both latency.down) gets .2, .3...
  std::map<std::string, int> seen;
  for (auto f : config.faults) {
    if (int n = ++seen[f.name]; n > 1) f.name = fmt::format("{}.{}", f.name, n);
    auto shown = from_fault(f);
    fill_default_attributes(shown);
    p->toxics.push_back({std::move(shown), f, 0});
  }
  if (auto r = start(*p); !r.ok()) return r.error();
  auto bound = p->running->listen_endpoint();
  proxies_.push_back(std::move(p));
  return bound;
}

reply proxy_set::list() const {
  std::lock_guard lock(mutex_);
  json out = json::object();
  for (const auto& p : proxies_) out[p->name] = to_json(*p);
  return {200, std::move(out)};
}

reply proxy_set::create(const json& body) {
  std::lock_guard lock(mutex_);
  auto p = make_proxy(body);
  if (!p.ok()) return failed(p.error());
  if (find(p.value()->name)) return error_reply(409, "proxy already exists");
  if (p.value()->enabled) {
    if (auto r = start(*p.value()); !r.ok()) return failed(r.error());
  }
  auto shown = to_json(*p.value());
  proxies_.push_back(std::move(p).value());
  return {201, std::move(shown)};
}

reply proxy_set::show(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto* p = find(name);
  if (!p) return error_reply(404, "proxy not found");
  return {200, to_json(*p)};
}

reply proxy_set::update(const std::string& name, const json& body) {
  std::lock_guard lock(mutex_);
  auto* p = find(name);
  if (!p) return error_reply(404, "proxy not found");
  if (!body.is_object()) return error_reply(400, "bad request body: expected a JSON object");
  auto listen = field<std::string>(body, "listen", p->listen);
  auto upstream = field<std::string>(body, "upstream", p->upstream);
  auto enabled = field<bool>(body, "enabled", p->enabled);
  if (!listen.ok()) return failed(listen.error());
  if (!upstream.ok()) return failed(upstream.error());
  if (!enabled.ok()) return failed(enabled.error());
  if (listen.value() != p->listen || upstream.value() != p->upstream) {
    // As Toxiproxy does: a moved proxy restarts, dropping its connections.
    // The new addresses are checked first, and if the proxy cannot listen
    // there it goes back to where it was: a refused change changes nothing.
    auto target = parse_address("upstream", upstream.value());
    if (!target.ok()) return failed(target.error());
    auto moved = p->config;
    moved.upstream = target.value();
    if (auto r = check_addresses(listen.value(), moved); !r.ok()) return failed(r.error());
    bool was_running = p->running != nullptr;
    auto old = std::tuple{p->listen, p->upstream, p->config};
    stop(*p);
    std::tie(p->listen, p->upstream, p->config) =
        std::tuple{listen.value(), upstream.value(), moved};
    if (enabled.value()) {
      if (auto r = start(*p); !r.ok()) {
        std::tie(p->listen, p->upstream, p->config) = old;
        if (was_running) (void)start(*p);
        return failed(r.error());
      }
    }
  }
  if (enabled.value() && !p->running) {
    if (auto r = start(*p); !r.ok()) return failed(r.error());
  } else if (!enabled.value()) {
    stop(*p);
  }
  return {200, to_json(*p)};
}

reply proxy_set::remove(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(proxies_.begin(), proxies_.end(),
                         [&](const auto& p) { return p->name == name; });
  if (it == proxies_.end()) return error_reply(404, "proxy not found");
  stop(**it);
  proxies_.erase(it);
  return status_only(204);
}

// Every proxy is checked before any is changed; a proxy already there with
// the same listen and upstream is kept (toxics and all), another one of
// that name is replaced.
reply proxy_set::populate(const json& body) {
  std::lock_guard lock(mutex_);
  if (!body.is_array()) return error_reply(400, "bad request body: expected a JSON array");
  std::vector<std::unique_ptr<proxy>> incoming;
  std::set<std::string> names;
  for (std::size_t i = 0; i < body.size(); ++i) {
    auto p = make_proxy(body[i]);
    if (!p.ok()) return failed({p.code(), fmt::format("{} at proxy {}", p.error().message, i + 1)});
    if (!names.insert(p.value()->name).second) {
      return error_reply(400, fmt::format("duplicate proxy name \"{}\"", p.value()->name));
    }
    incoming.push_back(std::move(p).value());
  }
  json shown = json::array();
  for (auto& p : incoming) {
    auto it = std::find_if(proxies_.begin(), proxies_.end(),
                           [&](const auto& q) { return q->name == p->name; });
    if (it != proxies_.end() && (*it)->listen == p->listen && (*it)->upstream == p->upstream) {
      shown.push_back(to_json(**it));
      continue;
    }
    if (it != proxies_.end()) {
      stop(**it);
      proxies_.erase(it);
    }
    if (p->enabled) {
      if (auto r = start(*p); !r.ok()) {
        auto e = error_reply(status_of(r.error()), r.error().message);
        e.body["proxies"] = std::move(shown);
        return e;
      }
    }
    shown.push_back(to_json(*p));
    proxies_.push_back(std::move(p));
  }
  return {201, json{{"proxies", std::move(shown)}}};
}

// Every proxy is reset even if one cannot start again (its port taken):
// the first such error is the answer.
reply proxy_set::reset() {
  std::lock_guard lock(mutex_);
  std::optional<error> first;
  for (auto& p : proxies_) {
    if (p->running) {
      for (const auto& t : p->toxics) p->running->remove_fault(t.id);
    }
    p->toxics.clear();
    if (!p->running) {
      if (auto r = start(*p); !r.ok() && !first) first = r.error();
    }
  }
  return first ? failed(*first) : status_only(204);
}

reply proxy_set::toxics(const std::string& proxy_name) const {
  std::lock_guard lock(mutex_);
  auto* p = find(proxy_name);
  if (!p) return error_reply(404, "proxy not found");
  return {200, to_json(*p)["toxics"]};
}

reply proxy_set::add_toxic(const std::string& proxy_name, const json& body) {
  std::lock_guard lock(mutex_);
  auto* p = find(proxy_name);
  if (!p) return error_reply(404, "proxy not found");
  if (!body.is_object()) return error_reply(400, "bad request body: expected a JSON object");
  toxic t;
  auto name = field<std::string>(body, "name", "");
  auto type = field<std::string>(body, "type", "");
  auto stream = field<std::string>(body, "stream", "downstream");
  auto toxicity = field<double>(body, "toxicity", 1.0);
  for (const auto* r : {&name, &type, &stream}) {
    if (!r->ok()) return failed(r->error());
  }
  if (!toxicity.ok()) return failed(toxicity.error());
  auto lower = stream.value();  // Toxiproxy takes "Upstream" too
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower != "upstream" && lower != "downstream") {
    return error_reply(400, "stream was invalid, can be either upstream or downstream");
  }
  t.dir = lower == "upstream" ? direction::up : direction::down;
  t.type = type.value();
  t.name = name.value().empty() ? fmt::format("{}_{}", t.type, lower) : name.value();
  t.toxicity = toxicity.value();
  if (auto it = body.find("attributes"); it != body.end() && !it->is_null()) t.attributes = *it;
  if (!toxic_kind(t.type)) return error_reply(400, "invalid toxic type");
  bool taken = std::any_of(p->toxics.begin(), p->toxics.end(),
                           [&](const auto& x) { return x.shown.name == t.name; });
  if (taken) return error_reply(409, "toxic already exists");
  if (t.name.find('/') != std::string::npos) {
    return error_reply(400, "bad request body: a name cannot hold '/'");
  }
  if (is_relay_counter(t.name)) {
    return error_reply(400, fmt::format("bad request body: {} names a relay counter", t.name));
  }
  fill_default_attributes(t);
  auto spec = to_fault(t);
  if (!spec.ok()) return error_reply(400, "bad request body: " + spec.error().message);
  normalize_numbers(t);
  fault_id id = p->running ? p->running->add_fault(spec.value()) : 0;
  p->toxics.push_back({t, spec.value(), id});
  return {200, api::to_json(t)};
}

reply proxy_set::show_toxic(const std::string& proxy_name, const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto* p = find(proxy_name);
  if (!p) return error_reply(404, "proxy not found");
  for (const auto& t : p->toxics) {
    if (t.shown.name == name) return {200, api::to_json(t.shown)};
  }
  return error_reply(404, "toxic not found");
}

reply proxy_set::update_toxic(const std::string& proxy_name, const std::string& name,
                              const json& body) {
  std::lock_guard lock(mutex_);
  auto* p = find(proxy_name);
  if (!p) return error_reply(404, "proxy not found");
  auto it = find_toxic(*p, name);
  if (it == p->toxics.end()) return error_reply(404, "toxic not found");
  if (!body.is_object()) return error_reply(400, "bad request body: expected a JSON object");
  auto updated = it->shown;
  auto toxicity = field<double>(body, "toxicity", updated.toxicity);
  if (!toxicity.ok()) return failed(toxicity.error());
  updated.toxicity = toxicity.value();
  if (auto a = body.find("attributes"); a != body.end() && !a->is_null()) {
    if (!a->is_object()) return error_reply(400, "bad request body: attributes must be an object");
    for (const auto& [key, value] : a->items()) updated.attributes[key] = value;
  }
  auto spec = to_fault(updated);
  if (!spec.ok()) return error_reply(400, "bad request body: " + spec.error().message);
  normalize_numbers(updated);
  if (p->running) p->running->replace_fault(it->id, spec.value());
  it->shown = updated;
  it->spec = spec.value();
  return {200, api::to_json(updated)};
}

reply proxy_set::remove_toxic(const std::string& proxy_name, const std::string& name) {
  std::lock_guard lock(mutex_);
  auto* p = find(proxy_name);
  if (!p) return error_reply(404, "proxy not found");
  auto it = find_toxic(*p, name);
  if (it == p->toxics.end()) return error_reply(404, "toxic not found");
  if (p->running) p->running->remove_fault(it->id);
  p->toxics.erase(it);
  return status_only(204);
}

}  // namespace faultlane::relays::api
