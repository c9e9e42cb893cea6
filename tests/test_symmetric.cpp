// Verification by symmetry (verify/symmetric.hpp): its verdicts, steps, costs and the
// representative's output against full runs of the executor, on correct models and mutants;
// refusals for programs it cannot show equivariant; the memory bound up front.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include "app/commands.hpp"
#include "check/checks.hpp"
#include "cli.hpp"
#include "exec/executor.hpp"
#include "topology/topology.hpp"
#include "util/error.hpp"
#include "verify/symmetric.hpp"

using namespace collv;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

using collv::test::slurp;

const CheckResult& named(const std::vector<CheckResult>& rs, const std::string& n) {
  for (const auto& r : rs)
    if (r.name == n) return r;
  FAIL("no check " << n);
  return rs.front();
}

// The symmetric engine and a full exact run agree on star:n: every verdict the engine decides,
// the steps, the cost, and which contributions node 0 ends with.
void cross_check(const Model& m, int n, const std::string& family = "star") {
  INFO(m.header.name << " on " << family << ":" << n);
  SymmetricResult s = verify_symmetric(m, family, n, RunOptions{});
  REQUIRE(s.refusal.empty());
  Topology t = Topology::parse(family + ":" + std::to_string(n));
  Trace full = run_model(m, t, RunOptions{});
  auto rs = check_trace(full, CheckOptions{});
  for (const char* name :
       {"route", "nodup", "postcondition", "final-buffers", "steps", "cost", "runtime"}) {
    INFO(name);
    const auto& a = named(s.checks, name);
    if (a.verdict == Verdict::NotChecked || a.verdict == Verdict::Unknown) continue;
    CHECK(a.verdict == named(rs, name).verdict);
  }
  for (const char* name : {"single-port", "congestion", "match", "deadlock"}) {
    INFO(name);  // implied by the shape; the executor leaves some unchecked after a runtime error
    if (named(rs, name).verdict != Verdict::NotChecked)
      CHECK(named(rs, name).verdict == named(s.checks, name).verdict);
  }
  CHECK(s.steps == full.steps);
  CHECK(s.cost_ts == Approx(full.cost_ts));
  CHECK(s.cost_tw == Approx(full.cost_tw));
  std::set<std::uint32_t> held;
  for (Item it : full.final_output[0])
    for (auto c : full.domain->terms(it)) held.insert(c);
  std::set<std::uint32_t> sym;
  for (std::size_t i = 0; i < s.output_origins.size(); ++i)
    if (s.output_origins[i]) sym.insert(static_cast<std::uint32_t>(i));
  CHECK(held == sym);
}

Model mutant(const std::vector<std::pair<std::string, std::string>>& edits) {
  std::string text = slurp(kRoot + "/models/allreduce_star.coll");
  for (const auto& [from, to] : edits) {
    auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
  }
  return parse_model(text, "mutant.coll");
}
Model mutant(const std::string& from, const std::string& to) { return mutant({{from, to}}); }

}  // namespace

TEST_CASE("symmetry: the index of a permutation and the swap of positions 1 and j", "[symmetry]") {
  // index and unindex are inverse on all of S_5, and the identity maps to one index.
  std::set<std::uint64_t> seen;
  for (std::uint64_t i = 0; i < 120; ++i) {
    auto h = symmetric_unindex(i, 5);
    CHECK(symmetric_index(h) == i);
    seen.insert(star_rank(h));
  }
  CHECK(seen.size() == 120);
}

