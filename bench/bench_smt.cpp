// Timings of the Z3 layer (docs/smt.md records the results).
//
//   bench_smt                       # the standard set below
//   bench_smt verify MODEL SPEC     # collv verify MODEL -t SPEC --engine smt (exact + ordered)
//   bench_smt synth COLL SPEC T [all]   # one synthesis query, e.g. bench_smt synth allgather
//   star:4 5 bench_smt prove MODEL SPEC      # smt_check_trace of one model bench_smt proofs DIR
//   [EMIT]     # time `collv prove DIR [--emit-smt2 EMIT]`
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "app/commands.hpp"
#include "app/smt_cmds.hpp"
#include "app/verify_cmd.hpp"
#include "bench_cli.hpp"
#include "exec/executor.hpp"
#include "smt/prove.hpp"
#include "smt/synth.hpp"

using namespace collv;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int prove(const std::string& model, const std::string& spec, double target) {
  std::string path = resolve_model_path(model, default_models_dir());
  Model m = parse_model_file(path);
  RunOptions ro;
  ro.domain = DomainKind::Ordered;
  auto t0 = Clock::now();
  Trace t = run_model(m, Topology::parse(spec), ro);
  double run_s = since(t0);
  t0 = Clock::now();
  SmtOptions so;
  auto rs = smt_check_trace(t, so);
  double smt_s = since(t0);
  std::string verdicts;
  for (auto& r : rs) verdicts += fmt::format(" {}={}", r.name, verdict_name(r.verdict));
  fmt::print("prove {} on {}: executor (ordered run) {:.3f} s, SMT encode+check {:.3f} s{}\n ",
             model, spec, run_s, smt_s,
             target > 0
                 ? fmt::format(" (target {} s: {})", target, smt_s <= target ? "met" : "MISSED")
                 : "");
  fmt::print("{}\n", verdicts);
  if (std::getenv("BENCH_VERBOSE"))
    for (auto& r : rs) fmt::print("    {}: {}\n", r.name, r.note);
  return 0;
}

// `collv verify MODEL -t SPEC --engine smt` with the default domains (exact and ordered).
int verify_smt(const std::string& model, const std::string& spec, double target) {
  VerifyOptions o;
  o.targets = {model};
  o.topologies = {spec};
  o.engine = "smt";
  o.quiet = true;
  ExtraEngine smt = [](const Model& m, const Topology& t, const RunOptions& ro, const Trace& tr) {
    return smt_verify_engine(m, t, ro, tr, SmtOptions{});
  };
  auto t0 = Clock::now();
  std::ostringstream err;
  VerifyReport rep = verify(o, smt, err);
  double s = since(t0);
  std::string st;
  for (auto& r : rep.runs) st += " " + r.domain + "=" + r.status;
  fmt::print(
      "verify {} -t {} --engine smt (exact+ordered): exit {} in {:.3f} s{}{}\n", model, spec,
      rep.exit_code, s, st,
      target > 0 ? fmt::format(" (target {} s: {})", target, s <= target ? "met" : "MISSED") : "");
  if (std::getenv("BENCH_VERBOSE"))
    for (auto& r : rep.runs)
      for (auto& c : r.checks) fmt::print("    {} {}: {}\n", r.domain, c.name, c.note);
  std::fflush(stdout);
  return 0;
}

int synth(const std::string& coll, const std::string& spec, unsigned T, bool all, double target,
          unsigned timeout_ms = 600000, bool uniform = false) {
  SynthOptions o;
  o.collective = coll;
  o.topology = spec;
  o.steps = T;
  o.port = all ? PortModel::All : PortModel::Single;
  o.timeout_ms = timeout_ms;
  o.uniform = uniform;
  auto t0 = Clock::now();
  SynthResult r = synthesize(o);
  double s = since(t0);
  fmt::print(
      "synth {} {} T={} {}{}: {} in {:.3f} s (solver {:.3f} s){}{}\n", coll, spec, T,
      all ? "all-port" : "single-port", uniform ? " uniform" : "", smt::answer_name(r.answer), s,
      r.attempts.empty() ? 0.0 : r.attempts[0].seconds,
      r.attempts.empty() || r.attempts[0].reason.empty() ? "" : " [" + r.attempts[0].reason + "]",
      target > 0 ? fmt::format(" (target {} s: {})", target, s <= target ? "met" : "MISSED") : "");
  std::fflush(stdout);
  return 0;
}

}  // namespace

