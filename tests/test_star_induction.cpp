// Theorems 1-3 for every n from the model (smt/star_induction.hpp, `collv prove` kind induction):
// the star models are proved; mutants fail by the induction's own obligations (not only by the
// executor); programs outside the method are refused, never proved.
#include <algorithm>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/commands.hpp"
#include "app/smt_cmds.hpp"
#include "cli.hpp"
#include "smt/solver.hpp"
#include "smt/star_induction.hpp"

using namespace collv;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

using collv::test::slurp;

// allreduce_star's text with each `from` replaced by its `to` (once; the test fails if one is
// not there).
std::string mutant(const std::vector<std::pair<std::string, std::string>>& edits) {
  std::string text = slurp(kRoot + "/models/allreduce_star.coll");
  for (const auto& [from, to] : edits) {
    auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
  }
  return text;
}
std::string mutant(const std::string& from, const std::string& to) { return mutant({{from, to}}); }

// The line of text's first line that contains needle (1-based), as obligations name lines.
std::string line_of(const std::string& text, const std::string& needle) {
  auto at = text.find(needle);
  REQUIRE(at != std::string::npos);
  return "line" + std::to_string(1 + std::count(text.begin(), text.begin() + at, '\n'));
}

// The answer of every obligation, by name.
std::map<std::string, smt::Answer> solve_all(const StarInduction& a) {
  std::map<std::string, smt::Answer> out;
  for (const auto& ob : a.obligations) {
    smt::Solver s(smt::Limits{30000, 1'000'000});
    s.add(ob.script);
    out[ob.name] = s.check({"a"}).answer;
  }
  return out;
}

std::vector<std::string> sat_names(const StarInduction& a) {
  std::vector<std::string> v;
  for (const auto& [name, ans] : solve_all(a))
    if (ans == smt::Answer::Sat) v.push_back(name);
  return v;
}

bool has_prefix(const std::vector<std::string>& names, const std::string& p) {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return n.rfind(p, 0) == 0; });
}

}  // namespace

TEST_CASE("induction: the star all-reduce and all-to-all broadcast are proved for every n",
          "[smt][induction]") {
  for (const char* name : {"allreduce_star", "allgather_star"}) {
    INFO(name);
    Model m = parse_model_file(kRoot + "/models/" + name + ".coll");
    StarInduction a = analyze_star_induction(m);
    REQUIRE(a.refusal.empty());
    CHECK(a.level_var == "k");
    CHECK(a.invariant_vars == std::vector<std::string>{"local"});
    CHECK(a.steps_proved_obligations);
    auto answers = solve_all(a);
    // links (3 sends), nodup (2 combinations and the accumulated loop), cover (3), steps (2)
    CHECK(answers.size() >= 10);
    for (const auto& [ob, ans] : answers) {
      INFO(ob);
      CHECK(ans == smt::Answer::Unsat);
    }
    for (const char* kind : {"links-", "nodup-", "cover-count-", "cover-distinct-", "cover-range-",
                             "steps-base", "steps-step"}) {
      INFO(kind);
      CHECK(std::any_of(answers.begin(), answers.end(),
                        [&](const auto& e) { return e.first.rfind(kind, 0) == 0; }));
    }
  }
}

TEST_CASE("induction: forwarding the accumulated sum fails the first iteration's NODUP",
          "[smt][induction]") {
  const std::string text = mutant("send outgoing along link j;", "send result along link j;");
  Model m = parse_model(text, "forward_sum.coll");
  StarInduction a = analyze_star_induction(m);
  CHECK(a.refusal.find("changes in every iteration") != std::string::npos);  // not summarised
  auto sat = sat_names(a);
  // result + number at k = 3: the same coset twice
  CHECK(has_prefix(sat, "nodup-" + line_of(text, "result := result + number;")));
}

TEST_CASE("induction: skipping link 2 fails the cover and the steps claim", "[smt][induction]") {
  Model m = parse_model(mutant("for j := k - 1 downto 2 do", "for j := k - 1 downto 3 do"),
                        "skip_link2.coll");
  StarInduction a = analyze_star_induction(m);
  REQUIRE(a.refusal.empty());
  auto sat = sat_names(a);
  CHECK(has_prefix(sat, "cover-count-local"));
  CHECK(has_prefix(sat, "steps-step"));
  CHECK_FALSE(has_prefix(sat, "nodup"));  // what it combines is still disjoint
}

TEST_CASE("induction: downward levels are refused, not proved", "[smt][induction]") {
  Model m = parse_model(mutant("for k := 2 to n do", "for k := n downto 2 do"), "down.coll");
  StarInduction a = analyze_star_induction(m);
  CHECK(a.refusal.find("downward") != std::string::npos);
}

TEST_CASE("induction: the inner links upward are still right", "[smt][induction]") {
  Model m = parse_model(mutant("for j := k - 1 downto 2 do", "for j := 2 to k - 1 do"), "up.coll");
  StarInduction a = analyze_star_induction(m);
  REQUIRE(a.refusal.empty());
  CHECK(sat_names(a).empty());
}

