// The dataflow check's walk over sets (check/dataflow_sets.hpp): a node whose buffers share their
// sets element by element is replayed once per set, and every broken input that the item walk
// fails (an element counted twice, an element of a set the sender does not hold, a whole
// buffer of one, a transfer removed, a wrong final buffer) still fails, with the same verdict,
// count and counterexample as the item walk gives (analyze_dataflow replays every node item by
// item).
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <sstream>

#include "app/verify_cmd.hpp"
#include "check/checks.hpp"
#include "check/dataflow.hpp"
#include "check/dataflow_sets.hpp"
#include "exec/executor.hpp"
#include "lang/ast.hpp"
#include "trace_util.hpp"

using namespace collv;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

Trace run_count(const std::string& model, const std::string& topo, DomainKind d,
                std::uint32_t count) {
  Model m = parse_model_file(kRoot + "/" + model + ".coll");
  RunOptions ro;
  ro.domain = d;
  ro.count = count;
  return run_model(m, Topology::parse(topo), ro);
}

const CheckResult& named(const std::vector<CheckResult>& rs, const std::string& n) {
  for (const auto& r : rs)
    if (r.name == n) return r;
  throw std::runtime_error("no check " + n);
}

// Whether the set walk replays each node (true) or hands it back to the item walk (false), with
// each node's received and sent transfers in step order (the trace's order: a run's), as the
// dataflow check lists them.
std::vector<bool> replayed(const Trace& t) {
  const std::uint32_t p = t.topology.num_processors();
  std::vector<std::vector<std::uint32_t>> in(p), out(p);
  std::vector<bool> lost(t.transfers.size(), false);
  for (auto i : t.unreceived) lost[i] = true;
  for (std::uint32_t i = 0; i < t.transfers.size(); ++i) {
    if (!lost[i]) in[t.transfers[i].dst].push_back(i);
    out[t.transfers[i].src].push_back(i);
  }
  SetFlow sf(t);
  REQUIRE(sf.usable());
  std::vector<bool> r;
  for (NodeId v = 0; v < p; ++v) r.push_back(sf.replay(v, in[v], out[v]));
  return r;
}

// The dataflow verdict as the checks give it (with the set walk) and item by item
// (analyze_dataflow: no set walk): the same verdict, violation count and counterexamples.
CheckResult both_ways(const Trace& t) {
  CheckResult fast = check_dataflow_and_match(t, {}).first;
  const CheckResult slow = analyze_dataflow(t, {}).dataflow;
  CHECK(fast.verdict == slow.verdict);
  CHECK(fast.violation_count == slow.violation_count);
  REQUIRE(fast.violations.size() == slow.violations.size());
  for (std::size_t k = 0; k < fast.violations.size(); ++k)
    CHECK(fast.violations[k].message == slow.violations[k].message);
  return fast;
}

// Transfer i carries `items` instead (at a place of their own, after the trace's payload).
void carry(Trace& t, std::uint32_t i, const std::vector<Item>& items) {
  Transfer& x = t.transfers.at(i);
  x.payload_begin = static_cast<std::uint32_t>(t.payload.size());
  x.payload_len = static_cast<std::uint16_t>(items.size());
  t.payload.insert(t.payload.end(), items.begin(), items.end());
}

std::vector<Item> items_of(const Trace& t, std::uint32_t i) {
  const Transfer& x = t.transfers.at(i);
  return {t.payload.begin() + x.payload_begin, t.payload.begin() + x.payload_begin + x.payload_len};
}

std::uint32_t transfer_at(const Trace& t, std::uint32_t step, NodeId src) {
  for (std::uint32_t i = 0; i < t.transfers.size(); ++i)
    if (t.transfers[i].step == step && t.transfers[i].src == src) return i;
  FAIL("no transfer from " << src << " in step " << step);
  return 0;
}

const char* const kRd = "models/mpich/allreduce_recursive_doubling";

}  // namespace

