// Every p, `while` loops with a doubling mask (smt/every_p_doubling.cpp): MPICH's dissemination
// barrier is proved for every p from its program (trip count clog2(p), mask = 2^k, the causal
// knowledge of each rank); a mutant that skips a round only past p = 64 is disproved at p = 65;
// wrong trip counts, wrong knowledge invariants and wrong `steps` claims do not prove, so each of
// the loop's obligations is shown to matter.
#include <catch2/catch.hpp>

#include <filesystem>
#include <tuple>

#include "app/every_p_cmd.hpp"
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
const std::string kBarrier = kRoot + "/models/mpich/barrier_dissemination.coll";

EveryPOutcome prove_texts(const std::string& model_text, const std::string& proof_text,
                          const std::string& emit = "") {
  ProveCommandOptions o;
  o.timeout_ms = 60000;
  o.emit_dir = emit;
  return prove_every_p(parse_model(model_text, "m.coll"),
                       parse_every_p_proof_text(proof_text, "m.proof"), o);
}

std::string with(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE(
    "every-p: MPICH's dissemination barrier is proved for every p, z3 re-checks the "
    "certificates",
    "[every-p]") {
  std::string dir = collv::test::unique_temp("every_p_barrier_certs");
  EveryPOutcome r = prove_texts(collv::test::slurp(kBarrier),
                                collv::test::slurp(kProofs + "/barrier_dissemination.proof"), dir);
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  std::string all = lines_of(r);
  for (const char* n : {"initiation-mask-loop-while ", "initiation-heard-loop-while ",
                        "consecution-mask-loop-while ", "consecution-heard-loop-while ",
                        "trips-nonnegative-loop-while ", "trips-run-loop-while ",
                        "trips-exit-loop-while ", "match-line-19 ", "send-dst-loop-while ",
                        "postcondition-heard ", "sends-received ", "steps "})
    CHECK(all.find(n) != std::string::npos);
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string text = collv::test::slurp(e.path().string());
    smt::Result s = smt::run_smt2_script(text, 60000, 1 << 24);
    INFO(e.path().string());
    CHECK(s.answer == smt::Answer::Unsat);
    if (e.path().string().find("consecution-heard") != std::string::npos) {
      // The source is the program's (my_id - mask) mod p with mask at its closed form, and what
      // r learns is what that source knew (the `heard` term at src_r), not the goal restated.
      CHECK(text.find("(= src_r (mod (- r (pow2 i_L1)) p))") != std::string::npos);
      CHECK(text.find("(< (mod (- src_r q) p) (pow2 i_L1))") != std::string::npos);
    }
    ++files;
  }
  CHECK(files == static_cast<int>(r.obligations));
  fs::remove_all(dir);
}

TEST_CASE("every-p: a dissemination barrier that skips a round only past p = 64 is disproved at 65",
          "[every-p][heavy]") {
  for (const std::string& proof : {kProofs + "/barrier_dissemination.proof",
                                   kProofs + "/mutants/barrier_dissemination_p64.proof"}) {
    ProveCommandOptions o;
    o.timeout_ms = 60000;
    EveryPOutcome r =
        prove_every_p(parse_model_file(kProofs + "/mutants/barrier_dissemination_p64.coll"),
                      parse_every_p_proof(proof), o);
    INFO(r.note);
    CHECK(r.exit == kExitViolation);
    CHECK(r.failed_obligation == "consecution-mask-loop-while");
    CHECK(r.p == 65);
    CHECK(r.note.find("executor on complete:65") != std::string::npos);
    CHECK(r.note.find("without a chain of messages") != std::string::npos);
  }
  // The round of mask 128 skipped: wrong from p = 129 only. The mask's closed form fails from
  // p = 65, where the executor still passes: not proved (exit 3), never proved.
  ProveCommandOptions o;
  o.timeout_ms = 60000;
  EveryPOutcome r =
      prove_every_p(parse_model_file(kProofs + "/mutants/barrier_dissemination_skip64.coll"),
                    parse_every_p_proof(kProofs + "/barrier_dissemination.proof"), o);
  INFO(r.note);
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.failed_obligation == "consecution-mask-loop-while");
  CHECK(r.p == 65);
  CHECK(r.note.find("the executor passes on complete:65..71") != std::string::npos);
}

