// DOT text for schedules, step panels, counterexamples and deadlocks (see render.hpp).
#include "render/render.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

namespace collv {

namespace {

// ---- text helpers ----------------------------------------------------------------------------

// Cuts `s` to at most `max` characters (counting UTF-8 code points), ending with "…".
std::string shorten(const std::string& s, std::size_t max) {
  std::size_t cps = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++cps;
  if (cps <= max || max < 2) return s;
  std::string out;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80) {
      if (kept == max - 1) break;
      ++kept;
    }
    out += s[i];
  }
  return out + "\u2026";
}

// A DOT double-quoted string: escapes quotes and backslashes, turns '\n' into a centred line
// break and drops other control characters.
std::string q(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (c == '\n') {
      o += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      o += ' ';
    } else {
      o += c;
    }
  }
  return o + "\"";
}

std::string nid(NodeId v) { return fmt::format("n{}", v); }

// An item's describe() text; when too long, cut and followed by its number of terms, e.g.
// "x3+x5+x13…(6)" (a sum of 6 inputs).
std::string item_text(const Trace& t, Item it, const RenderOptions& o) {
  if (!t.domain) return fmt::format("#{}", it);
  std::string d = t.domain->describe(it);
  if (d.size() <= o.max_item_chars) return d;
  std::uint64_t w = t.domain->inspectable() ? t.domain->weight(it) : 0;
  if (w == 0) return shorten(d, o.max_item_chars);
  std::string tail = fmt::format("({})", w);
  std::string head =
      shorten(d, o.max_item_chars > tail.size() + 4 ? o.max_item_chars - tail.size() : 4);
  // Cut at the last complete term.
  auto plus = head.rfind('+');
  if (plus != std::string::npos && plus > 0) head = head.substr(0, plus + 1) + "\u2026";
  return head + tail;
}

// Items joined by ", ", at most `max` characters; the rest as "+k".
std::string items_text(const Trace& t, const Item* items, std::size_t n, const RenderOptions& o,
                       std::size_t max) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    std::string it = item_text(t, items[i], o);
    std::string more = fmt::format(", +{}", n - i);
    if (i > 0 && s.size() + 2 + it.size() + (i + 1 < n ? more.size() : 0) > max) {
      s += fmt::format(", +{} more", n - i);
      return s;
    }
    if (i) s += ", ";
    s += it;
  }
  return s;
}

// Contributions as "x0..x3, x6" (one element per node) or "k of N parts".
std::string knows_text(const Trace& t, const std::set<std::uint32_t>& c) {
  if (!t.domain || !t.domain->inspectable()) return "";
  std::uint32_t elems = std::max<std::uint32_t>(1, t.domain->elems());
  if (elems > 1) return fmt::format("{} of {} parts", c.size(), t.domain->p() * elems);
  std::string s;
  for (auto it = c.begin(); it != c.end();) {
    std::uint32_t a = *it, b = a;
    auto jt = std::next(it);
    while (jt != c.end() && *jt == b + 1) {
      b = *jt;
      ++jt;
    }
    if (!s.empty()) s += ",";
    if (b == a) {
      s += fmt::format("x{}", a);
    } else if (b == a + 1) {
      s += fmt::format("x{},x{}", a, b);
    } else {
      s += fmt::format("x{}..x{}", a, b);
    }
    it = jt;
  }
  return s;
}

// ---- drawing ---------------------------------------------------------------------------------

// Spacing between neighbouring nodes for labels of the given size.
std::pair<double, double> spacing(std::size_t max_chars, std::size_t lines, double min_u) {
  double w = 0.085 * static_cast<double>(max_chars) + 0.45;
  double h = 0.2 * static_cast<double>(lines) + 0.5;
  double u = std::max({min_u, w, h});
  return {u, std::max(min_u, std::max(h, u * 0.75))};
}

std::string graph_header(const std::string& title, const NodeLayout& L, std::size_t nodes,
                         bool splines) {
  std::string s = "digraph collv {\n";
  s += "  graph [layout=neato, overlap=true, outputorder=edgesfirst, pad=0.3, "
       "fontname=\"Helvetica\", "
       "fontsize=14, labelloc=t, labeljust=c";
  s += splines ? ", splines=true" : ", splines=line";
  s += fmt::format(", label={}, comment={}];\n", q(title), q("collv render, layout " + L.name));
  (void)nodes;
  s += "  node [fontname=\"Helvetica\", fontsize=11, shape=circle, margin=\"0.04,0.02\"];\n";
  s += "  edge [fontname=\"Helvetica\", fontsize=10, arrowsize=0.7];\n";
  return s;
}

