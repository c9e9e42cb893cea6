// The dataflow, match and runtime checks: corrupted schedules fail with a counterexample, every
// model passes in every domain, derivations rebuild the items they explain.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "app/commands.hpp"
#include "app/verify_cmd.hpp"
#include "check/checks.hpp"
#include "check/dataflow.hpp"
#include "cli.hpp"
#include "exec/executor.hpp"
#include "render/render.hpp"
#include "smt/prove.hpp"
#include "trace_util.hpp"

using namespace collv;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

const CheckResult& named(const std::vector<CheckResult>& rs, const std::string& n) {
  for (const auto& r : rs)
    if (r.name == n) return r;
  throw std::runtime_error("no check " + n);
}

Trace run(const std::string& model, const std::string& topo, DomainKind d, std::uint32_t root = 0) {
  Model m = parse_model_file(resolve_model_path(model, kRoot + "/models"));
  RunOptions ro;
  ro.domain = d;
  ro.root = root;
  return run_model(m, Topology::parse(topo), ro);
}

// Per slot (Dataflow::slot[i] + k: item k of transfer i, its own position even where transfers
// share payload items), the transfer that carries it and the item.
struct Slots {
  std::vector<std::uint32_t> own;
  std::vector<Item> item;
};
Slots slots_of(const Trace& t, const Dataflow& df) {
  REQUIRE(df.slot.size() == t.transfers.size());
  Slots s;
  for (std::uint32_t i = 0; i < t.transfers.size(); ++i) {
    const Transfer& x = t.transfers[i];
    for (std::uint32_t k = 0; k < x.payload_len; ++k) {
      std::size_t j = df.slot[i] + k;
      if (j >= s.own.size()) {
        s.own.resize(j + 1, UINT32_MAX);
        s.item.resize(j + 1, 0);
      }
      REQUIRE(s.own[j] == UINT32_MAX);  // one slot, one transfer
      s.own[j] = i;
      s.item[j] = t.payload.at(x.payload_begin + k);
    }
  }
  return s;
}

// Rebuilds an item from its derivation with the trace's own domain.
Item rebuild(const Trace& t, const Slots& sl, NodeId v, const Derivation& d) {
  Item acc = 0;
  for (const HeldRef& h : d.parts) {
    const Buffer& in = t.initial_input.at(v);
    if (h.kind == HeldRef::Kind::Input) REQUIRE(h.index < in.size());
    Item part = h.kind == HeldRef::Kind::Input ? in[h.index] : sl.item.at(h.index);
    acc = t.domain->combine(acc, part);
  }
  return acc;
}

// Every derivation is sound: its parts are values the node held at that point (its input, or
// items of transfers it received in an earlier step), no part is used twice, and combining the
// parts in order gives the item (exactly, in the exact and the ordered domain).
void check_derivations(const Trace& t, const Dataflow& df) {
  Slots sl = slots_of(t, df);
  const auto& own = sl.own;
  std::set<std::uint32_t> lost(t.unreceived.begin(), t.unreceived.end());
  auto held_ok = [&](NodeId v, const HeldRef& h, std::uint32_t before_step) {
    if (h.kind == HeldRef::Kind::Input) return h.index < t.initial_input[v].size();
    if (h.index >= own.size() || own[h.index] == UINT32_MAX) return false;
    const Transfer& x = t.transfers[own[h.index]];
    return x.dst == v && x.step < before_step && !lost.count(own[h.index]);
  };
  auto distinct = [](const Derivation& d) {
    std::set<std::pair<int, std::uint32_t>> s;
    for (const auto& h : d.parts) s.insert({static_cast<int>(h.kind), h.index});
    return s.size() == d.parts.size();
  };
  REQUIRE(df.payload.size() == own.size());
  for (std::uint32_t k = 0; k < own.size(); ++k) {
    const Transfer& x = t.transfers[own[k]];
    const Derivation& d = df.payload[k];
    INFO("slot " << k << " = " << t.domain->describe(sl.item[k]) << " at step " << x.step);
    REQUIRE(d.found);
    CHECK(distinct(d));
    for (const auto& h : d.parts) CHECK(held_ok(x.src, h, x.step));
    CHECK(rebuild(t, sl, x.src, d) == sl.item[k]);
  }
  for (NodeId v = 0; v < t.final_output.size(); ++v)
    for (std::uint32_t q = 0; q < t.final_output[v].size(); ++q) {
      const Derivation& d = df.final_output[v][q];
      REQUIRE(d.found);
      CHECK(distinct(d));
      for (const auto& h : d.parts) CHECK(held_ok(v, h, UINT32_MAX));
      CHECK(rebuild(t, sl, v, d) == t.final_output[v][q]);
    }
}

}  // namespace

