// The exact and ordered value domains (exec/domain_sets.cpp): items held as interned sets of
// rank runs factored by element, against a plain std::vector reference of their terms; and the
// checks that read items (nodup, dataflow, postcondition, operand order) still failing on broken
// models at p = 1,024, where every item is a set of runs shared by all elements.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <string>

#include "check/checks.hpp"
#include "exec/domain.hpp"
#include "exec/domain_sets.hpp"
#include "exec/executor.hpp"

using namespace collv;

namespace {

using Terms = std::vector<std::uint32_t>;

// What the item is, by the domain's definition: the terms of a + b are a's then b's (ordered),
// or both sorted together (exact).
Terms joined(DomainKind k, const Terms& a, const Terms& b) {
  Terms r = a;
  r.insert(r.end(), b.begin(), b.end());
  if (k == DomainKind::Exact) std::sort(r.begin(), r.end());
  return r;
}

bool repeats(Terms t) {
  std::sort(t.begin(), t.end());
  return std::adjacent_find(t.begin(), t.end()) != t.end();
}

// Random combines of leaves, of rank intervals made from terms, and of items already made (runs
// that meet, overlap, repeat, wrap around, and mix elements), each checked against the reference.
void random_against_reference(DomainKind kind, std::uint32_t p, std::uint32_t elems,
                              std::uint32_t seed) {
  auto d = make_domain(kind, p, elems, 1);
  std::mt19937 rng(seed);
  std::vector<std::pair<Item, Terms>> pool;
  std::map<Terms, Item> by_value;  // items are interned: equal values, equal ids
  auto keep = [&](Item it, Terms ref) {
    INFO("item " << it << " = " << d->describe(it));
    CHECK(d->terms(it) == ref);
    Terms buf(3, 99);  // stale contents are replaced
    auto view = d->terms_into(it, buf);
    CHECK(Terms(view.begin(), view.end()) == ref);
    CHECK(d->weight(it) == ref.size());
    CHECK(d->counts_twice(it) == repeats(ref));
    CHECK(it < d->num_items());
    auto [at, fresh] = by_value.emplace(ref, it);
    CHECK(at->second == it);
    if (auto ops = d->operands(it)) CHECK(d->combine(ops->first, ops->second) == it);
    pool.push_back({it, std::move(ref)});
  };
  for (std::uint32_t v = 0; v < p; ++v)
    for (std::uint32_t e = 0; e < elems; ++e) keep(d->leaf(v, e), {v * elems + e});
  for (int n = 0; n < 3000; ++n) {
    const int what = static_cast<int>(rng() % 10);
    if (what == 0) {  // an interval of ranks of one element, or random terms, made at once
      Terms ts;
      const std::uint32_t e = rng() % elems, lo = rng() % p, len = 1 + rng() % p;
      for (std::uint32_t k = 0; k < len; ++k) ts.push_back(((lo + k) % p) * elems + e);
      if (rng() % 3 == 0) ts.push_back(rng() % (p * elems));
      Terms ref = ts;
      if (kind == DomainKind::Exact) std::sort(ref.begin(), ref.end());
      keep(d->from_terms(ts), ref);
      continue;
    }
    const auto& [a, ra] = pool[rng() % pool.size()];
    // mostly operands of the same element (as algorithms combine them), sometimes any two
    std::size_t j = rng() % pool.size();
    if (what < 8 && elems > 1)
      for (int tries = 0; tries < 20 && !pool[j].second.empty() && !ra.empty() &&
                          pool[j].second[0] % elems != ra[0] % elems;
           ++tries)
        j = rng() % pool.size();
    const auto [b, rb] = pool[j];
    const Item ia = a;
    const Terms rra = ra;
    keep(d->combine(ia, b), joined(kind, rra, rb));
  }
  CHECK(d->combine(0, pool[1].first) == pool[1].first);
  CHECK(d->combine(pool[1].first, 0) == pool[1].first);
  CHECK(d->from_terms({}) == 0);
  CHECK(d->terms(0).empty());
}

const CheckResult& named(const std::vector<CheckResult>& rs, const std::string& n) {
  for (const auto& r : rs)
    if (r.name == n) return r;
  FAIL("no check " << n);
  return rs.front();
}

// MPICH's recursive doubling on a power of two, with `combine` as the last statement of a
// round and `nodup` as the header's claim.
std::string recursive_doubling(const std::string& combine, const std::string& tail = "") {
  return R"(model rd_variant
  collective allreduce
  topology   complete
  operator   associative
  input      buf
  output     buf
  nodup      yes
procedure RD(my_id, buf)
begin
  mask := 1;
  while mask < p do
    dst := my_id XOR mask;
    send buf to dst;
    receive tmp from dst;
    )" + combine +
         R"(
    mask := mask * 2;
  endwhile
  )" + tail +
         R"(