struct NodeStyle {
  std::string label;
  std::string extra;  // extra attributes, ", a=b" form
};

void write_nodes(std::string& s, const Trace& tr, const NodeLayout& L,
                 const std::vector<NodeStyle>& st, bool boxes, double pad_above = 0.6) {
  const Topology& t = tr.topology;
  std::size_t N = t.num_nodes();
  std::vector<bool> in_cluster(N, false);
  auto node_line = [&](NodeId v) {
    std::string shape;
    if (t.kind(v) == NodeKind::Switch) {
      shape = ", shape=box, style=filled, fillcolor=gray92, width=0.3, height=0.25, fontsize=9";
    } else if (boxes) {
      shape = ", shape=box, style=rounded";
    }
    return fmt::format("  {} [label={}, pos=\"{:.3f},{:.3f}!\"{}{}];\n", nid(v), q(st[v].label),
                       L.pos[v].first, L.pos[v].second, shape, st[v].extra);
  };
  for (std::size_t c = 0; c < L.clusters.size(); ++c) {
    s += fmt::format(
        "  subgraph cluster_{} {{\n    label={}; style=dashed; color=gray60; "
        "fontcolor=gray40; fontsize=11;\n",
        c, q(L.clusters[c].first));
    double top = -1e300, x0 = 1e300, x1 = -1e300;
    for (NodeId v : L.clusters[c].second) {
      in_cluster[v] = true;
      s += "  " + node_line(v);
      top = std::max(top, L.pos[v].second);
      x0 = std::min(x0, L.pos[v].first);
      x1 = std::max(x1, L.pos[v].first);
    }
    // An invisible node above the top row makes room for the cluster's label.
    if (!L.clusters[c].second.empty())
      s += fmt::format(
          "    pad{} [label=\"\", style=invis, width=0.1, height=0.1, pos=\"{:.3f},{:.3f}!\"];\n",
          c, (x0 + x1) / 2, top + pad_above);
    s += "  }\n";
  }
  for (NodeId v = 0; v < N; ++v)
    if (!in_cluster[v]) s += node_line(v);
}

// One drawn hop of a transfer (an arrow between two nodes), collected before it is written so
// that links used by arrows are not drawn twice and crowded hops can be merged.
struct Hop {
  NodeId from, to;
  std::string attrs;  // without the label
  std::string label;  // "" for the later hops of a routed transfer
  std::string color;
  bool routed = false;
};

// A transfer between nodes that are not neighbours (no link to follow): a straight dotted arrow.
// Its label sits at the sender's end, not in the middle, so that the labels of arrows crossing
// in the middle of the picture (a star's far exchanges) do not pile up there.
struct Unlinked {
  NodeId from, to;
  std::string label, color, fontcolor;
  double width;
};

struct Drawing {
  std::vector<Hop> hops;
  std::vector<Unlinked> unlinked;
  std::vector<std::string> extra;  // other edges, written after the hops
  bool has_unlinked() const { return !unlinked.empty(); }
};

// The legend's words for dotted arrows, when there are any.
std::string unlinked_legend(const Drawing& d) {
  return d.has_unlinked() ? "; dotted: no link between the ends, labelled at the sender" : "";
}

