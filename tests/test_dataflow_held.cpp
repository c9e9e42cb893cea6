// The dataflow check on fingerprint runs by membership (check/dataflow_held.hpp): the count of
// items a node sends or keeps without holding them, and so the verdict and its note, is the one
// the item walk gives (analyze_dataflow replays every node item by item) and the one a plain
// set per node gives (below), on correct runs and on broken ones: an item the sender does not
// hold, a whole payload it received sent on, a payload received twice, a transfer removed or
// never received, a wrong final buffer.
#include <catch2/catch.hpp>
#include <map>
#include <sstream>
#include <unordered_set>

#include "app/verify_cmd.hpp"
#include "check/checks.hpp"
#include "check/dataflow.hpp"
#include "check/dataflow_held.hpp"
#include "exec/executor.hpp"
#include "lang/ast.hpp"
#include "trace_util.hpp"

using namespace collv;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;
const char* const kRd = "models/mpich/allreduce_recursive_doubling";
const char* const kAllgather = "models/mpich/allgather_ring";

Trace run_fp(const std::string& model, const std::string& topo, std::uint32_t count) {
  Model m = parse_model_file(kRoot + "/" + model + ".coll");
  RunOptions ro;
  ro.domain = DomainKind::Fingerprint;
  ro.count = count;
  return run_model(m, Topology::parse(topo), ro);
}

// Each node's received and sent transfers in step order (a run's trace is in step order).
struct Lists {
  std::vector<std::vector<std::uint32_t>> in, out;
};
Lists lists(const Trace& t) {
  const std::uint32_t p = t.topology.num_processors();
  Lists l{std::vector<std::vector<std::uint32_t>>(p), std::vector<std::vector<std::uint32_t>>(p)};
  std::vector<bool> lost(t.transfers.size(), false);
  for (auto i : t.unreceived) lost[i] = true;
  for (std::uint32_t i = 0; i < t.transfers.size(); ++i) {
    if (!lost[i]) l.in[t.transfers[i].dst].push_back(i);
    l.out[t.transfers[i].src].push_back(i);
  }
  return l;
}

// The items sent or kept that their node does not hold, counted with a std::unordered_set per
// node: what HeldFlow must give.
std::uint64_t plain_count(const Trace& t) {
  const Lists l = lists(t);
  std::uint64_t missing = 0;
  for (NodeId v = 0; v < l.in.size(); ++v) {
    std::unordered_set<Item> held;
    if (v < t.initial_input.size())
      held.insert(t.initial_input[v].begin(), t.initial_input[v].end());
    std::size_t j = 0;
    auto take_until = [&](std::uint32_t step) {
      for (; j < l.in[v].size() && t.transfers[l.in[v][j]].step < step; ++j) {
        const Transfer& x = t.transfers[l.in[v][j]];
        held.insert(t.payload.begin() + x.payload_begin,
                    t.payload.begin() + x.payload_begin + x.payload_len);
      }
    };
    auto judge = [&](const Item* items, std::size_t n) {
      for (std::size_t k = 0; k < n; ++k)
        if (items[k] != 0 && !held.count(items[k])) ++missing;
    };
    for (const std::uint32_t i : l.out[v]) {
      const Transfer& x = t.transfers[i];
      take_until(x.step);
      judge(t.payload.data() + x.payload_begin, x.payload_len);
    }
    take_until(UINT32_MAX);
    if (v < t.final_output.size()) judge(t.final_output[v].data(), t.final_output[v].size());
  }
  return missing;
}

struct HeldCount {
  std::uint64_t missing = 0, skipped = 0;
};
HeldCount held_count(const Trace& t) {
  const Lists l = lists(t);
  HeldFlow h(t);
  REQUIRE(h.usable());
  HeldCount c;
  for (NodeId v = 0; v < l.in.size(); ++v) c.missing += h.replay(v, l.in[v], l.out[v]);
  c.skipped = h.payloads_skipped();
  return c;
}

// The dataflow verdict as check_trace gives it (HeldFlow) and item by item: the same verdict and
// note (the note says how many items could not be judged). Returns the check's result.
CheckResult both_ways(const Trace& t) {
  const CheckResult fast = check_dataflow_and_match(t, {}).first;
  const CheckResult slow = analyze_dataflow(t, {}).dataflow;
  CHECK(fast.verdict == slow.verdict);
  CHECK(fast.violation_count == slow.violation_count);
  CHECK(fast.note == slow.note);
  CHECK(held_count(t).missing == plain_count(t));
  return fast;
}

std::string count_note(std::uint64_t n) {
  return "fingerprint domain: " + std::to_string(n) + " item(s) are not held";
}

