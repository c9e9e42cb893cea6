// The solver layer: the only place in collv that owns a Z3 context (src/smt/solver.cpp is the only
// file that includes z3++.h). Queries are written as SMT-LIB2 text, so the text a query is checked
// from is also the certificate `emit_smt2` writes.
//
//   collv::smt::Solver s({.timeout_ms = 2000, .max_terms = 100000});
//   if (!s.reserve(3)) return s.refusal();          // size cap, decided before building
//   s.add("(declare-const x Int)(declare-const a Bool)");
//   s.add("(assert (=> a (not (= (+ x 1) (+ 1 x)))))");
//   auto r = s.check({"a"}, {"x"});                 // r.answer == Answer::Unsat, r.core == {"a"}
//   s.emit_smt2("q.smt2", collv::smt::Answer::Unsat, {"a"});  // "; expected: unsat" + the script
//
// Proof by negation: assert `(=> a_inv (not INV))` for one fresh Boolean a_inv per invariant and
// check assuming a_inv alone. unsat = INV holds (the core names a_inv); sat = a model violating
// INV; unknown (timeout, resource limit, size cap) is inconclusive, never a pass.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace collv::smt {

enum class Answer { Sat, Unsat, Unknown };
const char* answer_name(Answer a);  // "sat", "unsat", "unknown"

struct Limits {
  unsigned timeout_ms = 30000;           // per check (wall clock)
  std::uint64_t max_terms = 20'000'000;  // cap on the terms one query may hold (caller's count)
  // Memory a reserved term is expected to take (script text, Z3 terms, solver state), checked
  // against --max-memory (util/memory) before the query is built. An estimate: synthesis (QF_FD)
  // measured 0.5-1 KB per term; the SMT engine's queries vary (star:6 all-reduce, 8 M terms, fits
  // in 8 GiB; scatter_hypercube, with its nodup bit vectors counted apart (extra_bytes), at about
  // 4 KB per term on hypercube:7 and :8), so the limit can be overshot there by a small factor
  // (docs/smt.md has the measurements), never by an unbounded one.
  std::uint64_t bytes_per_term = 1024;
  // A script longer than this (bytes) is read in pieces through Z3's command reader, with the
  // time checked between them (Z3 reads a script without looking at an interrupt); a shorter
  // one is parsed at once, and so is a query for a named logic (synthesis: QF_FD).
  std::uint64_t read_in_pieces_above = 256 * 1024;
  // Z3's resource units per check (its `rlimit`: a count of the solver's steps, the same on any
  // load; 0 = none). Beside the wall-clock timeout: whichever comes first stops the check.
  std::uint64_t rlimit = 0;
};

struct Result {
  Answer answer = Answer::Unknown;
  std::string reason;                         // unknown: why (timeout, size cap, ...)
  std::vector<std::string> core;              // unsat: names of the assumptions in the core
  std::map<std::string, std::string> values;  // sat: requested constants, SMT-LIB2 values
  double seconds = 0;                         // parse + check wall time
  std::uint64_t rlimit_used = 0;              // Z3's resource units the check took
  std::vector<Answer> answers;                // run_smt2_script: every check's answer, in order
};

// Owns the Z3 context. Not copyable. Text added with add() accumulates into one script, parsed on
// the next check(); later checks with other assumptions reuse the parsed assertions.
class Solver {
 public:
  // logic: "" (Z3 picks), or e.g. "QF_FD" for pure Boolean/pseudo-Boolean problems (SAT core).
  explicit Solver(Limits limits = {}, std::string logic = "");
  ~Solver();
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  // Counts `terms` against the cap before the caller builds them. false once past the cap; the
  // query is then refused (check() answers Unknown with refusal()).
  // `extra_bytes`: memory the query takes beyond its terms' share (the SMT engine's nodup bit
  // vectors: a numeral of c bits for each contribution c), added to the --max-memory check.
  bool reserve(std::uint64_t terms, std::uint64_t extra_bytes = 0);
  bool refused() const { return refused_; }
  std::uint64_t reserved() const { return reserved_; }
  const Limits& limits() const { return limits_; }
  std::string refusal() const;  // the clear message for a refused query

  // Declares a constant (sort "Int", "Bool", "(Seq Int)", ...) and remembers its sort, so check()
  // can report its model value.
  void declare(const std::string& name, const std::string& sort);
  // Starts a new query in the same context: clears the script (and the parsed assertions); the
  // size count and limits stay.
  void reset_script();
  // Appends SMT-LIB2 declarations, definitions and assertions (no check-sat).
  void add(const std::string& smt2);
  std::string& script() {
    dirty_ = true;
    return script_;
  }
  const std::string& script_text() const { return script_; }

  // check-sat-assuming `assumptions` (names of declared Boolean constants). For sat, the values
  // of `value_names` (declared constants) are returned with model completion.
  Result check(const std::vector<std::string>& assumptions,
               const std::vector<std::string>& value_names = {});

  // The query as a self-contained SMT-LIB2 file: `; expected: <answer>`, comment lines, the
  // script, and (check-sat-assuming (...)). Returns the text; emit_smt2 also writes it.
  std::string to_smt2(Answer expected, const std::vector<std::string>& assumptions,
                      const std::string& comment = "") const;
  void emit_smt2(const std::string& path, Answer expected,
                 const std::vector<std::string>& assumptions,
                 const std::string& comment = "") const;
  // A certificate with several checks, one (check-sat-assuming ...) per entry, in order: every
  // check but the last is a lemma (expected unsat), the last one is the question (expected).
  std::string to_smt2_checks(Answer expected, const std::vector<std::vector<std::string>>& checks,
                             const std::string& comment = "") const;

 private:
  // check() for a script read in pieces (Limits::read_in_pieces_above): the script goes to the
  // context's command reader piece by piece, stopping at the time limit (`fired`, or the
  // command's --timeout) between pieces; the check, core, values and reason are commands too.
  void check_in_pieces(Result& r, const std::vector<std::string>& assumptions,
                       const std::vector<std::string>& value_names, unsigned ms,
                       const std::function<bool()>& fired,
                       const std::function<std::string()>& timed_out);
  struct Impl;
  std::unique_ptr<Impl> impl_;  // holds the z3::context (declared first there) and the solver
  Limits limits_;
  std::string logic_;
  std::string script_;
  std::map<std::string, std::string> sorts_;
  bool dirty_ = true;
  bool refused_ = false;
  std::string memory_refusal_;  // set when reserve() refused for --max-memory
  std::uint64_t reserved_ = 0;
  std::uint64_t extra_bytes_ = 0;
};

// Runs a complete SMT-LIB2 script (with its own check-sat / check-sat-assuming) in a fresh
// context, as the z3 executable would. Result::answers lists every check's answer in order and
// Result::answer is the last one (a collv certificate's question; the checks before it are lemmas
// that must be unsat: lemma_failure() says when one is not). Scripts larger than max_bytes are
// refused (Unknown). Throws UsageError on a parse error.
Result run_smt2_script(const std::string& text, unsigned timeout_ms, std::uint64_t max_bytes);

// "" when every check before the last answered unsat; otherwise which lemma check did not.
std::string lemma_failure(const Result& r);

// The expected answer written in a certificate's "; expected: X" line, if any.
std::optional<Answer> expected_answer_of(const std::string& text);

}  // namespace collv::smt
