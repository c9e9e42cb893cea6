// The executor: step counts and costs the sources state, final buffers against hand-computed
// values, and the ways a run can stop early (deadlock, step limit, op limit, runtime error).
#include <catch2/catch.hpp>
#include <numeric>

#include "exec/executor.hpp"

using namespace collv;

namespace {

Trace run_text(const std::string& text, const std::string& spec, RunOptions o = {}) {
  Model m = parse_model(text, "t.coll");
  return run_model(m, Topology::parse(spec), o);
}

// The numeric value of an exact-domain item when node i's input is vals[i].
long long value_of(const Trace& t, Item it, const std::vector<long long>& vals) {
  long long s = 0;
  for (auto c : t.domain->terms(it)) s += vals.at(c / t.domain->elems());
  return s;
}

std::vector<std::uint32_t> iota_terms(std::uint32_t p) {
  std::vector<std::uint32_t> v(p);
  std::iota(v.begin(), v.end(), 0u);
  return v;
}

const char* kStarAllreduce = R"(model allreduce_star
  collective allreduce
  topology star
  input x
  output local
  steps n*(n-1)/2
  cost (ts + tw*m) * n*(n-1)/2
procedure ALL_REDUCE(x)
begin
  local := x;
  for k := 2 to n do
    send local along link k;
    result := local;
    receive out along link k;
    for dd := k - 1 downto 2 do
      send out along link dd;
      receive r along link dd;
      result := result + r;
    endfor;
    local := result + out;
  endfor;
end ALL_REDUCE
)";

const char* kRingAllgather = R"(model allgather_ring
  collective allgather
  topology ring
  input my_msg
  output result
procedure ALL_TO_ALL_BC_RING(my_id, my_msg, p, result)
begin
  left := (my_id - 1) mod p;
  right := (my_id + 1) mod p;
  result := my_msg;
  msg := result;
  for i := 1 to p - 1 do
    send msg to right;
    receive msg from left;
    result := result ∪ msg;
  endfor;
end ALL_TO_ALL_BC_RING
)";

const char* kHcubeAllgather = R"(model allgather_hcube
  collective allgather
  topology hypercube
  input my_msg
  output result
procedure ALL_TO_ALL_BC_HCUBE(my_id, my_msg, d, result)
begin
  result := my_msg;
  for i := 0 to d - 1 do
    partner := my_id XOR 2^i;
    send result to partner;
    receive msg from partner;
    result := result ∪ msg;
  endfor;
end ALL_TO_ALL_BC_HCUBE
)";

const char* kPrefix = R"(model prefix
  collective scan
  topology hypercube
  input my_number
  output result
procedure PREFIX_SUMS_HCUBE(my_id, my_number, d, result)
begin
  result := my_number;
  msg := result;
  for i := 0 to d - 1 do
    partner := my_id XOR 2^i;
    send msg to partner;
    receive number from partner;
    msg := msg + number;
    if (partner < my_id) then result := result + number;
  endfor;
end PREFIX_SUMS_HCUBE
)";

std::string simple(const std::string& body, const std::string& coll = "allreduce") {
  return "model t\n  collective " + coll + "\n  input x\n  output x\nprocedure P\nbegin\n" + body +
         "end P\n";
}

}  // namespace

TEST_CASE("star all-reduce takes n(n-1)/2 steps and every node holds each input once", "[exec]") {
  for (int n = 2; n <= 6; ++n) {
    Trace t = run_text(kStarAllreduce, "star:" + std::to_string(n));
    INFO("n = " << n);
    REQUIRE(t.failure.kind == RunFailure::Kind::None);
    CHECK(t.steps == static_cast<std::uint32_t>(n * (n - 1) / 2));
    CHECK(t.cost_ts == n * (n - 1) / 2);
    CHECK(t.cost_tw == n * (n - 1) / 2);
    REQUIRE(t.claimed_steps.has_value());
    CHECK(*t.claimed_steps == n * (n - 1) / 2);
    auto p = static_cast<std::uint32_t>(t.topology.num_processors());
    for (NodeId v = 0; v < p; ++v) {
      REQUIRE(t.final_output[v].size() == 1);
      CHECK(t.domain->terms(t.final_output[v][0]) == iota_terms(p));
    }
  }
}

