// The collective's required outputs (see checks.hpp): what each node must end with, by MPI's
// definition of the collective or a schedule file's runtime.
#include "check/checks.hpp"

#include <memory>

namespace collv {

// Outputs judged up to order: the blocked collectives under `layout any` only.
bool output_order_free(const Trace& t) {
  Collective c = t.collective;
  return t.layout_any &&
         (c == Collective::Allgather || c == Collective::Gather || c == Collective::Alltoall);
}

std::vector<std::optional<Buffer>> expected_outputs(const Trace& t) {
  return expected_outputs(t, 0, static_cast<NodeId>(t.topology.num_processors()));
}

std::vector<std::optional<Buffer>> expected_outputs(const Trace& t, NodeId lo, NodeId hi) {
  std::vector<std::optional<Buffer>> out(hi - lo);
  auto shared = expected_output_refs(t, lo, hi);
  for (std::size_t v = 0; v < shared.size(); ++v)
    if (shared[v]) out[v] = *shared[v];
  return out;
}

std::vector<SharedBuffer> expected_output_refs(const Trace& t, NodeId lo, NodeId hi) {
  std::vector<SharedBuffer> out(hi - lo);
  if (t.file_expected) {  // a schedule file's own definition (its runtime's layout)
    for (NodeId v = lo; v < hi && v < t.file_expected->size(); ++v)
      if ((*t.file_expected)[v])
        out[v - lo] = std::make_shared<const Buffer>(*(*t.file_expected)[v]);
    return out;
  }
  Domain& d = *t.domain;
  auto p = static_cast<std::uint32_t>(t.topology.num_processors());
  std::uint32_t e = d.elems();
  // One buffer for every node where the collective asks the same of each (broadcast,
  // all-reduce, allgather, allgatherv): at p = 4,096 and count 4,096, 128 MiB once, not p times.
  auto every_node = [&out](Buffer b) {
    auto one = std::make_shared<const Buffer>(std::move(b));
    for (auto& o : out) o = one;
  };
  // out[v] for node v: only the nodes lo .. hi-1 are kept.
  struct Slice {
    std::vector<SharedBuffer>& o;
    NodeId lo, hi;
    struct Ref {
      SharedBuffer* x;
      Ref& operator=(const Buffer& b) {
        if (x) *x = std::make_shared<const Buffer>(b);
        return *this;
      }
    };
    Ref operator[](std::size_t v) { return {v >= lo && v < hi ? &o[v - lo] : nullptr}; }
  } sl{out, lo, hi};
  // Element j reduced over nodes lo..hi, in node order: the item with those contributions (term
  // node * elems + j), made from its terms at once (every domain's combine is their union in
  // order: a sorted merge, a concatenation, a sum), not by combining p - 1 times.
  std::vector<std::uint32_t> terms;
  auto fold = [&](std::uint32_t lo, std::uint32_t hi, std::uint32_t j) -> Item {
    terms.clear();
    for (std::uint32_t v = lo; v <= hi; ++v) terms.push_back(v * e + j);
    return d.from_terms(terms);
  };
  // Every element of an input, or every element reduced over lo..hi.
  auto input_of = [&](std::uint32_t i) {
    Buffer b;
    for (std::uint32_t j = 0; j < e; ++j) b.push_back(d.leaf(i, j));
    return b;
  };
  auto reduced = [&](std::uint32_t lo, std::uint32_t hi) {
    Buffer b;
    for (std::uint32_t j = 0; j < e; ++j) b.push_back(fold(lo, hi, j));
    return b;
  };
  // Blocked collectives (reduce-scatter, scatter, alltoall): p blocks of c elements each, c =
  // the run's count (elements / p; 1 when a schedule file's elements are not p blocks; 0 at
  // count 0, where every block is empty).
  std::uint32_t c = e == 0 ? 0 : (e >= p && p > 0 && e % p == 0) ? e / p : 1;
  switch (t.collective) {
    case Collective::Broadcast:
      every_node(input_of(t.root));
      break;
    case Collective::Reduce:
      sl[t.root] = reduced(0, p - 1);
      break;
    case Collective::Allreduce: {
      every_node(reduced(0, p - 1));
      break;
    }
    case Collective::Scan:
      for (std::uint32_t v = lo; v < hi; ++v) sl[v] = reduced(0, v);
      break;
    case Collective::Exscan:  // node 0's output is undefined in MPI: left unjudged (nullopt)
      for (std::uint32_t v = std::max<NodeId>(lo, 1); v < hi; ++v) sl[v] = reduced(0, v - 1);
      break;
    case Collective::Allgatherv:
    case Collective::Gatherv: {  // rank i's counts(i) elements at displs(i), in rank order
      Buffer all;
      for (std::uint32_t i = 0; i < p; ++i)
        for (std::int64_t k = 0; k < v_count(t.count, i); ++k)
          all.push_back(d.leaf(i, static_cast<std::uint32_t>(k)));
      if (t.collective == Collective::Gatherv) {
        sl[t.root] = all;
      } else {
        every_node(std::move(all));
      }
      break;
    }
    case Collective::Scatterv:
    case Collective::ReduceScatterv: {  // node j: elements displs(j) .. of the root / reduced
      std::uint32_t at = 0;
      for (std::uint32_t j = 0; j < p; ++j) {
        Buffer b;
        for (std::int64_t k = 0; k < v_count(t.count, j); ++k, ++at)
          b.push_back(t.collective == Collective::Scatterv ? d.leaf(t.root, at)
                                                           : fold(0, p - 1, at));
        sl[j] = b;
      }
      break;
    }
    case Collective::Alltoallv: {  // node j: from each i in rank order, counts(i, j) elements
      for (std::uint32_t j = lo; j < hi; ++j) {
        Buffer b;
        for (std::uint32_t i = 0; i < p; ++i) {
          std::uint32_t sd = 0;
          for (std::uint32_t k = 0; k < j; ++k)
            sd += static_cast<std::uint32_t>(v_pair_count(t.count, i, k));
          for (std::int64_t k = 0; k < v_pair_count(t.count, i, j); ++k)
            b.push_back(d.leaf(i, sd + static_cast<std::uint32_t>(k)));
        }
        sl[j] = b;
      }
      break;
    }
    case Collective::Allgather:
    case Collective::Gather: {
      Buffer all;
      for (std::uint32_t i = 0; i < p; ++i)
        for (Item it : input_of(i)) all.push_back(it);
      if (t.collective == Collective::Gather) {
        sl[t.root] = all;
      } else {
        every_node(std::move(all));
      }
      break;
    }
    case Collective::ReduceScatter:
      for (std::uint32_t j = lo; j < hi; ++j) {
        Buffer b;
        for (std::uint32_t k = 0; k < c; ++k) b.push_back(fold(0, p - 1, j * c + k));
        sl[j] = b;
      }
      break;
    case Collective::Scatter:
      for (std::uint32_t j = lo; j < hi; ++j) {
        Buffer b;
        for (std::uint32_t k = 0; k < c; ++k) b.push_back(d.leaf(t.root, j * c + k));
        sl[j] = b;
      }
      break;
    case Collective::Alltoall:
      for (std::uint32_t j = lo; j < hi; ++j) {
        Buffer b;
        for (std::uint32_t i = 0; i < p; ++i)
          for (std::uint32_t k = 0; k < c; ++k) b.push_back(d.leaf(i, j * c + k));
        sl[j] = b;
      }
      break;
    case Collective::Barrier:  // no data; check_barrier judges causal order
      break;
    case Collective::Shift:
      for (std::uint32_t i = 0; i < p; ++i) {
        std::int64_t dst = ((static_cast<std::int64_t>(i) + t.shift % p) % p + p) % p;
        sl[static_cast<std::size_t>(dst)] = input_of(i);
      }
      break;
  }
  return out;
}

}  // namespace collv
