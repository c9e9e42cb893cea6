// The SAT backend of synthesis (--backend cadical): it must give Z3's answers on every small case
// the Z3 tests use, its schedules must pass the executor's checkers, its unsat answers come with
// a DIMACS CNF and a DRAT proof that are re-checked outside CaDiCaL's library (the cadical
// executable, and collv's own RUP checker), and symmetry breaking is used only where the
// automorphisms it relies on were found.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/smt_cmds.hpp"
#include "check/checks.hpp"
#include "smt/synth.hpp"
#include "smt/synth_cnf.hpp"
#include "synth_util.hpp"
#include "topology/topology.hpp"

using namespace collv;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("collv_test_sat_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

struct Case {
  const char* collective;
  const char* topology;
  unsigned steps;
  PortModel port = PortModel::Single;
  bool uniform = false;
  bool least = false;
};

SynthOptions options(const Case& c, const std::string& backend) {
  SynthOptions o;
  o.collective = c.collective;
  o.topology = c.topology;
  o.steps = c.steps;
  o.port = c.port;
  o.uniform = c.uniform;
  o.least = c.least;
  o.backend = backend;
  o.timeout_ms = 120000;
  return o;
}

// Both backends, the same answer; sat answers are schedules that pass the executor's checkers.
smt::Answer agree(const Case& c) {
  INFO(c.collective << " " << c.topology << " T=" << c.steps
                    << (c.port == PortModel::All ? " all-port" : "")
                    << (c.uniform ? " uniform" : "") << (c.least ? " least" : ""));
  SynthResult z = synthesize(options(c, "z3"));
  SynthResult s = synthesize(options(c, "cadical"));
  REQUIRE(z.answer != smt::Answer::Unknown);
  REQUIRE(s.answer == z.answer);
  CHECK(s.steps == z.steps);
  if (s.answer == smt::Answer::Sat) {
    REQUIRE(s.trace);
    CHECK(s.trace->steps <= s.steps);
    test::require_valid(*s.trace);
  }
  // Without symmetry breaking, the same answer.
  SynthOptions o = options(c, "cadical");
  o.symmetry_breaking = false;
  CHECK(synthesize(o).answer == z.answer);
  return s.answer;
}

}  // namespace

TEST_CASE("sat backend: the same answers as Z3 on the Z3 tests' small cases", "[sat][smt]") {
  using P = PortModel;
  const Case cases[] = {
      // gossip, single-port: unsat and sat
      {"allgather", "hypercube:3", 2},
      {"allgather", "hypercube:3", 3},
      {"allgather", "ring:8", 3},
      {"allgather", "ring:8", 4},
      {"gossip", "ring:8", 8, P::Single, false, true},
      {"allgather", "star:4", 5},  // the star paper's lower bound on S_4
      // gossip, all-port
      {"allgather", "star:4", 2, P::All},
      {"allgather", "star:4", 4, P::All},
      // broadcast, both port models
      {"broadcast", "hypercube:3", 2},
      {"broadcast", "hypercube:3", 3},
      {"broadcast", "hypercube:3", 2, P::All},
      {"broadcast", "hypercube:3", 3, P::All},
      {"broadcast", "star:4", 8, P::Single, false, true},
      // one-word all-reduce, both port models
      {"allreduce", "star:3", 2},
      {"allreduce", "star:3", 3},
      {"allreduce", "hypercube:3", 3},
      {"allreduce", "star:3", 2, P::All},
      {"allreduce", "star:3", 3, P::All},
      {"allreduce", "ring:4", 1, P::All},
      {"allreduce", "ring:4", 2, P::All},
      // uniform (symmetric) encodings
      {"allreduce", "star:4", 5, P::Single, true},
      {"allreduce", "star:4", 6, P::Single, true},
      {"allgather", "star:5", 8, P::Single, true},
      {"allgather", "star:5", 9, P::Single, true},
      {"broadcast", "hypercube:3", 2, P::Single, true},
      {"broadcast", "hypercube:3", 3, P::Single, true},
  };
  int sat = 0, unsat = 0;
  for (const Case& c : cases) (agree(c) == smt::Answer::Sat ? sat : unsat)++;
  CHECK(sat == 14);
  CHECK(unsat == 12);
}

TEST_CASE("sat backend: least gossip time agrees with Z3 on tiny graphs", "[sat][smt]") {
  for (const char* spec : {"ring:4", "ring:5", "line:4", "complete:4", "star:3"})
    for (PortModel port : {PortModel::Single, PortModel::All})
      agree({"allgather", spec, 8, port, false, true});
}

