// Trace statistics (steps, per-step link loads, cost coefficients) and JSON output.
#include "exec/trace.hpp"

#include <algorithm>
#include <numeric>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <ostream>

#include "util/error.hpp"

namespace collv {

std::vector<std::uint32_t> Trace::ordered_transfers() const {
  std::vector<std::uint32_t> idx(transfers.size());
  std::iota(idx.begin(), idx.end(), 0u);
  auto before = [&](std::uint32_t a, std::uint32_t b) {
    const Transfer& x = transfers[a];
    const Transfer& y = transfers[b];
    if (x.step != y.step) return x.step < y.step;
    if (x.src != y.src) return x.src < y.src;
    return x.dst < y.dst;
  };
  // The executor records transfers step by step and each step by sender: usually in order
  // (tested on the transfers themselves, without going through the indices).
  auto key = [](const Transfer& x) { return std::tie(x.step, x.src, x.dst); };
  const bool in_order =
      std::is_sorted(transfers.begin(), transfers.end(),
                     [&](const Transfer& x, const Transfer& y) { return key(x) < key(y); });
  if (!in_order) std::stable_sort(idx.begin(), idx.end(), before);
  return idx;
}

void Trace::compute_stats() {
  steps = 0;
  for (const auto& t : transfers) steps = std::max(steps, t.step);
  per_step.assign(steps, StepStats{});
  // Bucket transfers by step (counting sort, stable).
  std::vector<std::uint32_t> start(steps + 2, 0);
  for (const auto& t : transfers) ++start[t.step + 1];
  for (std::uint32_t s = 1; s < start.size(); ++s) start[s] += start[s - 1];
  std::vector<std::uint32_t> order(transfers.size());
  {
    std::vector<std::uint32_t> fill(start.begin(), start.end() - 1);
    for (std::uint32_t i = 0; i < transfers.size(); ++i) order[fill[transfers[i].step]++] = i;
  }
  // Per step: the load of each directed link. Most nodes forward at most one hop per step, so a
  // per-node stamp holds the first link out of each node; other links out of the same node are
  // collected and grouped by sorting.
  std::size_t nn = topology.num_nodes();
  std::vector<std::uint32_t> stamp(nn, 0), first_to(nn, 0), load_items(nn, 0), load_xfers(nn, 0);
  struct Spill {
    NodeId from, to;
    std::uint32_t items;
  };
  std::vector<Spill> spill;
  std::vector<NodeId> hops;
  for (std::uint32_t s = 1; s <= steps; ++s) {
    StepStats& st = per_step[s - 1];
    spill.clear();
    auto add_hop = [&](NodeId u, NodeId v, std::uint32_t items) {
      if (stamp[u] != s) {
        stamp[u] = s;
        first_to[u] = v;
        load_items[u] = items;
        load_xfers[u] = 1;
      } else if (first_to[u] == v) {
        load_items[u] += items;
        load_xfers[u] += 1;
      } else {
        spill.push_back({u, v, items});
        return;
      }
      st.max_link_items = std::max(st.max_link_items, load_items[u]);
      st.max_link_transfers = std::max(st.max_link_transfers, load_xfers[u]);
    };
    for (std::uint32_t k = start[s]; k < start[s + 1]; ++k) {
      const Transfer& t = transfers[order[k]];
      ++st.transfers;
      if (topology.adjacent(t.src, t.dst)) {
        add_hop(t.src, t.dst, t.payload_len);
      } else {
        hops = topology.route(t.src, t.dst);
        for (std::size_t h = 0; h + 1 < hops.size(); ++h)
          add_hop(hops[h], hops[h + 1], t.payload_len);
      }
    }
    if (!spill.empty()) {
      std::sort(spill.begin(), spill.end(), [](const Spill& a, const Spill& b) {
        return a.from != b.from ? a.from < b.from : a.to < b.to;
      });
      for (std::size_t i = 0; i < spill.size();) {
        std::size_t j = i;
        std::uint32_t items = 0, xf = 0;
        while (j < spill.size() && spill[j].from == spill[i].from && spill[j].to == spill[i].to) {
          items += spill[j].items;
          ++xf;
          ++j;
        }
        st.max_link_items = std::max(st.max_link_items, items);
        st.max_link_transfers = std::max(st.max_link_transfers, xf);
        i = j;
      }
    }
  }
  cost_ts = steps;
  cost_tw = 0;
  for (const auto& st : per_step) cost_tw += st.max_link_items;
}

std::uint64_t collective_bytes(Collective c, DomainKind k, std::uint64_t p, std::uint64_t e) {
  // Items (8 bytes each) of the inputs and of the outputs (final and expected, so twice).
  std::uint64_t in = (c == Collective::Broadcast || c == Collective::Scatter) ? e : sat_mul(p, e);
  std::uint64_t out = 0;
  switch (c) {
    case Collective::Reduce:
      out = e;
      break;
    case Collective::Allgather:
    case Collective::Allgatherv:
      out = sat_mul(p, sat_mul(p, e));
      break;
    case Collective::ReduceScatter:
    case Collective::Scatter:
      out = p;
      break;
    case Collective::Alltoall:
    case Collective::Alltoallv:
      out = sat_mul(p, p);
      break;
    default:  // broadcast, allreduce, scan, gather, shift: p * elems items in all
      out = sat_mul(p, e);
  }
  // A buffer holds two items inline: only larger ones allocate their items.
  const bool inline_only = e <= 2 && (c == Collective::Broadcast || c == Collective::Reduce ||
                                      c == Collective::Allreduce || c == Collective::Scan ||
                                      c == Collective::Exscan || c == Collective::Shift);
  std::uint64_t bytes = inline_only ? 0 : sat_mul(sat_add(in, sat_mul(out, 2)), sizeof(Item));
  bytes = sat_add(bytes, sat_mul(p, 3 * sizeof(Buffer)));
  if (k == DomainKind::Fingerprint) return bytes;
  // Interned values (exec/domain_sets.cpp): an item is an element and a set of rank runs shared
  // by every element, so the leaves are p sets and an expected reduction over an interval of
  // ranks is one set of one run for all elements (about 100 bytes a set with its runs, index
  // and memo entries). What the algorithm combines on the way is charged per transfer by the
  // caller (a stored trace) and watched while it runs.
  constexpr std::uint64_t kSet = 100;
  bytes = sat_add(bytes, sat_mul(p, kSet));
  switch (c) {
    case Collective::Scan:  // p prefixes (one set each)
    case Collective::Exscan:
    case Collective::ReduceScatter:
      bytes = sat_add(bytes, sat_mul(p, kSet));
      break;
    default:
      bytes = sat_add(bytes, kSet);
      break;
  }
  // The ordered domain keeps operand order: the nodes of a reduction may end with p different
  // sequences of p terms (rotations or a tree's order: a few runs each; the star's orders: a
  // run a term, 8 bytes, and as much again for the sets made on the way). Elements share them.
  if (k == DomainKind::Ordered && (c == Collective::Allreduce || c == Collective::Scan ||
                                   c == Collective::Exscan || c == Collective::ReduceScatter))
    bytes = sat_add(bytes, sat_mul(sat_mul(p, p), 16));
  return bytes;
}

std::vector<std::uint32_t> payload_slots(const Trace& t, std::uint64_t* total) {
  std::vector<std::uint32_t> at(t.transfers.size());
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < t.transfers.size(); ++i) {
    const Transfer& x = t.transfers[i];
    at[i] = t.payload_shared ? static_cast<std::uint32_t>(n) : x.payload_begin;
    n += x.payload_len;
    if (n > 0xFFFFFFFFull)
      throw LimitError("the trace's transfers carry more than 2^32 items; it is too large");
  }
  if (total) *total = t.payload_shared ? n : t.payload.size();
  return at;
}