TEST_CASE("dataflow: a schedule with one transfer removed fails at the send that needed it",
          "[dataflow]") {
  Trace t = read_trace_file(kRoot + "/tests/data/corrupt_transfer_removed.json");
  Dataflow df = analyze_dataflow(t, {});
  REQUIRE(df.dataflow.verdict == Verdict::Fail);
  const Counterexample& c = df.dataflow.violations.front();
  // 0 -> 5 (x0+x2) was removed from step 2, so node 5 cannot forward x0+x2 to node 3 in step 3.
  REQUIRE(c.step);
  CHECK(*c.step == 3);
  REQUIRE(c.transfers.size() == 1);
  const Transfer& x = t.transfers[c.transfers[0]];
  CHECK(x.src == 5);
  CHECK(x.dst == 3);
  CHECK(c.message.find("x0+x2") != std::string::npos);
  CHECK(c.message.find("holds nothing that contains x0, x2") != std::string::npos);
  REQUIRE(c.buffers.size() == 2);
  CHECK(c.buffers[1].contents == "[x5, x3]");  // what node 5 held before step 3
  // The same schedule with the transfer in place passes: the failure is the removal's.
  Trace good = read_trace_file(kRoot + "/tests/data/allreduce_star_s3.json");
  CHECK(named(check_trace(good, {}), "dataflow").verdict == Verdict::Pass);
  CHECK(named(check_trace(good, {}), "match").verdict == Verdict::Pass);
}

TEST_CASE("dataflow: removing any one transfer of a correct schedule is caught", "[dataflow]") {
  for (DomainKind d : {DomainKind::Exact, DomainKind::Ordered}) {
    Trace good = run("allreduce_star", "star:3", d);
    auto j = trace_to_json(good);
    REQUIRE(named(check_trace(good, {}), "dataflow").verdict == Verdict::Pass);
    for (std::size_t k = 0; k < j["transfers"].size(); ++k) {
      auto bad = j;
      bad["transfers"].erase(k);
      Trace t = trace_from_json(bad, "removed.json");
      INFO(domain_name(d) << ": transfer " << k << " removed");
      CHECK(named(check_trace(t, {}), "dataflow").verdict == Verdict::Fail);
    }
  }
}

TEST_CASE("dataflow: a changed payload fails at that transfer, naming what the sender held",
          "[dataflow]") {
  Trace t = read_trace_file(kRoot + "/tests/data/corrupt_payload_changed.json");
  auto rs = check_trace(t, {});
  const CheckResult& df = named(rs, "dataflow");
  REQUIRE(df.verdict == Verdict::Fail);
  const Counterexample& c = df.violations.front();
  REQUIRE(c.step);
  CHECK(*c.step == 2);
  const Transfer& x = t.transfers.at(c.transfers.at(0));
  CHECK(x.src == 1);
  CHECK(x.dst == 3);
  CHECK(c.message.find("x1+x5") != std::string::npos);
  CHECK(c.message.find("1 -> 3") == std::string::npos);  // nodes are named by label
  CHECK(c.message.find("132 -> 231") != std::string::npos);
  CHECK(c.buffers.at(1).contents == "[x1, x4]");

  // Every payload of a correct run, replaced by itself counted twice, is caught at its transfer.
  Trace good = run("allreduce_star", "star:3", DomainKind::Exact);
  auto j = trace_to_json(good);
  for (std::size_t k = 0; k < j["transfers"].size(); ++k) {
    auto bad = j;
    std::string item = bad["transfers"][k]["items"][0];
    bad["transfers"][k]["items"][0] = item + "+" + item;
    Trace tb = trace_from_json(bad, "doubled.json");
    auto r = named(check_trace(tb, {}), "dataflow");
    INFO("transfer " << k << " carries " << item << " twice");
    REQUIRE(r.verdict == Verdict::Fail);
    CHECK(r.violations.front().transfers.at(0) == k);
  }
}

