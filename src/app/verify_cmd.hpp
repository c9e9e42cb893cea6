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

namespace collv {

struct VerifyOptions {
  std::vector<std::string> targets;      // model files, model names or directories
  std::vector<std::string> trace_files;  // schedules as JSON (docs/trace-format.md) to judge
  bool all = false;                      // every model in the models directory
  std::string models_dir;
  std::vector<std::string> topologies;  // explicit specs; empty = the models' families
  std::optional<std::pair<std::int64_t, std::int64_t>> sizes;  // --sizes A..B
  std::string source = "all";      // "all" or a node id, for rooted collectives
  std::string domain = "default";  // exact | ordered | fingerprint | all | default (exact+ordered)
  std::string engine = "exec";     // exec | smt | both
  std::uint32_t max_p = 64;        // default bound on processors
  std::uint32_t max_star = 6;      // default bound on the star's n
  std::string json_file, junit_file, cex_dir;
  bool quiet = false;
  bool progress = false;  // progress line on stderr (the CLI sets it when stderr is a tty)
  RunOptions run;         // limits; domain/root/shift are set per run
};

// Parses "A..B" (or "A") into a range; throws UsageError.
std::pair<std::int64_t, std::int64_t> parse_size_range(const std::string& s);

// One run of the matrix with its verdicts.
struct VerifyRun {
  std::string model, file, topology, domain;
  std::uint32_t p = 0;
  std::optional<std::uint32_t> source;  // rooted collectives
  std::optional<std::int64_t> shift;    // shift collectives
  std::uint32_t steps = 0;
  double cost_ts = 0, cost_tw = 0;
  std::vector<CheckResult> checks;
  std::string status;  // pass | fail | inconclusive | commutative-only | error
  std::string error;   // status "error": the message (model or limit error)
};

struct VerifyReport {
  std::vector<VerifyRun> runs;
  std::size_t skipped_runs = 0;  // size/source/domain combinations where `requires` is false
  int exit_code = 0;
};

// Called with an engine's extra verdicts for one run (the SMT engine plugs in here); returns the
// results to merge, or an empty vector.
using ExtraEngine = std::function<std::vector<CheckResult>(const Model&, const Topology&,
                                                           const RunOptions&, const Trace&)>;

VerifyReport verify(const VerifyOptions& o, const ExtraEngine& smt, std::ostream& err);
int run_verify_command(const VerifyOptions& o, const ExtraEngine& smt, std::ostream& out,
                       std::ostream& err);

std::string report_to_json(const VerifyReport& r);
std::string report_to_junit(const VerifyReport& r);

}  // namespace collv
