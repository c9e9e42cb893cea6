// The portfolio of ways to ask Z3 one query (src/smt/portfolio.hpp) and Z3's resource limit: a
// way that gives no answer hands the query to the next, the certificate is the script of the way
// that answered and z3 alone replays it, a sat answer from any way is a counterexample.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "app/every_p_cmd.hpp"
#include "cli.hpp"
#include "every_p_util.hpp"
#include "smt/every_p.hpp"
#include "smt/portfolio.hpp"
#include "smt/solver.hpp"

using namespace collv;

namespace {

// Six pigeons in five holes: unsat, about 46 k resource units (0.03 s), more than a stop at 1
// or 100; with a sixth hole for u, sat, and u = 6 in every model.
const char* kUnsat =
    "(declare-const x Int)(declare-const y Int)(declare-const z Int)(declare-const w Int)\n"
    "(declare-const v Int)(declare-const u Int)(declare-const a Bool)\n"
    "(assert (=> a (and (<= 1 x 5) (<= 1 y 5) (<= 1 z 5) (<= 1 w 5) (<= 1 v 5) (<= 1 u 5)\n"
    "  (distinct x y z w v u))))\n";
const char* kSat =
    "(declare-const x Int)(declare-const y Int)(declare-const z Int)(declare-const w Int)\n"
    "(declare-const v Int)(declare-const u Int)(declare-const a Bool)\n"
    "(assert (=> a (and (<= 1 x 5) (<= 1 y 5) (<= 1 z 5) (<= 1 w 5) (<= 1 v 5) (<= 1 u 6)\n"
    "  (distinct x y z w v u))))\n";

// A way that stops at once: its own (set-option :rlimit 1) overrides the bound of the try.
const smt::Way kStop{"reader-stop", "(set-option :rlimit 1)\n", "", false};

smt::Limits limits() {
  smt::Limits l{60000, 1'000'000};
  l.rlimit = 50'000'000;
  return l;
}

bool z3_available() { return std::system("z3 --version > /dev/null 2>&1") == 0; }

// The last answer line of the z3 executable on `text`.
std::string z3_alone(const std::string& text) {
  std::string file = collv::test::unique_temp("portfolio_cert") + ".smt2";
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    REQUIRE(f);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  std::FILE* p = popen(("z3 -T:60 '" + file + "' 2>&1").c_str(), "r");
  REQUIRE(p);
  std::string out, last;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  std::remove(file.c_str());
  for (std::size_t at = 0; at < out.size();) {
    auto nl = out.find('\n', at);
    if (nl == std::string::npos) nl = out.size();
    std::string line = out.substr(at, nl - at);
    if (line == "sat" || line == "unsat" || line == "unknown") last = line;
    at = nl + 1;
  }
  return last;
}

}  // namespace

TEST_CASE("solver: the resource limit stops a check the same way on any load", "[smt][portfolio]") {
  smt::Limits l{60000, 1'000'000};
  smt::Solver s(l);
  s.add(kUnsat);
  smt::Result free = s.check({"a"});
  REQUIRE(free.answer == smt::Answer::Unsat);
  CHECK(free.rlimit_used > 100);
  // A bound far below what the check took: unknown, named, never a pass.
  l.rlimit = 100;
  smt::Solver t(l);
  t.add(kUnsat);
  smt::Result stopped = t.check({"a"});
  CHECK(stopped.answer == smt::Answer::Unknown);
  CHECK(stopped.reason.find("resource limit of 100 units") != std::string::npos);
  // The z3 executable's ways count the same kind of units and stop alike.
  smt::Answered rd = smt::solve_portfolio(kUnsat, {"a"}, {}, l, "", {smt::default_ways()[1]});
  CHECK(rd.result.answer == smt::Answer::Unknown);
  CHECK(rd.result.reason.find("resource limit of 100 units") != std::string::npos);
  l.rlimit = 0;
  smt::Answered rd2 = smt::solve_portfolio(kUnsat, {"a"}, {}, l, "", {smt::default_ways()[1]});
  CHECK(rd2.result.answer == smt::Answer::Unsat);
  CHECK(rd2.result.rlimit_used > 100);
}

