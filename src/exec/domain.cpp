// Exact, ordered and fingerprint value domains (see domain.hpp).
#include "exec/domain.hpp"

#include "exec/domain_sets.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string_view>
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

std::string term_name(std::uint32_t c, std::uint32_t elems) {
  if (elems == 1) return fmt::format("x{}", c);
  return fmt::format("x{}.{}", c / elems, c % elems);
}

// describe() of the exact and ordered domains (domain.hpp): runs of consecutive ids as x0..x3,
// multiplicities as 2*x3 (exact). Written into one buffer (a ring's buffer at p = 1,024 in the
// ordered domain is a million terms: no string a term).
std::string describe_terms(std::span<const std::uint32_t> v, DomainKind kind, std::uint32_t elems) {
  if (v.empty()) return "0";
  fmt::memory_buffer out;
  auto number = [&](std::uint32_t n) {
    const fmt::format_int f(n);
    out.append(f.data(), f.data() + f.size());
  };
  auto name = [&](std::uint32_t c) {  // term_name's text
    out.push_back('x');
    if (elems == 1) {
      number(c);
    } else {
      number(c / elems);
      out.push_back('.');
      number(c % elems);
    }
  };
  auto sep = [&] {
    if (out.size() != 0) out.push_back('+');
  };
  if (kind == DomainKind::Ordered) {
    for (std::size_t i = 0; i < v.size();) {
      // compress increasing runs of consecutive ids: x0..x3
      std::size_t j = i;
      while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
      if (j - i >= 2) {
        sep();
        name(v[i]);
        out.append(std::string_view(".."));
        name(v[j]);
      } else {
        for (std::size_t k = i; k <= j; ++k) {
          sep();
          name(v[k]);
        }
      }
      i = j + 1;
    }
    return fmt::to_string(out);
  }
  // exact: group equal ids (multiplicity), compress runs of consecutive ids with multiplicity 1
  std::vector<std::pair<std::uint32_t, std::uint32_t>> groups;
  for (auto c : v) {
    if (!groups.empty() && groups.back().first == c) {
      ++groups.back().second;
    } else {
      groups.push_back({c, 1});
    }
  }
  for (std::size_t i = 0; i < groups.size();) {
    if (groups[i].second > 1) {
      sep();
      fmt::format_to(std::back_inserter(out), "{}*", groups[i].second);
      name(groups[i].first);
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j + 1 < groups.size() && groups[j + 1].second == 1 &&
           groups[j + 1].first == groups[j].first + 1)
      ++j;
    if (j - i >= 2) {
      sep();
      name(groups[i].first);
      out.append(std::string_view(".."));
      name(groups[j].first);
    } else {
      for (std::size_t k = i; k <= j; ++k) {
        sep();
        name(groups[k].first);
      }
    }
    i = j + 1;
  }
  return fmt::to_string(out);
}

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Interned sequences of contribution ids with a memo of combines, for runs of one element
// (count 1), where sets of runs shared by elements (domain_sets.cpp) save nothing and an
// unstructured set (the star's) would take a run, 8 bytes, a term. Exact keeps them sorted
// (a multiset), ordered keeps operand order.
class InternedDomain : public Domain {
 public:
  InternedDomain(DomainKind kind, std::uint32_t p, std::uint32_t elems)
      : Domain(p, elems), kind_(kind) {
    values_.emplace_back();  // item 0: identity
    hashes_.push_back(0);
    made_of_.emplace_back(0, 0);
    index_.emplace(0, 0);
  }
  DomainKind kind() const override { return kind_; }

  Item leaf(std::uint32_t node, std::uint32_t elem) override {
    COLLV_ASSERT(node < p_ && elem < elems_);
    std::uint32_t c = node * elems_ + elem;
    return intern({c}, term_hash(c));
  }

  Item combine(Item a, Item b) override {
    if (a == 0) return b;
    if (b == 0) return a;
    std::uint64_t key = (a << 32) | b;
    if (kind_ == DomainKind::Exact && a > b) key = (b << 32) | a;
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    const auto& va = values_[a];
    const auto& vb = values_[b];
    if (watch_) watch_->charge((va.size() + vb.size()) * sizeof(std::uint32_t) + 96);
    std::vector<std::uint32_t> out;
    out.reserve(va.size() + vb.size());
    std::uint64_t h;
    if (kind_ == DomainKind::Exact) {
      std::merge(va.begin(), va.end(), vb.begin(), vb.end(), std::back_inserter(out));
      h = hashes_[a] + hashes_[b];  // a sum of per-term hashes: order-free
    } else {
      out.insert(out.end(), va.begin(), va.end());
      out.insert(out.end(), vb.begin(), vb.end());
      h = hashes_[a] * pow_base(vb.size()) + hashes_[b];  // polynomial: order matters
    }
    Item r = intern(std::move(out), h);
    if (r == made_of_.size() - 1 && made_of_.back().first == 0 && made_of_.back().second == 0)
      made_of_.back() = {a, b};  // r is new: record how it was made
    memo_.emplace(key, r);
    return r;
  }

  Item from_terms(std::vector<std::uint32_t> terms) override {
    if (terms.empty()) return 0;
    std::uint64_t h = 0;
    if (kind_ == DomainKind::Exact) {
      std::sort(terms.begin(), terms.end());
      for (auto c : terms) h += term_hash(c);
    } else {
      for (auto c : terms) h = h * kBase + term_hash(c);  // as combine's polynomial
    }
    return intern(std::move(terms), h);
  }