std::uint64_t payload_items(const Trace& t) {
  if (!t.payload_shared) return t.payload.size();
  std::uint64_t n = 0;
  for (const auto& x : t.transfers) n += x.payload_len;
  return n;
}

std::uint64_t item_table_slots(const Trace& t) {
  std::uint64_t uses = payload_items(t);
  for (const auto& b : t.initial_input) uses += b.size();
  for (const auto& b : t.final_output) uses += b.size();
  return std::min<std::uint64_t>(t.domain->num_items(),
                                 std::max<std::uint64_t>(sat_mul(uses, 4), 1 << 16));
}

std::string buffer_to_string(const Trace& t, const Buffer& b) {
  std::string s = "[";
  for (std::uint32_t i = 0; i < b.size(); ++i) {
    if (i) s += ", ";
    s += t.domain->describe(b[i]);
  }
  return s + "]";
}

std::string payload_to_string(const Trace& t, const Transfer& x) {
  Buffer b;
  b.assign(t.payload.data() + x.payload_begin, x.payload_len);
  return buffer_to_string(t, b);
}

void print_schedule(const Trace& t, std::ostream& out) {
  std::uint32_t cur = 0;
  for (auto i : t.ordered_transfers()) {
    const Transfer& x = t.transfers[i];
    if (x.step != cur) {
      cur = x.step;
      out << fmt::format("step {}\n", cur);
    }
    std::string via;
    auto r = t.route(x);
    if (r.size() > 2) {
      via = " via";
      for (std::size_t k = 1; k + 1 < r.size(); ++k) {
        via += ' ';  // appended in two parts: `" " + label` made GCC 12 warn (-Wrestrict)
        via += t.topology.label(r[k]);
      }
    }
    out << fmt::format("  {} -> {}{}  {}\n", t.topology.label(x.src), t.topology.label(x.dst), via,
                       payload_to_string(t, x));
  }
}

