// GOAL (LogGOPSim) schedules: the real files in ../shared/data/schedules/goal are read and judged,
// mutants under tests/data/import/goal_*.goal are caught by the check their name says, and
// malformed input is an error with file:line:col.
#include <map>
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "import/import.hpp"
#include "util/error.hpp"

using namespace collv;

namespace {

const std::string kGoal = COLLV_SOURCE_DIR "/../shared/data/schedules/goal/";
const std::string kMutants = COLLV_SOURCE_DIR "/tests/data/import/";

std::map<std::string, CheckResult> results(const ImportedSchedule& s) {
  std::map<std::string, CheckResult> out;
  for (const auto& r : check_imported(s, CheckOptions{})) out[r.name] = r;
  return out;
}

std::set<std::string> failing(const ImportedSchedule& s) {
  std::set<std::string> out;
  for (const auto& r : check_imported(s, CheckOptions{}))
    if (r.verdict == Verdict::Fail) out.insert(r.name);
  return out;
}

std::string error_of(const std::string& text) {
  try {
    import_goal(text, "x.goal");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("GOAL: the recursive-doubling allreduce of schedgen2 passes", "[goal]") {
  ImportedSchedule s = import_schedule(kGoal + "schedgen2_allreduce_recdoub_8.goal");
  REQUIRE(s.format == ScheduleFormat::Goal);
  CHECK_FALSE(s.carries_data);
  const Trace& t = s.trace;
  CHECK(t.topology.num_processors() == 8);
  // 8 ranks x 6 sends, every one matched.
  CHECK(t.transfers.size() == 48);
  // Three rounds before the calc, three after: six steps, 8 transfers in each.
  CHECK(t.steps == 6);
  for (std::uint32_t st = 1; st <= 6; ++st) CHECK(t.per_step[st - 1].transfers == 8);
  // The first step pairs 0<->1 (tag 42001), the fourth 0<->4 again after the calc.
  for (const Transfer& x : t.transfers)
    if (x.src == 0 && x.step == 1) CHECK(x.dst == 1);
  for (const Transfer& x : t.transfers)
    if (x.src == 0 && x.step == 4) CHECK(x.dst == 4);
  auto r = results(s);
  CHECK(r["match"].verdict == Verdict::Pass);
  CHECK(r["deadlock"].verdict == Verdict::Pass);
  CHECK(r["single-port"].verdict == Verdict::Pass);
  CHECK(r["flow"].verdict == Verdict::Pass);
  CHECK(r["flow"].note.find("also all-to-all") != std::string::npos);
  CHECK(r["postcondition"].verdict == Verdict::NotChecked);
  CHECK(r["postcondition"].note.find("sizes, not data") != std::string::npos);
  CHECK(failing(s).empty());
}

TEST_CASE("GOAL: LogGOPSim's binary tree: its ports serialize rank 0's sends", "[goal]") {
  ImportedSchedule s = import_schedule(kGoal + "loggopsim_binary_tree_16.goal");
  const Trace& t = s.trace;
  CHECK(t.transfers.size() == 15);
  // Rank 0's four sends do not wait for each other, but its send port carries one per step: they
  // take steps 1..4 (a binomial broadcast of 16 ranks in log2 16 = 4 steps).
  CHECK(t.steps == 4);
  std::set<std::uint32_t> root_steps;
  for (const Transfer& x : t.transfers)
    if (x.src == 0) root_steps.insert(x.step);
  CHECK(root_steps == std::set<std::uint32_t>{1, 2, 3, 4});
  auto r = results(s);
  CHECK(r["match"].verdict == Verdict::Pass);
  CHECK(r["deadlock"].verdict == Verdict::Pass);
  CHECK(r["flow"].verdict == Verdict::Pass);
  // A broadcast: the leaves hear from rank 0 only, so it is not all-to-all.
  CHECK(r["flow"].note.find("not all-to-all: 0 of 16") != std::string::npos);
  CHECK(r["postcondition"].verdict == Verdict::NotChecked);
  CHECK(failing(s).empty());
}

TEST_CASE("GOAL mutants are caught by the check their name says", "[goal]") {
  SECTION("a missing receive: match") {
    ImportedSchedule s = import_schedule(kMutants + "goal_recdoub_missing_recv.goal");
    auto r = results(s);
    CHECK(r["match"].verdict == Verdict::Fail);
    REQUIRE_FALSE(r["match"].violations.empty());
    const std::string& m = r["match"].violations[0].message;
    CHECK(m.find("rank 0 l3 (send 256b to 2 tag 43001) has no matching receive") !=
          std::string::npos);
    CHECK(m.find(".goal:6:1: rank 0 l3") != std::string::npos);  // file:line:col of l3
    CHECK(r["deadlock"].verdict == Verdict::Pass);
  }
  SECTION("a requires cycle: deadlock") {
    ImportedSchedule s = import_schedule(kMutants + "goal_tree_requires_cycle.goal");
    auto r = results(s);
    CHECK(r["deadlock"].verdict == Verdict::Fail);
    REQUIRE_FALSE(r["deadlock"].violations.empty());
    const std::string& m = r["deadlock"].violations[0].message;
    CHECK(m.find("rank 1 l1 (recv") != std::string::npos);
    CHECK(m.find("rank 1 l4 (send") != std::string::npos);
    CHECK(r["flow"].verdict == Verdict::NotChecked);
    // Rank 1's subtree never gets its message.
    CHECK(s.trace.transfers.size() < 15);
  }
  SECTION("rank 7 cut off from the allreduce: flow") {
    ImportedSchedule s = import_schedule(kMutants + "goal_recdoub_rank7_cut_off.goal");
    auto r = results(s);
    CHECK(r["match"].verdict == Verdict::Pass);
    CHECK(r["deadlock"].verdict == Verdict::Pass);
    CHECK(r["flow"].verdict == Verdict::Fail);
    REQUIRE_FALSE(r["flow"].violations.empty());
    CHECK(r["flow"].violations[0].nodes == std::vector<NodeId>{7});
    CHECK(r["flow"].note.find("not all-to-all") != std::string::npos);
  }
}

TEST_CASE("GOAL: a receive waiting for a send that comes after it deadlocks", "[goal]") {
  // Both ranks receive before they send: each recv waits for a send that requires it.
  const char* text =
      "num_ranks 2\n"
      "rank 0 {\nl1: recv 4b from 1 tag 0\nl2: send 4b to 1 tag 0\nl2 requires l1\n}\n"
      "rank 1 {\nl1: recv 4b from 0 tag 0\nl2: send 4b to 0 tag 0\nl2 requires l1\n}\n";
  auto r = results(import_goal(text, "x.goal"));
  CHECK(r["deadlock"].verdict == Verdict::Fail);
  CHECK(r["match"].verdict == Verdict::Pass);
  // Sending first is fine (eager sends), and irequires lets the send start with the receive.
  const char* ok =
      "num_ranks 2\n"
      "rank 0 {\nl1: recv 4b from 1 tag 0\nl2: send 4b to 1 tag 0\nl2 irequires l1\n}\n"
      "rank 1 {\nl1: recv 4b from 0 tag 0 // comment\nl2: send 4b to 0 tag 0\nl2 irequires l1\n}\n"
      "# trailing comment\n";
  ImportedSchedule s = import_goal(ok, "x.goal");
  CHECK(failing(s).empty());
  CHECK(s.trace.steps == 1);
}

TEST_CASE("GOAL: steps follow requires and irequires", "[goal]") {
  const char* text =
      "num_ranks 3\n"
      "rank 0 {\nl1: send 8b to 1 tag 0\nl2: send 8b to 2 tag 0\nl2 requires l1\n}\n"
      "rank 1 {\nl1: recv 8b from 0 tag 0\nl2: calc 100\nl3: send 8b to 2 tag 1\n"
      "l2 requires l1\nl3 requires l2\n}\n"
      "rank 2 {\nl1: recv 8b from 0 tag 0\nl2: recv 8b from 1 tag 1\n}\n";
  ImportedSchedule s = import_goal(text, "x.goal");
  const Trace& t = s.trace;
  REQUIRE(t.transfers.size() == 3);
  std::map<std::pair<NodeId, NodeId>, std::uint32_t> step;
  for (const Transfer& x : t.transfers) step[{x.src, x.dst}] = x.step;
  CHECK(step[{0, 1}] == 1);
  CHECK(step[{0, 2}] == 2);  // after the first send ends
  // 1 -> 2 could go in step 2 (after the recv in step 1 and the calc, which takes no step), but
  // rank 2's receive port already takes 0 -> 2 then: step 3.
  CHECK(step[{1, 2}] == 3);
  CHECK(failing(s).empty());
}

TEST_CASE("GOAL: size mismatch and an unmatched receive are match violations", "[goal]") {
  const char* text =
      "num_ranks 2\n"
      "rank 0 {\nl1: send 8b to 1 tag 0\n}\n"
      "rank 1 {\nl1: recv 4b from 0 tag 0\nl2: recv 4b from 0 tag 5\n}\n";
  auto r = results(import_goal(text, "x.goal"));
  REQUIRE(r["match"].verdict == Verdict::Fail);
  CHECK(r["match"].violation_count == 2);
  std::string all;
  for (const auto& v : r["match"].violations) all += v.message + "\n";
  CHECK(all.find("receives 4b but its send l1 (line 3) sends 8b") != std::string::npos);
  CHECK(all.find("x.goal:7:1: rank 1 l2 (recv 4b from 0 tag 5) has no matching send") !=
        std::string::npos);
}

TEST_CASE("GOAL: malformed input is an error with file:line:col", "[goal]") {
  CHECK(error_of("rank 0 {\n}\n").find("x.goal:1:1: error: a GOAL schedule starts with") == 0);
  CHECK(error_of("num_ranks 0\n").find("x.goal:1:11: error: num_ranks 0 is outside") == 0);
  CHECK(error_of("num_ranks 99999999999\n").find("x.goal:1:11: error: num_ranks") == 0);
  CHECK(error_of("num_ranks 2\nrank 2 {\n}\n").find("x.goal:2:6: error: rank 2 is outside") == 0);
  CHECK(error_of("num_ranks 2\nrank 0 {\nl1: send 4b to 5 tag 0\n}\n")
            .find("x.goal:3:16: error: rank 5 is outside") == 0);
  CHECK(error_of("num_ranks 2\nrank 0 {\nl1: send 4b to 0\n}\n").find("names itself") !=
        std::string::npos);
  CHECK(error_of("num_ranks 2\nrank 0 {\nl1: put 4b to 1\n}\n")
            .find("x.goal:3:5: error: unknown op `put`") == 0);
  CHECK(error_of("num_ranks 2\nrank 0 {\nl1: calc 1\nl1 requires l9\n}\n")
            .find("x.goal:4:13: error: label `l9` is not defined") == 0);
  CHECK(error_of("num_ranks 2\nrank 0 {\nl1: calc 1\nl1: calc 2\n}\n").find("defined twice") !=
        std::string::npos);
  CHECK(error_of("num_ranks 2\nrank 0 {\nl1: send xb to 1\n}\n").find("not a non-negative") !=
        std::string::npos);
  CHECK(error_of("num_ranks 2\nrank 0 {\nl1: calc 1\n").find("is not closed") != std::string::npos);
  CHECK(error_of("num_ranks 2\nrank 0 {\n}\nrank 0 {\n}\n").find("defined twice") !=
        std::string::npos);
  CHECK(error_of("").find("no `num_ranks N` line") != std::string::npos);
}