TEST_CASE("portfolio: a way without an answer hands the query on and the certificate replays",
          "[smt][portfolio]") {
  // The first way stops at once, the second (the plain command reader) answers: the certificate
  // is the second's script and names it.
  smt::Answered a =
      smt::solve_portfolio(kUnsat, {"a"}, {}, limits(), "a test", {kStop, smt::default_ways()[1]});
  REQUIRE(a.result.answer == smt::Answer::Unsat);
  CHECK(a.way == "reader");
  REQUIRE(a.tries.size() == 2);
  CHECK(a.tries[0].rfind("reader-stop: unknown", 0) == 0);
  CHECK(a.certificate.find("; answered by: reader (") != std::string::npos);
  CHECK(a.certificate.find("(set-option :rlimit 1)") == std::string::npos);
  CHECK(a.certificate.rfind("; expected: unsat\n; a test\n", 0) == 0);
  // z3 alone: a fresh context through the command reader, and the executable.
  CHECK(smt::run_smt2_script(a.certificate, 60000, 1 << 20).answer == smt::Answer::Unsat);
  if (z3_available()) CHECK(z3_alone(a.certificate) == "unsat");

  // A way with options writes them into its certificate, and z3 alone replays that way.
  for (const smt::Way& w : smt::default_ways()) {
    if (w.api) continue;
    INFO(w.name);
    smt::Answered b = smt::solve_portfolio(kUnsat, {"a"}, {}, limits(), "", {kStop, w});
    REQUIRE(b.result.answer == smt::Answer::Unsat);
    CHECK(b.way == w.name);
    CHECK(b.certificate.find("; answered by: " + w.name + " (") != std::string::npos);
    if (!w.options.empty()) CHECK(b.certificate.find(w.options) != std::string::npos);
    if (!w.tactic.empty()) {
      CHECK(b.certificate.find("(assert a)\n(check-sat-using " + w.tactic + ")") !=
            std::string::npos);
      CHECK(b.certificate.find("check-sat-assuming") == std::string::npos);
    }
    CHECK(smt::run_smt2_script(b.certificate, 60000, 1 << 20).answer == smt::Answer::Unsat);
  }

  // The default ways: the API way answers first, as before the portfolio.
  smt::Answered c = smt::solve_portfolio(kUnsat, {"a"}, {}, limits(), "");
  CHECK(c.result.answer == smt::Answer::Unsat);
  CHECK(c.way == "api");
  CHECK(c.tries.size() == 1);
  CHECK(c.certificate.find("; answered by: api (") != std::string::npos);
  CHECK_FALSE(c.unconfirmed);
  // An API answer past confirm_above CPU seconds is asked of the executable too: its certificate
  // then; when no executable's way answers, the API's stands, marked unconfirmed.
  smt::Answered d =
      smt::solve_portfolio(kUnsat, {"a"}, {}, limits(), "", smt::default_ways(), 1e-9);
  CHECK(d.result.answer == smt::Answer::Unsat);
  CHECK(d.way == "reader");
  REQUIRE(d.tries.size() == 2);
  CHECK(d.tries[0].rfind("api: unsat", 0) == 0);
  CHECK_FALSE(d.unconfirmed);
  smt::Answered e =
      smt::solve_portfolio(kUnsat, {"a"}, {}, limits(), "", {smt::default_ways()[0], kStop}, 1e-9);
  CHECK(e.result.answer == smt::Answer::Unsat);
  CHECK(e.way == "api");
  CHECK(e.unconfirmed);
  CHECK(e.certificate.find("; answered by: api (") != std::string::npos);
  // A sat from an executable's way against the API's unsat is no proof: an injected bug, a
  // "tactic" that ends the query and asks another one, which is sat.
  const smt::Way liar{"reader-liar", "",
                      "smt)\n(reset)\n(declare-const a Bool)\n(check-sat-using smt", false};
  smt::Answered f =
      smt::solve_portfolio(kUnsat, {"a"}, {}, limits(), "", {smt::default_ways()[0], liar}, 1e-9);
  CHECK(f.result.answer == smt::Answer::Unknown);
  CHECK(f.result.reason.find("the ways disagree") != std::string::npos);
  CHECK(f.certificate.find("; answered by: none (") != std::string::npos);
}

TEST_CASE("portfolio: a sat answer from any way is a counterexample and no way passes it",
          "[smt][portfolio]") {
  for (const smt::Way& w : smt::default_ways()) {
    INFO(w.name);
    smt::Answered a = smt::solve_portfolio(kSat, {"a"}, {"u"}, limits(), "", {kStop, w});
    REQUIRE(a.result.answer == smt::Answer::Sat);
    CHECK(a.way == w.name);
    REQUIRE(a.result.values.count("u") == 1);
    CHECK(a.result.values.at("u") == "6");
  }
  // No way answers: unknown, every try named in the reason; the certificate names no way.
  smt::Answered n = smt::solve_portfolio(kUnsat, {"a"}, {}, limits(), "", {kStop, kStop});
  CHECK(n.result.answer == smt::Answer::Unknown);
  CHECK(n.way.empty());
  CHECK(n.result.reason.find("no way answered: reader-stop: unknown") != std::string::npos);
  CHECK(n.certificate.find("; answered by: none (") != std::string::npos);
  // The size cap refuses before any way runs.
  smt::Limits tiny{60000, 4};
  smt::Answered r = smt::solve_portfolio(kUnsat, {"a"}, {}, tiny, "");
  CHECK(r.result.answer == smt::Answer::Unknown);
  CHECK(r.result.reason.find("refused") != std::string::npos);
  CHECK(r.tries.empty());
}

TEST_CASE("portfolio: a broken proof line still fails through the portfolio's later ways",
          "[smt][portfolio][every-p]") {
  using namespace collv::test::everyp;
  // MPICH's ring allgather with its invariant's block off by one rank: a query is sat through
  // the reader's way after a way without an answer, and the good proof's are unsat.
  const std::string root = COLLV_SOURCE_DIR;
  const std::string proof = collv::test::slurp(root + "/proofs/every-p/allgather_ring.proof");
  const std::string model = collv::test::slurp(root + "/models/mpich/allgather_ring.coll");
  EveryPAnalysis good = analyze_text(model, proof);
  REQUIRE(good.refusal.empty());
  EveryPAnalysis bad =
      analyze_text(model, replaced(proof, "(it b 0) none)", "(it (mod (+ b 1) p) 0) none)"));
  REQUIRE(bad.refusal.empty());
  bool some_sat = false;
  for (const auto& ob : bad.obligations) {
    smt::Answered a = smt::solve_portfolio(ob.script, {"a"}, {"p"}, limits(), "",
                                           {kStop, smt::default_ways()[1]});
    CHECK(a.result.answer != smt::Answer::Unknown);
    some_sat = some_sat || a.result.answer == smt::Answer::Sat;
  }
  CHECK(some_sat);
  for (const auto& ob : good.obligations) {
    smt::Answered a = smt::solve_portfolio(ob.script, {"a"}, {"p"}, limits(), "",
                                           {kStop, smt::default_ways()[1]});
    CHECK(a.result.answer == smt::Answer::Unsat);
  }
}
