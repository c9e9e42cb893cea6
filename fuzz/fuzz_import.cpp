// libFuzzer harness: the readers of other tools' files and of topology files. The first byte
// picks the reader (MSCCL-XML, SCCL/msccl JSON, GOAL, topology file); the rest is the file's text.
// What reads is judged by every check (check_imported), as `collv verify FILE` would.
#include <cstdint>
#include <string>

#include "check/checks.hpp"
#include "import/import.hpp"
#include "topology/topology.hpp"
#include "topology/topology_impl.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 256 * 1024) return 0;
  const int which = data[0] % 4;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (which == 3) {
      auto t = collv::listed_from_text(text, "file:fuzz.json", "fuzz.json");
      (void)t;
      return 0;
    }
    collv::ImportedSchedule s = which == 0   ? collv::import_msccl_xml(text, "fuzz.xml")
                                : which == 1 ? collv::import_msccl_json(text, "fuzz.json")
                                             : collv::import_goal(text, "fuzz.goal");
    collv::check_imported(s, collv::CheckOptions{});
  } catch (const collv::UsageError&) {  // includes LimitError
  } catch (const collv::SpecError&) {
  }
  return 0;
}
