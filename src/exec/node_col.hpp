// A per-node column over a slice of the processors, indexed by global node id: nodes base ..
// base + size - 1. A whole run is the slice from 0; a partitioned run (verify/partition.hpp)
// gives each process its own slice, so its columns take 1/K of the memory.
//
//   collv::NodeCol<int> c;  c.assign(/*n=*/4, 0, /*base=*/8);  c[9] = 1;   // nodes 8 .. 11
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "exec/domain.hpp"
#include "topology/topology.hpp"
#include "util/smallvec.hpp"

namespace collv {

template <class T>
class NodeCol {
 public:
  void assign(std::size_t n, const T& x, NodeId base = 0) {
    v_.assign(n, x);
    base_ = base;
  }
  void resize(std::size_t n, NodeId base = 0) {
    v_.resize(n);
    base_ = base;
  }
  T& operator[](NodeId u) { return v_[u - base_]; }
  const T& operator[](NodeId u) const { return v_[u - base_]; }
  bool empty() const { return v_.empty(); }
  std::size_t size() const { return v_.size(); }
  NodeId base() const { return base_; }
  auto begin() { return v_.begin(); }
  auto end() { return v_.end(); }
  auto begin() const { return v_.begin(); }
  auto end() const { return v_.end(); }
  std::vector<T> take() { return std::move(v_); }

 private:
  std::vector<T> v_;
  NodeId base_ = 0;
};

// A data variable's buffers over a slice of the processors (nodes base .. base + size - 1), in
// 9 bytes a node while a node's buffer holds at most one item (the fingerprint domain at count 1,
// the usual case of a large run): the item and a length byte. A longer buffer lives in a side
// table, the item's word holding its index there; a buffer that shrinks back to one item leaves
// the table (set, settle) and its slot is reused. A plain column of SmallVec<Item, 2> took 24
// bytes a node; a node whose buffer is long takes 9 bytes more than it did.
//
//   collv::DataCol c;  c.resize(4, /*base=*/8);
//   c.set(9, Buf{7});                  // inline
//   collv::SmallVec<collv::Item, 2> b;  c.get(9, b);   // b = {7}
//   c.edit(9).push_back(5);  c.settle(9);                // now two items: in the side table
class DataCol {
 public:
  using Buf = SmallVec<Item, 2>;  // exec/trace.hpp's Buffer
  void resize(std::size_t n, NodeId base = 0) {
    one_.assign(n, 0);
    len_.assign(n, 0);
    many_.clear();
    free_.clear();
    base_ = base;
  }
  bool empty() const { return len_.empty(); }
  std::size_t size() const { return len_.size(); }
  // Items in u's buffer.
  std::uint32_t size_at(NodeId u) const {
    const std::size_t i = u - base_;
    return len_[i] == kMany ? many_[one_[i]].size() : len_[i];
  }
  // u's items in place (size_at(u) of them), valid until the column changes.
  const Item* items(NodeId u) const {
    const std::size_t i = u - base_;
    return len_[i] == kMany ? many_[one_[i]].data() : &one_[i];
  }
  // Whether u's buffer is exactly one item held inline, and that item (the executor's fast paths
  // read it in place: exec/statements.cpp).
  bool one_item(NodeId u) const { return len_[u - base_] == 1; }
  Item item(NodeId u) const { return one_[u - base_]; }
  // u's buffer becomes the one item x.
  void set_item(NodeId u, Item x) {
    const std::size_t i = u - base_;
    if (len_[i] == kMany) drop(i);
    one_[i] = x;
    len_[i] = 1;
  }
  // Copies u's buffer into out.
  void get(NodeId u, Buf& out) const {
    const std::size_t i = u - base_;
    if (len_[i] == kMany)
      out = many_[one_[i]];
    else
      put(out, one_[i], len_[i]);
  }
  void set(NodeId u, Buf&& b) {
    const std::size_t i = u - base_;
    if (b.size() <= 1) {
      if (len_[i] == kMany) drop(i);
      one_[i] = b.size() ? b[0] : 0;
      len_[i] = static_cast<std::uint8_t>(b.size());
    } else if (len_[i] == kMany) {
      many_[one_[i]] = std::move(b);
    } else {
      one_[i] = slot();
      len_[i] = kMany;
      many_[one_[i]] = std::move(b);
    }
  }
  // u's buffer to change in place (moved into the side table if it is inline); valid until the
  // next call on this column other than size_at and get. Call settle(u) when done.
  Buf& edit(NodeId u) {
    const std::size_t i = u - base_;
    if (len_[i] != kMany) {
      const Item x = one_[i];
      const std::uint8_t n = len_[i];
      one_[i] = slot();
      len_[i] = kMany;
      put(many_[one_[i]], x, n);
    }
    return many_[one_[i]];
  }
  // After edit(u): back inline if the buffer holds at most one item.
  void settle(NodeId u) {
    const std::size_t i = u - base_;
    if (len_[i] != kMany || many_[one_[i]].size() > 1) return;
    const Buf& b = many_[one_[i]];
    const Item x = b.size() ? b[0] : 0;
    const auto n = static_cast<std::uint8_t>(b.size());
    drop(i);
    one_[i] = x;
    len_[i] = n;
  }
  // Buffers held in the side table now (for tests).
  std::size_t long_buffers() const { return many_.size() - free_.size(); }
  // Every node's buffer in node order; the column is left empty.
  std::vector<Buf> take() {
    std::vector<Buf> out(len_.size());
    for (std::size_t i = 0; i < len_.size(); ++i) {
      if (len_[i] == kMany)
        out[i] = std::move(many_[one_[i]]);
      else
        put(out[i], one_[i], len_[i]);
    }
    resize(0, base_);
    one_.shrink_to_fit();
    len_.shrink_to_fit();
    return out;
  }

