// The star paper's lemmas as SMT queries, and proof obligations (`proofs/*.proof`) that
// `collv prove` discharges (docs/smt.md).
//
//   auto q = collv::claim_query(5, false);   // the claim inside the proof of Theorem 2, n = 5
//   q.solve().answer;                        // Unsat: the claim holds
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "smt/solver.hpp"

namespace collv {

// One SMT query with its expected answer, ready to check or to write as a certificate.
struct LemmaQuery {
  std::string name;         // file stem, e.g. "theorem2-claim-n5"
  std::string description;  // one line
  std::string script;       // declarations and assertions (guarded by the literal "a")
  smt::Answer expected = smt::Answer::Unsat;
  std::string logic;       // "" = let Z3 choose
  std::uint64_t size = 0;  // terms, counted before building
};

// The claim inside the proof of Theorem 2: no processor p1 of S^i_{n-1} is the neighbour (along
// links 2..n-1) of two distinct processors p2, p3 that hold the same sum Sigma_j at the start of
// step 4 (p holds Sigma_j, received along link n, exactly when p's first symbol is j).
// n >= 3; n = 0 means symbolic n (arrays and a quantified injectivity axiom, any n >= 3).
// false_variant: "the same last symbol" instead of "the same first symbol" (sat for n >= 4).
LemmaQuery claim_query(int n, bool false_variant);

// Theorem 3's recurrence T(2) = 1, T(n) = T(n-1) + n - 1 solves to n(n-1)/2: base case (step
// "base") and inductive step for symbolic n >= 3 ("step"), both unsat. false_variant uses
// T(n) = T(n-1) + n (sat: the closed form no longer follows).
LemmaQuery recurrence_query(const std::string& part, bool false_variant);

// Checks a query with a fresh solver, optionally writing it as <emit_dir>/<name>.smt2.
smt::Result solve_lemma(const LemmaQuery& q, const smt::Limits& limits, const std::string& emit_dir,
                        std::string* written = nullptr);

// A proof obligation file: `key value` lines ('#' comments). Keys: kind (model | claim |
// recurrence | synth | smt2), expect (pass | fail for model; sat | unsat otherwise), and the
// kind's parameters: model+topology; n (+ variant false); part (base | step) (+ variant false);
// collective+topology+steps(+port); file (an .smt2 path relative to the proof file).
struct ProofObligation {
  std::string path;
  std::map<std::string, std::string> fields;
  std::string get(const std::string& k, const std::string& def = "") const {
    auto f = fields.find(k);
    return f == fields.end() ? def : f->second;
  }
};
ProofObligation parse_proof_file(const std::string& path);  // throws UsageError

}  // namespace collv
