// SCCL/msccl algorithm JSON, read as msccl-tools reads it: each rule with a correct file that
// passes and a wrong twin that fails (or is refused). The files are written here, in the shape
// msccl-tools' serializer gives them, so the tests need no shared data.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "import/import.hpp"
#include "import_util.hpp"
#include "util/error.hpp"

using namespace collv;
using nlohmann::json;

namespace {

using test::results;

std::set<std::string> failing(const json& j) {
  return test::failing(import_msccl_json(j.dump(), "t.json"));
}

std::string messages(const json& j, const std::string& check) {
  std::string all;
  for (const auto& r : check_imported(import_msccl_json(j.dump(), "t.json"), CheckOptions{}))
    if (r.name == check)
      for (const auto& v : r.violations) all += v.message + "\n";
  return all;
}

json chunk(std::vector<int> pre, std::vector<int> post, int addr) {
  return {{"msccl_type", "chunk"}, {"pre", pre}, {"post", post}, {"addr", addr}};
}

json step(json sends, int rounds = 1) {
  return {{"msccl_type", "step"}, {"rounds", rounds}, {"sends", sends}};
}

// links[dst][src] of a complete or ring network on n nodes.
json links(int n, bool ring) {
  json l = json::array();
  for (int d = 0; d < n; ++d) {
    json row = json::array();
    for (int s = 0; s < n; ++s)
      row.push_back(d != s && (!ring || (s + 1) % n == d || (d + 1) % n == s) ? 1 : 0);
    l.push_back(row);
  }
  return l;
}

// An algorithm file as msccl-tools writes it; input_map/output_map are derived from the chunks
// (addresses of the chunks each rank holds at the start / must hold at the end).
// chunks and steps as vectors: a one-element braced list {step(...)} is then a list of one step
// with every compiler (as a json parameter, clang reads it as a copy of the step, CWG 2137).
json algorithm(const std::string& coll_name, const std::string& runtime, int n,
               const std::vector<json>& chunks, const std::vector<json>& steps, json topo_links,
               int k = 1, json switches = json::array()) {
  std::map<int, std::set<int>> in, out;
  for (const auto& c : chunks)
    for (int i = 0; i < k; ++i) {
      int a = c["addr"].get<int>() * k + i;
      for (int r : c["pre"]) in[r].insert(a);
      for (int r : c["post"]) out[r].insert(a);
    }
  json im = json::object(), om = json::object();
  for (auto& [r, s] : in) im[std::to_string(r)] = std::vector<int>(s.begin(), s.end());
  for (auto& [r, s] : out) om[std::to_string(r)] = std::vector<int>(s.begin(), s.end());
  return {
      {"msccl_type", "algorithm"},
      {"name", coll_name + "-T-steps=" + std::to_string(steps.size())},
      {"instance",
       {{"msccl_type", "instance"},
        {"steps", steps.size()},
        {"extra_rounds", 0},
        {"chunks", k},
        {"pipeline", nullptr},
        {"extra_memory", nullptr},
        {"allow_exchange", false}}},
      {"input_map", im},
      {"output_map", om},
      {"steps", json(steps)},
      {"collective",
       {{"msccl_type", "collective"},
        {"name", coll_name},
        {"nodes", n},
        {"chunks", json(chunks)},
        {"triggers", json::object()},
        {"runtime_name", runtime}}},
      {"topology",
       {{"msccl_type", "topology"}, {"name", "T"}, {"switches", switches}, {"links", topo_links}}}};
}

// Allgather(n=3) on a complete network in two steps.
json allgather3() {
  json chunks = {chunk({0}, {0, 1, 2}, 0), chunk({1}, {0, 1, 2}, 1), chunk({2}, {0, 1, 2}, 2)};
  json steps = {step({{0, 0, 1}, {1, 1, 2}, {2, 2, 0}}), step({{0, 1, 2}, {1, 2, 0}, {2, 0, 1}})};
  return algorithm("Allgather(n=3)", "allgather", 3, chunks, steps, links(3, false));
}

// Reduce(n=4,root=0) on a ring, msccl-tools' definition: every chunk at address 0.
json reduce4() {
  json chunks = {chunk({0}, {0}, 0), chunk({1}, {0}, 0), chunk({2}, {0}, 0), chunk({3}, {0}, 0)};
  json steps = {step({{0, 3, 0}}), step({{0, 2, 1}}), step({{0, 1, 0}})};
  return algorithm("Reduce(n=4,root=0)", "custom", 4, chunks, steps, links(4, true));
}

}  // namespace

