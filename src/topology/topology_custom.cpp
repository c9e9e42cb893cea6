// Listed topologies: networks given by their links rather than generated from a family and a
// size. Three sources share one builder:
//   dgx1          the DGX-1 hybrid cube-mesh: 8 GPUs, NVLink counts (1 or 2) as bandwidths
//   nvswitch:N    N GPUs, each with one link of bandwidth N-1 to a single switch
//   file:PATH     a topology file (also any spec ending in .json): collv's JSON with processors,
//                 switches and links, or SCCL's `links` matrix (alone, as an SCCL topology object,
//                 or inside an SCCL/msccl algorithm file)
// docs/topologies.md describes the file format and what the bandwidths mean to the checks.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "topology/topology_impl.hpp"
#include "util/error.hpp"
#include "util/json_read.hpp"
#include "util/text.hpp"

namespace collv {
namespace {

using Impl = Topology::Impl;
using json = nlohmann::json;

// Bounds of a listed network, checked before anything is built.
constexpr std::size_t kMaxListedNodes = 1024;
constexpr std::size_t kMaxListedLinks = std::size_t{1} << 16;
constexpr std::uint32_t kMaxBandwidth = std::uint32_t{1} << 20;
constexpr std::uintmax_t kMaxFileBytes = std::uintmax_t{16} << 20;

[[noreturn]] void fail(const std::string& msg) { throw SpecError(msg); }

// A path or key echoed in a message: printable, one line (util/text.hpp).
std::string shown(std::string_view s) { return printable(s, 120); }

// The DGX-1 (V100) NVLink matrix: entry [a][b] is the number of NVLinks between GPUs a and b.
// GPUs 0-3 and 4-7 are the two quads of the hybrid cube-mesh; i and i+4 are linked across.
constexpr std::uint32_t kDgx1[8][8] = {{0, 2, 1, 1, 2, 0, 0, 0}, {2, 0, 1, 2, 0, 1, 0, 0},
                                       {1, 1, 0, 2, 0, 0, 2, 0}, {1, 2, 2, 0, 0, 0, 0, 1},
                                       {2, 0, 0, 0, 0, 2, 1, 1}, {0, 1, 0, 0, 2, 0, 1, 2},
                                       {0, 0, 2, 0, 1, 1, 0, 2}, {0, 0, 0, 1, 1, 2, 2, 0}};

std::shared_ptr<Impl> build_listed(std::string spec, std::string family, std::size_t n_proc,
                                   std::size_t n_switch,
                                   std::span<const Topology::ListedLink> links) {
  if (n_proc < 1) fail(fmt::format("{}: a topology needs at least 1 processor", spec));
  if (n_proc + n_switch > kMaxListedNodes)
    fail(fmt::format("{}: {} nodes; a listed topology has at most {}", spec, n_proc + n_switch,
                     kMaxListedNodes));
  if (links.size() > kMaxListedLinks)
    fail(fmt::format("{}: {} links; a listed topology has at most {}", spec, links.size(),
                     kMaxListedLinks));
  const std::size_t n = n_proc + n_switch;
  // (a, b) -> bandwidth a -> b, parallel links summed.
  std::map<std::pair<NodeId, NodeId>, std::uint64_t> bw;
  for (const auto& l : links) {
    if (l.a >= n || l.b >= n)
      fail(fmt::format("{}: link {} - {} names a node past the last ({})", spec, l.a, l.b, n - 1));
    if (l.a == l.b) fail(fmt::format("{}: link {} - {} joins a node to itself", spec, l.a, l.b));
    if (l.ab > kMaxBandwidth || l.ba > kMaxBandwidth)
      fail(fmt::format("{}: link {} - {}: bandwidth above {}", spec, l.a, l.b, kMaxBandwidth));
    if (l.ab == 0 && l.ba == 0) continue;
    bw[{l.a, l.b}] += l.ab;
    bw[{l.b, l.a}] += l.ba;
  }
  auto t = std::make_shared<Impl>();
  t->fam = Family::Custom;
  t->spec = std::move(spec);
  t->family = std::move(family);
  t->n_proc = n_proc;
  t->n_nodes = n;
  // Undirected adjacency: a link exists when either direction has bandwidth. Link numbers are
  // neighbour indices (as on complete and de Bruijn graphs).
  std::vector<std::vector<std::pair<NodeId, std::uint32_t>>> nb(n);
  for (const auto& [k, w] : bw) {
    if (w > kMaxBandwidth)
      fail(fmt::format("{}: parallel links {} -> {} add up to {} chunks per step, above {}",
                       t->spec, k.first, k.second, w, kMaxBandwidth));
    nb[k.first].emplace_back(k.second, static_cast<std::uint32_t>(w));
  }
  t->offsets.push_back(0);
  for (std::size_t v = 0; v < n; ++v) {
    std::sort(nb[v].begin(), nb[v].end());
    int number = 0;
    for (const auto& [to, w] : nb[v]) {
      t->adj.push_back(Link{to, number++});
      t->bw.push_back(w);
    }
    t->offsets.push_back(static_cast<std::uint32_t>(t->adj.size()));
  }
  t->n_links = t->adj.size() / 2;
  std::size_t mn = SIZE_MAX, mx = 0;
  for (std::size_t v = 0; v < n_proc; ++v) {
    std::size_t d = t->offsets[v + 1] - t->offsets[v];
    mn = std::min(mn, d);
    mx = std::max(mx, d);
  }
  t->min_deg = mn;
  t->max_deg = mx;
  t->params["p"] = static_cast<std::int64_t>(n_proc);
  // Connected, or the diameter and routes mean nothing.
  std::vector<char> seen(n, 0);
  std::vector<NodeId> queue{0};
  seen[0] = 1;
  for (std::size_t h = 0; h < queue.size(); ++h)
    for (const Link& l : t->links_of(queue[h]))
      if (!seen[l.to]) {
        seen[l.to] = 1;
        queue.push_back(l.to);
      }
  if (queue.size() != n) {
    auto lone = std::find(seen.begin(), seen.end(), 0) - seen.begin();
    fail(fmt::format("{}: the network is not connected (node {} cannot be reached from node 0)",
                     t->spec, lone));
  }
  return t;
}

std::uint32_t json_count(const json& v, const std::string& where, std::uint64_t lo,
                         std::uint64_t hi) {
  // The one rule for whole numbers of JSON inputs (util/json_read.hpp): 3 or 3.0.
  auto x = json_whole_unsigned(v, UINT64_MAX);
  if (!x) fail(fmt::format("{}: expected a whole number from {} to {}", where, lo, hi));
  if (*x < lo || *x > hi) fail(fmt::format("{}: {} is not from {} to {}", where, *x, lo, hi));
  return static_cast<std::uint32_t>(*x);
}

// SCCL's matrix: links[dst][src] chunks per step from src to dst (msccl-tools' convention).
std::shared_ptr<Impl> from_matrix(const std::string& spec, const json& m, const std::string& where,
                                  std::size_t switches) {
  if (!m.is_array() || m.empty() || m.size() > kMaxListedNodes)
    fail(fmt::format("{}: expected a square matrix of at most {} rows", where, kMaxListedNodes));
  const std::size_t n = m.size();
  std::vector<Topology::ListedLink> links;
  for (std::size_t dst = 0; dst < n; ++dst) {
    if (!m[dst].is_array() || m[dst].size() != n)
      fail(fmt::format("{}[{}]: expected {} entries (a square matrix)", where, dst, n));
    for (std::size_t src = 0; src < n; ++src) {
      std::uint32_t w =
          json_count(m[dst][src], fmt::format("{}[{}][{}]", where, dst, src), 0, kMaxBandwidth);
      if (w == 0) continue;
      if (src == dst) fail(fmt::format("{}[{}][{}]: a node linked to itself", where, dst, src));
      if (links.size() >= kMaxListedLinks)
        fail(fmt::format("{}: more than {} links", where, kMaxListedLinks));
      links.push_back({static_cast<NodeId>(src), static_cast<NodeId>(dst), w, 0});
    }
  }
  return build_listed(spec, "file", n, switches, links);
}

std::shared_ptr<Impl> from_file(const std::string& spec, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))  // a directory, a device, a FIFO: never read
    fail(fmt::format("cannot read topology file '{}': not a regular file", shown(path)));
  auto size = std::filesystem::file_size(path, ec);
  if (ec) fail(fmt::format("cannot read topology file '{}'", shown(path)));
  if (size > kMaxFileBytes)
    fail(fmt::format("topology file '{}' has {} bytes; at most {} are read", shown(path), size,
                     kMaxFileBytes));
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(fmt::format("cannot read topology file '{}'", shown(path)));
  std::ostringstream ss;
  ss << f.rdbuf();
  return listed_from_text(ss.str(), spec, path);
}

}  // namespace

