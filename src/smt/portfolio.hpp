// A portfolio of ways to ask Z3 one query, ending in a certificate that z3 alone answers the
// same way (docs/smt.md, "The portfolio").
//
//   smt::Limits lim{60000, 20'000'000};
//   lim.rlimit = 100'000'000;                     // per try, the same on any load
//   smt::Answered a = smt::solve_portfolio(script, {"a"}, {"p"}, lim, "every p: ...");
//   // a.result.answer: the first answer a way gave (sat stops at once: a counterexample);
//   // a.certificate: the text to write, the script of the way that answered, its options in it;
//   // a.way: which way ("api", "reader", "reader-seed-1", ...), also named in the certificate.
//
// The ways: collv's API way first (`ctx.parse_string`, `solver.add`, `check` with assumptions:
// Solver::check, unchanged, so a query it answers costs what it cost), then the z3 executable on
// the certificate's own text (`z3 FILE`: Z3's command reader in a process of its own; Z3's reader
// inside collv's process searches otherwise, its terms numbered after the API's own), then the
// same with other options: seeds, the old arithmetic solver, a tactic. Every way asks the same
// question: the options change how Z3 searches, never what is asserted (the tactic way asserts the
// assumption instead of assuming it: the same query). A sat from any way is a counterexample; only
// unknown moves on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "smt/solver.hpp"

namespace collv::smt {

struct Way {
  std::string name;     // "api", "reader", "reader-seed-1", ...
  std::string options;  // SMT-LIB commands written before the script (the certificate holds them)
  std::string tactic;   // not empty: (assert A ...) (check-sat-using TACTIC) for the check
  bool api = false;     // collv's API way (Solver::check)
};

// With certificates written, an unsat of the API way that took more CPU seconds than this is
// also asked of the z3 executable's ways (Z3's resource units are no measure of its time here:
// a query of 2.9 M units took 9 s, another of 1.1 M units 0.2 s; docs/smt.md).
inline constexpr double kConfirmAbove = 2.0;

// api, reader, reader-seed-1, reader-seed-2, reader-arith-2, reader-tactic.
const std::vector<Way>& default_ways();

// The certificate of `script` asked by `way`: "; expected: unsat", the comment lines, a line
// naming the way, the way's options, the script, and its check.
std::string way_certificate(const Way& way, const std::string& script,
                            const std::vector<std::string>& assumptions,
                            const std::string& comment);

struct Answered {
  Result result;                   // the answering way's result; Unknown when no way answered
  std::string certificate;         // the text to write (for the API way: the plain script)
  std::string way;                 // the way that answered ("" when none did)
  std::vector<std::string> tries;  // "WAY: ANSWER (units, seconds)" for every try, in order
  double seconds = 0;              // every try's wall time
  // The API way answered unsat past confirm_above CPU seconds and no way of the z3 executable did:
  // the answer stands (Z3's, on the same question), but z3 FILE may not replay the certificate.
  bool unconfirmed = false;
};

// Asks `script` (declarations and assertions, no check) under `assumptions` way by way until
// one answers sat or unsat. Each try is bounded by limits.timeout_ms (wall clock) and
// limits.rlimit (Z3's resource units, 0 = none); the size cap is checked once, before the first.
// The ways after the API's run the z3 executable on their certificate (`z3 -st [rlimit=N] FILE`):
// the file it answered is the certificate, so z3 alone replays it the same way. With
// confirm_above > 0, an unsat of the API way that took more CPU seconds than that is asked of the
// executable's ways, for a certificate z3 FILE answers, each try bounded by four times the API's
// wall time (at least 30 s; Answered::unconfirmed when none answers; a sat from one of them is a
// disagreement: unknown, never a proof).
Answered solve_portfolio(const std::string& script, const std::vector<std::string>& assumptions,
                         const std::vector<std::string>& value_names, const Limits& limits,
                         const std::string& comment, const std::vector<Way>& ways = default_ways(),
                         double confirm_above = 0);

}  // namespace collv::smt