TEST_CASE("SCCL JSON: a send moves every chunk the sender holds at its address", "[import][sccl]") {
  json ok = reduce4();
  CHECK(failing(ok).empty());
  ImportedSchedule s = import_msccl_json(ok.dump(), "t.json");
  // Rank 1 forwards x1 + x2 (what it holds at address 0) in step 3; rank 0 ends with the sum.
  REQUIRE(s.trace.final_output[0].size() == 1);
  CHECK(s.trace.domain->describe(s.trace.final_output[0][0]) == "x0.0+x1.0+x2.0+x3.0");
  CHECK(s.trace.final_output[1].empty());
  // Wrong: rank 2's send is dropped, so x2 never reaches the root.
  json lost = ok;
  lost["steps"][1]["sends"] = json::array();
  CHECK(failing(lost).count("postcondition"));
  CHECK(messages(lost, "postcondition").find("rank 0 never gets chunk 2") != std::string::npos);
  // Wrong: rank 3 sends again in step 3, so the root reduces x3 twice.
  json twice = ok;
  twice["steps"][2]["sends"].push_back({0, 3, 0});
  CHECK(failing(twice).count("postcondition"));
  CHECK(messages(twice, "postcondition").find("counted more than once") != std::string::npos);
}

TEST_CASE("SCCL JSON: a send from an address the sender holds nothing at fails dataflow",
          "[import][sccl]") {
  json ok = allgather3();
  CHECK(failing(ok).empty());
  json early = ok;  // rank 0 forwards chunk 1 in step 1, before it has it
  early["steps"][0]["sends"].push_back({1, 0, 2});
  CHECK(failing(early).count("dataflow"));
}

TEST_CASE("SCCL JSON: the file is judged against the collective it names", "[import][sccl]") {
  // Rank 2's chunk reaches nobody, and the file's own post set says so: Allgather(n=3) still
  // asks every rank for it.
  json ok = allgather3();
  json shrunk = ok;
  shrunk["collective"]["chunks"][2]["post"] = {2};
  shrunk["output_map"]["0"] = {0, 1};
  shrunk["output_map"]["1"] = {0, 1};
  shrunk["steps"][0]["sends"] = {{0, 0, 1}, {1, 1, 2}};
  shrunk["steps"][1]["sends"] = {{0, 1, 2}, {1, 2, 0}};
  auto f = failing(shrunk);
  CHECK(f.count("postcondition"));
  CHECK(messages(shrunk, "postcondition").find("is not the one it names") != std::string::npos);
  CHECK(messages(shrunk, "postcondition").find("rank 0 never gets chunk 2") != std::string::npos);
  // The same file as a custom collective is what its sets say: it passes, and says so.
  json custom = shrunk;
  custom["collective"]["name"] = "MyGather";
  custom["collective"]["runtime_name"] = "custom";
  CHECK(failing(custom).empty());
  auto r = results(import_msccl_json(custom.dump(), "t.json"));
  CHECK(r["postcondition"].note.find("not a collective msccl-tools defines") != std::string::npos);
  CHECK(r["final-buffers"].verdict == Verdict::NotChecked);
  // A name whose n is not the file's node count fails.
  json wrong_n = ok;
  wrong_n["collective"]["name"] = "Allgather(n=4)";
  CHECK(failing(wrong_n).count("postcondition"));
  // runtime_name must be msccl-tools' for the named collective (ncclize writes it as `coll`).
  json wrong_rt = ok;
  wrong_rt["collective"]["runtime_name"] = "allreduce";
  CHECK(failing(wrong_rt) == std::set<std::string>{"attributes"});
}

