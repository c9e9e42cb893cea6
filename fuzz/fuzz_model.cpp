// libFuzzer harness: the model parser and checker (parse_model, which type-checks too).
#include <cstdint>
#include <string>

#include "lang/ast.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;  // model files are small; deep nesting is covered below this
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    collv::Model m = collv::parse_model(text, "fuzz.coll");
  } catch (const collv::ModelError&) {
  } catch (const collv::UsageError&) {
  }
  // Anything else (InternalError, std::exception, a crash) is a finding.
  return 0;
}
