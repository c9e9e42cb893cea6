// collv prove --every-p MODEL.coll [PROOF] [--model OTHER.coll] (see every_p_cmd.hpp).
#include "app/every_p_cmd.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <ostream>
#include <tuple>

#include <fmt/format.h>

#include "app/commands.hpp"
#include "check/checks.hpp"
#include "exec/executor.hpp"
#include "smt/portfolio.hpp"
#include "smt/solver.hpp"
#include "util/exit_codes.hpp"
#include "util/read_file.hpp"

namespace collv {

namespace {

namespace fs = std::filesystem;

long long value_of(const smt::Result& r, const std::string& k) {
  auto f = r.values.find(k);
  if (f == r.values.end()) return -1;
  std::string v = f->second;
  bool neg = v.rfind("(- ", 0) == 0;
  std::string d;
  for (char c : v)
    if (c >= '0' && c <= '9') d += c;
  if (d.empty() || d.size() > 18) return -1;
  return neg ? -std::stoll(d) : std::stoll(d);
}

// The smallest p (then count, then root: 0 for an unrooted collective) for which the obligation's
// negation is still satisfiable: a binary search with extra bounds asserted on a fresh solver
// each time.
std::tuple<long long, long long, long long> smallest(const EveryPObligation& ob, long long p0,
                                                     long long c0, const ProveCommandOptions& o) {
  auto sat_with = [&](const std::string& extra) {
    smt::Limits lim{o.timeout_ms, o.max_terms};
    lim.rlimit = o.rlimit;
    smt::Solver s(lim);
    s.reserve(ob.script.size() / 8 + 16);
    s.add(ob.script + extra);
    return s.check({"a"}).answer == smt::Answer::Sat;
  };
  long long lo = 2, hi = p0;
  while (lo < hi) {
    long long mid = lo + (hi - lo) / 2;
    if (sat_with(fmt::format("(assert (<= p {}))\n", mid)))
      hi = mid;
    else
      lo = mid + 1;
  }
  long long p = hi;
  long long clo = 0, chi = c0;
  while (clo < chi) {
    long long mid = clo + (chi - clo) / 2;
    if (sat_with(fmt::format("(assert (= p {}))(assert (<= count {}))\n", p, mid)))
      chi = mid;
    else
      clo = mid + 1;
  }
  long long rlo = 0, rhi = p - 1;
  while (rlo < rhi) {
    long long mid = rlo + (rhi - rlo) / 2;
    if (sat_with(fmt::format("(assert (= p {}))(assert (= count {}))(assert (<= root {}))\n", p,
                             chi, mid)))
      rhi = mid;
    else
      rlo = mid + 1;
  }
  return {p, chi, rhi};
}

// A check's message, cut to a line (a postcondition message lists whole buffers).
std::string clipped(const std::string& s) {
  return s.size() <= 240 ? s : s.substr(0, 240) + " ...";
}

}  // namespace

EveryPOutcome prove_every_p(const Model& m, const EveryPProof& pf, const ProveCommandOptions& o) {
  EveryPOutcome res;
  auto t0 = std::chrono::steady_clock::now();
  EveryPAnalysis a = analyze_every_p(m, pf);
  if (!a.refusal.empty()) {
    res.exit = kExitInconclusive;
    res.answer = "not proved";
    res.note = fmt::format("outside the fragment at {}: {}", a.refusal_loc.str(), a.refusal);
    return res;
  }
  std::string first_fail, first_unknown;
  const EveryPObligation* failed = nullptr;
  smt::Result failed_r;
  std::size_t proved = 0, by_later = 0, unconfirmed = 0;
  std::string first_unconfirmed;
  for (const auto& ob : a.obligations) {
    // The portfolio (src/smt/portfolio.hpp): the API way first, then the z3 executable on the
    // certificate's text, with other options; the certificate is the file of the way that
    // answered, so that z3 alone re-checks it the same way.
    smt::Limits lim{o.timeout_ms, o.max_terms};
    lim.rlimit = o.rlimit;
    // With certificates written, a long API answer is also asked of the z3 executable, so that
    // the certificate is one z3 FILE answers (smt::kConfirmAbove).
    smt::Answered an =
        smt::solve_portfolio(ob.script, {"a"}, {"p", "count", "root", "r"}, lim,
                             "every p: unsat = the obligation holds for every p, count and rank",
                             smt::default_ways(), o.emit_dir.empty() ? 0 : smt::kConfirmAbove);
    if (!an.way.empty() && an.way != smt::default_ways().front().name) ++by_later;
    if (an.unconfirmed) {
      ++unconfirmed;
      if (first_unconfirmed.empty()) first_unconfirmed = ob.name;
    }
    const smt::Result& r = an.result;
    if (!o.emit_dir.empty()) {
      fs::create_directories(o.emit_dir);
      write_file_checked(
          (fs::path(o.emit_dir) / (m.header.name + "-" + ob.name + ".smt2")).string(),
          an.certificate);
    }
    std::string st = r.answer == smt::Answer::Unsat ? "ok"
                     : r.answer == smt::Answer::Sat ? "FAILED"
                                                    : "inconclusive";
    // A way after the first: which one, and what the ones before it said.
    std::string by;
    if (!an.way.empty() && an.tries.size() > 1) {
      by = " [answered by " + an.way + "; before it:";
      for (std::size_t i = 0; i + 1 < an.tries.size(); ++i) by += " " + an.tries[i] + ";";
      by.back() = ']';
    }
    res.lines.push_back(
        fmt::format("{:<12} {}  {:.3f} s -- {}{}{}", st, ob.name, an.seconds, ob.description,
                    r.answer == smt::Answer::Unknown ? " (" + r.reason + ")" : "", by));
    if (r.answer == smt::Answer::Unsat) {
      ++proved;
    } else if (r.answer == smt::Answer::Sat) {
      if (!failed) {
        failed = &ob;
        failed_r = r;
      }
    } else if (first_unknown.empty()) {
      first_unknown = ob.name + ": " + r.reason;
    }
  }
  res.obligations = a.obligations.size();
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (failed) {
    res.failed_obligation = failed->name;
    long long p0 = value_of(failed_r, "p"), c0 = value_of(failed_r, "count");
    const bool rooted = collective_is_rooted(m.header.collective);
    auto [p, c, root_found] = p0 >= 2 && c0 >= 0
                                  ? smallest(*failed, p0, c0, o)
                                  : std::tuple<long long, long long, long long>{p0, c0, 0};
    const long long root = root_found;  // a lambda below takes it (clang 14 captures no binding)
    res.p = p;
    res.count = c;
    if (rooted) res.root = root;
    // A rooted collective's counterexample names its root too.
    const std::string at_root = rooted ? fmt::format(", root = {}", root) : "";
    // The executor at that size decides whether the program is wrong there or only the proof.
    // Where it passes (an invariant can fail at a size where the program does not go wrong yet,
    // e.g. a value no later round reads), the next few process counts are run too; exit 1 only
    // on a size where the executor itself fails.
    std::string exec_note;
    bool exec_fails = false;
    const auto& tops = m.header.topologies;
    std::string fam = std::find(tops.begin(), tops.end(), "complete") != tops.end() ? "complete"
                      : std::find(tops.begin(), tops.end(), "ring") != tops.end()   ? "ring"
                                                                                    : "";
    auto run_at = [&](long long P, long long C) {
      Topology topo = Topology::parse(fmt::format("{}:{}", fam, P));
      RunOptions ro;
      ro.count = static_cast<std::uint32_t>(C);
      // Operand order is judged in the ordered domain, for a model that does not declare a
      // commutative operator.
      if (m.header.op_class == OperatorClass::Associative) ro.domain = DomainKind::Ordered;
      ro.root = rooted && root >= 0 && root < P ? static_cast<std::uint32_t>(root) : 0;
      Trace t = run_model(m, topo, ro);
      if (t.failure.kind != RunFailure::Kind::None) {
        exec_fails = true;
        exec_note = fmt::format("executor on {}:{} count {}{}: {}", fam, P, C, at_root,
                                clipped(t.failure.message));
        return;
      }
      for (const auto& cr : check_trace(t, CheckOptions{})) {
        if (cr.verdict != Verdict::Fail) continue;
        exec_fails = true;
        exec_note =
            fmt::format("executor on {}:{} count {}{}: {} fails: {}", fam, P, C, at_root, cr.name,
                        clipped(cr.violations.empty() ? cr.note : cr.violations[0].message));
        return;
      }
    };
    if (fam.empty() || p < 2 || p > 1024 || c < 0 || c > 4096) {
      exec_note = fmt::format(
          "the executor was not run at p = {}, count = {} (outside "
          "p <= 1024, count <= 4096 or no complete/ring topology)",
          p, c);
    } else {
      long long last = std::min<long long>(p + 6, 1024);
      try {
        for (long long P = p; P <= last && !exec_fails; ++P) run_at(P, c);
        if (!exec_fails)
          exec_note =
              fmt::format("the executor passes on {}:{}..{} count {}{}", fam, p, last, c, at_root);
      } catch (const std::exception& e) {
        exec_note = fmt::format("the executor did not run at p = {}: {}", p, e.what());
      }
    }
    if (exec_fails) {
      res.exit = kExitViolation;
      res.answer = "disproved";
      res.note = fmt::format(
          "{} is violated from p = {}, count = {}{} (the smallest found); "
          "{}",
          failed->name, p, c, at_root, exec_note);
    } else {
      res.exit = kExitInconclusive;
      res.answer = "not proved";
      res.note = fmt::format(
          "{} is violated at p = {}, count = {}{} ({}): the program or the "
          "proof's invariants are wrong there",
          failed->name, p, c, at_root, exec_note);
    }
    return res;
  }
  if (!first_unknown.empty()) {
    res.exit = kExitInconclusive;
    res.answer = "not proved";
    res.note = first_unknown;
    return res;
  }
  res.exit = kExitOk;
  res.answer = "proved for every p";
  std::string as;
  for (const auto& x : a.assumptions) as += (as.empty() ? "" : ", ") + x;
  res.note = fmt::format("{} obligations unsat ({} loop(s), {} path(s)); assumed: {}", proved,
                         a.loops, a.paths + 1, as);
  if (by_later)
    res.note += fmt::format("; {} certificate(s) from the z3 executable's ways", by_later);
  if (unconfirmed)
    res.note += fmt::format(
        "; {} certificate(s) answered by the API way alone, which z3 FILE may not replay (the "
        "first: {})",
        unconfirmed, first_unconfirmed);
  return res;
}

std::string every_p_status(const std::string& model_file, const std::string& models_dir) {
  std::error_code ec;
  fs::path dir = fs::path(models_dir).parent_path() / "proofs" / "every-p";
  if (!fs::is_directory(dir, ec)) return "";
  fs::path want = fs::weakly_canonical(model_file, ec);
  std::vector<fs::path> proofs;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".proof") proofs.push_back(e.path());
  std::sort(proofs.begin(), proofs.end());
  for (const auto& pp : proofs) {
    try {
      EveryPProof pf = parse_every_p_proof(pp.string());
      if (pf.expect != "proved" || fs::path(pf.model).extension() != ".coll") continue;
      if (fs::weakly_canonical(pp.parent_path() / pf.model, ec) != want) continue;
      ProveCommandOptions o;
      EveryPOutcome r = prove_every_p(parse_model_file(model_file), pf, o);
      if (r.exit == kExitOk)
        return fmt::format(
            "proved for every p and count ({}, {} obligations; collv prove "
            "--every-p)",
            pp.string(), r.obligations);
      return fmt::format("{} ({}): {}", r.answer, pp.string(), r.note);
    } catch (const std::exception& e) {
      return fmt::format("not proved ({}): {}", pp.string(), e.what());
    }
  }
  return "";
}

