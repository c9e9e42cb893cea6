// Schedules as JSON: what `collv run --json` writes reads back to a Trace the checkers judge the
// same way, and schedules written by hand are judged on their own.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "app/commands.hpp"
#include "app/verify_cmd.hpp"
#include "check/checks.hpp"
#include "check/dataflow.hpp"
#include "cli.hpp"
#include "exec/executor.hpp"

using namespace collv;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

const CheckResult& named(const std::vector<CheckResult>& rs, const std::string& n) {
  for (const auto& r : rs)
    if (r.name == n) return r;
  throw std::runtime_error("no check " + n);
}

Trace run_on(const std::string& model, const std::string& topo, DomainKind d) {
  Model m = parse_model_file(resolve_model_path(model, kRoot + "/models"));
  RunOptions ro;
  ro.domain = d;
  return run_model(m, Topology::parse(topo), ro);
}

// The reader's error for a schedule, or "no error".
std::string read_error(const nlohmann::json& j) {
  try {
    trace_from_json(j, "s.json");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

// `collv verify ARGS FILE` on the schedule j written to a temporary file: the exit code, and the
// output in `out`.
int verify_file(const nlohmann::json& j, std::string& out, const std::string& args = "") {
  std::string path = test::unique_temp("collv_trace") + ".json";
  {
    std::ofstream f(path);
    f << j.dump(1);
  }
  int rc = test::run_cli("verify --trace " + path + " " + args, out);
  std::remove(path.c_str());
  return rc;
}

std::vector<std::string> verdicts(const Trace& t) {
  std::vector<std::string> v;
  for (const auto& c : check_trace(t, {})) v.push_back(c.name + "=" + verdict_name(c.verdict));
  return v;
}

}  // namespace

TEST_CASE("every model's trace survives a JSON round trip with the same verdicts", "[trace]") {
  std::string dir = std::string(COLLV_SOURCE_DIR) + "/models";
  int n = 0;
  for (const auto& f : list_model_files(dir)) {
    Model m = parse_model_file(f);
    // A schedule file carries no per-rank counts: the reader refuses the v-collectives
    // (tests/test_mpi_language.cpp checks the refusal).
    if (collective_is_v(m.header.collective)) continue;
    Topology topo = Topology::parse(default_topology_spec(m));
    if (!model_applies(m, topo, RunOptions{}).value_or(false)) continue;
    for (DomainKind d : {DomainKind::Exact, DomainKind::Ordered}) {
      RunOptions ro;
      ro.domain = d;
      Trace t = run_model(m, topo, ro);
      Trace back = trace_from_json(trace_to_json(t), f);
      INFO(f << " (" << domain_name(d) << ")");
      CHECK(back.transfers.size() == t.transfers.size());
      CHECK(back.steps == t.steps);
      CHECK(back.cost_tw == t.cost_tw);
      auto want = verdicts(t);
      // A barrier read back is judged from its steps' order (a transfer carries what its sender
      // knew before its step): the same verdict. Written files record their steps, cost and
      // message size, claims the steps and cost checks judge: they agree, so those pass.
      CHECK(back.from_file);
      CHECK(back.recorded_steps);
      for (std::size_t k : {8, 9})
        if (want[k] == std::string(kCheckNames[k]) + "=not-checked")
          want[k] = std::string(kCheckNames[k]) + "=pass";
      CHECK(verdicts(back) == want);
      // Items read back are the same values: the same describe() text everywhere.
      for (NodeId v = 0; v < t.final_output.size(); ++v)
        CHECK(buffer_to_string(back, back.final_output[v]) ==
              buffer_to_string(t, t.final_output[v]));
      ++n;
    }
  }
  CHECK(n >= 60);
}

TEST_CASE("a schedule written by hand is judged on its own", "[trace]") {
  // A 2-step all-to-all broadcast on star:3 whose second step goes between non-neighbours.
  auto j = nlohmann::json::parse(R"({
    "collective": "allgather", "topology": "star:3", "domain": "exact",
    "transfers": [
      {"step": 1, "src": 0, "dst": 2, "items": ["x0"]},
      {"step": 1, "src": 2, "dst": 0, "items": ["x2"]},
      {"step": 2, "src": 0, "dst": 3, "items": ["x0"]}
    ],
    "final": [{"node": 0, "output": ["x0", "x2"]}]
  })");
  Trace t = trace_from_json(j, "hand.json");
  CHECK(t.steps == 2);
  auto rs = check_trace(t, {});
  auto get = [&](const char* n) {
    for (const auto& r : rs)
      if (r.name == n) return r;
    throw std::runtime_error(n);
  };
  CHECK(get("route").verdict == Verdict::Fail);  // 123 and 231 are not neighbours
  CHECK(get("single-port").verdict == Verdict::Pass);
  CHECK(get("postcondition").verdict == Verdict::Fail);  // nobody else has everything
}