end RD
)";
}

std::vector<CheckResult> run_and_check(const std::string& text, DomainKind k, std::uint32_t p,
                                       std::uint32_t count) {
  Model m = parse_model(text, "rd.coll");
  RunOptions o;
  o.domain = k;
  o.count = count;
  o.stream = RunOptions::Stream::Off;
  Trace t = run_model(m, Topology::parse("complete:" + std::to_string(p)), o);
  return check_trace(t, {});
}

const char* kRightOrder = "if dst < my_id then buf := tmp + buf; else buf := buf + tmp; endif";

}  // namespace

TEST_CASE("exact items agree with sorted term lists under random combines", "[domain]") {
  random_against_reference(DomainKind::Exact, 7, 1, 11);
  random_against_reference(DomainKind::Exact, 9, 3, 12);
  random_against_reference(DomainKind::Exact, 64, 2, 13);
}

TEST_CASE("ordered items agree with term sequences under random concatenations", "[domain]") {
  random_against_reference(DomainKind::Ordered, 7, 1, 21);
  random_against_reference(DomainKind::Ordered, 9, 3, 22);
  random_against_reference(DomainKind::Ordered, 64, 2, 23);
}

TEST_CASE("items of rank intervals are runs shared by every element", "[domain]") {
  auto d = make_domain(DomainKind::Exact, 1024, 4096, 1);
  // x0..x511 of element 7 as an interval made two ways
  std::vector<std::uint32_t> ts;
  for (std::uint32_t v = 0; v < 512; ++v) ts.push_back(v * 4096 + 7);
  Item a = d->from_terms(ts);
  Item b = 0;
  for (std::uint32_t v = 0; v < 512; ++v) b = d->combine(b, d->leaf(v, 7));
  CHECK(a == b);
  CHECK(d->weight(a) == 512);
  CHECK_FALSE(d->counts_twice(a));
  // every element's union is one set: the domain's memory does not grow with the elements
  const std::size_t before = d->memory_bytes();
  for (std::uint32_t e = 0; e < 4096; ++e) {
    Item x = 0;
    for (std::uint32_t v = 0; v < 512; ++v) x = d->combine(x, d->leaf(v, e));
    REQUIRE(d->weight(x) == 512);
  }
  CHECK(d->memory_bytes() < before + 64 * 1024);
  CHECK(d->describe(d->combine(d->leaf(2, 1), d->leaf(2, 1))) == "2*x2.1");
  auto e = make_domain(DomainKind::Ordered, 8, 1, 1);
  Item s = e->combine(e->combine(e->leaf(0, 0), e->leaf(1, 0)), e->leaf(2, 0));
  CHECK(e->describe(e->combine(s, e->leaf(5, 0))) == "x0..x2+x5");
  CHECK(e->describe(e->combine(e->leaf(5, 0), s)) == "x5+x0..x2");
  CHECK(e->counts_twice(e->combine(s, e->leaf(1, 0))));
}

