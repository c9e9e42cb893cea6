// The verification plan of `collv verify`: models x topologies x sizes x sources x counts x
// domains, and the strategy that serves each run: a stored or streamed run of the executor
// (run_model), a partitioned one (run_model_partitioned, collv-mpi), one representative node
// (-d symmetry, verify/symmetric.hpp), or a schedule file judged as read (import/). The command
// line (app/verify_cmd.cpp) resolves the model names and prints the report.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "check/checks.hpp"
#include "exec/executor.hpp"
#include "import/import.hpp"
#include "verify/report.hpp"

namespace collv {

class Partition;

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
  bool every_p = false;  // --every-p: also run the model's proof in proofs/every-p, if any
  // collv-mpi with more than one process: every run partitioned over them (verify/partition.hpp,
  // docs/partitioned.md). Every process calls verify() with the same options; rank 0 reports.
  Partition* partition = nullptr;
};

// Called with an engine's extra verdicts for one run (the SMT engine plugs in here); returns the
// results to merge, or an empty vector.
using ExtraEngine = std::function<std::vector<CheckResult>(const Model&, const Topology&,
                                                           const RunOptions&, const Trace&)>;

// The model files to run, sorted, each with whether it was named on the command line.
using ModelFiles = std::function<std::vector<std::pair<std::string, bool>>()>;

// Runs the plan `o` describes over the model files `files()` gives (called once, after the
// options are checked) and the schedule files of o; throws UsageError on bad options. The
// report's exit code is set.
VerifyReport verify_plan(const VerifyOptions& o, const ModelFiles& files, const ExtraEngine& smt,
                         std::ostream& err);

}  // namespace collv