TEST_CASE("malformed schedule files say where", "[trace]") {
  auto err = [](const char* text) {
    try {
      trace_from_json(nlohmann::json::parse(text), "s.json");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(err(R"({"topology": "ring:4", "domain": "exact", "transfers": []})") ==
        "s.json: top level: missing \"collective\"");
  CHECK(err(R"({"collective": "allgather", "topology": "ring:4", "domain": "exact",
               "transfers": [{"step": 1, "src": 0, "dst": 9, "items": []}]})") ==
        "s.json: transfers[0]: a node id is not a processor of ring:4 (0 .. 3)");
  CHECK(err(R"({"collective": "allgather", "topology": "ring:4", "domain": "exact",
               "transfers": [{"step": 1, "src": 0, "dst": 1, "items": ["x7"]}]})") ==
        "s.json: transfers[0].items[0]: 'x7' names an input that does not exist (p = 4, 1 "
        "element(s))");
  CHECK(err(R"({"collective": "allgather", "topology": "bogus:4", "domain": "exact",
               "transfers": []})")
            .find("s.json: topology: unknown topology") == 0);
  CHECK(err(R"({"collective": "allgather", "topology": "ring:4", "domain": "exact"})") ==
        "s.json: top level: no \"transfers\" (the trace was written without them: too many to "
        "list?)");
}

// ---- issue 21: schedule files judged as strictly as models ----

TEST_CASE("fingerprint schedule files are replayed: no transfers or constant payloads fail",
          "[trace][issue21]") {
  // The correct twin: star:3's all-reduce run in the fingerprint domain, written and read back.
  Trace good = run_on("allreduce_star", "star:3", DomainKind::Fingerprint);
  auto j = trace_to_json(good);
  Trace back = trace_from_json(j, "fp.json");
  auto rs = check_trace(back, {});
  CHECK(named(rs, "dataflow").verdict == Verdict::Pass);
  CHECK(named(rs, "postcondition").verdict == Verdict::Pass);
  std::string out;
  CHECK(verify_file(j, out) == 0);
  // No transfers, the final buffers kept: every node claims a sum it never received.
  auto none = j;
  none["transfers"] = nlohmann::json::array();
  none.erase("per_step");
  none.erase("transfer_count");
  none.erase("steps");
  none.erase("cost");
  none.erase("words_per_message");
  Trace t = trace_from_json(none, "none.json");
  const CheckResult df = named(check_trace(t, {}), "dataflow");
  CHECK(df.verdict == Verdict::Fail);
  REQUIRE(!df.violations.empty());
  CHECK(df.violations[0].message.find("no sum of the values it holds") != std::string::npos);
  CHECK(verify_file(none, out) == 1);
  // Every payload one constant.
  auto constant = j;
  for (auto& x : constant["transfers"])
    for (auto& it : x["items"]) it = "#00000000000000ff";
  CHECK(named(check_trace(trace_from_json(constant, "c.json"), {}), "dataflow").verdict ==
        Verdict::Fail);
  CHECK(verify_file(constant, out) == 1);
}