int run_bench(const std::vector<std::string>& a);

const char kUsage[] =
    "usage: bench_smt                          the standard set\n"
    "       bench_smt verify MODEL SPEC        collv verify MODEL -t SPEC --engine smt\n"
    "       bench_smt synth COLL SPEC T [all|uniform [TIMEOUT_MS]]   one synthesis query\n"
    "       bench_smt prove MODEL SPEC         smt_check_trace of one model\n"
    "       bench_smt proofs DIR [EMIT]        collv prove DIR [--emit-smt2 EMIT]\n";

int main(int argc, char** argv) {
  return bench::guarded_main(argc, argv, kUsage, [](const bench::Args& a) { return run_bench(a); });
}

int run_bench(const std::vector<std::string>& a) {
  auto arity = [&](std::size_t lo, std::size_t hi) {
    if (a.size() < lo || a.size() > hi)
      throw UsageError("'" + a[0] + "' takes " + std::to_string(lo - 1) + ".." +
                       std::to_string(hi - 1) + " arguments");
  };
  if (!a.empty()) {
    if (a[0] == "synth")
      arity(4, 6);
    else if (a[0] == "prove" || a[0] == "verify")
      arity(3, 3);
    else if (a[0] == "proofs")
      arity(2, 3);
    else
      throw UsageError("unknown command '" + a[0] + "'");
  }
  if (a.size() >= 4 && a[0] == "synth") {
    if (a.size() > 4 && a[4] != "all" && a[4] != "uniform")
      throw UsageError("expected all or uniform, not '" + a[4] + "'");
    return synth(a[1], a[2], static_cast<unsigned>(bench::number_arg(a[3], "T", 1, 1000)),
                 a.size() > 4 && a[4] == "all", 0,
                 a.size() > 5
                     ? static_cast<unsigned>(bench::number_arg(a[5], "TIMEOUT_MS", 1, 100000000))
                     : 600000,
                 a.size() > 4 && a[4] == "uniform");
  }
  if (a.size() >= 3 && a[0] == "prove") return prove(a[1], a[2], 0);
  if (a.size() >= 3 && a[0] == "verify") return verify_smt(a[1], a[2], 0);
  if (a.size() >= 2 && a[0] == "proofs") {
    ProveCommandOptions po;
    po.paths = {a[1]};
    if (a.size() > 2) po.emit_dir = a[2];
    auto t0 = Clock::now();
    int rc = run_prove_command(po, std::cout, std::cerr);
    fmt::print("collv prove {}: exit {} in {:.1f} s\n", a[1], rc, since(t0));
    return rc;
  }
  verify_smt("allreduce_star", "star:6", 2.0);
  prove("allreduce_star", "star:6", 2.0);
  prove("allreduce_hypercube_ordered", "hypercube:6", 0);
  prove("scan_hypercube_ordered", "hypercube:6", 0);
  synth("allgather", "star:4", 5, false, 1.0);
  synth("allgather", "star:4", 6, false, 0);
  synth("allgather", "hypercube:3", 2, false, 0);
  synth("allgather", "hypercube:3", 3, false, 0);
  synth("allgather", "ring:8", 3, false, 0);
  synth("allgather", "ring:8", 4, false, 0);
  synth("allreduce", "star:3", 2, false, 0);
  synth("allreduce", "star:3", 3, false, 0);
  synth("allreduce", "hypercube:3", 3, false, 0);
  return 0;
}
