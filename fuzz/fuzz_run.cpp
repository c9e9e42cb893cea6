// libFuzzer harness: a short bounded run of a parsed model, then every check. The first byte
// picks the topology (ring:4, star:3, hypercube:2, mesh:2x2 by value mod 4), the rest is the model
// (the encoding of shared/data/reproducers/run-*.bin).
#include <cstdint>
#include <string>

#include "check/checks.hpp"
#include "exec/executor.hpp"
#include "lang/ast.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 16 * 1024) return 0;
  static const char* specs[] = {"ring:4", "star:3", "hypercube:2", "mesh:2x2"};
  static const collv::Topology topos[] = {
      collv::Topology::parse(specs[0]), collv::Topology::parse(specs[1]),
      collv::Topology::parse(specs[2]), collv::Topology::parse(specs[3])};
  const collv::Topology& topo = topos[data[0] % 4];
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    collv::Model m = collv::parse_model(text, "fuzz.coll");
    collv::RunOptions o;
    o.domain = (data[0] / 4) % 2 ? collv::DomainKind::Ordered : collv::DomainKind::Exact;
    o.max_steps = 64;
    o.max_ops_per_node = 2000;
    // The limit the whole process may hold (the sanitizers' own memory counts too).
    o.max_memory = collv::resident_bytes() + (256ULL << 20);
    collv::Trace t = collv::run_model(m, topo, o);
    collv::check_trace(t, collv::CheckOptions{});
  } catch (const collv::ModelError&) {
  } catch (const collv::UsageError&) {  // includes LimitError
  } catch (const collv::SpecError&) {
  }
  return 0;
}