TEST_CASE("a transfer from a node to itself is refused", "[trace][issue21]") {
  auto j = nlohmann::json::parse(R"({"collective": "broadcast", "topology": "ring:2",
    "domain": "exact", "transfers": [{"step": 1, "src": 0, "dst": 1, "items": ["x0"]}],
    "final": [{"node": 0, "output": ["x0"]}, {"node": 1, "output": ["x0"]}]})");
  CHECK(read_error(j) == "no error");
  j["transfers"].push_back({{"step", 2}, {"src", 1}, {"dst", 1}, {"items", {"x0"}}});
  CHECK(read_error(j) ==
        "s.json: transfers[1]: node 1 sends to itself (a transfer joins two different nodes)");
  // A Trace made otherwise (another reader) with such a transfer fails the route check.
  Trace t = run_on("broadcast_ring", "ring:2", DomainKind::Exact);
  REQUIRE(named(check_trace(t, {}), "route").verdict == Verdict::Pass);
  t.transfers.push_back(t.transfers.front());
  t.transfers.back().dst = t.transfers.back().src;
  t.transfers.back().step = t.steps + 1;
  t.compute_stats();
  CHECK(named(check_trace(t, {}), "route").verdict == Verdict::Fail);
}

namespace {

// A barrier schedule on complete:p from (step, src, dst) triples.
nlohmann::json barrier_file(std::uint32_t p, const std::vector<std::array<int, 3>>& xs) {
  nlohmann::json j = {{"collective", "barrier"},
                      {"topology", "complete:" + std::to_string(p)},
                      {"domain", "exact"},
                      {"transfers", nlohmann::json::array()}};
  for (const auto& x : xs)
    j["transfers"].push_back(
        {{"step", x[0]}, {"src", x[1]}, {"dst", x[2]}, {"items", nlohmann::json::array()}});
  return j;
}

// The dissemination barrier on p ranks: in round k rank i sends to i + 2^k.
std::vector<std::array<int, 3>> dissemination(int p) {
  std::vector<std::array<int, 3>> xs;
  int round = 1;
  for (int d = 1; d < p; d *= 2, ++round)
    for (int i = 0; i < p; ++i) xs.push_back({round, i, (i + d) % p});
  return xs;
}

}  // namespace

TEST_CASE("barrier files are judged by causal order from their steps", "[trace][issue21]") {
  std::string out;
  auto good = barrier_file(8, dissemination(8));
  Trace t = trace_from_json(good, "b.json");
  CHECK(named(check_trace(t, {}), "postcondition").verdict == Verdict::Pass);
  CHECK(verify_file(good, out) == 0);
  // One message 0 -> 1 is no barrier.
  auto one = barrier_file(8, {{1, 0, 1}});
  const CheckResult pc = named(check_trace(trace_from_json(one, "one.json"), {}), "postcondition");
  CHECK(pc.verdict == Verdict::Fail);
  CHECK(pc.violation_count == 8);
  CHECK(verify_file(one, out) == 1);
  // The dissemination barrier with any one message removed fails.
  auto xs = dissemination(8);
  for (std::size_t k = 0; k < xs.size(); ++k) {
    auto less = xs;
    less.erase(less.begin() + static_cast<std::ptrdiff_t>(k));
    INFO("message " << k << " removed");
    CHECK(named(check_trace(trace_from_json(barrier_file(8, less), "b.json"), {}), "postcondition")
              .verdict == Verdict::Fail);
  }
  CHECK(verify_file(barrier_file(8, {xs.begin() + 1, xs.end()}), out) == 1);
  // Order matters, not only who talks: gather to 0 then release passes; release first fails.
  auto gather_release = barrier_file(3, {{1, 1, 0}, {1, 2, 0}, {2, 0, 1}, {2, 0, 2}});
  CHECK(
      named(check_trace(trace_from_json(gather_release, "b.json"), {}), "postcondition").verdict ==
      Verdict::Pass);
  auto release_gather = barrier_file(3, {{2, 1, 0}, {2, 2, 0}, {1, 0, 1}, {1, 0, 2}});
  CHECK(
      named(check_trace(trace_from_json(release_gather, "b.json"), {}), "postcondition").verdict ==
      Verdict::Fail);
  // A message in the same step carries only what its sender knew before the step.
  auto same_step = dissemination(8);
  for (auto& x : same_step) x[0] = 1;
  CHECK(
      named(check_trace(trace_from_json(barrier_file(8, same_step), "b.json"), {}), "postcondition")
          .verdict == Verdict::Fail);
}

