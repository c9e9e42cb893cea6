// DataCol (exec/node_col.hpp): a data variable's buffers in 9 bytes a node while they hold at
// most one item, longer ones in a side table. Every operation against a plain vector of buffers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "exec/node_col.hpp"

using namespace collv;
using Buf = DataCol::Buf;

namespace {

Buf make(std::uint32_t n, Item first) {
  Buf b;
  for (std::uint32_t k = 0; k < n; ++k) b.push_back(first + k);
  return b;
}

Buf read(const DataCol& c, NodeId u) {
  Buf b = make(3, 99);  // get overwrites whatever the buffer held
  c.get(u, b);
  return b;
}

}  // namespace

TEST_CASE("a data column keeps one-item buffers inline and longer ones aside", "[exec]") {
  DataCol c;
  c.resize(4, /*base=*/8);
  REQUIRE(c.size() == 4);
  for (NodeId u = 8; u < 12; ++u) CHECK(read(c, u).empty());
  c.set(9, make(1, 7));
  CHECK(read(c, 9) == make(1, 7));
  CHECK(c.size_at(9) == 1);
  CHECK(c.long_buffers() == 0);
  c.set(10, make(5, 20));  // aside
  CHECK(c.long_buffers() == 1);
  CHECK(read(c, 10) == make(5, 20));
  CHECK(c.size_at(10) == 5);
  CHECK(read(c, 9) == make(1, 7));
  c.set(10, make(1, 3));  // back inline: the side slot is freed
  CHECK(c.long_buffers() == 0);
  CHECK(read(c, 10) == make(1, 3));
  // An inline buffer edited in place: moved aside with its item, then settled.
  c.edit(9).push_back(8);
  c.settle(9);
  CHECK(read(c, 9) == make(2, 7));
  CHECK(c.long_buffers() == 1);
  Buf& e = c.edit(9);
  e.resize(1);
  c.settle(9);
  CHECK(read(c, 9) == make(1, 7));
  CHECK(c.long_buffers() == 0);
  // An empty buffer edited: the edit starts empty.
  CHECK(c.edit(11).empty());
  c.settle(11);
  CHECK(read(c, 11).empty());
  CHECK(c.long_buffers() == 0);
  // A zero item is an item, not an empty buffer.
  c.set(8, make(1, 0));
  CHECK(c.size_at(8) == 1);
  CHECK(read(c, 8) == make(1, 0));
  auto all = c.take();
  REQUIRE(all.size() == 4);
  CHECK(all[0] == make(1, 0));
  CHECK(all[1] == make(1, 7));
  CHECK(all[2] == make(1, 3));
  CHECK(all[3].empty());
  CHECK(c.empty());
}

TEST_CASE("a data column agrees with a vector of buffers under random changes", "[exec]") {
  std::mt19937 rng(5);
  constexpr std::uint32_t n = 200;
  DataCol c;
  c.resize(n, 1000);
  std::vector<Buf> ref(n);
  for (int step = 0; step < 20000; ++step) {
    NodeId u = 1000 + rng() % n;
    std::uint32_t len = rng() % 4 == 0 ? rng() % 6 : rng() % 2;
    Item first = rng();
    switch (rng() % 3) {
      case 0:
        c.set(u, make(len, first));
        ref[u - 1000] = make(len, first);
        break;
      case 1: {  // an edit as a slice store makes it: grow, write positions
        Buf& b = c.edit(u);
        b.resize(std::max(b.size(), len), 0);
        for (std::uint32_t k = 0; k < len; ++k) b[k] = first + k;
        c.settle(u);
        Buf& r = ref[u - 1000];
        r.resize(std::max(r.size(), len), 0);
        for (std::uint32_t k = 0; k < len; ++k) r[k] = first + k;
        break;
      }
      default: {  // shrink in place
        Buf& b = c.edit(u);
        b.resize(std::min(b.size(), len));
        c.settle(u);
        ref[u - 1000].resize(std::min(ref[u - 1000].size(), len));
      }
    }
    REQUIRE(read(c, u) == ref[u - 1000]);
    REQUIRE(c.size_at(u) == ref[u - 1000].size());
  }
  std::size_t longer = 0;
  for (const Buf& b : ref) longer += b.size() > 1;
  CHECK(c.long_buffers() == longer);  // settled buffers of one item left the side table
  auto all = c.take();
  for (std::uint32_t i = 0; i < n; ++i) CHECK(all[i] == ref[i]);
}

TEST_CASE("an integer column widens when a value leaves 32 bits, keeping every value", "[exec]") {
  IntCol c;
  c.assign(5, /*base=*/3);
  for (NodeId u = 3; u < 8; ++u) CHECK(!c.assigned(u));
  c.set(3, -7);
  c.set(4, INT32_MAX);
  c.set(5, INT32_MIN);
  CHECK(!c.wide());
  CHECK(c.assigned(3));
  CHECK(!c.assigned(6));
  CHECK(c.get(3) == -7);
  CHECK(c.get(4) == INT32_MAX);
  CHECK(c.get(5) == INT32_MIN);
  c.set(6, std::int64_t{INT32_MAX} + 1);  // widens
  CHECK(c.wide());
  CHECK(c.get(3) == -7);
  CHECK(c.get(4) == INT32_MAX);
  CHECK(c.get(5) == INT32_MIN);
  CHECK(c.get(6) == std::int64_t{INT32_MAX} + 1);
  CHECK(!c.assigned(7));
  c.set(7, INT64_MIN);
  CHECK(c.get(7) == INT64_MIN);
  c.set(6, 1);  // a wide column stays wide
  CHECK(c.get(6) == 1);
  CHECK(c.wide());
  c.assign(2, 0);  // assign starts over, narrow
  CHECK(!c.wide());
  CHECK(!c.assigned(1));
  c.set(1, std::int64_t{INT32_MIN} - 1);
  CHECK(c.wide());
  CHECK(c.get(1) == std::int64_t{INT32_MIN} - 1);
  CHECK(c.get(0) == 0);
}

TEST_CASE("an inbox column queues messages in arrival order against a vector of queues", "[exec]") {
  std::mt19937 rng(11);
  constexpr std::uint32_t n = 50;
  InboxCol q;
  q.resize(n, /*base=*/7);
  std::vector<std::vector<std::uint32_t>> ref(n);
  std::uint32_t next = 0;
  std::size_t multi = 0;
  for (int step = 0; step < 20000; ++step) {
    NodeId u = 7 + rng() % n;
    auto& r = ref[u - 7];
    if (rng() % 2) {
      q.push(u, next);
      r.push_back(next++);
    } else {
      // Take the oldest message with a given residue (as a receive takes the oldest from a source).
      std::uint32_t m = rng() % 3;
      std::uint32_t k = q.find(u, [&](std::uint32_t t) { return t % 3 == m; });
      std::uint32_t want = 0;
      while (want < r.size() && r[want] % 3 != m) ++want;
      REQUIRE(k == want);
      if (k < r.size()) {
        CHECK(q.take(u, k) == r[k]);
        r.erase(r.begin() + k);
      }
    }
    REQUIRE(q.size(u) == r.size());
    REQUIRE(q.empty(u) == r.empty());
    if (!r.empty()) REQUIRE(q.front(u) == r.front());
    multi += r.size() > 1;
  }
  CHECK(multi > 100);  // the side table was used
  std::vector<std::uint32_t> all, want;
  q.append_all(all);
  for (const auto& r : ref) want.insert(want.end(), r.begin(), r.end());
  std::sort(all.begin(), all.end());
  std::sort(want.begin(), want.end());
  CHECK(all == want);
}
