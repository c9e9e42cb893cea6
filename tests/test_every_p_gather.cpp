// Every p from the model, the binomial fan-in (smt/every_p_fanin.cpp): MPICH's gather_binomial and
// reduce_binomial_commutative programs, whose ranks receive from their children at the mask
// loop's iterations and then send once to their parent, read with the proof's holder invariant
// at every unrolled iteration. With `requires p <= 8` (in place of a note line, so every line
// keeps its number) both are proved for every root and count in CI; each obligation the fan-in
// adds fails on a program or proof built to break it. The models themselves are proved for every
// p < 2^31 (proofs/every-p/gather_binomial.proof, reduce_binomial_commutative.proof) and the
// gather's mutants are disproved in the [sweep] test (scripts/sweep-tests.sh).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "cli.hpp"
#include "every_p_util.hpp"
#include "smt/solver.hpp"
#include "util/exit_codes.hpp"

using namespace collv;
using namespace collv::test::everyp;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;
const std::string kProofs = kRoot + "/proofs/every-p";

// A library model with `requires p <= 8` in place of the note starting with `note` (the same
// line numbers), named m.
std::string small(const std::string& name, const std::string& note,
                  const std::string& lib = "mpich") {
  return replaced(
      with_requires(kRoot + "/models/" + lib + "/" + name + ".coll", "  note       \"" + note, 8),
      "model " + name + "\n", "model m\n");
}

// Its proof, for the model m.coll.
std::string proof_of(const std::string& name, const std::string& model = "",
                     const std::string& lib = "mpich") {
  return replaced(collv::test::slurp(kProofs + "/" + name + ".proof"),
                  "model ../../models/" + lib + "/" + (model.empty() ? name : model) + ".coll",
                  "model m.coll");
}

std::string small_gather() { return small("gather_binomial", "Cost derived"); }
std::string gather_proof() { return proof_of("gather_binomial"); }
std::string small_reduce() { return small("reduce_binomial_commutative", "Count 0: no message."); }
std::string reduce_proof() { return proof_of("reduce_binomial_commutative"); }
std::string small_ompi() { return small("gather_binomial", "The same messages", "openmpi"); }
std::string ompi_proof() { return proof_of("gather_binomial_ompi", "gather_binomial", "openmpi"); }

}  // namespace

TEST_CASE(
    "every-p gather: MPICH's binomial gather and commutative reduce with p <= 8 are proved for "
    "every root and count",
    "[every-p][every-p-gather]") {
  EveryPOutcome r = prove_text(small_gather(), gather_proof());
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  std::string all = lines_of(r);
  for (const char* ob : {"initiation-tmp-loop-while",
                         "consecution-tmp-loop-while@recv-k2",
                         "match-line-28@recv-k1",
                         "order-line-28@recv-k0",
                         "nodup-tmp-line-28@recv-k2",
                         "received-line-32@send-k1",
                         "send-dst-line-32@send-k2",
                         "rounds-line-32@send-k2",
                         "rounds-line-28@exit-k3",
                         "infeasible-line-37-else@exit-k3",
                         "infeasible-line-37-then@send-k0",
                         "initiation-result-loop-i@exit-k3",
                         "consecution-result-loop-i@exit-k3",
                         "postcondition-blocks@exit-k3",
                         "postcondition-blocks@send-k1",
                         "infeasible-line-25@recv-k3",
                         "infeasible-line-24@exit-k0",
                         "unroll-bound-loop-while",
                         "bits-prefix-k31",
                         "bits-lemma-32",
                         "steps-root"})
    CHECK(all.find(std::string("ok           ") + ob) != std::string::npos);
  // Iterations no rank reaches when p <= 8 are pruned: none of their queries is written.
  CHECK(all.find("match-line-28@recv-k3") == std::string::npos);
  CHECK(all.find("postcondition-blocks@exit-k4") == std::string::npos);

  EveryPOutcome x = prove_text(small_reduce(), reduce_proof());
  INFO(x.note);
  REQUIRE(x.exit == kExitOk);
  all = lines_of(x);
  for (const char* ob :
       {"combine-line-28@recv-k1", "consecution-x-loop-while@recv-k2", "received-line-31@send-k0",
        "nodup-x-line-27@recv-k2", "postcondition-blocks@exit-k3", "steps-root"})
    CHECK(all.find(std::string("ok           ") + ob) != std::string::npos);
}