// Dotted arrows, one per pair of nodes: both directions share one line with an arrowhead at each
// end, and each direction's label sits at its sender.
void write_unlinked(std::string& s, const Drawing& d) {
  using Key = std::tuple<NodeId, NodeId, std::string>;
  std::map<Key, std::vector<const Unlinked*>> groups;
  std::vector<Key> order;
  for (const auto& u : d.unlinked) {
    Key k{std::min(u.from, u.to), std::max(u.from, u.to), u.color};
    auto& g = groups[k];
    if (g.empty()) order.push_back(k);
    g.push_back(&u);
  }
  for (const auto& k : order) {
    const auto& g = groups[k];
    // The first arrow's direction is the edge's; labels of the other direction go to its head.
    NodeId a = g.front()->from, b = g.front()->to;
    std::string tail, head;
    double width = 0;
    bool back = false;
    for (const Unlinked* u : g) {
      std::string& side = u->from == a ? tail : head;
      if (u->from != a) back = true;
      if (!u->label.empty()) side += (side.empty() ? "" : "\n") + u->label;
      width = std::max(width, u->width);
    }
    std::string attrs = fmt::format(
        "color={}, fontcolor={}, penwidth={:.1f}, style=dotted, labeldistance=2.6, "
        "labelangle=30",
        g.front()->color, g.front()->fontcolor, width);
    if (back) attrs += ", dir=both";
    if (!tail.empty()) attrs += ", taillabel=" + q(tail);
    if (!head.empty()) attrs += ", headlabel=" + q(head);
    s += fmt::format("  {} -> {} [{}];\n", nid(a), nid(b), attrs);
  }
}

// The topology's links as light undirected lines, except links an arrow already follows.
void write_links(std::string& s, const Topology& t, const Drawing& d) {
  std::set<std::pair<NodeId, NodeId>> used;
  for (const auto& h : d.hops) used.insert({std::min(h.from, h.to), std::max(h.from, h.to)});
  for (NodeId v = 0; v < t.num_nodes(); ++v)
    for (const Link& l : t.links(v))
      if (v < l.to && !used.count({v, l.to}))
        s += fmt::format("  {} -> {} [dir=none, color=gray80, penwidth=1.2];\n", nid(v), nid(l.to));
}

// More than kMergeAbove arrows on the same directed hop are merged into one arrow whose label
// lists them, one line each (the picture stays readable; each transfer keeps its own line).
constexpr std::size_t kMergeAbove = 3;

// Counterexample pictures label every transfer of the failing step up to this many; above it,
// only the transfers the violation names.
constexpr std::size_t kLabelAllUpTo = 12;

void write_hops(std::string& s, const Drawing& d) {
  // Groups: same directed hop and same colour (a red failing step never merges with grey context).
  using Key = std::tuple<NodeId, NodeId, std::string>;
  std::map<Key, std::vector<const Hop*>> groups;
  std::vector<Key> order;
  for (const auto& h : d.hops) {
    Key k{h.from, h.to, h.color};
    auto& g = groups[k];
    if (g.empty()) order.push_back(k);
    g.push_back(&h);
  }
  for (const auto& k : order) {
    const auto& g = groups[k];
    if (g.size() <= kMergeAbove) {
      for (const Hop* h : g)
        s += fmt::format("  {} -> {} [{}{}];\n", nid(h->from), nid(h->to), h->attrs,
                         h->label.empty() ? std::string() : ", label=" + q(h->label));
      continue;
    }
    std::string label;
    bool routed = false, same_color = true;
    for (const Hop* h : g) {
      if (!h->label.empty()) label += (label.empty() ? "" : "\n") + h->label;
      routed = routed || h->routed;
      same_color = same_color && h->color == g.front()->color;
    }
    std::string color = same_color ? g.front()->color : std::string("gray25");
    s += fmt::format("  {} -> {} [color={}, fontcolor={}, penwidth={:.1f}{}{}];\n",
                     nid(std::get<0>(k)), nid(std::get<1>(k)), color, color,
                     1.2 + 0.3 * static_cast<double>(g.size()), routed ? ", style=dashed" : "",
                     label.empty() ? "" : ", label=" + q(label));
  }
  write_unlinked(s, d);
  for (const auto& e : d.extra) s += e;
}

// One transfer: a direct arrow, or the route hop by hop (dashed, labelled on the first hop).
struct Pen {
  std::string color = "black";
  std::string fontcolor = "black";
  double width = 1.2;
  bool label = true;
  std::string style;  // "" = solid for direct transfers
};