nlohmann::json trace_to_json(const Trace& t, std::size_t max_transfers) {
  using nlohmann::json;
  json j;
  j["model"] = t.model_name;
  j["file"] = t.model_file;
  j["collective"] = collective_name(t.collective);
  j["topology"] = t.topology.spec();
  j["p"] = t.topology.num_processors();
  j["domain"] = domain_name(t.domain->kind());
  j["elements"] = t.domain->elems();
  j["operator"] = t.op_class == OperatorClass::Commutative ? "commutative" : "associative";
  j["nodup"] = t.nodup_claimed;
  j["layout"] = t.layout_any ? "any" : "positional";
  j["count"] = t.count;
  if (collective_is_rooted(t.collective)) j["source"] = t.root;
  if (t.collective == Collective::Shift) j["q"] = t.shift;
  j["port"] = port_model_name(t.port);
  j["steps"] = t.steps;
  j["cost"] = {{"ts", t.cost_ts}, {"tw", t.cost_tw}};
  if (t.claimed_steps) j["claimed"]["steps"] = *t.claimed_steps;
  if (t.claimed_ts) j["claimed"]["cost"] = {{"ts", *t.claimed_ts}, {"tw", *t.claimed_tw}};
  if (t.claimed_steps && t.steps_at_most) j["claimed"]["steps_at_most"] = true;
  if (t.claimed_ts && t.cost_at_most) j["claimed"]["cost_at_most"] = true;
  if (t.claims_single_port && (t.claimed_steps || t.claimed_ts)) j["claimed"]["port"] = "single";
  json steps = json::array();
  for (std::size_t s = 0; s < t.per_step.size(); ++s) {
    const auto& st = t.per_step[s];
    steps.push_back({{"step", s + 1},
                     {"transfers", st.transfers},
                     {"max_link_items", st.max_link_items},
                     {"max_link_transfers", st.max_link_transfers}});
  }
  j["per_step"] = std::move(steps);
  j["transfer_count"] = t.transfers.size();
  // The message size the schedule keeps to: the largest message, in words (an item each), or
  // the schedule's own claim when it has one.
  if (t.words_per_message) {
    j["words_per_message"] = *t.words_per_message;
  } else if (!t.transfers.empty()) {
    std::uint32_t largest = 0;
    for (const Transfer& x : t.transfers) largest = std::max<std::uint32_t>(largest, x.payload_len);
    j["words_per_message"] = largest;
  }
  if (max_transfers == 0 || t.transfers.size() <= max_transfers) {
    json xs = json::array();
    std::vector<std::uint8_t> lost(t.transfers.size(), 0);
    for (auto i : t.unreceived)
      if (i < lost.size()) lost[i] = 1;
    for (auto i : t.ordered_transfers()) {
      const Transfer& x = t.transfers[i];
      json items = json::array();
      for (std::uint32_t k = 0; k < x.payload_len; ++k)
        items.push_back(t.domain->describe(t.payload[x.payload_begin + k]));
      xs.push_back({{"step", x.step},
                    {"src", x.src},
                    {"dst", x.dst},
                    {"route", t.route(x)},
                    {"items", std::move(items)},
                    {"words", !t.claimed_words.empty() && t.claimed_words[i] != kNoWordsClaim
                                  ? t.claimed_words[i]
                                  : x.payload_len},
                    {"line", x.line}});
      if (lost[i]) xs.back()["received"] = false;
    }
    j["transfers"] = std::move(xs);
  }
  json finals = json::array();
  for (std::size_t v = 0; v < t.final_output.size(); ++v) {
    json items = json::array();
    for (auto it : t.final_output[v]) items.push_back(t.domain->describe(it));
    finals.push_back({{"node", v}, {"label", t.topology.label(v)}, {"output", std::move(items)}});
  }
  j["final"] = std::move(finals);
  if (t.failure.kind != RunFailure::Kind::None) {
    static const char* names[] = {"none", "deadlock", "step-limit", "op-limit", "runtime-error"};
    j["failure"] = {{"kind", names[static_cast<int>(t.failure.kind)]},
                    {"message", t.failure.message},
                    {"waiting", t.failure.waiting},
                    {"cycle", t.failure.waiting_cycle},
                    {"cycle_closed", t.failure.cycle_closed}};
    if (t.failure.ports) j["failure"]["ports"] = true;
  }
  return j;
}

}  // namespace collv
