// Schedgen2's recursive-doubling all-reduce (LogGOPSim's GOAL generator) judged as an all-reduce:
// its files fail `flow` from 16 ranks on, and rightly (docs/formats.md, "Schedgen2's recursive
// doubling"): a send waits for the previous receive only and a receive for nothing before the
// calc, so what a step's message carries depends on a chain of ranks, not on every rank the
// algorithm has combined by then. Independently of collv, a reachability script over the files
// (Python, bit sets per event, written for issue 34) gives the same ranks as below. With each
// receive also waiting for the receive before it (what MPI's program order gives), flow passes.
// Rank by rank (RankSearch, when the sets of every event do not fit) gives the same answers.
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "import/goal_reach.hpp"
#include "import/import.hpp"
#include "import_util.hpp"

using namespace collv;
using test::results;

namespace {

std::string num(std::uint64_t v) { return std::to_string(v); }

std::string read(const std::string& name) {
  std::ifstream in(COLLV_SOURCE_DIR + "/tests/data/import/schedgen2/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The file Schedgen2 writes for `allreduce --ptrn recdoub --comm_size p --datasize 1024` (p a
// power of two), byte for byte (checked below against the files it wrote); with `joined`, each
// receive also waits for the receive before it.
std::string schedgen2_recdoub(std::uint32_t p, bool joined) {
  std::uint32_t n = 0;
  while ((1u << n) < p) ++n;
  std::string t = "num_ranks " + num(p) + "\n\n";
  std::uint64_t label = 0;
  for (std::uint32_t r = 0; r < p; ++r) {
    t += "rank " + num(r) + " {\n";
    std::string deps;
    auto op = [&](const std::string& what) {
      t += "l" + num(++label) + ": " + what + "\n";
      return label;
    };
    auto dep = [&](std::uint64_t a, std::uint64_t b) {
      deps += "l" + num(a) + " requires l" + num(b) + "\n";
    };
    std::uint64_t prev_recv = 0;
    for (std::uint32_t k = 0; k < n; ++k) {  // reduce-scatter: partner r ^ 2^k
      std::string args = num(1024 >> (k + 1)) + "b ";
      std::string tag = " tag " + num((42 + k) * 1000 + 1);
      std::uint64_t s = op("send " + args + "to " + num(r ^ (1u << k)) + tag);
      std::uint64_t v = op("recv " + args + "from " + num(r ^ (1u << k)) + tag);
      if (prev_recv) dep(s, prev_recv);
      if (prev_recv && joined) dep(v, prev_recv);
      prev_recv = v;
    }
    std::uint64_t calc = op("calc 0");
    for (std::uint64_t l = label - 2 * n; l < label - 1; l += 2) dep(calc, l);
    dep(calc, prev_recv);
    std::uint64_t before = calc;
    for (std::uint32_t j = 0; j < n; ++j) {  // allgather: partner r ^ 2^(n-1-j)
      std::string args = num(1024 >> (n - j)) + "b ";
      std::string tag = " tag " + num((42 + p + j) * 1000 + 1);
      std::uint32_t peer = r ^ (1u << (n - 1 - j));
      std::uint64_t s = op("send " + args + "to " + num(peer) + tag);
      std::uint64_t v = op("recv " + args + "from " + num(peer) + tag);
      dep(s, before);
      dep(v, calc);
      if (joined && before != calc) dep(v, before);
      before = v;
    }
    t += deps + "}\n\n";
  }
  return t;
}

CheckResult flow_of(const std::string& text) {
  ImportedSchedule s = import_goal(text, "x.goal");
  judge_goal_flow(s, "allreduce", std::nullopt);
  auto r = results(s);
  CHECK(r["match"].verdict == Verdict::Pass);
  CHECK(r["deadlock"].verdict == Verdict::Pass);
  return r["flow"];
}

// Runs f with the sets capped at `cap` intervals (0: the question is asked rank by rank).
template <class F>
auto with_cap(std::optional<std::uint64_t> cap, F f) {
  goal_detail::set_interval_cap_for_tests(cap);
  try {
    auto out = f();
    goal_detail::set_interval_cap_for_tests(std::nullopt);
    return out;
  } catch (...) {
    goal_detail::set_interval_cap_for_tests(std::nullopt);
    throw;
  }
}

}  // namespace

TEST_CASE("Schedgen2 recdoub: the generator here writes Schedgen2's files byte for byte",
          "[goal][goal-schedgen2]") {
  CHECK(schedgen2_recdoub(16, false) == read("allreduce_recdoub_16.goal"));
  CHECK(schedgen2_recdoub(32, false) == read("allreduce_recdoub_32.goal"));
}

TEST_CASE(
    "Schedgen2 recdoub fails flow as an all-reduce from 16 ranks on, with the ranks an "
    "independent reachability check names",
    "[goal][goal-schedgen2]") {
  // 16 ranks: every rank's ops together depend on every rank, but no single op does (rank 0's
  // last receive, l17, never depends on rank 10; its calc l9 never on ranks 5, 9, 10, 11, 13).
  CheckResult f16 = flow_of(read("allreduce_recdoub_16.goal"));
  REQUIRE(f16.verdict == Verdict::Fail);
  CHECK(f16.violation_count == 16);
  CHECK(f16.violations[0].message.rfind("rank 0 has no op that depends on every rank's ops", 0) ==
        0);
  // 32 ranks: no op of rank 0 depends on rank 21 at all.
  CheckResult f32 = flow_of(read("allreduce_recdoub_32.goal"));
  REQUIRE(f32.verdict == Verdict::Fail);
  CHECK(f32.violation_count == 32);
  CHECK(f32.violations[0].message.rfind("rank 0 never depends on rank(s) 21 (", 0) == 0);
  CHECK(f32.violations[1].message.rfind("rank 1 never depends on rank(s) 20 (", 0) == 0);
  // Joined (each receive waits for the one before): every rank's last op hears every rank.
  CHECK(flow_of(schedgen2_recdoub(16, true)).verdict == Verdict::Pass);
  CHECK(flow_of(schedgen2_recdoub(32, true)).verdict == Verdict::Pass);
  // The 8-rank file passes (its calc and the allgather's chains happen to cover every rank).
  CHECK(flow_of(schedgen2_recdoub(8, false)).verdict == Verdict::Pass);
}

TEST_CASE("GOAL flow rank by rank: the same verdicts and ranks as the sets",
          "[goal][goal-schedgen2]") {
  for (std::uint32_t p : {16u, 32u, 64u}) {
    CAPTURE(p);
    const std::string file = schedgen2_recdoub(p, false);
    CheckResult sets = flow_of(file);
    CheckResult walked = with_cap(0, [&] { return flow_of(file); });
    REQUIRE(sets.verdict == Verdict::Fail);
    REQUIRE(walked.verdict == Verdict::Fail);
    // Rank by rank stops at the first 8 failing ranks: they are the sets' first 8, word for word.
    CHECK(walked.violation_count == 8);
    for (std::size_t k = 0; k < 8; ++k)
      CHECK(walked.violations[k].message == sets.violations[k].message);
    CHECK(walked.note.find("asked rank by rank") != std::string::npos);
    CHECK(sets.note.find("asked rank by rank") == std::string::npos);
    // The joined file passes both ways (every rank judged).
    const std::string joined = schedgen2_recdoub(p, true);
    CHECK(flow_of(joined).verdict == Verdict::Pass);
    CheckResult jw = with_cap(0, [&] { return flow_of(joined); });
    CHECK(jw.verdict == Verdict::Pass);
    CHECK(jw.note.find(num(p) + " of " + num(p) + " ranks judged") != std::string::npos);
  }
  // The other questions rank by rank, the same both ways: as a broadcast from 0 rank 21 never
  // depends on rank 0, as a reduce to 0 rank 0 never depends on rank 21, as an alltoall rank 0
  // never on 21, as a scan rank 16 never on 5.
  for (const char* coll : {"broadcast", "reduce", "alltoall", "scan"}) {
    CAPTURE(coll);
    const std::string file = read("allreduce_recdoub_32.goal");
    auto ask = [&] {
      ImportedSchedule s = import_goal(file, "x.goal");
      judge_goal_flow(s, coll, std::nullopt);
      return results(s)["flow"];
    };
    CheckResult a = ask(), b = with_cap(0, ask);
    CHECK(a.verdict == b.verdict);
    REQUIRE(a.violations.size() >= 1);
    REQUIRE(b.violations.size() >= 1);
    CHECK(a.violations[0].message == b.violations[0].message);
    CHECK(a.violations[0].message.find(coll == std::string("scan") ? "rank(s) 5" : "rank(s) 21") !=
          std::string::npos);
  }
}

TEST_CASE("GOAL flow rank by rank: a spent budget is undecided, never a pass",
          "[goal][goal-schedgen2]") {
  // Joined recursive doubling on 4,096 ranks: every rank's last op depends on every event, so
  // walking each rank costs the whole graph; the budget (16 visits an event or edge, plus 2^24)
  // runs out long before 4,096 ranks are judged.
  const std::string file = schedgen2_recdoub(4096, true);
  CHECK(flow_of(file).verdict == Verdict::Pass);
  CheckResult w = with_cap(0, [&] { return flow_of(file); });
  CHECK(w.verdict == Verdict::Unknown);
  CHECK(w.note.rfind("not decided: the walks' budget was spent", 0) == 0);
}
