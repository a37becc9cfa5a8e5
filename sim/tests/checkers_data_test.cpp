// Tests of the data-integrity checker: the model follows fills, ok WRITEs,
// rejected and ambiguous WRITEs, concurrency and restarts; a READ or a
// final read that disagrees with a known byte is reported with the offset,
// both bytes and the count of differing bytes; and the sweep is fast.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <ctime>
#include <random>

#include "checkers_test_world.hpp"

namespace faultlane::sim::test {
namespace {

std::vector<std::byte> pattern(std::uint64_t n, std::uint64_t seed) {
  std::vector<std::byte> out(n);
  fill_pattern(out.data(), n, seed);
  return out;
}

void put(std::vector<std::byte>& dst, std::uint64_t at, const std::vector<std::byte>& src) {
  std::copy(src.begin(), src.end(), dst.begin() + static_cast<std::ptrdiff_t>(at));
}

TEST(data_integrity, clean_history_passes) {
  auto w = clean_world();
  auto r = check_data_integrity(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 8192u + 1000u + 4096u + region_size);  // READ bytes, final bytes
}

TEST(data_integrity, a_read_returns_a_wrong_byte) {
  auto w = clean_world();
  auto& d = w.op(3).data;
  auto seen = d[5000] ^ std::byte{0xff};
  d[5000] = seen;
  EXPECT_TRUE(one_violation(
      check_data_integrity(w.h),
      fmt::format("READ of region buf on server#0 [0, 8192) returned {:#04x} at region offset "
                  "5000 (byte 5000 of the READ), the model has {:#04x}; 1 of 8192 compared "
                  "bytes differ",
                  std::to_integer<unsigned>(seen), std::to_integer<unsigned>(w.model[5000])),
      102, 0x1f00000002));
}

TEST(data_integrity, an_ok_write_must_be_visible_to_a_later_read) {
  world w;
  w.write(0, 4096, 11);
  auto id = w.read(0, 4096);
  w.op(id).data = pattern(region_size, region_seed);  // the bytes before the WRITE
  w.op(id).data.resize(4096);
  auto r = check_data_integrity(w.h);
  EXPECT_TRUE(one_violation(r, "compared bytes differ", 101, 0x1f00000001));
  EXPECT_TRUE(mentions(r, "at region offset 0 ")) << all(r);
}

TEST(data_integrity, a_rejected_write_changed_nothing) {
  world w;
  auto wr = w.start(wire::opcode::write, 0, 4096, 11);
  w.end(wr, status::stale_registration);
  auto rd = w.read(0, 4096);
  EXPECT_TRUE(check_data_integrity(w.h).passed());
  w.op(rd).data = pattern(4096, 11);  // as if the refused WRITE had run
  EXPECT_TRUE(
      one_violation(check_data_integrity(w.h), "of 4096 compared bytes differ", 101, 0x1f00000001));
}

TEST(data_integrity, an_ambiguous_write_is_unknown_until_written_again) {
  world w;
  auto wr = w.start(wire::opcode::write, 0, 4096, 11);
  w.end(wr, status::ambiguous_write);
  auto before = w.read(0, 4096);  // returns the old bytes
  auto after = w.read(0, 4096);
  w.op(after).data = pattern(4096, 11);  // or the WRITE's: either is fine
  auto r = check_data_integrity(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 0u);
  w.write(0, 2048, 12);
  auto last = w.read(0, 4096);
  w.op(last).data = w.op(before).data;  // loses the later ok WRITE over [0, 2048)
  r = check_data_integrity(w.h);
  EXPECT_TRUE(one_violation(r, "of 2048 compared bytes differ", 104, 0x1f00000004));
}

TEST(data_integrity, a_write_concurrent_with_a_read_taints_only_the_shared_bytes) {
  world w;
  auto rd = w.start(wire::opcode::read, 0, 8192);
  auto wr = w.start(wire::opcode::write, 0, 4096, 11);
  w.end(wr);
  w.end(rd);
  auto old = pattern(region_size, region_seed);
  put(w.op(rd).data, 0, std::vector<std::byte>(old.begin(), old.begin() + 4096));
  auto r = check_data_integrity(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 4096u);  // only the bytes the WRITE did not touch
  w.op(rd).data[6000] ^= std::byte{1};
  EXPECT_TRUE(one_violation(check_data_integrity(w.h), "at region offset 6000", 100, 0x1f00000000));
}

TEST(data_integrity, a_write_that_completed_during_a_read_taints_it) {
  world w;
  auto rd = w.start(wire::opcode::read, 0, 4096);
  w.write(1024, 1024, 11);  // submitted and completed while the READ was out
  w.end(rd);
  auto old = pattern(region_size, region_seed);
  put(w.op(rd).data, 1024, std::vector<std::byte>(old.begin() + 1024, old.begin() + 2048));
  auto r = check_data_integrity(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 3072u);
}

TEST(data_integrity, overlapping_concurrent_writes_leave_their_overlap_unknown) {
  world w;
  auto a = w.start(wire::opcode::write, 0, 4096, 11);
  auto b = w.start(wire::opcode::write, 2048, 4096, 12);
  w.end(a);
  w.end(b);
  auto rd = w.read(0, 8192);
  auto a_bytes = pattern(4096, 11);
  put(w.op(rd).data, 2048, std::vector<std::byte>(a_bytes.begin() + 2048, a_bytes.end()));
  auto r = check_data_integrity(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 8192u - 2048u);
  w.op(rd).data[100] ^= std::byte{1};  // a's own bytes are known
  EXPECT_TRUE(one_violation(check_data_integrity(w.h), "at region offset 100 ", 102, 0x1f00000002));
  w.op(rd).data[100] ^= std::byte{1};
  w.op(rd).data[5000] ^= std::byte{1};  // so are b's
  EXPECT_TRUE(
      one_violation(check_data_integrity(w.h), "at region offset 5000 ", 102, 0x1f00000002));
}

TEST(data_integrity, a_write_that_never_completed_taints_every_later_read) {
  world w;
  w.start(wire::opcode::write, 0, 4096, 11);
  auto rd = w.read(0, 4096);
  w.op(rd).data = pattern(4096, 11);
  auto r = check_data_integrity(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
}

// ...and the final bytes too: they may hold it or not, the rest must match.
TEST(data_integrity, a_write_that_never_completed_leaves_its_final_bytes_unknown) {
  world w;
  w.start(wire::opcode::write, 1024, 4096, 11);
  w.finish();
  put(w.h.finals[0].bytes, 1024, pattern(4096, 11));  // it landed after all
  auto r = check_data_integrity(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, region_size - 4096);
  w.h.finals[0].bytes[6000] ^= std::byte{1};
  EXPECT_TRUE(one_violation(check_data_integrity(w.h), "at offset 6000", 0, 0));
}

TEST(data_integrity, no_check_when_the_target_incarnation_ended_during_the_read) {
  world w;
  auto rd = w.start(wire::opcode::read, 0, 4096);
  auto ended = w.tick();
  w.end(rd);
  w.op(rd).data[0] ^= std::byte{1};
  EXPECT_FALSE(check_data_integrity(w.h).passed());
  w.h.incarnations[1].end_seq = ended;
  auto r = check_data_integrity(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
}

TEST(data_integrity, a_new_incarnation_refills_or_carries_over) {
  world w;
  w.write(0, 4096, 11);
  for (std::uint64_t seed : {99u, 0u}) {
    auto v = w;
    v.register_region(1, seed);
    auto rd = v.start(wire::opcode::read, 0, 4096);
    v.op(rd).target_incarnation = 1;
    v.end(rd);  // returns the world's model: incarnation 0's bytes
    auto r = check_data_integrity(v.h);
    if (seed == 0) {
      EXPECT_TRUE(r.passed()) << all(r);
      EXPECT_EQ(r.checked, 4096u);
    } else {
      EXPECT_TRUE(one_violation(r, "on server#1 [0, 4096)", 101, 0x1f00000001));
    }
  }
}

// A WRITE submitted to incarnation 0 that completed after incarnation 1
// began may have run on 1 (refreshed by name): its bytes are unknown there.
TEST(data_integrity, a_write_that_outlived_its_incarnation_is_unknown_in_the_next) {
  world w;
  auto wr = w.start(wire::opcode::write, 0, 4096, 11);
  w.register_region(1, 99);
  w.end(wr);  // ok: it ran on 0, or on 1 after a refresh
  auto rd = w.start(wire::opcode::read, 0, 8192);
  w.op(rd).target_incarnation = 1;
  w.end(rd);
  w.op(rd).data = pattern(region_size, 99);
  w.op(rd).data.resize(8192);
  put(w.op(rd).data, 0, pattern(4096, 11));  // it ran on incarnation 1
  auto r = check_data_integrity(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 4096u);          // only the bytes the WRITE never touched
  w.op(rd).data[5000] ^= std::byte{1};  // those are still checked
  EXPECT_FALSE(check_data_integrity(w.h).passed());
}

// A WRITE stamped for an incarnation whose region was recorded after it was
// submitted (a restart's start window) had no model at its submit. It was
// dropped without a trace, so the bytes it wrote read as a violation; it is
// unknown there instead.
TEST(data_integrity, a_write_submitted_before_its_incarnations_region_is_unknown_there) {
  world w;
  auto wr = w.start(wire::opcode::write, 0, 4096, 11);
  w.op(wr).target_incarnation = 1;
  w.register_region(1, 99);
  w.end(wr);  // ok: it ran on 1 after a refresh
  auto rd = w.start(wire::opcode::read, 0, 8192);
  w.op(rd).target_incarnation = 1;
  w.end(rd);
  w.op(rd).data = pattern(region_size, 99);
  w.op(rd).data.resize(8192);
  put(w.op(rd).data, 0, pattern(4096, 11));
  auto r = check_data_integrity(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 4096u);          // only the bytes the WRITE never touched
  w.op(rd).data[5000] ^= std::byte{1};  // those are still checked
  EXPECT_FALSE(check_data_integrity(w.h).passed());
  // A WRITE that did not execute leaves the model as it was.
  w.op(rd).data[5000] ^= std::byte{1};
  w.op(wr).outcome = status::connection_failed;
  EXPECT_FALSE(check_data_integrity(w.h).passed());
}

TEST(data_integrity, a_read_of_the_wrong_size) {
  auto w = clean_world();
  w.op(3).data.resize(10);
  EXPECT_TRUE(one_violation(check_data_integrity(w.h), "ok READ returned 10 bytes, expected 8192",
                            102, 0x1f00000002));
}

TEST(data_integrity, final_bytes_that_differ) {
  auto w = clean_world();
  w.h.finals[0].bytes[10] ^= std::byte{0x80};
  w.h.finals[0].bytes[20] ^= std::byte{0x80};
  auto r = check_data_integrity(w.h);
  EXPECT_TRUE(one_violation(r, "final bytes of region buf on server#0 hold", 0, 0));
  EXPECT_TRUE(mentions(r, "at offset 10, the model has")) << all(r);
  EXPECT_TRUE(mentions(r, "2 of 65536 compared bytes differ")) << all(r);
}

TEST(data_integrity, final_bytes_of_the_wrong_size) {
  auto w = clean_world();
  w.h.finals[0].bytes.resize(100);
  EXPECT_TRUE(one_violation(check_data_integrity(w.h),
                            "final bytes of region buf on server#0: 100 bytes read, the model "
                            "has 65536",
                            0, 0));
}

// An ok op must lie inside its region: an end past it, or a start past it
// (where `size - offset` would wrap), each on its own.
TEST(data_integrity, an_ok_op_outside_its_region) {
  for (auto opcode : {wire::opcode::read, wire::opcode::write}) {
    world w;
    auto id = opcode == wire::opcode::read ? w.read(60 * 1024, 4096) : w.write(60 * 1024, 4096, 11);
    EXPECT_TRUE(check_data_integrity(w.h).passed()) << all(check_data_integrity(w.h));
    std::string name = opcode == wire::opcode::read ? "READ" : "WRITE";
    w.op(id).offset = 62 * 1024;
    EXPECT_TRUE(one_violation(check_data_integrity(w.h),
                              name + " ok over [63488, 67584) of region buf on server#0, which "
                                     "holds 65536 bytes",
                              100, 0x1f00000000));
    w.op(id).offset = 70000;
    EXPECT_TRUE(one_violation(check_data_integrity(w.h), name + " ok over [70000, 74096)", 100,
                              0x1f00000000));
  }
  // An ambiguous WRITE past the end says nothing of the region.
  world w;
  auto wr = w.start(wire::opcode::write, 60 * 1024, 4096, 11);
  w.end(wr, status::ambiguous_write);
  w.op(wr).offset = 70000;
  EXPECT_TRUE(check_data_integrity(w.h).passed()) << all(check_data_integrity(w.h));
}

// Models are per region: a WRITE to region `other` leaves `buf` as it was.
TEST(data_integrity, a_write_to_another_region_is_not_seen) {
  world w;
  w.register_region(0, region_seed, "other", 0x5100);
  auto wr = w.start(wire::opcode::write, 0, 4096, 11);
  w.op(wr).region = "other";
  w.end(wr);  // the world keeps one model: buf's bytes now show the WRITE
  auto rd = w.read(0, 4096);
  EXPECT_TRUE(one_violation(check_data_integrity(w.h), "READ of region buf on server#0 [0, 4096)",
                            101, 0x1f00000001));
  w.op(rd).data = pattern(4096, region_seed);
  EXPECT_TRUE(check_data_integrity(w.h).passed()) << all(check_data_integrity(w.h));
}

// Only an ok READ's bytes are held to the model.
TEST(data_integrity, a_failed_read_is_not_compared) {
  auto w = clean_world();
  w.op(4).data.assign(1000, std::byte{0});
  EXPECT_TRUE(one_violation(check_data_integrity(w.h), "READ of region buf on server#0 [100, 1100)",
                            103, 0x1f00000004));
  w.op(4).outcome = status::timeout;
  EXPECT_TRUE(check_data_integrity(w.h).passed()) << all(check_data_integrity(w.h));
}

// Rule: a READ that submit() refused has no bytes to check, whatever its
// length: it never ran (the recorder gives it a completion seq and no data).
TEST(data_integrity, a_read_refused_at_submit_is_not_compared) {
  world w;
  auto rd = w.start(wire::opcode::read, 0, 4096);
  auto& op = w.op(rd);
  op.submit_failed = true;
  op.outcome = op.batch_status = status::busy;
  op.complete_seq = w.tick();
  auto r = check_data_integrity(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 0u);
}

// Rule: final bytes are held only to a model the history has: a region
// with no registration in that incarnation has nothing to compare.
TEST(data_integrity, final_bytes_of_a_region_with_no_model_are_not_compared) {
  auto w = clean_world();
  const auto checked = check_data_integrity(w.h).checked;
  auto other = w.h.finals[0];
  other.region = "other";  // never registered
  other.bytes.assign(100, std::byte{0xee});
  w.h.finals.push_back(other);
  other.region = "buf";
  other.incarnation = 1;  // the server never had a second incarnation
  w.h.finals.push_back(other);
  auto r = check_data_integrity(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, checked);
}

// 10 000 ops of 4 KiB-64 KiB, eight in flight, over a 4 MiB region: every
// READ byte is compared against the model, none skipped.
TEST(data_integrity, ten_thousand_ops_are_all_compared) {
  constexpr std::uint64_t slots = 8;
  constexpr std::uint64_t slot_bytes = 512 * 1024;
  world w;
  w.h.registrations[0].size = slots * slot_bytes;
  w.model.resize(slots * slot_bytes);
  fill_pattern(w.model.data(), w.model.size(), region_seed);
  std::mt19937_64 rng(5);
  std::vector<std::uint64_t> in_flight(slots, 0);
  for (std::uint64_t n = 0; n < 10'000; ++n) {
    auto slot = n % slots;
    if (in_flight[slot] != 0) w.end(in_flight[slot]);
    auto length = 4096 + rng() % (60 * 1024);
    auto offset = slot * slot_bytes + rng() % (slot_bytes - length);
    auto op = rng() % 2 == 0 ? wire::opcode::write : wire::opcode::read;
    in_flight[slot] = w.start(op, offset, length, n + 1);
  }
  for (auto id : in_flight) w.end(id);
  w.finish();
  // No time limit here (a loaded machine must not fail a test); the
  // checker's cost is measured by sim/bench/ten_thousand_ops.yaml and
  // docs/benchmarks.md. This prints it for a person reading the log.
  auto t0 = std::clock();
  auto r = check_data_integrity(w.h);
  auto took_ms = static_cast<double>(std::clock() - t0) * 1000.0 / CLOCKS_PER_SEC;
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_GT(r.checked, 100'000'000u);
  std::printf("data_integrity: %zu ops checked in %.0f ms of CPU\n", w.h.ops.size(), took_ms);
}

}  // namespace
}  // namespace faultlane::sim::test