void add_transfer(Drawing& d, const Trace& tr, const Transfer& x, const Pen& pen,
                  const RenderOptions& o) {
  std::string label = pen.label ? transfer_label(tr, x, o) : "";
  auto attrs = [&](bool routed, bool last) {
    std::string a =
        fmt::format("color={}, fontcolor={}, penwidth={:.1f}", pen.color, pen.fontcolor, pen.width);
    std::string style = pen.style.empty() ? (routed ? "dashed" : "solid") : pen.style;
    if (style != "solid") a += ", style=" + style;
    if (routed && !last) a += ", arrowhead=vee, arrowsize=0.5";
    return a;
  };
  std::vector<NodeId> r = x.src == x.dst ? std::vector<NodeId>{x.src, x.dst} : tr.route(x);
  bool linked = x.src != x.dst;
  for (std::size_t h = 0; linked && h + 1 < r.size(); ++h)
    if (!tr.topology.adjacent(r[h], r[h + 1])) linked = false;
  if (!linked && x.src != x.dst) {
    // Not along links (e.g. a star transfer between non-neighbours): one dotted arrow.
    d.unlinked.push_back(Unlinked{x.src, x.dst, label, pen.color, pen.fontcolor, pen.width});
    return;
  }
  if (!linked) {  // a self-send
    d.extra.push_back(fmt::format("  {} -> {} [{}{}];\n", nid(x.src), nid(x.dst),
                                  attrs(false, true), label.empty() ? "" : ", label=" + q(label)));
    return;
  }
  bool routed = r.size() > 2;
  for (std::size_t h = 0; h + 1 < r.size(); ++h)
    d.hops.push_back(Hop{r[h], r[h + 1], attrs(routed, h + 2 == r.size()), h == 0 ? label : "",
                         pen.color, routed});
}

// Per-step colours (Graphviz "dark28" scheme) so the steps of a schedule are told apart.
std::string step_color(std::uint32_t step) {
  static const char* kColors[] = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a",
                                  "#66a61e", "#a6761d", "#1f78b4", "#666666"};
  return q(kColors[(step + 7) % 8]);
}

// Node names: the topology's label; hypercube nodes as Figure 4.6 writes them, "6 (110)"
// (two lines in a circle, one line in a box).
std::vector<NodeStyle> plain_labels(const Topology& t, bool one_line = false) {
  std::vector<NodeStyle> st(t.num_nodes());
  bool hyper = t.family() == "hypercube";
  for (NodeId v = 0; v < t.num_nodes(); ++v) {
    st[v].label = t.label(v);
    if (hyper && t.num_nodes() > 1)
      st[v].label = fmt::format("{}{}({})", v, one_line ? " " : "\n", t.label(v));
  }
  return st;
}

bool use_splines(const Topology& t) { return t.num_nodes() <= 200; }

std::string default_title(const Trace& t) {
  std::string s = t.model_name.empty() ? std::string("schedule") : t.model_name;
  s += fmt::format(" on {}", t.topology.spec());
  if (collective_is_rooted(t.collective)) s += fmt::format(", source {}", t.topology.label(t.root));
  if (t.collective == Collective::Shift) s += fmt::format(", q = {}", t.shift);
  return s;
}

// Items delivered to each processor up to and including each step.
struct Received {
  std::vector<std::vector<std::pair<std::uint32_t, Item>>> items;  // per processor: (step, item)
};

Received received_items(const Trace& t) {
  Received r;
  r.items.resize(t.topology.num_processors());
  for (auto i : t.ordered_transfers()) {
    const Transfer& x = t.transfers[i];
    if (x.dst >= r.items.size()) continue;
    for (std::uint32_t k = 0; k < x.payload_len; ++k)
      r.items[x.dst].push_back({x.step, t.payload[x.payload_begin + k]});
  }
  return r;
}

}  // namespace

// ---- public ------------------------------------------------------------------------------------

void check_renderable(const Topology& t, const RenderOptions& o) {
  if (!o.force && t.num_nodes() > o.max_nodes)
    throw RenderRefused(fmt::format(
        "{} has {} nodes; pictures are limited to {} nodes (pass --force to draw it anyway: "
        "Graphviz may need minutes and the picture will be unreadable)",
        t.spec(), t.num_nodes(), o.max_nodes));
}

void check_renderable(const Trace& t, const RenderOptions& o) {
  check_renderable(t.topology, o);
  if (!o.force && t.transfers.size() > o.max_transfers)
    throw RenderRefused(fmt::format(
        "the schedule has {} transfers; pictures are limited to {} arrows (pass --force to draw "
        "it anyway, or draw one step at a time with --per-step)",
        t.transfers.size(), o.max_transfers));
}