int run_every_p_command(const ProveCommandOptions& o, std::ostream& out, std::ostream& err) {
  std::string model_arg, proof_arg;
  for (const auto& x : o.paths) {
    if (fs::path(x).extension() == ".proof") {
      if (!proof_arg.empty()) {
        err << "collv: error: --every-p takes one proof file\n";
        return kExitUsage;
      }
      proof_arg = x;
    } else {
      if (!model_arg.empty()) {
        err << "collv: error: --every-p takes one model (MODEL.coll or a name)\n";
        return kExitUsage;
      }
      model_arg = x;
    }
  }
  try {
    EveryPProof pf;
    if (!proof_arg.empty()) pf = parse_every_p_proof(proof_arg);
    std::string models = o.models_dir.empty() ? default_models_dir() : o.models_dir;
    std::string marg = !o.every_p_model.empty() ? o.every_p_model : model_arg;
    if (marg.empty() && !pf.model.empty()) {
      marg = pf.model;
      if (fs::path(marg).extension() == ".coll" && fs::path(marg).is_relative())
        marg = (fs::path(pf.path).parent_path() / marg).string();
    }
    if (marg.empty()) {
      err << "collv: error: --every-p needs a model (MODEL.coll) or a proof file naming one\n";
      return kExitUsage;
    }
    Model m = parse_model_file(resolve_model_path(marg, models));
    // A proof is tied to its model by name; --model applies it to another file on purpose.
    if (!proof_arg.empty() && o.every_p_model.empty()) {
      std::string want = fs::path(pf.model).stem().string();
      if (want != m.header.name) {
        err << fmt::format(
            "collv: error: {} is written for model '{}', not '{}' (use --model to apply it to "
            "another file)\n",
            proof_arg, want, m.header.name);
        return kExitUsage;
      }
    }
    EveryPOutcome r = prove_every_p(m, pf, o);
    if (!o.quiet)
      for (const auto& l : r.lines) out << l << "\n";
    out << fmt::format("{}: {} in {:.3f} s -- {}\n", m.header.name, r.answer, r.seconds, r.note);
    return r.exit;
  } catch (const LimitError& e) {
    err << "collv: error: " << e.what() << "\n";
    return kExitInconclusive;
  } catch (const std::exception& e) {
    err << "collv: error: " << e.what() << "\n";
    return kExitUsage;
  }
}

}  // namespace collv
