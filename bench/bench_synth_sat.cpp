// The SAT backend against the Z3 backend on the same synthesis questions, in one run
// (docs/smt.md records the results).
//
//   bench_synth_sat                          # star:5 gossip T = 7 (unsat) and a few smaller ones
//   bench_synth_sat COLL SPEC T [all] [uniform]   # one question, both backends
//
// Each question is decided by both backends in turn (wall clock of synthesize(), which includes
// building the query); the answers must agree (exit 1 otherwise). The goal for star:5 T = 7 is
// CaDiCaL at least 5x faster than Z3 (exit 1 when missed).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_cli.hpp"
#include "smt/synth.hpp"

using namespace collv;
using Clock = std::chrono::steady_clock;

namespace {

struct Timed {
  smt::Answer answer;
  double seconds;
};

Timed decide(SynthOptions o, const std::string& backend) {
  o.backend = backend;
  auto t0 = Clock::now();
  SynthResult r = synthesize(o);
  return {r.answer, std::chrono::duration<double>(Clock::now() - t0).count()};
}

// Returns false when the backends disagree or the ratio target is missed.
bool compare(const std::string& coll, const std::string& spec, unsigned T, PortModel port,
             bool uniform, double target_ratio) {
  SynthOptions o;
  o.collective = coll;
  o.topology = spec;
  o.steps = T;
  o.port = port;
  o.uniform = uniform;
  o.timeout_ms = 1800000;
  Timed z = decide(o, "z3");
  Timed c = decide(o, "cadical");
  double ratio = c.seconds > 0 ? z.seconds / c.seconds : 0;
  bool agree = z.answer == c.answer;
  bool met = target_ratio <= 0 || ratio >= target_ratio;
  fmt::print("{} {} T={}{}{}: z3 {} {:.3f} s, cadical {} {:.3f} s, ratio {:.1f}x{}{}\n", coll, spec,
             T, port == PortModel::All ? " all-port" : "", uniform ? " uniform" : "",
             smt::answer_name(z.answer), z.seconds, smt::answer_name(c.answer), c.seconds, ratio,
             target_ratio > 0
                 ? fmt::format(" (target {}x: {})", target_ratio, met ? "met" : "MISSED")
                 : "",
             agree ? "" : "  ANSWERS DIFFER");
  std::fflush(stdout);
  return agree && met;
}

}  // namespace

int run_bench(int argc, char** argv, const std::vector<std::string>& a);

const char kUsage[] =
    "usage: bench_synth_sat                               the standard questions\n"
    "       bench_synth_sat COLL SPEC T [all] [uniform]   one question, both backends\n";

int main(int argc, char** argv) {
  return bench::guarded_main(argc, argv, kUsage,
                             [&](const bench::Args& a) { return run_bench(argc, argv, a); });
}

int run_bench(int argc, char** argv, const std::vector<std::string>& a) {
  if (!a.empty() && a.size() < 3) throw UsageError("expected COLL SPEC T");
  for (std::size_t i = 3; i < a.size(); ++i)
    if (a[i] != "all" && a[i] != "uniform")
      throw UsageError("expected all or uniform, not '" + a[i] + "'");
  if (argc >= 4) {
    bool all = false, uniform = false;
    for (int i = 4; i < argc; ++i) {
      all |= std::string(argv[i]) == "all";
      uniform |= std::string(argv[i]) == "uniform";
    }
    return compare(argv[1], argv[2],
                   static_cast<unsigned>(bench::number_arg(argv[3], "T", 1, 1000)),
                   all ? PortModel::All : PortModel::Single, uniform, 0)
               ? 0
               : 1;
  }
  bool ok = true;
  ok &= compare("allgather", "star:4", 5, PortModel::Single, false, 0);
  ok &= compare("allreduce", "star:4", 5, PortModel::Single, false, 0);
  ok &= compare("allgather", "star:5", 6, PortModel::All, false, 0);
  ok &= compare("allreduce", "star:5", 9, PortModel::Single, true, 0);
  ok &= compare("allgather", "star:5", 7, PortModel::Single, false, 5.0);
  return ok ? 0 : 1;
}