TEST_CASE("the paper's Fig. 1: all-reduce on S3 with node i holding i+1", "[exec]") {
  Trace t = run_text(kStarAllreduce, "star:3");
  std::vector<long long> vals{1, 2, 3, 4, 5, 6};
  for (NodeId v = 0; v < 6; ++v) CHECK(value_of(t, t.final_output[v][0], vals) == 21);
  // Step 1 exchanges along link 2: 123 <-> 213 carry 1 and 3 (ranks 0 and 2).
  auto order = t.ordered_transfers();
  const Transfer& first = t.transfers[order[0]];
  CHECK(first.step == 1);
  CHECK(t.topology.label(first.src) == "123");
  CHECK(t.topology.label(first.dst) == "213");
  CHECK(value_of(t, t.payload[first.payload_begin], vals) == 1);
  // Step 2 sends the local sums (pairs along link 2) along link 3: 123 sends 1+3 = 4 to 321.
  bool seen = false;
  for (auto i : order) {
    const Transfer& x = t.transfers[i];
    if (x.step == 2 && t.topology.label(x.src) == "123") {
      CHECK(t.topology.label(x.dst) == "321");
      CHECK(value_of(t, t.payload[x.payload_begin], vals) == 4);
      seen = true;
    }
  }
  CHECK(seen);
}

TEST_CASE("ring all-to-all broadcast takes p-1 steps and gathers every message", "[exec]") {
  for (int p : {2, 3, 5, 8}) {
    Trace t = run_text(kRingAllgather, "ring:" + std::to_string(p));
    CHECK(t.steps == static_cast<std::uint32_t>(p - 1));
    CHECK(t.cost_tw == p - 1);
    for (NodeId v = 0; v < static_cast<NodeId>(p); ++v) {
      std::vector<std::uint32_t> got;
      for (Item it : t.final_output[v]) {
        auto ts = t.domain->terms(it);
        REQUIRE(ts.size() == 1);
        got.push_back(ts[0]);
      }
      std::sort(got.begin(), got.end());
      CHECK(got == iota_terms(p));
    }
  }
}

TEST_CASE("hypercube all-to-all broadcast: log p steps, cost ts log p + tw m (p-1)", "[exec]") {
  Trace t = run_text(kHcubeAllgather, "hypercube:3");
  CHECK(t.steps == 3);
  CHECK(t.cost_ts == 3);
  CHECK(t.cost_tw == 7);
  for (NodeId v = 0; v < 8; ++v) CHECK(t.final_output[v].size() == 8);
}

TEST_CASE("the hypercube pattern on ring:8 congests links 1, 2 and 4 deep (Figure 4.12)",
          "[exec]") {
  Trace t = run_text(kHcubeAllgather, "ring:8");
  REQUIRE(t.per_step.size() == 3);
  CHECK(t.per_step[0].max_link_transfers == 1);
  CHECK(t.per_step[1].max_link_transfers == 2);
  CHECK(t.per_step[2].max_link_transfers == 4);
  // Items on the busiest link: 1*1, 2*2, 4*4.
  CHECK(t.per_step[2].max_link_items == 16);
  CHECK(t.cost_tw == 1 + 4 + 16);
}

TEST_CASE("prefix sums of <3,1,4,0,2,...> are <3,4,8,8,10,...>", "[exec]") {
  Trace t = run_text(kPrefix, "hypercube:3");
  std::vector<long long> vals{3, 1, 4, 0, 2, 5, 9, 2};
  std::vector<long long> want{3, 4, 8, 8, 10, 15, 24, 26};
  for (NodeId v = 0; v < 8; ++v) CHECK(value_of(t, t.final_output[v][0], vals) == want[v]);
}