std::shared_ptr<Impl> listed_from_json(const json& j, const std::string& spec,
                                       const std::string& path);

std::shared_ptr<Impl> listed_from_text(const std::string& text, const std::string& spec,
                                       const std::string& path) {
  if (text.size() > kMaxFileBytes)
    fail(fmt::format("topology file '{}' has {} bytes; at most {} are read", shown(path),
                     text.size(), kMaxFileBytes));
  json j;
  try {
    // Duplicate keys and deep nesting refused, as in every JSON input (util/json_read.hpp).
    j = parse_json_input(text, shown(path));
  } catch (const LimitError&) {
    throw;
  } catch (const UsageError& e) {
    fail(e.what());
  }
  // A value of another type than the reader checked for is an input error, never a crash.
  try {
    return listed_from_json(j, spec, path);
  } catch (const json::exception& e) {
    fail(fmt::format("{}: unexpected JSON: {}", shown(path), json_error_text(e.what())));
  }
}

std::shared_ptr<Impl> listed_from_json(const json& j, const std::string& spec,
                                       const std::string& path) {
  const std::string file = shown(path);
  if (!j.is_object()) fail(fmt::format("{}: expected a JSON object", file));
  // An SCCL/msccl algorithm file carries its topology under "topology".
  if (j.contains("topology") && j["topology"].is_object() && j["topology"].contains("links"))
    return from_matrix(spec, j["topology"]["links"], file + ": topology.links", 0);
  if (!j.contains("links")) fail(fmt::format("{}: missing key 'links'", file));
  const json& jl = j["links"];
  if (jl.is_array() && !jl.empty() && jl[0].is_array()) {
    std::size_t sw = 0;
    if (j.contains("switches") && j["switches"].is_number())
      sw = json_count(j["switches"], file + ": switches", 0, kMaxListedNodes);
    if (sw != 0)
      fail(fmt::format("{}: a links matrix lists processors only; give switches as link objects",
                       file));
    return from_matrix(spec, jl, file + ": links", 0);
  }
  if (!j.contains("processors")) fail(fmt::format("{}: missing key 'processors'", file));
  std::size_t procs = json_count(j["processors"], file + ": processors", 1, kMaxListedNodes);
  std::size_t sw = 0;
  if (j.contains("switches"))
    sw = json_count(j["switches"], file + ": switches", 0, kMaxListedNodes);
  if (!jl.is_array()) fail(fmt::format("{}: links: expected an array", file));
  if (jl.size() > kMaxListedLinks)
    fail(fmt::format("{}: links: {} entries; at most {}", file, jl.size(), kMaxListedLinks));
  const std::uint64_t n = procs + sw;
  std::vector<Topology::ListedLink> links;
  for (std::size_t i = 0; i < jl.size(); ++i) {
    const std::string at = fmt::format("{}: links[{}]", file, i);
    const json& e = jl[i];
    if (!e.is_object()) fail(at + ": expected an object {\"a\": .., \"b\": .., \"bandwidth\": ..}");
    for (const auto& [key, v] : e.items())
      if (key != "a" && key != "b" && key != "bandwidth")
        fail(fmt::format("{}: unknown key '{}' (known: a, b, bandwidth)", at, shown(key)));
    if (!e.contains("a") || !e.contains("b")) fail(at + ": needs 'a' and 'b'");
    NodeId a = json_count(e["a"], at + ".a", 0, n - 1);
    NodeId b = json_count(e["b"], at + ".b", 0, n - 1);
    std::uint32_t w = e.contains("bandwidth")
                          ? json_count(e["bandwidth"], at + ".bandwidth", 1, kMaxBandwidth)
                          : 1;
    links.push_back({a, b, w, w});
  }
  for (const auto& [key, v] : j.items())
    if (key != "name" && key != "processors" && key != "switches" && key != "links" &&
        key != "note")
      fail(fmt::format("{}: unknown key '{}' (known: name, processors, switches, links, note)",
                       file, shown(key)));
  return build_listed(spec, "file", procs, sw, links);
}

