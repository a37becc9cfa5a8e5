// Stateful property of the registry against a plain model: across
// registrations, unregistrations, leases and restarts (new incarnations),
// stale and never-issued ids are always rejected, and live ids always
// resolve to the right range with the right permission checks.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <map>
#include <memory>
#include <set>
#include <vector>

#include "faultlane/core/registry.hpp"
#include "planted.hpp"

namespace faultlane::props {
namespace {

constexpr std::size_t arena_bytes = 4096;

struct model_registration {
  std::size_t offset = 0;  // into the arena
  std::size_t length = 0;
  permission perm = permission::local_only;
  bool live = true;  // false once unregistered or its incarnation restarted
};

struct registry_model {
  std::vector<model_registration> registrations;  // index = handle
  std::vector<std::size_t> leases;                // handle each lease pins
};

struct registry_sut {
  explicit registry_sut(bool reuse_namespace) : reuse_namespace_(reuse_namespace) { restart(); }

  void restart() {
    leases.clear();
    if (reg) FL_ASSERT(reg->close(std::chrono::milliseconds(1000)).ok());
    registry_options options;
    // The planted bug: every incarnation draws the same namespace, so ids
    // repeat across restarts.
    if (reuse_namespace_) options.namespace_value = 0x5eed;
    reg = std::make_unique<registry>(options);
  }

  bool reuse_namespace_;
  std::vector<std::byte> arena = std::vector<std::byte>(arena_bytes);
  std::unique_ptr<registry> reg;
  std::vector<registration_id> ids;  // by handle
  std::set<registration_id> issued;  // every id ever issued, all incarnations
  std::vector<lease> leases;
};

using command = rc::state::Command<registry_model, registry_sut>;

status expected_status(const registry_model& m, std::size_t handle, std::uint64_t offset,
                       std::uint64_t length, access kind) {
  const auto& r = m.registrations[handle];
  if (!r.live) return status::stale_registration;
  bool allowed = kind == access::read ? r.perm != permission::local_only
                                      : r.perm == permission::remote_read_write;
  if (!allowed) return status::permission_denied;
  if (length == 0 || offset > r.length || length > r.length - offset) {
    return status::range_rejected;
  }
  return status::ok;
}

struct register_buffer : command {
  std::size_t offset = *rc::gen::inRange<std::size_t>(0, arena_bytes - 1);
  std::size_t length = *rc::gen::inRange<std::size_t>(1, arena_bytes - offset + 1);
  permission perm = *rc::gen::element(permission::local_only, permission::remote_read,
                                      permission::remote_read_write);

  void apply(registry_model& m) const override {
    m.registrations.push_back({offset, length, perm, true});
  }
  void run(const registry_model&, registry_sut& s) const override {
    auto id = s.reg->register_buffer(s.arena.data() + offset, length, perm);
    RC_ASSERT(id.ok());
    RC_ASSERT(id.value() != 0u);
    RC_ASSERT(s.issued.insert(id.value()).second);  // never reissued, in any incarnation
    s.ids.push_back(id.value());
  }
  void show(std::ostream& os) const override {
    os << "register(" << offset << ", " << length << ", " << to_string(perm) << ")";
  }
};

struct unregister_buffer : command {
  std::size_t handle;
  explicit unregister_buffer(const registry_model& m)
      : handle(*rc::gen::inRange<std::size_t>(0, m.registrations.size())) {}

  void checkPreconditions(const registry_model& m) const override {
    RC_PRE(handle < m.registrations.size());
    RC_PRE(m.registrations[handle].live);
    for (auto pinned : m.leases) RC_PRE(pinned != handle);  // would block
  }
  void apply(registry_model& m) const override { m.registrations[handle].live = false; }
  void run(const registry_model&, registry_sut& s) const override {
    RC_ASSERT(s.reg->unregister_buffer(s.ids[handle]).ok());
  }
  void show(std::ostream& os) const override { os << "unregister(#" << handle << ")"; }
};

struct acquire_lease : command {
  std::size_t handle;
  std::uint64_t offset;
  std::uint64_t length;
  access kind = *rc::gen::element(access::read, access::write);
  explicit acquire_lease(const registry_model& m)
      : handle(*rc::gen::inRange<std::size_t>(0, m.registrations.size())),
        offset(*rc::gen::inRange<std::uint64_t>(0, arena_bytes + 2)),
        length(*rc::gen::oneOf(rc::gen::inRange<std::uint64_t>(0, arena_bytes + 2),
                               rc::gen::just(~std::uint64_t{0}))) {}

