// Every p from the model, MPICH's binomial reduce on its non-commutative path
// (models/mpich/reduce_binomial.coll, smt/every_p_fanin.cpp): the fan-in loop left by a flag
// (`done := 1` under `while mask < p and done = 0`), the sum kept in rank order (x := x + y), and
// after the loop one send and one receive (rank 0's result to a root other than 0). With
// `requires p <= 8` (in place of a note line, so every line keeps its number) it is proved for
// every root and count in CI; each obligation the flag, the order and the tail add fails on a
// program or proof built to break it. The model itself is proved for every p < 2^31
// (proofs/every-p/reduce_binomial.proof) and its mutants are disproved in the [sweep] test.
#include <catch2/catch.hpp>

#include <filesystem>

#include "cli.hpp"
#include "every_p_util.hpp"
#include "util/exit_codes.hpp"

using namespace collv;
using namespace collv::test::everyp;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;
const std::string kProofs = kRoot + "/proofs/every-p";

// The model with `requires p <= N` in place of its second note (the same line numbers), named m.
std::string small_reduce(int n = 8) {
  return replaced(with_requires(kRoot + "/models/mpich/reduce_binomial.coll",
                                "  note       \"MPICH leaves the mask loop", n),
                  "model reduce_binomial\n", "model m\n");
}

std::string reduce_proof() {
  return replaced(collv::test::slurp(kProofs + "/reduce_binomial.proof"),
                  "model ../../models/mpich/reduce_binomial.coll", "model m.coll");
}

bool sat_in(const std::string& model, const std::string& proof, const char* prefix) {
  EveryPAnalysis a = analyze_text(model, proof);
  INFO(a.refusal);
  REQUIRE(a.refusal.empty());
  return some_sat(answers_of(a, prefix, true));
}

// The statements after the loop.
const char* const kTailRecv = "if my_id = root then receive x from 0; endif;";
const char* const kTailSend = "if my_id = 0 then send x to root; endif;";

}  // namespace

TEST_CASE(
    "every-p reduce: MPICH's non-commutative binomial reduce with p <= 8 is proved for every "
    "root and count in rank order",
    "[every-p][every-p-reduce]") {
  EveryPOutcome r = prove_text(small_reduce(), reduce_proof());
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  const std::string all = lines_of(r);
  for (const char* ob :
       {"initiation-x-loop-while", "consecution-x-loop-while@recv-k2", "combine-line-29@recv-k1",
        "match-line-28@recv-k1", "received-line-32@send-k1", "send-dst-line-38@exit-k3-t37",
        "received-line-38@exit-k3-t37", "rounds-line-38@exit-k3-t37",
        "match-line-39@send-k1-t37-t39", "rounds-line-39@send-k1-t37-t39",
        "infeasible-line-38-then@send-k1-t37", "postcondition-blocks@send-k1-t37-t39",
        "postcondition-blocks@exit-k3-e37", "steps-root"})
    CHECK(all.find(std::string("ok           ") + ob) != std::string::npos);
  // `done := 1` folds the loop's condition to false after the send: no query is needed.
  CHECK(all.find("leave-loop-while") == std::string::npos);
}

TEST_CASE(
    "every-p reduce: the operand order, the flag and the send and receive after the loop each "
    "fail on a program or proof that breaks them",
    "[every-p][every-p-reduce][heavy]") {
  const std::string m = small_reduce(4), pf = reduce_proof();
  // combine checks the order: y + x puts the higher ranks first.
  CHECK_FALSE(sat_in(m, pf, "combine-line-29"));
  CHECK(sat_in(replaced(m, "x := x + y;", "x := y + x;"), pf, "combine-line-29"));
  // leave-loop-while: a send branch whose flag does not end the loop.
  CHECK(sat_in(replaced(m, "done := 1;", "done := 0;"), pf, "leave-loop-while"));
  // match (after the loop): the root receives from rank 1, which sends nothing then.
  CHECK(sat_in(replaced(m, kTailRecv, "if my_id = root then receive x from 1; endif;"), pf,
               "match-line-39"));
  // received (after the loop): rank 0 sends one rank past the root.
  CHECK(sat_in(replaced(m, kTailSend, "if my_id = 0 then send x to (root + 1) mod p; endif;"), pf,
               "received-line-38"));
  // channel: the root sends its result back to rank 0 after the loop, the rank it sent to in the
  // loop when root is a power of two (two messages on one channel).
  CHECK(sat_in(replaced(replaced(m, kTailSend, "if my_id = root then send x to 0; endif;"),
                        kTailRecv, "if my_id = 0 then receive x from root; endif;"),
               pf, "channel-line-38"));
  // rounds: the message after the loop in the tree's last round (rank 0 receives then).
  CHECK(sat_in(m, replaced(pf, "round-after (clog2 p)", "round-after (- (clog2 p) 1)"),
               "rounds-line-38"));
  // steps-root: rank 1 as the witness (it sends once, then leaves).
  CHECK(sat_in(m, replaced(pf, "witness steps 0", "witness steps 1"), "steps-root"));

  // Refused, with file:line:col: a message after the loop without its round, a send after the
  // receive there, a second receive, and the send branch ending in a statement other than an
  // assignment or `break`.
  struct Refusal {
    std::string model, proof, why;
    int line;
  };
  for (const Refusal& x :
       {Refusal{m, replaced(pf, "round-after (clog2 p)", ""), "round-after", 39},
        Refusal{
            replaced(m, kTailRecv, "if my_id = root then receive x from 0; send x to 0; endif;"),
            pf, "sends at most once, before it receives", 39},
        Refusal{replaced(m, kTailSend, "if my_id = root then receive x from 0; endif;"), pf,
                "receives at most once", 39},
        Refusal{replaced(m, "done := 1;", "receive y from 0;"), pf, "binomial fan-in", 33}}) {
    EveryPAnalysis a = analyze_text(x.model, x.proof);
    INFO(x.why << ": " << a.refusal);
    CHECK(a.refusal.find(x.why) != std::string::npos);
    CHECK(a.refusal_loc.line == x.line);
  }
}