TEST_CASE("dataflow: final buffers in a file are a claim, not a fact", "[dataflow]") {
  // An all-reduce on star:4 with no transfers at all whose final buffers are right.
  Trace t = read_trace_file(kRoot + "/tests/data/corrupt_no_transfers.json");
  REQUIRE(t.transfers.empty());
  auto rs = check_trace(t, {});
  CHECK(named(rs, "postcondition").verdict == Verdict::Pass);  // the claimed buffers look right
  const CheckResult& df = named(rs, "dataflow");
  REQUIRE(df.verdict == Verdict::Fail);
  CHECK(df.violation_count == 24);  // every node claims what it never received
  const Counterexample& c = df.violations.front();
  CHECK_FALSE(c.step);
  CHECK(c.message.find("node 1234 ends with x0..x23") != std::string::npos);
  CHECK(c.message.find("holds nothing that contains x1,") != std::string::npos);
  // and the CLI exits 1 naming the check
  std::string cmd = std::string(COLLV_BINARY) + " verify --trace " + kRoot +
                    "/tests/data/corrupt_no_transfers.json > /dev/null 2>&1";
  int rc = std::system(cmd.c_str());
  CHECK(WEXITSTATUS(rc) == 1);
}

TEST_CASE("match: a send nobody receives is reported, also after a JSON round trip",
          "[dataflow][match]") {
  Model m = parse_model_file(kRoot + "/tests/mutants/match_reduce_hcube_extra_send.coll");
  Trace t = run_model(m, Topology::parse("hypercube:3"), RunOptions{});
  REQUIRE(t.unreceived.size() == 1);
  const Transfer& x = t.transfers[t.unreceived[0]];
  CHECK(x.src == 1);
  CHECK(x.dst == 3);
  auto rs = check_trace(t, {});
  const CheckResult& mt = named(rs, "match");
  REQUIRE(mt.verdict == Verdict::Fail);
  CHECK(mt.violations.front().message.find("sent by 001 to 011") != std::string::npos);
  CHECK(mt.violations.front().message.find("never received") != std::string::npos);
  // Every other check passes: only match sees the extra send (issue 9).
  for (const auto& r : rs)
    if (r.name != "match") CHECK(r.verdict != Verdict::Fail);
  // The item never reaches node 3: dataflow does not count it as held there.
  Dataflow df = analyze_dataflow(t, {});
  check_derivations(t, df);

  auto j = trace_to_json(t);
  int marked = 0;
  for (const auto& xj : j["transfers"])
    if (xj.contains("received")) {
      CHECK(xj["received"] == false);
      ++marked;
    }
  CHECK(marked == 1);
  Trace back = trace_from_json(j, "extra.json");
  CHECK(back.unreceived.size() == 1);
  CHECK(named(check_trace(back, {}), "match").verdict == Verdict::Fail);
  // The model it was made from sends nothing extra.
  Trace ok = run("reduce_hypercube", "hypercube:3", DomainKind::Exact);
  CHECK(ok.unreceived.empty());
  CHECK(named(check_trace(ok, {}), "match").verdict == Verdict::Pass);
  // A bad "received" is an error naming the key.
  auto bad = j;
  bad["transfers"][0]["received"] = "no";
  CHECK_THROWS_WITH(trace_from_json(bad, "s.json"),
                    Catch::Contains("transfers[0].received: expected true or false"));
}

TEST_CASE("match: an unreceived transfer's items are not held by its receiver", "[dataflow]") {
  // 0 sends x0 to 1 in step 1 but 1 never receives it; 1 then forwards x0: not derivable.
  auto j = nlohmann::json::parse(R"({
    "collective": "broadcast", "topology": "line:3", "domain": "exact", "source": 0,
    "transfers": [
      {"step": 1, "src": 0, "dst": 1, "items": ["x0"], "received": false},
      {"step": 2, "src": 1, "dst": 2, "items": ["x0"]}
    ],
    "final": [{"node": 0, "output": ["x0"]}, {"node": 2, "output": ["x0"]}]
  })");
  Trace t = trace_from_json(j, "lost.json");
  auto rs = check_trace(t, {});
  CHECK(named(rs, "match").verdict == Verdict::Fail);
  const CheckResult& df = named(rs, "dataflow");
  REQUIRE(df.verdict == Verdict::Fail);
  CHECK(*df.violations.front().step == 2);
  // Received, the same schedule passes both.
  j["transfers"][0].erase("received");
  Trace ok = trace_from_json(j, "ok.json");
  auto rs2 = check_trace(ok, {});
  CHECK(named(rs2, "match").verdict == Verdict::Pass);
  CHECK(named(rs2, "dataflow").verdict == Verdict::Pass);
}

