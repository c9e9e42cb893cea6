// JSON inputs read one way everywhere (docs/formats.md, "JSON inputs"): a key given twice and
// nesting deeper than collv reads are refused with their JSON path, whole numbers follow one
// rule, messages that quote input are cut, and a schedule file's `final` that names a node twice
// is judged. Each rule with a file it refuses (or fails) and its correct twin.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "check/checks.hpp"
#include "cli.hpp"
#include "exec/trace.hpp"
#include "import/import.hpp"
#include "topology/topology.hpp"
#include "util/error.hpp"
#include "util/json_read.hpp"

using namespace collv;
using nlohmann::json;

namespace {

// The error `parse_json_input` gives for `text`, or "no error".
std::string parse_error(const std::string& text) {
  try {
    parse_json_input(text, "s.json");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

// A correct allgather on ring:3 (each node forwards what it received), as text, with `extra`
// spliced into the first transfer and `top` into the top level.
std::string ring3(const std::string& extra = "", const std::string& top = "") {
  return R"({"collective": "allgather", "topology": "ring:3", "domain": "exact",)" + top +
         R"( "transfers": [
    {"step": 1, "src": 0, "dst": 1, "items": ["x0"])" +
         extra + R"(},
    {"step": 1, "src": 1, "dst": 2, "items": ["x1"]},
    {"step": 1, "src": 2, "dst": 0, "items": ["x2"]},
    {"step": 2, "src": 0, "dst": 1, "items": ["x2"]},
    {"step": 2, "src": 1, "dst": 2, "items": ["x0"]},
    {"step": 2, "src": 2, "dst": 0, "items": ["x1"]}],
  "final": [{"node": 0, "output": ["x0", "x1", "x2"]},
            {"node": 1, "output": ["x0", "x1", "x2"]},
            {"node": 2, "output": ["x0", "x1", "x2"]}]})";
}

std::string write_temp(const std::string& text, const std::string& ext = ".json") {
  std::string path = test::unique_temp("collv_strict") + ext;
  std::ofstream(path) << text;
  return path;
}

// The checks of a Trace file's text, by name: verdict.
std::map<std::string, Verdict> judged(const std::string& text) {
  Trace t = trace_from_json(parse_json_input(text, "s.json"), "s.json");
  std::map<std::string, Verdict> out;
  for (const auto& r : check_trace(t, {})) out[r.name] = r.verdict;
  return out;
}

}  // namespace

TEST_CASE("JSON inputs: a key given twice is refused with its JSON path", "[trace][strict]") {
  // At the top level.
  std::string e = parse_error(R"({"collective": "allgather",
 "collective": "allreduce"})");
  CHECK(e.find("s.json:2:13: $: the key \"collective\" is given twice") != std::string::npos);
  // Inside transfers[3].
  e = parse_error(R"({"transfers": [{}, {}, {}, {"route": [0, 1], "src": 0, "route": [0]}]})");
  CHECK(e.find("$.transfers[3]: the key \"route\" is given twice") != std::string::npos);
  // Deeper: the path counts array elements of every kind (numbers, objects, arrays).
  e = parse_error(R"({"a": [1, [2], {"b": {"c": 1, "c": 2}}]})");
  CHECK(e.find("$.a[2].b: the key \"c\"") != std::string::npos);
  // A key that is not an identifier is quoted in the path.
  e = parse_error(R"({"x y": {"k": 1, "k": 1}})");
  CHECK(e.find("$[\"x y\"]: the key \"k\"") != std::string::npos);
  // The same keys in different objects are fine, and the value is the one written.
  json j = parse_json_input(R"({"a": {"k": 1}, "b": {"k": 2}, "k": [3]})", "s.json");
  CHECK(j["b"]["k"] == 2);
  CHECK(j["k"][0] == 3);

  // Through every reader: a Trace file (exit 2 naming the path) and its correct twin (exit 0).
  std::string out;
  std::string twice = write_temp(ring3(R"(, "src": 0)"));
  CHECK(test::run_cli("verify " + twice, out) == 2);
  CHECK(out.find("$.transfers[0]: the key \"src\" is given twice") != std::string::npos);
  std::string ok = write_temp(ring3());
  CHECK(test::run_cli("verify " + ok, out) == 0);
  std::string top = write_temp(ring3("", R"( "collective": "allreduce",)"));
  CHECK(test::run_cli("verify " + top, out) == 2);
  CHECK(out.find("$: the key \"collective\" is given twice") != std::string::npos);
  for (const auto& p : {twice, ok, top}) std::remove(p.c_str());
  // An SCCL/msccl file.
  try {
    import_msccl_json(R"({"msccl_type": "algorithm", "msccl_type": "algorithm"})", "a.json");
    FAIL("no error");
  } catch (const UsageError& e2) {
    CHECK(std::string(e2.what()).find("$: the key \"msccl_type\" is given twice") !=
          std::string::npos);
  }
  // A topology file.
  std::string topo =
      write_temp(R"({"processors": 2, "links": [{"a": 0, "b": 1}], "processors": 3})");
  CHECK_THROWS_WITH(Topology::parse("file:" + topo),
                    Catch::Contains("$: the key \"processors\" is given twice"));
  std::remove(topo.c_str());
}