std::string payload_text(const Trace& t, const Transfer& x, const RenderOptions& o) {
  if (x.payload_len == 0) return "";
  return items_text(t, t.payload.data() + x.payload_begin, x.payload_len, o,
                    std::max<std::size_t>(o.max_item_chars, 20));
}

std::string transfer_label(const Trace& t, const Transfer& x, const RenderOptions& o) {
  return fmt::format("{} ({})", x.step, payload_text(t, x, o));
}

std::string schedule_dot(const Trace& t, const RenderOptions& o) {
  check_renderable(t, o);
  const Topology& topo = t.topology;
  auto st = plain_labels(topo);
  std::size_t w = 1, lines = 1;
  for (auto& s : st) {
    w = std::max(w, s.label.size());
    lines = std::max<std::size_t>(lines, 1 + std::count(s.label.begin(), s.label.end(), '\n'));
  }
  auto [ux, uy] = spacing(w, lines, 1.6);
  NodeLayout L = layout_topology(topo, ux, uy);
  std::string title = o.title.empty() ? default_title(t) : o.title;
  title += fmt::format("\n{} transfer{} in {} step{}", t.transfers.size(),
                       t.transfers.size() == 1 ? "" : "s", t.steps, t.steps == 1 ? "" : "s");
  if (!o.steps.empty()) {
    std::string list;
    for (auto k : o.steps) list += (list.empty() ? "" : ", ") + std::to_string(k);
    title += fmt::format(" (only step{} {} shown)", o.steps.size() > 1 ? "s" : "", list);
  }
  Drawing d;
  for (auto i : t.ordered_transfers()) {
    if (!o.steps.empty() &&
        std::find(o.steps.begin(), o.steps.end(), t.transfers[i].step) == o.steps.end())
      continue;
    Pen p;
    p.color = p.fontcolor = step_color(t.transfers[i].step);
    add_transfer(d, t, t.transfers[i], p, o);
  }
  title +=
      "; arrow label: step (data carried); dashed: routed through other nodes" + unlinked_legend(d);
  if (t.failure.kind != RunFailure::Kind::None) title += "\nrun stopped: " + t.failure.message;
  std::string s = graph_header(title, L, topo.num_nodes(), use_splines(topo));
  if (collective_is_rooted(t.collective) && t.root < topo.num_processors())
    st[t.root].extra += ", penwidth=2.5, style=filled, fillcolor=lightyellow";
  write_nodes(s, t, L, st, false, uy * 0.55);
  write_links(s, topo, d);
  write_hops(s, d);
  return s + "}\n";
}

std::string step_dot(const Trace& t, std::uint32_t step, const RenderOptions& o) {
  check_renderable(t, o);
  const Topology& topo = t.topology;
  std::size_t P = topo.num_processors();
  Received rec = received_items(t);
  bool last = step >= t.steps;
  auto st = plain_labels(topo, true);
  std::size_t w = 1, lines = 1;
  for (NodeId v = 0; v < P; ++v) {
    std::vector<Item> held(t.initial_input.size() > v ? t.initial_input[v].begin() : nullptr,
                           t.initial_input.size() > v ? t.initial_input[v].end() : nullptr);
    std::size_t own = held.size();
    for (auto& [s, it] : rec.items[v])
      if (s <= step) held.push_back(it);
    std::string name = st[v].label;
    std::string body;
    // Figure 4.11 style: (own, received...). Items received in this very step are marked later.
    body = "(" + items_text(t, held.data(), held.size(), o, o.max_label_chars) + ")";
    std::string label = name + "\n" + body;
    if (t.domain && t.domain->inspectable() && held.size() > 1) {
      std::set<std::uint32_t> c;
      for (Item it : held)
        for (auto k : t.domain->terms(it)) c.insert(k);
      std::string k = knows_text(t, c);
      if (k.size() + 6 > o.max_label_chars)
        k = fmt::format("{} of {} inputs", c.size(),
                        t.domain->p() * std::max<std::uint32_t>(1, t.domain->elems()));
      label += "\nknows " + k;
    }
    (void)own;
    if (last && v < t.final_output.size())
      label +=
          "\nout [" +
          items_text(t, t.final_output[v].data(), t.final_output[v].size(), o, o.max_label_chars) +
          "]";
    st[v].label = label;
    std::size_t pos = 0;
    std::size_t nl = 1;
    for (std::size_t k = 0; k <= label.size(); ++k) {
      if (k == label.size() || label[k] == '\n') {
        w = std::max(w, k - pos);
        pos = k + 1;
        if (k < label.size()) ++nl;
      }
    }
    lines = std::max(lines, nl);
  }
  auto [ux, uy] = spacing(w, lines, 1.3);
  NodeLayout L = layout_topology(topo, ux, uy);
  std::string title = o.title.empty() ? default_title(t) : o.title;
  if (step == 0) {
    title += "\ninitial buffers (before step 1)";
  } else {
    title += fmt::format("\nstep {} of {}: {} transfer(s); buffers after step {}", step, t.steps,
                         step <= t.per_step.size() ? t.per_step[step - 1].transfers : 0, step);
  }
  Drawing d;
  for (auto i : t.ordered_transfers()) {
    const Transfer& x = t.transfers[i];
    if (x.step != step) continue;
    Pen p;
    p.width = 1.6;
    add_transfer(d, t, x, p, o);
  }
  if (d.has_unlinked()) title += "\n" + unlinked_legend(d).substr(2);
  std::string s = graph_header(title, L, topo.num_nodes(), use_splines(topo));
  // Nodes that received something in this step are outlined.
  for (auto i : t.ordered_transfers()) {
    const Transfer& x = t.transfers[i];
    if (x.step == step && x.dst < P && st[x.dst].extra.empty()) st[x.dst].extra = ", penwidth=2";
  }
  write_nodes(s, t, L, st, true, uy * 0.6);
  write_links(s, topo, d);
  write_hops(s, d);
  return s + "}\n";
}