 private:
  static constexpr std::uint8_t kMany = 0xFF;
  static void put(Buf& b, Item x, std::uint8_t n) {  // n is 0 or 1
    b.clear();
    if (n) b.push_back(x);
  }
  std::uint32_t slot() {
    if (!free_.empty()) {
      const std::uint32_t s = free_.back();
      free_.pop_back();
      return s;
    }
    many_.emplace_back();
    return static_cast<std::uint32_t>(many_.size() - 1);
  }
  void drop(std::size_t i) {
    many_[one_[i]] = Buf{};  // gives its heap storage back
    free_.push_back(static_cast<std::uint32_t>(one_[i]));
  }
  std::vector<Item> one_;          // the item, or the index in many_ (len_ kMany)
  std::vector<std::uint8_t> len_;  // 0, 1 or kMany
  std::deque<Buf> many_;           // deque: growing moves no buffer
  std::vector<std::uint32_t> free_;
  NodeId base_ = 0;
};

// An integer variable over a slice of the processors, and per node whether it was assigned: 5
// bytes a node while every value fits in 32 bits (loop counters, ranks, sizes), 9 once one does
// not (the column is then widened, every value kept).
//
//   collv::IntCol c;  c.assign(4, /*base=*/8);  c.set(9, 5);  c.get(9);   // 5
//   c.set(10, std::int64_t{1} << 40);  c.wide();                           // true
class IntCol {
 public:
  void assign(std::size_t n, NodeId base = 0) {
    narrow_.assign(n, 0);
    wide_.clear();
    init_.assign(n, 0);
    is_wide_ = false;
    base_ = base;
  }
  std::int64_t get(NodeId u) const {
    const std::size_t i = u - base_;
    return is_wide_ ? wide_[i] : narrow_[i];
  }
  bool assigned(NodeId u) const { return init_[u - base_] != 0; }
  void set(NodeId u, std::int64_t x) {
    const std::size_t i = u - base_;
    init_[i] = 1;
    if (!is_wide_ && x >= INT32_MIN && x <= INT32_MAX) {  // the usual case, inlined
      narrow_[i] = static_cast<std::int32_t>(x);
      return;
    }
    set_wide(i, x);
  }
  bool wide() const { return is_wide_; }

