// Phases and MPICH's non-power-of-two fold (docs/smt.md, "Every p from the model", phases): the
// recursive-doubling all-reduce is proved for every p < 2^31 from its program ([slow]; in CI a
// copy with `requires p <= 8` and its queries split into 3 rounds), its mutants past p = 64 and
// above count 1000 are disproved ([slow]), and each obligation of the phased reading fails on a
// program or proof built to break it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "app/every_p_cmd.hpp"
#include "cli.hpp"
#include "every_p_util.hpp"
#include "smt/every_p.hpp"
#include "smt/solver.hpp"
#include "util/exit_codes.hpp"

using namespace collv;
using namespace collv::test::everyp;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;
const std::string kProofs = kRoot + "/proofs/every-p";
const std::string kModel = kRoot + "/models/mpich/allreduce_recursive_doubling.coll";
const std::string kProof = kProofs + "/allreduce_recursive_doubling.proof";

// The model's program with `requires p <= 8` (at most 3 rounds), and its proof with the loop's
// queries split into k = 0..2 and the rest: the same obligations, cheaper.
// (The `requires` line takes the note's place, so that the lines keep their numbers.)
std::string small_model() { return with_requires(kModel, "  note ", 8); }
std::string small_proof() {
  return replaced(replaced(collv::test::slurp(kProof), "split while 32", "split while 3"),
                  "model ../../models/mpich/allreduce_recursive_doubling.coll",
                  "model allreduce_recursive_doubling");
}

std::string all_failed(const EveryPOutcome& r) {
  std::string out;
  for (const auto& l : r.lines)
    if (l.rfind("FAILED", 0) == 0) out += l + "\n";
  return out;
}

}  // namespace

TEST_CASE("every-p: phases: the fold's matches, partners and rounds hold up to p = 8",
          "[every-p][every-p-fold][heavy]") {
  // The phased reading's own obligations, solved one by one (the whole proof of this copy, 195
  // queries and about 5 s of CPU, is the [slow] test below).
  auto a = analyze_text(small_model(), small_proof());
  REQUIRE(a.refusal.empty());
  std::string all;
  for (const auto& ob : a.obligations) all += ob.name + "\n";
  for (const char* n :
       {"match-line-26@", "received-line-23", "match-line-39@", "received-loop-while@",
        "consecution-buf-loop-while@", "combine-line-27@", "match-line-49@", "received-line-47@",
        "rounds-line-21", "rounds-line-33", "rounds-line-45", "steps-k", "infeasible-line-33-",
        "postcondition-blocks@"})
    CHECK(all.find(n) != std::string::npos);
  CHECK(all.find("sends-received") == std::string::npos);  // per phase instead
  for (const char* n : {"match-line-26", "received-line-23", "match-line-49", "received-line-47",
                        "rounds-line-21", "rounds-line-45", "infeasible-"}) {
    INFO(n);
    auto ans = answers_of(a, n);
    CHECK(!ans.empty());
    CHECK(
        std::all_of(ans.begin(), ans.end(), [](smt::Answer x) { return x == smt::Answer::Unsat; }));
  }
}

TEST_CASE("every-p: phases: MPICH's recursive-doubling all-reduce up to p = 8 is proved",
          "[every-p][every-p-fold][slow]") {
  EveryPOutcome r = prove_text(small_model(), small_proof());
  INFO(r.note);
  CHECK(r.exit == kExitOk);
}

