// Topology::parse: spec grammar, range checks and up-front size limits.
#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "topology/topology.hpp"
#include "topology/topology_impl.hpp"

namespace collv {
namespace {

constexpr std::uint64_t kSat = std::numeric_limits<std::uint64_t>::max();  // "too many to count"

std::uint64_t sat_mul(std::uint64_t x, std::uint64_t y) {
  std::uint64_t r;
  if (x == kSat || y == kSat) return (x == 0 || y == 0) ? 0 : kSat;
  if (__builtin_mul_overflow(x, y, &r) || r == kSat) return kSat;
  return r;
}
std::uint64_t sat_add(std::uint64_t x, std::uint64_t y) {
  std::uint64_t r;
  if (x == kSat || y == kSat || __builtin_add_overflow(x, y, &r) || r == kSat) return kSat;
  return r;
}

// User text echoed in a message: printable, one line, not absurdly long.
std::string shown(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (out.size() >= 60) {
      out += "...";
      break;
    }
    auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u >= 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += ch;
    }
  }
  return out;
}

constexpr std::string_view kKnown =
    "ring, line, mesh, torus, hypercube, tree, star, complete, debruijn; products A*B; dgx1, "
    "nvswitch:N; a topology file file:PATH or PATH.json";

struct FactorSpec {
  Family fam;
  std::uint64_t a = 0, b = 0;
  std::string canon;
  std::uint64_t nodes = 0, entries = 0;  // saturated at kSat
};

[[noreturn]] void fail(const std::string& msg) { throw SpecError(msg); }

// A whole number in decimal; kSat if it does not fit. nullopt if not a number at all.
std::optional<std::uint64_t> parse_number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return std::nullopt;
    v = sat_add(sat_mul(v, 10), static_cast<std::uint64_t>(ch - '0'));
  }
  return v;
}

std::string number_text(std::uint64_t v) { return std::to_string(v); }

void check_fits(std::uint64_t v, std::string_view arg, std::string_view text) {
  if (v == kSat) {
    fail(fmt::format("size '{}' in '{}' is too large (collv builds at most {} nodes)", shown(arg),
                     shown(text), kMaxNodes));
  }
}

struct NameInfo {
  std::string_view name;
  Family fam;
  std::string_view example;
};
constexpr NameInfo kNames[] = {
    {"ring", Family::Ring, "ring:8"},
    {"line", Family::Line, "line:8"},
    {"mesh", Family::Mesh, "mesh:4x4"},
    {"torus", Family::Torus, "torus:4x4"},
    {"hypercube", Family::Hypercube, "hypercube:3"},
    {"tree", Family::Tree, "tree:8"},
    {"star", Family::Star, "star:4"},
    {"complete", Family::Complete, "complete:5"},
    {"debruijn", Family::DeBruijn, "debruijn:3"},
};

// Links of a ring (or torus dimension) of n nodes: n >= 3 a cycle, n == 2 one link, n == 1 none.
std::uint64_t cycle_links(std::uint64_t n) { return n >= 3 ? n : (n == 0 ? 0 : n - 1); }