TEST_CASE("Algorithm 4.9 as printed puts the partner's sum on the wrong side", "[exec]") {
  RunOptions o;
  o.domain = DomainKind::Ordered;
  Trace t = run_text(kPrefix, "hypercube:2", o);
  // Node 1 receives x0 from partner 0 < 1 and computes result + number = x1 + x0.
  CHECK(t.domain->terms(t.final_output[1][0]) == std::vector<std::uint32_t>{1, 0});
  CHECK(t.domain->describe(t.final_output[1][0]) == "x1+x0");
  CHECK(t.domain->terms(t.final_output[0][0]) == std::vector<std::uint32_t>{0});
}

TEST_CASE("the fingerprint domain agrees with the exact one on sums", "[exec]") {
  RunOptions o;
  o.domain = DomainKind::Fingerprint;
  o.seed = 7;
  Trace t = run_text(kStarAllreduce, "star:4", o);
  Item expect = 0;
  for (NodeId v = 0; v < 24; ++v) expect += t.domain->leaf(v, 0);
  for (NodeId v = 0; v < 24; ++v) CHECK(t.final_output[v][0] == expect);
  CHECK(t.steps == 6);
}

// `x := y + z` of data variables holding one item each runs column to column
// (Statements::combine_in_place); what it does not handle takes the general path.
TEST_CASE("a sum of one-item buffers combined in place catches a wrong operand", "[exec]") {
  // The all-reduce that adds the sub-star sum it forwards (out) instead of the one it received
  // (r): some node's result misses inputs and counts others twice, in both domains.
  std::string broken = kStarAllreduce;
  const std::string good = "result := result + r;";
  broken.replace(broken.find(good), good.size(), "result := result + out;");
  Trace e = run_text(broken, "star:4");
  REQUIRE(e.failure.kind == RunFailure::Kind::None);
  std::uint32_t wrong = 0;
  for (NodeId v = 0; v < 24; ++v) wrong += e.domain->terms(e.final_output[v][0]) != iota_terms(24);
  CHECK(wrong > 0);
  RunOptions o;
  o.domain = DomainKind::Fingerprint;
  Trace f = run_text(broken, "star:4", o);
  Item expect = 0;
  for (NodeId v = 0; v < 24; ++v) expect += f.domain->leaf(v, 0);
  wrong = 0;
  for (NodeId v = 0; v < 24; ++v) wrong += f.final_output[v][0] != expect;
  CHECK(wrong > 0);
}

TEST_CASE("one-item sends and receives in place catch a wrong variable sent", "[exec]") {
  // The all-reduce that forwards its own sub-star's sum (local) along the inner links instead of
  // the one it received (out): the one-item send and (streamed) receive carry what the model says,
  // and the results are wrong, streamed and stored.
  std::string broken = kStarAllreduce;
  const std::string good = "send out along link dd;";
  broken.replace(broken.find(good), good.size(), "send local along link dd;");
  for (auto mode : {RunOptions::Stream::Off, RunOptions::Stream::On}) {
    RunOptions o;
    o.stream = mode;
    Trace e = run_text(broken, "star:4", o);
    REQUIRE(e.failure.kind == RunFailure::Kind::None);
    std::uint32_t wrong = 0;
    for (NodeId v = 0; v < 24; ++v)
      wrong += e.domain->terms(e.final_output[v][0]) != iota_terms(24);
    CHECK(wrong > 0);
  }
  // A chunk where one node's variable holds two items is sent by the general path, and its
  // message received by the general one beside one-item messages: the receiver gets both.
  for (auto mode : {RunOptions::Stream::Off, RunOptions::Stream::On}) {
    RunOptions o;
    o.stream = mode;
    Trace t = run_text(simple("  if my_id = 1 then x := x \xE2\x88\xAA x; endif;\n"
                              "  send x to (my_id + 1) mod p;\n"
                              "  receive x from (my_id + p - 1) mod p;\n",
                              "allgather"),
                       "ring:3", o);
    REQUIRE(t.failure.kind == RunFailure::Kind::None);
    CHECK(t.final_output[2].size() == 2);
    CHECK(t.final_output[0].size() == 1);
    CHECK(t.domain->terms(t.final_output[2][1]) == std::vector<std::uint32_t>{1});
  }
}

