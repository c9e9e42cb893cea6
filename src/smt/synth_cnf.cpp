// The CNF encodings of synthesis, solved by CaDiCaL (see synth_cnf.hpp and docs/smt.md): the
// DIMACS file, one solve or cube and conquer, the DRAT proof. The clauses come from the Encoder
// (synth_cnf_encoder.hpp); the automorphism search is in synth_automorphism.cpp, the proof
// checker in drup_check.cpp.
#include "smt/synth_cnf.hpp"

#include <algorithm>
#include <cadical.hpp>
#include <chrono>
#include <climits>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "smt/synth_cnf_encoder.hpp"
#include "util/read_file.hpp"

namespace collv::sat {

namespace {

using namespace cnf_detail;

using Clock = std::chrono::steady_clock;

struct Deadline : CaDiCaL::Terminator {
  Clock::time_point end;
  bool terminate() override { return Clock::now() >= end; }
};

void write_dimacs(const std::string& path, const Cnf& f, const SynthProblem& p) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + path);
  std::string s;
  s += "c collv synth, CNF for CaDiCaL (docs/smt.md, the SAT backend)\n";
  std::istringstream cm(p.comment);
  for (std::string line; std::getline(cm, line);) s += "c " + line + "\n";
  s += "c re-check: cadical FILE.cnf (exit 20 = unsat); drat-trim FILE.cnf FILE.drat\n";
  const auto& names = f.names();
  for (std::size_t v = 1; v < names.size(); ++v)
    if (!names[v].empty()) s += fmt::format("c var {} {}\n", v, names[v]);
  s += fmt::format("p cnf {} {}\n", f.vars(), f.clauses());
  out << s;
  s.clear();
  for (int lit : f.buffer()) {
    fmt::format_to(std::back_inserter(s), "{}", lit);
    s += lit == 0 ? '\n' : ' ';
    if (s.size() > (1u << 20)) {
      out << s;
      s.clear();
    }
  }
  out << s;
  if (!out) throw std::runtime_error("cannot write " + path);
}

