// Every p from the model, the binomial scatter (smt/every_p_tree.cpp): MPICH's scatter_binomial
// program, read as one tree over the root's path (its loop lays x out by relative rank: an
// induction) and the others', each message a term over the receiver and the unrolled mask. With
// `requires p <= 8` (in place of a note line, so every line keeps its number) it is proved for
// every root and count in CI; each obligation the scatter adds or changes fails on a program or
// proof built to break it. The model itself is proved for every p < 2^31
// (proofs/every-p/scatter_binomial.proof) and its mutants are disproved in the [sweep] test
// (scripts/sweep-tests.sh).
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

// MPICH's model with `requires p <= 8` in place of its second note (the same line numbers).
std::string small_model() {
  return replaced(with_requires(kRoot + "/models/mpich/scatter_binomial.coll",
                                "  note       \"Cost derived", 8),
                  "model scatter_binomial", "model m");
}

std::string proof() {
  return replaced(collv::test::slurp(kProofs + "/scatter_binomial.proof"),
                  "model ../../models/mpich/scatter_binomial.coll", "model m.coll");
}

}  // namespace

TEST_CASE(
    "every-p scatter: MPICH's binomial scatter with p <= 8 is proved for every root and count",
    "[every-p][every-p-tree][every-p-scatter][heavy]") {
  EveryPOutcome r = prove_text(small_model(), proof());
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  const std::string all = lines_of(r);
  for (const char* ob :
       {"initiation-tmp-loop-i", "consecution-tmp-loop-i", "match-line-32@path2-recv-k1",
        "order-line-32@path2-recv-k2", "message-line-41@path0-exit-k3",
        "message-line-41@path2-recv-k2", "read-line-41@path0-exit-k3",
        "infeasible-line-31@path0-recv-k0", "infeasible-line-31@path2-exit-k3",
        "postcondition-blocks@path0-exit-k3", "postcondition-blocks@path2-recv-k0", "steps-root"})
    CHECK(all.find(std::string("ok           ") + ob) != std::string::npos);
  // The root's path never receives, the others' never leave the loop without receiving: those
  // paths are pruned, so none of their queries is written.
  CHECK(all.find("match-line-32@path0") == std::string::npos);
  CHECK(all.find("postcondition-blocks@path2-exit") == std::string::npos);
  // One slice-read query a path (not one a send): at most one per path and kind.
  CHECK(all.find("read-line-41@path0-exit-k3-2") == std::string::npos);
}