std::uint32_t transfer_at(const Trace& t, std::uint32_t step, NodeId src) {
  for (std::uint32_t i = 0; i < t.transfers.size(); ++i)
    if (t.transfers[i].step == step && t.transfers[i].src == src) return i;
  FAIL("no transfer from " << src << " in step " << step);
  return 0;
}

}  // namespace

TEST_CASE("held replay: recursive doubling counts what the item walk counts", "[dataflow]") {
  for (auto [topo, count] : {std::pair<const char*, std::uint32_t>{"complete:8", 4},
                             {"complete:16", 5},
                             {"complete:6", 3}}) {
    INFO(topo << " count " << count);
    const Trace t = run_fp(kRd, topo, count);
    CheckResult df = both_ways(t);
    // Every buffer sent after the first step is a combination: not held, so not checked.
    CHECK(df.verdict == Verdict::NotChecked);
    CHECK(held_count(t).missing > 0);
    both_ways(test::unshared(t));
  }
  // Only a run in the fingerprint domain: a schedule file's sums are searched, and the exact
  // domain derives combinations.
  Trace file = run_fp(kRd, "complete:8", 4);
  file.from_file = true;
  CHECK_FALSE(HeldFlow(file).usable());
  Model m = parse_model_file(kRoot + "/" + kRd + ".coll");
  RunOptions ro;
  ro.count = 4;
  CHECK_FALSE(HeldFlow(run_model(m, Topology::parse("complete:8"), ro)).usable());
}

TEST_CASE("held replay: an item the sender does not hold is counted", "[dataflow]") {
  // The ring allgather forwards what it received: every item is held (pass).
  const Trace good = run_fp(kAllgather, "ring:6", 4);
  REQUIRE(both_ways(good).verdict == Verdict::Pass);
  REQUIRE(held_count(good).missing == 0);
  for (bool shared : {true, false}) {
    INFO((shared ? "shared payloads" : "unshared payloads"));
    Trace t = shared ? good : test::unshared(good);
    // Node 2's step-3 send carries, in place of one item, node 5's input: it never got that.
    const std::uint32_t i = transfer_at(t, 3, 2);
    const Transfer x = t.transfers[i];
    std::vector<Item> items(t.payload.begin() + x.payload_begin,
                            t.payload.begin() + x.payload_begin + x.payload_len);
    items.at(0) = t.initial_input.at(5)[1];
    t.transfers[i].payload_begin = static_cast<std::uint32_t>(t.payload.size());
    t.payload.insert(t.payload.end(), items.begin(), items.end());
    CheckResult df = both_ways(t);
    CHECK(df.verdict == Verdict::NotChecked);
    // That send, and the original item in the final buffer of every node it then reaches (the
    // receiver forwards the replacement: nobody after node 2 gets the original).
    INFO(df.note);
    CHECK(plain_count(t) > 1);
    CHECK(df.note.find(count_note(plain_count(t))) != std::string::npos);
  }
  {  // the identity kept: derived from nothing (the postcondition judges it)
    Trace t = good;
    t.final_output.at(3)[0] = 0;
    CHECK(both_ways(t).verdict == Verdict::Pass);
    CHECK(held_count(t).missing == 0);
  }
  {  // the identity sent in place of an item, against a value no node holds at first: the same
     // nodes miss the original item in their final buffers, and the value counts once more
     // where it is first sent (the forwards of a block share its items: the others received it)
    Trace zero = good, other = good;
    const std::size_t at = good.transfers.at(transfer_at(good, 2, 1)).payload_begin + 1;
    zero.payload.at(at) = 0;
    other.payload.at(at) = 0x1234567;
    both_ways(zero);
    both_ways(other);
    CHECK(held_count(zero).missing > 0);
    CHECK(held_count(other).missing == held_count(zero).missing + 1);
  }
  {  // a final item no one sent
    Trace t = good;
    t.final_output.at(4)[2] = 0x1234567;
    CheckResult df = both_ways(t);
    CHECK(df.note.find(count_note(1)) != std::string::npos);
  }
}