namespace {

void write_waiting(std::string& s, const Trace& t) {
  const auto& c = t.failure.waiting_cycle;
  for (std::size_t i = 0; i + 1 < c.size(); ++i)
    s += fmt::format("  {} -> {} [color=red, penwidth=2.2, style=bold, tooltip=\"waits for\"];\n",
                     nid(c[i]), nid(c[i + 1]));
  if (t.failure.cycle_closed && c.size() >= 2 && c.back() != c.front())
    s += fmt::format("  {} -> {} [color=red, penwidth=2.2, style=bold, tooltip=\"waits for\"];\n",
                     nid(c.back()), nid(c.front()));
}

std::string deadlock_title_lines(const Trace& t) {
  const auto& c = t.failure.waiting_cycle;
  std::string chain;
  for (std::size_t i = 0; i < c.size(); ++i) chain += (i ? " -> " : "") + t.topology.label(c[i]);
  if (t.failure.cycle_closed && !c.empty()) chain += " -> " + t.topology.label(c.front());
  std::string s = fmt::format(
      "\n{}: {}", t.failure.cycle_closed ? "waiting cycle" : "waiting chain", shorten(chain, 120));
  if (!t.failure.cycle_closed && !c.empty())
    s += fmt::format(" ({} has finished)", t.topology.label(c.back()));
  return s;
}

// The deadlock picture's legend line: what the grey and red arrows are.
std::string deadlock_legend(const Trace& t, const Drawing& d) {
  std::size_t n = d.hops.size() + d.unlinked.size() + d.extra.size();
  std::string s = "\nbold red a -> b: a waits for b";
  if (n > 0)
    s += fmt::format("; grey: the {} transfer{} made before the deadlock", t.transfers.size(),
                     t.transfers.size() == 1 ? "" : "s");
  else if (!t.transfers.empty())
    s += fmt::format(" (the {} transfers made before it are not drawn)", t.transfers.size());
  else
    s += " (no transfer was made)";
  return s + unlinked_legend(d);
}

}  // namespace