TEST_CASE("SCCL JSON: gather, scatter, scan and reduce-scatter as msccl-tools defines them",
          "[import][sccl]") {
  // Gather(n=3,root=1) on a line 0-1-2: chunks 0 and 2 go to rank 1.
  json line3 = {{0, 1, 0}, {1, 0, 1}, {0, 1, 0}};
  json gather = algorithm("Gather(n=3,root=1)", "custom", 3,
                          {chunk({0}, {1}, 0), chunk({1}, {1}, 1), chunk({2}, {1}, 2)},
                          {step({{0, 0, 1}, {2, 2, 1}})}, line3);
  CHECK(failing(gather).empty());
  json gather_bad = gather;
  gather_bad["steps"][0]["sends"] = {{0, 0, 1}};
  CHECK(failing(gather_bad).count("postcondition"));
  // Scatter(n=3,root=1).
  json scatter = algorithm("Scatter(n=3,root=1)", "custom", 3,
                           {chunk({1}, {0}, 0), chunk({1}, {1}, 1), chunk({1}, {2}, 2)},
                           {step({{0, 1, 0}, {2, 1, 2}})}, line3);
  CHECK(failing(scatter).empty());
  json scatter_bad = scatter;
  scatter_bad["steps"][0]["sends"] = {{0, 1, 0}, {0, 1, 2}};  // rank 2 gets rank 0's block
  CHECK(failing(scatter_bad).count("postcondition"));
  // Scan(n=3) on the line: rank r ends with x0 + .. + xr at address 0.
  json scan = algorithm("Scan(n=3)", "custom", 3,
                        {chunk({0}, {0, 1, 2}, 0), chunk({1}, {1, 2}, 0), chunk({2}, {2}, 0)},
                        {step({{0, 0, 1}}), step({{0, 1, 2}})}, line3);
  CHECK(failing(scan).empty());
  json scan_bad = scan;  // rank 2 also sends back to rank 1: rank 1 ends with x0+x1+x2
  scan_bad["steps"].push_back(step({{0, 2, 1}}));
  scan_bad["instance"]["steps"] = 3;
  CHECK(failing(scan_bad).count("postcondition"));
  CHECK(messages(scan_bad, "postcondition").find("not part of what the collective asks") !=
        std::string::npos);
  // ReduceScatter(n=2): chunk i*2+j starts on rank j at address i and ends reduced on rank i.
  json rs =
      algorithm("ReduceScatter(n=2)", "reduce_scatter", 2,
                {chunk({0}, {0}, 0), chunk({1}, {0}, 0), chunk({0}, {1}, 1), chunk({1}, {1}, 1)},
                {step({{1, 0, 1}, {0, 1, 0}})}, links(2, false));
  CHECK(failing(rs).empty());
  ImportedSchedule s = import_msccl_json(rs.dump(), "t.json");
  CHECK(s.trace.domain->describe(s.trace.final_output[1][0]) == "x0.1+x1.1");
  json rs_bad = rs;  // rank 0 sends its address 0 where rank 1 needs address 1
  rs_bad["steps"][0]["sends"] = {{0, 0, 1}, {0, 1, 0}};
  CHECK(failing(rs_bad).count("postcondition"));
}

TEST_CASE("SCCL JSON: instance.chunks chunks the collective up as msccl-tools does",
          "[import][sccl]") {
  // Allgather(n=2) with 2 chunks per rank: chunk c becomes 2c, 2c+1; address a becomes 2a+j.
  json chunks = {chunk({0}, {0, 1}, 0), chunk({1}, {0, 1}, 1)};
  json ok =
      algorithm("Allgather(n=2)", "allgather", 2, chunks,
                {step({{0, 0, 1}, {1, 0, 1}, {2, 1, 0}, {3, 1, 0}})}, json{{0, 2}, {2, 0}}, 2);
  CHECK(ok["input_map"]["1"] == json({2, 3}));
  CHECK(failing(ok).empty());
  ImportedSchedule s = import_msccl_json(ok.dump(), "t.json");
  CHECK(s.trace.final_output[0].size() == 4);
  json half = ok;  // the second half of rank 1's block never moves
  half["steps"][0]["sends"] = {{0, 0, 1}, {1, 0, 1}, {2, 1, 0}};
  CHECK(failing(half).count("postcondition"));
  // The same sends read without chunk_up name addresses the collective does not have.
  json unchunked = ok;
  unchunked["instance"]["chunks"] = 1;
  auto f = failing(unchunked);
  CHECK(f.count("attributes"));  // input_map/output_map are the chunked addresses
  CHECK(f.count("postcondition"));
}

TEST_CASE("SCCL JSON: output_map is a set, a wrong one fails attributes", "[import][sccl]") {
  json ok = allgather3();
  json shuffled = ok;
  shuffled["output_map"]["1"] = {2, 0, 1, 1};
  CHECK(failing(shuffled).empty());
  json missing = ok;
  missing["output_map"]["1"] = {0, 2};
  CHECK(failing(missing) == std::set<std::string>{"attributes"});
  json wrong_in = ok;
  wrong_in["input_map"]["2"] = {1};
  CHECK(failing(wrong_in) == std::set<std::string>{"attributes"});
}