TEST_CASE(
    "every-p gather: each obligation of the fan-in fails on a program or proof that breaks it",
    "[every-p][every-p-gather][heavy]") {
  const std::string m = small_gather(), pf = gather_proof();
  auto sat_in = [&](const std::string& model, const std::string& proof, const char* prefix) {
    EveryPAnalysis a = analyze_text(model, proof);
    INFO(a.refusal);
    REQUIRE(a.refusal.empty());
    return some_sat(answers_of(a, prefix, true));
  };
  // match: a wrong child (one rank past the child), and the rank itself.
  CHECK(sat_in(
      replaced(m, "receive got from (src + root) mod p", "receive got from (src + root + 1) mod p"),
      pf, "match-line-28"));
  CHECK(sat_in(replaced(m, "receive got from (src + root) mod p", "receive got from my_id"), pf,
               "match-line-28"));
  // nodup: receiving from itself brings blocks r already holds.
  CHECK(sat_in(replaced(m, "receive got from (src + root) mod p", "receive got from my_id"), pf,
               "nodup-tmp-line-28"));
  // match: a child that sends at the next iteration (round), not at this one.
  CHECK(
      sat_in(replaced(m, "src := rel OR mask;", "src := rel OR (mask * 2);"), pf, "match-line-28"));
  // received: a wrong parent (one rank past it).
  CHECK(sat_in(replaced(m, "send tmp to ((rel XOR mask) + root) mod p",
                        "send tmp to ((rel XOR mask) + root + 1) mod p"),
               pf, "received-line-32"));
  // leave-loop-while: the send branch ends in an assignment instead of `break`, and the loop's
  // condition still holds after it (the rank would go on in the loop).
  CHECK(sat_in(replaced(m, "            break;", "            mask := mask;"), pf,
               "leave-loop-while"));
  // consecution: the received blocks before the own ones (a wrong block order), or the own ones
  // dropped.
  CHECK(sat_in(replaced(m, "tmp := tmp ∪ got;", "tmp := got ∪ tmp;"), pf,
               "consecution-tmp-loop-while"));
  CHECK(sat_in(replaced(m, "tmp := tmp ∪ got;", "tmp := got;"), pf, "consecution-tmp-loop-while"));
  // consecution: the holder not cut at p.
  CHECK(sat_in(m,
               replaced(pf,
                        "invariant while tmp length (ite (< mask (- p (mod (- r root) p))) mask (- "
                        "p (mod (- r root) p)))",
                        "invariant while tmp length mask"),
               "consecution-tmp-loop-while"));
  // order: parents first (the waits-for order reversed).
  CHECK(sat_in(m, replaced(pf, "order (- p (mod (- r root) p))", "order (mod (- r root) p)"),
               "order-line-28"));
  // rounds: decreasing along a path.
  CHECK(sat_in(m, replaced(pf, "round (clog2 mask)", "round (- 0 (clog2 mask))"), "rounds-line"));
  // steps: one round more than the root's receives.
  CHECK(sat_in(replaced(m, "steps      if count = 0 then 0 else clog2(p)",
                        "steps      if count = 0 then 0 else clog2(p) + 1"),
               pf, "steps-root"));
  // The root's rotation into rank order, not by relative rank: its invariant's consecution.
  CHECK(sat_in(replaced(m, "b := (i + root) mod p;", "b := i;"), pf, "consecution-result-loop-i"));
  // The reduce's parent (rel AND NOT mask, the fan-in's other spelling): one rank past it.
  CHECK(sat_in(replaced(small_reduce(), "send x to ((rel AND NOT mask) + root) mod p",
                        "send x to ((rel AND NOT mask) + root + 1) mod p"),
               reduce_proof(), "received-line-31"));
  // The reduce's sum in rank order, not received first: combine (rank order claimed) fails once
  // the operator is not commutative.
  CHECK(sat_in(replaced(small_reduce(), "operator   commutative", "operator   associative"),
               reduce_proof(), "combine-line-28"));

  // Refused, with file:line:col: a send before the loop, an else branch that receives after its
  // send, a test of another bit, a holder invariant left out, an `if` after the loop that ranks
  // of one path take both ways.
  struct Refusal {
    std::string model, proof, why;
    int line;
  };
  for (const Refusal& x :
       {Refusal{replaced(m, "tmp := x;", "tmp := x;\n    send x to root;"), pf,
                "other communication", 25},
        Refusal{replaced(m, "            break;", "            receive got from root;"), pf,
                "binomial fan-in", 33},
        Refusal{replaced(m, "if (rel AND mask) = 0 then", "if (rel AND (mask * 2)) = 0 then"), pf,
                "test bit k", 25},
        Refusal{m, replaced(pf, "invariant while tmp block", "invariant whilst tmp block"),
                "invariant while tmp", 24},
        Refusal{replaced(m, "if rel = 0 then", "if rel <= 1 then"), pf, "both ways", 37}}) {
    EveryPAnalysis a = analyze_text(x.model, x.proof);
    INFO(x.why << ": " << a.refusal);
    CHECK(a.refusal.find(x.why) != std::string::npos);
    CHECK(a.refusal_loc.line == x.line);
  }
}

