// Tests of what the expectations checker says of `control:` callers: the
// summary (nearest-rank percentiles on both sides of a rank boundary,
// distinct incarnations from ok describes only), outcomes a caller does not
// allow, and each expect.control measure out of range on its own.
#include <gtest/gtest.h>

#include "checkers_test_world.hpp"

namespace faultlane::sim::test {
namespace {

scenario callers_scenario() {
  scenario s;
  s.name = "callers";
  s.transports = {transport_spec{.name = "server"}};
  caller_spec ping;
  ping.name = "pinger";
  ping.target = "server";
  ping.allow = {status::ok, status::timeout};
  caller_spec looks;
  looks.name = "looks";
  looks.target = "server";
  looks.method = control_method::describe;
  looks.allow = {status::ok, status::connection_failed};
  s.control = {ping, looks};
  return s;
}

// Call k starts at (k + 1) ms.
void add(history& h, std::string caller, std::uint64_t latency_us, status outcome = status::ok,
         std::uint64_t incarnation = 0) {
  const std::uint64_t start_us = 1000 * (h.calls.size() + 1);
  h.calls.push_back(call_record{.caller = std::move(caller),
                                .start_us = start_us,
                                .end_us = start_us + latency_us,
                                .outcome = outcome,
                                .incarnation = incarnation});
}

// 100 pings of 1..100 us, the slowest of them timed out, and four
// describes over two incarnations, one of them failed with a third
// incarnation that must not count.
history callers_history() {
  history h;
  for (std::uint64_t us = 100; us >= 1; --us) {
    add(h, "pinger", us, us == 100 ? status::timeout : status::ok);
  }
  add(h, "looks", 500, status::ok, 7);
  add(h, "looks", 700, status::ok, 7);
  add(h, "looks", 900, status::connection_failed, 9);
  add(h, "looks", 300, status::ok, 8);
  h.calls[100].listed = 3;
  h.calls[102].listed = 9;  // failed: not counted
  return h;
}

TEST(callers, the_summary_takes_every_call_and_ranks_to_the_nearest) {
  const auto sums = summarize_callers(callers_scenario(), callers_history());
  ASSERT_EQ(sums.size(), 2u);
  EXPECT_EQ(sums[0].name, "pinger");
  EXPECT_EQ(sums[0].calls, 100u);
  EXPECT_EQ(sums[0].p50_us, 50u);
  EXPECT_EQ(sums[0].p99_us, 99u);
  EXPECT_EQ(sums[0].max_us, 100u);
  EXPECT_EQ(sums[0].by_status.at(status::ok), 99u);
  EXPECT_EQ(sums[0].by_status.at(status::timeout), 1u);
  EXPECT_EQ(sums[1].calls, 4u);
  EXPECT_EQ(sums[1].p50_us, 500u);      // 300 500 | 700 900
  EXPECT_EQ(sums[1].p99_us, 900u);      // a failed call's latency counts too
  EXPECT_EQ(sums[1].incarnations, 2u);  // 7 and 8; 9 only failed
  EXPECT_EQ(sums[1].by_status.at(status::connection_failed), 1u);
  EXPECT_EQ(describe(sums[1]),
            "looks (describe): 4 calls: 3 ok, 1 connection_failed; p50 0.500 ms, p99 0.900 ms, "
            "max 0.900 ms; 3 listed; 2 incarnations");
}

TEST(callers, p99_moves_to_the_last_call_one_past_a_hundred) {
  auto h = callers_history();
  add(h, "pinger", 5000);  // 101 calls: rank ceil(99.99) = 100
  auto sums = summarize_callers(callers_scenario(), h);
  EXPECT_EQ(sums[0].p99_us, 100u);
  EXPECT_EQ(sums[0].max_us, 5000u);
  add(h, "pinger", 6000);  // 102: rank ceil(100.98) = 101
  sums = summarize_callers(callers_scenario(), h);
  EXPECT_EQ(sums[0].p99_us, 5000u);
  // 160 calls: p99 is rank ceil(158.4) = 159, where rounding would give 158.
  h.calls.clear();
  for (std::uint64_t us = 1; us <= 160; ++us) add(h, "pinger", us);
  sums = summarize_callers(callers_scenario(), h);
  EXPECT_EQ(sums[0].p99_us, 159u);
  EXPECT_EQ(sums[0].p50_us, 80u);
  h.calls.clear();
  add(h, "pinger", 42);
  sums = summarize_callers(callers_scenario(), h);
  EXPECT_EQ(sums[0].p50_us, 42u);
  EXPECT_EQ(sums[0].p99_us, 42u);
  EXPECT_EQ(sums[1].calls, 0u);
  EXPECT_EQ(sums[1].max_us, 0u);
}

// Nearest rank at the small edge: of two calls, half are at or below the
// faster one, so it is the p50; the p99 is the slower.
TEST(callers, of_two_calls_the_p50_is_the_faster) {
  history h;
  add(h, "pinger", 30);
  add(h, "pinger", 10);
  add(h, "looks", 70);
  auto sums = summarize_callers(callers_scenario(), h);
  EXPECT_EQ(sums[0].calls, 2u);
  EXPECT_EQ(sums[0].p50_us, 10u);
  EXPECT_EQ(sums[0].p99_us, 30u);
  EXPECT_EQ(sums[0].max_us, 30u);
  EXPECT_EQ(sums[1].p50_us, 70u);  // one call is every percentile
  EXPECT_EQ(sums[1].p99_us, 70u);
  add(h, "pinger", 20);  // three: rank ceil(1.5) = 2
  sums = summarize_callers(callers_scenario(), h);
  EXPECT_EQ(sums[0].p50_us, 20u);
}

// Rule: a summary lists registrations for describe and list_registrations
// callers only, and incarnations for describe only; a caller with no calls
// has 0 for every latency; a call of no caller of the scenario is in no
// summary and checked by nobody; incarnation 0 (none seen) is not counted.
TEST(callers, a_summary_says_what_its_method_can_see) {
  auto s = callers_scenario();
  caller_spec lister;
  lister.name = "lister";
  lister.target = "server";
  lister.method = control_method::list_registrations;
  lister.allow = {status::ok};
  s.control.push_back(lister);
  history h;
  add(h, "lister", 40);
  h.calls[0].listed = 5;
  add(h, "stranger", 10, status::busy);
  add(h, "looks", 20, status::ok, 0);  // a describe that saw no incarnation
  const auto sums = summarize_callers(s, h);
  ASSERT_EQ(sums.size(), 3u);
  EXPECT_EQ(sums[1].incarnations, 0u);
  EXPECT_EQ(sums[0].incarnations, 0u);
  EXPECT_EQ(describe(sums[0]), "pinger (ping): 0 calls; p50 0.000 ms, p99 0.000 ms, max 0.000 ms");
  EXPECT_EQ(describe(sums[2]),
            "lister (list_registrations): 1 calls: 1 ok; p50 0.040 ms, p99 0.040 ms, "
            "max 0.040 ms; 5 listed");
  const auto r = check_expectations(s, h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 2u);
}

TEST(callers, clean_calls_pass_and_each_is_checked) {
  auto r = check_expectations(callers_scenario(), callers_history());
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 104u);
}

TEST(callers, an_outcome_the_caller_does_not_allow) {
  auto s = callers_scenario();
  auto h = callers_history();
  h.calls[7].outcome = status::busy;
  h.calls[7].message = "queue full";
  EXPECT_TRUE(one_violation(check_expectations(s, h),
                            "caller pinger (client 0): ping at 8000 us ended busy after 93 us "
                            "(queue full), which the caller does not allow",
                            0, 0));
  s.control[0].allow.push_back(status::busy);
  EXPECT_TRUE(check_expectations(s, h).passed());
}

TEST(callers, each_measure_out_of_range_on_its_own) {
  const auto h = callers_history();
  const std::pair<std::string, count_range> in_range[] = {{"pinger.ok", {99, 99}},
                                                          {"pinger.done", {100, 100}},
                                                          {"pinger.timeout", {1, 1}},
                                                          {"pinger.busy", {0, 0}},
                                                          {"pinger.p50_us", {50, 50}},
                                                          {"pinger.p99_us", {0, 99}},
                                                          {"pinger.max_us", {100, 100}},
                                                          {"looks.incarnations", {2, 2}},
                                                          {"looks.connection_failed", {1, 1}},
                                                          {"looks.listed", {3, 3}}};
  for (const auto& [key, range] : in_range) {
    SCOPED_TRACE(key);
    auto s = callers_scenario();
    s.expect.control[key] = range;
    EXPECT_TRUE(check_expectations(s, h).passed()) << all(check_expectations(s, h));
    // One past the value on the side the range closes.
    s.expect.control[key] =
        range.max == 0 ? count_range{1, UINT64_MAX} : count_range{range.max + 1, UINT64_MAX};
    EXPECT_TRUE(one_violation(check_expectations(s, h), "expect.control " + key + ": ", 0, 0));
    if (range.min == 0) continue;
    s.expect.control[key] = {0, range.min - 1};
    EXPECT_TRUE(one_violation(check_expectations(s, h), "expect.control " + key + ": ", 0, 0));
  }
}

TEST(callers, a_p99_bound_names_what_it_saw) {
  auto s = callers_scenario();
  s.expect.control["pinger.p99_us"] = {0, 49};
  EXPECT_TRUE(one_violation(check_expectations(s, callers_history()),
                            "expect.control pinger.p99_us: 99, expected <=49 (pinger (ping): 100 "
                            "calls: 99 ok, 1 timeout; p50 0.050 ms, p99 0.099 ms, max 0.100 ms)",
                            0, 0));
}

}  // namespace
}  // namespace faultlane::sim::test