TEST_CASE(
    "every-p scatter: each obligation of the scatter's tree fails on a program or proof that "
    "breaks it",
    "[every-p][every-p-tree][every-p-scatter][heavy]") {
  const std::string m = small_model(), pf = proof();
  // match: the source without the root (right only for root 0).
  CHECK(some_sat(answers_of(analyze_text(replaced(m, "receive tmp from ((rel - mask) + root) mod p",
                                                  "receive tmp from (rel - mask) mod p"),
                                         pf),
                            "match-line-32", true)));
  // received: every send goes one rank too far.
  CHECK(some_sat(answers_of(
      analyze_text(replaced(m, "to (my_id + mask) mod p", "to (my_id + mask + 1) mod p"), pf),
      "received-line-41", true)));
  // read: the slice sent is one block too long (past tmp's end for the last child).
  CHECK(some_sat(answers_of(analyze_text(replaced(m, "send tmp[mask * E .. (mask + cnt) * E - 1]",
                                                  "send tmp[mask * E .. (mask + cnt + 1) * E - 1]"),
                                         pf),
                            "read-line-41", true)));
  // message: the subtree not cut at p (mask blocks to every child).
  CHECK(some_sat(
      answers_of(analyze_text(m, replaced(pf,
                                          "message length (ite (< mask (- p (mod (- r root) "
                                          "p))) mask (- p (mod (- r root) p)))",
                                          "message length mask")),
                 "message-line-41", true)));
  // message: the receiver's blocks in another order (relative rank rel - b).
  CHECK(some_sat(
      answers_of(analyze_text(m, replaced(pf, "(it root (mod (+ (mod (- r root) p) b root) p))",
                                          "(it root (mod (+ (- (mod (- r root) p) b) root) p))")),
                 "message-line-41", true)));
  // consecution of the root's loop: the invariant in rank order, not by relative rank.
  CHECK(some_sat(
      answers_of(analyze_text(m, replaced(pf, "invariant i tmp block (it r (mod (+ b root) p))",
                                          "invariant i tmp block (it r b)")),
                 "consecution-tmp-loop-i", true)));
  // A message term that reads a variable that is no numeral of the unrolled loops is refused.
  EveryPAnalysis bad =
      analyze_text(m, replaced(pf, "message length (ite (< mask", "message length (ite (< rel"));
  CHECK(bad.refusal.find("not a numeral here") != std::string::npos);
  // An `if` in the send loop that changes a buffer before its send is refused.
  EveryPAnalysis buf =
      analyze_text(replaced(m, "cnt := min(mask, p - rel - mask);",
                            "cnt := min(mask, p - rel - mask);\n            tmp := tmp ∪ tmp;"),
                   pf);
  CHECK(buf.refusal.find("changes a buffer") != std::string::npos);
  CHECK(buf.refusal_loc.line == 39);
  // Pruning keeps a path some rank takes: with the root's branch taken by relative rank 1 too
  // (which then receives over the tmp it laid out: still correct), that branch's receive at
  // iteration 0 is read, and its path is not declared infeasible.
  EveryPAnalysis two = analyze_text(replaced(m, "if rel = 0 then", "if rel <= 1 then"), pf);
  CHECK(two.refusal.empty());
  CHECK(has_obligation(two, "match-line-32@path0-recv-k0"));
  CHECK(!has_obligation(two, "infeasible-line-31@path0-recv-k0"));
  CHECK(has_obligation(two, "infeasible-line-31@path0-recv-k1"));
}

TEST_CASE(
    "every-p scatter: mutants of the small scatter wrong only past p = 4 or above count 1000 or "
    "for roots other than 0 are disproved at the smallest counterexample",
    "[every-p][every-p-tree][every-p-scatter][heavy]") {
  struct Case {
    const char* from;
    const char* to;
    long long p, count, root;
  };
  for (const Case& c :
       {Case{"if rel + mask < p then", "if rel + mask < p and (p <= 4 or mask <> 2) then", 5, 1, 0},
        Case{"if rel + mask < p then", "if rel + mask < p and (count <= 1000 or mask > 1) then", 2,
             1001, 0},
        Case{"b := (i + root) mod p;", "b := i;", 2, 1, 1}}) {
    EveryPOutcome r = prove_text(replaced(small_model(), c.from, c.to), proof());
    INFO(c.to << ": " << r.note);
    CHECK(r.exit == kExitViolation);
    CHECK(r.p == c.p);
    CHECK(r.count == c.count);
    CHECK(r.root == c.root);
  }
}

TEST_CASE(
    "every-p scatter: MPICH's binomial scatter is proved for every p < 2^31 and every root and "
    "count (z3 re-checks every certificate) and its mutants are disproved",
    "[every-p][every-p-tree][every-p-scatter][slow][sweep]") {
  std::string dir = collv::test::unique_temp("every_p_scatter");
  EveryPOutcome r = prove(kRoot + "/models/mpich/scatter_binomial.coll",
                          kProofs + "/scatter_binomial.proof", dir);
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  const std::string all = lines_of(r);
  for (const char* ob : {"match-line-32@path2-recv-k30", "message-line-41@path0-exit-k31",
                         "bits-prefix-k31", "unroll-bound-loop-while", "steps-root"})
    CHECK(all.find(std::string("ok           ") + ob) != std::string::npos);
  CHECK(recheck_certificates(dir) == static_cast<int>(r.obligations));
  fs::remove_all(dir);
  expect_mutants_disproved(kProofs + "/mutants/scatter_binomial_",
                           {{"p64", 65, 1, 0}, {"root0", 2, 1, 1}, {"count1000", 2, 1001, 0}});
}
