// Invariant schedules (synth --invariant, the SAT backend) and the compact single-port all-reduce
// encoding: a schedule found under a group really is invariant under it and passes the executor's
// checkers; invariance under the whole group of left multiplications gives the same answers as
// --uniform; an unsat answer under a group is reported as no lower bound; bad groups are refused.
// Also the result docs/smt.md records: a one-word all-reduce on star:5 in 9 steps (the paper's
// scheme takes 10), invariant under A_5.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <cstdlib>
#include <sstream>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "check/checks.hpp"
#include "cli.hpp"
#include "smt/synth.hpp"
#include "smt/synth_cnf.hpp"
#include "synth_util.hpp"
#include "topology/topology.hpp"
#include "util/error.hpp"

using namespace collv;
namespace fs = std::filesystem;

namespace {

SynthOptions cadical(const std::string& coll, const std::string& topo, unsigned T,
                     const std::string& invariant) {
  SynthOptions o;
  o.collective = coll;
  o.topology = topo;
  o.steps = T;
  o.backend = "cadical";
  o.invariant = invariant;
  o.timeout_ms = 120000;
  return o;
}

// Relabelling the symbols of star:n's nodes by h (h[s] for s = 1..n), computed here independently
// of the library's group code.
NodeId relabel(NodeId x, int n, const std::vector<int>& h) {
  auto px = star_unrank(x, n);
  for (int& s : px) s = h[s];
  return static_cast<NodeId>(star_rank(px));
}

// Whether the schedule's transfers (sender, receiver, step) are mapped onto themselves by h.
bool invariant_under(const Trace& t, int n, const std::vector<int>& h) {
  std::set<std::tuple<NodeId, NodeId, unsigned>> sends;
  for (const auto& x : t.transfers) sends.insert({x.src, x.dst, x.step});
  for (const auto& [u, v, s] : sends)
    if (!sends.count({relabel(u, n, h), relabel(v, n, h), s})) return false;
  return true;
}

}  // namespace

TEST_CASE("invariant: schedules found under a group are invariant and pass the checkers",
          "[sat][invariant]") {
  // (1 2)(3 4) on star:4: h[1] = 2, h[2] = 1, h[3] = 4, h[4] = 3.
  std::vector<int> h{0, 2, 1, 4, 3};
  for (const char* coll : {"allgather", "allreduce"}) {
    INFO(coll);
    SynthResult r = synthesize(cadical(coll, "star:4", 6, "(1 2)(3 4)"));
    REQUIRE(r.answer == smt::Answer::Sat);
    CHECK(r.invariant_order == 2);
    REQUIRE(r.trace);
    test::require_valid(*r.trace);
    CHECK(invariant_under(*r.trace, 4, h));
  }
  // The check above can fail: the schedule found without the restriction is not invariant.
  SynthResult plain = synthesize(cadical("allgather", "star:4", 6, ""));
  REQUIRE(plain.answer == smt::Answer::Sat);
  CHECK_FALSE(invariant_under(*plain.trace, 4, h));
  // hypercube: xor masks.
  SynthResult q = synthesize(cadical("allgather", "hypercube:3", 3, "1,2,4"));
  REQUIRE(q.answer == smt::Answer::Sat);
  CHECK(q.invariant_order == 8);
  test::require_valid(*q.trace);
  CHECK(synthesize(cadical("allgather", "hypercube:3", 2, "1")).answer == smt::Answer::Unsat);
}

TEST_CASE("invariant: the whole group of left multiplications gives the uniform answers",
          "[sat][invariant]") {
  // Invariance under every relabelling of the symbols is exactly "every node uses the same link
  // number in a step": the two encodings (orbit variables vs. the Cayley encoding of node 0)
  // must agree.
  for (const char* coll : {"allgather", "allreduce"})
    for (unsigned T = 4; T <= 6; ++T) {
      INFO(coll << " T=" << T);
      SynthOptions u = cadical(coll, "star:4", T, "");
      u.uniform = true;
      SynthResult a = synthesize(u), b = synthesize(cadical(coll, "star:4", T, "(1 2),(1 2 3 4)"));
      REQUIRE(a.answer != smt::Answer::Unknown);
      CHECK(b.answer == a.answer);
      CHECK(b.invariant_order == 24);
      if (b.answer == smt::Answer::Sat) test::require_valid(*b.trace);
    }
}