FactorSpec parse_factor(std::string_view text) {
  auto colon = text.find(':');
  std::string_view name = text.substr(0, colon);
  const NameInfo* info = nullptr;
  for (const auto& n : kNames) {
    if (n.name == name) info = &n;
  }
  if (info == nullptr) {
    if (name == "dgx1" || name == "nvswitch" || name == "file" || text.ends_with(".json"))
      fail(
          fmt::format("'{}' is a listed topology; products take generated families only (known: "
                      "ring, line, mesh, torus, hypercube, tree, star, complete, debruijn)",
                      shown(text)));
    if (name.empty())
      fail(fmt::format("missing topology name in '{}' (known: {})", shown(text), kKnown));
    fail(fmt::format("unknown topology '{}' (known: {})", shown(name), kKnown));
  }
  if (colon == std::string_view::npos) {
    fail(fmt::format("'{}' needs a size, e.g. {}", shown(text), info->example));
  }
  std::string_view arg = text.substr(colon + 1);
  FactorSpec f;
  f.fam = info->fam;
  if (f.fam == Family::Mesh || f.fam == Family::Torus) {
    auto x = arg.find('x');
    std::optional<std::uint64_t> r, c;
    if (x != std::string_view::npos) {
      r = parse_number(arg.substr(0, x));
      c = parse_number(arg.substr(x + 1));
    }
    if (!r || !c) {
      fail(fmt::format("bad size '{}' in '{}': expected ROWSxCOLS with whole numbers, e.g. {}",
                       shown(arg), shown(text), info->example));
    }
    check_fits(*r, arg, text);
    check_fits(*c, arg, text);
    if (*r < 1 || *c < 1) {
      fail(fmt::format("{}:{}x{}: rows and columns must be at least 1", info->name, number_text(*r),
                       number_text(*c)));
    }
    f.a = *r;
    f.b = *c;
    f.canon = fmt::format("{}:{}x{}", info->name, number_text(*r), number_text(*c));
  } else {
    auto v = parse_number(arg);
    if (!v) {
      fail(fmt::format("bad size '{}' in '{}': expected a whole number, e.g. {}", shown(arg),
                       shown(text), info->example));
    }
    check_fits(*v, arg, text);
    f.a = *v;
    f.canon = fmt::format("{}:{}", info->name, number_text(*v));
  }

  // Ranges and sizes.
  const std::uint64_t a = f.a, b = f.b;
  switch (f.fam) {
    case Family::Ring:
      if (a < 2) fail(fmt::format("{}: a ring needs at least 2 processors", f.canon));
      f.nodes = a;
      f.entries = sat_mul(2, cycle_links(a));
      break;
    case Family::Line:
      if (a < 1) fail(fmt::format("{}: a line needs at least 1 processor", f.canon));
      f.nodes = a;
      f.entries = sat_mul(2, a - 1);
      break;
    case Family::Complete:
      if (a < 1) fail(fmt::format("{}: a complete graph needs at least 1 processor", f.canon));
      f.nodes = a;
      f.entries = sat_mul(a, a - 1);
      break;
    case Family::Mesh:
      f.nodes = sat_mul(a, b);
      f.entries = sat_mul(2, sat_add(sat_mul(a, b - 1), sat_mul(b, a - 1)));
      break;
    case Family::Torus:
      f.nodes = sat_mul(a, b);
      f.entries = sat_mul(2, sat_add(sat_mul(a, cycle_links(b)), sat_mul(b, cycle_links(a))));
      break;
    case Family::Hypercube:
    case Family::DeBruijn:
      f.nodes = a >= 63 ? kSat : (std::uint64_t{1} << a);
      // De Bruijn nodes have at most 4 neighbours; this bound is what the limit checks.
      f.entries = sat_mul(f.nodes, f.fam == Family::Hypercube ? a : 4);
      break;
    case Family::Tree:
      if (a < 1 || (a & (a - 1)) != 0) {
        fail(fmt::format("{}: the number of processors must be a power of 2 (1, 2, 4, 8, ...)",
                         f.canon));
      }
      f.nodes = a > (kSat >> 2) ? kSat : 2 * a - 1;
      f.entries = sat_mul(2, f.nodes - 1);
      break;
    case Family::Star: {
      if (a < 1)
        fail(fmt::format("{}: n must be at least 1 (nodes are permutations of 1..n)", f.canon));
      std::uint64_t fact = 1;
      for (std::uint64_t i = 2; i <= a && fact != kSat; ++i) fact = sat_mul(fact, i);
      f.nodes = fact;
      f.entries = sat_mul(fact, a - 1);
      break;
    }
    case Family::Product:
    case Family::Custom:
      break;
  }
  return f;
}

void check_limits(const std::string& what, std::uint64_t nodes, std::uint64_t entries) {
  if (nodes > kMaxNodes) {
    fail(fmt::format("{} has {} nodes; collv builds at most {} (to bound memory)", what,
                     nodes == kSat ? std::string("more than 2^64") : std::to_string(nodes),
                     kMaxNodes));
  }
  if (entries > kMaxAdjacency) {
    fail(fmt::format(
        "{} has {} links; collv builds at most {} (adjacency entries, two per link, "
        "are capped at 2^27 to bound memory)",
        what, entries == kSat ? std::string("more than 2^63") : std::to_string(entries / 2),
        kMaxAdjacency / 2));
  }
}

}  // namespace

