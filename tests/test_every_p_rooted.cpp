// Every p from the model, rooted collectives (smt/every_p_rooted.cpp): Open MPI's linear
// broadcast is proved for every p, root and count; mutants wrong only for roots other than 0 or
// only past p = 64 are disproved by the obligation the mutation breaks (so each test fails if that
// obligation is not checked), with the smallest (p, count, root) re-run by the executor; each
// obligation of the rooted fragment fails on a program built to break it.
#include <catch2/catch.hpp>

#include "app/every_p_cmd.hpp"
#include "check/checks.hpp"
#include "cli.hpp"
#include "exec/executor.hpp"
#include "util/exit_codes.hpp"

using namespace collv;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;
const std::string kProofs = kRoot + "/proofs/every-p";
const std::string kLinear = kRoot + "/models/openmpi/bcast_basic_linear.coll";

EveryPOutcome prove_text(const std::string& model_text) {
  ProveCommandOptions o;
  o.timeout_ms = 60000;
  return prove_every_p(parse_model(model_text, "m.coll"),
                       parse_every_p_proof_text("kind every-p\nmodel m.coll\n", "m.proof"), o);
}

EveryPOutcome prove_file(const std::string& model, const std::string& proof) {
  ProveCommandOptions o;
  o.timeout_ms = 60000;
  return prove_every_p(parse_model_file(model), parse_every_p_proof(proof), o);
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// A broadcast with the given header lines (after `collective`) and body.
std::string bcast(const std::string& header, const std::string& body) {
  return "model m\n  collective broadcast\n  topology complete\n  input buf\n  output buf\n" +
         header + "\nprocedure P(my_id, buf)\nbegin\n" + body + "\nend P\n";
}

}  // namespace

TEST_CASE("every-p: Open MPI's linear broadcast is proved for every p, root and count",
          "[every-p]") {
  EveryPOutcome r = prove_file(kLinear, kProofs + "/bcast_basic_linear_ompi.proof");
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  std::string all;
  for (const auto& l : r.lines) all += l + "\n";
  for (const char* ob :
       {"match-line-22@path3", "received-line-19", "channel-line-19-19", "one-sided-line-22@path3",
        "steps-root", "steps-bound", "postcondition-blocks@path3", "send-dst-line-19"})
    CHECK(all.find(std::string("ok           ") + ob) != std::string::npos);
  CHECK(r.note.find("0 <= root < p") != std::string::npos);
}

TEST_CASE(
    "every-p: a linear broadcast wrong only for roots other than 0 is disproved at root 1, which "
    "the executor fails and root 0 passes",
    "[every-p]") {
  const std::string m = kProofs + "/mutants/bcast_basic_linear_root0.coll";
  EveryPOutcome r = prove_file(m, kProofs + "/mutants/bcast_basic_linear_root0.proof");
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "match-line-22@path3");
  CHECK(r.p == 2);
  CHECK(r.root == 1);
  CHECK(r.note.find("executor on complete:2 count 1, root = 1") != std::string::npos);
  // The library's own proof applied to it (as --model does): the same verdict.
  r = prove_file(m, kProofs + "/bcast_basic_linear_ompi.proof");
  CHECK(r.exit == kExitViolation);
  // Wrong only for roots other than 0: the executor passes at root 0 and fails at root 1.
  Model model = parse_model_file(m);
  for (std::uint32_t root : {0u, 1u})
    for (std::uint32_t p : {2u, 5u, 9u}) {
      RunOptions ro;
      ro.count = 1;
      ro.root = root;
      Trace t = run_model(model, Topology::parse("complete:" + std::to_string(p)), ro);
      INFO("root " << root << " p " << p);
      CHECK((t.failure.kind == RunFailure::Kind::None) == (root == 0));
    }
}

TEST_CASE(
    "every-p: Open MPI's linear scatter is proved for every p, root and count, keeping block 0 "
    "at the root (wrong only for roots other than 0) is disproved at root 1",
    "[every-p]") {
  const std::string lin = kRoot + "/models/openmpi/scatter_basic_linear.coll";
  EveryPOutcome r = prove_file(lin, kProofs + "/scatter_basic_linear_ompi.proof");
  INFO(r.note);
  CHECK(r.exit == kExitOk);
  const std::string m = kProofs + "/mutants/scatter_basic_linear_root0.coll";
  r = prove_file(m, kProofs + "/mutants/scatter_basic_linear_root0.proof");
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "postcondition-blocks");
  CHECK(r.p == 2);
  CHECK(r.root == 1);
  CHECK(r.note.find("executor on complete:2 count 1, root = 1: postcondition fails") !=
        std::string::npos);
  Model model = parse_model_file(m);
  for (std::uint32_t root : {0u, 1u, 3u}) {
    RunOptions ro;
    ro.count = 2;
    ro.root = root;
    Trace t = run_model(model, Topology::parse("complete:6"), ro);
    bool fails = t.failure.kind != RunFailure::Kind::None;
    for (const auto& cr : check_trace(t, CheckOptions{}))
      fails = fails || cr.verdict == Verdict::Fail;
    INFO("root " << root);
    CHECK(fails == (root != 0));
  }
  // The root's own block kept at the wrong iteration (the branch at i = root taken at i <> root
  // is not the fragment's once-only shape), or a send that reads what that branch writes.
  const std::string text = collv::test::slurp(lin);
  r = prove_text(replaced(text, "if i = root then", "if i <> root then"));
  CHECK(r.exit == kExitInconclusive);
  r = prove_text(replaced(text, "send x[i * E .. i * E + E - 1] to i;", "send result to i;"));
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("reads 'result'") != std::string::npos);
}

