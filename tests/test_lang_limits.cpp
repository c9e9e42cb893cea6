// Header claims that cannot switch off (unknown names are load errors, non-integer step claims
// fail), the new header functions and the conditional, named preconditions, --source on
// collectives without a root, and the language's limits: deep nesting, long literals, control
// bytes, oversize files, and run time linear in the program's length.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/commands.hpp"
#include "app/verify_cmd.hpp"
#include "check/checks.hpp"
#include "exec/executor.hpp"
#include "lang/ast.hpp"
#include "lang/check.hpp"

using namespace collv;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

// A broadcast on a hypercube that takes d steps and then two exchange steps of data every node
// already holds (so `nodup no`): floor(log2(p)) + 2 steps in all.
std::string bcast_plus_two(const std::string& steps, const std::string& extra_header = "") {
  return "model bcast2\n  collective broadcast\n  topology hypercube\n  nodup no\n  input X\n"
         "  output X\n  requires p = 2^d and source = 0\n  steps " +
         steps + "\n" + extra_header +
         R"(procedure B
begin
    for i := d - 1 downto 0 do
        if (my_id AND (2^i - 1)) = 0 then
            if (my_id AND 2^i) = 0 then
                send X to my_id XOR 2^i;
            else
                receive X from my_id XOR 2^i;
            endelse;
        endif;
    endfor;
    send X to my_id XOR 1;
    receive t from my_id XOR 1;
    send X to my_id XOR 1;
    receive t from my_id XOR 1;
end B
)";
}

