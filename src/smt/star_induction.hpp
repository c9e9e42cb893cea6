// Theorems 1-3 of the star paper for every n, derived from a model's own program (docs/smt.md,
// "Proofs for every n").
//
//   collv::Model m = collv::parse_model_file("models/allreduce_star.coll");
//   collv::StarInduction a = collv::analyze_star_induction(m);
//   if (!a.refusal.empty()) ...;                     // the program is outside what it can do
//   for (const auto& ob : a.obligations) ...;        // each query must be unsat
//
// The method. A program qualifies when every node runs the same sequence of communications: every
// send and receive goes `along link L` with L an integer term of loop counters only (no my_id, no
// data, no `if`/`while`), and they come in exchanges (`send x along link L` ... `receive y along
// link L`). Then the run commutes with the star graph's automorphisms pi -> sigma pi, so node pi
// holds pi * R for a set R of permutations that is the same at every node: a receive along link j
// turns the sender's R into t_j R (t_j swaps positions 1 and j). The analysis computes R for a
// symbolic level k of the level loop `for k := 2 to n`, with the induction hypothesis that the
// variable read at the head of level k is G_(k-1) (the permutations that fix positions k..n, each
// once); every value in level k is then a multiset of left cosets w G_(k-1), a coset named by its
// representative word w over the t's. Inner loops with symbolic bounds are summarised: a variable
// the loop only adds to (`r := r + e`, e free of r) becomes r + sum over the loop's range of e.
// Two cosets of G_(k-1) inside G_k are equal iff their representatives agree on k, so the
// obligations are linear integer arithmetic over the symbolic k and the loop counters:
//   links   every link used in level k is in 2..k (the level stays inside its sub-star);
//   nodup   every `+`/`∪` in level k combines disjoint multisets (for a summarised loop: the
//           accumulated value has pairwise distinct cosets, so every step of it did);
//   cover   at the end of level k the invariant variable is k cosets (count = k), pairwise
//           distinct, so it is G_k ([G_k : G_(k-1)] = k), each element once;
//   steps   the exchanges of level k, c(k), and the header's `steps` claim S satisfy S(2) = c(2)
//           and S(n) = S(n-1) + c(n) for n >= 3, so S(n) = sum_(k=2..n) c(k) = T(n).
// With the base ({e} = G_1 before level 2) this proves, for every n >= 2, that the output holds
// every node's contribution exactly once (Theorem 1 for the all-to-all broadcast, Theorem 2 for
// the all-reduce with a commutative operator) and the step count (Theorem 3). The first iteration
// of every inner loop is also run on its own (under "the range is not empty"), so a loop that
// cannot be summarised can still show a real violation.
//
// An obligation that is sat is a real violation at the level k (and loop counters) of its model.
// A refusal is not a verdict: the program is outside the method.
#pragma once

#include <string>
#include <vector>

#include "lang/ast.hpp"

namespace collv {

struct InductionObligation {
  std::string name;                    // e.g. "nodup-line-27"
  std::string description;             // one line: what unsat proves
  std::string script;                  // SMT-LIB2 declarations and `(assert (=> a (not ...)))`
  std::vector<std::string> witnesses;  // constants whose values a sat answer reports (k, j, ...)
  SourceLoc loc;
};

struct StarInduction {
  std::string refusal;  // non-empty: the program is outside the method (why)
  SourceLoc refusal_loc;
  std::vector<InductionObligation> obligations;  // every one must be unsat (also when refused:
                                                 // the ones found before the refusal)
  std::string level_var;                         // the level loop's counter, e.g. "k"
  std::vector<std::string> invariant_vars;       // the variables that are G_(k-1) at level k
  std::string exchanges_per_level;               // c(k), an SMT-LIB2 Int term over k
  bool steps_proved_obligations = false;         // steps obligations are among `obligations`
  std::string steps_note;                        // why the steps claim is not among them
  // c(k) as a define-fun, for queries that need it.
  std::string exchanges_fun() const;
};

// Analyzes m (see above). Never throws for a well-formed model: everything outside the method is
// a refusal.
StarInduction analyze_star_induction(const Model& m);

}  // namespace collv
