// libFuzzer harness: a short bounded run of a parsed model, then every check, then the same run
// streamed, whose steps, cost and verdicts must agree where it judges them. The first byte
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
    auto stored = collv::check_trace(t, collv::CheckOptions{});
    // The same run streamed (docs/checks.md "Streamed runs"): where it judges, it must agree.
    o.stream = collv::RunOptions::Stream::On;
    collv::Trace s = collv::run_model(m, topo, o);
    auto streamed = collv::check_trace(s, collv::CheckOptions{});
    if (s.stream_incomplete.empty() && t.failure.kind == collv::RunFailure::Kind::None) {
      if (s.failure.kind != t.failure.kind || s.steps != t.steps || s.cost_ts != t.cost_ts ||
          s.cost_tw != t.cost_tw || streamed.size() != stored.size())
        __builtin_trap();
      for (std::size_t i = 0; i < stored.size(); ++i)
        if (stored[i].name != "nodup" && stored[i].name != "dataflow" &&
            stored[i].verdict != streamed[i].verdict)
          __builtin_trap();
    }
  } catch (const collv::ModelError&) {
  } catch (const collv::UsageError&) {  // includes LimitError
  } catch (const collv::SpecError&) {
  }
  return 0;
}