TEST_CASE("every-p: phases: each obligation of the phased reading fails on a broken input",
          "[every-p][every-p-fold][heavy]") {
  const std::string m = small_model(), pf = small_proof();
  SECTION("match: the odd rank of the fold receives from the wrong rank") {
    auto a =
        analyze_text(replaced(m, "receive tmp from my_id - 1;", "receive tmp from my_id - 3;"), pf);
    REQUIRE(a.refusal.empty());
    CHECK(some_sat(answers_of(a, "match-line-26", true)));
    CHECK(
        some_sat(answers_of(a, "received-line-23", true)));  // the even rank's send is not received
    auto ok = analyze_text(m, pf);
    REQUIRE(ok.refusal.empty());
    CHECK_FALSE(some_sat(answers_of(ok, "match-line-26")));
    CHECK_FALSE(some_sat(answers_of(ok, "received-line-23")));
  }
  SECTION("received-loop: the partner of a round is an even rank of the fold, which sits out") {
    auto a = analyze_text(replaced(m, "dst := newdst * 2 + 1;", "dst := newdst * 2;"), pf);
    REQUIRE(a.refusal.empty());
    CHECK(some_sat(answers_of(a, "received-loop-while", true)));
  }
  SECTION("rounds: a witness that is not the rank with the most rounds of the phase") {
    auto a = analyze_text(m, replaced(pf, "witness line-33 (- p 1)", "witness line-33 0"));
    REQUIRE(a.refusal.empty());
    CHECK(some_sat(answers_of(a, "rounds-line-33", true)));
  }
  SECTION("steps: a claim without the fold's two rounds") {
    auto a =
        analyze_text(replaced(m, "steps      if popcount(p) = 1 then ilog2(p) else ilog2(p) + 2",
                              "steps      ilog2(p)"),
                     pf);
    REQUIRE(a.refusal.empty());
    CHECK(some_sat(answers_of(a, "steps", true)));
  }
  SECTION("the postcondition: the unfold's even rank keeps its own input") {
    auto a =
        analyze_text(replaced(m, "receive buf from my_id + 1;", "receive tmp from my_id + 1;"), pf);
    REQUIRE(a.refusal.empty());
    CHECK(some_sat(answers_of(a, "postcondition-blocks", true)));
  }
}

TEST_CASE("every-p: phases: what the phased reading cannot order is refused with file:line:col",
          "[every-p][every-p-fold]") {
  const std::string m = small_model(), pf = small_proof();
  // A straight-line phase that receives before it sends could wait on a partner that waits too.
  auto a = analyze_text(replaced(m, "            send buf to my_id - 1;\n",
                                 "            receive tmp from my_id - 1;\n"
                                 "            send buf to my_id - 1;\n"),
                        pf);
  CHECK(a.refusal.find("at most one send, before its receive") != std::string::npos);
  CHECK(a.refusal_loc.line == 48);
  // A round loop that receives first.
  auto b =
      analyze_text(replaced(m, "            send buf to dst;\n            receive tmp from dst;\n",
                            "            receive tmp from dst;\n            send buf to dst;\n"),
                   pf);
  CHECK(b.refusal.find("sends before it receives") != std::string::npos);
  CHECK(b.refusal_loc.line == 35);
  // Two phases on one line would share their positions.
  auto d =
      analyze_text(replaced(m, "    rem := p - pof2;\n",
                            "    rem := p - pof2; send buf to (my_id + 1) mod p; receive tmp from "
                            "(my_id - 1) mod p;\n"),
                   pf);
  CHECK(d.refusal.find("two communicating statements on one line") != std::string::npos);
  CHECK(d.refusal_loc.line == 19);
  // A barrier with an `if` on my_id around its rounds (knowledge is not carried across paths).
  std::string barrier =
      replaced(replaced(collv::test::slurp(kRoot + "/models/mpich/barrier_dissemination.coll"),
                        "    mask := 1;\n", "    mask := 1;\n    if my_id > 0 then\n"),
               "    endwhile;\n", "    endwhile;\n    endif;\n");
  auto e =
      analyze_text(barrier, "kind every-p\nmodel barrier_dissemination\ntrips while (clog2 p)\n");
  CHECK(e.refusal.find("a barrier whose ranks take different rounds") != std::string::npos);
  // MPICH's recursive halving: its fold is read as phases, the prover stops at the array of
  // block offsets (docs/smt.md, "Not done").
  const std::string halving = kRoot + "/models/mpich/reduce_scatter_recursive_halving.coll";
  auto h = analyze_text(collv::test::slurp(halving), "kind every-p\nmodel m\n");
  CHECK(h.refusal.find("outside the fragment") != std::string::npos);
  CHECK(h.refusal_loc.line == 41);  // array nd[pof2 + 1]
  // A round loop run on two paths with different bounds (one induction needs the same rounds).
  std::string ring = replaced(
      replaced(collv::test::slurp(kRoot + "/models/mpich/allgather_ring.coll"),
               "    for i := 1 to p - 1 do\n",
               "    if my_id >= 0 then\n    if my_id = 0 then hi := p - 1; else hi := p; endif;\n"
               "    for i := 1 to hi do\n"),
      "    endfor;\n", "    endfor;\n    endif;\n");
  auto g = analyze_text(ring, collv::test::slurp(kProofs + "/allgather_ring.proof"));
  CHECK(g.refusal.find("bounds that differ between them") != std::string::npos);
  CHECK(g.refusal_loc.line == 24);
  // A witness for a line that is no phase (a typo would otherwise leave rank 0 as the witness).
  auto c = analyze_text(m, replaced(pf, "witness line-45 0", "witness line-44 0"));
  CHECK(c.refusal.find("the program has no phase there") != std::string::npos);
}