TEST_CASE("unknown keys anywhere in a schedule file are errors with their path",
          "[trace][issue21]") {
  auto base = nlohmann::json::parse(R"({"collective": "broadcast", "topology": "ring:3",
    "domain": "exact", "claimed": {"steps": 2},
    "transfers": [{"step": 1, "src": 0, "dst": 1, "items": ["x0"]},
                  {"step": 2, "src": 1, "dst": 2, "items": ["x0"]}],
    "final": [{"node": 0, "output": ["x0"]}, {"node": 1, "output": ["x0"]},
              {"node": 2, "output": ["x0"]}]})");
  CHECK(read_error(base) == "no error");
  auto step = base;
  step["claimed"] = {{"step", 3}};
  CHECK(read_error(step).find("s.json: claimed.step: unknown key (known here: steps, cost") == 0);
  auto claimd = base;
  claimd.erase("claimed");
  claimd["claimd"] = {{"steps", 3}};
  CHECK(read_error(claimd).find("s.json: claimd: unknown key") == 0);
  auto xkey = base;
  xkey["transfers"][1]["item"] = {"x0"};
  CHECK(read_error(xkey).find("s.json: transfers[1].item: unknown key") == 0);
  auto fkey = base;
  fkey["final"][2]["outputs"] = nlohmann::json::array();
  CHECK(read_error(fkey).find("s.json: final[2].outputs: unknown key") == 0);
  auto ckey = base;
  ckey["claimed"]["cost"] = {{"ts", 2}, {"tw", 2}, {"tv", 1}};
  CHECK(read_error(ckey).find("s.json: claimed.cost.tv: unknown key") == 0);
  // The claim spelt right is judged: 3 claimed, 2 taken.
  auto wrong = base;
  wrong["claimed"]["steps"] = 3;
  std::string out;
  CHECK(verify_file(wrong, out) == 1);
  CHECK(verify_file(claimd, out) == 2);
  CHECK(out.find("claimd: unknown key") != std::string::npos);
  CHECK(verify_file(base, out) == 0);
}

TEST_CASE("a file's recorded steps, cost and statistics are claims", "[trace][issue21]") {
  Trace good = run_on("allgather_ring", "ring:4", DomainKind::Exact);
  auto j = trace_to_json(good);
  CHECK(named(check_trace(trace_from_json(j, "g.json"), {}), "steps").verdict == Verdict::Pass);
  auto steps = j;
  steps["steps"] = 2;
  CHECK(named(check_trace(trace_from_json(steps, "g.json"), {}), "steps").verdict == Verdict::Fail);
  auto cost = j;
  cost["cost"]["tw"] = 1;
  CHECK(named(check_trace(trace_from_json(cost, "g.json"), {}), "cost").verdict == Verdict::Fail);
  auto count = j;
  count["transfer_count"] = 99;
  CHECK(named(check_trace(trace_from_json(count, "g.json"), {}), "steps").verdict == Verdict::Fail);
  auto route = j;
  route["transfers"][0]["route"] = {0, 3, 2, 1};
  CHECK(read_error(route).find(".route: ") != std::string::npos);
}