TEST_CASE("held replay: a payload received and sent on is held whole", "[dataflow]") {
  // Recursive doubling: node 5 sends, in step 3, what it received in step 2 (held whole: the
  // shortcut), and in another run, what it sends in step 3 goes out again in step 2 (one step
  // early: not held).
  const Trace good = run_fp(kRd, "complete:8", 4);
  const std::uint32_t got = transfer_at(good, 2, 7);  // 7 -> 5 in step 2
  REQUIRE(good.transfers[got].dst == 5);
  const std::uint32_t late = transfer_at(good, 3, 5), early = transfer_at(good, 2, 5);
  const std::uint64_t base = held_count(good).missing;
  {
    Trace t = good;
    t.transfers[late].payload_begin = good.transfers[got].payload_begin;
    const HeldCount c = held_count(t);
    CHECK(c.skipped == 1);
    CHECK(c.missing == base - 4);  // four combinations fewer
    both_ways(t);
    // Unshared, the same items are looked up one by one: the same count.
    CHECK(held_count(test::unshared(t)).skipped == 0);
    CHECK(held_count(test::unshared(t)).missing == base - 4);
  }
  {  // the same place, but four items longer: node 6's inputs, which node 5 does not hold
    Trace t = good;
    const auto at = static_cast<std::uint32_t>(t.payload.size());
    const Transfer g = t.transfers[got];
    t.payload.insert(t.payload.end(), good.payload.begin() + g.payload_begin,
                     good.payload.begin() + g.payload_begin + g.payload_len);
    for (std::uint32_t e = 0; e < 4; ++e) t.payload.push_back(t.initial_input.at(6)[e]);
    t.transfers[got].payload_begin = at;
    t.transfers[late].payload_begin = at;
    t.transfers[late].payload_len = 8;
    const HeldCount c = held_count(t);
    CHECK(c.skipped == 0);
    CHECK(c.missing == base);  // four combinations fewer, four inputs of node 6 more
    both_ways(t);
  }
  {
    Trace t = good;
    t.transfers[early].payload_begin = good.transfers[got].payload_begin;  // not yet received
    const HeldCount c = held_count(t);
    CHECK(c.skipped == 0);
    CHECK(c.missing == base);  // node 5 sends 7's items it does not hold yet (4 for 4)
    both_ways(t);
  }
}

TEST_CASE("held replay: transfers removed, repeated or never received", "[dataflow]") {
  const Trace good = run_fp(kAllgather, "ring:5", 4);
  for (std::size_t k = 0; k < good.transfers.size(); ++k) {
    INFO("transfer " << k);
    {  // removed: what its receiver forwards later is not held
      Trace t = good;
      t.transfers.erase(t.transfers.begin() + static_cast<std::ptrdiff_t>(k));
      both_ways(t);
    }
    {  // never received: the same, and the match check fails
      Trace t = good;
      t.unreceived = {static_cast<std::uint32_t>(k)};
      both_ways(t);
      CHECK(check_dataflow_and_match(t, {}).second.verdict == Verdict::Fail);
    }
  }
  {  // a transfer received twice (the same payload, added once): nothing changes
    Trace t = good;
    t.transfers.insert(t.transfers.begin() + 1, t.transfers[0]);
    CHECK(both_ways(t).verdict == Verdict::Pass);
    CHECK(held_count(t).missing == 0);
  }
  // Removing node 0's first transfer leaves its receiver without node 0's items.
  Trace t = good;
  const std::uint32_t first = transfer_at(t, 1, 0);
  t.transfers.erase(t.transfers.begin() + first);
  CHECK(both_ways(t).verdict == Verdict::NotChecked);
  CHECK(held_count(t).missing > 0);
}

TEST_CASE("held replay: every model in the fingerprint domain gets the item walk's verdict",
          "[dataflow]") {
  VerifyOptions o;
  o.all = true;
  o.models_dir = kRoot + "/models";
  o.quiet = true;
  o.domain = "fingerprint";
  o.max_p = 8;
  o.max_star = 3;
  o.counts = {3, 3};
  o.engine = "both";  // the comparison below plugs in as the second engine, adding no verdict
  std::size_t runs = 0, missing = 0;
  std::map<std::string, int> differ;
  ExtraEngine compare = [&](const Model& m, const Topology&, const RunOptions&, const Trace& t) {
    if (t.streamed) return std::vector<CheckResult>{};
    ++runs;
    const CheckResult fast = check_dataflow_and_match(t, {}).first;
    const CheckResult slow = analyze_dataflow(t, {}).dataflow;
    if (fast.verdict != slow.verdict || fast.note != slow.note) ++differ[m.header.name];
    if (fast.verdict == Verdict::NotChecked) ++missing;
    return std::vector<CheckResult>{};
  };
  std::ostringstream err;
  VerifyReport rep = verify(o, compare, err);
  INFO(err.str());
  CHECK(runs > 2000);
  CHECK(missing > runs / 4);  // the reductions: their combinations are not held
  for (const auto& [model, n] : differ)
    FAIL_CHECK("the verdicts differ on " << model << " (" << n << " runs)");
}