TEST_CASE("set walk: every node of recursive doubling is replayed once per set", "[dataflow]") {
  for (DomainKind d : {DomainKind::Exact, DomainKind::Ordered})
    for (auto [topo, count] : {std::pair<const char*, std::uint32_t>{"complete:8", 4},
                               {"complete:16", 5},
                               {"complete:6", 3}}) {
      INFO(domain_name(d) << " " << topo << " count " << count);
      Trace t = run_count(kRd, topo, d, count);
      for (bool r : replayed(t)) CHECK(r);
      CHECK(both_ways(t).verdict == Verdict::Pass);
      CHECK(both_ways(test::unshared(t)).verdict == Verdict::Pass);
    }
  // Count 1 is not factored by element: the item walk does it all.
  Trace one = run_count(kRd, "complete:8", DomainKind::Exact, 1);
  CHECK_FALSE(SetFlow(one).usable());
  CHECK_FALSE(SetFlow(run_count(kRd, "complete:8", DomainKind::Fingerprint, 4)).usable());
}

TEST_CASE("set walk: every node of the ring all-reduce is replayed once per set", "[dataflow]") {
  // The ring's full sum of a segment is made at every node from its own pair (the domain records
  // the first node's, the others as other_operands), and a node receives the full sums from its
  // own segment downwards, wrapping past element 0 (two intervals of one set). Removing any
  // transfer fails as item by item.
  const char* const ring = "models/openmpi/allreduce_ring";
  for (DomainKind d : {DomainKind::Exact, DomainKind::Ordered})
    for (auto [topo, count] :
         {std::pair<const char*, std::uint32_t>{"ring:5", 7}, {"ring:8", 8}, {"ring:8", 20}}) {
      INFO(domain_name(d) << " " << topo << " count " << count);
      const Trace good = run_count(ring, topo, d, count);
      for (bool r : replayed(good)) CHECK(r);
      CHECK(both_ways(good).verdict == Verdict::Pass);
      for (std::size_t k = 0; k < good.transfers.size(); k += 3) {
        Trace t = good;
        t.transfers.erase(t.transfers.begin() + static_cast<std::ptrdiff_t>(k));
        INFO("transfer " << k << " removed");
        CHECK(both_ways(t).verdict == Verdict::Fail);
      }
    }
}

TEST_CASE("set walk: one element of a buffer made another way is judged item by item",
          "[dataflow]") {
  for (DomainKind d : {DomainKind::Exact, DomainKind::Ordered})
    for (bool shared : {true, false}) {
      INFO(domain_name(d) << (shared ? " shared payloads" : " unshared payloads"));
      const Trace good = run_count(kRd, "complete:8", d, 4);
      Domain& dom = *good.domain;
      const std::uint32_t i = transfer_at(good, 2, 5);  // 5 -> 7 carries x4+x5 in step 2
      const std::vector<Item> sent = items_of(good, i);
      REQUIRE(sent.size() == 4);
      auto judge = [&](Trace t) {
        if (!shared) t = test::unshared(t);
        t.nodup_claimed = true;
        return std::make_pair(replayed(t), both_ways(t));
      };
      {  // element 1 counts node 5's contribution twice
        Trace t = good;
        auto items = sent;
        items[1] = dom.combine(items[1], dom.leaf(5, 1));
        carry(t, i, items);
        auto [rep, df] = judge(t);
        CHECK_FALSE(rep[5]);
        REQUIRE(df.verdict == Verdict::Fail);
        CHECK(df.violations.at(0).transfers == std::vector<std::uint32_t>{i});
        t.nodup_claimed = true;
        CHECK(named(check_trace(t, {}), "nodup").verdict == Verdict::Fail);
      }
      {  // element 2 is node 0's final item (all eight contributions): node 5 holds four
        Trace t = good;
        auto items = sent;
        items[2] = good.final_output.at(0)[2];
        carry(t, i, items);
        auto [rep, df] = judge(t);
        CHECK_FALSE(rep[5]);
        REQUIRE(df.verdict == Verdict::Fail);
        CHECK(df.violations.at(0).transfers == std::vector<std::uint32_t>{i});
      }
      {  // element 0 is node 5's own input: a copy of what it holds, so that send is right, but
         // node 7 then lacks element 0 of x4+x5 for what the run made of it
        Trace t = good;
        auto items = sent;
        items[0] = dom.leaf(5, 0);
        carry(t, i, items);
        auto [rep, df] = judge(t);
        CHECK_FALSE(rep[7]);
        REQUIRE(df.verdict == Verdict::Fail);
        for (const auto& c : df.violations) CHECK(c.transfers != std::vector<std::uint32_t>{i});
        CHECK(df.violations.at(0).nodes.at(0) == 7);
      }
    }
}