TEST_CASE("sat backend: star:4 answers of docs/smt.md (gossip 6, all-reduce 5/6)",
          "[sat][smt][slow]") {
  CHECK(agree({"allgather", "star:4", 6}) == smt::Answer::Sat);
  CHECK(agree({"allreduce", "star:4", 5}) == smt::Answer::Unsat);
  CHECK(agree({"allreduce", "star:4", 6}) == smt::Answer::Sat);
  CHECK(agree({"allgather", "star:5", 5, PortModel::All}) == smt::Answer::Unsat);
  CHECK(agree({"allgather", "star:5", 6, PortModel::All}) == smt::Answer::Sat);
}

TEST_CASE("sat backend: star:5 gossip in 7 steps is unsat (lower bound 8)", "[sat]") {
  // About 2 s with CaDiCaL (Z3 takes 18-35 s: bench_synth_sat compares them).
  SynthOptions o = options({"allgather", "star:5", 7}, "cadical");
  auto r = synthesize(o);
  CHECK(r.answer == smt::Answer::Unsat);
}

TEST_CASE("sat backend: an unsat answer's CNF and DRAT proof are re-checked outside the library",
          "[sat]") {
  fs::path d = temp_dir("proof");
  SynthOptions o = options({"allgather", "star:4", 5}, "cadical");
  o.proof_dir = d.string();
  auto r = synthesize(o);
  REQUIRE(r.answer == smt::Answer::Unsat);
  const auto& a = r.attempts.back();
  REQUIRE(fs::exists(a.file));
  REQUIRE(fs::exists(a.proof));
  CHECK(fs::path(a.file).parent_path() == d);
  CHECK(fs::path(a.proof).stem() == fs::path(a.file).stem());

  // collv's RUP checker accepts the proof ...
  auto pc = sat::check_drup_proof(a.file, a.proof);
  INFO(pc.message);
  CHECK(pc.ok);
  CHECK(pc.lemmas > 0);
  // ... and the cadical executable decides the written CNF the same way (exit 20 = unsat) and
  // checks its own proof of it.
  CHECK(test::shell("cadical -q --no-binary --checkproof " + a.file + " " +
                    (d / "own.drat").string() + " > /dev/null") == 20);
  CHECK(sat::check_drup_proof(a.file, (d / "own.drat").string()).ok);

  // The checker rejects proofs that do not prove the CNF unsat.
  std::ofstream(d / "empty.drat") << "0\n";
  auto bad = sat::check_drup_proof(a.file, (d / "empty.drat").string());
  CHECK_FALSE(bad.ok);
  CHECK(bad.message.find("not implied") != std::string::npos);
  {  // the first lemma only: no empty clause derived
    std::ifstream in(a.proof);
    std::string line;
    std::ofstream out(d / "cut.drat");
    while (std::getline(in, line))
      if (!line.empty() && line[0] != 'd') {
        out << line << "\n";
        break;
      }
  }
  auto cut = sat::check_drup_proof(a.file, (d / "cut.drat").string());
  CHECK_FALSE(cut.ok);
  std::ofstream(d / "bogus.drat") << "1 0\n-1 0\n0\n";  // "1" is not implied (a guess)
  CHECK_FALSE(sat::check_drup_proof(a.file, (d / "bogus.drat").string()).ok);

  // A sat question: the CNF is written, no proof is left, and cadical says sat (exit 10); the
  // unsat question's proof does not fit it.
  o.steps = 6;
  o.topology = "ring:6";
  o.steps = 3;
  auto s = synthesize(o);
  REQUIRE(s.answer == smt::Answer::Sat);
  const auto& sa = s.attempts.back();
  REQUIRE(fs::exists(sa.file));
  CHECK(sa.proof.empty());
  CHECK_FALSE(fs::exists(d / "synth-allgather-ring_6-single-T3.drat"));
  CHECK(test::shell("cadical -q " + sa.file + " > /dev/null") == 10);
  CHECK_FALSE(sat::check_drup_proof(sa.file, a.proof).ok);
}

TEST_CASE("sat backend: unsat proofs for each encoding pass the RUP checker", "[sat]") {
  fs::path d = temp_dir("encodings");
  const Case cases[] = {
      {"broadcast", "hypercube:3", 2},
      {"broadcast", "hypercube:3", 2, PortModel::All},
      {"allgather", "ring:8", 3},
      {"allgather", "star:4", 2, PortModel::All},
      {"allreduce", "star:3", 2},
      {"allreduce", "star:3", 2, PortModel::All},
      {"allreduce", "star:4", 5, PortModel::Single, true},
      {"allgather", "star:5", 8, PortModel::Single, true},
  };
  for (const Case& c : cases) {
    INFO(c.collective << " " << c.topology << " T=" << c.steps);
    SynthOptions o = options(c, "cadical");
    o.proof_dir = d.string();
    auto r = synthesize(o);
    REQUIRE(r.answer == smt::Answer::Unsat);
    auto pc = sat::check_drup_proof(r.attempts.back().file, r.attempts.back().proof);
    INFO(pc.message);
    CHECK(pc.ok);
    CHECK(test::shell("cadical -q " + r.attempts.back().file + " > /dev/null") == 20);
  }
}