// Cube and conquer in one solver: lookahead cubes, then the cubes under assumptions (clauses
// learned on one cube help the next), in passes: every open cube gets a time slice (10 s, then
// four times more each pass) so that one hard cube does not hide how the others fare. 10 sat (the
// model is the solver's), 20 every cube refuted (or lookahead refuted the formula), 0 the time
// limit came first.
int solve_by_cubes(CaDiCaL::Solver& s, const CnfOptions& o, CnfResult& res, Deadline& d,
                   const std::string& icnf_file) {
  auto t0 = Clock::now();
  const auto end = d.end;
  auto cw = s.generate_cubes(static_cast<int>(o.cube_depth));
  if (cw.status == 20) return 20;
  if (cw.status == 10) return s.solve();  // lookahead found a model; solve() makes it the state
  res.cubes = cw.cubes.size();
  if (!icnf_file.empty()) {
    // The cubes as an incremental CNF's "a" lines, to append to the written CNF (cadical decides
    // such a file cube by cube), and to re-check the split: the CNF with every cube negated
    // must be unsat, each cube added as units must be unsat for an unsat answer.
    std::ofstream out(icnf_file);
    for (const auto& c : cw.cubes) {
      out << 'a';
      for (int lit : c) out << ' ' << lit;
      out << " 0\n";
    }
    if (!out) throw std::runtime_error("cannot write " + icnf_file);
  }
  auto secs = [](Clock::time_point a) {
    return std::chrono::duration<double>(Clock::now() - a).count();
  };
  if (o.progress)
    o.progress(fmt::format("lookahead: {} cubes of depth up to {} ({:.1f} s)", cw.cubes.size(),
                           o.cube_depth, secs(t0)));
  if (cw.cubes.empty()) return s.solve();
  std::vector<std::size_t> open(cw.cubes.size());
  for (std::size_t i = 0; i < open.size(); ++i) open[i] = i;
  auto slice = std::chrono::milliseconds(10'000);
  for (unsigned pass = 1; !open.empty();
       ++pass, slice = std::min(slice * 4, std::chrono::milliseconds(1'000'000'000))) {
    std::vector<std::size_t> still;
    for (std::size_t i : open) {
      if (Clock::now() >= end) {
        still.push_back(i);
        continue;
      }
      auto tc = Clock::now();
      d.end = std::min(end, tc + slice);
      for (int lit : cw.cubes[i]) s.assume(lit);
      int r = s.solve();
      d.end = end;
      if (o.progress)
        o.progress(fmt::format("cube {}/{}: {} ({:.1f} s, pass {})", i + 1, cw.cubes.size(),
                               r == 10   ? "sat"
                               : r == 20 ? "unsat"
                                         : "open",
                               secs(tc), pass));
      if (r == 10) return 10;
      if (r == 20)
        ++res.cubes_refuted;
      else
        still.push_back(i);
    }
    open.swap(still);
    if (!open.empty() && Clock::now() >= end) {
      res.reason = fmt::format("timeout ({} ms) after refuting {} of {} cubes", o.timeout_ms,
                               res.cubes_refuted, res.cubes);
      return 0;
    }
  }
  return 20;
}

}  // namespace

CnfResult solve_synth_cnf(const SynthProblem& p, const CnfOptions& o) {
  CnfResult res;
  auto t0 = Clock::now();
  Cnf f(o.max_literals);
  // A DRAT proof rests on the written CNF alone: the CNF keeps the variables collv's distances
  // would prune, the solver gets the pruning as unit clauses, and the proof derives each of them
  // first (docs/smt.md, "Proofs of unsat answers").
  const bool drat = !o.proof_dir.empty() && o.cube_depth == 0;
  Encoder e(p, f, drat);
  try {
    e.build(o.symmetry_breaking, res);
  } catch (const CapExceeded&) {
    res.answer = smt::Answer::Unknown;
    res.reason = fmt::format("refused: the CNF exceeds {} literals (the size cap, --max-terms)",
                             o.max_literals);
    res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return res;
  }
  res.vars = static_cast<std::uint64_t>(f.vars());
  res.clauses = f.clauses();
  std::string proof;
  if (!o.proof_dir.empty()) {
    make_dir_checked(o.proof_dir, "--proof");
    res.cnf_file = (std::filesystem::path(o.proof_dir) / (p.name + ".cnf")).string();
    if (o.cube_depth == 0)
      proof = (std::filesystem::path(o.proof_dir) / (p.name + ".drat")).string();
    write_dimacs(res.cnf_file, f, p);
  }
  {
    CaDiCaL::Solver s;
    s.set("quiet", 1);
    if (!o.configuration.empty() && !s.configure(o.configuration.c_str()))
      throw std::runtime_error("CaDiCaL: unknown configuration " + o.configuration);
    if (!proof.empty()) {
      s.set("binary", 0);
      if (!s.trace_proof((proof + ".solver").c_str()))
        throw std::runtime_error("cannot write " + proof);
    }
    s.reserve(f.vars());
    for (int lit : f.buffer()) s.add(lit);
    for (int lit : e.lemmas()) {
      s.add(lit);
      s.add(0);
    }
    Deadline d;
    d.end = Clock::now() + std::chrono::milliseconds(o.timeout_ms);
    s.connect_terminator(&d);
    auto ts = Clock::now();
    int r = o.cube_depth == 0
                ? s.solve()
                : solve_by_cubes(s, o, res, d,
                                 res.cnf_file.empty() ? std::string() : res.cnf_file + ".cubes");
    res.solve_seconds = std::chrono::duration<double>(Clock::now() - ts).count();
    s.disconnect_terminator();
    if (r == 10) {
      res.answer = smt::Answer::Sat;
      if (e.decodes()) {
        res.values = e.decode([&](int lit) { return s.val(lit) > 0; });
      } else {
        const auto& names = f.names();
        for (std::size_t v = 1; v < names.size(); ++v)
          if (!names[v].empty())
            res.values[names[v]] = s.val(static_cast<int>(v)) > 0 ? "true" : "false";
      }
    } else if (r == 20) {
      res.answer = smt::Answer::Unsat;
    } else {
      res.answer = smt::Answer::Unknown;
      if (res.reason.empty()) res.reason = fmt::format("timeout ({} ms)", o.timeout_ms);
    }
    if (!proof.empty()) s.close_proof_trace();
  }
  if (!proof.empty()) {
    if (res.answer == smt::Answer::Unsat) {
      // The pruning lemmas, then CaDiCaL's proof of the CNF with them.
      std::ofstream out(proof, std::ios::binary);
      std::string head;
      for (int lit : e.lemmas()) head += fmt::format("{} 0\n", lit);
      out << head;
      std::ifstream in(proof + ".solver", std::ios::binary);
      if (in.peek() != std::char_traits<char>::eof()) out << in.rdbuf();
      if (!out) throw std::runtime_error("cannot write " + proof);
      res.proof_file = proof;
    }
    std::filesystem::remove(proof + ".solver");
  }
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

}  // namespace collv::sat