  void checkPreconditions(const registry_model& m) const override {
    RC_PRE(handle < m.registrations.size());
  }
  void apply(registry_model& m) const override {
    if (expected_status(m, handle, offset, length, kind) == status::ok) m.leases.push_back(handle);
  }
  void run(const registry_model& m, registry_sut& s) const override {
    auto expected = expected_status(m, handle, offset, length, kind);
    auto got = s.reg->acquire(s.ids[handle], offset, length, kind);
    RC_ASSERT(got.code() == expected);
    if (got.ok()) {
      RC_ASSERT(got->data() == s.arena.data() + m.registrations[handle].offset + offset);
      RC_ASSERT(got->size() == length);
      s.leases.push_back(std::move(got).value());
    }
  }
  void show(std::ostream& os) const override {
    os << "acquire(#" << handle << ", " << offset << ", " << length << ", "
       << (kind == access::read ? "read" : "write") << ")";
  }
};

struct release_lease : command {
  std::size_t index;
  explicit release_lease(const registry_model& m)
      : index(m.leases.empty() ? 0 : *rc::gen::inRange<std::size_t>(0, m.leases.size())) {}
  void checkPreconditions(const registry_model& m) const override {
    RC_PRE(index < m.leases.size());
  }
  void apply(registry_model& m) const override {
    m.leases.erase(m.leases.begin() + static_cast<long>(index));
  }
  void run(const registry_model& m, registry_sut& s) const override {
    s.leases.erase(s.leases.begin() + static_cast<long>(index));
    RC_ASSERT(s.reg->active_leases() == m.leases.size() - 1);
  }
  void show(std::ostream& os) const override { os << "release(lease " << index << ")"; }
};

struct restart : command {
  void apply(registry_model& m) const override {
    m.leases.clear();
    for (auto& r : m.registrations) r.live = false;
  }
  void run(const registry_model&, registry_sut& s) const override { s.restart(); }
  void show(std::ostream& os) const override { os << "restart"; }
};

struct lookup_arbitrary_id : command {
  registration_id id = *rc::gen::arbitrary<registration_id>();
  void run(const registry_model& m, registry_sut& s) const override {
    for (std::size_t h = 0; h < s.ids.size(); ++h) {
      if (s.ids[h] == id && m.registrations[h].live) return;  // 2^-64: a live id
    }
    RC_ASSERT(s.reg->acquire(id, 0, 1, access::read).code() == status::stale_registration);
  }
  void show(std::ostream& os) const override { os << "lookup(" << id << ")"; }
};

void run_registry_property(bool reuse_namespace) {
  registry_model model;
  registry_sut sut(reuse_namespace);
  rc::state::check(model, sut, [](const registry_model& m) {
    if (m.registrations.empty()) {
      return rc::state::gen::execOneOfWithArgs<register_buffer, restart, lookup_arbitrary_id>()(m);
    }
    return rc::state::gen::execOneOfWithArgs<register_buffer, unregister_buffer, acquire_lease,
                                             acquire_lease, release_lease, restart,
                                             lookup_arbitrary_id>()(m);
  });
}

RC_GTEST_PROP(registry_properties, matches_the_model_across_incarnations, ()) {
  run_registry_property(false);
}

TEST(registry_properties_planted, a_reused_namespace_is_caught) {
  EXPECT_TRUE(finds_counterexample("same namespace every incarnation",
                                   [] { run_registry_property(true); }));
}

}  // namespace
}  // namespace faultlane::props