TEST_CASE("sat backend: symmetry breaking only where the automorphisms are found", "[sat]") {
  auto graph = [](const char* spec) {
    Topology t = Topology::parse(spec);
    std::vector<std::vector<std::uint32_t>> nbr(t.num_processors());
    for (NodeId v = 0; v < t.num_processors(); ++v)
      for (const Link& l : t.links(v)) nbr[v].push_back(l.to);
    return nbr;
  };
  for (const char* spec : {"star:3", "star:4", "star:5", "hypercube:3", "hypercube:4", "ring:5",
                           "ring:8", "complete:4", "torus:4x4"}) {
    INFO(spec);
    std::string why;
    CHECK(sat::arcs_in_one_orbit(graph(spec), false, 0, &why));
    CHECK(sat::arcs_in_one_orbit(graph(spec), true, 3, &why));
  }
  // Not arc-transitive: a path (end and middle nodes), a mesh, a non-square torus whose
  // two link directions differ (4-cycles and 6-cycles).
  for (const char* spec : {"line:4", "mesh:3x3", "torus:3x4"}) {
    INFO(spec);
    std::string why;
    CHECK_FALSE(sat::arcs_in_one_orbit(graph(spec), false, 0, &why));
    CHECK(why.find("no automorphism") != std::string::npos);
  }
  // Broadcast from the middle of line:5 (node 2): its two arcs are swapped by the reflection;
  // from node 1 they are not (one leads to an end).
  CHECK(sat::arcs_in_one_orbit(graph("line:5"), true, 2));
  CHECK_FALSE(sat::arcs_in_one_orbit(graph("line:5"), true, 1));
}

TEST_CASE("sat backend: caps, timeouts, usage errors and the command's exit codes", "[sat]") {
  SynthOptions o = options({"allgather", "star:5", 7}, "cadical");
  o.max_terms = 1000;
  auto r = synthesize(o);
  CHECK(r.answer == smt::Answer::Unknown);
  CHECK(r.attempts.back().reason.find("size cap") != std::string::npos);
  o.max_terms = 30'000'000;
  o.timeout_ms = 1;
  CHECK(synthesize(o).answer == smt::Answer::Unknown);
  o.backend = "minisat";
  CHECK_THROWS_AS(synthesize(o), UsageError);

  SynthCommandOptions c;
  c.quiet = true;
  c.synth = options({"allgather", "hypercube:3", 3}, "cadical");
  std::ostringstream out, err;
  CHECK(run_synth_command(c, out, err) == 0);
  c.synth.steps = 2;
  CHECK(run_synth_command(c, out, err) == 1);
  CHECK(out.str().find("(CaDiCaL: unsat); lower bound: 3 steps") != std::string::npos);
  c.synth.backend = "nonsense";
  CHECK(run_synth_command(c, out, err) == 2);
}

TEST_CASE("sat backend: a DRAT proof rests on the CNF, not on collv's distances", "[sat]") {
  // Broadcast from 0 on the ring 0-1-2-3-0, single-port, 2 steps: 0 -> 1, then 0 -> 3 and
  // 1 -> 2. With a wrong distance (2 hops claimed as 3) the pruning says node 2 cannot hold the
  // root's chunk after step 2, and the solver, given the pruning, answers unsat; the written CNF
  // keeps that variable, so the proof's first lemmas (the pruning) must follow from the CNF by
  // unit propagation, and the wrong one does not: the checker rejects the proof.
  fs::path d = temp_dir("distance");
  sat::SynthProblem p;
  p.kind = sat::SynthKind::Broadcast;
  p.steps = 2;
  p.p = 4;
  p.root = 0;
  for (std::uint32_t u = 0; u < 4; ++u) {
    p.nbr.push_back({(u + 3) % 4, (u + 1) % 4});
    p.link_number.push_back({0, 1});
    p.dist.push_back({});
    for (std::uint32_t v = 0; v < 4; ++v)
      p.dist[u].push_back(std::min((v - u + 4) % 4, (u - v + 4) % 4));
  }
  sat::CnfOptions o;
  o.proof_dir = d.string();
  o.symmetry_breaking = false;
  p.name = "right";
  CHECK(sat::solve_synth_cnf(p, o).answer == smt::Answer::Sat);
  p.dist[0][2] = 3;
  p.name = "wrong";
  auto r = sat::solve_synth_cnf(p, o);
  REQUIRE(r.answer == smt::Answer::Unsat);
  REQUIRE(fs::exists(r.proof_file));
  auto pc = sat::check_drup_proof(r.cnf_file, r.proof_file);
  CHECK_FALSE(pc.ok);
  CHECK(pc.message.find("not implied") != std::string::npos);
  // The CNF alone is satisfiable: the wrong answer came from the distance, not the constraints.
  CHECK(test::shell("cadical -q " + r.cnf_file + " > /dev/null") == 10);
}
