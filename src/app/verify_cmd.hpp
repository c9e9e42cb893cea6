// `collv verify`: runs models over topologies, sizes, sources and domains, judges every invariant
// and reports as a table, JSON and JUnit XML. Usable as a CI gate through its exit code. This is
// the command line: the model names resolved to files, --every-p, and the report written; the
// plan of runs and the strategy of each is verify/plan.hpp (VerifyOptions, verify_plan).
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
#include "verify/plan.hpp"
#include "verify/report.hpp"

namespace collv {

// Parses "A..B" (or "A") into a range; throws UsageError.
std::pair<std::int64_t, std::int64_t> parse_size_range(const std::string& s,
                                                       const std::string& option = "--sizes");

// verify_plan over the model files o names (--all, directories, model names), with --every-p.
VerifyReport verify(const VerifyOptions& o, const ExtraEngine& smt, std::ostream& err);
int run_verify_command(const VerifyOptions& o, const ExtraEngine& smt, std::ostream& out,
                       std::ostream& err);

}  // namespace collv