TEST_CASE("message size is a claim: the S5 all-reduce's one word per message", "[trace][issue21]") {
  std::ifstream in(kRoot + "/examples/star5/allreduce-9-steps.json");
  REQUIRE(in);
  auto j = nlohmann::json::parse(in);
  REQUIRE(j["words_per_message"] == 1);
  Trace t = trace_from_json(j, "s5.json");
  auto rs = check_trace(t, {});
  CHECK(named(rs, "cost").verdict == Verdict::Pass);
  CHECK(named(rs, "cost").note.find("at most 1 word(s) per message") != std::string::npos);
  // Split one message that the sender made of two held values into those two items: every item
  // is still derivable (dataflow passes), but the message is two words.
  Dataflow df = analyze_dataflow(t, {});
  std::optional<std::uint32_t> pick;
  for (std::uint32_t i = 0; i < t.transfers.size() && !pick; ++i)
    if (t.transfers[i].payload_len == 1 &&
        df.payload[t.transfers[i].payload_begin].parts.size() == 2)
      pick = i;
  REQUIRE(pick);
  const Transfer& x = t.transfers[*pick];
  nlohmann::json items = nlohmann::json::array();
  for (const HeldRef& h : df.payload[x.payload_begin].parts) {
    Item it = h.kind == HeldRef::Kind::Input ? t.initial_input[x.src][h.index] : t.payload[h.index];
    items.push_back(t.domain->describe(it));
  }
  auto split = j;
  std::size_t k = 0;
  for (auto& y : split["transfers"])
    if (y["step"] == x.step && y["src"] == x.src && y["dst"] == x.dst) {
      y["items"] = items;
      y.erase("words");  // only words_per_message claims the size now
      ++k;
    }
  REQUIRE(k == 1);
  split.erase("cost");
  split.erase("per_step");
  auto rs2 = check_trace(trace_from_json(split, "split.json"), {});
  CHECK(named(rs2, "dataflow").verdict == Verdict::Pass);
  const CheckResult& cost = named(rs2, "cost");
  CHECK(cost.verdict == Verdict::Fail);
  REQUIRE(!cost.violations.empty());
  CHECK(cost.violations[0].message.find("carries 2 word(s)") != std::string::npos);
  std::string out;
  CHECK(verify_file(split, out) == 1);
  // The per-transfer claim alone catches it too.
  auto words = split;
  words.erase("words_per_message");
  for (auto& y : words["transfers"])
    if (!y.contains("words")) y["words"] = 1;
  CHECK(named(check_trace(trace_from_json(words, "w.json"), {}), "cost").verdict == Verdict::Fail);
  words.erase("transfers");
  // run --json writes the largest message as the claim.
  Trace ag = run_on("allgather_ring", "ring:4", DomainKind::Exact);
  CHECK(trace_to_json(ag)["words_per_message"] == 1);
}

TEST_CASE("nodup sees inside a message and a received buffer", "[trace][issue21]") {
  auto base = nlohmann::json::parse(R"({"collective": "allgather", "topology": "ring:3",
    "domain": "exact", "layout": "any",
    "transfers": [{"step": 1, "src": 0, "dst": 1, "items": ["x0"]},
                  {"step": 1, "src": 1, "dst": 2, "items": ["x1"]},
                  {"step": 1, "src": 2, "dst": 0, "items": ["x2"]},
                  {"step": 2, "src": 0, "dst": 1, "items": ["x2"]},
                  {"step": 2, "src": 1, "dst": 2, "items": ["x0"]},
                  {"step": 2, "src": 2, "dst": 0, "items": ["x1"]}],
    "final": [{"node": 0, "output": ["x0", "x2", "x1"]}, {"node": 1, "output": ["x1", "x0", "x2"]},
              {"node": 2, "output": ["x2", "x1", "x0"]}]})");
  CHECK(named(check_trace(trace_from_json(base, "n.json"), {}), "nodup").verdict == Verdict::Pass);
  // One item twice in one message.
  auto twice = base;
  twice["transfers"][0]["items"] = {"x0", "x0"};
  const CheckResult r = named(check_trace(trace_from_json(twice, "n.json"), {}), "nodup");
  CHECK(r.verdict == Verdict::Fail);
  REQUIRE(!r.violations.empty());
  CHECK(r.violations[0].message.find("comes twice in step 1") != std::string::npos);
  // Overlapping items in one message.
  auto overlap = nlohmann::json::parse(R"({"collective": "reduce", "topology": "ring:2",
    "domain": "exact", "source": 1,
    "transfers": [{"step": 1, "src": 0, "dst": 1, "items": ["x0", "x0"]}],
    "final": [{"node": 1, "output": ["x0+x1"]}]})");
  CHECK(named(check_trace(trace_from_json(overlap, "o.json"), {}), "nodup").verdict ==
        Verdict::Fail);
  overlap["transfers"][0]["items"] = {"x0"};
  CHECK(named(check_trace(trace_from_json(overlap, "o.json"), {}), "nodup").verdict ==
        Verdict::Pass);
  // Two messages of one step bringing the same item to one node (all-port).
  auto two = nlohmann::json::parse(R"({"collective": "broadcast", "topology": "complete:3",
    "domain": "exact", "port": "all",
    "transfers": [{"step": 1, "src": 0, "dst": 1, "items": ["x0"]},
                  {"step": 1, "src": 0, "dst": 2, "items": ["x0"]},
                  {"step": 2, "src": 2, "dst": 1, "items": ["x0"]}],
    "final": [{"node": 0, "output": ["x0"]}, {"node": 1, "output": ["x0"]},
              {"node": 2, "output": ["x0"]}]})");
  CHECK(named(check_trace(trace_from_json(two, "t.json"), {}), "nodup").verdict == Verdict::Fail);
  two["transfers"].erase(2);
  CHECK(named(check_trace(trace_from_json(two, "t.json"), {}), "nodup").verdict == Verdict::Pass);
  // A model sending one item twice in a message (`msg ∪ msg`).
  std::string path = test::unique_temp("collv_nodup") + ".coll";
  {
    std::ofstream f(path);
    f << "model nodup_message_twice\n  collective broadcast\n  topology ring\n  input my_msg\n"
         "  output result\nprocedure P(my_id, my_msg, p, result)\nbegin\n"
         "    result := my_msg;\n    if my_id = 0 then\n        send my_msg ∪ my_msg to right;\n"
         "    endif;\n    if my_id = 1 then\n        receive got from left;\n"
         "        result := got[0 .. 0];\n    endif;\nend P\n";
  }
  Model m = parse_model_file(path);
  std::remove(path.c_str());
  RunOptions ro;
  Trace mt = run_model(m, Topology::parse("ring:2"), ro);
  CHECK(named(check_trace(mt, {}), "nodup").verdict == Verdict::Fail);
}

