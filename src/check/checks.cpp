// The invariant checkers (see checks.hpp). Each one reads the Trace only.
#include "check/checks.hpp"

#include "check/dataflow.hpp"
#include "util/memory.hpp"
#include "util/number_text.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <span>
#include <thread>
#include <type_traits>
#include <unordered_map>

#include <fmt/format.h>

namespace collv {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Pass:
      return "pass";
    case Verdict::Fail:
      return "fail";
    case Verdict::Unknown:
      return "unknown";
    case Verdict::NotChecked:
      return "not-checked";
  }
  return "?";
}

namespace {

// `v = {a, b}` for a counterexample's nodes or transfers, written item by item: GCC 12 warned
// (-Wnonnull, from its own header) about the memmove of vector's initializer-list assignment.
template <class T>
void set_list(std::vector<T>& v, std::initializer_list<std::type_identity_t<T>> xs) {
  v.clear();
  for (T x : xs) v.push_back(x);
}

CheckResult make(const char* name) {
  CheckResult r;
  r.name = name;
  r.verdict = Verdict::Pass;
  return r;
}

void add_violation(CheckResult& r, const CheckOptions& o, Counterexample c) {
  r.verdict = Verdict::Fail;
  c.invariant = r.name;
  ++r.violation_count;
  if (r.violations.size() < o.max_violations) r.violations.push_back(std::move(c));
}

std::string xfer_text(const Trace& t, const Transfer& x) {
  return fmt::format("{} -> {} {}", t.topology.label(x.src), t.topology.label(x.dst),
                     payload_to_string(t, x));
}

// Transfer indices grouped by step: result[s] lists the transfers of step s (index 0 unused).
// One flat list (ordered_transfers' order) with each step's start: no vector per step.
struct StepIndex {
  std::vector<std::uint32_t> first, list;
  std::span<const std::uint32_t> operator[](std::uint32_t s) const {
    return {list.data() + first[s], first[s + 1] - first[s]};
  }
};
StepIndex by_step(const Trace& t) {
  StepIndex ix;
  ix.list = t.ordered_transfers();
  ix.first.assign(t.steps + 2, 0);
  for (const Transfer& x : t.transfers) ++ix.first[std::min(x.step, t.steps) + 1];
  for (std::uint32_t s = 1; s < ix.first.size(); ++s) ix.first[s] += ix.first[s - 1];
  // ordered_transfers sorts by step first, so each step's transfers are already together.
  return ix;
}

std::vector<Item> sorted_items(const Buffer& b) {
  std::vector<Item> v(b.begin(), b.end());
  std::sort(v.begin(), v.end());
  return v;
}

struct ItemPairHash {
  std::size_t operator()(const std::pair<Item, Item>& k) const {
    return std::hash<Item>{}(k.first * 0x9E3779B97F4A7C15ULL ^ k.second);
  }
};

// Items as multisets of contributions (sorted terms), for comparisons that ignore operand order.
std::vector<std::vector<std::uint32_t>> term_multisets(const Domain& d, const Buffer& b,
                                                       bool sort_items) {
  std::vector<std::vector<std::uint32_t>> out;
  for (Item it : b) {
    auto ts = d.terms(it);
    std::sort(ts.begin(), ts.end());
    out.push_back(std::move(ts));
  }
  if (sort_items) std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

CheckResult not_checked(const char* name, std::string why) {
  CheckResult r;
  r.name = name;
  r.verdict = Verdict::NotChecked;
  r.note = std::move(why);
  return r;
}

namespace {

// single-port's counterexamples of a step in which a node sends or receives more than once: each
// such node's transfers, listed in the old, sorted way (the rare step with a violation).
void single_port_step(const Trace& t, const CheckOptions& o, CheckResult& r, std::uint32_t s,
                      std::span<const std::uint32_t> step, const std::vector<std::uint32_t>& sends,
                      const std::vector<std::uint32_t>& recvs) {
  std::map<NodeId, std::vector<std::uint32_t>> by_src, by_dst;
  for (auto i : step) {
    if (sends[t.transfers[i].src] > 1) by_src[t.transfers[i].src].push_back(i);
    if (recvs[t.transfers[i].dst] > 1) by_dst[t.transfers[i].dst].push_back(i);
  }
  for (auto* side : {&by_src, &by_dst}) {
    bool is_send = side == &by_src;
    for (auto& [v, xs] : *side) {
      Counterexample c;
      c.step = s;
      set_list(c.nodes, {v});
      c.transfers = xs;
      std::string list;
      for (auto i : xs) list += (list.empty() ? "" : "; ") + xfer_text(t, t.transfers[i]);
      c.message = fmt::format("step {}: node {} {} {} transfers ({})", s, t.topology.label(v),
                              is_send ? "sends" : "receives", xs.size(), list);
      add_violation(r, o, std::move(c));
    }
  }
}

// congestion's counterexample of a step that overloads a link: every loaded link of the step, the
// most overloaded first, built from a map of the step's hops (the rare step with a violation).
void congestion_step(const Trace& t, const CheckOptions& o, CheckResult& r, std::uint32_t s,
                     std::span<const std::uint32_t> step, bool chunks) {
  std::map<std::pair<NodeId, NodeId>, std::pair<std::vector<std::uint32_t>, std::uint32_t>> load;
  for (auto i : step) {
    const Transfer& x = t.transfers[i];
    auto path = t.link_path(x);
    for (std::size_t h = 0; h + 1 < path.size(); ++h) {
      auto& e = load[{path[h], path[h + 1]}];
      e.first.push_back(i);
      e.second += x.payload_len;
    }
  }
  auto capacity = [&](NodeId a, NodeId b) {
    return chunks ? t.topology.bandwidth(a, b) : std::uint32_t{1};
  };
  auto measure = [&](const std::pair<std::vector<std::uint32_t>, std::uint32_t>& v) {
    return chunks ? v.second : static_cast<std::uint32_t>(v.first.size());
  };
  // A pair with no link at all is the route check's to report, not a load on a link.
  if (chunks)
    std::erase_if(load,
                  [&](const auto& e) { return capacity(e.first.first, e.first.second) == 0; });
  bool over = false;
  for (auto& [k, v] : load) over = over || measure(v) > capacity(k.first, k.second);
  if (!over) return;
  Counterexample c;
  c.step = s;
  std::vector<std::uint32_t> xs;
  for (auto& [k, v] : load) {
    c.loads.push_back({k.first, k.second, static_cast<std::uint32_t>(v.first.size()), v.second});
    if (measure(v) > capacity(k.first, k.second))
      xs.insert(xs.end(), v.first.begin(), v.first.end());
  }
  // The most overloaded link first.
  auto excess = [&](const LinkLoad& a) {
    return static_cast<std::int64_t>(chunks ? a.items : a.transfers) -
           static_cast<std::int64_t>(capacity(a.from, a.to));
  };
  std::sort(c.loads.begin(), c.loads.end(), [&](const LinkLoad& a, const LinkLoad& b) {
    if (excess(a) != excess(b)) return excess(a) > excess(b);
    if (a.transfers != b.transfers) return a.transfers > b.transfers;
    return std::tie(a.from, a.to) < std::tie(b.from, b.to);
  });
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  c.transfers = xs;
  for (auto i : xs) {
    c.nodes.push_back(t.transfers[i].src);
    c.nodes.push_back(t.transfers[i].dst);
  }
  std::sort(c.nodes.begin(), c.nodes.end());
  c.nodes.erase(std::unique(c.nodes.begin(), c.nodes.end()), c.nodes.end());
  const LinkLoad& top = c.loads.front();
  if (chunks) {
    c.message = fmt::format(
        "step {}: link {} -> {} carries {} chunks in {} transfers; its bandwidth in {} is {} "
        "chunks per step",
        s, t.topology.label(top.from), t.topology.label(top.to), top.items, top.transfers,
        t.topology.spec(), capacity(top.from, top.to));
  } else {
    std::uint32_t max_load = 0;
    for (auto& l : c.loads) max_load = std::max(max_load, l.transfers);
    c.message = fmt::format(
        "step {}: link {} -> {} carries {} transfers ({} items); largest load "
        "per link in this step: {}",
        s, t.topology.label(top.from), t.topology.label(top.to), top.transfers, top.items,
        max_load);
  }
  add_violation(r, o, std::move(c));
}

// single-port, route and congestion in one pass over the transfers in (step, sender, receiver)
// order: each transfer's adjacency is asked once for route and congestion, and a routed
// transfer's path found once. Each result is what its check alone finds (a null one is not
// computed): route judges every transfer (step 0 too), single-port and congestion steps 1 on.
void link_checks(const Trace& t, const CheckOptions& o, const StepIndex& steps, CheckResult* sp,
                 CheckResult* route, CheckResult* cong) {
  if (sp && t.port == PortModel::All) {
    *sp = not_checked("single-port",
                      "the run uses --port all: a node may use all its links in a step; "
                      "congestion judges each directed link");
    sp = nullptr;
  }
  if (sp) *sp = make("single-port");
  if (route) *route = make("route");
  if (cong) *cong = make("congestion");
  // Generated families: one transfer per directed link per step (the sources' unit). Listed
  // topologies (dgx1, nvswitch:N, files) state a bandwidth in chunks per step for each directed
  // link: the chunks (items) crossing it in a step must not exceed it.
  const bool chunks = cong && t.topology.declares_bandwidth() && !o.congestion_in_transfers;
  // single-port: counts per node, reset through the list of nodes a step touched (linear in the
  // transfers).
  const std::size_t n = sp ? t.topology.num_nodes() : 0;
  std::vector<std::uint32_t> sends(n, 0), recvs(n, 0);
  std::vector<NodeId> touched;
  // congestion: the load of each directed link from a list of (link, items) hops, sorted by link
  // only when it is not in link order already; no allocation per link.
  std::uint32_t worst = 0;  // largest load (transfers, or chunks over bandwidth) seen
  std::vector<std::pair<std::uint64_t, std::uint32_t>> hops;
  std::vector<NodeId> path;
  for (std::uint32_t s = 0; s <= t.steps; ++s) {
    const bool timed = s >= 1;  // steps 1.. are the schedule's; route judges step 0 too
    const bool port = sp && timed, load = cong && timed;
    bool over = false;
    hops.clear();
    for (auto i : steps[s]) {
      const Transfer& x = t.transfers[i];
      if (port) {
        if (sends[x.src]++ == 0 && recvs[x.src] == 0) touched.push_back(x.src);
        if (recvs[x.dst]++ == 0 && sends[x.dst] == 0) touched.push_back(x.dst);
        over = over || sends[x.src] > 1 || recvs[x.dst] > 1;
      }
      const bool self = x.src == x.dst;
      if (route && self) {  // no link joins a node to itself (every reader refuses it too)
        Counterexample c;
        c.step = x.step;
        set_list(c.nodes, {x.src});
        set_list(c.transfers, {i});
        c.message = fmt::format("step {}: {} sends to itself", x.step, t.topology.label(x.src));
        add_violation(*route, o, std::move(c));
      }
      const bool judge_route = route && !self;
      if (!judge_route && !load) continue;
      if (t.topology.adjacent(x.src, x.dst)) {
        if (load) hops.push_back({(std::uint64_t{x.src} << 32) | x.dst, x.payload_len});
        continue;
      }
      path = t.route(x);  // what link_path gives a transfer that is not along a link
      if (judge_route) {
        for (std::size_t h = 0; h + 1 < path.size(); ++h) {
          if (t.topology.adjacent(path[h], path[h + 1])) continue;
          Counterexample c;
          c.step = x.step;
          set_list(c.nodes, {x.src, x.dst});
          set_list(c.transfers, {i});
          c.message = fmt::format("step {}: {} -> {} crosses {} -> {}, which is not a link of {}",
                                  x.step, t.topology.label(x.src), t.topology.label(x.dst),
                                  t.topology.label(path[h]), t.topology.label(path[h + 1]),
                                  t.topology.spec());
          add_violation(*route, o, std::move(c));
          break;
        }
      }
      if (load)
        for (std::size_t h = 0; h + 1 < path.size(); ++h)
          hops.push_back({(std::uint64_t{path[h]} << 32) | path[h + 1], x.payload_len});
    }
    if (port) {
      if (over) single_port_step(t, o, *sp, s, steps[s], sends, recvs);
      for (NodeId v : touched) sends[v] = recvs[v] = 0;
      touched.clear();
    }
    if (!load) continue;
    // Only equal links need to be together: an executor's step is already in (sender,
    // receiver) order and is not sorted again.
    auto by_link = [](const auto& a, const auto& b) { return a.first < b.first; };
    if (!std::is_sorted(hops.begin(), hops.end(), by_link))
      std::sort(hops.begin(), hops.end(), by_link);
    bool over_link = false;
    for (std::size_t k = 0; k < hops.size();) {
      std::size_t e = k;
      std::uint32_t items = 0;
      while (e < hops.size() && hops[e].first == hops[k].first) items += hops[e++].second;
      const auto a = static_cast<NodeId>(hops[k].first >> 32);
      const auto b = static_cast<NodeId>(hops[k].first & 0xFFFFFFFFu);
      const std::uint32_t cap = chunks ? t.topology.bandwidth(a, b) : 1;
      const std::uint32_t m = chunks ? items : static_cast<std::uint32_t>(e - k);
      k = e;
      if (chunks && cap == 0) continue;  // no link: the route check's to report
      worst = std::max(worst, m);
      over_link = over_link || m > cap;
    }
    // Only a step that overloads a link is gone over again, to build its counterexample.
    if (over_link) congestion_step(t, o, *cong, s, steps[s], chunks);
  }
  if (cong)
    cong->note = chunks ? fmt::format(
                              "largest number of chunks on one directed link in one step: {} "
                              "(bandwidths of {})",
                              worst, t.topology.spec())
                        : fmt::format("largest load on one directed link in one step: {}", worst);
}

}  // namespace

CheckResult check_single_port(const Trace& t, const CheckOptions& o) {
  CheckResult r;
  link_checks(t, o, by_step(t), &r, nullptr, nullptr);
  return r;
}

CheckResult check_route(const Trace& t, const CheckOptions& o) {
  CheckResult r;
  link_checks(t, o, by_step(t), nullptr, &r, nullptr);
  return r;
}

CheckResult check_congestion(const Trace& t, const CheckOptions& o) {
  CheckResult r;
  link_checks(t, o, by_step(t), nullptr, nullptr, &r);
  return r;
}

// The sets of contributions nodes hold, interned by content, with the union of a held set and
// a received item remembered: nodes that hold the same set and receive the same item share one
// merge. Symmetric algorithms (the star all-reduce: every node of a coset holds the same set at
// the end of a level, and a step's items are a few coset sums) need a handful of merges per
// step where a bitset per node costs p bit operations per receive. Exact terms only (sorted).
// A set's hash is the sum of its terms' hashes, so the union of disjoint sets hashes to the sum
// of theirs: a merge is hashed without going over its terms again (an item's hash is computed
// once); equal hashes are confirmed by comparing the terms.
class HeldSets {
 public:
  static constexpr std::uint32_t kOverlap = UINT32_MAX;
  HeldSets(std::size_t num_items, std::uint64_t max_bytes, std::uint64_t max_work)
      : max_bytes_(max_bytes), max_work_(max_work), num_items_(num_items) {}
  // The id of the set with these terms (sorted, no term twice).
  std::uint32_t intern(const std::vector<std::uint32_t>& v) {
    return intern(v.data(), v.size(), hash_of(v));
  }
  // The id of set `h` with item `it`'s terms (d's, sorted) added, or kOverlap if they share a
  // term. The item's terms are listed only when the pair is new.
  std::uint32_t add(std::uint32_t h, Item it, const Domain& d) {
    if (2 * (memo_used_ + 1) > memo_.size()) grow_memo();
    std::size_t k = slot(key_hash(h, it), memo_.size());
    for (; memo_[k].held != kOverlap; k = (k + 1) & (memo_.size() - 1))
      if (memo_[k].held == h && memo_[k].item == it) return memo_[k].value;
    memo_[k] = {it, h, kOverlap};
    ++memo_used_;
    const auto item = d.terms_into(it, item_terms_);
    auto held = terms(h);
    const std::size_t n = held.size() + item.size();
    if (n > merged_cap_) {
      merged_cap_ = std::max(n, 2 * merged_cap_);
      merged_ = std::make_unique_for_overwrite<std::uint32_t[]>(merged_cap_);
    }
    std::uint32_t* out = merged_.get();
    std::size_t i = 0, j = 0;
    while (i < held.size() && j < item.size()) {  // without a branch on which side is smaller
      const std::uint32_t a = held[i], b = item[j];
      if (a == b) return kOverlap;
      const bool left = a < b;
      *out++ = left ? a : b;
      i += left;
      j += !left;
    }
    out = std::copy(held.begin() + i, held.end(), out);
    std::copy(item.begin() + j, item.end(), out);
    work_ += n;
    const std::uint32_t id = intern(merged_.get(), n, sets_[h].hash + item_hash(it, item));
    memo_[k].value = id;  // intern() does not touch memo_
    return id;
  }
  // What is held: 4 bytes a term, the sets, both tables and the items' hashes.
  std::uint64_t bytes() const {
    return 4 * stored_ + 24 * sets_.size() + 16 * by_content_.size() + 16 * memo_.size() +
           8 * item_hash_.size() + 4 * merged_cap_ + 4 * item_terms_.capacity();
  }
  // Over budget: what is stored, or the merging done, passed the bound; the caller stops here.
  bool over() const { return bytes() > max_bytes_ || work_ > max_work_; }

 private:
  static constexpr std::size_t kBlock = std::size_t{1} << 22;
  struct Remembered {
    Item item;
    std::uint32_t held;  // kOverlap: an empty entry
    std::uint32_t value;
  };
  struct ByContent {
    std::uint64_t hash;
    std::uint32_t id = kOverlap;  // kOverlap: an empty entry
  };
  struct Set {
    const std::uint32_t* at;
    std::size_t size;
    std::uint64_t hash;
  };
  static std::uint64_t term_hash(std::uint32_t c) {
    std::uint64_t x = (c + 1) * 0x9E3779B97F4A7C15ULL;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ULL;
    return x ^ (x >> 29);
  }
  static std::uint64_t hash_of(std::span<const std::uint32_t> v) {
    std::uint64_t h = 0;
    for (auto c : v) h += term_hash(c);
    return h;
  }
  std::uint64_t item_hash(Item it, std::span<const std::uint32_t> item) {
    if (it >= num_items_) return hash_of(item);
    if (item_hash_.empty()) item_hash_.assign(num_items_, 0);
    if (item_hash_[it] == 0) item_hash_[it] = hash_of(item);  // a zero sum is recomputed
    return item_hash_[it];
  }
  std::uint32_t intern(const std::uint32_t* v, std::size_t n, std::uint64_t h) {
    if (2 * (sets_.size() + 1) > by_content_.size()) grow_content();
    std::size_t k = slot(h, by_content_.size());
    for (; by_content_[k].id != kOverlap; k = (k + 1) & (by_content_.size() - 1)) {
      if (by_content_[k].hash != h) continue;
      const Set& got = sets_[by_content_[k].id];
      if (got.size == n && std::equal(got.at, got.at + n, v)) return by_content_[k].id;
    }
    // Terms go into blocks that are never moved: a set's span stays valid, and growing never
    // copies what is stored.
    if (blocks_.empty() || blocks_.back().capacity() - blocks_.back().size() < n) {
      blocks_.emplace_back();
      blocks_.back().reserve(std::max<std::size_t>(kBlock, n));
    }
    auto& block = blocks_.back();
    const std::uint32_t* at = block.data() + block.size();
    block.insert(block.end(), v, v + n);
    stored_ += n;
    const auto id = static_cast<std::uint32_t>(sets_.size());
    sets_.push_back({at, n, h});
    by_content_[k] = {h, id};
    return id;
  }
  static std::uint64_t key_hash(std::uint32_t h, Item it) {
    return (it * 0x9E3779B97F4A7C15ULL) ^ (std::uint64_t{h} * 0xC2B2AE3D27D4EB4FULL);
  }
  // Open addressing with linear probing over a power-of-two table, at most half full.
  static std::size_t slot(std::uint64_t hash, std::size_t size) {
    return static_cast<std::size_t>((hash * 0xD6E8FEB86659FD93ULL) >> 20) & (size - 1);
  }
  void grow_content() {
    std::vector<ByContent> old(std::max<std::size_t>(1024, 2 * by_content_.size()));
    old.swap(by_content_);
    for (const ByContent& e : old) {
      if (e.id == kOverlap) continue;
      std::size_t k = slot(e.hash, by_content_.size());
      while (by_content_[k].id != kOverlap) k = (k + 1) & (by_content_.size() - 1);
      by_content_[k] = e;
    }
  }
  void grow_memo() {
    std::vector<Remembered> old(std::max<std::size_t>(1024, 2 * memo_.size()),
                                Remembered{0, kOverlap, kOverlap});
    old.swap(memo_);
    for (const Remembered& e : old) {
      if (e.held == kOverlap) continue;
      std::size_t k = slot(key_hash(e.held, e.item), memo_.size());
      while (memo_[k].held != kOverlap) k = (k + 1) & (memo_.size() - 1);
      memo_[k] = e;
    }
  }
  std::span<const std::uint32_t> terms(std::uint32_t id) const {
    return {sets_[id].at, sets_[id].size};
  }
  std::uint64_t max_bytes_, max_work_;
  std::size_t num_items_;
  std::uint64_t work_ = 0, stored_ = 0;
  std::vector<std::vector<std::uint32_t>> blocks_;
  std::vector<Set> sets_;
  std::unique_ptr<std::uint32_t[]> merged_;
  std::size_t merged_cap_ = 0;
  std::vector<ByContent> by_content_;
  std::vector<Remembered> memo_;
  std::size_t memo_used_ = 0;
  std::vector<std::uint64_t> item_hash_;   // per domain item, 0: not computed yet
  std::vector<std::uint32_t> item_terms_;  // the item add() merges
};

namespace {
CheckResult nodup_check(const Trace& t, const CheckOptions& o, const StepIndex& steps);
}

CheckResult check_nodup(const Trace& t, const CheckOptions& o) {
  if (!t.nodup_claimed || !t.domain->inspectable()) return nodup_check(t, o, StepIndex{});
  return nodup_check(t, o, by_step(t));
}

namespace {
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
}  // namespace

// A barrier's postcondition: every node's exit depends causally on every node's entry. Replays
// the executed order of sends and receives (Trace::events) with one bit set per node: a send
// carries what its sender knows, a receive adds it to what the receiver knows; at the end every
// node must know of every node's entry. A message carries its sender's whole past, whatever its
// data (empty messages included).
CheckResult check_barrier(const Trace& t, const CheckOptions& o) {
  // A schedule file records no events: its steps give the order. A transfer of step s is sent
  // with what its sender knew before step s and received at step s (as the dataflow check reads
  // steps), so every send of a step comes before every receive of it; a transfer marked never
  // received is sent and not received.
  std::vector<std::uint32_t> from_steps;
  const std::vector<std::uint32_t>* events = &t.events;
  if (t.events.size() < t.transfers.size()) {
    if (!t.from_file || t.failure.kind != RunFailure::Kind::None) {
      CheckResult r = make("postcondition");
      r.verdict = Verdict::Unknown;
      r.note = t.from_file ? "the schedule stopped early: its causal order is incomplete"
                           : "the run recorded no order of sends and receives";
      return r;
    }
    std::vector<std::uint8_t> lost(t.transfers.size(), 0);
    for (auto i : t.unreceived)
      if (i < lost.size()) lost[i] = 1;
    auto order = t.ordered_transfers();
    from_steps.reserve(2 * order.size());
    for (std::size_t a = 0; a < order.size();) {
      std::size_t b = a;
      while (b < order.size() && t.transfers[order[b]].step == t.transfers[order[a]].step) ++b;
      for (std::size_t k = a; k < b; ++k) from_steps.push_back(order[k] << 1);
      for (std::size_t k = a; k < b; ++k)
        if (!lost[order[k]]) from_steps.push_back((order[k] << 1) | 1);
      a = b;
    }
    events = &from_steps;
  }
  CheckResult r = make("postcondition");
  std::size_t p = t.topology.num_processors();
  std::size_t words = (p + 63) / 64;
  require_memory(sat_mul(sat_mul(p + t.transfers.size(), words), 8), "the barrier check");
  std::vector<std::uint64_t> know(p * words, 0), sent(t.transfers.size() * words, 0);
  for (std::size_t v = 0; v < p; ++v) know[v * words + v / 64] |= 1ULL << (v % 64);
  for (std::uint32_t e : *events) {
    std::uint32_t tid = e >> 1;
    const Transfer& x = t.transfers[tid];
    if ((e & 1) == 0) {
      std::copy_n(&know[x.src * words], words, &sent[tid * words]);
    } else {
      for (std::size_t w = 0; w < words; ++w) know[x.dst * words + w] |= sent[tid * words + w];
    }
  }
  for (std::size_t v = 0; v < p; ++v) {
    std::vector<NodeId> missing;
    for (std::size_t u = 0; u < p; ++u)
      if (!(know[v * words + u / 64] >> (u % 64) & 1)) missing.push_back(static_cast<NodeId>(u));
    if (missing.empty()) continue;
    Counterexample c;
    set_list(c.nodes, {static_cast<NodeId>(v)});
    std::string list;
    for (std::size_t k = 0; k < missing.size() && k < 8; ++k)
      list += (k ? ", " : "") + t.topology.label(missing[k]);
    if (missing.size() > 8) list += fmt::format(" and {} more", missing.size() - 8);
    c.message = fmt::format(
        "node {} leaves the barrier without a chain of messages from {} ({} of {} nodes): its "
        "exit does not depend on their entry",
        t.topology.label(static_cast<NodeId>(v)), list, missing.size(), p);
    add_violation(r, o, std::move(c));
  }
  if (events == &from_steps)
    r.note =
        "causal order from the file's steps: a transfer carries what its sender knew before "
        "its step";
  return r;
}

static CheckResult check_outputs(const Trace& t, const CheckOptions& o);

// The collective's postcondition; a schedule file that lists a node twice in `final` claims two
// ends for it and fails too (Trace::final_twice).
CheckResult check_postcondition(const Trace& t, const CheckOptions& o) {
  CheckResult r = t.collective == Collective::Barrier ? check_barrier(t, o) : check_outputs(t, o);
  for (const std::string& m : t.final_twice) {
    Counterexample c;
    c.message = m;
    add_violation(r, o, std::move(c));
  }
  return r;
}

// Each node's output against what the collective requires of it.
static CheckResult check_outputs(const Trace& t, const CheckOptions& o) {
  CheckResult r = make("postcondition");
  const Domain& d = *t.domain;
  // A slice of a partitioned run judges its own nodes (Trace::slice_base).
  const NodeId lo = t.slice_base.value_or(0);
  const auto hi =
      static_cast<NodeId>(t.slice_base ? lo + t.final_output.size() : t.topology.num_processors());
  auto want = expected_output_refs(t, lo, hi);
  bool free_order = output_order_free(t);
  bool all_order_only = true;
  // In MPI's layout, whether two items hold the same contributions (ordered domain), each pair
  // decided once: the ring's 1,024 nodes end with the same 1,024 items, each of 1,024 terms.
  std::unordered_map<std::pair<Item, Item>, bool, ItemPairHash> same_memo;
  std::vector<std::uint32_t> ta, tb;
  auto same_terms = [&](Item a, Item b) {
    if (a == b) return true;
    auto [at, fresh] = same_memo.try_emplace({a, b}, false);
    if (fresh) {
      // A view of the domain's own storage (count 1) is copied before sorting.
      if (const auto sa = d.terms_into(a, ta); sa.data() != ta.data())
        ta.assign(sa.begin(), sa.end());
      if (const auto sb = d.terms_into(b, tb); sb.data() != tb.data())
        tb.assign(sb.begin(), sb.end());
      std::sort(ta.begin(), ta.end());
      std::sort(tb.begin(), tb.end());
      at->second = ta == tb;
    }
    return at->second;
  };
  auto same_multisets = [&](const Buffer& a, const Buffer& b) {
    if (free_order) return term_multisets(d, a, true) == term_multisets(d, b, true);
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_terms(a[i], b[i])) return false;
    return true;
  };
  for (NodeId v = lo; v < hi; ++v) {
    if (!want[v - lo]) continue;
    const Buffer& got = t.final_output[v - lo];
    const Buffer* want_v = &*want[v - lo];
    bool ok = free_order ? sorted_items(got) == sorted_items(*want_v) : got == *want_v;
    if (ok) continue;
    bool order_only = d.kind() == DomainKind::Ordered && same_multisets(got, *want_v);
    all_order_only = all_order_only && order_only;
    if (r.violations.size() >= o.max_violations) {  // counted, not kept: its text is not built
      add_violation(r, o, Counterexample{});        // (ring p = 1,024 ordered: 2 x 10^9 terms)
      continue;
    }
    Counterexample c;
    set_list(c.nodes, {v});
    c.buffers.push_back({v, "output", buffer_to_string(t, got)});
    c.buffers.push_back({v, "expected", buffer_to_string(t, *want_v)});
    // In MPI's layout, name the first position that differs when every item is there.
    std::string where;
    if (!free_order && got.size() == want_v->size() && !order_only &&
        sorted_items(got) == sorted_items(*want_v)) {
      std::size_t i = 0;
      while (got[i] == (*want_v)[i]) ++i;
      Buffer a, b;
      a.push_back(got[i]);
      b.push_back((*want_v)[i]);
      where = fmt::format(
          " (every item is there, out of place: position {} holds {}, MPI's layout "
          "puts {} there)",
          i, buffer_to_string(t, a), buffer_to_string(t, b));
    }
    c.message = fmt::format("node {} ends with {} but {} requires {}{}{}", t.topology.label(v),
                            buffer_to_string(t, got), collective_name(t.collective),
                            buffer_to_string(t, *want_v),
                            order_only ? " (the same contributions in another order)" : "", where);
    add_violation(r, o, std::move(c));
  }
  if (r.verdict == Verdict::Fail && all_order_only) {
    r.order_only = true;
    r.note = "every difference is operand order only: right for commutative operators";
  }
  if (d.kind() == DomainKind::Fingerprint && r.verdict == Verdict::Pass)
    r.note = "fingerprint domain: equal sums of random 64-bit weights (probabilistic)";
  return r;
}

CheckResult check_final_buffers(const Trace& t, const CheckOptions& o) {
  if (t.collective != Collective::Allreduce && t.collective != Collective::Allgather)
    return not_checked("final-buffers",
                       "only all-reduce and all-to-all broadcast end with equal buffers");
  CheckResult r = make("final-buffers");
  bool free_order = t.collective == Collective::Allgather && t.layout_any;
  auto key = [&](const Buffer& b) {
    return free_order ? sorted_items(b) : std::vector<Item>(b.begin(), b.end());
  };
  if (t.final_output.empty()) return r;
  // A slice of a partitioned run judges its own nodes against node 0's output.
  const NodeId lo = t.slice_base.value_or(0);
  const Buffer& first = t.slice_base ? t.slice_first_output : t.final_output[0];
  auto ref = key(first);
  bool all_order_only = true;
  const Domain& d = *t.domain;
  std::optional<std::vector<std::vector<std::uint32_t>>> ref_terms;  // listed at a difference
  for (NodeId v = std::max<NodeId>(lo, 1); v < lo + t.final_output.size(); ++v) {
    const Buffer& out = t.final_output[v - lo];
    if (key(out) == ref) continue;
    if (!ref_terms && d.kind() == DomainKind::Ordered)
      ref_terms = term_multisets(d, first, free_order);
    all_order_only = all_order_only && d.kind() == DomainKind::Ordered &&
                     term_multisets(d, out, free_order) == *ref_terms;
    Counterexample c;
    set_list(c.nodes, {0, v});
    c.buffers.push_back({0, "output", buffer_to_string(t, first)});
    c.buffers.push_back({v, "output", buffer_to_string(t, out)});
    c.message =
        fmt::format("node {} ends with {} but node {} with {}", t.topology.label(v),
                    buffer_to_string(t, out), t.topology.label(0), buffer_to_string(t, first));
    add_violation(r, o, std::move(c));
  }
  if (r.verdict == Verdict::Fail && all_order_only) {
    r.order_only = true;
    r.note = "the buffers differ in operand order only: equal for commutative operators";
  }
  return r;
}

// The model's `port single` line under --port all.
static std::string single_port_claim_note(const char* claim) {
  return fmt::format(
      "the model states its {} claim for --port single (`port single`: a single-port formula); "
      "this run uses --port all",
      claim);
}

// --port all: collv's schedule delayed transfers where senders' routes met on a link (Trace::
// link_waits), so what it takes is one schedule's, an upper bound; a claim below it is unknown.
static std::string link_waits_note(const Trace& t, const std::string& got,
                                   const std::string& claimed) {
  return fmt::format(
      "under --port all collv's schedule takes {}, but it delayed {} transfer(s) where routes of "
      "different senders met on a directed link (a list schedule: an upper bound); another order "
      "may take the claimed {}",
      got, t.link_waits, claimed);
}

CheckResult check_steps(const Trace& t, const CheckOptions& o) {
  if (!t.claimed_steps && !t.claimed_steps_real && !t.recorded_steps && t.recorded_disagree.empty())
    return not_checked("steps", "the model claims no step count here");
  if (t.failure.kind != RunFailure::Kind::None)
    return not_checked("steps", "the run did not finish");
  CheckResult r = make("steps");
  if (t.recorded_steps && *t.recorded_steps != static_cast<std::int64_t>(t.steps)) {
    Counterexample c;
    c.message = fmt::format("the file records \"steps\": {}, but its transfers take {} steps",
                            *t.recorded_steps, t.steps);
    add_violation(r, o, std::move(c));
  }
  for (const auto& m : t.recorded_disagree) {
    Counterexample c;
    c.message = "the file's recorded statistics disagree with its transfers: " + m;
    add_violation(r, o, std::move(c));
  }
  if (!t.claimed_steps && !t.claimed_steps_real) return r;
  if (t.claims_single_port && t.port == PortModel::All) {  // the claim is not judged
    if (r.violations.empty()) {
      r.verdict = Verdict::NotChecked;
      r.note = single_port_claim_note("steps");
    }
    return r;
  }
  if (t.claimed_steps_real) {  // not a whole number, or beyond 2^53: it cannot hold
    Counterexample c;
    double v = *t.claimed_steps_real;
    c.message = fmt::format("the run takes {} steps; the model claims {:.6g} steps{}", t.steps, v,
                            v == std::floor(v) ? "" : ", not a whole number");
    add_violation(r, o, std::move(c));
  } else if (t.steps_at_most ? static_cast<std::int64_t>(t.steps) > *t.claimed_steps
                             : static_cast<std::int64_t>(t.steps) != *t.claimed_steps) {
    if (t.link_waits > 0 && static_cast<std::int64_t>(t.steps) > *t.claimed_steps &&
        r.violations.empty()) {
      r.verdict = Verdict::Unknown;
      r.note =
          link_waits_note(t, fmt::format("{} steps", t.steps), fmt::format("{}", *t.claimed_steps));
      return r;
    }
    Counterexample c;
    c.message = fmt::format("the run takes {} steps; the model claims {}{}", t.steps,
                            t.steps_at_most ? "at most " : "", *t.claimed_steps);
    add_violation(r, o, std::move(c));
  }
  if (t.steps_at_most)
    r.note = fmt::format("a bound: {} steps, at most {} claimed", t.steps, *t.claimed_steps);
  return r;
}

// The message-size claims (Trace::words_per_message, Trace::claimed_words) against the payloads:
// an item is one word.
void check_words(const Trace& t, const CheckOptions& o, CheckResult& r) {
  for (auto i : t.ordered_transfers()) {
    const Transfer& x = t.transfers[i];
    std::string claim;
    if (!t.claimed_words.empty() && t.claimed_words[i] != kNoWordsClaim &&
        t.claimed_words[i] != x.payload_len)
      claim = fmt::format("its \"words\" says {}", t.claimed_words[i]);
    else if (t.words_per_message && x.payload_len > *t.words_per_message)
      claim = fmt::format("the schedule claims at most {} word(s) per message (words_per_message)",
                          *t.words_per_message);
    if (claim.empty()) continue;
    Counterexample c;
    c.step = x.step;
    set_list(c.nodes, {x.src, x.dst});
    set_list(c.transfers, {i});
    c.buffers.push_back({x.src, "sent", payload_to_string(t, x)});
    c.message = fmt::format("step {}: transfer #{} ({} -> {}) carries {} word(s) {}, but {}",
                            x.step, i, t.topology.label(x.src), t.topology.label(x.dst),
                            x.payload_len, payload_to_string(t, x), claim);
    add_violation(r, o, std::move(c));
  }
}

CheckResult check_cost(const Trace& t, const CheckOptions& o) {
  const bool words = t.words_per_message || !t.claimed_words.empty();
  if (!t.claimed_ts && !t.recorded_ts && !words)
    return not_checked("cost", "the model claims no cost formula here");
  if (t.failure.kind != RunFailure::Kind::None)
    return not_checked("cost", "the run did not finish");
  CheckResult r = make("cost");
  if (words) {
    check_words(t, o, r);
    if (t.words_per_message)
      r.note =
          fmt::format("message size judged: at most {} word(s) per message", *t.words_per_message);
  }
  auto near = [](double a, double b) {
    return std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b));
  };
  auto f = [](double x) { return number_text(x); };
  if (t.recorded_ts && !(near(t.cost_ts, *t.recorded_ts) && near(t.cost_tw, *t.recorded_tw))) {
    Counterexample c;
    c.message = fmt::format(
        "the file records \"cost\": {} ts + {} tw*m, but its transfers cost {} ts + {} tw*m",
        f(*t.recorded_ts), f(*t.recorded_tw), f(t.cost_ts), f(t.cost_tw));
    add_violation(r, o, std::move(c));
  }
  if (!t.claimed_ts) return r;
  if (t.claims_single_port && t.port == PortModel::All) {  // the claim is not judged
    if (r.violations.empty()) {
      r.verdict = Verdict::NotChecked;
      r.note = (r.note.empty() ? "" : r.note + "; ") + single_port_claim_note("cost");
    }
    return r;
  }
  auto within = [&](double got, double bound) {
    return got <= bound + 1e-6 * std::max(1.0, bound);
  };
  bool holds = t.cost_at_most ? within(t.cost_ts, *t.claimed_ts) && within(t.cost_tw, *t.claimed_tw)
                              : near(t.cost_ts, *t.claimed_ts) && near(t.cost_tw, *t.claimed_tw);
  if (!holds && t.link_waits > 0 && r.violations.empty() &&
      (t.cost_ts > *t.claimed_ts || t.cost_tw > *t.claimed_tw)) {
    r.verdict = Verdict::Unknown;
    r.note = link_waits_note(t, fmt::format("{} ts + {} tw*m", f(t.cost_ts), f(t.cost_tw)),
                             fmt::format("{} ts + {} tw*m", f(*t.claimed_ts), f(*t.claimed_tw)));
    return r;
  }
  if (!holds) {
    Counterexample c;
    c.message = fmt::format("the run costs {} ts + {} tw*m; the model claims {}{} ts + {} tw*m",
                            f(t.cost_ts), f(t.cost_tw), t.cost_at_most ? "at most " : "",
                            f(*t.claimed_ts), f(*t.claimed_tw));
    add_violation(r, o, std::move(c));
  }
  return r;
}