TEST_CASE("SCCL JSON: topology.switches constraints are judged by links", "[import][sccl]") {
  // HubAndSpoke(n=3): every node sends at most one chunk per round through its switch.
  json sw = json::array();
  for (int v = 0; v < 3; ++v) {
    std::vector<int> others;
    for (int o = 0; o < 3; ++o)
      if (o != v) others.push_back(o);
    sw.push_back(json::array({json::array({v}), others, 1, "node_" + std::to_string(v) + "_out"}));
    sw.push_back(json::array({others, json::array({v}), 1, "node_" + std::to_string(v) + "_in"}));
  }
  json ok = allgather3();
  ok["topology"]["switches"] = sw;
  CHECK(failing(ok).empty());
  json merged = ok;  // both steps in one: each node sends two chunks through its switch
  merged["steps"][0]["sends"].insert(merged["steps"][0]["sends"].end(),
                                     ok["steps"][1]["sends"].begin(),
                                     ok["steps"][1]["sends"].end());
  merged["steps"].erase(1);
  merged["instance"]["steps"] = 1;
  CHECK(failing(merged).count("links"));
  CHECK(messages(merged, "links").find("switch node_0_out") != std::string::npos);
  // Two rounds give the step room for both.
  json two_rounds = merged;
  two_rounds["steps"][0]["rounds"] = 2;
  two_rounds["instance"]["extra_rounds"] = 1;
  auto f = failing(two_rounds);
  CHECK_FALSE(f.count("links"));
  // ... but the rounds must be declared: extra_rounds 0 with a 2-round step fails steps.
  json undeclared = two_rounds;
  undeclared["instance"]["extra_rounds"] = 0;
  CHECK(failing(undeclared).count("steps"));
}

TEST_CASE("SCCL JSON: instance.steps is a claim", "[import][sccl]") {
  json wrong = allgather3();
  wrong["instance"]["steps"] = 1;
  CHECK(failing(wrong) == std::set<std::string>{"steps"});
}

TEST_CASE("SCCL JSON: keys as msccl-tools' loader treats them", "[import][sccl]") {
  // An unknown key is ignored by msccl-tools: a note, not a failure.
  json extra = allgather3();
  extra["collective"]["chunks"][0]["colour"] = "red";
  extra["comment"] = "hi";
  CHECK(failing(extra).empty());
  auto r = results(import_msccl_json(extra.dump(), "t.json"));
  CHECK(r["attributes"].note.find("collective.chunks[0].colour") != std::string::npos);
  CHECK(r["attributes"].note.find("comment") != std::string::npos);
  // A missing key fails to load in msccl-tools (KeyError): an error naming it.
  json no_addr = allgather3();
  no_addr["collective"]["chunks"][1].erase("addr");
  CHECK_THROWS_WITH(import_msccl_json(no_addr.dump(), "t.json"),
                    Catch::Contains("t.json: collective.chunks[1].addr: missing"));
  json no_switches = allgather3();
  no_switches["topology"].erase("switches");
  CHECK_THROWS_WITH(import_msccl_json(no_switches.dump(), "t.json"),
                    Catch::Contains("topology.switches: missing"));
  // An object of another msccl_type is not what the loader builds there.
  json wrong_type = allgather3();
  wrong_type["steps"][0]["msccl_type"] = "chunk";
  CHECK_THROWS_WITH(import_msccl_json(wrong_type.dump(), "t.json"),
                    Catch::Contains("steps[0].msccl_type"));
  // A switch of bandwidth 0 is refused by msccl-tools' Topology.
  json zero = allgather3();
  zero["topology"]["switches"] =
      json::array({json::array({json::array({0}), json::array({1, 2}), 0, "s"})});
  CHECK_THROWS_WITH(import_msccl_json(zero.dump(), "t.json"),
                    Catch::Contains("topology.switches[0][2]"));
}

TEST_CASE("SCCL JSON: a pipelined instance adds the overlapping steps' load", "[import][sccl]") {
  // Broadcast(n=3,root=0) on a line 0-1-2 in two steps, with a switch on rank 0..1 -> 1..2 that
  // carries one chunk per round: each step uses it once.
  json line3 = {{0, 1, 0}, {1, 0, 1}, {0, 1, 0}};
  json ok =
      algorithm("Broadcast(n=3,root=0)", "custom", 3, {chunk({0}, {0, 1, 2}, 0)},
                {step({{0, 0, 1}}), step({{0, 1, 2}})}, line3, 1,
                json::array({json::array({json::array({0, 1}), json::array({1, 2}), 1, "sw"})}));
  CHECK(failing(ok).empty());
  // With pipeline 1, step 1 overlaps step 2 (msccl-tools sums steps s, s+1, ...): two chunks.
  json piped = ok;
  piped["instance"]["pipeline"] = 1;
  CHECK(failing(piped) == std::set<std::string>{"links"});
  CHECK(messages(piped, "links").find("step 1: 2 chunk(s) cross switch sw") != std::string::npos);
  // With pipeline 2 the steps do not overlap.
  json apart = ok;
  apart["instance"]["pipeline"] = 2;
  CHECK(failing(apart).empty());
}