std::string load_error(const std::string& text, const std::string& file = "m.coll") {
  try {
    parse_model(text, file);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

const CheckResult& named(const std::vector<CheckResult>& rs, const std::string& n) {
  for (const auto& r : rs)
    if (r.name == n) return r;
  throw std::runtime_error("no check " + n);
}

std::string header_only(const std::string& key_lines) {
  return "model h\n  collective allreduce\n  topology ring\n  input x\n  output x\n" + key_lines +
         "procedure P\nbegin\nend P\n";
}

double eval_steps(const std::string& formula, std::map<std::string, double> env) {
  Model m = parse_model(header_only("  steps " + formula + "\n"), "h.coll");
  return eval_header_expr(*m.header.steps, env, "'steps'");
}

std::string eval_error(const std::string& formula, std::map<std::string, double> env) {
  Model m = parse_model(header_only("  steps " + formula + "\n"), "h.coll");
  try {
    eval_header_expr(*m.header.steps, env, "'steps'");
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

bool has_raw_control_byte(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7F) return true;
  return false;
}

}  // namespace

TEST_CASE("steps floor(log2(p)) + 2 is evaluated and checked at every size", "[lang][claims]") {
  Model m = parse_model(bcast_plus_two("floor(log2(p)) + 2"), "b.coll");
  for (const char* spec : {"hypercube:1", "hypercube:2", "hypercube:3", "hypercube:4"}) {
    Trace t = run_model(m, Topology::parse(spec), RunOptions{});
    REQUIRE(t.failure.kind == RunFailure::Kind::None);
    auto checks = check_trace(t, CheckOptions{});
    INFO(spec);
    CHECK(t.claimed_steps == static_cast<std::int64_t>(t.steps));
    CHECK(named(checks, "steps").verdict == Verdict::Pass);
    CHECK(named(checks, "postcondition").verdict == Verdict::Pass);
  }
  // The same run against a claim one too high fails the check: the claim is really compared.
  Model wrong = parse_model(bcast_plus_two("ilog2(p) + 3"), "w.coll");
  Trace t = run_model(wrong, Topology::parse("hypercube:3"), RunOptions{});
  auto s = named(check_trace(t, CheckOptions{}), "steps");
  REQUIRE(s.verdict == Verdict::Fail);
  CHECK(s.violations.at(0).message == "the run takes 5 steps; the model claims 6");
}

TEST_CASE("a step claim that is not a whole number fails, it is never rounded", "[lang][claims]") {
  // p - 3/5 on ring:5 is 4.4, and the ring allgather takes p - 1 = 4 steps: rounding would pass.
  Model m = parse_model_file(kRoot + "/models/allgather_ring.coll");
  m.header.steps = std::move(parse_model(header_only("  steps p - 3/5\n"), "h.coll").header.steps);
  Trace t = run_model(m, Topology::parse("ring:5"), RunOptions{});
  REQUIRE(t.failure.kind == RunFailure::Kind::None);
  REQUIRE(t.steps == 4);
  CHECK_FALSE(t.claimed_steps.has_value());
  REQUIRE(t.claimed_steps_real.has_value());
  CHECK(*t.claimed_steps_real == Approx(4.4));
  auto s = named(check_trace(t, CheckOptions{}), "steps");
  REQUIRE(s.verdict == Verdict::Fail);
  CHECK(s.violations.at(0).message ==
        "the run takes 4 steps; the model claims 4.4 steps, not a whole number");
  // A whole number too large for the step counter is compared, not wrapped or rounded.
  m.header.steps = std::move(parse_model(header_only("  steps 2^80\n"), "h.coll").header.steps);
  Trace huge = run_model(m, Topology::parse("ring:5"), RunOptions{});
  auto hs = named(check_trace(huge, CheckOptions{}), "steps");
  REQUIRE(hs.verdict == Verdict::Fail);
  CHECK(hs.violations.at(0).message == "the run takes 4 steps; the model claims 1.20893e+24 steps");
  // p - 1 passes on the same run.
  m.header.steps = std::move(parse_model(header_only("  steps p - 1\n"), "h.coll").header.steps);
  Trace ok = run_model(m, Topology::parse("ring:5"), RunOptions{});
  CHECK(named(check_trace(ok, CheckOptions{}), "steps").verdict == Verdict::Pass);
}

TEST_CASE("unknown names and functions in header formulas are load errors", "[lang][claims]") {
  CHECK(load_error(header_only("  steps flor(p)\n")) ==
        "m.coll:6:9: error: unknown function 'flor' in 'steps' (did you mean 'floor'?); header "
        "formulas may use ceil, clog2, floor, ilog2, log2, max, min, popcount, sqrt, sum");
  // requires with an unknown function: today it skipped every run; now the model does not load.
  CHECK(load_error(header_only("  requires is_pow2(p)\n"))
            .rfind("m.coll:6:12: error: unknown function 'is_pow2' in 'requires'", 0) == 0);
  CHECK(load_error(header_only("  cost (ts + tw*m) * lg(p)\n"))
            .rfind("m.coll:6:22: error: unknown function 'lg' in 'cost'", 0) == 0);
  CHECK(load_error(header_only("  steps p - ones\n"))
            .rfind("m.coll:6:13: error: unknown name 'ones' in 'steps'", 0) == 0);
  CHECK(load_error(header_only("  elements pp\n"))
            .rfind("m.coll:6:12: error: unknown name 'pp' in 'elements' (did you mean 'p'?)", 0) ==
        0);
  CHECK(load_error(header_only("  steps ts * p\n"))
            .rfind("m.coll:6:9: error: unknown name 'ts' in 'steps' ('ts' belongs in 'cost' only)",
                   0) == 0);
  CHECK(load_error(header_only("  steps my_id\n")).find("unknown name 'my_id' in 'steps'") !=
        std::string::npos);
  CHECK(load_error(header_only("  steps len(p)\n")).find("unknown function 'len' in 'steps'") !=
        std::string::npos);
  CHECK(load_error(header_only("  steps floor(p, 2)\n")).find("'floor' takes 1 argument") !=
        std::string::npos);
  CHECK(load_error(header_only("  steps [] \n")).find("a buffer in 'steps'") != std::string::npos);
  // Every name a topology can define is known, whatever the model's family.
  CHECK(load_error(header_only("  requires p >= 1 and d >= 0 and n >= 0 and rows = cols and "
                               "q >= 0 and source = root\n  cost (ts + tw*m) * p\n")) == "");
}

TEST_CASE("a header name the chosen topology lacks is an error naming it at run time",
          "[lang][claims]") {
  Model m = parse_model(header_only("  steps d\n"), "h.coll");
  try {
    run_model(m, Topology::parse("ring:6"), RunOptions{});
    FAIL("expected a ModelError");
  } catch (const ModelError& e) {
    CHECK(std::string(e.what()) ==
          "h.coll:6:9: error: 'steps' on ring:6: 'd' is not defined on ring:6: 'd' (log2 p) "
          "needs p to be a power of two, and ring:6 has p = 6");
  }
  // requires: never a silent skip. model_applies cannot decide, and run_model says why.
  Model r = parse_model(header_only("  requires rows = cols\n"), "r.coll");
  RunOptions o;
  CHECK_FALSE(model_applies(r, Topology::parse("ring:4"), o).has_value());
  CHECK(model_applies(r, Topology::parse("mesh:2x2"), o) == std::optional<bool>(true));
  CHECK(model_applies(r, Topology::parse("mesh:2x4"), o) == std::optional<bool>(false));
  CHECK_THROWS_WITH(run_model(r, Topology::parse("ring:4"), o),
                    Catch::Contains("'rows' is defined only on meshes and tori"));
  // `and` decides on its left operand: the right one is not evaluated where it is undefined.
  Model a = parse_model(header_only("  requires (p AND (p - 1)) = 0 and d >= 2\n"), "a.coll");
  CHECK(model_applies(a, Topology::parse("ring:6"), o) == std::optional<bool>(false));
  CHECK(model_applies(a, Topology::parse("ring:8"), o) == std::optional<bool>(true));
}

TEST_CASE("verify reports a requires it cannot evaluate as an error, not a skip",
          "[lang][claims]") {
  fs::path dir = fs::temp_directory_path() / "collv_lang_requires";
  fs::create_directories(dir);
  std::ifstream in(kRoot + "/models/allgather_ring.coll");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string src = ss.str();
  auto at = src.find("  input");
  REQUIRE(at != std::string::npos);
  src.insert(at, "  requires rows >= 1\n");
  std::ofstream(dir / "needs_rows.coll") << src;
  VerifyOptions vo;
  vo.targets = {(dir / "needs_rows.coll").string()};
  vo.topologies = {"ring:4"};
  vo.quiet = true;
  std::ostringstream err;
  VerifyReport rep = verify(vo, nullptr, err);
  CHECK(rep.skipped_runs == 0);
  REQUIRE_FALSE(rep.runs.empty());
  CHECK(rep.runs[0].status == "error");
  CHECK(rep.runs[0].error.find("'rows' is defined only on meshes and tori") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("header functions and the conditional", "[lang][claims]") {
  CHECK(eval_steps("floor(7/2) + ceil(7/2)", {}) == 7);
  CHECK(eval_steps("ilog2(p)", {{"p", 5}}) == 2);
  CHECK(eval_steps("clog2(p)", {{"p", 5}}) == 3);
  CHECK(eval_steps("clog2(p)", {{"p", 4}}) == 2);
  CHECK(eval_steps("ilog2(p) + clog2(p)", {{"p", 1}}) == 0);
  CHECK(eval_steps("ilog2(2^40 - 1)", {}) == 39);  // exact where log2 of a double rounds up
  CHECK(eval_steps("clog2(2^40 + 1)", {}) == 41);
  CHECK(eval_steps("popcount(p)", {{"p", 13}}) == 3);
  CHECK(eval_steps("popcount(0)", {}) == 0);
  CHECK(eval_steps("if p = 1 then 0 else 2 * d", {{"p", 1}, {"d", 0}}) == 0);
  CHECK(eval_steps("if p = 1 then 0 else 2 * d", {{"p", 8}, {"d", 3}}) == 6);
  CHECK(eval_steps("(if p > 4 then 1 else 2) + 10", {{"p", 8}}) == 11);
  // Only the branch taken is evaluated: log2(0) would be undefined.
  CHECK(eval_steps("if p > 1 then log2(p - 1) else 0", {{"p", 1}}) == 0);
  CHECK(eval_steps("min(p, 3) + max(p, 3) + NOT 0 + (5 XOR 3)", {{"p", 4}}) == 12);
  // Undefined arithmetic is an error at its position, not a skipped claim.
  CHECK(eval_error("log2(p - 1)", {{"p", 1}}) ==
        "h.coll:6:9: error: 'steps': log2(0) is undefined");
  CHECK(eval_error("ilog2(0)", {}) == "h.coll:6:9: error: 'steps': ilog2(0) is undefined");
  CHECK(eval_error("popcount(p - 2)", {{"p", 1}}).find("popcount(-1) is undefined") !=
        std::string::npos);
  CHECK(eval_error("popcount(p / 2)", {{"p", 3}}).find("'popcount' needs whole numbers, not 1.5") !=
        std::string::npos);
  CHECK(eval_error("p / (p - 1)", {{"p", 1}}) ==
        "h.coll:6:11: error: 'steps': division by zero (1 / 0)");
  CHECK(eval_error("sqrt(0 - p)", {{"p", 2}}).find("sqrt(-2) is undefined") != std::string::npos);
}

TEST_CASE("the conditional needs else, header-only functions stay out of procedures",
          "[lang][claims]") {
  CHECK(load_error(header_only("  steps if p = 1 then 0\n")).find("expected 'else'") !=
        std::string::npos);
  std::string pre =
      "model t\n  collective allreduce\n  topology ring\n  input x\n  output x\n"
      "procedure P\nbegin\n";
  // A number chosen per node is fine in the procedure (tests/test_lang_helpers.cpp runs it); a
  // buffer chosen by it is not.
  CHECK(load_error(pre + "  y := if p = 1 then 0 else 1;\nend P\n").empty());
  CHECK(load_error(pre + "  receive z from 0;\n  send (if p = 1 then z else z) to 1;\nend P\n") ==
        "m.coll:9:9: error: the conditional 'if C then A else B' gives a number, but a buffer is "
        "needed here; choose buffers with an if statement");
  CHECK(load_error(pre + "  y := popcount(p);\nend P\n")
            .rfind("m.coll:8:8: error: 'popcount' is a function of header formulas only", 0) == 0);
}

TEST_CASE("expressions print back as they are written", "[lang]") {
  auto show = [](const std::string& f) {
    Model m = parse_model(header_only("  requires " + f + "\n"), "h.coll");
    return expr_to_string(*m.header.requires_);
  };
  CHECK(show("(p AND (p - 1)) = 0") == "(p AND (p - 1)) = 0");
  CHECK(show("p = 2^d and source = 0") == "p = 2 ^ d and source = 0");
  CHECK(show("p - (1 - 2) = 2 ^ 3 ^ 2") == "p - (1 - 2) = 2 ^ 3 ^ 2");
  CHECK(show("(2 ^ 3) ^ 2 > -p") == "(2 ^ 3) ^ 2 > -p");
  CHECK(show("not (p = 1 or p = 2)") == "not (p = 1 or p = 2)");
  CHECK(show("(if p = 1 then 2 else 3) * min(p, 2) > 0") ==
        "(if p = 1 then 2 else 3) * min(p, 2) > 0");
}

TEST_CASE("a refused run names the precondition that fails", "[lang][claims]") {
  Model m = parse_model_file(kRoot + "/models/broadcast_hypercube.coll");
  RunOptions o;
  o.root = 1;
  try {
    run_model(m, Topology::parse("hypercube:3"), o);
    FAIL("expected a UsageError");
  } catch (const UsageError& e) {
    std::string w = e.what();
    CHECK(w.find("requires source = 0, which does not hold on hypercube:3 (source = 1)") !=
          std::string::npos);
    CHECK(w.find("broadcast_hypercube.coll:8:26:") != std::string::npos);
  }
  o.root = 0;
  CHECK_NOTHROW(run_model(m, Topology::parse("hypercube:3"), o));
  // The first conjunct that is false is the one named, with the values it uses.
  Model r =
      parse_model(header_only("  requires p >= 2 and (p AND (p - 1)) = 0 and p <= 4\n"), "r.coll");
  CHECK_THROWS_WITH(run_model(r, Topology::parse("ring:6"), RunOptions{}),
                    "r.coll:6:24: model 'h' requires (p AND (p - 1)) = 0, which does not hold on "
                    "ring:6 (p = 6)");
  CHECK_THROWS_WITH(
      run_model(r, Topology::parse("ring:8"), RunOptions{}),
      "r.coll:6:47: model 'h' requires p <= 4, which does not hold on ring:8 (p = 8)");
}

TEST_CASE("option --source on a collective without a root is a usage error", "[lang][claims]") {
  RunCommandOptions ro;
  ro.model = "allreduce_star";
  ro.models_dir = kRoot + "/models";
  ro.source_given = true;
  ro.quiet = true;
  std::ostringstream out, err;
  CHECK_THROWS_WITH(run_run_command(ro, out, err),
                    Catch::Contains("--source: model 'allreduce_star' is a allreduce collective, "
                                    "which has no root"));
  ro.model = "broadcast_hypercube";  // rooted: accepted
  CHECK(run_run_command(ro, out, err) == 0);

  VerifyOptions vo;
  vo.targets = {"allreduce_star"};
  vo.models_dir = kRoot + "/models";
  vo.source = "1";
  vo.quiet = true;
  CHECK_THROWS_WITH(verify(vo, nullptr, err),
                    Catch::Contains("--source: no model selected has a root"));
  vo.targets = {"broadcast_hypercube_general"};
  vo.topologies = {"hypercube:2"};
  VerifyReport rep = verify(vo, nullptr, err);
  CHECK_FALSE(rep.runs.empty());
}

// ---- limits: no crash on any model ----

namespace {
std::string reproducer(const std::string& name) {
  std::ifstream in(kRoot + "/../shared/data/reproducers/" + name, std::ios::binary);
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
std::string with_assignment(const std::string& rhs) {
  return "model t\n  collective allreduce\n  topology ring\n  input x\n  output x\n"
         "procedure P\nbegin\n  k := " +
         rhs + ";\nend P\n";
}
std::string repeat(const std::string& s, std::size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}
}  // namespace

TEST_CASE("deep nesting is refused with its position, never a crash", "[lang][limits]") {
  CHECK(load_error(reproducer("stack-overflow-parens-10000.coll"), "parens.coll") ==
        "parens.coll:13:209: error: nested too deeply: more than 200 levels of parentheses, "
        "unary operators or blocks");
  // A flat sum of 20,000 terms builds a tree 20,000 deep without parser recursion.
  CHECK(load_error(reproducer("stack-overflow-flat-sum-20000.coll"), "sum.coll") ==
        "sum.coll:13:2009: error: expression too deep: more than 1000 nested operations (split it "
        "over several assignments)");
  CHECK(load_error(with_assignment(repeat("-", 100000) + "1"))
            .rfind("m.coll:8:206: error: nested too deeply", 0) == 0);
  CHECK(load_error(with_assignment(repeat("2^", 50000) + "1"))
            .rfind("m.coll:8:405: error: nested too deeply", 0) == 0);
  CHECK(load_error(with_assignment(repeat("not ", 50000) + "1"))
            .rfind("m.coll:8:800: error: nested too deeply", 0) == 0);
  CHECK(load_error(with_assignment(repeat("NOT ", 50000) + "1")).find("nested too deeply") !=
        std::string::npos);
  CHECK(load_error(with_assignment(repeat("min(1, ", 50000) + "1")).find("nested too deeply") !=
        std::string::npos);
  CHECK(load_error(with_assignment("y" + repeat("[0]", 5000))).find("expression too deep") !=
        std::string::npos);
  CHECK(load_error(header_only("  steps " + repeat("(", 10000) + "1" + repeat(")", 10000) + "\n"))
            .find("nested too deeply") != std::string::npos);
  std::string ifs = repeat("if p > 0 then\n", 5000) + "k := 1\n" + repeat("endif\n", 5000);
  CHECK(load_error("model t\n  collective allreduce\n  topology ring\n  input x\n  output x\n"
                   "procedure P\nbegin\n" +
                   ifs + "end P\n")
            .find("nested too deeply") != std::string::npos);
}

TEST_CASE("nesting and sums within the limits parse and evaluate", "[lang][limits]") {
  // 150 levels of parentheses, a 999-term sum, 150 minus signs.
  std::string parens = repeat("(", 150) + "1" + repeat(")", 150);
  CHECK(load_error(with_assignment(parens)) == "");
  std::string sum = "1" + repeat("+1", 998);
  Model m = parse_model(header_only("  steps " + sum + " - " + parens + "\n"), "s.coll");
  CHECK(eval_header_expr(*m.header.steps, {}, "'steps'") == 998);
  CHECK(load_error(with_assignment(repeat("-", 150) + "1")) == "");
  // The executor evaluates a deep sum correctly: the broadcast happens only if it is 999.
  std::string text =
      "model t\n  collective broadcast\n  topology ring\n  input x\n  output x\n"
      "procedure P\nbegin\n  if " +
      sum +
      " = 999 then\n    if my_id = 0 then send x to 1 else receive x from 0 endif\n"
      "  endif\nend P\n";
  Model b = parse_model(text, "b.coll");
  Trace t = run_model(b, Topology::parse("line:2"), RunOptions{});
  REQUIRE(t.failure.kind == RunFailure::Kind::None);
  CHECK(t.transfers.size() == 1);
  CHECK(named(check_trace(t, CheckOptions{}), "postcondition").verdict == Verdict::Pass);
}

TEST_CASE("integer literals: every 64-bit value, and longer ones shown whole", "[lang][limits]") {
  Model m = parse_model(header_only("  steps 9223372036854775807\n"), "n.coll");
  CHECK(m.header.steps->value == 9223372036854775807LL);
  CHECK(parse_model(header_only("  steps 0000000000000000000000001\n"), "n.coll")
            .header.steps->value == 1);
  CHECK(load_error(header_only("  steps 9223372036854775808\n")) ==
        "m.coll:6:9: error: number too large: 9223372036854775808 (the largest is "
        "9223372036854775807)");
  std::string big = repeat("12345", 20);  // 100 digits
  CHECK(load_error(header_only("  steps " + big + "\n")) ==
        "m.coll:6:9: error: number too large: " + big.substr(0, 40) +
            "... (100 digits) (the largest is 9223372036854775807)");
}

TEST_CASE("control bytes and NUL are never echoed raw in errors", "[lang][limits]") {
  std::string nul = std::string(
                        "model t\n  collective allreduce\n  input x\n  output x\n"
                        "procedure P\nbegin\n  k := 1 ") +
                    std::string(1, '\0') + " 2;\nend P\n";
  std::string e = load_error(nul);
  CHECK(e == "m.coll:7:10: error: unexpected character: '\\x00'");
  e = load_error(
      "model t\n  collective allreduce\n  input x\n  output x\nprocedure P\nbegin\n"
      "  k := 1 \x1b 2;\nend P\n");
  CHECK(e == "m.coll:7:10: error: unexpected character: '\\x1b'");
  e = load_error("model \"a\x01\x7f\xff\xc3\xa9\" \n");
  CHECK(e ==
        "m.coll:1:7: error: expected the model's name after 'model', found string "
        "\"a\\x01\\x7f\\xff\xc3\xa9\"");
  CHECK_FALSE(has_raw_control_byte(e));
  CHECK(printable(std::string("ok\ttab\n\0", 8)) == "ok\\x09tab\\x0a\\x00");
}

TEST_CASE("model files above 16 MiB are refused before parsing", "[lang][limits]") {
  fs::path f = fs::temp_directory_path() / "collv_lang_big.coll";
  {
    std::ofstream out(f, std::ios::binary);
    std::string line(1023, '#');
    line += '\n';
    for (int i = 0; i < 16 * 1024 + 1; ++i) out << line;
  }
  CHECK_THROWS_WITH(parse_model_file(f.string()),
                    Catch::Contains("has 16778240 bytes; the limit is 16 MiB"));
  CHECK_THROWS_AS(parse_model(std::string(kMaxModelBytes + 1, '#'), "x.coll"), UsageError);
  fs::remove(f);
}

namespace {
// gen_long_model.py's model: a straight line of n integer assignments.
std::string long_model(std::size_t n) {
  std::string s = R"(model t
  collective allgather
  topology   ring
  input      my_msg
  output     result
  steps      p - 1
procedure P(my_id, my_msg, p, result)
begin
    result := my_msg;
)";
  s.reserve(s.size() + n * 20);
  for (std::size_t i = 0; i < n; ++i)
    s += "    k" + std::to_string(i % 1000) + " := " + std::to_string(i) + ";\n";
  return s + "end P\n";
}
double seconds_to_parse_and_run(std::size_t n) {
  auto t0 = std::chrono::steady_clock::now();
  Model m = parse_model(long_model(n), "long.coll");
  Trace t = run_model(m, Topology::parse("ring:4"), RunOptions{});
  CHECK(t.failure.kind == RunFailure::Kind::None);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

TEST_CASE("parsing and running are linear in the program's length", "[lang][limits]") {
  // 150,000 statements: about a second; the quadratic scheduler took over 30 s.
  double s = seconds_to_parse_and_run(150000);
  INFO(s << " s");
  CHECK(s < 15.0);
}

TEST_CASE("a 600,000-statement model parses and runs", "[lang][limits][slow]") {
  double s = seconds_to_parse_and_run(600000);
  INFO(s << " s");
  CHECK(s < 60.0);
}

TEST_CASE("data types propagate through long assignment chains in linear time", "[lang][limits]") {
  // a0 := a1; a1 := a2; ...; a(n-1) := x: each pass of a fixpoint would learn one more variable.
  const int n = 30000;
  std::string body;
  for (int i = 0; i < n - 1; ++i)
    body += "  a" + std::to_string(i) + " := a" + std::to_string(i + 1) + ";\n";
  body += "  a" + std::to_string(n - 1) + " := x;\n";
  auto t0 = std::chrono::steady_clock::now();
  Model m = parse_model(
      "model t\n  collective allreduce\n  topology ring\n  input x\n  output x\n"
      "procedure P\nbegin\n" +
          body + "end P\n",
      "chain.coll");
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (std::size_t i = 0; i < m.var_names.size(); ++i) CHECK(m.var_types[i] == Type::Data);
  CHECK(s < 10.0);
}

// ---- Integer semantics that cannot trap or wrap (issue 26) ----

namespace {

// A model on ring:4 whose procedure is `body` (x is the node's input buffer).
Trace run_body(const std::string& body, RunOptions o = RunOptions{}) {
  std::string text =
      "model t\n  collective allgather\n  topology ring\n  layout any\n  input x\n  output x\n"
      "procedure P(my_id, x)\nbegin\n" +
      body + "\nend P\n";
  Model m = parse_model(text, "t.coll");
  return run_model(m, Topology::parse("ring:4"), o);
}

// The run's runtime error message ("" when the run finished).
std::string run_error(const std::string& body) {
  Trace t = run_body(body);
  if (t.failure.kind == RunFailure::Kind::None) return "";
  CHECK(t.failure.kind == RunFailure::Kind::RuntimeError);
  return t.failure.message;
}

// `cond` must hold at every node, or the run stops with a division by zero.
std::string holds(const std::string& cond) {
  return "if not (" + cond + ") then z := 1 div 0; endif;";
}

const std::string kMin = "(0 - 9223372036854775807 - 1)";

}  // namespace

TEST_CASE("every integer operator reports overflow at its position, never traps or wraps",
          "[lang][limits][int]") {
  struct Case {
    std::string fires, twin, says;
  };
  std::vector<Case> cases = {
      {"y := " + kMin + " div (0 - 1);", "y := " + kMin + " div 1;", "integer overflow"},
      {"y := " + kMin + " / (0 - 1);", "y := (0 - 9223372036854775807) / (0 - 1);",
       "integer overflow"},
      {"y := " + kMin + "; z := -y;", "y := 0 - 9223372036854775807; z := -y;",
       "integer overflow: -(-9223372036854775808)"},
      {"y := 9223372036854775807 + 1;", "y := 9223372036854775806 + 1;",
       "integer overflow: 9223372036854775807 + 1"},
      {"y := " + kMin + " - 1;", "y := " + kMin + " + 1;", "integer overflow"},
      {"y := 4611686018427387904 * 2;", "y := 4611686018427387903 * 2;", "integer overflow"},
      {"y := 2 ^ 63;", "y := 2 ^ 62;", "2^63 overflows"},
      {"y := 3 ^ 9223372036854775807;", "y := 1 ^ 9223372036854775807;", "overflows"},
  };
  for (const auto& c : cases) {
    INFO(c.fires);
    std::string err = run_error(c.fires);
    CHECK(err.find("t.coll:9:") == 0);
    CHECK(err.find(c.says) != std::string::npos);
    INFO(c.twin);
    CHECK(run_error(c.twin) == "");
  }
  // Defined results at the edges: the most negative value, mod by -1 (INT64_MIN % -1 traps in
  // C++), powers of 0, 1 and -1 with any exponent (decided at once), (-2)^63.
  CHECK(run_error("y := " + kMin + " mod (0 - 1); " + holds("y = 0")) == "");
  CHECK(run_error("y := " + kMin + " mod " + kMin + "; " + holds("y = 0")) == "");
  CHECK(run_error("y := (0 - 5) mod " + kMin + "; " + holds("y = 9223372036854775803")) == "");
  CHECK(run_error("y := (0 - 1) ^ 9223372036854775807; " + holds("y = 0 - 1")) == "");
  CHECK(run_error("y := 0 ^ 9223372036854775807; " + holds("y = 0")) == "");
  CHECK(run_error("y := (0 - 2) ^ 63; " + holds("y = " + kMin)) == "");
  // The checker of the twins can fire.
  CHECK(run_error("y := 3; " + holds("y = 4")) != "");
}

TEST_CASE("sqrt is exact and quick on every 64-bit number", "[lang][limits][int]") {
  auto start = std::chrono::steady_clock::now();
  CHECK(run_error("y := sqrt(9223372036854775807); " + holds("y = 3037000499")) == "");
  CHECK(run_error("y := sqrt(9223372030926249001); " + holds("y = 3037000499")) == "");
  CHECK(run_error("y := sqrt(9223372030926249000); " + holds("y = 3037000498")) == "");
  CHECK(run_error("y := sqrt(0 - 1);").find("sqrt(-1) is undefined") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("for loops reach INT64_MAX and INT64_MIN without overflowing their counter",
          "[lang][limits][int]") {
  CHECK(run_error("c := 0; for i := 9223372036854775806 to 9223372036854775807 do c := c + 1; "
                  "endfor; " +
                  holds("c = 2 and i = 9223372036854775807")) == "");
  CHECK(run_error("c := 0; for i := " + kMin + " + 1 downto " + kMin + " do c := c + 1; endfor; " +
                  holds("c = 2 and i = " + kMin)) == "");
  // Away from the edge the counter still ends one past the limit.
  CHECK(run_error("for i := 1 to 3 do c := i; endfor; " + holds("i = 4")) == "");
  CHECK(run_error("for i := 1 to 3 do c := i; endfor; " + holds("i = 3")) != "");
}

TEST_CASE("a slice at INT64_MIN is an error, not undefined behaviour", "[lang][limits][int]") {
  CHECK(run_error("y := x[" + kMin + " .. 0];")
            .find("slice [-9223372036854775808 .. 0] is out "
                  "of range") != std::string::npos);
  CHECK(run_error("y := x[" + kMin + " .. " + kMin + " - 1];") != "");  // overflow in the bound
  CHECK(run_error("y := x[5 .. 4];") == "");                            // the empty slice
}

TEST_CASE("a loop that makes arrays for ever stops at the operation limit: arrays cost work",
          "[lang][limits][int]") {
  auto start = std::chrono::steady_clock::now();
  Trace t = run_body("while 1 = 1 do array a[1048576]; endwhile");
  CHECK(t.failure.kind == RunFailure::Kind::OpLimit);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  // Three arrays of 2^18 elements are within 1,000,000 operations per node; the same loop with
  // a lower --max-ops is not.
  const std::string three = "for k := 1 to 3 do array a[262144]; endfor";
  CHECK(run_body(three).failure.kind == RunFailure::Kind::None);
  RunOptions o;
  o.max_ops_per_node = 500000;
  CHECK(run_body(three, o).failure.kind == RunFailure::Kind::OpLimit);
}

TEST_CASE("header formulas are exact: integers and rationals, never floating point",
          "[lang][claims][int]") {
  CHECK(eval_steps("2^70 mod 3", {}) == 1);  // double arithmetic gave 0
  CHECK(eval_steps("(2^70 + 1) - 2^70", {}) == 1);
  CHECK(eval_steps("2^64 div 3 - 6148914691236517200", {}) == 5);
  CHECK(eval_steps("7 / 2 * 2", {}) == 7);
  CHECK(eval_steps("1 / 3 + 1 / 3 + 1 / 3", {}) == 1);
  CHECK(eval_steps("2^(0 - 2)", {}) == 0.25);
  CHECK(eval_steps("(0 - 1)^(2^62)", {}) == 1);
  CHECK(eval_steps("log2(2^80)", {}) == 80);
  CHECK(eval_steps("floor(log2(2^60 + 1))", {}) == 60);
  CHECK(eval_steps("ceil(log2(2^60 + 1))", {}) == 61);  // double: log2(2^60 + 1) is 60.0
  CHECK(eval_steps("clog2(2^60 + 1)", {}) == 61);
  CHECK(eval_steps("ilog2(2^60 - 1)", {}) == 59);
  CHECK(eval_steps("sqrt(2^100)", {}) == 1125899906842624.0);
  CHECK(eval_steps("floor(sqrt(2^61 - 1))", {}) == 1518500249);
  CHECK(eval_steps("if log2(6) < 3 then 1 else 2", {}) == 1);
  CHECK(eval_steps("sum(i, 0, 999999, i)", {}) == 499999500000.0);
  CHECK(eval_steps("2^999 / 2^998", {}) == 2);
  // Too large, undefined: errors at the operation, never inf or nan.
  CHECK(eval_error("2^5000", {}).find("h.coll:6:10: error: 'steps': 2 ^ 5000 is too large") == 0);
  CHECK(eval_error("2^(2^62)", {}).find("too large for a header formula") != std::string::npos);
  CHECK(eval_error("2^999 * 2^999", {}).find("too large") != std::string::npos);
  CHECK(eval_error("0^(0 - 1)", {}).find("is undefined") != std::string::npos);
  CHECK(eval_error("(0 - 8)^(1/3)", {}).find("is undefined") != std::string::npos);
  CHECK(eval_error("popcount(2^64)", {}).find("whole numbers from -2^63") != std::string::npos);
  CHECK(eval_error("2^999", {}) == "");
}

TEST_CASE("exact header claims decide runs: steps 2^70 mod 3 is 1, a huge cost prints as a number",
          "[lang][claims][int]") {
  Model m = parse_model(header_only("  steps 2^70 mod 3\n  cost 2^65 * ts\n"), "h.coll");
  Trace t = run_model(m, Topology::parse("ring:4"), RunOptions{});
  REQUIRE(t.claimed_steps);
  CHECK(*t.claimed_steps == 1);
  auto rs = check_trace(t, CheckOptions{});
  CHECK(named(rs, "steps").verdict == Verdict::Fail);  // the run takes 0 steps
  const auto& cost = named(rs, "cost");
  REQUIRE(cost.verdict == Verdict::Fail);
  CHECK(cost.violations.at(0).message ==
        "the run costs 0 ts + 0 tw*m; the model claims 3.689e+19 ts + 0 tw*m");
  // The twin: 2^70 mod 3 - 1 = 0 steps, and cost 0, hold.
  Model ok =
      parse_model(header_only("  steps 2^70 mod 3 - 1\n  cost (2^65 - 2^65) * ts\n"), "h.coll");
  auto rs2 = check_trace(run_model(ok, Topology::parse("ring:4"), RunOptions{}), CheckOptions{});
  CHECK(named(rs2, "steps").verdict == Verdict::Pass);
  CHECK(named(rs2, "cost").verdict == Verdict::Pass);
  // A bound beyond 2^63 holds.
  Model bound = parse_model(header_only("  steps at most 2^70\n"), "h.coll");
  auto rs3 = check_trace(run_model(bound, Topology::parse("ring:4"), RunOptions{}), CheckOptions{});
  CHECK(named(rs3, "steps").verdict == Verdict::Pass);
}