TEST_CASE("every-p: a linear broadcast wrong only past p = 64 is disproved at p = 65",
          "[every-p]") {
  EveryPOutcome r = prove_file(kProofs + "/mutants/bcast_basic_linear_p64.coll",
                               kProofs + "/mutants/bcast_basic_linear_p64.proof");
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "match-line-22@path3");
  CHECK(r.p == 65);
  CHECK(r.note.find("executor on complete:65") != std::string::npos);
}

TEST_CASE("every-p: each obligation of the rooted fragment fails on a program that breaks it",
          "[every-p]") {
  const std::string lin = collv::test::slurp(kLinear);
  // The root sends to every rank, itself included: nobody receives its self-message.
  EveryPOutcome r = prove_text(replaced(
      replaced(lin, "if i <> root then send buf to i; endif;", "send buf to i;"),
      "steps      if count = 0 then 0 else p - 1", "steps      if count = 0 then 0 else p"));
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "received-line-19");
  // Two sends to each rank (and two receives of one rank from the root).
  std::string twice = replaced(lin, "if i <> root then send buf to i; endif;",
                               "if i <> root then send buf to i; endif;\n"
                               "        if i <> root then send buf to i; endif;");
  twice = replaced(twice, "steps      if count = 0 then 0 else p - 1",
                   "steps      if count = 0 then 0 else 2 * (p - 1)");
  r = prove_text(twice);
  INFO(r.note);
  CHECK(r.exit != kExitOk);
  CHECK(r.failed_obligation == "channel-line-19-20");
  r = prove_text(
      replaced(twice, "receive buf from root;", "receive buf from root; receive buf from root;"));
  INFO(r.note);
  CHECK(r.exit != kExitOk);
  CHECK(r.failed_obligation.rfind("sources-line-23", 0) == 0);
  // A send to a rank out of range.
  r = prove_text(replaced(lin, "send buf to i;", "send buf to i + 1;"));
  INFO(r.note);
  CHECK(r.exit != kExitOk);
  CHECK(r.failed_obligation == "send-dst-line-19");
  // Wrong round counts: one too many (the root's count is below the claim) and one too few.
  r = prove_text(replaced(lin, "else p - 1\n  cost", "else p\n  cost"));
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "steps-root");
  r = prove_text(replaced(lin, "else p - 1\n  cost", "else p - 2\n  cost"));
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "steps-bound");
  // Transfers whose sender sends twice and whose receiver receives twice: the single-port count
  // of rounds is not the most sends of one rank there, so the fragment does not claim it.
  r = prove_text(bcast("  nodup no",
                       "  send buf to (my_id + 1) mod p; send buf to (my_id + 2) mod p;\n"
                       "  receive t1 from (my_id - 1) mod p; receive t2 from (my_id - 2) mod p;"));
  INFO(r.note);
  CHECK(r.exit != kExitOk);
  CHECK(r.failed_obligation == "one-sided-line-10");
  // A rank that never gets the root's data: the postcondition.
  r = prove_text(replaced(lin, "receive buf from root;", "buf := [];"));
  INFO(r.note);
  CHECK(r.exit != kExitOk);
  CHECK(r.failed_obligation.rfind("postcondition-", 0) == 0);
}

TEST_CASE("every-p: rooted programs outside the fragment are refused with file:line:col",
          "[every-p]") {
  const std::string lin = collv::test::slurp(kLinear);
  // A send after a receive (the binomial tree's shape): not in the fragment yet.
  EveryPOutcome r = prove_text(
      replaced(lin, "receive buf from root;", "receive buf from root; send buf to root;"));
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("m.coll:22:") != std::string::npos);
  CHECK(r.note.find("a send after a receive") != std::string::npos);
  // A loop body that assigns.
  r = prove_text(replaced(lin, "if i <> root then send buf to i; endif;",
                          "x := i; if i <> root then send buf to i; endif;"));
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("only sends") != std::string::npos);
  // A guard that is not COUNTER <> E / COUNTER = E.
  r = prove_text(replaced(lin, "if i <> root then", "if i < root then"));
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("only sends") != std::string::npos);
  // An `if` after a receive, and len(...): both readings of a rooted program must take the same
  // paths and sources, so neither may depend on what was received.
  r = prove_text(replaced(lin, "receive buf from root;",
                          "receive buf from root; if count > 1 then buf := buf; endif;"));
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("an `if` after a receive") != std::string::npos);
  r = prove_text(replaced(lin, "receive buf from root;", "receive buf from root + len(buf);"));
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("len(...)") != std::string::npos);
  // MPICH's binomial broadcast (a receive, then sends; a `while` with `break`).
  ProveCommandOptions o;
  r = prove_every_p(
      parse_model_file(kRoot + "/models/mpich/bcast_binomial.coll"),
      parse_every_p_proof_text("kind every-p\nmodel bcast_binomial.coll\n", "m.proof"), o);
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("bcast_binomial.coll:") != std::string::npos);
}
