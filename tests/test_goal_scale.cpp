// GOAL files at the scale LogGOPSim runs them (issue 34 item 2): Schedgen2's shapes (recursive
// doubling all-reduce, binomial broadcast, dissemination) written here at tens of thousands of
// ranks, judged with match, deadlock and flow decided, and each caught when one rank's
// dependencies are cut; the limits are checked before anything is allocated, and flow is
// undecided (never guessed) when its sets do not fit --max-memory.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "import/import.hpp"
#include "import_util.hpp"
#include "topology/topology.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"

using namespace collv;
using test::results;

namespace {

std::string num(std::uint64_t v) { return std::to_string(v); }

// A recursive-doubling all-reduce in Schedgen2's layout: round k exchanges with r ^ 2^k, a calc
// joins the first half's rounds, and the second half repeats the rounds from the last down, each
// receive waiting for the calc; unlike Schedgen2's file (where a send waits for the previous
// receive only, and from 16 ranks on no op of a rank hears every rank), each send waits for
// every earlier receive. With `cut` set, the
// sends to rank `cut` wait for nothing (the mutant: it hears only its partners).
std::string recdoub(std::uint32_t p, std::int64_t cut = -1) {
  std::string t = "num_ranks " + num(p) + "\n";
  std::uint32_t rounds = 0;
  while ((1u << rounds) < p) ++rounds;
  for (std::uint32_t r = 0; r < p; ++r) {
    t += "rank " + num(r) + " {\n";
    int l = 0;
    std::string prev_recv;
    for (std::uint32_t k = 0; k < rounds; ++k) {
      std::uint32_t peer = r ^ (1u << k);
      std::string tag = num(42001 + 1000 * k), s = "l" + num(++l), v = "l" + num(++l);
      t += s + ": send 8b to " + num(peer) + " tag " + tag + "\n";
      t += v + ": recv 8b from " + num(peer) + " tag " + tag + "\n";
      // Joined: a send waits for every earlier receive (what it sends was reduced from them).
      if (static_cast<std::int64_t>(peer) != cut)
        for (std::uint32_t j = 0; j < k; ++j) t += s + " requires l" + num(2 * j + 2) + "\n";
      prev_recv = v;
    }
    std::string calc = "l" + num(++l);
    t += calc + ": calc 0\n";
    for (int k = 1; k < l; k += 2) t += calc + " requires l" + num(k) + "\n";
    t += calc + " requires " + prev_recv + "\n";
    std::string before = calc;
    for (std::uint32_t k = rounds; k-- > 0;) {
      std::uint32_t peer = r ^ (1u << k);
      std::string tag = num(90001 + 1000 * k), s = "l" + num(++l), v = "l" + num(++l);
      t += s + ": send 8b to " + num(peer) + " tag " + tag + "\n";
      t += v + ": recv 8b from " + num(peer) + " tag " + tag + "\n";
      if (static_cast<std::int64_t>(peer) != cut) t += s + " requires " + before + "\n";
      t += v + " requires " + calc + "\n";
      before = v;
    }
    t += "}\n";
  }
  return t;
}

// A binomial broadcast from rank 0: rank r receives from r minus its highest bit, then sends to
// r + 2^k for every 2^k above r. With `cut` set, rank `cut`'s sends do not wait for its receive.
std::string binomial_bcast(std::uint32_t p, std::int64_t cut = -1) {
  std::string t = "num_ranks " + num(p) + "\n";
  for (std::uint32_t r = 0; r < p; ++r) {
    t += "rank " + num(r) + " {\n";
    std::uint32_t high = 0;
    if (r > 0) {
      high = 1;
      while (high * 2 <= r) high *= 2;
      t += "l0: recv 8b from " + num(r - high) + " tag 42\n";
    }
    int l = 1;
    for (std::uint64_t d = r == 0 ? 1 : 2 * high; r + d < p; d *= 2, ++l) {
      t += "l" + num(l) + ": send 8b to " + num(r + d) + " tag 42\n";
      if (r > 0 && static_cast<std::int64_t>(r) != cut) t += "l" + num(l) + " requires l0\n";
    }
    t += "}\n";
  }
  return t;
}

// Schedgen2's dissemination: round k sends to r + 2^k and receives from r - 2^k (mod p); each
// send waits only for the previous round's receive.
std::string dissemination(std::uint32_t p) {
  std::string t = "num_ranks " + num(p) + "\n";
  for (std::uint32_t r = 0; r < p; ++r) {
    t += "rank " + num(r) + " {\n";
    int k = 0;
    for (std::uint64_t d = 1; d < p; d *= 2, ++k) {
      t += "s" + num(k) + ": send 8b to " + num((r + d) % p) + " tag 42\n";
      t += "r" + num(k) + ": recv 8b from " + num((r + p - d) % p) + " tag 42\n";
      if (k > 0) t += "s" + num(k) + " requires r" + num(k - 1) + "\n";
    }
    t += "}\n";
  }
  return t;
}

CheckResult flow_as(const std::string& text, const std::string& coll) {
  ImportedSchedule s = import_goal(text, "x.goal");
  judge_goal_flow(s, coll, std::nullopt);
  auto r = results(s);
  CHECK(r["match"].verdict == Verdict::Pass);
  CHECK(r["deadlock"].verdict == Verdict::Pass);
  return r["flow"];
}

}  // namespace