TEST_CASE(
    "every-p gather: a dropped block is caught by the holder invariant's consecution alone, and "
    "mutants of the small gather wrong only past p = 4, above count 1000 or for roots other than "
    "0 are disproved at the smallest counterexample",
    "[every-p][every-p-gather][heavy]") {
  // The own blocks dropped at every receive: only the holder invariant's consecution sees it
  // (the later queries read the invariant), so with that check switched off the program would
  // be proved. It is disproved, the executor failing at the same size.
  EveryPOutcome d =
      prove_text(replaced(small_gather(), "tmp := tmp ∪ got;", "tmp := got;"), gather_proof());
  INFO(d.note);
  CHECK(d.exit == kExitViolation);
  CHECK(d.failed_obligation.rfind("consecution-tmp-loop-while", 0) == 0);
  CHECK(d.p == 2);
  struct Case {
    const char* from;
    const char* to;
    long long p, count, root;
  };
  for (const Case& c :
       {Case{"if src < p then", "if src < p and (p <= 4 or mask <> 2) then", 5, 1, 0},
        Case{"if src < p then", "if src < p and (count <= 1000 or mask > 1) then", 2, 1001, 0},
        Case{"b := (i + root) mod p;", "b := i;", 2, 1, 1}}) {
    EveryPOutcome r = prove_text(replaced(small_gather(), c.from, c.to), gather_proof());
    INFO(c.to << ": " << r.note);
    CHECK(r.exit == kExitViolation);
    CHECK(r.p == c.p);
    CHECK(r.count == c.count);
    CHECK(r.root == c.root);
  }
}

TEST_CASE(
    "every-p gather: MPICH's binomial gather and commutative reduce are proved for every p < "
    "2^31 and every root and count (z3 re-checks every certificate) and the gather's mutants are "
    "disproved",
    "[every-p][every-p-gather][slow][sweep]") {
  for (const char* name : {"gather_binomial", "reduce_binomial_commutative"}) {
    std::string dir = collv::test::unique_temp("every_p_gather");
    EveryPOutcome r =
        prove(kRoot + "/models/mpich/" + name + ".coll", kProofs + "/" + name + ".proof", dir);
    INFO(name << ": " << r.note);
    REQUIRE(r.exit == kExitOk);
    const std::string all = lines_of(r);
    for (const char* ob : {"bits-prefix-k31", "unroll-bound-loop-while", "steps-root"})
      CHECK(all.find(std::string("ok           ") + ob) != std::string::npos);
    CHECK(recheck_certificates(dir) == static_cast<int>(r.obligations));
    fs::remove_all(dir);
  }
  expect_mutants_disproved(kProofs + "/mutants/gather_binomial_",
                           {{"p64", 65, 1, 0}, {"count1000", 2, 1001, 0}, {"root0", 2, 1, 1}});
}

