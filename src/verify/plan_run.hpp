// What every strategy of the verification plan (verify/plan.hpp) does with one run: the
// verdicts of the engines folded, the run's status, the strict rules, a picture of the first
// violation, the errors a run may end in, the report's groups and exit code.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "verify/partition.hpp"
#include "verify/plan.hpp"

namespace collv {

// Folds the SMT engine's verdicts into the executor's, per the chosen engine, and records which
// engine decided each check (CheckResult::decided_by) and any disagreement.
void merge_engine(std::vector<CheckResult>& exec, std::vector<CheckResult> smt,
                  const std::string& engine);

// The run's status. In an ordered-domain run of a model that declares `operator commutative`, a
// failure of operand order only is expected: marked commutative_only and never counted as a
// failure, whatever else fails in the run (a run whose only failures are those is
// "commutative-only").
std::string run_status(std::vector<CheckResult>& checks, const Trace& t, DomainKind dom);

// --strict: the collective's own rules, whatever the file or model declares.
void impose_strict(Trace& t);

// Whether a run's verdict held only because the file or model loosened the collective's rules;
// what the strict rules say, or "".
std::string loosened_by(Trace& t, const std::string& status, Partition* part);

// One picture of the first violation of a failing run, named after the run.
void write_cex_picture(const std::string& dir, const VerifyRun& run, const Trace& t,
                       std::ostream& err);

// Runs f (a run and its checks); a model or usage error becomes the run's error, a limit makes
// the run inconclusive.
template <class F>
void guarded(VerifyRun& run, F&& f) {
  try {
    f();
  } catch (const ModelError& e) {
    run.status = "error";
    run.error = e.what();
  } catch (const StreamRefused& e) {  // --stream on for a run that cannot stream: usage
    run.status = "error";
    run.error = e.what();
  } catch (const LimitError& e) {  // --timeout, --max-memory, --max-ops: undecided, exit 3
    run.status = "inconclusive";   // (exit_codes.hpp: one exit code for every limit)
    run.error = e.what();
  } catch (const UsageError& e) {
    run.status = "error";
    run.error = e.what();
  }
}

void set_exit_code(VerifyReport& rep);

// The report's group of a model file on a family, made if it is not there yet.
std::size_t report_group(VerifyReport& rep, const std::string& model, const std::string& file,
                         const std::string& family, bool named);

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// `--domain symmetry` (plan_symmetry.cpp).
VerifyReport verify_by_symmetry(const VerifyOptions& o,
                                const std::vector<std::pair<std::string, bool>>& files,
                                std::ostream& err);

// Schedule files, judged as they are (plan_files.cpp): those of --trace and the targets.
void verify_schedule_files(const VerifyOptions& o, std::optional<std::uint32_t> fixed_source,
                           const ExtraEngine& smt, VerifyReport& rep, std::ostream& err);

}  // namespace collv