TEST_CASE("GOAL at scale: the binomial broadcast on 65,536 ranks is decided",
          "[goal][goal-scale]") {
  const std::uint32_t p = 65536;
  ImportedSchedule s = import_goal(binomial_bcast(p), "x.goal");
  CHECK(s.trace.transfers.size() == p - 1);
  CHECK(s.trace.steps == 16);  // log2 p rounds
  judge_goal_flow(s, "broadcast", std::nullopt);
  auto r = results(s);
  CHECK(r["match"].verdict == Verdict::Pass);
  CHECK(r["deadlock"].verdict == Verdict::Pass);
  CHECK(r["flow"].verdict == Verdict::Pass);
  // Rank 1's sends wait for nothing: its subtree (the odd ranks but 1) never hears rank 0.
  CheckResult cut = flow_as(binomial_bcast(p, 1), "broadcast");
  REQUIRE(cut.verdict == Verdict::Fail);
  CHECK(cut.violations[0].message.find("32767 of 65536 ranks never depend on root 0") !=
        std::string::npos);
  CHECK(cut.violations[0].message.find("rank(s) 3, 5, 7,") != std::string::npos);
  // As a reduce it fails (rank 0 depends on nobody), decided.
  CHECK(flow_as(binomial_bcast(p), "reduce").verdict == Verdict::Fail);
}

TEST_CASE("GOAL at scale: recursive doubling and dissemination on 8,192 ranks are decided",
          "[goal][goal-scale][slow]") {
  const std::uint32_t p = 8192;  // past the 2,048 ranks collv refused before
  CHECK(flow_as(recdoub(p), "allreduce").verdict == Verdict::Pass);
  // The sends to rank 0 carry only their senders: rank 0 hears its 13 partners, no one else.
  CheckResult cut = flow_as(recdoub(p, 0), "allreduce");
  REQUIRE(cut.verdict == Verdict::Fail);
  CHECK(
      cut.violations[0].message.rfind(
          "rank 0 never depends on rank(s) 3, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 17, 18, 19, 20, "
          "21, ... (8178 in all)",
          0) == 0);
  // Dissemination: each send waits for one receive only, so no rank hears everyone in one op.
  CheckResult d = flow_as(dissemination(p), "barrier");
  CHECK(d.verdict == Verdict::Fail);
  CHECK(d.violation_count == p);
}

TEST_CASE("GOAL at scale: the recursive-doubling all-reduce on 65,536 ranks",
          "[goal][goal-scale][slow]") {
  CHECK(flow_as(recdoub(65536), "allreduce").verdict == Verdict::Pass);
  CHECK(flow_as(recdoub(65536, 0), "allreduce").verdict == Verdict::Fail);
}