TEST_CASE(
    "every-p: the while loop's obligations each matter: trip count, knowledge, steps, rounds "
    "one short",
    "[every-p][heavy]") {
  std::string model = collv::test::slurp(kBarrier);
  std::string proof = collv::test::slurp(kProofs + "/barrier_dissemination.proof");
  // {model change, proof change, the obligation that fails, exit}
  const std::vector<std::tuple<std::pair<std::string, std::string>,
                               std::pair<std::string, std::string>, std::string, int>>
      cases = {
          // One trip too many or too few claimed: the program's condition says otherwise.
          {{"", ""},
           {"trips while (clog2 p)", "trips while (+ (clog2 p) 1)"},
           "trips-run-loop-while",
           kExitInconclusive},
          {{"", ""},
           {"trips while (clog2 p)", "trips while (- (clog2 p) 1)"},
           "trips-exit-loop-while",
           kExitInconclusive},
          // Knowledge claimed to double too fast: initiation holds (k = 0), consecution does not.
          {{"", ""},
           {"(pow2 k))\n", "(ite (= k 0) 1 (pow2 (+ k 1))))\n"},
           "consecution-heard-loop-while",
           kExitInconclusive},
          // Knowledge claimed at the start that r does not have.
          {{"", ""},
           {"(pow2 k))\n", "(pow2 (+ k 1)))\n"},
           "initiation-heard-loop-while",
           kExitInconclusive},
          // A wrong `steps` claim in the header.
          {{"steps      clog2(p)", "steps      clog2(p) + 1"}, {"", ""}, "steps", kExitViolation},
          // A claim that reads clog2 where it is undefined (clog2(0) at p = 2, refused by the
          // executor): the query's clog2 is exact only on 1 .. 2^32, so it is not proved.
          {{"steps      clog2(p)", "steps      if p = 2 then clog2(p - 2) + 1 else clog2(p)"},
           {"", ""},
           "steps",
           kExitInconclusive},
          // One round short for every p (the last doubling skipped), with the proof adjusted to
          // it: the program is wrong, the postcondition says so, the executor agrees at p = 3.
          {{"while mask < p do", "while 2 * mask < p do"},
           {"trips while (clog2 p)", "trips while (- (clog2 p) 1)"},
           "postcondition-heard",
           kExitViolation},
          // A condition on my_id: the stated trip count (free of r) cannot match every rank (the
          // executor deadlocks at p = 3).
          {{"while mask < p do", "while mask < p + my_id do"},
           {"", ""},
           "trips-exit-loop-while",
           kExitViolation},
      };
  for (const auto& [mc, pc, failing, code] : cases) {
    std::string m = mc.first.empty() ? model : with(model, mc.first, mc.second);
    std::string pf = pc.first.empty() ? proof : with(proof, pc.first, pc.second);
    EveryPOutcome r = prove_texts(m, pf);
    INFO(mc.second << " / " << pc.second << ": " << r.note);
    CHECK(r.exit == code);
    CHECK(r.failed_obligation == failing);
  }
}

