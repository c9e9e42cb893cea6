// libFuzzer harness: the topology spec parser. Specs are parsed and, when they build, queried
// (routes, labels, directions) on a few nodes.
#include <cstdint>
#include <string>

#include "fuzz_common.hpp"
#include "topology/topology.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 256) return 0;
  std::string spec(reinterpret_cast<const char*>(data), size);
  if (expensive_spec(spec)) return 0;
  // Topology files are read from disk: fuzz_import feeds their text to the reader instead.
  if (spec.find("file:") != std::string::npos || spec.find(".json") != std::string::npos ||
      spec.find(".JSON") != std::string::npos)
    return 0;
  try {
    collv::Topology t = collv::Topology::parse(spec);
    std::size_t n = t.num_nodes();
    for (std::size_t v = 0; v < n && v < 4; ++v) {
      (void)t.label(static_cast<collv::NodeId>(v));
      (void)t.route(static_cast<collv::NodeId>(v), static_cast<collv::NodeId>(n - 1 - v));
    }
  } catch (const collv::SpecError&) {
  } catch (const collv::UsageError&) {
  }
  return 0;
}
