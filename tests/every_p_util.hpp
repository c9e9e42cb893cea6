// Helpers of the every-p tests (tests/test_every_p*.cpp): run `collv prove --every-p` in process
// on files or on texts, and edit a text for a mutant.
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "app/every_p_cmd.hpp"
#include "cli.hpp"
#include "smt/every_p.hpp"
#include "smt/solver.hpp"
#include "util/exit_codes.hpp"

namespace collv::test::everyp {

inline EveryPOutcome prove(const std::string& model_path, const std::string& proof_path,
                           const std::string& emit = "") {
  ProveCommandOptions o;
  o.timeout_ms = 60000;
  o.emit_dir = emit;
  return prove_every_p(parse_model_file(model_path), parse_every_p_proof(proof_path), o);
}

inline EveryPOutcome prove_text(const std::string& model_text, const std::string& proof_text) {
  ProveCommandOptions o;
  o.timeout_ms = 60000;
  return prove_every_p(parse_model(model_text, "m.coll"),
                       parse_every_p_proof_text(proof_text, "m.proof"), o);
}

// Whether a proof or mutant file (by name) belongs to a proof of minutes that its own test
// proves, re-checks and disproves the mutants of, so the loops over proofs/every-p skip it:
// MPICH's and Open MPI's folds (phases, 1,100 and more obligations; tests/test_every_p_fold.cpp),
// Open MPI's recursive halving (1,713; tests/test_every_p_halving.cpp), MPICH's binomial
// scatter (787; tests/test_every_p_scatter.cpp), its binomial gather and commutative reduce (694
// and 477; tests/test_every_p_gather.cpp) and its non-commutative reduce (911;
// tests/test_every_p_reduce.cpp).
inline bool proved_in_own_test(const std::string& filename) {
  for (const char* prefix :
       {"allreduce_recursive_doubling", "reduce_scatter_block_recursive_halving",
        "scatter_binomial", "gather_binomial", "reduce_binomial"})
    if (filename.rfind(prefix, 0) == 0) return true;
  return false;
}

// z3 alone (a fresh solver, no collv) on every certificate a proof wrote to `dir`: each must be
// unsat (checked); returns how many there were, for the caller to compare with the obligations.
inline int recheck_certificates(const std::string& dir, unsigned timeout_ms = 60000) {
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    smt::Result s = smt::run_smt2_script(slurp(e.path().string()), timeout_ms, 1 << 24);
    INFO(e.path().string());
    CHECK(s.answer == smt::Answer::Unsat);
    ++files;
  }
  return files;
}

// A late-breaking mutant (proofs/every-p/mutants/PREFIX NAME .coll and .proof) and the smallest
// counterexample its run must report.
struct ExpectedMutant {
  const char* name;
  long long p, count, root;
};

// Each mutant is disproved (exit 1) at exactly its counterexample.
inline void expect_mutants_disproved(const std::string& prefix,
                                     std::initializer_list<ExpectedMutant> mutants) {
  for (const ExpectedMutant& m : mutants) {
    std::string base = prefix + m.name;
    EveryPOutcome x = prove(base + ".coll", base + ".proof");
    INFO(m.name << ": " << x.note);
    CHECK(x.exit == kExitViolation);
    CHECK(x.p == m.p);
    CHECK(x.count == m.count);
    CHECK(x.root == m.root);
  }
}

// The analysis (obligations or refusal, nothing solved) of a model and a proof given as texts.
inline EveryPAnalysis analyze_text(const std::string& model, const std::string& proof) {
  return analyze_every_p(parse_model(model, "m.coll"), parse_every_p_proof_text(proof, "m.proof"));
}

// Whether some answer is sat; whether the analysis has an obligation of that name; the outcome's
// lines, one a line.
inline bool some_sat(const std::vector<smt::Answer>& a) {
  for (smt::Answer x : a)
    if (x == smt::Answer::Sat) return true;
  return false;
}
inline bool has_obligation(const EveryPAnalysis& a, const std::string& name) {
  for (const auto& o : a.obligations)
    if (o.name == name) return true;
  return false;
}
inline std::string lines_of(const EveryPOutcome& r) {
  std::string out;
  for (const auto& l : r.lines) out += l + "\n";
  return out;
}

// `text` with its first `from` replaced by `to` (which must be there).
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// The model file at `path` with `requires p <= N` in place of the first line that starts with
// `line` (a note: every other line keeps its number, so the proof's line names still hold).
inline std::string with_requires(const std::string& path, const std::string& line, int n) {
  std::string t = collv::test::slurp(path);
  auto at = t.find(line);
  REQUIRE(at != std::string::npos);
  return t.replace(at, t.find('\n', at) - at, "  requires   p <= " + std::to_string(n));
}

// The answers of the analysis's obligations whose name starts with `prefix` (each on a fresh
// solver), so that a test checks one obligation without solving the whole proof.
// With `until_sat`, it stops at the first sat answer (a broken input's test needs one).
inline std::vector<smt::Answer> answers_of(const EveryPAnalysis& a, const std::string& prefix,
                                           bool until_sat = false) {
  std::vector<smt::Answer> out;
  for (const auto& ob : a.obligations) {
    if (ob.name.rfind(prefix, 0) != 0) continue;
    smt::Solver s(smt::Limits{60000});
    s.add(ob.script);
    out.push_back(s.check({"a"}).answer);
    if (until_sat && out.back() == smt::Answer::Sat) break;
  }
  return out;
}

}  // namespace collv::test::everyp