TEST_CASE("set walk: a whole buffer the sender cannot make fails", "[dataflow]") {
  for (DomainKind d : {DomainKind::Exact, DomainKind::Ordered}) {
    INFO(domain_name(d));
    const Trace good = run_count(kRd, "complete:8", d, 4);
    Domain& dom = *good.domain;
    const std::uint32_t i = transfer_at(good, 2, 5);
    const std::vector<Item> sent = items_of(good, i);
    {  // every element is node 7's input, which node 5 never received
      Trace t = good;
      std::vector<Item> items;
      for (std::uint32_t e = 0; e < 4; ++e) items.push_back(dom.leaf(7, e));
      carry(t, i, items);
      CHECK_FALSE(replayed(t)[5]);
      CheckResult df = both_ways(t);
      REQUIRE(df.verdict == Verdict::Fail);
      CHECK(df.violations.at(0).transfers == std::vector<std::uint32_t>{i});
    }
    {  // every element counts node 5's contribution twice (one set, repeated)
      Trace t = good;
      std::vector<Item> items;
      for (std::uint32_t e = 0; e < 4; ++e) items.push_back(dom.combine(sent[e], dom.leaf(5, e)));
      carry(t, i, items);
      CHECK_FALSE(replayed(t)[5]);
      CheckResult df = both_ways(t);
      REQUIRE(df.verdict == Verdict::Fail);
      CHECK(df.violations.at(0).transfers == std::vector<std::uint32_t>{i});
    }
    {  // node 3's last element counts its own contribution twice at the end
      Trace t = good;
      Item& last = t.final_output.at(3)[3];
      last = dom.combine(last, dom.leaf(3, 3));
      CHECK_FALSE(replayed(t)[3]);
      CheckResult df = both_ways(t);
      REQUIRE(df.verdict == Verdict::Fail);
      CHECK(df.violations.at(0).nodes == std::vector<NodeId>{3});
    }
  }
}

TEST_CASE("set walk: removing any one transfer of recursive doubling is caught", "[dataflow]") {
  for (DomainKind d : {DomainKind::Exact, DomainKind::Ordered}) {
    const Trace good = run_count(kRd, "complete:8", d, 4);
    for (std::size_t k = 0; k < good.transfers.size(); ++k) {
      Trace t = good;
      t.transfers.erase(t.transfers.begin() + static_cast<std::ptrdiff_t>(k));
      INFO(domain_name(d) << ": transfer " << k << " removed");
      CHECK(both_ways(t).verdict == Verdict::Fail);
    }
  }
}

TEST_CASE("set walk: every model at count 3 gets the item walk's dataflow verdict",
          "[dataflow][slow]") {
  VerifyOptions o;
  o.all = true;
  o.models_dir = kRoot + "/models";
  o.quiet = true;
  o.domain = "all";
  o.max_p = 8;
  o.max_star = 3;
  o.counts = {3, 3};
  o.engine = "both";  // the comparison below plugs in as the second engine, adding no verdict
  std::size_t runs = 0, sets = 0, nodes = 0, replays = 0;
  std::map<std::string, int> differ;
  ExtraEngine compare = [&](const Model& m, const Topology&, const RunOptions&, const Trace& t) {
    if (t.streamed) return std::vector<CheckResult>{};
    ++runs;
    const CheckResult fast = check_dataflow_and_match(t, {}).first;
    const CheckResult slow = analyze_dataflow(t, {}).dataflow;
    if (fast.verdict != slow.verdict || fast.violation_count != slow.violation_count)
      ++differ[m.header.name];
    if (SetFlow(t).usable()) {
      ++sets;
      const std::vector<bool> r = replayed(t);
      nodes += r.size();
      replays += static_cast<std::size_t>(std::count(r.begin(), r.end(), true));
    }
    return std::vector<CheckResult>{};
  };
  std::ostringstream err;
  VerifyReport rep = verify(o, compare, err);
  INFO(err.str());
  CHECK(runs > 500);
  for (const auto& [model, n] : differ)
    FAIL_CHECK("the verdicts differ on " << model << " (" << n << " runs)");
  CHECK(sets > runs / 3);      // the exact and ordered runs
  CHECK(replays > nodes / 2);  // most nodes of most models go the set way
}