namespace {
std::vector<Model> star_models() {
  std::vector<Model> models;
  for (const char* f :
       {"/models/allreduce_star.coll", "/models/allgather_star.coll",
        "/proofs/mutants/forward_sum.coll", "/proofs/mutants/skip_link2.coll",
        "/proofs/mutants/levels_downward.coll", "/proofs/mutants/links_upward.coll"})
    models.push_back(parse_model_file(kRoot + f));
  // A body that steps its own counter too: every other link is skipped (the executor's loop
  // semantics, followed by the engine).
  models.push_back(mutant("result := result + number;", "result := result + number; j := j - 1;"));
  // A link the level's sub-star does not have (k - 1 at k = 2 is link 1: no such link).
  models.push_back(
      mutant({{"send local along link k;", "send local along link k - 1;"},
              {"receive outgoing along link k;", "receive outgoing along link k - 1;"}}));
  return models;
}
}  // namespace

TEST_CASE("symmetry: verdicts and outputs agree with full runs (star:3..6)", "[symmetry]") {
  for (const auto& m : star_models())
    for (int n = 3; n <= 6; ++n) cross_check(m, n);
}

TEST_CASE("symmetry: verdicts and outputs agree with full runs (star:7)", "[symmetry][slow]") {
  for (const auto& m : star_models()) cross_check(m, 7);
}

TEST_CASE("symmetry: every hypercube model it runs agrees with full runs (hypercube:1..12)",
          "[symmetry]") {
  int checked = 0;
  for (const auto& f : list_model_files(kRoot + "/models")) {
    Model m = parse_model_file(f);
    if (std::find(m.header.topologies.begin(), m.header.topologies.end(), "hypercube") ==
        m.header.topologies.end())
      continue;
    if (!verify_symmetric(m, "hypercube", 3, {}).refusal.empty()) continue;
    INFO(f);
    for (int d = 1; d <= (m.header.collective == Collective::Allgather ? 10 : 12); ++d)
      cross_check(m, d, "hypercube");
    ++checked;
  }
  CHECK(checked >= 2);  // allreduce_hypercube, allgather_hypercube
}

TEST_CASE("symmetry: the star all-reduce on star:8 agrees with the full run", "[symmetry][slow]") {
  cross_check(parse_model_file(kRoot + "/models/allreduce_star.coll"), 8);  // allgather: 24 GiB
}

TEST_CASE("symmetry: each mutant fails the checks it breaks", "[symmetry]") {
  auto fails = [](const SymmetricResult& r, const char* name) {
    return named(r.checks, name).verdict == Verdict::Fail;
  };
  auto fwd =
      verify_symmetric(parse_model_file(kRoot + "/proofs/mutants/forward_sum.coll"), "star", 9, {});
  CHECK(fails(fwd, "nodup"));
  CHECK(fails(fwd, "postcondition"));
  auto skip =
      verify_symmetric(parse_model_file(kRoot + "/proofs/mutants/skip_link2.coll"), "star", 9, {});
  CHECK(fails(skip, "postcondition"));
  CHECK(fails(skip, "steps"));
  CHECK_FALSE(fails(skip, "nodup"));
  auto ok =
      verify_symmetric(parse_model_file(kRoot + "/models/allreduce_star.coll"), "star", 9, {});
  for (const auto& c : ok.checks) {
    INFO(c.name);
    CHECK(c.verdict != Verdict::Fail);
  }
  CHECK(ok.steps == 36);
}