TEST_CASE("a sum of buffers not all of one item takes the general path", "[exec]") {
  // Node 1's y holds two items, the others' one: the chunk falls back, and the general path
  // reports the lengths that differ.
  Trace t = run_text(simple("  y := x;\n  if my_id = 1 then y := x \xE2\x88\xAA x; endif;\n"
                            "  x := x + y;\n"),
                     "ring:3");
  REQUIRE(t.failure.kind == RunFailure::Kind::RuntimeError);
  CHECK(t.failure.message.find("runtime error at node 1 (1): '+' combines buffers item by item, "
                               "but they hold 1 and 2 items") != std::string::npos);
  // Two items a buffer (count 2): combined item by item by the general path.
  RunOptions o;
  o.domain = DomainKind::Fingerprint;
  o.count = 2;
  Trace c = run_text(simple("  y := x;\n  x := x + y;\n"), "ring:3", o);
  REQUIRE(c.failure.kind == RunFailure::Kind::None);
  for (NodeId v = 0; v < 3; ++v) {
    REQUIRE(c.final_output[v].size() == 2);
    for (std::uint32_t k = 0; k < 2; ++k)
      CHECK(c.final_output[v][k] == c.domain->combine(c.domain->leaf(v, k), c.domain->leaf(v, k)));
  }
}

TEST_CASE("a receive written before the matching send in program order still completes", "[exec]") {
  Trace t = run_text(
      simple("  if my_id = 1 then\n    receive x from 0;\n  else\n    send x to 1;\n  endif\n",
             "broadcast"),
      "line:2");
  REQUIRE(t.failure.kind == RunFailure::Kind::None);
  CHECK(t.steps == 1);
  REQUIRE(t.final_output[1].size() == 1);
  CHECK(t.domain->describe(t.final_output[1][0]) == "x0");
}

TEST_CASE("a deadlock is reported with the cycle of waiting nodes", "[exec]") {
  Trace t = run_text(
      simple("  partner := my_id XOR 1;\n  receive y from partner;\n  send x to partner;\n"),
      "hypercube:1");
  REQUIRE(t.failure.kind == RunFailure::Kind::Deadlock);
  CHECK(t.failure.cycle_closed);
  CHECK(t.failure.waiting_cycle == std::vector<NodeId>{0, 1});
  CHECK(t.failure.message.find("t.coll:8:3: deadlock: 2 of 2 nodes wait for ever") == 0);
}

TEST_CASE("a node waiting for one that finished is a deadlock chain, not a cycle", "[exec]") {
  Trace t = run_text(simple("  if my_id = 0 then receive y from 1; endif\n"), "line:2");
  REQUIRE(t.failure.kind == RunFailure::Kind::Deadlock);
  CHECK_FALSE(t.failure.cycle_closed);
  CHECK(t.failure.waiting == std::vector<NodeId>{0});
  CHECK(t.failure.message.find("0 -> 1 (finished)") != std::string::npos);
}

TEST_CASE("a run past the step limit stops with a clear message", "[exec]") {
  RunOptions o;
  o.max_steps = 50;
  Trace t = run_text(simple("  while 1 = 1 do\n    send x to (my_id + 1) mod p;\n    receive x "
                            "from (my_id - 1) mod p;\n  endwhile\n"),
                     "ring:4", o);
  REQUIRE(t.failure.kind == RunFailure::Kind::StepLimit);
  CHECK(t.failure.message.find("past the step limit 50") != std::string::npos);
  CHECK(t.steps == 50);
}

TEST_CASE("a loop that never sends stops at the operation limit", "[exec]") {
  RunOptions o;
  o.max_ops_per_node = 1000;
  Trace t = run_text(simple("  y := 0;\n  while y >= 0 do y := y + 1; endwhile\n"), "ring:3", o);
  CHECK(t.failure.kind == RunFailure::Kind::OpLimit);
}

