// `collv verify`: runs models over topologies, sizes, sources and domains, judges every invariant
// and reports as a table, JSON and JUnit XML. Usable as a CI gate through its exit code.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "check/checks.hpp"
#include "exec/executor.hpp"
#include "import/import.hpp"

namespace collv {

struct VerifyOptions {
  std::vector<std::string> targets;      // model files, model names or directories
  std::vector<std::string> trace_files;  // schedules as JSON (docs/trace-format.md) to judge
  bool all = false;                      // every model in the models directory
  std::string models_dir;
  std::vector<std::string> topologies;  // explicit specs; empty = the models' families
  std::optional<std::pair<std::int64_t, std::int64_t>> sizes;  // --sizes A..B
  std::pair<std::int64_t, std::int64_t> counts{1, 1};          // --count A..B (elements)
  std::string source = "all";      // "all" or a node id, for rooted collectives
  std::string domain = "default";  // exact | ordered | fingerprint | all | default (exact+ordered)
  std::string engine = "exec";     // exec | smt | both
  std::uint32_t max_p = 64;        // default bound on processors
  std::uint32_t max_star = 6;      // default bound on the star's n
  std::string json_file, junit_file, cex_dir;
  bool quiet = false;       // only the summary line (and why nothing ran, on the error stream)
  bool runs_table = false;  // --runs: one line per run and every failing run in full
  bool progress = false;    // progress line on stderr (the CLI sets it when stderr is a tty)
  RunOptions run;           // limits; domain/root/shift are set per run
  // --port given on the command line: replaces a schedule file's own port model (MSCCL and
  // SCCL files are all-port, GOAL single-port, collv JSON says which).
  std::optional<PortModel> file_port;
  MscclOptions msccl;  // MSCCL-XML files: --msccl-runtime, --msccl-slots
  // --collective: what a GOAL file implements (GOAL does not declare it; judge_goal_flow).
  std::string file_collective;
  // --strict: the collective's own rules whatever a file or model declares (MPI's positional
  // layout; operands in rank order, as for a non-commutative operator).
  bool strict = false;
};

// Parses "A..B" (or "A") into a range; throws UsageError.
std::pair<std::int64_t, std::int64_t> parse_size_range(const std::string& s,
                                                       const std::string& option = "--sizes");

// One run of the matrix with its verdicts.
struct VerifyRun {
  std::string model, file, topology, domain;
  std::uint64_t p = 0;  // processors (n! on star:n, also past the executor's node cap)
  std::optional<std::uint32_t> source;  // rooted collectives
  std::optional<std::int64_t> shift;    // shift collectives
  std::uint32_t count = 1;              // --count: elements per input (or per block)
  std::uint32_t steps = 0;
  double cost_ts = 0, cost_tw = 0;
  bool streamed = false;  // judged as it ran, no trace kept (RunOptions::stream)
  std::vector<CheckResult> checks;
  std::string status;             // pass | fail | inconclusive | commutative-only | error
  std::string error;              // status "error": the message (model or limit error)
  bool data_not_checked = false;  // a schedule format without data (GOAL): passes judge no data
  // A verdict that held only under the rules the file or model loosened (`layout any`,
  // `operator commutative`): what the collective's own rules (--strict) say instead; "" if none.
  std::string loosened;
  std::size_t group = 0;  // index into VerifyReport::groups
  double seconds = 0;     // wall time of the run and its checks (text report only, never JSON)
};

// One model (or schedule file) on one topology family: a line of the per-model summary.
struct VerifyGroup {
  std::string model, file, family;
  std::vector<std::string> specs;  // the sizes tried, in order
  std::size_t skipped_runs = 0;    // size/source/domain combinations where `requires` is false
  std::size_t no_source = 0;       // sizes where the --source S is not a processor
  double seconds = 0;              // wall time of its runs (text report only, never JSON)
  bool named = false;              // the model was named on the command line (not --all or a dir)
  std::string no_run;              // why no run was made ("" when one was)
};

// The counts of a set of runs, defined once for every report (text, JSON): each run counts in
// exactly one of passed, commutative_only, failed, inconclusive, errors (its status), so
// runs = passed + commutative_only + failed + inconclusive + errors.
struct Tally {
  std::size_t runs = 0, passed = 0, commutative_only = 0, failed = 0, inconclusive = 0, errors = 0;
  void add(const VerifyRun& r);
};

struct VerifyReport {
  std::vector<VerifyRun> runs;
  std::vector<VerifyGroup> groups;
  std::size_t skipped_runs = 0;  // size/source/domain combinations where `requires` is false
  int exit_code = 0;
  Tally tally() const;                   // every run
  Tally tally(std::size_t group) const;  // the runs of one group
  // The groups that ran nothing and make the exit code 2: every group when no run was made at
  // all, else the groups of models named on the command line none of whose groups ran.
  std::vector<std::size_t> nothing_checked() const;
};

// Called with an engine's extra verdicts for one run (the SMT engine plugs in here); returns the
// results to merge, or an empty vector.
using ExtraEngine = std::function<std::vector<CheckResult>(const Model&, const Topology&,
                                                           const RunOptions&, const Trace&)>;

VerifyReport verify(const VerifyOptions& o, const ExtraEngine& smt, std::ostream& err);
int run_verify_command(const VerifyOptions& o, const ExtraEngine& smt, std::ostream& out,
                       std::ostream& err);

// The text report. Default: one line per model and family (runs, passed, commutative-only,
// failed, inconclusive, errors, skipped, sizes, time), then the failures grouped by model, family
// and check with the first counterexample in full, then the summary line. `runs_table`: one line
// per run and the first counterexample of each failing run. `quiet`: the summary line only.
std::string report_to_text(const VerifyReport& r, bool runs_table, bool quiet);
// The summary line, e.g. "12 runs: 10 passed, 1 failed, ...".
std::string summary_line(const VerifyReport& r);

std::string report_to_json(const VerifyReport& r);
std::string report_to_junit(const VerifyReport& r);

}  // namespace collv
