// HeldSets: the sets of contributions nodes hold, shared between nodes (the nodup check's
// second way, checks_nodup.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "exec/domain.hpp"

namespace collv {

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

}  // namespace collv