TEST_CASE("dataflow: within a step, exchanges use only what was held before it", "[dataflow]") {
  // 0 and 1 swap inputs in step 1; 1 cannot already forward x0 in step 1, but can in step 2.
  auto j = nlohmann::json::parse(R"({
    "collective": "allgather", "topology": "line:3", "domain": "exact",
    "transfers": [
      {"step": 1, "src": 0, "dst": 1, "items": ["x0"]},
      {"step": 1, "src": 1, "dst": 2, "items": ["x0"]}
    ]
  })");
  auto rs = check_trace(trace_from_json(j, "same-step.json"), {});
  CHECK(named(rs, "dataflow").verdict == Verdict::Fail);
  j["transfers"][1]["step"] = 2u;
  rs = check_trace(trace_from_json(j, "next-step.json"), {});
  CHECK(named(rs, "dataflow").verdict == Verdict::Pass);
}

TEST_CASE("dataflow: the ordered domain needs the held sequences in order", "[dataflow]") {
  // Node 1 holds x1 and x0 (received); it may send x0+x1 or x1+x0, but not x0+x2.
  auto make = [](const char* item) {
    auto j = nlohmann::json::parse(R"({
      "collective": "reduce", "topology": "line:3", "domain": "ordered", "source": 2,
      "transfers": [
        {"step": 1, "src": 0, "dst": 1, "items": ["x0"]},
        {"step": 2, "src": 1, "dst": 2, "items": ["?"]}
      ]
    })");
    j["transfers"][1]["items"][0] = item;
    return trace_from_json(j, "ordered.json");
  };
  for (const char* ok : {"x0+x1", "x1+x0", "x1", "0"}) {
    INFO(ok);
    Trace t = make(ok);
    Dataflow df = analyze_dataflow(t, {});
    CHECK(df.dataflow.verdict == Verdict::Pass);
    check_derivations(t, df);
  }
  for (const char* bad : {"x0+x2", "x0+x1+x0", "x1+x1"}) {
    INFO(bad);
    CHECK(analyze_dataflow(make(bad), {}).dataflow.verdict == Verdict::Fail);
  }
}

TEST_CASE("dataflow: derivations rebuild every item they explain", "[dataflow]") {
  struct Case {
    const char* model;
    const char* topo;
  };
  for (Case c :
       {Case{"allreduce_star", "star:4"}, Case{"allreduce_hypercube", "hypercube:3"},
        Case{"scan_hypercube_ordered", "hypercube:3"}, Case{"reduce_scatter_ring", "ring:4"},
        Case{"allgather_mesh", "mesh:3x3"}, Case{"alltoall_hypercube", "hypercube:2"}})
    for (DomainKind d : {DomainKind::Exact, DomainKind::Ordered}) {
      INFO(c.model << " on " << c.topo << " (" << domain_name(d) << ")");
      Trace t = run(c.model, c.topo, d);
      Dataflow df = analyze_dataflow(t, {});
      CHECK(df.dataflow.verdict == Verdict::Pass);
      CHECK(df.match.verdict == Verdict::Pass);
      check_derivations(t, df);
    }
}

TEST_CASE("dataflow: an exhausted search budget is unknown, never pass", "[dataflow]") {
  // allreduce_star's sends are sums of several held items. Read back from a schedule file the
  // items carry no combine history (a run's do, and are derived from it without a search), so
  // each needs the search.
  Trace ran = run("allreduce_star", "star:3", DomainKind::Exact);
  Trace t = trace_from_json(trace_to_json(ran), "star3.json");
  CheckOptions o;
  o.dataflow_item_budget = 1;
  Dataflow df = analyze_dataflow(t, o);
  CHECK(df.dataflow.verdict == Verdict::Unknown);
  CHECK(df.dataflow.note.find("search budget") != std::string::npos);
  bool some_undecided = false;
  for (const auto& d : df.payload) some_undecided = some_undecided || !d.found;
  CHECK(some_undecided);
  // With the default budget the same trace passes; the run itself passes even with budget 1,
  // its sends derived by following how they were combined.
  CHECK(analyze_dataflow(t, {}).dataflow.verdict == Verdict::Pass);
  CHECK(analyze_dataflow(ran, o).dataflow.verdict == Verdict::Pass);
}

