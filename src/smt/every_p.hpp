// Every p from the model (docs/smt.md, "Every p from the model"): a library algorithm's own
// program proved correct for every process count p and every element count, by induction over
// its communication loop with symbolic p, rank, count and loop counter.
//
//   collv::Model m = collv::parse_model_file("models/mpich/allgather_ring.coll");
//   collv::EveryPProof pf = collv::parse_every_p_proof("proofs/every-p/allgather_ring.proof");
//   collv::EveryPAnalysis a = collv::analyze_every_p(m, pf);
//   if (!a.refusal.empty()) ...;               // outside the fragment: not proved (exit 3)
//   for (const auto& ob : a.obligations) ...;  // each query must be unsat
//
// The fragment (every_p.cpp refuses the rest, naming the statement): integer variables over p,
// my_id, count, root and loop counters (+, -, *, div and mod by p or a positive literal,
// comparisons, and, or, not, if-then-else); `if` on a condition that does not depend on my_id
// (the proof splits into paths); one level of `for` loops whose bounds do not depend on my_id,
// each iteration one `send` followed by one `receive` (every rank exchanges once a round, in
// lockstep) and assignments; data moved in whole blocks of `count` elements (a slice
// `v[A * E .. B * E - 1]` with E = count, or the whole buffer). Data is modelled by block: the
// item in block b of a buffer is `(it RANK BLOCK)` (the input block BLOCK of rank RANK) or `none`
// (identity items, written where a buffer is extended), so an obligation with count > 0 covers
// every element of the block at once, and count = 0 makes every buffer empty.
//
// Loops: the proof file gives, for every variable a loop assigns, its value at the head of
// iteration i as a closed form in r (the rank), the loop counter, p, count and root (an SMT-LIB
// term; for a data variable its length in blocks and its block b). For a fresh rank r the
// obligations are: initiation (the closed forms equal the values the program computed before
// the loop), consecution (assume the closed forms for every rank at iteration i; run the body of
// r and of the rank it receives from; the closed forms hold for r at i + 1), the round's
// matching (r's destination receives from r and r's source sends to r, both ranks in 0..p-1),
// the message fills the receive exactly, NODUP (no received item is one r already holds), every
// slice read lies inside its buffer, and after the program: the postcondition in MPI's layout and
// the `steps` claim equal to the loops' trip counts summed.
#pragma once

#include <string>
#include <vector>

#include "lang/ast.hpp"

namespace collv {

// One `invariant` line: `invariant LOOP VAR TERM` (integer), `invariant LOOP VAR length TERM`,
// `invariant LOOP VAR block TERM` (data). LOOP is the loop's counter name (`i`, or `i#2` for the
// second loop with that counter).
struct EveryPInvariant {
  std::string loop, var, part;  // part: "value", "length", "block", "trips", "heard"
  std::string term;
  int line = 0;
};

struct EveryPProof {
  std::string path;
  std::string model;  // the model the proof is written for (a name or a .coll path)
  std::string expect = "proved";
  std::vector<EveryPInvariant> invariants;
  // `chunks UNIT INDEX` (allreduce): every slice is chunk INDEX of count cut into chunks of UNIT
  // elements (program variables), the buffers are modelled by chunk (docs/smt.md).
  std::string chunk_unit, chunk_index;
  // `sums sets` (operator commutative): a sum is block B over a set of ranks, written (ss B MEM)
  // with MEM a Bool over a free rank q (docs/smt.md, "Recursive halving").
  bool set_sums = false;
  // `cases OBLIGATION LO HI TERM`: every obligation named OBLIGATION (or OBLIGATION followed by
  // '@' or '-': its paths and split cases) is checked as HI - LO + 2 queries, TERM (in p, count
  // and root) = LO .. HI and TERM outside LO..HI, which together cover every value.
  struct Cases {
    std::string obligation, term;
    long long lo = 0, hi = 0;
    int line = 0;
  };
  std::vector<Cases> cases;
  // `abstract pof2 OBLIGATION`: in every obligation named OBLIGATION (as for `cases`), 2^ilog2 p
  // and clog2(p + 1), written (pow2 (- (clog2 (+ p 1)) 1)) and (clog2 (+ p 1)), become two
  // constants with facts about them that the query `lemma-pof2` proves (every_p_abstract.cpp).
  struct Abstract {
    std::string obligation;
    int line = 0;
  };
  std::vector<Abstract> abstracts;
};

// Reads a proof file of `kind every-p` (throws UsageError with file:line on a malformed one).
EveryPProof parse_every_p_proof(const std::string& path);
// The same from text (tests).
EveryPProof parse_every_p_proof_text(const std::string& text, const std::string& path);

struct EveryPObligation {
  std::string name;         // e.g. "consecution-result-line-31"
  std::string description;  // what unsat proves
  std::string script;       // SMT-LIB2: declarations and (assert (=> a (not ...)))
  SourceLoc loc;
  int split_case = -1;  // a `split`'s case K (the query's -kK), -1 if none
};

struct EveryPAnalysis {
  std::string refusal;  // non-empty: outside the fragment (why); nothing is proved
  SourceLoc refusal_loc;
  std::vector<EveryPObligation> obligations;
  std::vector<std::string> assumptions;  // the bounds every query assumes, for the report
  int paths = 0, loops = 0;
};

// Never throws for a well-formed model: everything outside the fragment is a refusal.
EveryPAnalysis analyze_every_p(const Model& m, const EveryPProof& proof);

// `abstract pof2` (every_p_abstract.cpp): the facts assumed of P, standing for 2^ilog2 p, and C,
// for clog2(p + 1): 2 <= C <= 31, P <= p < 2 P, and for each j in `divides` (1..30) "C - 1 >= j
// iff 2^j <= P" and "C - 1 >= j implies 2^j divides P"; and the query `lemma-pof2` that proves
// them all (j = 1..30) for every
// 2 <= p < 2^31 with P and C the exact terms (unsat = they hold; tests break a fact in it).
std::string pof2_facts(const std::string& P, const std::string& C, const std::vector<int>& divides);
std::string pof2_lemma_script(const std::string& facts_over_exact_terms);

}  // namespace collv
