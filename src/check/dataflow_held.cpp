// The fingerprint dataflow replay by membership (see dataflow_held.hpp). Each step mirrors
// Analyzer::run, begin_node, add_held and derive in dataflow.cpp for a run in the fingerprint
// domain: an item 0 is derived, a held item is derived, any other is counted (there:
// Outcome::Undecidable, reported as a count in the check's note).
#include "check/dataflow_held.hpp"

#include <algorithm>
#include <bit>

namespace collv {

namespace {
// Payloads this long or longer are keyed whole (shorter ones cost less item by item).
constexpr std::uint16_t kWhole = 4;
// A payload key: where its items start in Trace::payload, and how many there are.
std::uint64_t key_of(const Transfer& x) {
  return (std::uint64_t{x.payload_begin} << 16) | x.payload_len;
}
}  // namespace

HeldFlow::HeldFlow(const Trace& t) : t_(t) {
  usable_ = !t.from_file && t.domain && t.domain->kind() == DomainKind::Fingerprint;
}

// The held values: groups of 8 slots, each group a word of 8 control bytes (0x80 an empty slot,
// else 7 bits of the value's hash) beside its 8 values (one cache line). A lookup reads the
// group's control word and compares only the values whose 7 bits match; a group with an empty
// slot ends the probe (nothing is ever removed). At p = count = 4,096 a node holds 53,248 values:
// the control words take 128 KiB, within the cache, where the values take a megabyte.
namespace {
constexpr std::uint64_t kLow = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ULL;
// The bytes of w equal to tag (a few more may be flagged above a match: the values decide).
std::uint64_t matches(std::uint64_t w, std::uint64_t tag) {
  const std::uint64_t t = w ^ (kLow * tag);
  return (t - kLow) & ~t & kHigh;
}
unsigned byte_at(std::uint64_t bits) { return static_cast<unsigned>(std::countr_zero(bits)) / 8; }
}  // namespace

// An empty table with room for `items` values at a load of at most one half.
void HeldFlow::reset(std::uint64_t items) {
  const std::uint64_t groups = std::max<std::uint64_t>(2, std::bit_ceil(items / 4 + 1));
  if (ctrl_.size() < groups) {
    ctrl_.resize(groups);
    values_.resize(groups * 8);
  }
  std::fill(ctrl_.begin(), ctrl_.begin() + static_cast<std::ptrdiff_t>(groups), kHigh);
  gmask_ = groups - 1;
  shift_ = 64 - static_cast<unsigned>(std::countr_zero(groups));
  received_.clear();
}

// Fingerprints are sums of random 64-bit weights: the top bits of one multiplication spread
// them; the 7 bits below the group's are the tag (any value still lands in the table, at worst
// after a longer probe).
HeldFlow::Home HeldFlow::home(Item x) const {
  const std::uint64_t h = x * kMul;
  return {h >> shift_, (h >> (shift_ - 7)) & 0x7F};
}

void HeldFlow::insert(Item x, Home at) {
  for (std::uint64_t g = at.group;; g = (g + 1) & gmask_) {
    const std::uint64_t w = ctrl_[g];
    for (std::uint64_t m = matches(w, at.tag); m != 0; m &= m - 1)
      if (values_[g * 8 + byte_at(m)] == x) return;
    if (const std::uint64_t e = w & kHigh; e != 0) {
      const unsigned b = byte_at(e);
      ctrl_[g] = (w & ~(std::uint64_t{0xFF} << (8 * b))) | (at.tag << (8 * b));
      values_[g * 8 + b] = x;
      return;
    }
  }
}

bool HeldFlow::has(Item x, Home at) const {
  for (std::uint64_t g = at.group;; g = (g + 1) & gmask_) {
    const std::uint64_t w = ctrl_[g];
    for (std::uint64_t m = matches(w, at.tag); m != 0; m &= m - 1)
      if (values_[g * 8 + byte_at(m)] == x) return true;
    if ((w & kHigh) != 0) return false;
  }
}

// The homes of a block of items are asked for before any is probed, so the misses overlap.
namespace {
constexpr std::size_t kBlock = 16;
}

void HeldFlow::insert_all(const Item* items, std::size_t n) {
  Home h[kBlock];
  for (std::size_t b = 0; b < n; b += kBlock) {
    const std::size_t m = std::min(kBlock, n - b);
    for (std::size_t k = 0; k < m; ++k) {
      h[k] = home(items[b + k]);
      __builtin_prefetch(&ctrl_[h[k].group], 1);
      __builtin_prefetch(&values_[h[k].group * 8], 1);
    }
    for (std::size_t k = 0; k < m; ++k)
      if (items[b + k] != 0) insert(items[b + k], h[k]);
  }
}

std::uint64_t HeldFlow::missing(const Item* items, std::size_t n) const {
  std::uint64_t missed = 0;
  Home h[kBlock];
  for (std::size_t b = 0; b < n; b += kBlock) {
    const std::size_t m = std::min(kBlock, n - b);
    for (std::size_t k = 0; k < m; ++k) {
      h[k] = home(items[b + k]);
      __builtin_prefetch(&ctrl_[h[k].group]);
    }
    for (std::size_t k = 0; k < m; ++k)
      if (items[b + k] != 0 && !has(items[b + k], h[k])) ++missed;
  }
  return missed;
}

std::uint64_t HeldFlow::replay(NodeId v, std::span<const std::uint32_t> in,
                               std::span<const std::uint32_t> out) {
  const Buffer* input = v < t_.initial_input.size() ? &t_.initial_input[v] : nullptr;
  std::uint64_t held = input ? input->size() : 0;
  for (const std::uint32_t i : in) held += t_.transfers[i].payload_len;
  // At most one held value per item held (the node's input and every item it receives).
  reset(held);
  if (input) insert_all(input->data(), input->size());
  std::size_t j = 0;
  auto take_until = [&](std::uint32_t step) {  // receive every transfer of a step < `step`
    for (; j < in.size() && t_.transfers[in[j]].step < step; ++j) {
      const Transfer& x = t_.transfers[in[j]];
      if (x.payload_len == 0) continue;
      if (x.payload_len >= kWhole && !received_.insert(key_of(x)).second) continue;
      insert_all(t_.payload.data() + x.payload_begin, x.payload_len);
    }
  };
  std::uint64_t m = 0;
  for (const std::uint32_t xi : out) {
    const Transfer& x = t_.transfers[xi];
    take_until(x.step);
    if (x.payload_len == 0) continue;
    if (x.payload_len >= kWhole && received_.count(key_of(x))) {
      ++skipped_;
      continue;
    }
    m += missing(t_.payload.data() + x.payload_begin, x.payload_len);
  }
  take_until(UINT32_MAX);
  if (v < t_.final_output.size())
    m += missing(t_.final_output[v].data(), t_.final_output[v].size());
  return m;
}

}  // namespace collv