TEST_CASE("dataflow: the fingerprint domain decides membership only", "[dataflow]") {
  // All-to-all broadcast: every item moves as it is, so membership decides everything.
  Trace ag = run("allgather_hypercube", "hypercube:3", DomainKind::Fingerprint);
  CHECK(analyze_dataflow(ag, {}).dataflow.verdict == Verdict::Pass);
  // A reduction sends sums, which a fingerprint cannot decompose: not checked, never pass.
  Trace ar = run("allreduce_hypercube", "hypercube:3", DomainKind::Fingerprint);
  CheckResult r = analyze_dataflow(ar, {}).dataflow;
  CHECK(r.verdict == Verdict::NotChecked);
  CHECK(r.note.find("fingerprint") != std::string::npos);
}

TEST_CASE("runtime: a model's runtime error fails runtime, not deadlock", "[dataflow][runtime]") {
  Model m = parse_model_file(kRoot + "/tests/mutants/runtime_scatter_ring_slice_past_end.coll");
  Trace t = run_model(m, Topology::parse("ring:4"), RunOptions{});
  REQUIRE(t.failure.kind == RunFailure::Kind::RuntimeError);
  auto rs = check_trace(t, {});
  const CheckResult& rt = named(rs, "runtime");
  REQUIRE(rt.verdict == Verdict::Fail);
  CHECK(rt.violations.front().message.find("slice [2 .. 4] is out of range") != std::string::npos);
  CHECK(named(rs, "deadlock").verdict == Verdict::NotChecked);
  CHECK(named(rs, "match").verdict == Verdict::NotChecked);  // the run stopped early
  // A deadlock is still a deadlock; the receives that never happen are the deadlock itself,
  // reported once: match is not-checked, with the reason.
  Model dl = parse_model_file(kRoot + "/tests/mutants/deadlock_exchange_recv_first.coll");
  Trace td = run_model(dl, Topology::parse("hypercube:2"), RunOptions{});
  auto rd = check_trace(td, {});
  CHECK(named(rd, "deadlock").verdict == Verdict::Fail);
  CHECK(named(rd, "runtime").verdict == Verdict::Pass);
  CHECK(named(rd, "match").verdict == Verdict::NotChecked);
  CHECK(named(rd, "match").after_stop);
  CHECK(named(rd, "match").note ==
        "the run deadlocked before its first transfer (see the deadlock check)");
  // check_match alone still names the receives that never happen.
  CHECK(check_match(td, {}).verdict == Verdict::Fail);
}

TEST_CASE("dataflow, match and runtime pass on every model in every domain (no false alarms)",
          "[dataflow][slow]") {
  VerifyOptions o;
  o.all = true;
  o.models_dir = kRoot + "/models";
  o.quiet = true;
  o.domain = "all";
  o.max_p = 16;
  o.max_star = 4;
  std::ostringstream err;
  VerifyReport rep = verify(o, nullptr, err);
  REQUIRE(rep.runs.size() > 1000);
  std::map<std::string, int> fp_pass, fp_not;
  for (const auto& r : rep.runs) {
    INFO(r.model << " on " << r.topology << " (" << r.domain << ")");
    REQUIRE(r.status != "error");
    CHECK(named(r.checks, "match").verdict == Verdict::Pass);
    CHECK(named(r.checks, "runtime").verdict == Verdict::Pass);
    Verdict df = named(r.checks, "dataflow").verdict;
    if (r.domain == "fingerprint") {
      CHECK((df == Verdict::Pass || df == Verdict::NotChecked));
      (df == Verdict::Pass ? fp_pass : fp_not)[r.model]++;
    } else {
      CHECK(df == Verdict::Pass);
    }
  }
  CHECK(fp_pass.count("allgather_star"));
  CHECK(fp_not.count("allreduce_star"));
}