CheckResult check_deadlock(const Trace& t, const CheckOptions& o) {
  CheckResult r = make("deadlock");
  const RunFailure& f = t.failure;
  switch (f.kind) {
    case RunFailure::Kind::None:
      break;
    case RunFailure::Kind::StepLimit:
    case RunFailure::Kind::OpLimit:
      r.verdict = Verdict::Unknown;
      r.note = f.message;
      break;
    case RunFailure::Kind::RuntimeError:
      r.verdict = Verdict::NotChecked;
      r.note = "the run stopped at a runtime error (see the runtime check)";
      break;
    case RunFailure::Kind::Deadlock: {
      if (f.order_unexplored) {  // a cycle through collv's conservative data rule: not judged
        r.verdict = Verdict::Unknown;
        r.note = f.message;
        break;
      }
      Counterexample c;
      c.nodes = f.waiting_cycle;
      c.message = f.message;
      add_violation(r, o, std::move(c));
      break;
    }
  }
  return r;
}

CheckResult check_runtime(const Trace& t, const CheckOptions& o) {
  CheckResult r = make("runtime");
  if (t.failure.kind == RunFailure::Kind::RuntimeError) {
    Counterexample c;
    c.message = t.failure.message;
    add_violation(r, o, std::move(c));
  }
  return r;
}

