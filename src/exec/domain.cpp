// Exact, ordered and fingerprint value domains (see domain.hpp).
#include "exec/domain.hpp"

#include "exec/domain_sets.hpp"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "util/error.hpp"

namespace collv {

const char* domain_name(DomainKind k) {
  switch (k) {
    case DomainKind::Exact:
      return "exact";
    case DomainKind::Ordered:
      return "ordered";
    case DomainKind::Fingerprint:
      return "fingerprint";
  }
  return "?";
}

std::optional<DomainKind> domain_from_name(const std::string& s) {
  if (s == "exact") return DomainKind::Exact;
  if (s == "ordered") return DomainKind::Ordered;
  if (s == "fingerprint") return DomainKind::Fingerprint;
  return std::nullopt;
}

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

class FingerprintDomain : public Domain {
 public:
  FingerprintDomain(std::uint32_t p, std::uint32_t elems, std::uint64_t seed)
      : Domain(p, elems), seed_(splitmix64(seed)) {}
  DomainKind kind() const override { return DomainKind::Fingerprint; }
  Item leaf(std::uint32_t node, std::uint32_t elem) override {
    Item w = splitmix64(seed_ ^ (static_cast<std::uint64_t>(node) * elems_ + elem));
    return w == 0 ? 1 : w;
  }
  Item combine(Item a, Item b) override { return a + b; }
  Item from_terms(std::vector<std::uint32_t> terms) override {
    Item s = 0;
    for (auto c : terms) s += leaf(c / elems_, c % elems_);
    return s;
  }
  std::string describe(Item a) const override { return a == 0 ? "0" : fmt::format("#{:016x}", a); }
  bool inspectable() const override { return false; }
  std::vector<std::uint32_t> terms(Item) const override { return {}; }
  std::span<const std::uint32_t> terms_view(Item) const override { return {}; }
  std::size_t num_items() const override { return 0; }
  std::optional<std::pair<Item, Item>> operands(Item) const override { return std::nullopt; }
  std::uint64_t weight(Item) const override { return 0; }
  std::size_t memory_bytes() const override { return 0; }

 private:
  std::uint64_t seed_;
};

}  // namespace

bool Domain::counts_twice(Item a) const {
  if (!inspectable()) return false;
  auto ts = terms(a);
  std::sort(ts.begin(), ts.end());
  return std::adjacent_find(ts.begin(), ts.end()) != ts.end();
}

std::unique_ptr<Domain> make_domain(DomainKind kind, std::uint32_t p, std::uint32_t elems,
                                    std::uint64_t seed) {
  if (static_cast<std::uint64_t>(p) * elems > 0xFFFFFFFFull)
    throw LimitError(
        fmt::format("{} processors x {} elements = {} inputs; at most 2^32-1 are supported", p,
                    elems, static_cast<std::uint64_t>(p) * elems));
  if (kind == DomainKind::Fingerprint) return std::make_unique<FingerprintDomain>(p, elems, seed);
  return make_set_domain(kind, p, elems);
}

}  // namespace collv