TEST_CASE("verify's reports list dataflow, match and runtime", "[dataflow][verify]") {
  VerifyOptions o;
  o.targets = {kRoot + "/models/reduce_hypercube.coll"};
  o.models_dir = kRoot + "/models";
  o.quiet = true;
  o.topologies = {"hypercube:2"};
  o.domain = "exact";
  std::ostringstream err;
  VerifyReport rep = verify(o, nullptr, err);
  REQUIRE(rep.runs.size() == 1);
  auto j = nlohmann::json::parse(report_to_json(rep));
  std::string junit = report_to_junit(rep);
  for (const char* n : {"dataflow", "match", "runtime"}) {
    INFO(n);
    CHECK(j["results"][0]["checks"][n] == "pass");
    CHECK(junit.find(std::string("name=\"") + n + "\"") != std::string::npos);
  }
  // and the text report names a failing one
  std::string out;
  {
    int rc =
        test::run_cli("verify --trace " + kRoot + "/tests/data/corrupt_transfer_removed.json", out);
    CHECK(rc == 1);
  }
  CHECK(out.find("  dataflow: 1 run; the first: star:3") != std::string::npos);
  CHECK(out.find("    dataflow: step 3: transfer #") != std::string::npos);
}

TEST_CASE("dataflow: a run's own items (with combine history) still fail when a transfer goes",
          "[dataflow]") {
  // The fast path follows how the run combined an item down to held items; with a transfer
  // removed from the run's Trace itself (not through a file), that path must not find it held.
  Trace good = run("allreduce_star", "star:3", DomainKind::Exact);
  REQUIRE(named(check_trace(good, {}), "dataflow").verdict == Verdict::Pass);
  for (std::size_t k = 0; k < good.transfers.size(); ++k) {
    Trace t = good;
    t.transfers.erase(t.transfers.begin() + static_cast<std::ptrdiff_t>(k));
    INFO("transfer " << k << " removed");
    CHECK(named(check_trace(t, {}), "dataflow").verdict == Verdict::Fail);
  }
}

namespace {

using test::unshared;

// What the readers of the payload answer on a trace, as text: every check's verdict, note and
// counterexamples, the JSON, the schedule, the pictures of the schedule and of each step, and
// with `smt` the SMT engine's verdicts and counterexamples over the derivations.
std::string answers(const Trace& t, bool smt) {
  std::ostringstream o;
  auto put = [&o](const std::vector<CheckResult>& rs) {
    for (const auto& r : rs) {
      o << r.name << ' ' << verdict_name(r.verdict) << ' ' << r.violation_count << ' ' << r.note
        << '\n';
      for (const auto& c : r.violations) {
        o << "  " << c.invariant << ' ' << (c.step ? *c.step : 0) << ' ' << c.message << '\n';
        for (auto v : c.nodes) o << "   node " << v;
        for (auto i : c.transfers) o << "   transfer " << i;
        for (const auto& b : c.buffers) o << "   " << b.node << ' ' << b.what << ' ' << b.contents;
        o << '\n';
      }
    }
  };
  put(check_trace(t, {}));
  o << trace_to_json(t).dump() << '\n';
  print_schedule(t, o);
  o << schedule_dot(t);
  for (std::uint32_t s = 0; s <= t.steps; ++s) o << step_dot(t, s);
  if (smt) {
    auto rs = smt_check_trace(t, analyze_dataflow(t, {}), {});
    // The second of two equal queries reuses the first's answer, and says so: that is dropped
    // here (the caller asks the second trace's queries whether they were the same).
    const std::string again = " (the same query as an earlier run: answer reused)";
    for (auto& r : rs)
      if (auto at = r.note.find(again); at != std::string::npos) r.note.erase(at, again.size());
    put(rs);
  }
  return o.str();
}

Trace run_count(const std::string& model, const std::string& topo, DomainKind d,
                std::uint32_t count) {
  Model m = parse_model_file(kRoot + "/" + model + ".coll");  // a path under the source tree
  RunOptions ro;
  ro.domain = d;
  ro.count = count;
  return run_model(m, Topology::parse(topo), ro);
}

}  // namespace

