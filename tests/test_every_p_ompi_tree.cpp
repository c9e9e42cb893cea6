// Every p from the model, Open MPI's binomial trees (smt/every_p_tree_search.cpp): the broadcast's
// loop that finds the parent's bit (hb, the relative rank's highest set bit) before the receive is
// unrolled like MPICH's receive loop, and the send loop `while mask < p` (a condition that is not a
// numeral on the unrolled path) is unrolled under its heads' conditions until the mask passes
// 2^31. With `requires p <= 8` (in place of its note line, so every line keeps its number) the
// model is proved for every root and count in CI; each obligation the reading adds fails on a
// program or proof built to break it, and mutants wrong only past p = 4, above count 1000 or for
// roots other than 0 are disproved. The model itself is proved for every p < 2^31
// (proofs/every-p/bcast_binomial_ompi.proof) and its mutants are disproved in the [sweep] test.
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

// Open MPI's broadcast with `requires p <= 8` in place of its note (the same line numbers).
std::string small_bcast() {
  return replaced(with_requires(kRoot + "/models/openmpi/bcast_binomial.coll",
                                "  note       \"Relative ranks", 8),
                  "model bcast_binomial", "model m");
}

std::string bcast_proof() {
  return replaced(collv::test::slurp(kProofs + "/bcast_binomial_ompi.proof"),
                  "model ../../models/openmpi/bcast_binomial.coll", "model m.coll");
}

}  // namespace

TEST_CASE(
    "every-p ompi tree: Open MPI's binomial broadcast with p <= 8 is proved for every root and "
    "count",
    "[every-p][every-p-ompi-tree]") {
  EveryPOutcome r = prove_text(small_bcast(), bcast_proof());
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  const std::string all = lines_of(r);
  for (const char* ob :
       {"unroll-bound-loop-while@path0", "infeasible-line-23@path0-recv-k3",
        "match-line-26@path0-recv-k2", "order-line-26@path0-recv-k2",
        "unroll-bound-line-29@path0-recv-k0", "unroll-bound-line-29@path2-sends",
        "message-line-31@path2-sends", "rounds-line-26@path0-recv-k1",
        "received-line-31@path0-some-k0-k2", "received-line-31@path2-sends",
        "postcondition-blocks@path0-recv-k2", "postcondition-blocks@path2-sends", "steps-root"})
    CHECK(all.find(std::string("ok           ") + ob) != std::string::npos);
}

TEST_CASE(
    "every-p ompi tree: each obligation of Open MPI's broadcast fails on a program or proof that "
    "breaks it",
    "[every-p][every-p-ompi-tree][heavy]") {
  const std::string m = small_bcast(), pf = bcast_proof();
  // match: without `receive mask hb` the receive reads the program's mask (1), so every
  // receive is placed in round 0, where only the root's first send goes.
  CHECK(some_sat(answers_of(analyze_text(m, replaced(pf, "receive mask hb\n", "")),
                            "match-line-26@path0-recv-k1", true)));
  // received: every send goes one rank too far.
  CHECK(some_sat(answers_of(analyze_text(replaced(m, "send buf to (rel + mask + root) mod p",
                                                  "send buf to (rel + mask + root + 1) mod p"),
                                         pf),
                            "received-line-31", true)));
  // rounds: the sends' rounds counting down.
  CHECK(some_sat(
      answers_of(analyze_text(m, replaced(pf, "round (clog2 mask)", "round (- 3 (clog2 mask))")),
                 "rounds-line-", true)));
  // message: two blocks claimed.
  CHECK(some_sat(answers_of(analyze_text(m, replaced(pf, "message length 1", "message length 2")),
                            "message-line-31", true)));
  // unroll-bound of the send loop: a condition that still holds where the mask reaches 2^31
  // (the loop would run on without sending).
  CHECK(some_sat(answers_of(
      analyze_text(replaced(m, "while mask < p do", "while mask < p + 4294967296 do"), pf),
      "unroll-bound-line-29", true)));
  // unroll-bound of the search loop: a search that does not stop in 32 iterations.
  CHECK(some_sat(answers_of(
      analyze_text(replaced(m, "while hb * 2 <= rel do", "while hb <= rel + 8589934592 do"), pf),
      "unroll-bound-loop-while", true)));
  // steps: one more than the root sends.
  CHECK(
      some_sat(answers_of(analyze_text(replaced(m, "steps      if count = 0 then 0 else clog2(p)",
                                                "steps      if count = 0 then 0 else clog2(p) + 1"),
                                       pf),
                          "steps-root", true)));
}

