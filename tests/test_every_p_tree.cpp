// Every p from the model, binomial trees (smt/every_p_tree.cpp): MPICH's binomial broadcast
// program with `requires p <= 8` is proved for every root and count; each obligation of the tree
// fails on a program or proof built to break it (the source rel - mask, right only for root 0, is
// disproved with the smallest root re-run by the executor), and what the tree reader cannot read
// is refused with file:line:col. MPICH's model itself is proved for every p < 2^31
// (proofs/every-p/bcast_binomial.proof) and its mutants are disproved in the [slow] tests below;
// the cheap siblings in CI run the same program and mutations under `requires p <= 8`.
#include <catch2/catch.hpp>

#include <filesystem>

#include "app/every_p_cmd.hpp"
#include "cli.hpp"
#include "util/exit_codes.hpp"

using namespace collv;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;
const std::string kProofs = kRoot + "/proofs/every-p";

EveryPOutcome prove_file(const std::string& proof_path, const std::string& model_path = "") {
  ProveCommandOptions o;
  o.timeout_ms = 120000;
  EveryPProof pf = parse_every_p_proof(proof_path);
  std::string model = model_path.empty()
                          ? (std::filesystem::path(proof_path).parent_path() / pf.model).string()
                          : model_path;
  return prove_every_p(parse_model_file(model), pf, o);
}

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
        "unroll-bound-loop-while", "bits-lemma-32", "postcondition-blocks@recv-k2", "steps-root",
        "bits-prefix-k0", "bits-prefix-k13", "bits-prefix-k31"})
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

TEST_CASE(
    "every-p tree: another spelling of the receive loop's bit test keeps the bit tests (no prefix "
    "form) and still proves",
    "[every-p][every-p-tree][slow]") {
  // `0 <> (rel AND mask)` is not the shape the prefix form reads (every_p_tree.cpp): the paths
  // keep the bit tests and their lemma instances, with no bits-prefix obligation.
  EveryPOutcome f = prove_text(replaced(tree("requires p <= 8", "requires p <= 4"),
                                        "(rel AND mask) <> 0", "0 <> (rel AND mask)"));
  INFO(f.note);
  CHECK(f.exit == kExitOk);
  std::string fl;
  for (const auto& l : f.lines) fl += l + "\n";
  CHECK(fl.find("bits-prefix") == std::string::npos);
  CHECK(fl.find("ok           match-line-16@recv-k1") != std::string::npos);
}

TEST_CASE(
    "every-p tree: mutants of the small broadcast wrong only past p = 4 or above count 1000 are "
    "disproved at the smallest counterexample",
    "[every-p][every-p-tree]") {
  // The mask-2 sends skipped when p > 4 (the p > 64 mutant's mutation, within p <= 8).
  EveryPOutcome a = prove_text(tree("if rel + mask < p then",
                                    "if rel + mask < p and (p <= 4 or "
                                    "mask <> 2) then"));
  INFO(a.note);
  CHECK(a.exit == kExitViolation);
  CHECK(a.p == 5);
  // The mask-1 sends skipped above count 1,000 (proofs/every-p/mutants/bcast_binomial_count1000).
  EveryPOutcome c = prove_text(tree("if rel + mask < p then",
                                    "if rel + mask < p and (count <= "
                                    "1000 or mask > 1) then"));
  INFO(c.note);
  CHECK(c.exit == kExitViolation);
  CHECK(c.p == 2);
  CHECK(c.count == 1001);
}

TEST_CASE(
    "every-p tree: MPICH's binomial broadcast is proved for every p < 2^31 and every root and "
    "count and its mutants (past p = 64 or roots other than 0 or counts above 1000) are disproved",
    "[every-p][every-p-tree][slow]") {
  EveryPOutcome r = prove_file(kProofs + "/bcast_binomial.proof");
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  std::string all;
  for (const auto& l : r.lines) all += l + "\n";
  for (const char* ob : {"match-line-22@recv-k30", "match-line-22@recv-k13", "bits-prefix-k31",
                         "received-line-30@past-k29", "unroll-bound-loop-while", "steps-root"})
    CHECK(all.find(std::string("ok           ") + ob) != std::string::npos);
  struct Mutant {
    const char* name;
    long long p, count, root;
  };
  for (const Mutant& m :
       {Mutant{"p64", 65, 1, 0}, Mutant{"root0", 2, 1, 1}, Mutant{"count1000", 2, 1001, 0}}) {
    std::string base = kProofs + "/mutants/bcast_binomial_" + m.name;
    // The mutant's proof file: the model's proof, tied to the mutant.
    EveryPOutcome x = prove_file(base + ".proof");
    INFO(m.name << ": " << x.note);
    CHECK(x.exit == kExitViolation);
    CHECK(x.failed_obligation.rfind("match-line-23@", 0) == 0);
    CHECK(x.p == m.p);
    CHECK(x.count == m.count);
    CHECK(x.root == m.root);
  }
}

TEST_CASE(
    "every-p tree: MPICH's gather and reduce trees with the broadcast's proof terms are refused "
    "with file:line:col and never proved",
    "[every-p][every-p-tree]") {
  // (The scatter is proved: tests/test_every_p_scatter.cpp; the gather and the commutative reduce
  // with their own proofs: tests/test_every_p_gather.cpp; the non-commutative reduce:
  // tests/test_every_p_reduce.cpp.) The broadcast's proof terms applied to each: refused before
  // any query (exit 3), naming the statement the reader stops at: the fan-in's loop, which needs
  // the holder invariant the broadcast's proof does not give.
  struct Refusal {
    const char* model;
    const char* at;
    const char* why;
  };
  for (const Refusal& x :
       {Refusal{"gather_binomial", "gather_binomial.coll:24:5", "invariant while tmp"},
        Refusal{"reduce_binomial", "reduce_binomial.coll:24:7", "invariant while x"},
        Refusal{"reduce_binomial_commutative", "reduce_binomial_commutative.coll:23:7",
                "invariant while x"}}) {
    ProveCommandOptions o;
    o.timeout_ms = 60000;
    EveryPOutcome r = prove_every_p(parse_model_file(kRoot + "/models/mpich/" + x.model + ".coll"),
                                    parse_every_p_proof_text(kProof, "m.proof"), o);
    INFO(x.model << ": " << r.note);
    CHECK(r.note.find(x.at) != std::string::npos);
    CHECK(r.note.find(x.why) != std::string::npos);
    CHECK(r.exit == kExitInconclusive);
    CHECK(r.note.find("outside the fragment") != std::string::npos);
  }
}
