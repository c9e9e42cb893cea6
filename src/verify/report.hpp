// The verify report: its runs and groups, their tallies, and the writers (text, JSON, JUnit XML).
// `collv verify` (app/verify_cmd.hpp) fills a VerifyReport; every writer reads only the report,
// so the stored, streamed, symmetric and partitioned strategies report alike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "check/checks.hpp"

namespace collv {

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
  // `verify --every-p`: what `collv prove --every-p` says of the model with its proof in
  // proofs/every-p ("" when not asked or there is none).
  std::string every_p;
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

// The text report. Default: one line per model and family (runs, passed, commutative-only,
// failed, inconclusive, errors, skipped, sizes, time), then the failures grouped by model, family
// and check with the first counterexample in full, then the summary line. `runs_table`: one line
// per run and the first counterexample of each failing run. `quiet`: the summary line only.
std::string report_to_text(const VerifyReport& r, bool runs_table, bool quiet);
// The summary line, e.g. "12 runs: 10 passed, 1 failed, ...".
std::string summary_line(const VerifyReport& r);

std::string report_to_json(const VerifyReport& r);
std::string report_to_junit(const VerifyReport& r);

// "allreduce_star on star:4 (exact)": a run's name in reports.
std::string run_label(const VerifyRun& r);

}  // namespace collv