TEST_CASE(
    "GOAL at scale: limits are checked before allocation, and flow over --max-memory is "
    "undecided",
    "[goal][goal-scale]") {
  // Past 2^24 ranks (node ids): refused with the range.
  try {
    import_goal("num_ranks 16777217\n", "x.goal");
    FAIL("no error");
  } catch (const LimitError&) {
    FAIL("a usage error was expected");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("num_ranks 16777217 is outside 1..16777216") !=
          std::string::npos);
  }
  const std::uint64_t before = memory_limit();
  // 2^24 ranks need 4 GiB of per-rank state: refused under 256 MiB before it is allocated.
  set_memory_limit(resident_bytes() + (256ull << 20));
  CHECK_THROWS_AS(import_goal("num_ranks 16777216\n", "x.goal"), LimitError);
  set_memory_limit(before);
  // 65,536 ranks of which two talk: read, judged, decided.
  ImportedSchedule s = import_goal(
      "num_ranks 65536\nrank 65535 {\nl1: send 8b to 0\n}\nrank 0 {\nl1: recv 8b from 65535\n}\n",
      "x.goal");
  CHECK(s.trace.transfers.size() == 1);
  CHECK(results(s)["flow"].verdict == Verdict::Fail);
  // Rank 0 receives from the odd ranks one after another: its sets gain one interval a receive,
  // k^2 / 2 intervals in all (8 GiB for k = 32,768). Under a limit they do not fit, flow is
  // undecided with the limit's message, while match and deadlock are judged.
  const std::uint32_t k = 32768;
  std::string t = "num_ranks " + num(2 * k) + "\nrank 0 {\n";
  for (std::uint32_t i = 0; i < k; ++i) {
    t += "r" + num(i) + ": recv 8b from " + num(2 * i + 1) + "\n";
    if (i > 0) t += "r" + num(i) + " requires r" + num(i - 1) + "\n";
  }
  t += "}\n";
  for (std::uint32_t i = 0; i < k; ++i) t += "rank " + num(2 * i + 1) + " {\ns: send 8b to 0\n}\n";
  set_memory_limit(resident_bytes() + (128ull << 20));
  ImportedSchedule big = import_goal(t, "x.goal");
  set_memory_limit(before);
  auto r = results(big);
  CHECK(r["match"].verdict == Verdict::Pass);
  CHECK(r["deadlock"].verdict == Verdict::Pass);
  CHECK(r["flow"].verdict == Verdict::Unknown);
  CHECK(r["flow"].note.find("not decided:") == 0);
  CHECK(r["flow"].note.find("rank sets") != std::string::npos);
}

TEST_CASE("GOAL at scale: the trace's complete:65536 computes its links", "[goal-scale]") {
  // parse refuses complete:65536 (4.3 billion adjacency entries); the GOAL trace's network is
  // the same graph with its links computed: adjacent, neighbor and route answer, links() refuses.
  CHECK_THROWS_AS(Topology::parse("complete:65536"), SpecError);
  Topology t = Topology::complete(65536);
  CHECK(t.spec() == "complete:65536");
  CHECK(t.num_processors() == 65536);
  CHECK(t.num_links() == 65536ull * 65535 / 2);
  CHECK(t.adjacent(0, 65535));
  CHECK_FALSE(t.adjacent(7, 7));
  CHECK(t.neighbor(5, 4) == std::optional<NodeId>(4));
  CHECK(t.neighbor(5, 5) == std::optional<NodeId>(6));
  CHECK_FALSE(t.neighbor(5, 65535).has_value());
  CHECK(t.route(3, 9) == std::vector<NodeId>{3, 9});
  CHECK(t.diameter() == 1);
  CHECK_THROWS_AS(t.links(0), SpecError);
  // Below the table limit it is parse's graph.
  Topology small = Topology::complete(8);
  CHECK(small.links(0).size() == 7);
  CHECK_THROWS_AS(Topology::complete(0), SpecError);
}