TEST_CASE("induction: a wrong steps claim fails base or step", "[smt][induction]") {
  Model plus1 = parse_model(
      mutant("steps      n * (n - 1) div 2", "steps      n * (n - 1) div 2 + 1"), "p.coll");
  auto sat = sat_names(analyze_star_induction(plus1));
  CHECK(sat == std::vector<std::string>{"steps-base"});
  Model square =
      parse_model(mutant("steps      n * (n - 1) div 2", "steps      n * n div 2"), "s.coll");
  sat = sat_names(analyze_star_induction(square));
  CHECK(has_prefix(sat, "steps-"));
  Model bound = parse_model(
      mutant("steps      n * (n - 1) div 2", "steps at most n * (n - 1) div 2"), "b.coll");
  StarInduction b = analyze_star_induction(bound);
  CHECK_FALSE(b.steps_proved_obligations);
  CHECK(b.steps_note.find("bound") != std::string::npos);
}

TEST_CASE("induction: an extra send to a wrong link fails the links obligation",
          "[smt][induction]") {
  // Link k + 1 leaves the level's sub-star (and does not exist at k = n).
  const std::string text =
      mutant({{"send local along link k;", "send local along link k + 1;"},
              {"receive outgoing along link k;", "receive outgoing along link k + 1;"}});
  Model m = parse_model(text, "wrong_link.coll");
  StarInduction a = analyze_star_induction(m);
  REQUIRE(a.refusal.empty());
  CHECK(has_prefix(sat_names(a), "links-" + line_of(text, "send local along link k + 1;")));
}

TEST_CASE("induction: programs outside the method are refused, never proved", "[smt][induction]") {
  // A loop that assigns its own counter does not run its range once each.
  Model steps_counter = parse_model(
      mutant("result := result + number;", "result := result + number; j := j - 1;"), "c.coll");
  CHECK(analyze_star_induction(steps_counter).refusal.find("own counter") != std::string::npos);
  // Node-dependent links, a hypercube program, a program without exchanges.
  Model by_id = parse_model(mutant("send local along link k;", "send local along link my_id + 2;"),
                            "by_id.coll");
  CHECK(analyze_star_induction(by_id).refusal.find("my_id") != std::string::npos);
  int refused = 0, analysed = 0;
  for (const auto& f : list_model_files(kRoot + "/models")) {
    INFO(f);
    Model m = parse_model_file(f);
    StarInduction a = analyze_star_induction(m);  // must not throw on any library model
    if (a.refusal.empty()) {
      ++analysed;
      CHECK(m.header.topologies == std::vector<std::string>{"star"});
    } else {
      ++refused;
    }
  }
  CHECK(analysed == 2);  // allreduce_star, allgather_star
  CHECK(refused >= 40);
}

TEST_CASE("collv prove proofs/mutants: every mutant disproved, the correct variant proved",
          "[smt][induction]") {
  ProveCommandOptions o;
  o.paths = {kRoot + "/proofs/mutants"};
  o.models_dir = kRoot + "/models";
  std::ostringstream out, err;
  int rc = run_prove_command(o, out, err);
  INFO(out.str() << err.str());
  CHECK(rc == 0);
  std::string s = out.str();
  CHECK(s.find("6 obligations: 6 ok") != std::string::npos);
  CHECK(s.find("forward-sum-induction-only.proof  [induction] disproved") != std::string::npos);
  CHECK(s.find("skip-link2-induction-only.proof  [induction] disproved") != std::string::npos);
  CHECK(s.find("links-upward.proof  [induction] proved for every n >= 2") != std::string::npos);
  // The proofs expect the opposite of the truth: each must be reported FAILED (exit 1).
  fs::path dir = fs::temp_directory_path() / "collv_test_induction_flip";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"forward_sum.coll", "skip_link2.coll"})
    fs::copy_file(kRoot + "/proofs/mutants/" + f, dir / f);
  std::ofstream(dir / "a.proof") << "kind induction\nmodel forward_sum.coll\nexpect proved\n";
  std::ofstream(dir / "b.proof") << "kind induction\nmodel allreduce_star\nexpect disproved\n";
  o.paths = {dir.string()};
  std::ostringstream out2, err2;
  CHECK(run_prove_command(o, out2, err2) == 1);
  CHECK(out2.str().find("0 ok, 2 failed") != std::string::npos);
}

TEST_CASE("induction: hostile programs are refused within bounds", "[smt][induction]") {
  // An integer term that doubles forty times, and a value that doubles into a thousand cosets.
  std::string doubling = "    local := my_number;\n    x := 1;\n";
  for (int i = 0; i < 40; ++i) doubling += "    x := x + x;\n";
  std::string text = mutant("    local := my_number;", doubling);
  text = text.replace(text.find("send local along link k;"), 24, "send local along link x;");
  StarInduction a = analyze_star_induction(parse_model(text, "doubling.coll"));
  CHECK(a.refusal.find("size limit") != std::string::npos);
  std::string grow;
  for (int i = 0; i < 12; ++i) grow += "        result := result + result;\n";
  StarInduction b = analyze_star_induction(
      parse_model(mutant("/* ... and save it in the result buffer */", "\n" + grow), "grow.coll"));
  CHECK(b.refusal.find("size limit") != std::string::npos);
  CHECK(has_prefix(sat_names(b), "nodup-"));  // the first doubling is already a duplicate
}