  std::string describe(Item a) const override {
    return describe_terms(values_.at(a), kind_, elems_);
  }

  bool inspectable() const override { return true; }
  std::vector<std::uint32_t> terms(Item a) const override { return values_.at(a); }
  std::span<const std::uint32_t> terms_into(Item a, std::vector<std::uint32_t>&) const override {
    return values_.at(a);
  }
  std::size_t num_items() const override { return values_.size(); }
  std::optional<std::pair<Item, Item>> operands(Item a) const override {
    const auto& m = made_of_.at(a);
    if (m.first == 0 && m.second == 0) return std::nullopt;
    return m;
  }
  std::span<const std::pair<Item, Item>> operand_table() const override { return made_of_; }
  std::uint64_t weight(Item a) const override { return values_.at(a).size(); }
  bool counts_twice(Item a) const override {
    if (a >= twice_.size()) twice_.resize(values_.size(), 0);
    std::uint8_t& t = twice_.at(a);
    if (t == 0) {
      const auto& v = values_[a];
      if (kind_ == DomainKind::Exact) {
        t = std::adjacent_find(v.begin(), v.end()) != v.end() ? 2 : 1;
      } else {
        auto w = v;
        std::sort(w.begin(), w.end());
        t = std::adjacent_find(w.begin(), w.end()) != w.end() ? 2 : 1;
      }
    }
    return t == 2;
  }
  std::size_t memory_bytes() const override { return bytes_ + memo_.size() * 32; }

 private:
  static std::uint64_t term_hash(std::uint32_t c) { return splitmix64(c) | 1; }
  std::uint64_t pow_base(std::size_t e) {
    std::uint64_t r = 1, b = kBase;
    while (e) {
      if (e & 1) r *= b;
      b *= b;
      e >>= 1;
    }
    return r;
  }
  Item intern(std::vector<std::uint32_t> v, std::uint64_t h) {
    auto [lo, hi] = index_.equal_range(h);
    for (auto it = lo; it != hi; ++it)
      if (values_[it->second] == v) return it->second;
    Item id = values_.size();
    bytes_ += v.size() * sizeof(std::uint32_t) +
              56;  // the vector, its hash, its operands, its index entry
    values_.push_back(std::move(v));
    hashes_.push_back(h);
    made_of_.emplace_back(0, 0);
    index_.emplace(h, id);
    return id;
  }

  static constexpr std::uint64_t kBase = 0x100000001B3ULL;
  DomainKind kind_;
  std::vector<std::vector<std::uint32_t>> values_;
  std::vector<std::uint64_t> hashes_;
  std::vector<std::pair<Item, Item>> made_of_;  // operands of the combine that made an item
  std::unordered_multimap<std::uint64_t, Item> index_;
  std::unordered_map<std::uint64_t, Item> memo_;
  std::size_t bytes_ = 0;
  mutable std::vector<std::uint8_t> twice_;  // per item: 0 unknown, 1 no term twice, 2 twice
};

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
  void combine_into(Item* x, const Item* y, std::size_t n, bool) override {
    for (std::size_t k = 0; k < n; ++k) x[k] += y[k];  // a sum: either order
  }
  Item from_terms(std::vector<std::uint32_t> terms) override {
    Item s = 0;
    for (auto c : terms) s += leaf(c / elems_, c % elems_);
    return s;
  }
  std::string describe(Item a) const override { return a == 0 ? "0" : fmt::format("#{:016x}", a); }
  bool inspectable() const override { return false; }
  std::vector<std::uint32_t> terms(Item) const override { return {}; }
  std::span<const std::uint32_t> terms_into(Item, std::vector<std::uint32_t>& buf) const override {
    buf.clear();
    return {};
  }
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

Domain::SetInfo Domain::set_info(std::uint64_t) const {
  throw std::logic_error("set_info: the domain does not factor items by element");
}

std::span<const std::uint32_t> TermViews::operator()(Item a) {
  if (a == 0) return {};
  auto it = lists_.find(a);
  if (it == lists_.end()) {
    const auto ts = d_.terms_into(a, scratch_);
    it = lists_.emplace(a, std::vector<std::uint32_t>(ts.begin(), ts.end())).first;
    bytes_ += it->second.size() * sizeof(std::uint32_t) + 64;
  }
  return it->second;
}

void TermViews::clear() {
  lists_.clear();
  bytes_ = 0;
}

std::unique_ptr<Domain> make_domain(DomainKind kind, std::uint32_t p, std::uint32_t elems,
                                    std::uint64_t seed) {
  if (static_cast<std::uint64_t>(p) * elems > 0xFFFFFFFFull)
    throw LimitError(
        fmt::format("{} processors x {} elements = {} inputs; at most 2^32-1 are supported", p,
                    elems, static_cast<std::uint64_t>(p) * elems));
  if (kind == DomainKind::Fingerprint) return std::make_unique<FingerprintDomain>(p, elems, seed);
  if (elems == 1) return std::make_unique<InternedDomain>(kind, p, elems);
  return make_set_domain(kind, p, elems);
}

}  // namespace collv