TEST_CASE("SCCL JSON through verify: -s and --collective may not contradict the file",
          "[import][sccl][cli]") {
  json line3 = {{0, 1, 0}, {1, 0, 1}, {0, 1, 0}};
  json gather = algorithm("Gather(n=3,root=1)", "custom", 3,
                          {chunk({0}, {1}, 0), chunk({1}, {1}, 1), chunk({2}, {1}, 2)},
                          {step({{0, 0, 1}, {2, 2, 1}})}, line3);
  std::string f = collv::test::unique_temp("collv_sccl_gather") + ".json";
  {
    std::ofstream out(f);
    out << gather.dump();
  }
  std::string out;
  CHECK(collv::test::run_cli("verify '" + f + "'", out) == 0);
  CHECK(collv::test::run_cli("verify '" + f + "' -s 1 --collective gather", out) == 0);
  CHECK(collv::test::run_cli("verify '" + f + "' -s 2", out) == 2);
  CHECK(out.find("declares root 1, not the --source 2") != std::string::npos);
  CHECK(collv::test::run_cli("verify '" + f + "' --collective scatter", out) == 2);
  CHECK(out.find("declares gather, not the --collective scatter") != std::string::npos);
  std::filesystem::remove(f);
}

TEST_CASE("SCCL JSON: a name that reads as a collective msccl-tools defines is judged as it",
          "[import][sccl][strict]") {
  // Rank 2's chunk reaches nobody, and the file's own post set says so.
  json shrunk = allgather3();
  shrunk["collective"]["chunks"][2]["post"] = {2};
  shrunk["output_map"]["0"] = {0, 1};
  shrunk["output_map"]["1"] = {0, 1};
  shrunk["steps"][0]["sends"] = {{0, 0, 1}, {1, 1, 2}};
  shrunk["steps"][1]["sends"] = {{0, 1, 2}, {1, 2, 0}};
  // Other case, '_' or blanks, no arguments: all read as Allgather(n=3), and fail as it does.
  for (const char* name : {"Allgather(n=3)", "allgather(n=3)", "AllGather(n=3)",
                           "all_gather(n = 3)", "allgather", "ALLGATHER"}) {
    INFO(name);
    json j = shrunk;
    j["collective"]["name"] = name;
    CHECK(failing(j).count("postcondition"));
    CHECK(messages(j, "postcondition").find("rank 0 never gets chunk 2") != std::string::npos);
  }
  // A correct file under such a name passes, and the note says how the name was read.
  json ok = allgather3();
  ok["collective"]["name"] = "AllGather(n=3)";
  CHECK(failing(ok).empty());
  CHECK(results(import_msccl_json(ok.dump(), "t.json"))["postcondition"].note.find(
            "\"AllGather(n=3)\" read as Allgather(n=3)") != std::string::npos);
  // A name msccl-tools does not give, with runtime_name allgather: the runtime runs the file as
  // an allgather, so it is judged as Allgather(n=3), not by its own sets.
  json by_runtime = shrunk;
  by_runtime["collective"]["name"] = "MyRing";
  CHECK(failing(by_runtime).count("postcondition"));
  CHECK(messages(by_runtime, "postcondition").find("rank 0 never gets chunk 2") !=
        std::string::npos);
  // With runtime_name custom it is a custom collective: its sets are the bar (it passes).
  by_runtime["collective"]["runtime_name"] = "custom";
  CHECK(failing(by_runtime).empty());
  // A rooted collective's name without its root is refused with the rule.
  json rootless = reduce4();
  rootless["collective"]["name"] = "reduce";
  CHECK_THROWS_WITH(import_msccl_json(rootless.dump(), "t.json"),
                    Catch::Contains("collective.name: \"reduce\" names msccl-tools' Reduce but "
                                    "not its arguments: msccl-tools writes Reduce(n=N,root=R)"));
  rootless["collective"]["name"] = "reduce(n=4, root=0)";
  CHECK(failing(rootless).empty());
}

TEST_CASE("SCCL JSON: whole numbers as every JSON reader reads them", "[import][sccl][strict]") {
  // 1.0 is 1 (docs/formats.md, "JSON inputs"); 1.5 is refused.
  json j = allgather3();
  j["steps"][0]["sends"][0] = {0.0, 0, 1.0};
  j["instance"]["chunks"] = 1.0;
  CHECK(failing(j).empty());
  j["steps"][0]["sends"][0][0] = 0.5;
  CHECK_THROWS_WITH(import_msccl_json(j.dump(), "t.json"),
                    Catch::Contains("steps[0].sends[0][0]: expected an integer"));
}