Topology Topology::complete(std::size_t p) {
  if (p < 1 || p > kMaxNodes)
    fail(fmt::format("complete:{} is outside complete:1..complete:{}", p, kMaxNodes));
  if (sat_mul(p, p - 1) <= kMaxAdjacency) return parse(fmt::format("complete:{}", p));
  auto t = std::make_shared<Impl>();
  t->fam = Family::Complete;
  t->family = "complete";
  t->spec = fmt::format("complete:{}", p);
  t->a = p;
  t->n_proc = t->n_nodes = p;
  t->n_links = p * (p - 1) / 2;
  t->number_space = static_cast<int>(p - 1);
  t->transitive = true;
  t->uniform = true;
  t->uniform_degree = static_cast<std::uint32_t>(p - 1);
  t->min_deg = t->max_deg = p - 1;
  t->implicit_complete = true;
  t->params["p"] = static_cast<std::int64_t>(p);
  return Topology(t);
}

Topology Topology::parse(std::string_view spec) {
  if (spec.empty())
    fail("empty topology spec (expected e.g. ring:8, mesh:4x4, star:4, ring:4*line:3)");
  if (auto listed = parse_custom(spec)) return Topology(listed);
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    auto star = spec.find('*', start);
    parts.push_back(spec.substr(start, star == std::string_view::npos ? spec.npos : star - start));
    if (star == std::string_view::npos) break;
    start = star + 1;
    if (parts.size() > kMaxFactors) {
      fail(fmt::format("'{}' has more than {} factors", shown(spec), kMaxFactors));
    }
  }
  std::vector<FactorSpec> factors;
  for (auto p : parts) {
    if (p.empty()) fail(fmt::format("empty factor in product '{}'", shown(spec)));
    try {
      factors.push_back(parse_factor(p));
    } catch (const SpecError& e) {
      if (parts.size() == 1) throw;
      fail(fmt::format("{} (in product '{}')", e.what(), shown(spec)));
    }
  }
  // A star from n = 11 keeps no link table (its links are computed): up to n = 12 on its own,
  // not as a factor of a product.
  if (factors.size() == 1 && factors[0].fam == Family::Star && factors[0].a >= kImplicitStarN) {
    const auto& f = factors[0];
    if (f.a > kMaxImplicitStarN)
      fail(fmt::format(
          "{} has {} nodes; collv runs stars up to n = {} (node ids are 32 bits; "
          "`collv verify -d symmetry` checks star programs up to n = 13)",
          f.canon, f.nodes == kSat ? std::string("more than 2^64") : std::to_string(f.nodes),
          kMaxImplicitStarN));
    return Topology(build_family(f.fam, f.a, f.b));
  }
  for (const auto& f : factors) check_limits(f.canon, f.nodes, f.entries);
  if (factors.size() == 1) {
    const auto& f = factors[0];
    return Topology(build_family(f.fam, f.a, f.b));
  }

  std::string canon = factors[0].canon;
  for (std::size_t i = 1; i < factors.size(); ++i) canon += "*" + factors[i].canon;
  for (const auto& f : factors) {
    if (f.fam == Family::Tree && f.a >= 2) {
      fail(
          fmt::format("cannot build '{}': factor {} has switch nodes, and products of networks "
                      "with switches are not supported",
                      canon, f.canon));
    }
  }
  std::uint64_t nodes = factors[0].nodes, entries = factors[0].entries;
  for (std::size_t i = 1; i < factors.size(); ++i) {
    const auto& f = factors[i];
    entries = sat_add(sat_mul(nodes, f.entries), sat_mul(f.nodes, entries));
    nodes = sat_mul(nodes, f.nodes);
  }
  check_limits(canon, nodes, entries);

  std::shared_ptr<const Impl> acc = build_family(factors[0].fam, factors[0].a, factors[0].b);
  for (std::size_t i = 1; i < factors.size(); ++i) {
    acc = build_product(acc, build_family(factors[i].fam, factors[i].a, factors[i].b));
  }
  return Topology(acc);
}

}  // namespace collv
