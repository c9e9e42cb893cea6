// XOR partners and the every-p prover (docs/smt.md, "XOR partners: encoding experiments"): the
// prover refuses the XOR models today (exit 3, never a pass), and the pure bit-vector lemmas of
// bench/every_p_xor/ hold for every p < 2^31 while their late-breaking mutants do not.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "app/every_p_cmd.hpp"
#include "cli.hpp"
#include "smt/solver.hpp"
#include "util/exit_codes.hpp"

using namespace collv;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;
const std::string kXor = kRoot + "/bench/every_p_xor/";

std::vector<smt::Answer> answers_of(const std::string& text) {
  smt::Result r = smt::run_smt2_script(text, 120000, 1 << 24);
  return r.answers;
}

// The file's text with `extra` asserted before its first check (`anchor`: a line of the file).
std::string with_assert(const std::string& file, const std::string& anchor,
                        const std::string& extra) {
  std::string text = collv::test::slurp(kXor + file);
  auto at = text.find(anchor);
  REQUIRE(at != std::string::npos);
  return text.insert(at + anchor.size(), "\n" + extra + "\n");
}

EveryPOutcome prove_model(const std::string& model) {
  ProveCommandOptions o;
  o.timeout_ms = 60000;
  std::string path = kRoot + "/models/" + model;
  return prove_every_p(
      parse_model(collv::test::slurp(path), path),
      parse_every_p_proof_text("kind every-p\nmodel " + path + "\nexpect proved\n", "m.proof"), o);
}

const auto U = smt::Answer::Unsat;
const auto S = smt::Answer::Sat;

}  // namespace

TEST_CASE("every-p: the XOR-partner models are refused with the statement, never proved",
          "[every-p]") {
  for (const char* m : {"mpich/allreduce_recursive_doubling.coll", "mpich/alltoall_pairwise.coll",
                        "mpich/reduce_scatter_recursive_halving.coll"}) {
    EveryPOutcome r = prove_model(m);
    INFO(m << ": " << r.note);
    CHECK(r.exit == kExitInconclusive);
    CHECK(r.answer == "not proved");
    CHECK(r.note.find("outside the fragment at ") != std::string::npos);
    CHECK(r.note.find(std::string(m) + ":") != std::string::npos);  // file:line:col
  }
}

TEST_CASE(
    "every-p: XOR partners in pure bit-vectors: the pairwise and recursive-doubling lemmas hold "
    "for every p < 2^31, their mutants past p = 64 do not",
    "[every-p]") {
  // The partner is a rank, the partner's partner is r, result's length step (pairwise, pof2 path),
  // the recursive-doubling knowledge step.
  // The recursive-doubling all-reduce's data step after the fold: rank order of the partners,
  // adjacent ranges of old ranks, aligned groups of new ranks.
  for (const char* f : {"bv-partner-in-range.smt2", "bv-involution.smt2", "bv-length-step.smt2",
                        "bv-heard-step.smt2", "bv-rd-ranges-order.smt2",
                        "bv-rd-ranges-adjacent.smt2", "bv-rd-ranges-groups.smt2"}) {
    INFO(f);
    CHECK(answers_of(collv::test::slurp(kXor + f)) == std::vector<smt::Answer>{U});
  }
  // Mutants wrong only past p = 64: sat, and unsat once p <= 64 is assumed (so the lemma, not an
  // accident of the encoding, is what fails).
  for (const char* f : {"mutant-bv-length-step-p64.smt2", "mutant-bv-heard-step-p64.smt2"}) {
    INFO(f);
    std::string text = collv::test::slurp(kXor + f);
    CHECK(answers_of(text) == std::vector<smt::Answer>{S});
    CHECK(answers_of(with_assert(f, "(declare-const p (_ BitVec 32))",
                                 "(assert (bvule p #x00000040))")) == std::vector<smt::Answer>{U});
  }
}

TEST_CASE(
    "every-p: MPICH's non-power-of-two fold in pure bit-vectors: its five claims hold for every "
    "p < 2^31, the mutant wrong only for non-powers of two past 64 fails two of them",
    "[every-p][slow]") {
  const std::vector<smt::Answer> unsat{U};
  for (const char* c : {"rank", "dst", "part", "newrank", "back"}) {
    INFO(c);
    CHECK(answers_of(collv::test::slurp(kXor + "bv-fold-" + c + ".smt2")) == unsat);
  }
  for (const char* c : {"part", "back"}) {
    std::string m = std::string("mutant-bv-fold-p64-") + c + ".smt2";
    INFO(m);
    CHECK(answers_of(collv::test::slurp(kXor + m)) == std::vector<smt::Answer>{S});
    // Right at p <= 64, and at every power of two (rem = 0).
    CHECK(answers_of(with_assert(m, "(assert (bvult r p))", "(assert (bvule p #x00000040))")) ==
          unsat);
    CHECK(answers_of(with_assert(m, "(assert (bvult r p))", "(assert (= pof2 p))")) == unsat);
  }
}