TEST_CASE("symmetry: node-dependent programs are refused, not verified", "[symmetry]") {
  auto by_id = verify_symmetric(
      mutant("send local along link k;", "send local along link 2 + my_id mod 2;"), "star", 4, {});
  CHECK(by_id.refusal.find("my_id") != std::string::npos);
  CHECK(by_id.checks.empty());
  // On the hypercube my_id may be a peer (my_id XOR 2^i), nothing else: a branch on it is refused.
  std::string text = slurp(kRoot + "/models/allreduce_hypercube.coll");
  auto at = text.find("send result to partner;");
  REQUIRE(at != std::string::npos);
  text.replace(at, 23,
               "if my_id < 2 then send result to partner; else send result to partner; endif;");
  auto branch = verify_symmetric(parse_model(text, "branch.coll"), "hypercube", 3, {});
  CHECK(branch.refusal.find("my_id") != std::string::npos);
  // Every model of the library either runs by symmetry or is refused; none throws.
  int ran = 0;
  for (const auto& f : list_model_files(kRoot + "/models")) {
    Model m = parse_model_file(f);
    for (const auto& fam : m.header.topologies) {
      if (fam != "star" && fam != "hypercube" && fam != "ring") continue;
      INFO(f);
      auto r = verify_symmetric(m, fam, 3, {});
      ran += r.refusal.empty();
    }
  }
  CHECK(ran >= 5);  // the star and hypercube all-reduce and all-gather, the ring all-gather
  // More than one element per input is refused, not run as one.
  RunOptions two;
  two.count = 2;
  CHECK(verify_symmetric(parse_model_file(kRoot + "/models/allreduce_star.coll"), "star", 3, two)
            .refusal.find("one element") != std::string::npos);
  // Up front: star:12 needs hundreds of MB for its sets; a 64 MiB limit refuses it.
  RunOptions small;
  small.max_memory = 64ull << 20;
  CHECK(symmetric_bytes(parse_model_file(kRoot + "/models/allreduce_star.coll"), "star", 12) >
        (400ull << 20));
  CHECK_THROWS_AS(
      verify_symmetric(parse_model_file(kRoot + "/models/allreduce_star.coll"), "star", 12, small),
      LimitError);
}

TEST_CASE("symmetry: the ring all-to-all broadcast agrees with full runs (ring:2..40, 63..65, 130)",
          "[symmetry]") {
  Model m = parse_model_file(kRoot + "/models/allgather_ring.coll");
  for (int p = 2; p <= 40; ++p) cross_check(m, p, "ring");
  for (int p : {63, 64, 65, 130}) cross_check(m, p, "ring");  // shifts across word boundaries
}

TEST_CASE("symmetry: ring mutants fail as full runs do and node-dependent shifts are refused",
          "[symmetry]") {
  std::string text = slurp(kRoot + "/models/allgather_ring.coll");
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    auto at = t.find(from);
    REQUIRE(at != std::string::npos);
    t.replace(at, from.size(), to);
    return parse_model(t, "ring_mutant.coll");
  };
  auto fails = [](const SymmetricResult& r, const char* name) {
    return named(r.checks, name).verdict == Verdict::Fail;
  };
  // One round too many: every node gets its own contribution back (NODUP), and the step claim.
  Model more = edit("for i := 1 to p - 1 do", "for i := 1 to p do");
  auto a = verify_symmetric(more, "ring", 9, {});
  REQUIRE(a.refusal.empty());
  CHECK(fails(a, "nodup"));
  CHECK(fails(a, "steps"));
  // One round short: node 0 misses node 1's contribution; the outputs of the nodes differ.
  Model fewer = edit("for i := 1 to p - 1 do", "for i := 1 to p - 2 do");
  auto b = verify_symmetric(fewer, "ring", 9, {});
  CHECK(fails(b, "postcondition"));
  CHECK(fails(b, "final-buffers"));
  CHECK_FALSE(fails(b, "nodup"));
  for (int p : {3, 8, 9}) {
    cross_check(more, p, "ring");
    cross_check(fewer, p, "ring");
  }
  // Send right, receive from the right: not a shift (node x would hear from x + 1, which sent
  // to x + 2); refused, not verified.
  auto c =
      verify_symmetric(edit("receive msg from left;", "receive msg from right;"), "ring", 5, {});
  CHECK(c.refusal.find("shift") != std::string::npos);
  CHECK(c.checks.empty());
  auto d =
      verify_symmetric(edit("send msg to right;", "send msg to (my_id + 1) mod p;"), "ring", 5, {});
  CHECK(d.refusal.find("left") != std::string::npos);
  CHECK_THROWS_AS(verify_symmetric(more, "ring", (1 << 20) + 1, {}), UsageError);
}
