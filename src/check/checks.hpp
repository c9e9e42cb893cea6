// Invariant checkers. Each reads a finished Trace (it is not woven into the executor), has a fixed
// name, and returns a verdict with its own counterexamples.
//
//   collv::Trace t = collv::run_model(model, topo, opts);
//   for (const collv::CheckResult& r : collv::check_trace(t, {}))
//     if (r.verdict == collv::Verdict::Fail) std::cout << r.violations[0].message << "\n";
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/trace.hpp"

namespace collv {

enum class Verdict { Pass, Fail, Unknown, NotChecked };
const char* verdict_name(Verdict v);  // "pass", "fail", "unknown", "not-checked"

// The fixed check names, in report order.
inline constexpr const char* kCheckNames[] = {
    "single-port",   "route",         "congestion", "nodup", "dataflow", "match",
    "postcondition", "final-buffers", "steps",      "cost",  "deadlock", "runtime"};

struct LinkLoad {
  NodeId from, to;
  std::uint32_t transfers;  // how many transfers cross from -> to in the step
  std::uint32_t items;
};

struct NodeBuffer {
  NodeId node;
  std::string what;      // "output", "received", "expected", "held", ...
  std::string contents;  // the buffer, as Domain::describe prints it
};

// One violation of one invariant: what broke, where (step, nodes, transfers) and the buffers.
struct Counterexample {
  std::string invariant;
  std::optional<std::uint32_t> step;
  std::vector<NodeId> nodes;
  std::vector<std::uint32_t> transfers;  // indices into Trace::transfers
  std::vector<LinkLoad> loads;           // congestion: every loaded link of the step
  std::vector<NodeBuffer> buffers;
  std::string message;  // one line, readable on its own
};

struct CheckResult {
  std::string name;
  Verdict verdict = Verdict::NotChecked;
  std::vector<Counterexample> violations;  // at most CheckOptions::max_violations kept
  std::size_t violation_count = 0;         // all of them, kept or not
  std::string note;                        // why not checked / unknown, or extra facts
  // postcondition under the ordered domain: every difference is one of operand order only (the
  // multisets of contributions are right). A model that declares `operator commutative` is
  // expected to fail this way.
  bool order_only = false;
  // `collv verify --engine smt|both`: which engine decided the verdict ("exec", "smt",
  // "exec+smt"; empty: the executor alone, no other engine ran) and whether the engines disagree.
  std::string decided_by;
  bool engines_disagree = false;
  // not-checked because the run stopped at a deadlock, a runtime error (mark_stopped_run) or a
  // limit (check_trace): the note says how; reports list these beside what they follow from.
  bool after_stop = false;
  // `collv verify`: a failure of operand order only (order_only) in an ordered-domain run of a
  // model that declares `operator commutative`: expected, reported as commutative-only and never
  // as a failure, whatever else fails in the run.
  bool commutative_only = false;
};

struct CheckOptions {
  std::size_t max_violations = 5;
  // dataflow: search steps allowed per item and per trace when an item must be decomposed into
  // held items; an item left undecided makes the verdict unknown, never pass.
  std::uint64_t dataflow_item_budget = 200000;
  std::uint64_t dataflow_total_budget = 50000000;
  // Congestion counts transfers (at most one per directed link per step) even on a topology that
  // declares bandwidths in chunks: synth's message model, where a transfer carries any set of
  // items it holds.
  bool congestion_in_transfers = false;
  // Threads for the checks that split their work (nodup): 0 = two for traces of 200,000
  // transfers or more, one below. The verdict and the counterexamples do not depend on it.
  unsigned threads = 0;
  // nodup on exact terms: bytes the held sets shared between nodes may take, beyond which the
  // nodes not yet done are checked bit by bit (also bounded by half the memory left under the
  // process's limit). The verdict and the counterexamples do not depend on it.
  std::uint64_t nodup_shared_bytes = UINT64_MAX;
  // nodup: first prove nodes clean by their output's combine history (false: tests that compare
  // the other ways). The verdict and the counterexamples do not depend on it.
  bool nodup_by_history = true;
};

// Runs every check, in kCheckNames order. A run stopped at a deadlock or a runtime error reports
// it once: the checks that follow from it are not-checked, with the reason (mark_stopped_run).
std::vector<CheckResult> check_trace(const Trace& t, const CheckOptions& o);

// Why a run's end is not judged: "the run deadlocked after step 3 (see the deadlock check)",
// the runtime error's or the deadlock of the ports' equivalent; "" for a run that finished or
// stopped at a limit.
std::string stopped_run_reason(const Trace& t);
// Turns the checks that follow from a deadlock or a runtime error into not-checked with
// stopped_run_reason: after a deadlock of the ports (every value computed), the step-based ones
// (single-port, congestion, steps, cost); after any other deadlock or a runtime error, also
// dataflow, match, postcondition and final-buffers. route, nodup, deadlock and runtime stand.
void mark_stopped_run(std::vector<CheckResult>& all, const Trace& t);

// The individual checks, for tests and for callers that want one.
// A result with verdict not-checked and `why` as its note (readers use it too).
CheckResult not_checked(const char* name, std::string why);
CheckResult check_single_port(const Trace& t, const CheckOptions& o);
CheckResult check_route(const Trace& t, const CheckOptions& o);
CheckResult check_congestion(const Trace& t, const CheckOptions& o);
CheckResult check_nodup(const Trace& t, const CheckOptions& o);
CheckResult check_postcondition(const Trace& t, const CheckOptions& o);
CheckResult check_final_buffers(const Trace& t, const CheckOptions& o);
CheckResult check_steps(const Trace& t, const CheckOptions& o);
CheckResult check_cost(const Trace& t, const CheckOptions& o);
CheckResult check_deadlock(const Trace& t, const CheckOptions& o);
// Runtime errors of the model (an out-of-range slice, a bad peer, ...): RunFailure::RuntimeError.
CheckResult check_runtime(const Trace& t, const CheckOptions& o);
// dataflow and match: see check/dataflow.hpp.

// The output the collective's definition asks of each processor, built with the trace's domain
// (so Item ids compare directly). Entries for processors with no requirement are nullopt (e.g.
// non-roots of a reduce), in MPI's layout: block j of an allgather or gather is rank j's input,
// item i of node j's all-to-all output is x[i][j]. A schedule file's trace that defines its own
// output (Trace::file_expected: its runtime's layout) gets that instead; both engines judge by it.
std::vector<std::optional<Buffer>> expected_outputs(const Trace& t);
// The same for nodes lo .. hi-1 only (entry v - lo for node v): a slice of a partitioned run.
std::vector<std::optional<Buffer>> expected_outputs(const Trace& t, NodeId lo, NodeId hi);
// The same without copies: null where expected_outputs has nullopt, and nodes of which the
// collective asks the same buffer (broadcast, all-reduce, allgather, allgatherv) share one.
using SharedBuffer = std::shared_ptr<const Buffer>;
std::vector<SharedBuffer> expected_output_refs(const Trace& t, NodeId lo, NodeId hi);

// Whether the outputs are judged up to order: allgather, gather and all-to-all under `layout any`
// (the book's union). Otherwise, MPI's layout: item for item, as expected_outputs orders them.
bool output_order_free(const Trace& t);

}  // namespace collv