// The transfer checks of a streamed run (Trace::streamed), from what the run established while it
// went: every transfer went to a neighbour (the executor refuses others), the single-port timing
// gave each node's sends, and its receives, strictly increasing steps (StreamTiming), so at most
// one transfer crosses each directed link in a step; every transfer was received unless
// stream_incomplete says otherwise. nodup and dataflow need each node's holdings over the whole
// run and are not judged.
std::vector<CheckResult> streamed_transfer_checks(const Trace& t, const CheckOptions& o) {
  auto unknown = [&](const char* name) {
    CheckResult r = make(name);
    r.verdict = Verdict::Unknown;
    r.note = "streamed run: " + t.stream_incomplete + "; the stored trace is needed to judge it";
    return r;
  };
  auto kept = [&](const char* name) {
    // nodup says why it does not apply (no claim, the fingerprint domain) without the trace.
    if (std::string_view(name) == "nodup" && (!t.nodup_claimed || !t.domain->inspectable()))
      return check_nodup(t, o);
    return not_checked(name,
                       "a streamed run keeps no trace; this check needs each node's holdings "
                       "over the whole run (--stream off, or a smaller size)");
  };
  // A run stopped by a runtime error or a limit leaves transfers unreceived because it stopped
  // (in a partitioned run, another process's messages of the round it stopped in): the checks
  // the stop decides are marked by it (follows_from_stop), the others judged as far as it ran.
  const bool stopped = t.failure.kind == RunFailure::Kind::RuntimeError ||
                       t.failure.kind == RunFailure::Kind::OpLimit ||
                       t.failure.kind == RunFailure::Kind::StepLimit;
  if (!t.stream_incomplete.empty() && !stopped)
    return {unknown("single-port"), unknown("route"), unknown("congestion"),
            kept("nodup"),          kept("dataflow"), unknown("match")};
  CheckResult congestion = make("congestion");
  congestion.note = fmt::format("largest load on one directed link in one step: {}",
                                t.streamed_transfers > 0 ? 1 : 0);
  return {make("single-port"), make("route"),    std::move(congestion),
          kept("nodup"),       kept("dataflow"), check_match(t, o)};  // every transfer received
}
// A check that follows from where the run stopped: not-checked, with the stop as its reason.
static void follows_from_stop(CheckResult& r, const std::string& why) {
  r.verdict = Verdict::NotChecked;
  r.violations.clear();
  r.violation_count = 0;
  r.order_only = false;
  r.after_stop = true;
  r.note = why;
}

