// A per-node column over a slice of the processors, indexed by global node id: nodes base ..
// base + size - 1. A whole run is the slice from 0; a partitioned run (verify/partition.hpp)
// gives each process its own slice, so its columns take 1/K of the memory.
//
//   collv::NodeCol<int> c;  c.assign(/*n=*/4, 0, /*base=*/8);  c[9] = 1;   // nodes 8 .. 11
#pragma once

#include <cstddef>
#include <vector>

#include "topology/topology.hpp"

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

}  // namespace collv
