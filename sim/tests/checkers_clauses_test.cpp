// Every checker clause docs/scenarios.md lists ("Clause by clause") has
// tests that break that clause alone: this table names them. A clause id
// in the docs with no row here fails, so does a row the docs no longer
// list, and so does a test named here that this binary does not have.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "faultlane/sim/checkers.hpp"

namespace faultlane::sim {
namespace {

// clause id -> the tests ("suite.name") that break it alone.
const std::map<std::string, std::vector<std::string>> clause_tests = {
    {"exactly_once.callback_count", {"exactly_once.callback_twice_or_never"}},
    {"exactly_once.completed", {"exactly_once.never_completed"}},
    {"exactly_once.read_not_ambiguous", {"exactly_once.read_ended_ambiguous_write"}},
    {"exactly_once.batch_status", {"exactly_once.batch_status_differs_from_outcome"}},
    {"exactly_once.submitted_once",
     {"exactly_once.task_submitted_missing_or_twice",
      "exactly_once.a_submit_elsewhere_is_another_task"}},
    {"exactly_once.finalized_once", {"exactly_once.task_finalized_missing_or_twice"}},
    {"exactly_once.finalized_outcome", {"exactly_once.finalized_outcome_differs"}},
    {"exactly_once.no_stray_finalize",
     {"exactly_once.finalize_of_a_task_no_op_has",
      "exactly_once.a_finalize_elsewhere_is_another_task"}},

    {"data_integrity.read_bytes",
     {"data_integrity.a_read_returns_a_wrong_byte",
      "data_integrity.an_ok_write_must_be_visible_to_a_later_read",
      "data_integrity.a_failed_read_is_not_compared",
      "data_integrity.a_read_refused_at_submit_is_not_compared"}},
    {"data_integrity.read_length", {"data_integrity.a_read_of_the_wrong_size"}},
    {"data_integrity.in_bounds", {"data_integrity.an_ok_op_outside_its_region"}},
    {"data_integrity.rejected_write_unchanged",
     {"data_integrity.a_rejected_write_changed_nothing"}},
    {"data_integrity.ambiguous_unknown",
     {"data_integrity.an_ambiguous_write_is_unknown_until_written_again",
      "data_integrity.a_write_that_never_completed_taints_every_later_read",
      "data_integrity.a_write_that_never_completed_leaves_its_final_bytes_unknown"}},
    {"data_integrity.concurrent_unknown",
     {"data_integrity.a_write_concurrent_with_a_read_taints_only_the_shared_bytes",
      "data_integrity.a_write_that_completed_during_a_read_taints_it",
      "data_integrity.overlapping_concurrent_writes_leave_their_overlap_unknown"}},
    {"data_integrity.per_region", {"data_integrity.a_write_to_another_region_is_not_seen"}},
    {"data_integrity.per_incarnation",
     {"data_integrity.a_new_incarnation_refills_or_carries_over",
      "data_integrity.a_write_that_outlived_its_incarnation_is_unknown_in_the_next",
      "data_integrity.no_check_when_the_target_incarnation_ended_during_the_read"}},
    {"data_integrity.final_bytes",
     {"data_integrity.final_bytes_that_differ",
      "data_integrity.final_bytes_of_a_region_with_no_model_are_not_compared"}},
    {"data_integrity.final_length", {"data_integrity.final_bytes_of_the_wrong_size"}},

    {"no_replay.target_executes_once",
     {"no_replay.target_executed_a_request_id_twice",
      "no_replay.per_target_rule_holds_without_an_op",
      "no_replay.a_refused_then_executed_request_ran_once"}},
    {"no_replay.resend_after_refusal",
     {"no_replay.write_dispatched_again_without_a_rejection",
      "no_replay.write_dispatched_again_after_a_rejection_is_fine",
      "no_replay.a_refusal_of_the_later_request_does_not_count"}},
    {"no_replay.definite_failure_not_executed",
     {"no_replay.a_definite_failure_the_target_executed"}},
    {"no_replay.op_executed_once",
     {"no_replay.per_op_rule_across_target_incarnations",
      "no_replay.one_op_executed_under_two_request_ids"}},
    {"no_replay.tap_sent_once",
     {"no_replay.tap_saw_a_write_sent_twice_on_one_link", "no_replay.tap_saw_a_write_on_two_links",
      "no_replay.the_tap_rule_is_per_initiator"}},

    {"slice_coverage.dispatch_in_plan",
     {"slice_coverage.a_dispatch_off_the_plan",
      "slice_coverage.a_dispatch_off_the_plan_in_one_field",
      "slice_coverage.an_unsliced_read_goes_whole_on_whichever_rail_its_lane_has",
      "slice_coverage.rails_come_from_the_initiator_incarnation"}},
    {"slice_coverage.dispatch_complete", {"slice_coverage.an_ok_read_missing_a_planned_slice"}},
    {"slice_coverage.tap_in_plan",
     {"slice_coverage.a_tapped_frame_off_the_plan",
      "slice_coverage.a_tapped_frame_of_the_wrong_length",
      "slice_coverage.a_frame_on_the_wrong_rail",
      "slice_coverage.an_unsliced_read_is_looked_for_on_its_own_rail"}},
    {"slice_coverage.tap_complete",
     {"slice_coverage.an_ok_read_whose_slice_the_tap_never_saw",
      "slice_coverage.an_unsliced_read_is_looked_for_on_its_own_rail"}},

    {"stale_rejection.registered",
     {"stale_rejection.never_registered", "stale_rejection.id_of_another_transport"}},
    {"stale_rejection.incarnation", {"stale_rejection.id_of_another_incarnation"}},
    {"stale_rejection.after_register", {"stale_rejection.before_registration"}},
    {"stale_rejection.before_unregister",
     {"stale_rejection.after_unregister",
      "stale_rejection.unregistered_exactly_at_the_event_is_stale"}},

    {"bounds.admission_tasks",
     {"bounds.admission_tasks_over_the_limit", "bounds.limits_are_the_reporting_incarnation_s"}},
    {"bounds.admission_bytes", {"bounds.admission_bytes_over_the_limit"}},
    {"bounds.stats_sessions",
     {"bounds.stats_sessions_over_max_connections",
      "bounds.limits_are_the_reporting_incarnation_s"}},
    {"bounds.stats_tasks", {"bounds.stats_admission_over_the_limits"}},
    {"bounds.stats_bytes", {"bounds.stats_admission_over_the_limits"}},
    {"bounds.lease_underflow",
     {"bounds.lease_released_without_acquire", "bounds.leases_are_counted_per_incarnation"}},
    {"bounds.leases_returned",
     {"bounds.lease_left_after_a_clean_shutdown", "bounds.leases_are_counted_per_incarnation"}},
    {"bounds.relay_active_faults",
     {"bounds.a_relay_over_its_active_fault_cap",
      "bounds.a_relay_over_its_cap_names_no_point_in_the_history"}},

    {"drained_shutdown.within_bound", {"drained_shutdown.took_longer_than_its_bound"}},
    {"drained_shutdown.result",
     {"drained_shutdown.result_not_ok",
      "drained_shutdown.runtime_failed_needs_the_stats_to_say_so"}},
    {"drained_shutdown.gauges_zero", {"drained_shutdown.every_gauge_must_be_zero"}},
    {"drained_shutdown.tasks_balanced", {"drained_shutdown.submitted_and_completed_must_agree"}},
    {"drained_shutdown.settled_before",
     {"drained_shutdown.op_settled_after_shutdown_returned",
      "drained_shutdown.only_its_own_tasks"}},
    {"drained_shutdown.no_finalize_after",
     {"drained_shutdown.task_finalized_after_shutdown_returned",
      "drained_shutdown.only_its_own_tasks"}},

    {"liveness.ran_work", {"liveness.a_phase_with_no_ops"}},
    {"liveness.submitted", {"liveness.an_op_submit_refused"}},
    {"liveness.completed", {"liveness.an_op_that_never_completed"}},
    {"liveness.ok", {"liveness.an_op_that_failed"}},
    {"liveness.deadline", {"liveness.an_op_past_the_deadline"}},

    {"expectations.allow",
     {"expectations.an_outcome_the_stream_does_not_allow",
      "expectations.a_refused_submit_counts_with_its_outcome",
      "expectations.liveness_ops_are_the_liveness_checker_s"}},
    {"expectations.counts",
     {"expectations.counts_out_of_range", "expectations.a_status_count_counts_only_that_status"}},
    {"expectations.faults", {"expectations.fault_counts_out_of_range"}},
    {"expectations.declared_fired",
     {"expectations.a_declared_fault_that_never_fired",
      "expectations.a_declared_fault_fires_on_its_own_link",
      "expectations.a_fault_added_by_an_event_must_fire_too"}},
    {"expectations.failpoint_fired", {"expectations.an_armed_failpoint_that_never_fired"}},
    {"expectations.stats",
     {"expectations.stats_out_of_range_or_unknown", "expectations.stats_are_the_last_snapshot"}},
    {"expectations.control_allow", {"callers.an_outcome_the_caller_does_not_allow"}},
    {"expectations.control",
     {"callers.each_measure_out_of_range_on_its_own", "callers.a_p99_bound_names_what_it_saw"}},
};

// The clause ids of docs/scenarios.md: the first cell of each table row
// under "#### Clause by clause", up to the next section.
std::vector<std::string> documented_clauses() {
  std::ifstream doc(FAULTLANE_SOURCE_DIR "/docs/scenarios.md");
  EXPECT_TRUE(doc.good()) << "docs/scenarios.md not found";
  std::vector<std::string> out;
  bool inside = false;
  for (std::string line; std::getline(doc, line);) {
    if (line.starts_with("#")) inside = line == "#### Clause by clause";
    if (!inside || !line.starts_with("| `")) continue;
    auto end = line.find('`', 3);
    if (end != std::string::npos) out.push_back(line.substr(3, end - 3));
  }
  return out;
}

std::set<std::string> tests_in_this_binary() {
  std::set<std::string> out;
  const auto& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const auto& suite = *unit.GetTestSuite(i);
    for (int j = 0; j < suite.total_test_count(); ++j) {
      out.insert(std::string(suite.name()) + "." + suite.GetTestInfo(j)->name());
    }
  }
  return out;
}

TEST(checker_clauses, every_documented_clause_has_tests) {
  auto documented = documented_clauses();
  ASSERT_GT(documented.size(), 40u) << "the clause tables of docs/scenarios.md were not found";
  std::set<std::string> seen;
  for (const auto& id : documented) {
    EXPECT_TRUE(seen.insert(id).second) << id << " is listed twice";
    EXPECT_EQ(clause_tests.count(id), 1u) << id << " has no tests in clause_tests";
  }
  for (const auto& [id, tests] : clause_tests) {
    EXPECT_EQ(seen.count(id), 1u) << id << " is not a clause docs/scenarios.md lists";
  }
}

TEST(checker_clauses, every_clause_belongs_to_a_checker_and_every_checker_has_clauses) {
  std::set<std::string> checkers(std::begin(checker_names), std::end(checker_names));
  checkers.insert("expectations");
  std::set<std::string> with_clauses;
  for (const auto& [id, tests] : clause_tests) {
    auto checker = id.substr(0, id.find('.'));
    EXPECT_EQ(checkers.count(checker), 1u) << id << ": " << checker << " is not a checker";
    with_clauses.insert(checker);
  }
  EXPECT_EQ(with_clauses, checkers);
}

TEST(checker_clauses, every_test_named_exists) {
  const auto have = tests_in_this_binary();
  for (const auto& [id, tests] : clause_tests) {
    EXPECT_FALSE(tests.empty()) << id;
    for (const auto& t : tests) EXPECT_EQ(have.count(t), 1u) << id << ": no test " << t;
  }
}

}  // namespace
}  // namespace faultlane::sim