TEST_CASE(
    "every-p: phases: MPICH's recursive-doubling all-reduce is proved for every p < 2^31, "
    "z3 alone re-checks every certificate",
    "[every-p][every-p-fold][slow][sweep]") {
  std::string dir = collv::test::unique_temp("every_p_fold_certs");
  EveryPOutcome r = prove(kModel, kProof, dir);
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  CHECK(recheck_certificates(dir) == static_cast<int>(r.obligations));
}

TEST_CASE("every-p: phases: the fold's mutants past p = 64 and above count 1000 are disproved",
          "[every-p][every-p-fold][slow][sweep]") {
  EveryPOutcome a = prove(kProofs + "/mutants/allreduce_recursive_doubling_p64.coll",
                          kProofs + "/mutants/allreduce_recursive_doubling_p64.proof");
  INFO(a.note);
  CHECK(a.exit == kExitViolation);
  // The first failing query is a round's destination past the last rank (p = 127 = 2 pof2 - 1);
  // the rounds' match and received queries fail too (from p = 65, where the executor fails).
  CHECK(a.p > 64);
  CHECK(a.failed_obligation.rfind("send-dst-loop-while", 0) == 0);
  CHECK(all_failed(a).find("received-loop-while") != std::string::npos);
  EveryPOutcome b = prove(kProofs + "/mutants/allreduce_recursive_doubling_count1000.coll",
                          kProofs + "/mutants/allreduce_recursive_doubling_count1000.proof");
  INFO(b.note);
  CHECK(b.exit == kExitViolation);
  CHECK(b.count == 1001);
}

namespace {

const std::string kOmpiModel = kRoot + "/models/openmpi/allreduce_recursive_doubling.coll";
const std::string kOmpiProof = kProofs + "/allreduce_recursive_doubling_ompi.proof";

std::string small_ompi_model() { return with_requires(kOmpiModel, "  note ", 8); }
std::string small_ompi_proof() {
  return replaced(replaced(collv::test::slurp(kOmpiProof), "split while 32", "split while 3"),
                  "model ../../models/openmpi/allreduce_recursive_doubling.coll",
                  "model allreduce_recursive_doubling");
}

}  // namespace

TEST_CASE(
    "every-p: phases: Open MPI's all-reduce: the even fold ranks skip the round loop, and a "
    "condition they pass is caught",
    "[every-p][every-p-fold][heavy]") {
  auto a = analyze_text(small_ompi_model(), small_ompi_proof());
  REQUIRE(a.refusal.empty());
  auto skipped = answers_of(a, "skipped-line-38");
  CHECK(skipped.size() == 1);
  CHECK(std::all_of(skipped.begin(), skipped.end(),
                    [](smt::Answer x) { return x == smt::Answer::Unsat; }));
  // With `newrank >= -1` the even fold ranks run the rounds with newrank = -1: no skip, and their
  // loop's initiation fails (the executor: node -3 does not exist at p = 3).
  auto b = analyze_text(replaced(small_ompi_model(), "newrank >= 0 do", "newrank >= -1 do"),
                        small_ompi_proof());
  REQUIRE(b.refusal.empty());
  CHECK(answers_of(b, "skipped-line-38").empty());
  CHECK(some_sat(answers_of(b, "initiation-buf-loop-while", true)));
}

TEST_CASE(
    "every-p: phases: Open MPI's recursive-doubling all-reduce is proved for every p < 2^31, z3 "
    "alone re-checks every certificate",
    "[every-p][every-p-fold][slow][sweep]") {
  std::string dir = collv::test::unique_temp("every_p_fold_ompi_certs");
  EveryPOutcome r = prove(kOmpiModel, kOmpiProof, dir);
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  CHECK(recheck_certificates(dir) == static_cast<int>(r.obligations));
}