TEST_CASE("runtime errors name the position and the node", "[exec]") {
  Trace t = run_text(simple("  y := x[3];\n"), "ring:3");
  REQUIRE(t.failure.kind == RunFailure::Kind::RuntimeError);
  CHECK(t.failure.message ==
        "t.coll:7:9: runtime error at node 0 (0): index 3 is out of range for a buffer of 1 items");
  Trace s = run_text(simple("  send x to p;\n"), "ring:3");
  CHECK(s.failure.message.find("node 3 does not exist (p = 3)") != std::string::npos);
  Trace z = run_text(simple("  y := 1 div (my_id - 1);\n"), "ring:3");
  CHECK(z.failure.message.find("runtime error at node 1 (1): division by zero") !=
        std::string::npos);
  Trace l = run_text(simple("  send x along link 5;\n"), "star:3");
  CHECK(l.failure.message.find("no link 5 at this node") != std::string::npos);
}

TEST_CASE("runs too large for the memory limit are refused up front", "[exec]") {
  RunOptions o;
  o.max_memory = 1 << 20;
  CHECK_THROWS_AS(run_text(kStarAllreduce, "star:7", o), LimitError);
}

// `x := x + y` and `x := y + x` over buffers of two items or more combine into x in place
// (Statements::combine_into_operand), in operand order; anything else takes the general path.
TEST_CASE("a sum into one of its operands at count 3 keeps operand order", "[exec]") {
  auto doubling = [](const std::string& combine) {
    return simple(
        "  mask := 1;\n  while mask < p do\n    partner := my_id XOR mask;\n"
        "    send x to partner;\n    receive y from partner;\n" +
        combine + "    mask := mask * 2;\n  endwhile\n");
  };
  const std::string good = "    if partner < my_id then x := y + x; else x := x + y; endif;\n";
  // In rank order at every node (the ordered domain keeps operand order): element k is
  // x0.k + x1.k + ... + x7.k, contribution ids 3 v + k.
  auto in_rank_order = [](const Trace& t) {
    std::uint32_t right = 0;
    for (NodeId v = 0; v < 8; ++v)
      for (std::uint32_t k = 0; k < 3; ++k) {
        std::vector<std::uint32_t> want;
        for (std::uint32_t u = 0; u < 8; ++u) want.push_back(3 * u + k);
        right += t.domain->terms(t.final_output[v][k]) == want;
      }
    return right;
  };
  RunOptions o;
  o.domain = DomainKind::Ordered;
  o.count = 3;
  Trace t = run_text(doubling(good), "complete:8", o);
  REQUIRE(t.failure.kind == RunFailure::Kind::None);
  CHECK(in_rank_order(t) == 24);
  // The operands the other way round at every node: most results out of rank order.
  Trace swapped = run_text(doubling("    x := y + x;\n"), "complete:8", o);
  REQUIRE(swapped.failure.kind == RunFailure::Kind::None);
  CHECK(in_rank_order(swapped) < 24);
  // x := x + x: each node's own items doubled, never the others' (exact and fingerprint).
  for (DomainKind d : {DomainKind::Exact, DomainKind::Fingerprint}) {
    RunOptions e;
    e.domain = d;
    e.count = 3;
    Trace twice = run_text(simple("  x := x + x;\n"), "ring:3", e);
    REQUIRE(twice.failure.kind == RunFailure::Kind::None);
    for (NodeId v = 0; v < 3; ++v)
      for (std::uint32_t k = 0; k < 3; ++k)
        CHECK(twice.final_output[v][k] ==
              twice.domain->combine(twice.domain->leaf(v, k), twice.domain->leaf(v, k)));
  }
  // Lengths that differ at one node: the general path's error, at that node.
  RunOptions c;
  c.count = 2;
  Trace bad = run_text(
      simple("  y := x;\n  if my_id = 1 then y := x \xE2\x88\xAA x; endif;\n  x := y + x;\n"),
      "ring:3", c);
  REQUIRE(bad.failure.kind == RunFailure::Kind::RuntimeError);
  CHECK(bad.failure.message.find("runtime error at node 1 (1): '+' combines buffers item by "
                                 "item, but they hold 4 and 2 items") != std::string::npos);
}