TEST_CASE(
    "every-p ompi tree: `steps at most` and a header's exact division and a round term over the "
    "sender are read as stated and fail where they are wrong",
    "[every-p][every-p-ompi-tree][heavy]") {
  const std::string m = small_bcast(), pf = bcast_proof();
  const std::string steps = "steps      if count = 0 then 0 else clog2(p)";
  // A bound met exactly: proved without steps-root (a bound needs only the rounds).
  EveryPAnalysis at = analyze_text(
      replaced(m, steps, "steps      at most if count = 0 then 0 else 2 * clog2(p) / 2"), pf);
  REQUIRE(at.refusal.empty());
  CHECK(std::none_of(at.obligations.begin(), at.obligations.end(),
                     [](const EveryPObligation& o) { return o.name == "steps-root"; }));
  std::vector<smt::Answer> ok = answers_of(at, "rounds-line-", true);
  CHECK(!ok.empty());
  CHECK(!some_sat(ok));
  // One round too few: the rounds exceed it.
  CHECK(some_sat(answers_of(
      analyze_text(replaced(m, steps, "steps      at most if count = 0 then 0 else clog2(p) - 1"),
                   pf),
      "rounds-line-", true)));
  // A bound that is a fraction ((2 clog2(p) + 1) / 2, above the rounds): `/` is exact division,
  // an unknown value where it is not an integer, so the bound is not proved there.
  CHECK(some_sat(answers_of(
      analyze_text(
          replaced(m, steps, "steps      at most if count = 0 then 0 else (2 * clog2(p) + 1) / 2"),
          pf),
      "rounds-line-", true)));
  // A round term over the sender (it reads r): read at a send for the rank, at a receive for its
  // source. The round plus 0 * rel is proved; plus rel exceeds steps.
  const std::string rel = "(mod (- r root) p)";
  EveryPAnalysis zero = analyze_text(
      m, replaced(pf, "round (clog2 mask)", "round (+ (clog2 mask) (* 0 " + rel + "))"));
  REQUIRE(zero.refusal.empty());
  CHECK(!some_sat(answers_of(zero, "match-line-26@path0-recv-k2")));
  CHECK(!some_sat(answers_of(zero, "received-line-31@path2-sends")));
  CHECK(!some_sat(answers_of(zero, "rounds-line-26@path0-recv-k2")));
  CHECK(some_sat(answers_of(
      analyze_text(m, replaced(pf, "round (clog2 mask)", "round (+ (clog2 mask) " + rel + ")")),
      "rounds-line-", true)));
  // Over the sender, the round may read only the unrolled loops' numerals (rel is none).
  EveryPAnalysis bad = analyze_text(m, replaced(pf, "round (clog2 mask)", "round (+ rel (* 0 r))"));
  CHECK(bad.refusal.find("not a numeral here") != std::string::npos);
}

