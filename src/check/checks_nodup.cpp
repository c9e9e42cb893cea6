// The nodup check (see checks.hpp): no item counts a contribution twice, and no node receives
// what it already holds; each node proved clean by its output's combine history, by held sets
// shared between nodes (held_sets.hpp), or bit by bit.
#include <algorithm>
#include <optional>
#include <span>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "check/check_util.hpp"
#include "check/held_sets.hpp"
#include "util/memory.hpp"

namespace collv {

CheckResult check_nodup(const Trace& t, const CheckOptions& o) {
  if (!t.nodup_claimed || !t.domain->inspectable()) return nodup_check(t, o, StepIndex{});
  return nodup_check(t, o, by_step(t));
}

CheckResult nodup_check(const Trace& t, const CheckOptions& o, const StepIndex& steps) {
  if (!t.nodup_claimed)
    return not_checked("nodup", "the model does not claim NODUP (header: nodup no)");
  if (!t.domain->inspectable())
    return not_checked("nodup", "the fingerprint domain cannot see contributions");
  CheckResult r = make("nodup");
  const Domain& d = *t.domain;
  const bool sorted = d.kind() == DomainKind::Exact;  // exact terms come sorted; ordered do not
  // (1) No item anywhere may hold a contribution twice: a combine added overlapping operands.
  // The domain knows which items do (Domain::counts_twice); only those are listed, for the term.
  std::vector<std::uint32_t> scratch, buf;
  auto clean_item = [&](Item it) { return !d.counts_twice(it); };
  auto dup_term = [&](Item it) -> std::optional<std::uint32_t> {
    if (clean_item(it)) return std::nullopt;
    auto view = d.terms_into(it, buf);
    std::optional<std::uint32_t> dup;
    if (sorted) {
      for (std::size_t k = 1; k < view.size() && !dup; ++k)
        if (view[k] == view[k - 1]) dup = view[k];
    } else {
      scratch.assign(view.begin(), view.end());
      std::sort(scratch.begin(), scratch.end());
      for (std::size_t k = 1; k < scratch.size() && !dup; ++k)
        if (scratch[k] == scratch[k - 1]) dup = scratch[k];
    }
    return dup;
  };
  for (std::uint32_t s = 1; s <= t.steps; ++s) {
    for (auto i : steps[s]) {
      const Transfer& x = t.transfers[i];
      for (std::uint32_t k = 0; k < x.payload_len; ++k) {
        Item it = t.payload[x.payload_begin + k];
        if (auto c = dup_term(it)) {
          Counterexample ce;
          ce.step = s;
          set_list(ce.nodes, {x.src, x.dst});
          set_list(ce.transfers, {i});
          ce.buffers.push_back({x.src, "sent", d.describe(it)});
          ce.message = fmt::format(
              "step {}: {} -> {} carries {}, which counts a contribution twice "
              "(a combine added overlapping operands)",
              s, t.topology.label(x.src), t.topology.label(x.dst), d.describe(it));
          add_violation(r, o, std::move(ce));
        }
      }
    }
  }
  for (NodeId v = 0; v < t.final_output.size(); ++v) {
    for (Item it : t.final_output[v]) {
      if (dup_term(it)) {
        Counterexample ce;
        set_list(ce.nodes, {v});
        ce.buffers.push_back({v, "output", buffer_to_string(t, t.final_output[v])});
        ce.message = fmt::format("node {} ends with {}, which counts a contribution twice",
                                 t.topology.label(v), d.describe(it));
        add_violation(r, o, std::move(ce));
        break;
      }
    }
  }
  const std::uint64_t item_slots = item_table_slots(t);
  // (2) No node receives data it already holds: its input, or what it received in earlier steps.
  // Node by node (nodes are independent): one bit per contribution for the node at hand, so the
  // check holds p·elems bits per thread, not per node (p^2 bits were 16 GB at star:9).
  const std::size_t universe = static_cast<std::size_t>(d.p()) * d.elems();
  const std::size_t words = (universe + 63) / 64;
  const std::size_t procs = t.topology.num_processors();
  const unsigned parts = o.threads != 0                 ? std::min(o.threads, 8u)
                         : t.transfers.size() >= 200000 ? 2
                                                        : 1;
  require_memory(sat_add(sat_mul(sat_mul(parts, words), 8),
                         sat_mul(sat_add(t.transfers.size(), procs + 1), 4)),
                 "the nodup check");
  // Each node's receives in the order the report reads them: by step, then sender, then issue
  // order (ordered_transfers' order, grouped by destination).
  std::vector<std::uint32_t> first(procs + 1, 0), received(t.transfers.size());
  for (const Transfer& x : t.transfers) ++first[x.dst + 1];
  for (std::size_t v = 0; v < procs; ++v) first[v + 1] += first[v];
  {
    std::vector<std::uint32_t> fill(first.begin(), first.end() - 1);
    for (std::uint32_t s = 1; s <= t.steps; ++s)
      for (auto i : steps[s]) received[fill[t.transfers[i].dst]++] = i;
  }
  // The item of received[g] when it is the node's only receive in its step and a single item with
  // no term twice (part (1) saw every payload item); kNoItem otherwise.
  constexpr Item kNoItem = ~Item{0};
  auto lone_item = [&](std::uint32_t g, std::uint32_t end) -> Item {
    const Transfer& x = t.transfers[received[g]];
    if (x.payload_len != 1 || (g + 1 < end && t.transfers[received[g + 1]].step == x.step))
      return kNoItem;
    const Item it = t.payload[x.payload_begin];
    return clean_item(it) ? it : kNoItem;
  };
  // When v came to hold contribution c before step s (0: its input), for a counterexample only.
  auto since = [&](NodeId v, std::uint32_t c, std::uint32_t s) -> std::string {
    for (Item it : t.initial_input[v])
      for (auto x : d.terms_into(it, buf))
        if (x == c) return "its input";
    for (std::uint32_t q = first[v]; q < first[v + 1]; ++q) {
      const Transfer& y = t.transfers[received[q]];
      if (y.step >= s) break;
      for (std::uint32_t k = 0; k < y.payload_len; ++k)
        for (auto x : d.terms_into(t.payload[y.payload_begin + k], buf))
          if (x == c) return fmt::format("step {}", y.step);
    }
    return "";  // received earlier in the same step
  };
  // First by combine history (exact and ordered terms): a node whose one output item counts no
  // contribution twice and was combined (Domain::operands, down to items the node holds) from
  // exactly its held items, each once (its input items and every item it received, none twice),
  // holds them pairwise disjoint: a combine's terms are its operands' terms together, so a term
  // in two of them would be in the output twice. Such a node received nothing it held, and costs
  // a walk over its own combines. Then, exact terms only, nodes whose every step receives one
  // dup-free item are tried on shared held sets (HeldSets above). A node that neither proves
  // clean (it shares a term, receives otherwise, or comes after the sets' budget is spent) is
  // left to the bitset walk, which finds and reports what it holds twice.
  std::vector<NodeId> rest, pending;
  rest.reserve(procs);
  std::size_t receiving = 0, by_history = 0;
  {
    // The node's held items stamped in one slot per domain item (items are dense ids; never
    // cleared): 2 * stamp held by the node at hand, 2 * stamp + 1 also met by the walk. The
    // combines' operands read from the domain's table (Domain::operand_table), no call a visit.
    std::vector<std::uint32_t> mark;
    std::uint32_t stamp = 0;
    // Items past the table (item_table_slots) are not stamped; their nodes go the other ways.
    const std::size_t marks = item_slots;
    std::vector<Item> stack;
    const auto made_of = d.operand_table();
    auto history_clean = [&](NodeId v) {
      if (!o.nodup_by_history || v >= t.final_output.size()) return false;
      Item out = 0;
      for (Item it : t.final_output[v]) {
        if (it == 0) continue;
        if (out != 0) return false;  // two output items: their terms may overlap each other
        out = it;
      }
      if (out == 0 || !clean_item(out)) return false;
      if (mark.size() != marks) mark.assign(marks, 0);
      if (++stamp >= UINT32_MAX / 2) {  // about to wrap: clear the stamps once
        std::fill(mark.begin(), mark.end(), 0);
        stamp = 1;
      }
      const std::uint32_t here = 2 * stamp;
      std::size_t held = 0;
      auto hold = [&](Item it) {
        if (it == 0) return true;
        if (it >= mark.size() || mark[it] >= here) return false;  // unknown, or held twice
        mark[it] = here;
        ++held;
        return true;
      };
      for (Item it : t.initial_input[v])
        if (!hold(it)) return false;
      for (std::uint32_t g = first[v]; g < first[v + 1]; ++g) {
        const Transfer& x = t.transfers[received[g]];
        for (std::uint32_t k = 0; k < x.payload_len; ++k)
          if (!hold(t.payload[x.payload_begin + k])) return false;
      }
      std::size_t found = 0, visits = 0;
      const std::size_t max_visits = 4 * held + 64;
      stack.assign(1, out);
      while (!stack.empty()) {
        const Item x = stack.back();
        stack.pop_back();
        if (++visits > max_visits) return false;
        if (x < mark.size() && mark[x] >= here) {
          if (mark[x] != here) return false;  // met twice
          mark[x] = here + 1;
          ++found;
          continue;
        }
        std::optional<std::pair<Item, Item>> ops;
        if (x < made_of.size()) {
          if ((made_of[x].first | made_of[x].second) != 0) ops = made_of[x];
        } else {
          ops = d.operands(x);
        }
        if (!ops) return false;  // a leaf or a file's item the node does not hold
        if (ops->first != 0) stack.push_back(ops->first);
        if (ops->second != 0) stack.push_back(ops->second);
      }
      return found == held;
    };
    for (NodeId v = 0; v < procs; ++v) {
      if (first[v] == first[v + 1]) continue;
      ++receiving;
      if (history_clean(v)) {
        ++by_history;
      } else {
        pending.push_back(v);
      }
    }
  }
  std::size_t by_sets = 0;
  if (sorted && !pending.empty()) {
    // The sets may take half the memory left under the limit, and may merge a quarter of the
    // terms the bitset walk would visit: past either bound sharing does not pay, and the nodes
    // not yet done go the bitset way.
    std::uint64_t visits = 0;
    for (NodeId v : pending)
      for (std::uint32_t g = first[v]; g < first[v + 1]; ++g) {
        const Transfer& x = t.transfers[received[g]];
        for (std::uint32_t k = 0; k < x.payload_len; ++k)
          visits += d.weight(t.payload[x.payload_begin + k]);
      }
    const std::uint64_t limit = memory_limit(), in_use = resident_bytes();
    HeldSets sets(item_slots,
                  std::min(o.nodup_shared_bytes, limit > in_use ? (limit - in_use) / 2 : 0),
                  visits / 4);
    std::vector<std::uint32_t> in;
    bool shared = true;
    for (NodeId v : pending) {
      bool clean = false;
      if (shared) {
        in.clear();
        for (Item it : t.initial_input[v])
          for (auto c : d.terms_into(it, buf)) in.push_back(c);
        std::sort(in.begin(), in.end());
        clean = std::adjacent_find(in.begin(), in.end()) == in.end();
        std::uint32_t h = clean ? sets.intern(in) : 0;
        for (std::uint32_t g = first[v]; clean && g < first[v + 1]; ++g) {
          const Item it = lone_item(g, first[v + 1]);
          clean = it != kNoItem && (h = sets.add(h, it, d)) != HeldSets::kOverlap;
        }
        shared = !sets.over();
      }
      if (clean) {
        ++by_sets;
      } else {
        rest.push_back(v);
      }
    }
  } else {
    rest = std::move(pending);
  }
  r.note = fmt::format(
      "{} of {} receiving nodes checked by their output's combine history, {} on held sets "
      "shared between nodes, the others bit by bit",
      by_history, receiving, by_sets);
  // A violation: the transfer, the item and the contribution already held. Each thread keeps
  // the earliest ones by (step, receiver, position), as one pass over the steps would find them.
  struct Hit {
    std::uint32_t step;
    NodeId dst;
    std::uint32_t pos;  // into received
    Item item;
    std::uint32_t term;
    auto key() const { return std::tie(step, dst, pos); }
  };
  auto scan = [&](unsigned part, std::vector<Hit>& hits, std::size_t& count) {
    std::vector<std::uint64_t> w(words);
    std::vector<std::uint32_t> terms;  // this thread's: the domain keeps no term lists
    auto keep = [&](Hit h) {
      ++count;
      hits.push_back(h);
      if (hits.size() >= 4 * o.max_violations + 64) {
        std::sort(hits.begin(), hits.end(),
                  [](const Hit& a, const Hit& b) { return a.key() < b.key(); });
        hits.resize(o.max_violations);
      }
    };
    auto add_terms = [&](std::span<const std::uint32_t> ts) {
      for (auto c : ts) w[c / 64] |= 1ULL << (c % 64);
    };
    auto add = [&](Item it) { add_terms(d.terms_into(it, terms)); };
    // v's bits as they are before received[upto]: its input and what it received earlier.
    auto rebuild = [&](NodeId v, std::uint32_t upto) {
      std::fill(w.begin(), w.end(), 0);
      for (Item in : t.initial_input[v]) add(in);
      for (std::uint32_t q = first[v]; q < upto; ++q) {
        const Transfer& y = t.transfers[received[q]];
        for (std::uint32_t k = 0; k < y.payload_len; ++k) add(t.payload[y.payload_begin + k]);
      }
    };
    for (std::size_t n = part; n < rest.size(); n += parts) {
      const NodeId v = rest[n];
      rebuild(v, first[v]);
      // Every item received in a step is checked against what the node held before the step,
      // and only then added.
      bool fast = true;
      for (std::uint32_t g = first[v]; g < first[v + 1];) {
        const std::uint32_t s = t.transfers[received[g]].step;
        std::uint32_t e = g;
        while (e < first[v + 1] && t.transfers[received[e]].step == s) ++e;
        // The common case (single-port: one transfer of one item, with no term twice, which
        // part (1) established) tests and adds in one pass without a branch. On the first hit
        // the node's bits are rebuilt as they were before the step, and the node goes on by the
        // general path below, which finds the terms to report.
        if (fast) {
          const Item it = lone_item(g, first[v + 1]);
          if (it != kNoItem) {
            // Bits are gathered per word in a register while the terms stay in one word (exact
            // terms come sorted), so consecutive terms do not wait on each other's store.
            std::uint64_t held = 0, bits = 0;
            std::uint32_t word = 0;
            for (auto c : d.terms_into(it, terms)) {
              if (c / 64 != word) {
                held |= w[word] & bits;
                w[word] |= bits;
                word = c / 64;
                bits = 0;
              }
              bits |= 1ULL << (c % 64);
            }
            held |= w[word] & bits;
            w[word] |= bits;
            if (held == 0) {
              g = e;
              continue;
            }
            fast = false;
            rebuild(v, g);
          }
        }
        // Each item is checked against what the node held before the step and the items it
        // received before it in the step (the same message or another one): an item twice in
        // one message or one step's received buffers is received data already held.
        for (std::uint32_t q = g; q < e; ++q) {
          const Transfer& x = t.transfers[received[q]];
          bool reported = false;
          for (std::uint32_t k = 0; k < x.payload_len; ++k) {
            Item it = t.payload[x.payload_begin + k];
            const auto ts = d.terms_into(it, terms);
            for (auto c : ts) {
              if (reported || !(w[c / 64] >> (c % 64) & 1)) continue;
              reported = true;
              keep({s, v, q, it, c});
              break;
            }
            add_terms(ts);
          }
        }
        g = e;
      }
    }
  };
  std::vector<std::vector<Hit>> hits(parts);
  std::vector<std::size_t> counts(parts, 0);
  {
    std::vector<std::thread> workers;
    for (unsigned k = 1; k < parts; ++k)
      workers.emplace_back([&, k] { scan(k, hits[k], counts[k]); });
    scan(0, hits[0], counts[0]);
    for (auto& th : workers) th.join();
  }
  std::vector<Hit> all;
  std::size_t total = 0;
  for (unsigned k = 0; k < parts; ++k) {
    total += counts[k];
    all.insert(all.end(), hits[k].begin(), hits[k].end());
  }
  std::sort(all.begin(), all.end(), [](const Hit& a, const Hit& b) { return a.key() < b.key(); });
  if (all.size() > o.max_violations) all.resize(o.max_violations);
  for (const Hit& h : all) {
    const std::uint32_t i = received[h.pos];
    const Transfer& x = t.transfers[i];
    Counterexample ce;
    ce.step = h.step;
    set_list(ce.nodes, {x.dst, x.src});
    set_list(ce.transfers, {i});
    ce.buffers.push_back({x.dst, "received", d.describe(h.item)});
    std::string term = d.elems() == 1
                           ? fmt::format("x{}", h.term)
                           : fmt::format("x{}.{}", h.term / d.elems(), h.term % d.elems());
    std::string when = since(x.dst, h.term, h.step);
    ce.message =
        when.empty()
            ? fmt::format(
                  "step {}: {} receives {} from {}, but {} comes twice in step {} (within "
                  "one message, or in two messages of the step)",
                  h.step, t.topology.label(x.dst), d.describe(h.item), t.topology.label(x.src),
                  term, h.step)
            : fmt::format("step {}: {} receives {} from {}, but it already holds {} (since {})",
                          h.step, t.topology.label(x.dst), d.describe(h.item),
                          t.topology.label(x.src), term, when);
    add_violation(r, o, std::move(ce));
  }
  r.violation_count += total - all.size();
  return r;
}

}  // namespace collv