TEST_CASE("an item made again from another pair keeps that pair", "[domain]") {
  // The ring all-reduce makes the full sum at every node from its own pair: x1..x3 + x0 at node
  // 0, x0 + x2..x3 + x1 at node 1 ... The domain remembers the first pair as operands() and each
  // other distinct pair once (other_operands), at every element; a pair asked again adds none.
  for (DomainKind k : {DomainKind::Exact, DomainKind::Ordered}) {
    auto d = make_domain(k, 4, 8, 1);
    auto sum = [&](std::vector<std::uint32_t> ranks, std::uint32_t e) {
      Item x = 0;
      for (auto v : ranks) x = d->combine(x, d->leaf(v, e));
      return x;
    };
    const Item a = sum({1, 2, 3}, 5), b = sum({0}, 5);
    const Item c = sum({0, 2, 3}, 5), e = sum({1}, 5);
    const Item full = d->combine(a, b);
    std::vector<std::pair<Item, Item>> others;
    CHECK(other_operands(*d, full, others, 8) == 0);
    const Item again = d->combine(c, e);
    CHECK(d->combine(c, e) == again);  // the memo answers: no second record
    CHECK(d->operands(full) == std::pair<Item, Item>{a, b});
    if (k == DomainKind::Exact) {
      REQUIRE(again == full);
      REQUIRE(other_operands(*d, full, others, 8) == 1);
      CHECK(others == std::vector<std::pair<Item, Item>>{{c, e}});
      CHECK(other_operands(*d, full, others, 0) == 1);  // counted, none listed
      CHECK(others.empty());
      // at another element, the same sets: the pair of that element
      const Item full2 = d->combine(sum({1, 2, 3}, 2), sum({0}, 2));
      REQUIRE(other_operands(*d, full2, others, 8) == 1);
      CHECK(others[0] == std::pair<Item, Item>{sum({0, 2, 3}, 2), sum({1}, 2)});
    } else {
      CHECK(again != full);  // x0 + x2 + x3 + x1 is another sequence
      CHECK(other_operands(*d, full, others, 8) == 0);
    }
  }
}

TEST_CASE("listing an item's terms keeps nothing in the domain", "[domain]") {
  // The checkers list the terms of every item a trace holds; a domain that kept a copy of each
  // (the old terms_view cache: 2.6 GB for the ring at p = count = 1,024) grows with them.
  for (DomainKind k : {DomainKind::Exact, DomainKind::Ordered}) {
    for (std::uint32_t elems : {1u, 64u}) {
      auto d = make_domain(k, 1024, elems, 1);
      std::vector<Item> items;
      for (std::uint32_t e = 0; e < elems; ++e) {
        Item x = 0;
        for (std::uint32_t v = 0; v < 1024; ++v) items.push_back(x = d->combine(x, d->leaf(v, e)));
      }
      const std::size_t before = d->memory_bytes();
      Terms buf;
      std::uint64_t listed = 0;
      for (Item it : items) {
        const auto ts = d->terms_into(it, buf);
        REQUIRE(ts.size() == d->weight(it));
        listed += ts.size();
      }
      CHECK(listed == std::uint64_t{elems} * 1024 * 1025 / 2);
      CHECK(d->memory_bytes() == before);
      // A scoped cache keeps them until cleared, each view valid while others are taken.
      TermViews views(*d);
      const auto first = views(items[1]);
      for (std::size_t i = 2; i < 300; ++i) views(items[i]);
      CHECK(Terms(first.begin(), first.end()) == d->terms(items[1]));
      CHECK(views.bytes() >= 299 * 150 * sizeof(std::uint32_t));
      views.clear();
      CHECK(views.bytes() == 0);
      CHECK(views(0).empty());
    }
  }
}

TEST_CASE("recursive doubling at p = 1024 passes in the exact and ordered domains", "[domain]") {
  for (DomainKind k : {DomainKind::Exact, DomainKind::Ordered}) {
    auto rs = run_and_check(recursive_doubling(kRightOrder), k, 1024, 3);
    for (const char* c : {"nodup", "dataflow", "postcondition", "final-buffers"})
      CHECK(named(rs, c).verdict == Verdict::Pass);
  }
}