TEST_CASE(
    "every-p reduce: the order check alone rejects the swapped operands (proved where the "
    "operator is declared commutative)",
    "[every-p][every-p-reduce][heavy]") {
  // y + x with a holder that follows it (once rank 0 holds all p, its sum starts at its last
  // child, mask / 2): under `operator commutative`, where the order is not checked, it is proved;
  // under the model's `operator associative` combine fails, and every obligation that fails is
  // an order check (combine, or the postcondition's sum starting at rank 0). So with the order
  // check switched off the swapped program would go through.
  const std::string swapped = replaced(small_reduce(4), "x := x + y;", "x := y + x;");
  const std::string follow =
      replaced(reduce_proof(), "invariant while x block (sm b r ",
               "invariant while x block (sm b (ite (and (= r 0) (<= p mask)) (div mask 2) r) ");
  EveryPOutcome c =
      prove_text(replaced(swapped, "operator   associative", "operator   commutative"), follow);
  INFO(c.note);
  CHECK(c.exit == kExitOk);
  EveryPAnalysis a = analyze_text(swapped, follow);
  REQUIRE(a.refusal.empty());
  const std::vector<smt::Answer> ans = answers_of(a, "");
  REQUIRE(ans.size() == a.obligations.size());
  int combine = 0;
  for (std::size_t i = 0; i < ans.size(); ++i) {
    if (ans[i] == smt::Answer::Unsat) continue;
    const std::string& n = a.obligations[i].name;
    INFO(n);
    CHECK((n.rfind("combine-line-29", 0) == 0 || n.rfind("postcondition-blocks", 0) == 0));
    combine += n.rfind("combine-line-29", 0) == 0 ? 1 : 0;
  }
  CHECK(combine > 0);
}

TEST_CASE(
    "every-p reduce: MPICH's non-commutative binomial reduce is proved for every p < 2^31 and "
    "every root and count in rank order (z3 re-checks every certificate) and its mutants are "
    "disproved",
    "[every-p][every-p-reduce][slow][sweep]") {
  std::string dir = collv::test::unique_temp("every_p_reduce");
  EveryPOutcome r =
      prove(kRoot + "/models/mpich/reduce_binomial.coll", kProofs + "/reduce_binomial.proof", dir);
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  const std::string all = lines_of(r);
  for (const char* ob : {"bits-prefix-k31", "unroll-bound-loop-while", "steps-root",
                         "match-line-39@send-k30-t37-t39", "received-line-38@exit-k31-t37"})
    CHECK(all.find(std::string("ok           ") + ob) != std::string::npos);
  CHECK(recheck_certificates(dir) == static_cast<int>(r.obligations));
  fs::remove_all(dir);
  struct Mutant {
    const char* name;
    const char* failed;
    long long p, count, root;
  };
  for (const Mutant& m : {Mutant{"p64", "consecution-x-loop-while@recv-k5", 65, 1, 0},
                          Mutant{"count1000", "consecution-x-loop-while@recv-k0", 2, 1001, 0},
                          Mutant{"root0", "postcondition-blocks@send-k0", 2, 1, 1},
                          Mutant{"order", "combine-line-30@recv-k0", 3, 1, 0}}) {
    std::string base = kProofs + "/mutants/reduce_binomial_" + m.name;
    EveryPOutcome x = prove(base + ".coll", base + ".proof");
    INFO(m.name << ": " << x.note);
    CHECK(x.exit == kExitViolation);
    CHECK(x.failed_obligation.rfind(m.failed, 0) == 0);
    CHECK(x.p == m.p);
    CHECK(x.count == m.count);
    CHECK(x.root == m.root);
  }
}