TEST_CASE("verify --strict imposes the collective's rules, a loosened pass says so",
          "[trace][issue21]") {
  // An allgather with two blocks swapped at node 0, declared `layout any`.
  auto ag = nlohmann::json::parse(R"({"collective": "allgather", "topology": "complete:2",
    "domain": "exact", "layout": "any",
    "transfers": [{"step": 1, "src": 0, "dst": 1, "items": ["x0"]},
                  {"step": 1, "src": 1, "dst": 0, "items": ["x1"]}],
    "final": [{"node": 0, "output": ["x1", "x0"]}, {"node": 1, "output": ["x0", "x1"]}]})");
  std::string out;
  CHECK(verify_file(ag, out) == 0);
  CHECK(out.find("loosened: 1 run held only under rules") != std::string::npos);
  CHECK(out.find("held only under `layout any`") != std::string::npos);
  CHECK(verify_file(ag, out, "--strict") == 1);
  CHECK(verify_file(ag, out, "--json -") == 0);
  CHECK(out.find("\"loosened\": \"held only under `layout any`") != std::string::npos);
  CHECK(verify_file(ag, out, "--junit -") == 0);
  CHECK(out.find("<property name=\"loosened\"") != std::string::npos);
  // The correct twin, in MPI's layout: passes both ways, nothing loosened.
  auto right = ag;
  right["final"][0]["output"] = {"x0", "x1"};
  CHECK(verify_file(right, out) == 0);
  CHECK(out.find("loosened") == std::string::npos);
  CHECK(verify_file(right, out, "--strict") == 0);
  // An out-of-order reduce in the ordered domain, declared commutative.
  auto red = nlohmann::json::parse(R"({"collective": "reduce", "topology": "complete:3",
    "domain": "ordered", "operator": "commutative", "source": 0,
    "transfers": [{"step": 1, "src": 2, "dst": 1, "items": ["x2"]},
                  {"step": 2, "src": 1, "dst": 0, "items": ["x2+x1"]}],
    "final": [{"node": 0, "output": ["x2+x1+x0"]}]})");
  CHECK(verify_file(red, out) == 0);
  CHECK(out.find("1 commutative-only") != std::string::npos);
  CHECK(out.find("held only under `operator commutative`") != std::string::npos);
  CHECK(verify_file(red, out, "--strict") == 1);
  auto in_order = red;
  in_order["transfers"][1]["items"] = {"x1+x2"};
  in_order["final"][0]["output"] = {"x0+x1+x2"};
  CHECK(verify_file(in_order, out, "--strict") == 0);
}
