// GOAL (LogGOPSim) reader (docs/formats.md, "GOAL").
#include "import/import.hpp"
#include "util/error.hpp"

namespace collv {

ImportedSchedule import_goal(const std::string&, const std::string& source) {
  throw UsageError(source + ": GOAL is not read yet");
}

}  // namespace collv
