// GOAL (LogGOPSim) schedules: the real files in ../shared/data/schedules/goal are read and judged,
// mutants under tests/data/import/goal_*.goal are caught by the check their name says, and
// malformed input is an error with file:line:col.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "cli.hpp"
#include "import/import.hpp"
#include "import_util.hpp"
#include "util/error.hpp"

using namespace collv;

namespace {

// COLLV_SHARED overrides ../shared (a worktree has none beside it).
const std::string kGoal = (std::getenv("COLLV_SHARED") ? std::string(std::getenv("COLLV_SHARED"))
                                                       : COLLV_SOURCE_DIR + "/../shared") +
                          "/data/schedules/goal/";
const std::string kMutants = COLLV_SOURCE_DIR + "/tests/data/import/";

using test::failing;
using test::results;

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
  // As the all-reduce it is, every rank has an op that depends on every rank.
  CHECK(r["flow"].note.find("give --collective") != std::string::npos);
  judge_goal_flow(s, "allreduce", std::nullopt);
  CHECK(results(s)["flow"].verdict == Verdict::Pass);
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
  // A broadcast from rank 0; the leaves hear from rank 0 only, so it is no all-reduce.
  judge_goal_flow(s, "broadcast", 0u);
  CHECK(results(s)["flow"].verdict == Verdict::Pass);
  judge_goal_flow(s, "allreduce", std::nullopt);
  CHECK(results(s)["flow"].verdict == Verdict::Fail);
  judge_goal_flow(s, "", std::nullopt);
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
    judge_goal_flow(s, "allreduce", std::nullopt);
    auto r = results(s);
    CHECK(r["match"].verdict == Verdict::Pass);
    CHECK(r["deadlock"].verdict == Verdict::Pass);
    CHECK(r["flow"].verdict == Verdict::Fail);
    REQUIRE_FALSE(r["flow"].violations.empty());
    CHECK(r["flow"].violations[0].nodes == std::vector<NodeId>{7});
    CHECK(r["flow"].note.find("allreduce: every rank has an op") != std::string::npos);
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
      "rank 1 {\nl1: recv 4b from 0 tag 0\n// comment\nl2: send 4b to 0 tag 0\nl2 irequires "
      "l1\n}\n";
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

namespace {

// Rank r's ops for a 4-rank exchange in two rounds (partners r^1, then r^2): each round's send
// waits for the previous round's receive; `join` adds a calc that waits for both receives.
std::string recdoub4(bool join) {
  std::string t = "num_ranks 4\n";
  for (int r = 0; r < 4; ++r) {
    t += "rank " + std::to_string(r) + " {\n";
    t += "l1: send 8b to " + std::to_string(r ^ 1) + " tag 1\n";
    t += "l2: recv 8b from " + std::to_string(r ^ 1) + " tag 1\n";
    t += "l3: send 8b to " + std::to_string(r ^ 2) + " tag 2\n";
    t += "l4: recv 8b from " + std::to_string(r ^ 2) + " tag 2\n";
    t += "l3 requires l2\n";
    if (join) t += "l5: calc 1\nl5 requires l2\nl5 requires l4\n";
    t += "}\n";
  }
  return t;
}

// A binomial tree on 4 ranks rooted at `root` (relative rank v = r - root mod 4): a broadcast
// sends down the tree, a reduce sends up it.
std::string tree4(int root, bool reduce) {
  auto rel = [&](int v) { return std::to_string((v + root) % 4); };
  std::string t = "num_ranks 4\n";
  for (int v = 0; v < 4; ++v) {
    t += "rank " + rel(v) + " {\n";
    if (!reduce) {
      if (v == 0) t += "l1: send 8b to " + rel(2) + "\nl2: send 8b to " + rel(1) + "\n";
      if (v == 2)
        t += "l1: recv 8b from " + rel(0) + "\nl2: send 8b to " + rel(3) + "\nl2 requires l1\n";
      if (v == 1 || v == 3) t += "l1: recv 8b from " + rel(v - 1) + "\n";
    } else {
      if (v == 0) t += "l1: recv 8b from " + rel(1) + "\nl2: recv 8b from " + rel(2) + "\n";
      if (v == 2)
        t += "l1: recv 8b from " + rel(3) + "\nl2: send 8b to " + rel(0) + "\nl2 requires l1\n";
      if (v == 1 || v == 3) t += "l1: send 8b to " + rel(v - 1) + "\n";
    }
    t += "}\n";
  }
  return t;
}

CheckResult flow_of(const std::string& text, const std::string& coll,
                    std::optional<std::uint32_t> root) {
  ImportedSchedule s = import_goal(text, "x.goal");
  if (!coll.empty() || root) judge_goal_flow(s, coll, root);
  return results(s)["flow"];
}

}  // namespace

TEST_CASE("GOAL: /* */ block comments where txt2bin reads them", "[goal]") {
  const std::string body =
      "rank 0 {\nl1: send 8b to 1 tag 5\nl2: calc 100\nl2 requires l1\n}\n"
      "rank 1 {\nl1: recv 8b from 0 tag 5\n}\n";
  // Schedgen writes them on lines of their own, inside and outside rank blocks, and they may
  // span lines or sit between items.
  std::string ok = "num_ranks 2/* two */\n/* a\n   b */\n" + body;
  ok.insert(ok.find("l2: calc"), "/* Iallreduce begin */\n");
  ok.insert(ok.find("rank 1"), "/* x *//* y */  \n");
  ImportedSchedule s = import_goal(ok, "x.goal");
  CHECK(s.trace.transfers.size() == 1);
  CHECK(results(s)["flow"].verdict == Verdict::Pass);
  // Where an item goes on, txt2bin has no comment: an error at the comment.
  std::string mid = "num_ranks 2\n" + body;
  mid.insert(mid.find(" tag 5\n}"), " /* no */");
  CHECK(error_of(mid).find("x.goal:8:20: error: a `/*` comment where an item goes on") == 0);
  std::string trailing = "num_ranks 2\n" + body;
  trailing.insert(trailing.find("\nl2: calc"), " // no");
  CHECK(error_of(trailing).find("x.goal:3:24: error: a `//` comment") == 0);
  // Not closed: an error where it opened.
  CHECK(error_of("num_ranks 2\n" + body + "/* open\n")
            .find("x.goal:10:1: error: the `/*` comment "
                  "is not closed") == 0);
  // `#` is no GOAL comment.
  CHECK(error_of("num_ranks 2\n# hash\n" + body).find("x.goal:2:1: error: `#` is not GOAL") == 0);
}

TEST_CASE("GOAL: blanks where an item starts, as txt2bin reads them", "[goal]") {
  // txt2bin takes blanks where an item starts only before the line's end (it drops the
  // character after them): an indented item, a comment after `{ ` and an item after `*/ ` are
  // refused, at the item; blank-only lines and blanks before the line's end are read.
  auto file = [](const std::string& r0) {
    return "num_ranks 2\n" + r0 + "rank 1 {\nl1: recv 8b from 0\n}\n";
  };
  CHECK(error_of(file("rank 0 {\n  l1: send 8b to 1\n}\n"))
            .find("x.goal:3:3: error: blanks before `l1: send`") == 0);
  CHECK(error_of(file("rank 0 {\n\tl1: send 8b to 1\n}\n")).find("x.goal:3:2: error: blanks") == 0);
  CHECK(error_of(file("rank 0 { // r0\nl1: send 8b to 1\n}\n"))
            .find("x.goal:2:10: error: blanks before `// r0`") == 0);
  CHECK(error_of(file("rank 0 {\n/* c */ l1: send 8b to 1\n}\n"))
            .find("x.goal:3:9: error: blanks before `l1: send`") == 0);
  CHECK(error_of(file("rank 0 {\nl1: send 8b to 1\n  }\n")).find("x.goal:4:3: error: blanks") == 0);
  CHECK(error_of(" " + file("rank 0 {\nl1: send 8b to 1\n}\n")).find("x.goal:1:2: error") == 0);
  CHECK(error_of(file("rank 0 {\nl1: send 8b\rto 1\n}\n"))
            .find("x.goal:3:12: error: a carriage return") == 0);
  // What txt2bin accepts: blanks before the line's end (CR LF too), none before the comment.
  ImportedSchedule s =
      import_goal(file("rank 0 { \r\n  \n\t\nl1: send 8b to 1  \r\n} \n"), "x.goal");
  CHECK(s.trace.transfers.size() == 1);
  CHECK(import_goal(file("rank 0 {// r0\n/* c */l1: send 8b to 1\n}\n"), "x.goal")
            .trace.transfers.size() == 1);
}

TEST_CASE("GOAL: messages quote input with control bytes escaped and cut", "[goal]") {
  // A NUL after a peer rank (turn4-goal01): the message goes on past it, escaped.
  std::string nul = "num_ranks 2\nrank 0 {\nl1: send 8b to 1";
  nul += '\0';
  nul += "\n}\nrank 1 {\nl1: recv 8b from 0\n}\n";
  std::string e = error_of(nul);
  CHECK(e.find("x.goal:3:16: error: peer rank `1\\x00` is not a non-negative integer") == 0);
  CHECK(e.find('\0') == std::string::npos);
  // A long token is cut to a readable length.
  std::string big = "num_ranks 2\nrank 0 {\nl1: send 8b to " + std::string(5000, '7') + "x\n}\n";
  e = error_of(big);
  CHECK(e.find("x.goal:3:16: error: peer rank `7777") == 0);
  CHECK(e.size() < 200);
  CHECK(error_of("num_ranks 2\nrank 0 {\nl1: calc 1\nl1 requires l\x01\n}\n")
            .find("label `l\\x01` is not defined") != std::string::npos);
}

TEST_CASE("GOAL: ops as txt2bin reads them", "[goal]") {
  // An op needs no label; cpu and nic follow tag in that order.
  const char* ok =
      "num_ranks 2\nrank 0 {\nsend 8b to 1 tag 5 cpu 0 nic 1\ncalc 5 cpu 1\n}\n"
      "rank 1 {\nl_1: recv 8b from 0 tag 5 nic 0\n}\n";
  CHECK(import_goal(ok, "x.goal").trace.transfers.size() == 1);
  CHECK(error_of("num_ranks 2\nrank 0 {\nl1: send 8 to 1\n}\n")
            .find("x.goal:3:10: error: expected the size in bytes, `8b`") == 0);
  CHECK(error_of("num_ranks 2\nrank 0 {\nl1: send 8b to 1 nic 0 tag 5\n}\n")
            .find("x.goal:3:24: error: unexpected `tag` (end of line expected)") == 0);
  CHECK(error_of("num_ranks 2\nrank 0 {\nl1: calc 8 nic 0\n}\n")
            .find("x.goal:3:12: error: unexpected `nic`") == 0);
  CHECK(error_of("num_ranks 2\nrank 0 {\n1l: calc 8\n}\n").find("is not an identifier") !=
        std::string::npos);
}

TEST_CASE("GOAL flow follows the collective and its root", "[goal]") {
  // Broadcast from rank 2: rank 2 reaches every rank.
  std::string bcast = tree4(2, false);
  CHECK(flow_of(bcast, "broadcast", 2u).verdict == Verdict::Pass);
  CHECK(flow_of(bcast, "scatter", 2u).verdict == Verdict::Pass);
  CHECK(flow_of(bcast, "broadcast", 0u).verdict == Verdict::Fail);  // rank 0 reaches only rank 0
  CHECK(flow_of(bcast, "reduce", 2u).verdict == Verdict::Fail);     // nobody sends to rank 2
  // Reduce to rank 3: every rank reaches the root, which reaches nobody.
  std::string red = tree4(3, true);
  CHECK(flow_of(red, "reduce", 3u).verdict == Verdict::Pass);
  CHECK(flow_of(red, "gather", 3u).verdict == Verdict::Pass);
  CHECK(flow_of(red, "incast", 3u).verdict == Verdict::Pass);
  CHECK(flow_of(red, "reduce", 0u).verdict == Verdict::Fail);
  CHECK(flow_of(red, "broadcast", 3u).verdict == Verdict::Fail);
  CHECK(flow_of(red, "broadcast", 3u).violations[0].message.find("never depend on root 3") !=
        std::string::npos);
  // The default: some rank reaches every rank or every rank reaches some rank; -s fixes it.
  CHECK(flow_of(bcast, "", std::nullopt).verdict == Verdict::Pass);
  CHECK(flow_of(red, "", std::nullopt).verdict == Verdict::Pass);
  CHECK(flow_of(bcast, "", 2u).verdict == Verdict::Pass);
  CHECK(flow_of(bcast, "", 1u).verdict == Verdict::Fail);
  CHECK(flow_of(red, "", 3u).verdict == Verdict::Pass);
  CHECK(flow_of(red, "", 0u).verdict == Verdict::Fail);
  // All-reduce and barrier: every rank has one op that depends on every rank. Without the join
  // each rank hears every rank, but never in one op (Schedgen's dissemination pattern).
  std::string joined = recdoub4(true), split = recdoub4(false);
  for (const char* c : {"allreduce", "barrier", "allgather"}) {
    INFO(c);
    CHECK(flow_of(joined, c, std::nullopt).verdict == Verdict::Pass);
    CHECK(flow_of(split, c, std::nullopt).verdict == Verdict::Fail);
  }
  CHECK(flow_of(split, "alltoall", std::nullopt).verdict == Verdict::Pass);
  // An all-to-all needs every pair: the broadcast tree is not one.
  CHECK(flow_of(bcast, "alltoall", std::nullopt).verdict == Verdict::Fail);
  // Scan: every rank hears every lower rank (the split exchange reaches 0 -> 1 but the reduce
  // tree to rank 3 does not reach rank 1 from rank 0).
  CHECK(flow_of(joined, "scan", std::nullopt).verdict == Verdict::Pass);
  CHECK(flow_of(red, "scan", std::nullopt).verdict == Verdict::Fail);
  // What is asked is in the note; a name or root it does not know is an error.
  CHECK(flow_of(red, "reduce", 3u).note.find("reduce to root 3") != std::string::npos);
  CHECK(flow_of(red, "", std::nullopt).note.find("give --collective") != std::string::npos);
  ImportedSchedule s = import_goal(red, "x.goal");
  CHECK_THROWS_WITH(judge_goal_flow(s, "allfoo", std::nullopt), Catch::Contains("not 'allfoo'"));
  CHECK_THROWS_WITH(judge_goal_flow(s, "reduce", 4u), Catch::Contains("--source 4 is not a rank"));
}

TEST_CASE("GOAL through verify: --collective, -s, and data reported not checked", "[goal][cli]") {
  std::string f = collv::test::unique_temp("collv_goal_flow") + ".goal";
  {
    std::ofstream out(f);
    out << tree4(3, true);
  }
  std::string out;
  CHECK(collv::test::run_cli("verify '" + f + "' --collective reduce -s 3", out) == 0);
  CHECK(out.find("; 1 of the passes judged no data") != std::string::npos);
  CHECK(collv::test::run_cli("verify '" + f + "' --collective reduce", out) == 1);  // root 0
  CHECK(collv::test::run_cli("verify '" + f + "' --collective broadcast -s 3", out) == 1);
  CHECK(collv::test::run_cli("verify '" + f + "' -s 3", out) == 0);
  CHECK(collv::test::run_cli("verify '" + f + "' -s 1", out) == 1);
  CHECK(collv::test::run_cli("verify '" + f + "' --collective allfoo", out) == 2);
  CHECK(collv::test::run_cli("verify '" + f + "' --json -", out) == 0);
  CHECK(out.find("\"data_checked\": false") != std::string::npos);
  std::filesystem::remove(f);
}