TEST_CASE(
    "every-p gather: Open MPI's binomial gather with p <= 8 is proved for every root and count "
    "(the bit test in the loop's condition and the send after the loop)",
    "[every-p][every-p-gather]") {
  EveryPOutcome r = prove_text(small_ompi(), ompi_proof());
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  const std::string all = lines_of(r);
  for (const char* ob :
       {"initiation-tmp-loop-while", "consecution-tmp-loop-while@recv-k2", "match-line-26@recv-k1",
        "order-line-26@recv-k0", "nodup-tmp-line-26@recv-k2", "received-line-32@send-k1",
        "send-dst-line-32@send-k2", "rounds-line-32@send-k2", "rounds-line-26@exit-k3",
        "infeasible-line-31-else@send-k1", "infeasible-line-31-then@exit-k3",
        "consecution-result-loop-i@exit-k3", "postcondition-blocks@exit-k3",
        "unroll-bound-loop-while"})
    CHECK(all.find(std::string("ok           ") + ob) != std::string::npos);
  // `steps at most`: the rounds bound the schedule, no steps-root.
  CHECK(all.find("steps-root") == std::string::npos);
}

TEST_CASE(
    "every-p gather: Open MPI's shape fails on a program or proof that breaks it, and is refused "
    "where the ranks leaving at one bit do not all reach the send",
    "[every-p][every-p-gather][heavy]") {
  const std::string m = small_ompi(), pf = ompi_proof();
  auto sat_in = [&](const std::string& model, const std::string& proof, const char* prefix) {
    EveryPAnalysis a = analyze_text(model, proof);
    INFO(a.refusal);
    REQUIRE(a.refusal.empty());
    return some_sat(answers_of(a, prefix, true));
  };
  // match: a wrong child; received: a wrong parent (both one rank past).
  CHECK(sat_in(replaced(m, "receive got from (rel + mask + root) mod p",
                        "receive got from (rel + mask + root + 1) mod p"),
               pf, "match-line-26"));
  CHECK(sat_in(replaced(m, "send tmp to (rel - mask + root) mod p",
                        "send tmp to (rel - mask + root + 1) mod p"),
               pf, "received-line-32"));
  // consecution: the own blocks dropped at a receive.
  CHECK(sat_in(replaced(m, "tmp := tmp ∪ got;", "tmp := got;"), pf, "consecution-tmp-loop-while"));
  // rounds: a bound one round below what the tree takes.
  CHECK(sat_in(replaced(m, "else 2 * clog2(p)\n", "else clog2(p) - 1\n"), pf, "rounds-line"));
  // Refused: the `if` before the send taken both ways by ranks that leave at one bit.
  EveryPAnalysis a = analyze_text(replaced(m, "if rel <> 0 then", "if rel <> 1 then"), pf);
  INFO(a.refusal);
  CHECK(a.refusal.find("taken one way") != std::string::npos);
  CHECK(a.refusal_loc.line == 31);
}

TEST_CASE(
    "every-p gather: Open MPI's binomial gather is proved for every p < 2^31 and every root and "
    "count (z3 re-checks every certificate) and its mutants are disproved",
    "[every-p][every-p-gather][slow][sweep]") {
  std::string dir = collv::test::unique_temp("every_p_gather_ompi");
  EveryPOutcome r = prove(kRoot + "/models/openmpi/gather_binomial.coll",
                          kProofs + "/gather_binomial_ompi.proof", dir);
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  const std::string all = lines_of(r);
  for (const char* ob : {"bits-prefix-k31", "unroll-bound-loop-while", "match-line-26@recv-k30",
                         "received-line-32@send-k30"})
    CHECK(all.find(std::string("ok           ") + ob) != std::string::npos);
  CHECK(recheck_certificates(dir) == static_cast<int>(r.obligations));
  fs::remove_all(dir);
  expect_mutants_disproved(kProofs + "/mutants/gather_binomial_ompi_",
                           {{"p64", 65, 1, 0}, {"count1000", 2, 1001, 0}, {"root0", 2, 1, 1}});
}