TEST_CASE(
    "every-p ompi tree: what Open MPI's tree reading cannot read is refused with file:line:col",
    "[every-p][every-p-ompi-tree]") {
  const std::string m = small_bcast(), pf = bcast_proof();
  // `receive NAME VAR` naming a variable the program does not have.
  EveryPAnalysis a = analyze_text(m, replaced(pf, "receive mask hb", "receive mask hb2"));
  CHECK(a.refusal.find("receive mask hb2: both must be integer variables") != std::string::npos);
  CHECK_THROWS(
      parse_every_p_proof_text(replaced(pf, "receive mask hb", "receive mask"), "m.proof"));
  // A buffer assigned in a send loop whose condition is not a numeral.
  EveryPAnalysis b =
      analyze_text(replaced(m, "      mask := mask * 2;\n    endwhile;\n  endif;",
                            "      mask := mask * 2;\n      buf := buf;\n    endwhile;\n  endif;"),
                   pf);
  CHECK(b.refusal.find("may assign integers only") != std::string::npos);
  CHECK(b.refusal_loc.line == 34);
  // A send between the search loop and the receive.
  EveryPAnalysis c = analyze_text(
      replaced(m, "      receive buf from", "      send buf to root;\n      receive buf from"), pf);
  CHECK(c.refusal.find("Open MPI's shape") != std::string::npos);
  CHECK(c.refusal_loc.line == 26);
}

TEST_CASE(
    "every-p ompi tree: mutants of the small broadcast wrong only past p = 4 or above count 1000 "
    "or for roots other than 0 are disproved at the smallest counterexample",
    "[every-p][every-p-ompi-tree][heavy]") {
  struct Case {
    const char* from;
    const char* to;
    long long p, count, root;
  };
  for (const Case& c :
       {Case{"if rel + mask < p then", "if rel + mask < p and (p <= 4 or mask <> 4) then", 5, 1, 0},
        Case{"if rel + mask < p then", "if rel + mask < p and (count <= 1000 or mask <> 1) then", 2,
             1001, 0},
        Case{"receive buf from (rel - hb + root) mod p;", "receive buf from (rel - hb) mod p;", 2,
             1, 1}}) {
    EveryPOutcome r = prove_text(replaced(small_bcast(), c.from, c.to), bcast_proof());
    INFO(c.to << ": " << r.note);
    CHECK(r.exit == kExitViolation);
    CHECK(r.p == c.p);
    CHECK(r.count == c.count);
    CHECK(r.root == c.root);
  }
}

TEST_CASE(
    "every-p ompi tree: Open MPI's binomial broadcast is proved for every p < 2^31 and every root "
    "and count (z3 re-checks every certificate) and its mutants are disproved",
    "[every-p][every-p-ompi-tree][slow][sweep]") {
  std::string dir = collv::test::unique_temp("every_p_ompi_bcast");
  EveryPOutcome r = prove(kRoot + "/models/openmpi/bcast_binomial.coll",
                          kProofs + "/bcast_binomial_ompi.proof", dir);
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  const std::string all = lines_of(r);
  for (const char* ob :
       {"match-line-26@path0-recv-k30", "unroll-bound-line-29@path0-recv-k29",
        "unroll-bound-loop-while@path0", "infeasible-line-23@path0-recv-k31", "steps-root"})
    CHECK(all.find(std::string("ok           ") + ob) != std::string::npos);
  CHECK(recheck_certificates(dir) == static_cast<int>(r.obligations));
  fs::remove_all(dir);
  expect_mutants_disproved(kProofs + "/mutants/bcast_binomial_ompi_",
                           {{"p64", 65, 1, 0}, {"root0", 2, 1, 1}, {"count1000", 2, 1001, 0}});
}

namespace {

// Open MPI's scatter with `requires p <= N` in place of its note (the same line numbers), and its
// proof for that file.
std::string small_scatter(int n) {
  return replaced(
      with_requires(kRoot + "/models/openmpi/scatter_binomial.coll", "  note       \"tmp holds", n),
      "model scatter_binomial", "model m");
}

// The answer to one obligation of an analysis (a fresh solver).
smt::Answer answer(const EveryPAnalysis& a, const std::string& name) {
  for (const auto& o : a.obligations)
    if (o.name == name)
      return smt::run_smt2_script(o.script + "(check-sat-assuming (a))\n", 60000, 1 << 24).answer;
  FAIL("no obligation " << name);
  return smt::Answer::Unknown;
}

std::string scatter_proof() {
  return replaced(collv::test::slurp(kProofs + "/scatter_binomial_ompi.proof"),
                  "model ../../models/openmpi/scatter_binomial.coll", "model m.coll");
}

}  // namespace