std::string deadlock_dot(const Trace& t, const RenderOptions& o) {
  check_renderable(t.topology, o);
  const Topology& topo = t.topology;
  auto st = plain_labels(topo);
  std::size_t w = 1;
  for (auto& x : st) w = std::max(w, x.label.size());
  auto [ux, uy] = spacing(w, 2, 1.3);
  NodeLayout L = layout_topology(topo, ux, uy);
  std::string title = o.title.empty() ? default_title(t) : o.title;
  title += "\n" + shorten(t.failure.message, 160);
  if (t.failure.message.find("waiting") == std::string::npos) title += deadlock_title_lines(t);
  Drawing d;
  if (t.transfers.size() <= o.max_transfers || o.force)
    for (auto i : t.ordered_transfers()) {
      Pen p;
      p.color = "gray65";
      p.fontcolor = "gray50";
      add_transfer(d, t, t.transfers[i], p, o);
    }
  title += deadlock_legend(t, d);
  std::string s = graph_header(title, L, topo.num_nodes(), use_splines(topo));
  for (NodeId v : t.failure.waiting)
    if (v < st.size()) st[v].extra = ", style=filled, fillcolor=lightyellow";
  for (NodeId v : t.failure.waiting_cycle)
    if (v < st.size()) st[v].extra = ", style=filled, fillcolor=\"#ffe0e0\", color=red, penwidth=2";
  write_nodes(s, t, L, st, false, uy * 0.55);
  write_links(s, topo, d);
  write_hops(s, d);
  write_waiting(s, t);
  return s + "}\n";
}