 private:
  [[gnu::noinline]] void set_wide(std::size_t i, std::int64_t x) {
    if (!is_wide_) widen();
    wide_[i] = x;
  }
  void widen() {
    wide_.assign(narrow_.begin(), narrow_.end());
    narrow_ = {};
    is_wide_ = true;
  }
  std::vector<std::int32_t> narrow_;
  std::vector<std::int64_t> wide_;
  std::vector<std::uint8_t> init_;
  bool is_wide_ = false;
  NodeId base_ = 0;
};

// The messages queued at each node of a slice (transfer ids, in arrival order): the first in 5
// bytes a node (the id and a length byte), the others in a side table keyed by node. Most nodes
// hold at most one message at a time; a SmallVec<std::uint32_t, 2> took 16 bytes a node.
//
//   collv::InboxCol q;  q.resize(4, /*base=*/8);  q.push(9, 17);  q.push(9, 18);
//   q.find(9, [](std::uint32_t t) { return t == 18; });   // 1
//   q.take(9, 1);                                          // 18; 17 is left
class InboxCol {
 public:
  void resize(std::size_t n, NodeId base = 0) {
    first_.assign(n, 0);
    len_.assign(n, 0);
    rest_.clear();
    base_ = base;
  }
  std::uint32_t size(NodeId u) const {
    const std::size_t i = u - base_;
    return len_[i] < 2 ? len_[i] : 1 + rest_.at(u).size();
  }
  bool empty(NodeId u) const { return len_[u - base_] == 0; }
  // The oldest message (not empty(u)), and where it is kept (to prefetch).
  std::uint32_t front(NodeId u) const { return first_[u - base_]; }
  const std::uint32_t* front_addr(NodeId u) const { return &first_[u - base_]; }
  void push(NodeId u, std::uint32_t tid) {
    const std::size_t i = u - base_;
    if (len_[i] == 0) {
      first_[i] = tid;
      len_[i] = 1;
    } else {
      rest_[u].push_back(tid);
      len_[i] = 2;
    }
  }
  // The position of the oldest message `pred` accepts, or size(u) if none.
  template <class P>
  std::uint32_t find(NodeId u, P pred) const {
    const std::size_t i = u - base_;
    if (len_[i] == 0 || pred(first_[i])) return 0;
    if (len_[i] == 1) return 1;
    const auto& r = rest_.at(u);
    for (std::uint32_t k = 0; k < r.size(); ++k)
      if (pred(r[k])) return k + 1;
    return 1 + r.size();
  }
  // Removes message k (below size(u)) and returns it; the others keep their order.
  std::uint32_t take(NodeId u, std::uint32_t k) {
    const std::size_t i = u - base_;
    if (len_[i] == 1) {
      len_[i] = 0;
      return first_[i];
    }
    auto it = rest_.find(u);
    auto& r = it->second;
    std::uint32_t tid;
    if (k == 0) {
      tid = first_[i];
      first_[i] = r[0];
      r.erase_at(0);
    } else {
      tid = r[k - 1];
      r.erase_at(k - 1);
    }
    if (r.empty()) {
      rest_.erase(it);
      len_[i] = 1;
    }
    return tid;
  }
  // Every queued message (in no particular order).
  void append_all(std::vector<std::uint32_t>& out) const {
    for (std::size_t i = 0; i < len_.size(); ++i)
      if (len_[i]) out.push_back(first_[i]);
    for (const auto& [u, r] : rest_) out.insert(out.end(), r.begin(), r.end());
  }

 private:
  std::vector<std::uint32_t> first_;
  std::vector<std::uint8_t> len_;  // 0, 1, or 2: more in rest_
  std::unordered_map<NodeId, SmallVec<std::uint32_t, 2>> rest_;
  NodeId base_ = 0;
};

}  // namespace collv