TEST_CASE("invariant: a one-word all-reduce on star:5 in 9 steps (A_5-invariant)",
          "[sat][invariant]") {
  // The paper's scheme takes n(n-1)/2 = 10 steps on S_5 and no uniform schedule takes 9; one
  // invariant under the even relabellings does.
  SynthResult r = synthesize(cadical("allreduce", "star:5", 9, "(1 2 3),(3 4 5)"));
  REQUIRE(r.answer == smt::Answer::Sat);
  CHECK(r.invariant_order == 60);
  REQUIRE(r.trace);
  CHECK(r.trace->steps == 9);
  test::require_valid(*r.trace);
  std::vector<int> h{0, 2, 3, 1, 4, 5};  // (1 2 3)
  CHECK(invariant_under(*r.trace, 5, h));
  // The whole group (uniform schedules): none in 9 steps.
  CHECK(synthesize(cadical("allreduce", "star:5", 9, "(4 5),(1 2 3 4)")).answer ==
        smt::Answer::Unsat);
}

TEST_CASE("invariant: the general single-port all-reduce on star:5 is built under the cap",
          "[sat][invariant]") {
  // The compact encoding (one send set per node and step) fits the default 30 M literals where
  // the per-link encoding needed about 10^9; with a 1 ms limit the answer is a timeout, not a
  // refusal.
  SynthOptions o = cadical("allreduce", "star:5", 9, "");
  o.timeout_ms = 1;
  SynthResult r = synthesize(o);
  REQUIRE(r.attempts.size() == 1);
  CHECK(r.answer == smt::Answer::Unknown);
  CHECK(r.attempts[0].reason.find("timeout") != std::string::npos);
  // The cap still refuses when set below the encoding's size.
  o.max_terms = 1'000'000;
  r = synthesize(o);
  CHECK(r.attempts[0].reason.find("refused") != std::string::npos);
}

TEST_CASE("invariant: unsat is not a lower bound, the CNF says so and its proof checks",
          "[sat][invariant]") {
  fs::path d = test::unique_temp("collv_test_sat_invariant");
  fs::remove_all(d);
  std::string out;
  int rc = test::run_cli(
      "synth allreduce -t star:4 --steps 5 --backend cadical --invariant "
      "'(1 2)(3 4)' --proof " +
          d.string(),
      out);
  CHECK(rc == 1);
  CHECK(out.find("invariant under the group generated by (1 2)(3 4) (order 2)") !=
        std::string::npos);
  CHECK(out.find("NOT a lower bound") != std::string::npos);
  CHECK(out.find("lower bound: ") == std::string::npos);
  fs::path cnf = d / "synth-allreduce-star_4-single-inv2-1.2_3.4-T5.cnf";
  REQUIRE(fs::exists(cnf));
  // The identity alone restricts nothing: the general question and its lower bound.
  CHECK(test::run_cli("synth allgather -t star:4 --steps 5 --backend cadical --invariant '()'",
                      out) == 1);
  CHECK(out.find("lower bound: 6 steps") != std::string::npos);
  std::ifstream f(cnf);
  std::string text((std::istreambuf_iterator<char>(f)), {});
  CHECK(text.find("no schedule INVARIANT under the group generated by (1 2)(3 4)") !=
        std::string::npos);
  auto check = sat::check_drup_proof(
      cnf.string(), (d / "synth-allreduce-star_4-single-inv2-1.2_3.4-T5.drat").string());
  CHECK(check.ok);
  fs::remove_all(d);
}

TEST_CASE("invariant: refused groups and combinations", "[sat][invariant]") {
  auto refused = [](SynthOptions o, const std::string& what) {
    INFO(o.invariant << " " << o.collective << " " << o.topology);
    try {
      synthesize(o);
      FAIL("accepted");
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()).find(what) != std::string::npos);
    }
  };
  refused(cadical("allgather", "star:4", 6, "(1 2"), "without ')'");
  refused(cadical("allgather", "star:4", 6, "(1 5)"), "not a symbol 1..4");
  refused(cadical("allgather", "star:4", 6, "(1 1)"), "twice in one cycle");
  refused(cadical("allgather", "star:4", 6, "1 2"), "expected '('");
  refused(cadical("allgather", "star:4", 6, "(1 2),"), "empty generator");
  refused(cadical("allgather", "hypercube:3", 3, "8"), "not a node mask below 8");
  refused(cadical("allgather", "hypercube:3", 3, "x"), "not a node mask");
  refused(cadical("allgather", "ring:6", 3, "1"), "not on ring");
  refused(cadical("broadcast", "star:4", 6, "(1 2)"), "root");
  SynthOptions z3 = cadical("allgather", "star:4", 6, "(1 2)");
  z3.backend = "z3";
  refused(z3, "needs --backend cadical");
  SynthOptions uni = cadical("allgather", "star:4", 6, "(1 2)");
  uni.uniform = true;
  refused(uni, "exclude each other");
  SynthOptions allport = cadical("allreduce", "star:4", 6, "(1 2)");
  allport.port = PortModel::All;
  refused(allport, "single-port model only");
}

