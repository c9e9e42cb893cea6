// Every p from the model, binomial trees (smt/every_p_tree.cpp): MPICH's binomial broadcast
// program with `requires p <= 8` is proved for every root and count; each obligation of the tree
// fails on a program or proof built to break it (the source rel - mask, right only for root 0, is
// disproved with the smallest root re-run by the executor), and what the tree reader cannot read
// is refused with file:line:col. (MPICH's model itself, for every p < 2^31: docs/smt.md, not
// finished: proofs/every-p/pending/.)
#include <catch2/catch.hpp>

#include "app/every_p_cmd.hpp"
#include "cli.hpp"
#include "util/exit_codes.hpp"

using namespace collv;

namespace {

const char* kProof =
    "kind every-p\nmodel m.coll\norder (mod (- r root) p)\nround (- (- (clog2 p) 1) (clog2 "
    "mask))\nmessage length 1\nmessage block (it root 0)\n";

// MPICH's binomial broadcast (the model's program) with `requires p <= 8`, so that every query
// past iteration 3 is decided at once; `edit` replaces one piece of it.
std::string tree(const std::string& from = "", const std::string& to = "") {
  std::string t =
      "model m\n  collective broadcast\n  topology complete\n  input buf\n  output buf\n  port "
      "single\n  requires p <= 8\n  steps if count = 0 then 0 else clog2(p)\n"
      "procedure P(my_id, buf)\nbegin\n  if count > 0 then\n    rel := (my_id - root) mod p;\n"
      "    mask := 1;\n    while mask < p do\n      if (rel AND mask) <> 0 then\n"
      "        receive buf from (my_id - mask) mod p;\n        break;\n      endif;\n"
      "      mask := mask * 2;\n    endwhile;\n    mask := mask div 2;\n    while mask > 0 do\n"
      "      if rel + mask < p then\n        send buf to (my_id + mask) mod p;\n      endif;\n"
      "      mask := mask div 2;\n    endwhile;\n  endif;\nend P\n";
  if (!from.empty()) {
    auto at = t.find(from);
    REQUIRE(at != std::string::npos);
    t.replace(at, from.size(), to);
  }
  return t;
}

EveryPOutcome prove_text(const std::string& model, const std::string& proof = kProof) {
  ProveCommandOptions o;
  o.timeout_ms = 120000;
  return prove_every_p(parse_model(model, "m.coll"), parse_every_p_proof_text(proof, "m.proof"), o);
}

// The outcome's line for an obligation whose name starts with `name`, and whether it failed.
bool failed(const EveryPOutcome& r, const std::string& name) {
  for (const auto& l : r.lines)
    if (l.rfind("FAILED       " + name, 0) == 0) return true;
  return false;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("every-p tree: the small binomial broadcast (p <= 8) is proved for every root and count",
          "[every-p][every-p-tree]") {
  EveryPOutcome r = prove_text(tree());
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  std::string all;
  for (const auto& l : r.lines) all += l + "\n";
  for (const char* ob :
       {"match-line-16@recv-k1", "order-line-16@recv-k2", "received-line-24@past-k0",
        "message-line-24@exit-k3", "rounds-line-16@recv-k0", "send-dst-line-24@exit-k3",
        "unroll-bound-loop-while", "bits-lemma-32", "postcondition-blocks@recv-k2", "steps-root"})
    CHECK(all.find(std::string("ok           ") + ob) != std::string::npos);
}

TEST_CASE(
    "every-p tree: each obligation of the binomial tree fails on a program or proof that "
    "breaks it",
    "[every-p][every-p-tree][heavy]") {
  // match: the source is rel - mask (right only for root 0).
  EveryPOutcome m =
      prove_text(tree("receive buf from (my_id - mask)", "receive buf from (rel - mask)"));
  INFO(m.note);
  CHECK(m.exit == kExitViolation);
  CHECK(failed(m, "match-line-16"));
  CHECK(m.root >= 1);
  // received: every send goes one rank too far.
  EveryPOutcome rc =
      prove_text(tree("send buf to (my_id + mask) mod p", "send buf to (my_id + mask + 1) mod p"));
  CHECK(rc.exit != kExitOk);
  CHECK(failed(rc, "received-line-24"));
  // send-dst: no mod p.
  EveryPOutcome sd =
      prove_text(tree("send buf to (my_id + mask) mod p", "send buf to my_id + mask"));
  CHECK(sd.exit != kExitOk);
  CHECK(failed(sd, "send-dst-line-24"));
  // order: a wrong order (the program is right: not proved, the executor passes).
  EveryPOutcome o =
      prove_text(tree(), replaced(kProof, "order (mod (- r root) p)", "order (mod (- root r) p)"));
  CHECK(o.exit == kExitInconclusive);
  CHECK(failed(o, "order-line-16"));
  // message: a message of two blocks (the root sends its one block).
  EveryPOutcome ms = prove_text(tree(), replaced(kProof, "message length 1", "message length 2"));
  CHECK(ms.exit != kExitOk);
  CHECK(failed(ms, "message-line-24"));
  // rounds: the rounds the wrong way round (a send before the receive's round).
  EveryPOutcome rd = prove_text(
      tree(), replaced(kProof, "round (- (- (clog2 p) 1) (clog2 mask))", "round (clog2 mask)"));
  CHECK(rd.exit != kExitOk);
  CHECK(failed(rd, "rounds-line-16"));
  // rounds and steps-root: a steps claim one short.
  EveryPOutcome st = prove_text(tree("else clog2(p)", "else clog2(p) - 1"));
  CHECK(st.exit == kExitViolation);
  CHECK(failed(st, "rounds-line-"));
  CHECK(failed(st, "steps-root"));
  // unroll-bound: a receive loop whose condition never fails.
  EveryPOutcome ub = prove_text(tree("while mask < p do", "while mask < p or mask > 0 do"));
  CHECK(ub.exit != kExitOk);
  CHECK(failed(ub, "unroll-bound-loop-while"));
}

TEST_CASE("every-p tree: what the tree reader cannot read is refused with file:line:col",
          "[every-p][every-p-tree]") {
  // A send after the send loop.
  EveryPOutcome a = prove_text(
      tree("      mask := mask div 2;\n    endwhile;\n  endif;",
           "      mask := mask div 2;\n    endwhile;\n    send buf to my_id;\n  endif;"));
  CHECK(a.exit == kExitInconclusive);
  CHECK(a.note.find("m.coll:28:") != std::string::npos);
  // A bit test against a value that is not a numeral (the rank's own bits).
  EveryPOutcome b = prove_text(tree("(rel AND mask) <> 0", "(rel AND my_id) <> 0"));
  CHECK(b.exit == kExitInconclusive);
  CHECK(b.note.find("no numeral operand") != std::string::npos);
  CHECK(b.note.find("m.coll:15:") != std::string::npos);
  // The proof without its round term.
  EveryPOutcome c =
      prove_text(tree(), replaced(kProof, "round (- (- (clog2 p) 1) (clog2 mask))\n", ""));
  CHECK(c.exit == kExitInconclusive);
  CHECK(c.note.find("round") != std::string::npos);
}