TEST_CASE("a contribution counted twice is caught at p = 1024", "[domain]") {
  // node 5 adds its partner's data once more in the last round: its output counts it twice
  auto text =
      recursive_doubling(kRightOrder + std::string(" if my_id = 5 and mask = p div 2 then buf "
                                                   ":= buf + tmp; endif"));
  for (DomainKind k : {DomainKind::Exact, DomainKind::Ordered}) {
    auto rs = run_and_check(text, k, 1024, 3);
    const auto& nd = named(rs, "nodup");
    REQUIRE(nd.verdict == Verdict::Fail);
    CHECK(nd.violations.at(0).message.find("node 5 ends with") != std::string::npos);
    CHECK(nd.violations.at(0).message.find("counts a contribution twice") != std::string::npos);
    CHECK(named(rs, "postcondition").verdict == Verdict::Fail);
  }
}

TEST_CASE("a node that receives what it holds is caught at p = 1024", "[domain]") {
  // node 9 is sent node 8's data twice: in round 1 and again after the last round
  auto text = recursive_doubling(kRightOrder,
                                 "if my_id = 8 then send buf to 9; endif\n"
                                 "  if my_id = 9 then receive tmp from 8; endif");
  auto rs = run_and_check(text, DomainKind::Exact, 1024, 2);
  const auto& nd = named(rs, "nodup");
  REQUIRE(nd.verdict == Verdict::Fail);
  CHECK(nd.violations.at(0).message.find("already holds") != std::string::npos);
}

TEST_CASE("a missing contribution is caught at p = 1024", "[domain]") {
  // node 700 drops what it receives in the last round (mask 512)
  auto text = recursive_doubling("if my_id = 700 and mask = 512 then buf := buf; else " +
                                 std::string(kRightOrder) + " endif");
  for (DomainKind k : {DomainKind::Exact, DomainKind::Ordered}) {
    auto rs = run_and_check(text, k, 1024, 2);
    const auto& post = named(rs, "postcondition");
    REQUIRE(post.verdict == Verdict::Fail);
    CHECK_FALSE(post.order_only);
    CHECK(post.violations.at(0).message.find("node 700 ends with") != std::string::npos);
    CHECK(named(rs, "dataflow").verdict == Verdict::Pass);  // it only sends what it holds
  }
}

TEST_CASE("a wrong operand order is caught at p = 1024 in the ordered domain only", "[domain]") {
  auto text = recursive_doubling("buf := buf + tmp;");
  auto ordered = run_and_check(text, DomainKind::Ordered, 1024, 2);
  const auto& post = named(ordered, "postcondition");
  REQUIRE(post.verdict == Verdict::Fail);
  CHECK(post.order_only);
  CHECK(post.violations.at(0).message.find("the same contributions in another order") !=
        std::string::npos);
  CHECK(named(ordered, "dataflow").verdict == Verdict::Pass);
  auto exact = run_and_check(text, DomainKind::Exact, 1024, 2);
  CHECK(named(exact, "postcondition").verdict == Verdict::Pass);
}

TEST_CASE("order-only differences are told apart node by node in the ordered domain", "[domain]") {
  // Every node puts its own data first (out of rank order but at node 0), and node 700 drops its
  // last round's data: the postcondition's pairs of items are compared once each (memoised), and
  // one node that lacks contributions makes the failure more than operand order.
  auto text = recursive_doubling(
      "if my_id = 700 and mask = 512 then buf := buf; else buf := buf + tmp; endif");
  auto rs = run_and_check(text, DomainKind::Ordered, 1024, 2);
  const auto& post = named(rs, "postcondition");
  REQUIRE(post.verdict == Verdict::Fail);
  CHECK_FALSE(post.order_only);
  REQUIRE_FALSE(post.violations.empty());
  // node 0 combines in rank order (its partner is always above it); node 1 does not
  CHECK(post.violations.at(0).message.find("node 1 ends with") != std::string::npos);
  CHECK(post.violations.at(0).message.find("the same contributions in another order") !=
        std::string::npos);
}