TEST_CASE("dataflow: the ring's full sums are derived from each node's own pair", "[dataflow]") {
  // Open MPI's ring makes the full sum of a segment at every node from a different pair (what
  // it received and its own element); the domain records the first node's pair as the item's
  // operands and the others as other_operands. The walk takes the node's own pair, so no item
  // goes to the search: the run passes with no search budget at all (it was inconclusive before,
  // every node's full sum searched). Removing any transfer still fails: a pair is taken only if
  // the node holds both of its operands.
  for (DomainKind d : {DomainKind::Exact, DomainKind::Ordered}) {
    Trace good = run_count("models/openmpi/allreduce_ring", "ring:5", d, 7);
    CheckOptions none;
    none.dataflow_item_budget = 0;
    INFO(domain_name(d));
    CHECK(check_dataflow_and_match(good, none).first.verdict == Verdict::Pass);
    CHECK(named(check_trace(good, {}), "dataflow").verdict == Verdict::Pass);
    // Derivations recorded for the SMT engine keep the recorded pair (and search for the rest).
    Dataflow df = analyze_dataflow(good, {});
    CHECK(df.dataflow.verdict == Verdict::Pass);
    check_derivations(good, df);
    for (std::size_t k = 0; k < good.transfers.size(); ++k) {
      Trace t = good;
      t.transfers.erase(t.transfers.begin() + static_cast<std::ptrdiff_t>(k));
      INFO("transfer " << k << " removed");
      CHECK(check_dataflow_and_match(t, none).first.verdict != Verdict::Pass);
      CHECK(check_dataflow_and_match(t, {}).first.verdict == Verdict::Fail);
    }
  }
}

TEST_CASE("shared payloads: the executor records a payload equal to an earlier one once",
          "[dataflow][trace]") {
  // MPICH's recursive doubling at p = 8, count 8: in step s the 2^(s-1) nodes of a group send
  // equal buffers, so 8 + 4 + 2 payloads of 8 items are kept for 24 transfers (192 items).
  for (DomainKind d : {DomainKind::Fingerprint, DomainKind::Exact, DomainKind::Ordered}) {
    Trace t = run_count("models/mpich/allreduce_recursive_doubling", "complete:8", d, 8);
    REQUIRE(t.transfers.size() == 24);
    CHECK(t.payload_shared);
    CHECK(payload_items(t) == 192);
    CHECK(t.payload.size() == (8 + 4 + 2) * 8);
    std::uint64_t total = 0;
    auto slot = payload_slots(t, &total);
    CHECK(total == 192);
    CHECK(slot.back() == 23 * 8);
    // The items each transfer carries are those of the trace written out one by one.
    Trace u = unshared(t);
    for (std::size_t i = 0; i < t.transfers.size(); ++i)
      CHECK(payload_to_string(t, t.transfers[i]) == payload_to_string(u, u.transfers[i]));
    for (const auto& r : check_trace(t, {})) CHECK(r.verdict != Verdict::Fail);
    if (d == DomainKind::Fingerprint) continue;  // the derivations are judged on exact terms
    Dataflow df = analyze_dataflow(t, {});
    CHECK(df.dataflow.verdict == Verdict::Pass);
    check_derivations(t, df);
  }
  // One item a message is appended as it is (a table entry would cost more than the item).
  Trace one =
      run_count("models/mpich/allreduce_recursive_doubling", "complete:8", DomainKind::Exact, 1);
  CHECK_FALSE(one.payload_shared);
  CHECK(one.payload.size() == one.transfers.size());
}

TEST_CASE("shared payloads: every reader answers as on the trace written out item by item",
          "[dataflow][trace][nodup][render][smt]") {
  struct Case {
    const char* model;
    const char* topo;
    DomainKind d;
    std::uint32_t count;
    bool smt;
  };
  for (const Case& c : {
           Case{"models/mpich/allreduce_recursive_doubling", "complete:8", DomainKind::Exact, 4,
                false},
           Case{"models/mpich/allreduce_recursive_doubling", "complete:4", DomainKind::Ordered, 4,
                true},
           Case{"models/mpich/bcast_binomial", "complete:8", DomainKind::Exact, 4, false},
           Case{"models/mpich/allgather_recursive_doubling", "complete:4", DomainKind::Ordered, 4,
                true},
           Case{"tests/mutants/dataflow_allreduce_hcube_double_send", "hypercube:3",
                DomainKind::Exact, 4, false},
           Case{"tests/mutants/nodup_ring_resend_all", "ring:4", DomainKind::Exact, 4, false},
       }) {
    INFO(c.model << " " << c.topo << " count " << c.count);
    Trace t = run_count(c.model, c.topo, c.d, c.count);
    Trace u = unshared(t);
    CHECK(answers(t, c.smt) == answers(u, c.smt));
    if (c.smt) {  // the SMT queries are the same text: the second reuses the first's answer
      auto rs = smt_check_trace(u, analyze_dataflow(u, {}), {});
      CHECK(named(rs, "postcondition").note.find("answer reused") != std::string::npos);
    }
  }
}

