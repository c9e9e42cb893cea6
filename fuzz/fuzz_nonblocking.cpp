// libFuzzer harness for the nonblocking language (docs/language.md, "Nonblocking point-to-point"):
// the bytes are decoded into a program of irecv, isend, wait, waitall, send, receive, buffer
// writes and short loops, always well formed, so that every input reaches the executor's request
// table, matching, overlap and access checks and waitall (raw model text rarely parses). Each run
// is bounded by tight --max-ops, --max-steps and --max-memory; a model that errs, deadlocks or
// meets a limit is fine, a crash, sanitizer report or hang is not. The first byte picks the
// topology (complete:2, complete:3, ring:4, star:3) and the domain; each next three bytes are one
// statement (docs/fuzzing.md).
#include <cstdint>
#include <string>

#include "check/checks.hpp"
#include "exec/executor.hpp"
#include "lang/ast.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"

namespace {

// One statement from three bytes: the kind, then two operands (a position, a peer offset, a
// request name or a loop length).
std::string statement(std::uint8_t k, std::uint8_t a, std::uint8_t b) {
  const std::string pos = std::to_string(a % 6);
  const std::string pos2 = std::to_string(a % 6 + b % 3);
  const std::string peer = "(my_id + " + std::to_string(b % 4) + ") mod p";
  const std::string from = "(my_id - " + std::to_string(b % 4) + ") mod p";
  const std::string req = "r" + std::to_string(b % 4);
  switch (k % 14) {
    case 0:
      return "irecv y[" + pos + " .. " + pos2 + "] from " + from + " as " + req + ";";
    case 1:
      return "irecv z from " + from + " as " + req + ";";
    case 2:
      return "isend x to " + peer + " as " + req + ";";
    case 3:
      return "isend y[" + pos + " .. " + pos2 + "] to " + peer + " as " + req + ";";
    case 4:
      return "wait " + req + ";";
    case 5:
      return "waitall;";
    case 6:
      return "waitall r" + std::to_string(a % 4) + ", " + req + ";";
    case 7:
      return "send x to " + peer + ";";
    case 8:
      return "receive t from " + from + ";";
    case 9:
      return "y[" + pos + "] := x;";
    case 10:
      return "t := y[" + pos + "];";
    case 11:  // many requests at once: a loop of irecvs from one source, then a waitall
      return "for k := 1 to " + std::to_string(a % 40 + 1) + " do irecv w[k .. k] from " + from +
             " as h; endfor;";
    case 12:
      return "for k := 1 to " + std::to_string(a % 40 + 1) + " do send x to " + peer + "; endfor;";
    default:
      return "if my_id = " + std::to_string(a % 3) + " then " + (b % 2 ? "waitall;" : "y := [];") +
             " endif;";
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 3 * 200 + 1) return 0;
  static const char* specs[] = {"complete:2", "complete:3", "ring:4", "star:3"};
  static const collv::Topology topos[] = {
      collv::Topology::parse(specs[0]), collv::Topology::parse(specs[1]),
      collv::Topology::parse(specs[2]), collv::Topology::parse(specs[3])};
  const collv::Topology& topo = topos[data[0] % 4];
  std::string text =
      "model nb\n  collective allgather\n  layout any\n  topology complete, ring, star\n"
      "  input x\n  output result\nprocedure P(my_id, x, result)\nbegin\n"
      "  y := x ∪ x ∪ x ∪ x ∪ x ∪ x ∪ x ∪ x;\n  z := [];\n  w := [];\n  t := [];\n"
      "  r0 := 0;\n  r1 := 0;\n  r2 := 0;\n  r3 := 0;\n  h := 0;\n";
  for (std::size_t i = 1; i + 2 < size; i += 3)
    text += "  " + statement(data[i], data[i + 1], data[i + 2]) + "\n";
  text += "  waitall;\n  result := x;\nend P\n";
  try {
    collv::Model m = collv::parse_model(text, "fuzz.coll");
    collv::RunOptions o;
    o.domain = (data[0] / 4) % 2 ? collv::DomainKind::Ordered : collv::DomainKind::Exact;
    o.count = (data[0] / 8) % 3 + 1;
    o.max_steps = 256;
    o.max_ops_per_node = 20000;
    o.max_memory = collv::resident_bytes() + (256ULL << 20);
    collv::Trace t = collv::run_model(m, topo, o);
    (void)collv::check_trace(t, collv::CheckOptions{});
  } catch (const collv::ModelError&) {
  } catch (const collv::UsageError&) {  // includes LimitError
  } catch (const collv::SpecError&) {
  }
  return 0;
}