TEST_CASE("JSON inputs: nesting deeper than 64 is refused before anything recurses",
          "[trace][strict]") {
  auto nested = [](std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  // 64 levels are read; 65 are not, and the message gives the depth the file reaches and where.
  CHECK(parse_error("{\"a\": " + nested(63) + "}") == "no error");
  std::string e = parse_error("{\"a\": " + nested(64) + "}");
  CHECK(e.find("nested 65 deep; collv reads JSON nested at most 64 deep") != std::string::npos);
  CHECK(e.find("s.json:1:70: $.a[0][0]") != std::string::npos);
  e = parse_error("{\"a\": " + nested(100000) + "}");
  CHECK(e.find("nested 100001 deep") != std::string::npos);
  CHECK(e.size() < 600);  // the path is cut, not 100,000 brackets
  // Text that is not JSON after the deep part still reports the depth.
  CHECK(parse_error("{\"a\": " + std::string(1000, '[')).find("nested 1001 deep") !=
        std::string::npos);

  // The Trace file of turn4-trace01 in small: transfers[0].route nested 100,000 deep kills
  // nothing; verify, export and render refuse it (exit 2) with the depth and path.
  std::string deep = write_temp(ring3(", \"route\": " + nested(100000)));
  std::string out;
  for (const std::string cmd :
       {"verify " + deep, "export " + deep + " --msccl-xml " + deep + ".xml",
        "render --trace " + deep + " -o " + deep + ".dot"}) {
    INFO(cmd);
    CHECK(test::run_cli(cmd, out, "", 60) == 2);
    CHECK(out.find("$.transfers[0].route[0][0]") != std::string::npos);
    CHECK(out.find("nested 100003 deep") != std::string::npos);
    CHECK(out.size() < 2000);
  }
  // A route 64 deep is read, and refused as not the topology's route, its text cut.
  std::string shallow = write_temp(ring3(", \"route\": " + nested(60)));
  CHECK(test::run_cli("verify " + shallow, out) == 2);
  CHECK(out.find("is not the route of 0 -> 1") != std::string::npos);
  for (const auto& p : {deep, shallow}) std::remove(p.c_str());
  // A long flat route is quoted cut to 200 bytes.
  json many = json::array();
  for (int k = 0; k < 100000; ++k) many.push_back(k % 3);
  std::string flat = write_temp(ring3(", \"route\": " + many.dump()));
  CHECK(test::run_cli("verify " + flat, out) == 2);
  CHECK(out.find("[0,1,2,0,1,2") != std::string::npos);
  CHECK(out.find("... is not the route") != std::string::npos);
  CHECK(out.size() < 1500);  // the report's table and the error, the route cut to 200 bytes
  std::remove(flat.c_str());
  CHECK(json_excerpt(many).size() <= kMaxQuotedBytes + 3);
}

TEST_CASE("JSON inputs: whole numbers read one way in every reader", "[trace][strict]") {
  // json_whole: 3 and 3.0 are 3; 3.5, "3", -1, 1e300 are not whole numbers in range.
  CHECK(json_whole(json(3), 0, 10) == 3);
  CHECK(json_whole(json(3.0), 0, 10) == 3);
  CHECK(json_whole(json(-2.0), -5, 10) == -2);
  CHECK(!json_whole(json(3.5), 0, 10));
  CHECK(!json_whole(json("3"), 0, 10));
  CHECK(!json_whole(json(11), 0, 10));
  CHECK(!json_whole(json(1e300), 0, INT64_MAX));
  CHECK(json_whole_unsigned(json(1e19), UINT64_MAX) == 10000000000000000000ull);
  CHECK(!json_whole_unsigned(json(-1), UINT64_MAX));
  CHECK(!json_whole_unsigned(json(std::nan("")), UINT64_MAX));

  // words_per_message 1.0 is 1, as steps 3.0 is 3: both read, and judged.
  CHECK(judged(ring3("", R"( "words_per_message": 1.0, "steps": 2.0,)"))["cost"] == Verdict::Pass);
  CHECK(judged(ring3("", R"( "steps": 3.0,)"))["steps"] == Verdict::Fail);
  // A transfer's step, src and dst too.
  CHECK(judged(ring3().replace(ring3().find("\"step\": 1"), 9, "\"step\": 1.0"))["dataflow"] ==
        Verdict::Pass);
  // A fraction is refused wherever a whole number is read.
  for (const char* top : {R"( "words_per_message": 1.5,)", R"( "steps": 2.5,)"}) {
    INFO(top);
    CHECK_THROWS_WITH(judged(ring3("", top)), Catch::Contains("expected a whole number"));
  }
  CHECK_THROWS_WITH(judged(ring3(R"(, "words": 0.5)")),
                    Catch::Contains("transfers[0].words: expected a whole number"));
}

TEST_CASE("a schedule file's final that names a node twice fails postcondition",
          "[trace][strict]") {
  std::string once = ring3();
  CHECK(judged(once)["postcondition"] == Verdict::Pass);
  // A second entry for node 1, with another output: a failed check, not an error.
  std::string twice = once;
  twice.replace(twice.rfind("]}"), 2, R"(, {"node": 1, "output": ["x0"]}]})");
  CHECK(judged(twice)["postcondition"] == Verdict::Fail);
  Trace t = trace_from_json(parse_json_input(twice, "s.json"), "s.json");
  std::string msg;
  for (const auto& r : check_trace(t, {}))
    if (r.name == "postcondition")
      for (const auto& v : r.violations) msg += v.message;
  CHECK(msg.find("final[3]: node 1 is listed again in \"final\" (first at final[1]) with "
                 "another output") != std::string::npos);
  // The same output twice fails too: a node ends with one output.
  std::string same = once;
  same.replace(same.rfind("]}"), 2, R"(, {"node": 2, "output": ["x0", "x1", "x2"]}]})");
  CHECK(judged(same)["postcondition"] == Verdict::Fail);
  // verify exits 1, not 2, and the SMT engine judges the claim as the executor does.
  std::string path = write_temp(twice), out;
  CHECK(test::run_cli("verify " + path, out) == 1);
  CHECK(test::run_cli("verify " + path + " --engine both", out) == 1);
  CHECK(out.find("ENGINES DISAGREE") == std::string::npos);
  CHECK(out.find("final[3]: node 1 is listed again") != std::string::npos);
  std::remove(path.c_str());
}