std::string counterexample_dot(const Trace& t, const Counterexample& c, const RenderOptions& o) {
  check_renderable(t.topology, o);
  const Topology& topo = t.topology;
  std::size_t N = topo.num_nodes();
  // The failing step: the counterexample's, else the latest step of its transfers.
  std::optional<std::uint32_t> step = c.step;
  if (!step)
    for (auto i : c.transfers)
      if (i < t.transfers.size()) step = std::max(step.value_or(0), t.transfers[i].step);
  std::set<std::uint32_t> named(c.transfers.begin(), c.transfers.end());
  std::set<NodeId> involved(c.nodes.begin(), c.nodes.end());
  std::map<NodeId, std::vector<std::string>> buf;
  for (const auto& b : c.buffers) {
    involved.insert(b.node);
    buf[b.node].push_back(b.what + ": " + shorten(b.contents, o.max_label_chars + 12));
  }
  auto st = plain_labels(topo, true);
  std::size_t w = 1, lines = 2;
  for (NodeId v : involved) {
    if (v >= N) continue;
    for (auto& line : buf[v]) {
      st[v].label += "\n" + line;
      w = std::max(w, line.size());
    }
    lines = std::max(lines, 1 + buf[v].size() + 1);
    st[v].extra = ", style=filled, fillcolor=\"#ffe0e0\", color=red, penwidth=2";
  }
  for (auto& x : st) w = std::max(w, x.label.find('\n') == std::string::npos ? x.label.size() : 0);
  auto [ux, uy] = spacing(w, lines, 1.9);
  NodeLayout L = layout_topology(topo, ux, uy);

  std::string title = o.title.empty() ? default_title(t) : o.title;
  title += "\nviolation" + (c.invariant.empty() ? std::string() : " of " + c.invariant);
  if (step) title += fmt::format(" at step {}", *step);
  if (!c.nodes.empty()) {
    std::string ns;
    for (std::size_t i = 0; i < c.nodes.size() && i < 12; ++i)
      ns +=
          (i ? ", " : "") + (c.nodes[i] < N ? topo.label(c.nodes[i]) : std::to_string(c.nodes[i]));
    if (c.nodes.size() > 12) ns += fmt::format(", +{}", c.nodes.size() - 12);
    title += " (nodes " + ns + ")";
  }
  if (!c.message.empty()) title += "\n" + shorten(c.message, 160);
  bool deadlock =
      t.failure.kind == RunFailure::Kind::Deadlock && (c.invariant == "deadlock" || !step);
  if (deadlock && c.message.find("waiting") == std::string::npos) title += deadlock_title_lines(t);

  // The arrows: with a step, its transfers red and the step before grey; without one (a violation
  // of the end state, or a deadlock), the run's transfers grey and the named ones red. When there
  // are many, only the transfers the violation names carry labels, so labels do not pile up.
  Drawing d;
  auto order = t.ordered_transfers();
  auto count_step = [&](std::uint32_t k) {
    return static_cast<std::size_t>(std::count_if(
        order.begin(), order.end(), [&](std::uint32_t i) { return t.transfers[i].step == k; }));
  };
  std::size_t shown = step ? count_step(*step) : t.transfers.size();
  bool label_all = shown <= kLabelAllUpTo;
  bool context = step ? *step > 1 : t.transfers.size() <= o.max_transfers || o.force;
  std::size_t grey = 0;
  if (context)
    for (auto i : order) {
      const Transfer& x = t.transfers[i];
      if (step ? x.step + 1 != *step : named.count(i) > 0) continue;
      Pen p;
      p.color = "gray70";
      p.fontcolor = "gray55";
      p.label = step ? count_step(*step - 1) <= kLabelAllUpTo : label_all;
      add_transfer(d, t, x, p, o);
      ++grey;
    }
  std::size_t red = 0;
  for (auto i : order) {
    const Transfer& x = t.transfers[i];
    bool in_step = step && x.step == *step;
    if (!in_step && !named.count(i)) continue;
    Pen p;
    p.color = p.fontcolor = "red";
    p.width = named.count(i) ? 2.6 : 1.4;
    p.label = label_all || named.count(i);
    add_transfer(d, t, x, p, o);
    ++red;
  }
  std::string legend;
  if (step)
    legend = fmt::format("red: step {}'s transfers", *step);
  else if (red > 0)
    legend = "red: the transfers the violation names";
  if (red > 0 && !label_all && !named.empty())
    legend += fmt::format(" (labelled: the {} it names)", named.size());
  else if (red > 0 && !label_all)
    legend += " (too many to label)";
  if (grey > 0) {
    std::string g = step ? fmt::format("grey: step {}", *step - 1)
                    : deadlock
                        ? fmt::format("grey: the {} transfer{} made before the deadlock", grey,
                                      grey == 1 ? "" : "s")
                        : fmt::format("grey: the run's {} transfer{}", grey, grey == 1 ? "" : "s");
    if (!step && !label_all) g += " (unlabelled: too many)";
    legend += (legend.empty() ? "" : "; ") + g;
  }
  if (!step && t.transfers.empty())
    legend += (legend.empty() ? "" : "; ") +
              std::string(deadlock ? "no transfer was made before the deadlock"
                                   : "the run made no transfer");
  if (std::any_of(c.loads.begin(), c.loads.end(),
                  [](const LinkLoad& l) { return l.transfers > 1; }))
    legend += (legend.empty() ? "" : "; ") +
              std::string("thick pink lines: congested links with their load");
  if (deadlock && !t.failure.waiting_cycle.empty())
    legend += (legend.empty() ? "" : "; ") + std::string("bold red a -> b: a waits for b");
  if (d.has_unlinked()) legend += (legend.empty() ? "" : "; ") + unlinked_legend(d).substr(2);
  if (!legend.empty()) title += "\n" + legend;

  std::string s = graph_header(title, L, N, use_splines(topo));
  write_nodes(s, t, L, st, true, uy * 0.6);
  write_links(s, topo, d);
  write_hops(s, d);
  // Congested links (more than one transfer in the step) get one thick line per link, labelled
  // with the load in each direction; the arrows show the other links.
  std::map<std::pair<NodeId, NodeId>, std::vector<const LinkLoad*>> per_link;
  for (const auto& l : c.loads)
    if (l.from < N && l.to < N && l.transfers >= 2)
      per_link[{std::min(l.from, l.to), std::max(l.from, l.to)}].push_back(&l);
  for (const auto& [k, ls] : per_link) {
    std::uint32_t most = 0;
    for (auto* l : ls) most = std::max(most, l->transfers);
    std::string label;
    if (ls.size() == 1) {
      label = fmt::format("load {} ({} items) {}->{}", ls[0]->transfers, ls[0]->items,
                          topo.label(ls[0]->from), topo.label(ls[0]->to));
    } else if (ls[0]->transfers == ls[1]->transfers && ls[0]->items == ls[1]->items) {
      label = fmt::format("load {} each way ({} items)", ls[0]->transfers, ls[0]->items);
    } else {
      for (auto* l : ls)
        label += fmt::format("{}{}->{}: load {} ({} items)", label.empty() ? "" : "\n",
                             topo.label(l->from), topo.label(l->to), l->transfers, l->items);
    }
    s += fmt::format(
        "  {} -> {} [color=\"#ff000080\", penwidth={:.1f}, dir=none, fontcolor=red, "
        "fontsize=12, label={}];\n",
        nid(k.first), nid(k.second), std::min(8.0, 2.0 + 1.5 * most), q(label));
  }
  if (deadlock) write_waiting(s, t);
  return s + "}\n";
}

}  // namespace collv
