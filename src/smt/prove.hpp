// The SMT engine of `collv verify --engine smt|both`: the invariants of a finished Trace proved for
// ALL input values, by negation, with Z3 (docs/smt.md).
//
//   collv::RunOptions ro;  ro.domain = collv::DomainKind::Ordered;
//   collv::Trace t = collv::run_model(model, collv::Topology::parse("star:4"), ro);
//   for (const collv::CheckResult& r : collv::smt_check_trace(t, {}))
//     std::cout << r.name << ": " << collv::verdict_name(r.verdict) << "\n";
//
// Inputs are symbolic: x_c (Int) for contribution c. Items are encoded from the trace's terms in
// operand order: integer sums when the model's operator is commutative (a proof holds for every
// commutative operator), Z3 sequences of units (the free monoid) when it is associative (a proof
// holds for every associative operator). The schedule invariants (single-port, route, congestion,
// nodup) do not depend on data: they are encoded as ground formulas with witness constants.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "check/checks.hpp"
#include "exec/trace.hpp"

namespace collv {

enum class SmtAlgebra {
  Auto,         // the model's operator class (Trace::op_class)
  Commutative,  // integer sums
  Associative   // sequences (free monoid)
};

struct SmtOptions {
  unsigned timeout_ms = 30000;           // per query (one query per invariant)
  std::uint64_t max_terms = 20'000'000;  // size cap per trace, counted before anything is built
  std::size_t max_violations = 5;        // counterexamples kept per invariant
  SmtAlgebra algebra = SmtAlgebra::Auto;
  std::string emit_dir;  // if set: write every query as <dir>/<name>.smt2
};

// Results for every name of kCheckNames, in that order: single-port, route, congestion, nodup,
// postcondition, final-buffers are decided by Z3 (Pass = unsat, Fail = sat with counterexamples,
// Unknown = timeout or size cap); steps, cost and deadlock are NotChecked (the executor's).
// The trace must come from the ordered domain (or the exact domain for a commutative algebra).
// Throws UsageError for a fingerprint trace or an exact trace with an associative algebra.
std::vector<CheckResult> smt_check_trace(const Trace& ordered_trace, const SmtOptions& o);

}  // namespace collv