TEST_CASE(
    "every-p ompi tree: Open MPI's binomial scatter is read in Open MPI's shape (the receive "
    "under `if rel <> 0` after the search and `steps at most` and rounds over the sender)",
    "[every-p][every-p-ompi-tree]") {
  EveryPAnalysis a = analyze_text(small_scatter(4), scatter_proof());
  INFO(a.refusal);
  REQUIRE(a.refusal.empty());
  for (const char* ob : {"initiation-tmp-loop-i", "consecution-tmp-loop-i",
                         "unroll-bound-loop-while@path0", "match-line-34@path2-recv-k0",
                         "order-line-34@path2-recv-k1", "rounds-line-34@path2-recv-k1-c2",
                         "rounds-line-34@path2-recv-k1-crest", "rounds-line-39@path0-exit-k2",
                         "message-line-39@path0-exit-k2", "unroll-bound-line-37@path2-recv-k1",
                         "postcondition-blocks@path2-recv-k1", "steps-bound@path2"})
    CHECK(has_obligation(a, ob));
  // The round term over the sender reads the bits of the relative rank: the receive paths
  // assume the bits lemmas' instances, with the source's relative rank proved to be r's minus its
  // lowest set bit.
  for (const char* ob : {"bits-src-line-34@path2-recv-k1", "bits-shift-k1", "bits-range"})
    CHECK(has_obligation(a, ob));
  // `cases rounds-line-34 1 31 (clog2 p)`: in a case the numeral stands in the term's place
  // (the case still asserted); the rest case keeps the term.
  for (const auto& o : a.obligations) {
    if (o.name == "rounds-line-34@path2-recv-k1-c2") {
      CHECK(o.script.find("(assert (= (clog2 p) 2))") != std::string::npos);
      CHECK(o.script.find("(* 2 (+ 2 1))") != std::string::npos);
    }
    if (o.name == "rounds-line-34@path2-recv-k1-crest")
      CHECK(o.script.find("(* (clog2 p) (+ (clog2 p) 1))") != std::string::npos);
  }
  CHECK(answer(a, "bits-src-line-34@path2-recv-k1") == smt::Answer::Unsat);
  CHECK(answer(a, "rounds-line-34@path2-recv-k1-c2") == smt::Answer::Unsat);
  // The root's path never receives, the others' always do: those paths are pruned.
  CHECK(has_obligation(a, "infeasible-line-30@path0-recv-k0"));
  CHECK(has_obligation(a, "infeasible-line-30@path2-exit-k0"));
  // `steps at most`: no steps-root.
  CHECK(!has_obligation(a, "steps-root"));
  // Without `receive mask low` the round and message terms read mask at the receive, where it
  // has no value: refused there.
  EveryPAnalysis b =
      analyze_text(small_scatter(4), replaced(scatter_proof(), "receive mask low\n", ""));
  CHECK(b.refusal.find("reads 'mask', which has no value here") != std::string::npos);
  CHECK(b.refusal_loc.line == 34);
}

TEST_CASE(
    "every-p ompi tree: the scatter's rounds and the source's bits can fail (a round one short "
    "and a round term over the rank not the relative rank)",
    "[every-p][every-p-ompi-tree]") {
  const std::string pf = scatter_proof();
  // Bit 1 weighted 1, not 2: relative rank 2 receives in round 1 and sends to 3 in round 1.
  const std::string w2 = "(* 2 (mod (div ";
  REQUIRE(pf.find(w2) != std::string::npos);
  EveryPAnalysis low = analyze_text(small_scatter(4), replaced(pf, w2, "(* 1 (mod (div "));
  REQUIRE(low.refusal.empty());
  CHECK(answer(low, "rounds-line-34@path2-recv-k1-c2") == smt::Answer::Sat);
  // The bits of r instead of its relative rank: the source's value is not r's minus 2^k when
  // root > 0 (a term about r's bits is a valid round term only if the proof shows it).
  const std::string rel = "(ite (<= root r) (- r root) (+ (- r root) p))";
  REQUIRE(pf.find(rel) != std::string::npos);
  std::string by_r = pf;
  for (auto at = by_r.find(rel); at != std::string::npos; at = by_r.find(rel, at))
    by_r.replace(at, rel.size(), "r");
  EveryPAnalysis byr = analyze_text(small_scatter(4), by_r);
  REQUIRE(byr.refusal.empty());
  CHECK(answer(byr, "bits-src-line-34@path2-recv-k1") == smt::Answer::Sat);
}