namespace {

using Perm = std::vector<int>;  // h[s - 1] = the image of symbol s, for s = 1..5

Perm compose(const Perm& a, const Perm& b) {  // a after b
  Perm r(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) r[i] = a[static_cast<std::size_t>(b[i] - 1)];
  return r;
}
Perm inverse(const Perm& a) {
  Perm r(a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    r[static_cast<std::size_t>(a[i] - 1)] = static_cast<int>(i) + 1;
  return r;
}
std::set<Perm> closure(const std::vector<Perm>& gens) {
  Perm id{1, 2, 3, 4, 5};
  std::set<Perm> g{id};
  std::vector<Perm> todo{id};
  while (!todo.empty()) {
    Perm x = todo.back();
    todo.pop_back();
    for (const Perm& s : gens) {
      Perm y = compose(s, x);
      if (g.insert(y).second) todo.push_back(y);
    }
  }
  return g;
}
// A conjugacy class of subgroups, named by its least member (as a sorted set of permutations).
std::set<Perm> class_name(const std::set<Perm>& h, const std::vector<Perm>& all) {
  std::set<Perm> best;
  for (const Perm& g : all) {
    std::set<Perm> c;
    for (const Perm& x : h) c.insert(compose(compose(g, x), inverse(g)));
    if (best.empty() || c < best) best = c;
  }
  return best;
}

}  // namespace

TEST_CASE("invariant: the S_5 sweep's generating sets cover every class of subgroups once",
          "[sat][invariant]") {
  // Independently of the library: every subgroup of S_5 that one or two permutations generate
  // (all of them: S_5's subgroups are 2-generated), up to conjugacy.
  std::vector<Perm> all;
  Perm p{1, 2, 3, 4, 5};
  do all.push_back(p);
  while (std::next_permutation(p.begin(), p.end()));
  std::set<std::set<Perm>> classes, seen;
  for (const Perm& a : all)
    for (const Perm& b : all) {
      auto h = closure({a, b});
      if (seen.insert(h).second) classes.insert(class_name(h, all));
    }
  CHECK(seen.size() == 156);
  REQUIRE(classes.size() == 19);
  // The script's sets, read from the script, through the library's parser.
  std::ifstream f(std::string(COLLV_SOURCE_DIR) + "/scripts/s5-invariant-sweep.sh");
  std::set<std::set<Perm>> covered;
  std::string line;
  int rows = 0;
  while (std::getline(f, line)) {
    auto bar = line.find('|');
    if (line.rfind("  \"", 0) != 0 || bar == std::string::npos || line.size() < 4 ||
        !std::isdigit(static_cast<unsigned char>(line[3])))
      continue;
    ++rows;
    int order = std::stoi(line.substr(3, bar - 3));
    std::string gens = line.substr(bar + 1, line.rfind('"') - bar - 1);
    INFO(gens);
    auto group = invariance_group(gens, "star:5");
    CHECK(static_cast<int>(group.size()) == order);
    std::set<Perm> h;  // node 0 is the identity permutation: the element is where it goes
    for (const auto& e : group) h.insert(star_unrank(e[0], 5));
    CHECK(static_cast<int>(h.size()) == order);
    CHECK(covered.insert(class_name(h, all)).second);  // a class not yet covered
  }
  CHECK(rows == 19);
  CHECK(covered == classes);
}

TEST_CASE("cubes: cube and conquer gives the one-solve answers", "[sat][cubes]") {
  struct Q {
    const char* coll;
    const char* topo;
    unsigned T;
    const char* inv;
  };
  for (const Q& q : {Q{"allgather", "star:4", 5, ""}, Q{"allgather", "star:4", 6, ""},
                     Q{"allreduce", "star:4", 5, ""}, Q{"allreduce", "star:4", 6, ""},
                     Q{"allgather", "hypercube:3", 2, ""}, Q{"allgather", "hypercube:3", 3, "1"},
                     Q{"allreduce", "star:4", 5, "(1 2)(3 4)"}}) {
    INFO(q.coll << " " << q.topo << " T=" << q.T << " " << q.inv);
    SynthOptions one = cadical(q.coll, q.topo, q.T, q.inv), cubed = one;
    cubed.cube_depth = 5;
    std::vector<std::string> lines;
    cubed.progress = [&](const std::string& l) { lines.push_back(l); };
    SynthResult a = synthesize(one), b = synthesize(cubed);
    REQUIRE(a.answer != smt::Answer::Unknown);
    CHECK(b.answer == a.answer);
    if (b.answer == smt::Answer::Sat) test::require_valid(*b.trace);
    if (b.answer == smt::Answer::Unsat && !lines.empty()) {
      // every cube was decided: the last line is the last cube's, and it is unsat
      CHECK(lines.front().rfind("lookahead: ", 0) == 0);
      CHECK(lines.back().find("unsat") != std::string::npos);
    }
  }
}

TEST_CASE("cubes: a timeout says how many cubes were refuted, no proof, z3 refused",
          "[sat][cubes]") {
  fs::path d = test::unique_temp("collv_test_cubes");
  SynthOptions o = cadical("allgather", "star:4", 5, "");
  o.cube_depth = 4;
  o.proof_dir = d.string();
  SynthResult r = synthesize(o);
  CHECK(r.answer == smt::Answer::Unsat);
  REQUIRE(r.attempts.size() == 1);
  CHECK(fs::exists(r.attempts[0].file));  // the CNF is written ...
  CHECK(r.attempts[0].proof.empty());     // ... but no DRAT proof in cube mode
  CHECK_FALSE(fs::exists(d / "synth-allgather-star_4-single-T5.drat"));
  // The cubes are written beside the CNF, and they cover the question: for a satisfiable one,
  // the CNF with every cube negated is unsat (decided by the cadical executable, a fresh solver),
  // while the CNF alone is sat.
  o = cadical("allgather", "star:4", 6, "");
  o.cube_depth = 4;
  o.proof_dir = d.string();
  r = synthesize(o);
  REQUIRE(r.answer == smt::Answer::Sat);
  CHECK(test::shell("cadical -q " + r.attempts[0].file + " > /dev/null") == 10);
  std::string cubes = r.attempts[0].file + ".cubes";
  REQUIRE(fs::exists(cubes));
  std::ifstream cf(cubes);
  std::vector<std::string> negated;
  for (std::string line; std::getline(cf, line);) {
    REQUIRE(line.rfind("a ", 0) == 0);
    std::istringstream in(line.substr(2));
    std::string clause;
    for (int lit; in >> lit && lit != 0;) clause += std::to_string(-lit) + " ";
    negated.push_back(clause + "0");
  }
  CHECK(negated.size() >= 2);
  std::ifstream cnf(r.attempts[0].file);
  std::ofstream both(d / "covered.cnf");
  for (std::string line; std::getline(cnf, line);) {
    if (line.rfind("p cnf ", 0) == 0) {
      std::istringstream in(line.substr(6));
      std::uint64_t v = 0, c = 0;
      in >> v >> c;
      line = "p cnf " + std::to_string(v) + " " + std::to_string(c + negated.size());
    }
    both << line << "\n";
  }
  for (const auto& c : negated) both << c << "\n";
  both.close();
  CHECK(test::shell("cadical -q " + (d / "covered.cnf").string() + " > /dev/null") == 20);
  fs::remove_all(d);
  o = cadical("allgather", "star:5", 7, "");
  o.cube_depth = 4;
  o.timeout_ms = 1;
  r = synthesize(o);
  CHECK(r.answer == smt::Answer::Unknown);
  CHECK(r.attempts[0].reason.find("after refuting 0 of") != std::string::npos);
  o.backend = "z3";
  o.invariant.clear();
  CHECK_THROWS_AS(synthesize(o), UsageError);
}

TEST_CASE("invariant: the 9-step star:5 all-reduce in examples/ re-checks from the file",
          "[sat][invariant]") {
  std::string file = std::string(COLLV_SOURCE_DIR) + "/examples/star5/allreduce-9-steps.json";
  std::string out;
  CHECK(test::run_cli("verify --trace " + file, out) == 0);
  CHECK(out.find("1 runs: 1 passed") != std::string::npos);
  // Broken copies fail: node 0 sends only its own input in step 9 (its receiver misses
  // contributions), or the file claims 8 steps.
  std::ifstream in(file);
  auto j = nlohmann::json::parse(in);
  auto broken = j;
  bool changed = false;
  for (auto& x : broken["transfers"])
    if (x["step"] == 9 && x["src"] == 0) {
      x["items"] = nlohmann::json::array({"x0"});
      changed = true;
    }
  REQUIRE(changed);
  std::string path = test::unique_temp("collv_ar9_broken") + ".json";
  std::ofstream(path) << broken.dump();
  CHECK(test::run_cli("verify --trace " + path, out) == 1);
  CHECK(out.find("dataflow: node 42315 ends with x0..x119") != std::string::npos);
  auto claim8 = j;
  claim8["claimed"]["steps"] = 8;
  std::ofstream(path) << claim8.dump();
  CHECK(test::run_cli("verify --trace " + path, out) == 1);
  CHECK(out.find("the model claims 8") != std::string::npos);
  fs::remove(path);
}