std::vector<CheckResult> check_trace(const Trace& t, const CheckOptions& o) {
  std::vector<CheckResult> all;
  if (t.streamed) {
    all = streamed_transfer_checks(t, o);
  } else {
    // One step index for every check that reads the steps. On a large trace (the threads
    // option's rule) nodup, then single-port, route and congestion (one pass), run on a second
    // thread beside dataflow (about even halves of the work on the star all-reduce); each check
    // reads the trace only, and the results keep their order.
    const StepIndex steps = by_step(t);
    const bool beside = o.threads != 1 && (o.threads > 1 || t.transfers.size() >= 200000);
    CheckResult nodup, single_port, route, congestion;
    std::exception_ptr beside_error;
    std::thread worker;
    auto links = [&] { link_checks(t, o, steps, &single_port, &route, &congestion); };
    if (beside)
      worker = std::thread([&] {
        try {
          nodup = nodup_check(t, o, steps);
          links();
        } catch (...) {
          beside_error = std::current_exception();
        }
      });
    auto join = [&] {
      if (worker.joinable()) worker.join();
    };
    try {
      auto [dataflow, match] = check_dataflow_and_match(t, o);
      if (!beside) {
        links();
        nodup = nodup_check(t, o, steps);
      }
      join();
      if (beside_error) std::rethrow_exception(beside_error);
      all.push_back(std::move(single_port));
      all.push_back(std::move(route));
      all.push_back(std::move(congestion));
      all.push_back(std::move(nodup));
      all.push_back(std::move(dataflow));
      all.push_back(std::move(match));
    } catch (...) {
      join();
      throw;
    }
  }
  for (auto* f : {check_postcondition, check_final_buffers, check_steps, check_cost, check_deadlock,
                  check_runtime})
    all.push_back(f(t, o));
  // A run stopped at a limit is unfinished: a violation found in its prefix is real, but a
  // pass is not, and its final buffers mean nothing. The limit is said once, by the deadlock
  // check (unknown, with the limit's message); what needed the whole run is not-checked with
  // that reason (after_stop), as after a deadlock or a runtime error.
  bool limit =
      t.failure.kind == RunFailure::Kind::StepLimit || t.failure.kind == RunFailure::Kind::OpLimit;
  if (limit) {
    const std::string why =
        fmt::format("the run stopped at {} before it finished (see the deadlock check)",
                    t.failure.kind == RunFailure::Kind::StepLimit ? "--max-steps" : "--max-ops");
    for (auto& r : all) {
      if (r.name == "deadlock") continue;
      bool about_end = r.name == "postcondition" || r.name == "final-buffers";
      bool follows = r.verdict == Verdict::Pass || (about_end && r.verdict == Verdict::Fail) ||
                     (r.verdict == Verdict::Unknown &&
                      r.note.rfind("the run stopped at a limit", 0) == 0) ||  // match
                     (r.verdict == Verdict::NotChecked &&
                      r.note.rfind("the run did not finish", 0) == 0);  // steps, cost
      if (!follows) continue;  // a violation in the prefix, or a reason of its own, stands
      follows_from_stop(r, why);
    }
  }
  mark_stopped_run(all, t);
  return all;
}

