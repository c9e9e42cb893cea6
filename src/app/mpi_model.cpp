// `collv mpi --model`: a model's run at the library's p, count and root, and the comparisons
// with the library: its combinations (conformance) and Open MPI's per-peer message counts.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "app/commands.hpp"
#include "app/mpi_internal.hpp"
#include "exec/executor.hpp"
#include "lang/ast.hpp"
#include "lang/check.hpp"
#include "topology/topology.hpp"
#include "util/error.hpp"

namespace fs = std::filesystem;

namespace collv {

using namespace mpi_detail;

MpiCombinations model_combinations(const std::string& model_file, int p, int count, int root) {
  return model_run(model_file, p, count, root).combinations;
}

namespace {

// Per rank and send of the model, the messages it received before that send whose payload the
// send carries on: a received item that holds some other rank's contribution, and whose
// contributions are all in one item the send carries (the same item forwarded, or combined
// into it). The earliest such receive of each send's data is a dependency of it; so is every
// other (each must have arrived before the send's data could be complete, unless the rank held
// the same contributions from another message: the models that ask for this check, whose
// ranks receive each contribution once per phase, say so in their notes).
std::vector<std::vector<std::vector<SendRef>>> send_dependencies(
    const Trace& tr, const Domain& d, int p, const std::vector<std::optional<SendRef>>& refs,
    const SentMessages& sends) {
  const std::uint32_t elems = std::max<std::uint32_t>(d.elems(), 1);
  auto sorted_terms = [&](Item it) {
    auto v = d.terms(it);
    std::sort(v.begin(), v.end());
    return v;
  };
  std::vector<std::vector<std::vector<SendRef>>> deps(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) deps[static_cast<std::size_t>(r)].resize(sends[r].size());
  // Per rank, the items it received that hold another rank's contribution, with their message.
  std::vector<std::vector<std::pair<SendRef, std::vector<std::uint32_t>>>> got(
      static_cast<std::size_t>(p));
  for (std::size_t i = 0; i < tr.transfers.size(); ++i) {
    if (!refs[i]) continue;
    const Transfer& x = tr.transfers[i];
    const SendRef ref = *refs[i];
    auto& mine = deps[ref.rank][ref.index];
    for (std::uint32_t k = 0; k < x.payload_len; ++k) {
      const auto terms = sorted_terms(tr.payload[x.payload_begin + k]);
      for (const auto& [from, have] : got[x.src])
        if (std::includes(terms.begin(), terms.end(), have.begin(), have.end()) &&
            std::find(mine.begin(), mine.end(), from) == mine.end())
          mine.push_back(from);
    }
    for (std::uint32_t k = 0; k < x.payload_len; ++k) {
      auto terms = sorted_terms(tr.payload[x.payload_begin + k]);
      const bool foreign = std::any_of(terms.begin(), terms.end(),
                                       [&](std::uint32_t id) { return id / elems != x.dst; });
      if (foreign && !terms.empty()) got[x.dst].emplace_back(ref, std::move(terms));
    }
  }
  for (auto& rank : deps)
    for (auto& v : rank)
      std::sort(v.begin(), v.end(), [](const SendRef& a, const SendRef& b) {
        return std::tie(a.rank, a.index) < std::tie(b.rank, b.index);
      });
  return deps;
}

// The topology a model runs on at p: complete:p, else its first family at p.
Topology model_topology(const Model& m, int p) {
  const auto& fams = m.header.topologies;
  std::string fam = std::find(fams.begin(), fams.end(), "complete") != fams.end() ? "complete"
                    : fams.empty()                                                ? "complete"
                                                                                  : fams.front();
  return Topology::parse(fmt::format("{}:{}", fam, p));
}

}  // namespace

bool mpi_detail::item_bytes_apply(const std::string& c) {
  return c != "allreduce" && c != "reduce" && c != "reduce_scatter" &&
         c != "reduce_scatter_block" && c != "scan" && c != "exscan";
}

std::string mpi_detail::model_refuses_size(const Model& m, int p, std::int64_t count_lo,
                                           std::int64_t count_hi) {
  if (!m.header.requires_) return "";
  const Topology t = model_topology(m, p);
  RunOptions ro;
  for (std::int64_t c = count_lo; c <= count_hi; ++c) {
    ro.count = static_cast<std::uint32_t>(c);
    const auto ok = model_applies(m, t, ro);
    if (!ok || *ok) return "";  // it applies at this count (or its run says why not)
  }
  return fmt::format("model '{}' requires {}, which does not hold on {}", m.header.name,
                     expr_to_string(*m.header.requires_), t.spec());
}

ModelRunResult model_run(const std::string& model_file, int p, int count, int root,
                         std::uint64_t max_ops, std::uint64_t elem_bytes, bool dependencies) {
  Model m = parse_model_file(model_file);
  Topology t = model_topology(m, p);
  RunOptions ro;
  ro.domain = DomainKind::Ordered;
  ro.count = static_cast<std::uint32_t>(count);
  ro.root = static_cast<std::uint32_t>(root);
  ro.max_ops_per_node = max_ops;
  std::vector<std::tuple<NodeId, Item, Item>> seen;
  ro.on_combine = [&](NodeId n, Item a, Item b) {
    if (seen.size() < 10'000'000) seen.emplace_back(n, a, b);
  };
  Trace tr = run_model(m, t, ro);
  if (tr.failure.kind == RunFailure::Kind::OpLimit ||
      tr.failure.kind == RunFailure::Kind::StepLimit)
    throw LimitError("the model's run stopped at a limit: " + tr.failure.message);
  if (tr.failure.kind != RunFailure::Kind::None)
    throw UsageError("the model's run failed: " + tr.failure.message);
  const Domain& d = *tr.domain;
  const std::uint32_t elems = std::max<std::uint32_t>(d.elems(), 1);
  auto decode = [&](Item it, std::int64_t& pos) {
    std::uint64_t mask = 0;
    for (std::uint32_t id : d.terms(it)) {
      std::int64_t e = id % elems;
      pos = pos == -1 ? e : pos == e ? pos : -2;
      if (id / elems < 64) mask |= std::uint64_t{1} << (id / elems);
    }
    return mask;
  };
  ModelRunResult res;
  MpiCombinations& out = res.combinations;
  out.resize(static_cast<std::size_t>(p));
  for (const auto& [n, a, b] : seen) {
    std::int64_t pos = -1;
    std::uint64_t ma = decode(a, pos), mb = decode(b, pos);
    if (ma == 0 || mb == 0) continue;  // a combination with the identity: no operation in MPI
    if (n < out.size()) out[n].push_back({pos, ma, mb});
  }
  // Its transfers, empty ones included (a send of an empty range is a message); a send to
  // oneself is no transfer in collv's executor.
  // The executor records a transfer when its send executes: per sender, program order.
  res.messages = PeerMessages(p);
  res.sends.resize(static_cast<std::size_t>(p));
  std::vector<std::optional<SendRef>> refs(tr.transfers.size());
  for (std::size_t i = 0; i < tr.transfers.size(); ++i) {
    const Transfer& x = tr.transfers[i];
    if (x.src >= static_cast<NodeId>(p) || x.dst >= static_cast<NodeId>(p) || x.src == x.dst)
      continue;
    ++res.messages.msgs[x.src][x.dst];
    res.messages.bytes[x.src][x.dst] += elem_bytes * x.payload_len;
    refs[i] = SendRef{x.src, res.sends[x.src].size()};
    res.sends[x.src].push_back(
        {static_cast<std::int64_t>(x.dst), static_cast<std::int64_t>(elem_bytes * x.payload_len)});
  }
  if (dependencies) res.depends = send_dependencies(tr, d, p, refs, res.sends);
  return res;
}

CheckResult compare_messages(const PeerMessages& lib, const PeerMessages& model,
                             std::uint64_t item_bytes) {
  CheckResult res;
  res.name = "messages";
  res.verdict = Verdict::Pass;
  const std::size_t p = std::min(lib.msgs.size(), model.msgs.size());
  for (std::size_t r = 0; r < p; ++r) {
    for (std::size_t q = 0; q < p; ++q) {
      const auto ln = lib.msgs[r][q], mn = model.msgs[r][q];
      const auto lb = lib.bytes[r][q], mb = model.bytes[r][q];
      if (ln == mn && lb == mb) continue;
      std::string msg = ln != mn
                            ? fmt::format(
                                  "rank {} sends {} message{} to rank {} ({} bytes), the model {} "
                                  "({} bytes)",
                                  r, ln, ln == 1 ? "" : "s", q, lb, mn, mb)
                            : fmt::format(
                                  "rank {} sends {} bytes to rank {} in {} message{}, the model's "
                                  "transfers carry {} bytes ({} items of {} bytes)",
                                  r, lb, q, ln, ln == 1 ? "" : "s", mb,
                                  mb / std::max<std::uint64_t>(item_bytes, 1), item_bytes);
      res.verdict = Verdict::Fail;
      if (res.violations.empty()) {
        Counterexample cx;
        cx.invariant = "messages";
        cx.nodes.push_back(static_cast<NodeId>(r));
        cx.nodes.push_back(static_cast<NodeId>(q));
        cx.message = msg;
        res.violations.push_back(cx);
      }
      ++res.violation_count;
    }
  }
  std::uint64_t self = 0;
  for (auto n : lib.self) self += n;
  if (self > 0)
    res.note = fmt::format(
        "{} message{} a rank sent to itself left out (a model's send to itself "
        "is no transfer)",
        self, self == 1 ? "" : "s");
  return res;
}

CheckResult compare_combinations(const MpiCombinations& lib, const MpiCombinations& model) {
  CheckResult res;
  res.name = "conformance";
  res.verdict = Verdict::Pass;
  auto text = [](const MpiCombination& c) {
    return fmt::format("ranks {} (op) ranks {} at position {}", ranks_text(c.left),
                       ranks_text(c.right), c.pos);
  };
  std::size_t made = 0;
  for (const auto& v : lib) made += v.size();
  for (const auto& v : model) made += v.size();
  if (made == 0) {
    res.verdict = Verdict::NotChecked;
    res.note =
        "neither the library nor the model combines anything (no reduction): conformance "
        "compares combinations, so it says nothing about this run";
    return res;
  }
  for (std::size_t r = 0; r < lib.size() && r < model.size(); ++r) {
    // Position by position: a library combines whole vectors in one call, a model item by item.
    std::map<std::int64_t, std::vector<MpiCombination>> L, M;
    for (const auto& c : lib[r]) L[c.pos].push_back(c);
    for (const auto& c : model[r]) M[c.pos].push_back(c);
    std::set<std::int64_t> positions;
    for (const auto& [k, v] : L) positions.insert(k);
    for (const auto& [k, v] : M) positions.insert(k);
    for (std::int64_t pos : positions) {
      const auto &l = L[pos], &m = M[pos];
      std::size_t k = 0;
      while (k < l.size() && k < m.size() && l[k] == m[k]) ++k;
      if (k == l.size() && k == m.size()) continue;
      std::string msg =
          fmt::format("rank {}, position {}, combination {}: the library {}, the model {}", r, pos,
                      k + 1, k < l.size() ? "makes " + text(l[k]) : "makes no more",
                      k < m.size() ? "makes " + text(m[k]) : "makes no more");
      res.verdict = Verdict::Fail;
      if (res.violations.empty()) {
        Counterexample cx;
        cx.invariant = "conformance";
        cx.nodes.push_back(static_cast<NodeId>(r));
        cx.message = msg;
        res.violations.push_back(cx);
      }
      ++res.violation_count;
      break;  // the first position of each rank
    }
  }
  return res;
}

}  // namespace collv
