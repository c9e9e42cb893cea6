// libFuzzer harness: the schedule-file reader as `collv verify FILE.json` reads it
// (parse_json_input: duplicate keys, nesting depth; then trace_from_json) and every check on what
// it reads.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "check/checks.hpp"
#include "exec/trace.hpp"
#include "util/error.hpp"
#include "util/json_read.hpp"
#include "util/memory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 256 * 1024) return 0;
  nlohmann::json j;
  try {
    j = collv::parse_json_input(std::string_view(reinterpret_cast<const char*>(data), size),
                                "fuzz.json");
  } catch (const collv::UsageError&) {  // not JSON, a key twice, nested deeper than 64
    return 0;
  }
  try {
    collv::Trace t =
        collv::trace_from_json(j, "fuzz.json", collv::resident_bytes() + (256ULL << 20));
    collv::check_trace(t, collv::CheckOptions{});
  } catch (const collv::UsageError&) {  // includes LimitError
  } catch (const collv::SpecError&) {
  }
  return 0;
}