std::string stopped_run_reason(const Trace& t) {
  const RunFailure& f = t.failure;
  if (f.kind == RunFailure::Kind::Deadlock && f.ports)
    return "the run has a deadlock of the ports: no single-port schedule exists, so its steps "
           "are not a schedule (see the deadlock check)";
  std::string when = t.steps == 0 ? std::string("before its first transfer")
                                  : fmt::format("after step {}", t.steps);
  if (f.kind == RunFailure::Kind::Deadlock)
    return fmt::format("the run deadlocked {} (see the deadlock check)", when);
  if (f.kind == RunFailure::Kind::RuntimeError)
    return fmt::format("the run stopped at a runtime error {} (see the runtime check)", when);
  return "";
}

void mark_stopped_run(std::vector<CheckResult>& all, const Trace& t) {
  const std::string why = stopped_run_reason(t);
  if (why.empty()) return;
  // A deadlock of the ports computed every value and received every message: only what rests on
  // the steps follows from it. A deadlock of the values or a runtime error left nodes unfinished:
  // their buffers, the messages they would have received and the steps they would have taken are
  // not the algorithm's. route and nodup judge each transfer made on its own, and stand.
  static const std::vector<std::string_view> steps_only = {"single-port", "congestion", "steps",
                                                           "cost"};
  static const std::vector<std::string_view> unfinished = {
      "single-port",   "congestion",    "dataflow", "match",
      "postcondition", "final-buffers", "steps",    "cost"};
  const auto& names = t.failure.ports ? steps_only : unfinished;
  for (auto& r : all) {
    if (std::find(names.begin(), names.end(), r.name) == names.end()) continue;
    // Not checked for a reason of its own (no claim, --port all, ...): that reason stands.
    if (r.verdict == Verdict::NotChecked && r.note.rfind("the run did not finish", 0) != 0 &&
        r.note.rfind("the run stopped at a runtime error", 0) != 0)
      continue;
    follows_from_stop(r, why);
  }
}

}  // namespace collv
