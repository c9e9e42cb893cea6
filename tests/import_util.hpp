// Helpers of the schedule-reader tests (test_import_goal.cpp, test_import_sccl.cpp,
// test_msccl_runtime.cpp): the checks of an imported schedule by name.
#pragma once

#include <map>
#include <set>
#include <string>

#include "import/import.hpp"

namespace collv::test {

// Every check's result on s under the default options, by check name.
inline std::map<std::string, CheckResult> results(const ImportedSchedule& s) {
  std::map<std::string, CheckResult> out;
  for (const auto& r : check_imported(s, CheckOptions{})) out[r.name] = r;
  return out;
}

// The names of the checks that fail on s.
inline std::set<std::string> failing(const ImportedSchedule& s) {
  std::set<std::string> out;
  for (const auto& [name, r] : results(s))
    if (r.verdict == Verdict::Fail) out.insert(name);
  return out;
}

}  // namespace collv::test
