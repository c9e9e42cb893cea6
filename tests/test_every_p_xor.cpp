// XOR partners and the every-p prover (docs/smt.md, "XOR partners"): Open MPI's recursive-doubling
// allgather is proved for every p from its program (XOR with 2^k, queries split per round k), its
// mutants past p = 64 and above count 1000 are disproved; MPICH's pairwise all-to-all and
// recursive halving are still refused (exit 3, never a pass), and the pure bit-vector lemmas of
// bench/every_p_xor/ hold for every p < 2^31 while their late-breaking mutants do not.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "app/every_p_cmd.hpp"
#include "cli.hpp"
#include "smt/every_p.hpp"
#include "smt/every_p_analyzer.hpp"
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
  // (MPICH's recursive-doubling all-reduce is read as phases now: tests/test_every_p_fold.cpp.)
  for (const char* m :
       {"mpich/alltoall_pairwise.coll", "mpich/reduce_scatter_recursive_halving.coll"}) {
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

namespace {

const std::string kProofs = kRoot + "/proofs/every-p/";
const std::string kRdAllgather = kRoot + "/models/openmpi/allgather_recursive_doubling.coll";

EveryPOutcome prove_files(const std::string& model, const std::string& proof) {
  ProveCommandOptions o;
  o.timeout_ms = 60000;
  return prove_every_p(parse_model_file(model), parse_every_p_proof(proof), o);
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("every-p: xor_pow2 is the executor's XOR with 2^e, negative x included",
          "[every-p][heavy]") {
  // For each (x, e) the query asks whether xor_pow2 differs from x ^ 2^e (as the executor
  // computes it, int64): unsat everywhere; and a wrong value is sat (the check can fail).
  std::string defs;
  {
    // pow2_defs and xor_defs as the obligations write them: taken from a proved obligation.
    EveryPAnalysis a =
        analyze_every_p(parse_model_file(kRdAllgather),
                        parse_every_p_proof(kProofs + "allgather_recursive_doubling_ompi.proof"));
    REQUIRE(a.refusal.empty());
    for (const auto& ob : a.obligations)
      if (ob.script.find("(define-fun xor_pow2") != std::string::npos) {
        auto from = ob.script.find("(define-fun pow2");
        auto to = ob.script.find("\n", ob.script.find("(define-fun xor_pow2"));
        defs = ob.script.substr(from, to - from + 1);
        break;
      }
  }
  REQUIRE(!defs.empty());
  for (long long x : {0LL, 1LL, 5LL, 6LL, 127LL, 128LL, 2147483647LL, -1LL, -6LL, -129LL})
    for (int e : {0, 1, 2, 7, 30, 31, 32, 33, -1}) {
      long long want = e >= 0 && e <= 32 ? (x ^ (1LL << e)) : x;
      INFO("x = " << x << ", e = " << e);
      auto q = [&](long long v) {
        return defs + fmt::format("(assert (not (= (xor_pow2 {} {}) {})))\n(check-sat)\n",
                                  x < 0 ? fmt::format("(- {})", -x) : std::to_string(x),
                                  e < 0 ? "(- 1)" : std::to_string(e),
                                  v < 0 ? fmt::format("(- {})", -v) : std::to_string(v));
      };
      CHECK(answers_of(q(want)) == std::vector<smt::Answer>{U});
      CHECK(answers_of(q(want + 1)) == std::vector<smt::Answer>{S});
    }
}

TEST_CASE(
    "every-p: Open MPI's recursive-doubling allgather is proved for every p, its queries split "
    "per round k = 0..31 and the rest",
    "[every-p][heavy]") {
  EveryPOutcome r = prove_files(kRdAllgather, kProofs + "allgather_recursive_doubling_ompi.proof");
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  std::string all;
  for (const auto& l : r.lines) all += l + "\n";
  // The XOR round's obligations, each in 33 cases; the Bruck path's, unsplit.
  for (const char* n :
       {"initiation-loc-loop-while#2 ", "consecution-loc-loop-while#2-k17 ",
        "consecution-result-loop-while#2-k30 ", "consecution-result-loop-while#2-krest ",
        "match-line-31-k5 ", "match-line-31-krest ", "nodup-result-line-31-k12 ",
        "fill-line-33-k3 ", "fill-line-35-k3 ", "trips-exit-loop-while#2 ",
        "postcondition-blocks-k31 ", "postcondition-blocks-krest ", "steps-k0 ",
        "consecution-tmp-loop-while#3@path3 ", "postcondition-blocks@path3 "})
    CHECK(all.find(n) != std::string::npos);
}

TEST_CASE(
    "every-p: a split covers every iteration: each case asserts its value, the rest the others",
    "[every-p]") {
  EveryPProof pf = parse_every_p_proof(kProofs + "allgather_recursive_doubling_ompi.proof");
  EveryPAnalysis a = analyze_every_p(parse_model_file(kRdAllgather), pf);
  REQUIRE(a.refusal.empty());
  int rest = 0, cases = 0;
  for (const auto& ob : a.obligations) {
    if (ob.name.size() > 6 && ob.name.substr(ob.name.size() - 6) == "-krest") {
      ++rest;
      bool iter = ob.script.find("(assert (or (< i_L2 0) (> i_L2 31)))") != std::string::npos;
      bool exit = ob.script.find("(assert (or (< x_L2 0) (> x_L2 31)))") != std::string::npos;
      CHECK((iter || exit));
    } else if (ob.name.find("-k7") != std::string::npos) {
      ++cases;
      CHECK((ob.script.find("(assert (= i_L2 7))") != std::string::npos ||
             ob.script.find("(assert (= x_L2 7))") != std::string::npos));
    }
  }
  CHECK(rest >= 14);
  CHECK(cases == rest);
  CHECK(a.obligations.size() == 530);
  // Without the split line the same queries are one each (and nonlinear in 2^k).
  pf.invariants.erase(std::remove_if(pf.invariants.begin(), pf.invariants.end(),
                                     [](const EveryPInvariant& i) { return i.part == "split"; }),
                      pf.invariants.end());
  EveryPAnalysis b = analyze_every_p(parse_model_file(kRdAllgather), pf);
  REQUIRE(b.refusal.empty());
  CHECK(b.obligations.size() == 530 - 32 * static_cast<std::size_t>(rest));
  // A bad split count is refused with the proof's line.
  std::string text = collv::test::slurp(kProofs + "allgather_recursive_doubling_ompi.proof");
  EveryPAnalysis c = analyze_every_p(
      parse_model_file(kRdAllgather),
      parse_every_p_proof_text(replaced(text, "split while#2 32", "split while#2 0"), "m.proof"));
  CHECK(c.refusal.find("split while#2 needs a number of cases") != std::string::npos);
}

TEST_CASE(
    "every-p: a recursive-doubling allgather whose partner is off only past p = 64 is disproved at "
    "p = 128",
    "[every-p][heavy]") {
  EveryPOutcome r = prove_files(kProofs + "mutants/allgather_recursive_doubling_ompi_p64.coll",
                                kProofs + "mutants/allgather_recursive_doubling_ompi_p64.proof");
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.p == 128);  // the first power of two past 64: the XOR branch
  CHECK(r.failed_obligation.substr(r.failed_obligation.size() - 3) == "-k6");
  CHECK(r.note.find("executor on complete:128 count 1") != std::string::npos);
}

TEST_CASE(
    "every-p: a recursive-doubling allgather wrong only at counts above 1000 is disproved at "
    "count 1001",
    "[every-p][slow]") {
  EveryPOutcome r =
      prove_files(kProofs + "mutants/allgather_recursive_doubling_ompi_count1000.coll",
                  kProofs + "mutants/allgather_recursive_doubling_ompi_count1000.proof");
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.p == 2);
  CHECK(r.count == 1001);
  CHECK(r.note.find("executor on complete:2 count 1001: postcondition fails") != std::string::npos);
}

TEST_CASE("every-p: XOR and ifs in a round outside the fragment are refused with file:line:col",
          "[every-p]") {
  std::string text = collv::test::slurp(kRdAllgather);
  std::string proof = collv::test::slurp(kProofs + "allgather_recursive_doubling_ompi.proof");
  auto refusal = [&](const std::string& model) {
    EveryPAnalysis a =
        analyze_every_p(parse_model(model, "m.coll"), parse_every_p_proof_text(proof, "m.proof"));
    INFO(a.refusal);
    CHECK(a.refusal_loc.file == "m.coll");
    return a.refusal;
  };
  // XOR with something neither 2^k nor a numeral: with p, with 2^k + 1, with a negative numeral.
  for (const char* m : {"my_id XOR p", "my_id XOR (dist + 1)", "my_id XOR (0 - 1)"})
    CHECK(refusal(replaced(text, "remote := my_id XOR dist", std::string("remote := ") + m))
              .find("XOR is in the fragment only with a power of two") != std::string::npos);
  // A numeral operand is read (every_p_bits' linear term: bit 0 of r is (mod r 2)), not refused.
  {
    EveryPAnalysis a = analyze_every_p(
        parse_model(replaced(text, "remote := my_id XOR dist", "remote := my_id XOR 1"), "m.coll"),
        parse_every_p_proof_text(proof, "m.proof"));
    INFO(a.refusal);
    CHECK(a.refusal.empty());
    CHECK(std::any_of(a.obligations.begin(), a.obligations.end(), [](const EveryPObligation& o) {
      return o.script.find("(mod r 2)") != std::string::npos &&
             o.script.find("xor_pow2") == std::string::npos;
    }));
  }
  // An if in the round with a send in it.
  CHECK(refusal(replaced(text, "          loc := loc - dist;",
                         "          loc := loc - dist;\n          send x to my_id;"))
            .find("an `if` with an `else` around a round loop's send or receive") !=
        std::string::npos);
}

TEST_CASE("every-p: the program's 2^E and log2(X) are the executor's on the 32-bit range",
          "[every-p]") {
  const std::string defs = everyp::pow2_defs();
  auto answer = [&](const std::string& term, long long v) {
    return answers_of(defs + fmt::format("(assert (not (= {} {})))\n(check-sat)\n", term, v));
  };
  for (long long x : {1LL, 2LL, 3LL, 7LL, 8LL, 9LL, 1000LL, 2147483647LL, 4294967295LL}) {
    long long want = 63 - __builtin_clzll(static_cast<unsigned long long>(x));  // the executor's
    INFO("log2(" << x << ")");
    CHECK(answer(everyp::log2_int(std::to_string(x)), want) == std::vector<smt::Answer>{U});
    CHECK(answer(everyp::log2_int(std::to_string(x)), want + 1) == std::vector<smt::Answer>{S});
  }
  for (int e : {0, 1, 5, 31, 32}) {
    INFO("2^" << e);
    CHECK(answer(everyp::pow2_int(std::to_string(e)), 1LL << e) == std::vector<smt::Answer>{U});
  }
  // Outside the range the value is unknown: no claim about it holds.
  CHECK(answer(everyp::log2_int("0"), 0) == std::vector<smt::Answer>{S});
  CHECK(answer(everyp::pow2_int("33"), 0) == std::vector<smt::Answer>{S});
}
