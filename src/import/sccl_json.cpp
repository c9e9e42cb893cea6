// SCCL/msccl algorithm JSON reader (docs/formats.md, "SCCL/msccl JSON").
#include "import/import.hpp"
#include "util/error.hpp"

namespace collv {

ImportedSchedule import_msccl_json(const std::string&, const std::string& source) {
  throw UsageError(source + ": SCCL/msccl JSON is not read yet");
}

}  // namespace collv