TEST_CASE(
    "every-p ompi tree: Open MPI's binomial scatter with p <= 8 is proved for every root and "
    "count and its mutants are disproved",
    "[every-p][every-p-ompi-tree][slow]") {
  // The receive paths' rounds queries take 10-60 s of wall time each on a loaded machine: a
  // limit of 10 minutes a query, where the helpers' default is one.
  auto prove_long = [](const std::string& model, const std::string& pf) {
    ProveCommandOptions o;
    o.timeout_ms = 600000;
    return prove_every_p(parse_model(model, "m.coll"), parse_every_p_proof_text(pf, "m.proof"), o);
  };
  EveryPOutcome r = prove_long(small_scatter(8), scatter_proof());
  INFO(r.note);
  CHECK(r.exit == kExitOk);
  struct Case {
    const char* from;
    const char* to;
    long long p, count, root;
  };
  for (const Case& c :
       {Case{"while mask < low and rel + mask < p do",
             "while mask < low and rel + mask < p and (p <= 4 or mask <> 2) do", 5, 1, 0},
        Case{"while mask < low and rel + mask < p do",
             "while mask < low and rel + mask < p and (count <= 1000 or mask <> "
             "1) do",
             2, 1001, 0},
        Case{"b := (i + root) mod p;", "b := i;", 2, 1, 1}}) {
    EveryPOutcome x = prove_long(replaced(small_scatter(8), c.from, c.to), scatter_proof());
    INFO(c.to << ": " << x.note);
    CHECK(x.exit == kExitViolation);
    CHECK(x.p == c.p);
    CHECK(x.count == c.count);
    CHECK(x.root == c.root);
  }
}

TEST_CASE(
    "every-p ompi tree: Open MPI's binomial scatter for every p < 2^31 (the run that would prove "
    "it: z3 re-checks every certificate) and its mutants disproved",
    "[every-p][every-p-ompi-tree][slow][sweep]") {
  // Not seen to pass yet (docs/smt.md, "Open MPI's binomial scatter": 2,804 queries, the
  // receive paths' rounds the slowest): 300 s a query, as the halving's sweep.
  auto prove_long = [](const std::string& model, const std::string& pf, const std::string& emit) {
    ProveCommandOptions o;
    o.timeout_ms = 300000;
    o.emit_dir = emit;
    return prove_every_p(parse_model_file(model), parse_every_p_proof(pf), o);
  };
  std::string dir = collv::test::unique_temp("every_p_ompi_scatter");
  EveryPOutcome r = prove_long(kRoot + "/models/openmpi/scatter_binomial.coll",
                               kProofs + "/scatter_binomial_ompi.proof", dir);
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  CHECK(recheck_certificates(dir, 300000) == static_cast<int>(r.obligations));
  fs::remove_all(dir);
  struct Mutant {
    const char* name;
    long long p, count, root;
  };
  for (const Mutant& m :
       {Mutant{"p64", 65, 1, 0}, Mutant{"root0", 2, 1, 1}, Mutant{"count1000", 2, 1001, 0}}) {
    std::string base = kProofs + "/mutants/scatter_binomial_ompi_" + m.name;
    EveryPOutcome x = prove_long(base + ".coll", base + ".proof", "");
    INFO(m.name << ": " << x.note);
    CHECK(x.exit == kExitViolation);
    CHECK(x.p == m.p);
    CHECK(x.count == m.count);
    CHECK(x.root == m.root);
  }
}
