// The SMT engine of `collv verify --engine smt|both`: the invariants of a finished Trace proved for
// ALL input values, by negation, with Z3 (docs/smt.md).
//
//   collv::RunOptions ro;  ro.domain = collv::DomainKind::Ordered;
//   collv::Trace t = collv::run_model(model, collv::Topology::parse("star:4"), ro);
//   for (const collv::CheckResult& r : collv::smt_check_trace(t, {}))
//     std::cout << r.name << ": " << collv::verdict_name(r.verdict) << "\n";
//
// Inputs are symbolic: x<node>_<elem> (Int). Every item sent is a term over what its sender held
// at that step, as the schedule's derivation says (analyze_dataflow: which held values were
// combined, in which order); final buffers are built the same way; the postcondition compares them
// with the collective's required terms, built from the inputs alone. Terms are integer sums when
// the operator is commutative (a proof holds for every commutative operator) and Z3 sequences of
// units (the free monoid) when it is associative (every associative operator). NODUP is asked of
// the same terms (one-hot inputs: a term's value is a contribution's multiplicity). single-port,
// route and congestion do not depend on data: ground formulas with witness constants.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "check/checks.hpp"
#include "check/dataflow.hpp"
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
  // With integer sums on an ordered-domain trace, also compare operand order (from the schedule's
  // derivations) and report a difference in order only as an order-only failure, as the
  // executor's ordered domain does (`collv verify` sets it for ordered runs).
  bool report_order = false;
};

// The checks Z3 decides: route, nodup, postcondition, final-buffers (queries on the schedule's
// terms and the topology's links). The others are the executor's: single-port and congestion are
// per-step counts of the transfer list (a query would only compare collv's counts), steps, cost,
// deadlock, dataflow, match and runtime its own.
bool smt_decides(const std::string& check);
// Why the SMT engine leaves a check it does not decide to the executor.
std::string smt_not_decided_note(const std::string& check);

// Results for every name of kCheckNames, in that order: those smt_decides names are decided by Z3
// (Pass = unsat, Fail = sat with counterexamples, Unknown = timeout or size cap), unless the
// trace's file leaves them open (Trace::file_not_checked: NotChecked with its reason); the
// others are NotChecked (the executor's).
// The trace must come from the ordered domain (or the exact domain for a commutative algebra).
// Throws UsageError for a fingerprint trace or an exact trace with an associative algebra.
// The data terms (nodup, postcondition, final-buffers) are built from the schedule's derivations
// (analyze_dataflow): if one is missing, those checks are Unknown ("not proved"), never Pass.
std::vector<CheckResult> smt_check_trace(const Trace& ordered_trace, const SmtOptions& o);
// The same with the derivations given (tests break one to see the proof fail).
std::vector<CheckResult> smt_check_trace(const Trace& ordered_trace, const Dataflow& df,
                                         const SmtOptions& o);

}  // namespace collv
