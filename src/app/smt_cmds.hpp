// The Z3 commands: `collv prove` (discharge proof obligations and certificates) and `collv synth`
// (synthesize a schedule or prove that none exists). `collv verify --engine smt|both` calls
// smt_check_trace (smt/prove.hpp) directly. See docs/smt.md.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "exec/executor.hpp"
#include "smt/prove.hpp"
#include "smt/synth.hpp"

namespace collv {

// collv prove PATH... [--emit-smt2 DIR] [--timeout MS] [--max-terms N] [--models DIR] [--quiet]
// PATH: a proof obligation (*.proof), an SMT-LIB2 certificate (*.smt2 with "; expected: X"), or
// a directory (every *.proof and *.smt2 in it, sorted, not recursive).
// Exit: 0 every obligation has its expected answer; 1 some obligation was decided against its
// expectation (a violation, a counterexample, or an unexpected sat/unsat); 3 none contradicted but
// some inconclusive (timeout, size cap); 2 bad usage or unreadable/malformed files.
// The SMT engine for `collv verify --engine smt|both` (it has the signature of verify's
// ExtraEngine plus the options): uses `trace` when it is from the ordered domain (or the exact
// domain with a commutative operator), otherwise re-runs the model in the ordered domain; then
// smt_check_trace. A re-run refused by a resource limit gives `unknown` verdicts with the reason.
//   ExtraEngine e = [&](auto& m, auto& t, auto& ro, auto& tr) { return smt_verify_engine(m, t, ro,
//   tr, so); };
std::vector<CheckResult> smt_verify_engine(const Model& m, const Topology& topo,
                                           const RunOptions& ro, const Trace& trace,
                                           const SmtOptions& so);

// The re-check of a synthesized schedule under the machine model it was synthesized for: the
// executor's checkers (with --port all the single-port rule is not-checked; congestion allows one
// transfer per directed link per step) plus `dataflow` and `match`. synthesized_ok: no failure
// other than nodup (not claimed by the all-reduce encoding); `why` names the first failure.
std::vector<CheckResult> recheck_synthesized(const Trace& t, PortModel port);
bool synthesized_ok(const std::vector<CheckResult>& rs, std::string* why);

// The default --rlimit of `prove --every-p` (docs/smt.md, "The portfolio": 2 to 60 s of CPU on
// Open MPI's recursive halving; Z3's units are not a fixed measure of time).
inline constexpr std::uint64_t kDefaultEveryPRlimit = 20'000'000;

struct ProveCommandOptions {
  std::vector<std::string> paths;
  std::string models_dir;       // for `kind model` ("" = default_models_dir())
  unsigned timeout_ms = 60000;  // per query (--every-p: per way of the portfolio)
  // --every-p: Z3's resource units per way of the portfolio (src/smt/portfolio.hpp), the bound
  // that decides when a way gives up, the same on any load (0 = none: the wall clock alone).
  std::uint64_t rlimit = kDefaultEveryPRlimit;
  std::uint64_t max_terms = 20'000'000;
  std::string emit_dir;       // --emit-smt2: write every query as a .smt2 certificate
  bool quiet = false;         // only the summary line
  bool every_p = false;       // --every-p: paths are MODEL.coll and/or a `kind every-p` proof
  std::string every_p_model;  // --model: apply the proof to this model file instead
};
int run_prove_command(const ProveCommandOptions& o, std::ostream& out, std::ostream& err);

// collv synth COLLECTIVE --topology SPEC --steps T [--port single|all] [--least] [--uniform]
// [--root R]
//             [--json FILE] [--schedule] [--emit-smt2 DIR] [--timeout MS] [--max-terms N]
// Exit: 0 a schedule was found (with --least: the least T, every smaller T proved impossible);
// 1 proved impossible (unsat: no schedule with at most T steps; with --uniform: no uniform one);
// 3 inconclusive (timeout, size cap, or --least with an inconclusive smaller T); 2 bad usage.
struct SynthCommandOptions {
  SynthOptions synth;     // collective, topology, steps, port, least, uniform, root, timeout_ms,
                          // max_terms, emit_dir
  std::string json_file;  // write the schedule (a Trace) as JSON here ("-" = stdout)
  bool schedule = false;  // print every transfer even when there are many
  std::string picture;    // draw the schedule found: FILE.svg, .png or .dot
  bool quiet = false;
};
int run_synth_command(const SynthCommandOptions& o, std::ostream& out, std::ostream& err);

}  // namespace collv