TEST_CASE("every-p: while loops outside the fragment, and proofs without a trip count, are refused",
          "[every-p]") {
  std::string model = collv::test::slurp(kBarrier);
  std::string proof = collv::test::slurp(kProofs + "/barrier_dissemination.proof");
  // {model change, proof line dropped, the reason, where}
  const std::vector<std::tuple<std::string, std::string, std::string, std::string, std::string>>
      cases = {
          {"        mask := mask * 2;\n", "        mask := mask * 2;\n        break;\n", "",
           "only assignments, one send and one receive", "m.coll:21:9"},
          {"        mask := mask * 2;\n",
           "        if mask > 4 then send token to my_id; endif;\n        mask := mask * 2;\n", "",
           "more than one send or receive in a round loop", "m.coll:20:26"},  // a second send
          {"", "", "trips while (clog2 p)\n", "needs its trip count", "m.coll:17:5"},
          {"", "", "heard while (< (mod (- r q) p) (pow2 k))\n", "needs 'heard while TERM'",
           "m.coll:17:5"},
      };
  for (const auto& [from, to, drop, why, where] : cases) {
    std::string m = from.empty() ? model : with(model, from, to);
    std::string pf = drop.empty() ? proof : with(proof, drop, "");
    EveryPOutcome r = prove_texts(m, pf);
    INFO(to << drop << ": " << r.note);
    CHECK(r.exit == kExitInconclusive);
    CHECK(r.note.find(why) != std::string::npos);
    CHECK(r.note.find(where) != std::string::npos);
  }
  // An `if` of assignments only is read (both branches, merged into if-then-else terms,
  // every_p_xor.cpp): this one doubles the mask twice past 4, which consecution catches.
  {
    EveryPOutcome r = prove_texts(with(model, "        mask := mask * 2;\n",
                                       "        if mask > 4 then mask := mask * 2; endif;\n"
                                       "        mask := mask * 2;\n"),
                                  proof);
    INFO(r.note);
    CHECK(r.exit != kExitOk);
    CHECK(r.failed_obligation.find("consecution-mask-loop-while") != std::string::npos);
  }
  // A trip count naming the rank: every rank must run the same rounds.
  EveryPOutcome r =
      prove_texts(model, with(proof, "trips while (clog2 p)", "trips while (+ (clog2 p) r)"));
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("trips term") != std::string::npos);
  CHECK(r.note.find("'r'") != std::string::npos);
}

TEST_CASE(
    "every-p: MPICH's Bruck allgather (doubling while loop, ∪, len, a local rotation loop) is "
    "proved for every p and count, its rotation wrong past p = 64 is disproved at 65",
    "[every-p][heavy]") {
  const std::string bruck = kRoot + "/models/mpich/allgather_bruck.coll";
  std::string proof = collv::test::slurp(kProofs + "/allgather_bruck.proof");
  std::string dir = collv::test::unique_temp("every_p_bruck_certs");
  EveryPOutcome r = prove_texts(collv::test::slurp(bruck), proof, dir);
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  std::string all = lines_of(r);
  // The rounds (the while loop) and the rotation (a local for loop: no rounds, no match).
  for (const char* n :
       {"consecution-tmp-loop-while ", "nodup-tmp-line-25 ", "read-loop-while ",
        "trips-exit-loop-while ", "initiation-result-loop-i ", "consecution-result-loop-i ",
        "read-loop-i ", "postcondition-blocks ", "steps "})
    CHECK(all.find(n) != std::string::npos);
  CHECK(all.find("send-dst-loop-i ") == std::string::npos);
  CHECK(collv::test::everyp::recheck_certificates(dir) == static_cast<int>(r.obligations));
  fs::remove_all(dir);

  ProveCommandOptions o;
  o.timeout_ms = 60000;
  r = prove_every_p(parse_model_file(kProofs + "/mutants/allgather_bruck_p64.coll"),
                    parse_every_p_proof(kProofs + "/allgather_bruck.proof"), o);
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "consecution-result-loop-i");
  CHECK(r.p == 65);
  CHECK(r.note.find("executor on complete:65 count 1: postcondition fails") != std::string::npos);

  // Each part of the proof matters: tmp claimed in the other order (the round's obligations
  // fail, the first of them NODUP; the program is right: not proved), the rotation's invariant off
  // by one (initiation), a round that sends one block too few (the ∪ then leaves a hole:
  // disproved).
  r = prove_texts(collv::test::slurp(bruck),
                  with(proof, "(it (mod (+ r b) p) 0)", "(it (mod (- r b) p) 0)"));
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.failed_obligation == "nodup-tmp-line-25");
  r = prove_texts(collv::test::slurp(bruck),
                  with(proof, "invariant i result length i", "invariant i result length (+ i 1)"));
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.failed_obligation == "initiation-result-loop-i");
  r = prove_texts(with(collv::test::slurp(bruck), "cnt := min(pof2, p - pof2);",
                       "cnt := min(pof2, p - pof2 - 1);"),
                  proof);
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  // A loop with a send and no receive is outside the fragment.
  r = prove_texts(with(collv::test::slurp(bruck),
                       "        receive got from (my_id + pof2) mod p;\n", "        got := tmp;\n"),
                  proof);
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("a send and no receive") != std::string::npos);
}