TEST_CASE("shared payloads: a bad send that shares an earlier send's items is judged",
          "[dataflow][trace][nodup][render][smt]") {
  // Recursive doubling at p = 4, count 4, exact: in step 2, 0 -> 2 and 1 -> 3 carry x0+x1 (one
  // payload). The mutant: 3 -> 1 in step 2 carries x0+x1 too, pointing at those items. Node 3
  // holds x2+x3 only (dataflow), node 1 already holds x0+x1 (nodup). A reader that judged a
  // payload range once, for its first transfer (which is right), would pass the mutant.
  for (DomainKind d : {DomainKind::Exact, DomainKind::Ordered}) {
    Trace t = run_count("models/mpich/allreduce_recursive_doubling", "complete:4", d, 4);
    REQUIRE(t.payload_shared);
    std::optional<std::uint32_t> good, bad;
    for (std::uint32_t i = 0; i < t.transfers.size(); ++i) {
      const Transfer& x = t.transfers[i];
      if (x.step == 2 && x.src == 0 && x.dst == 2) good = i;
      if (x.step == 2 && x.src == 3 && x.dst == 1) bad = i;
    }
    REQUIRE(good);
    REQUIRE(bad);
    t.transfers[*bad].payload_begin = t.transfers[*good].payload_begin;
    t.nodup_claimed = true;  // judged whatever the model's header says
    Trace u = unshared(t);
    auto rs = check_trace(t, {});
    for (const char* n : {"dataflow", "nodup"}) {
      INFO(n);
      const CheckResult& r = named(rs, n);
      REQUIRE(r.verdict == Verdict::Fail);
    }
    const CheckResult& df = named(rs, "dataflow");
    // The earliest: the send (node 1's later items, made without x2+x3, follow).
    REQUIRE(!df.violations.empty());
    CHECK(df.violations[0].transfers == std::vector<std::uint32_t>{*bad});
    CHECK(df.violations[0].nodes == std::vector<NodeId>{3, 1});
    if (d == DomainKind::Exact) {  // the SMT engine proves from ordered-domain traces
      CHECK(answers(t, false) == answers(u, false));
      continue;
    }
    CHECK(named(smt_check_trace(t, analyze_dataflow(t, {}), {}), "postcondition").verdict !=
          Verdict::Pass);
    CHECK(answers(t, true) == answers(u, true));
  }
}

TEST_CASE("expected outputs: one buffer for the nodes of which the collective asks the same",
          "[dataflow][trace]") {
  Trace t =
      run_count("models/mpich/allreduce_recursive_doubling", "complete:8", DomainKind::Exact, 4);
  auto refs = expected_output_refs(t, 0, 8);
  auto copies = expected_outputs(t);
  REQUIRE(refs.size() == 8);
  for (std::size_t v = 0; v < 8; ++v) {
    REQUIRE(refs[v]);
    CHECK(refs[v] == refs[0]);
    CHECK(*refs[v] == *copies[v]);
  }
  // A scan asks each node for another prefix: no sharing, each as expected_outputs says.
  Trace s = run_count("models/mpich/scan_recursive_doubling", "complete:8", DomainKind::Exact, 4);
  auto srefs = expected_output_refs(s, 0, 8);
  auto scopies = expected_outputs(s);
  for (std::size_t v = 1; v < 8; ++v) {
    REQUIRE(srefs[v]);
    CHECK(srefs[v] != srefs[0]);
    CHECK(*srefs[v] == *scopies[v]);
    CHECK(*srefs[v] != *srefs[v - 1]);
  }
  // A node whose output is not the shared expected buffer still fails the postcondition alone.
  t.final_output[5][2] = t.final_output[5][1];
  auto rs = check_trace(t, {});
  const CheckResult& post = named(rs, "postcondition");
  REQUIRE(post.verdict == Verdict::Fail);
  REQUIRE(post.violations.size() == 1);
  CHECK(post.violations[0].nodes == std::vector<NodeId>{5});
}