namespace {

bool ends_with_json(std::string_view s) {
  if (s.size() < 5) return false;
  std::string e(s.substr(s.size() - 5));
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e == ".json";
}

}  // namespace

std::shared_ptr<Impl> parse_custom(std::string_view spec) {
  if (spec == "dgx1") {
    std::vector<Topology::ListedLink> links;
    for (NodeId a = 0; a < 8; ++a)
      for (NodeId b = a + 1; b < 8; ++b)
        if (kDgx1[a][b] != 0) links.push_back({a, b, kDgx1[a][b], kDgx1[a][b]});
    return build_listed("dgx1", "dgx1", 8, 0, links);
  }
  if (spec.substr(0, 9) == "nvswitch:") {
    std::string_view arg = spec.substr(9);
    std::uint64_t g = 0;
    bool ok = !arg.empty() && arg.size() <= 6;
    for (char ch : arg) {
      ok = ok && ch >= '0' && ch <= '9';
      if (ok) g = g * 10 + static_cast<std::uint64_t>(ch - '0');
    }
    if (!ok || g < 2 || g + 1 > kMaxListedNodes)
      fail(fmt::format("bad size in '{}': expected nvswitch:N with N from 2 to {} GPUs",
                       shown(spec), kMaxListedNodes - 1));
    std::vector<Topology::ListedLink> links;
    const auto w = static_cast<std::uint32_t>(g - 1);  // one chunk per peer per step
    for (NodeId a = 0; a < g; ++a) links.push_back({a, static_cast<NodeId>(g), w, w});
    return build_listed(fmt::format("nvswitch:{}", g), "nvswitch", g, 1, links);
  }
  if (spec.substr(0, 5) == "file:") {
    std::string path(spec.substr(5));
    if (path.empty()) fail("'file:' needs a path, e.g. file:machine.json");
    return from_file(std::string(spec), path);
  }
  if (ends_with_json(spec)) return from_file("file:" + std::string(spec), std::string(spec));
  return nullptr;
}

Topology Topology::listed(std::string spec, std::size_t processors, std::size_t switches,
                          std::span<const ListedLink> links) {
  return Topology(build_listed(std::move(spec), "file", processors, switches, links));
}

}  // namespace collv
