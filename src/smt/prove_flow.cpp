// The data flow of a trace as SMT-LIB terms (prove_flow.hpp).
#include "smt/prove_flow.hpp"

#include <fmt/format.h>

namespace collv::smt_flow {

Flow::Flow(const Trace& t, const Dataflow& df) : t_(t), df_(df), d_(*t.domain) {
  // Payload items are named by slot (payload_slots): transfers that share items in
  // Trace::payload are still one premise each, from their own sender.
  std::uint64_t n = 0;
  slot_ = payload_slots(t, &n);
  xfer_.assign(n, UINT32_MAX);
  for (std::uint32_t i = 0; i < t.transfers.size(); ++i) {
    const Transfer& x = t.transfers[i];
    for (std::uint32_t k = 0; k < x.payload_len; ++k) xfer_[slot_[i] + k] = i;
  }
  unreceived_.assign(t.transfers.size(), false);
  for (auto i : t.unreceived)
    if (i < unreceived_.size()) unreceived_[i] = true;
  order_ = t.ordered_transfers();
  problem_ = validate();
  // Copies: a payload item derived from one held value is that value (a copy is the same
  // term), so it gets no definition of its own; root_[j] names the value it copies.
  root_.resize(n);
  if (problem_.empty())
    for (auto i : order_) {
      const Transfer& x = t.transfers[i];
      for (std::uint32_t k = 0; k < x.payload_len; ++k) {
        auto j = slot_[i] + k;
        const auto& parts = df.payload[j].parts;
        if (parts.size() != 1)
          root_[j] = {false, x.src, j};
        else if (parts[0].kind == HeldRef::Kind::Input)
          root_[j] = {true, x.src, parts[0].index};
        else
          root_[j] = root_[parts[0].index];
      }
    }
}

std::string Flow::definitions(bool seq, bool finals) const {
  std::string out;
  const char* sort = seq ? "(Seq Int)" : "Int";
  for (auto i : order_) {
    const Transfer& x = t_.transfers[i];
    out += fmt::format("; transfer {}: step {}, {} -> {}\n", i, x.step, x.src, x.dst);
    for (std::uint32_t k = 0; k < x.payload_len; ++k) {
      auto j = slot_[i] + k;
      out += fmt::format("(declare-const m{} {})\n(assert (= m{} {}))\n", j, sort, j,
                         direct_derivation(x.src, df_.payload[j], seq));
    }
  }
  if (finals)
    for (NodeId v = 0; v < t_.final_output.size(); ++v)
      for (std::uint32_t i = 0; i < t_.final_output[v].size(); ++i)
        out += fmt::format("(define-fun o{}_{} () {} {})\n", v, i, sort, final_term(v, i, seq));
  return out;
}

void Flow::compute_words() {
  pw_.assign(xfer_.size(), {});
  auto build = [&](NodeId v, const Derivation& dv) {
    Word w;
    for (auto& h : dv.parts) {
      if (h.kind == HeldRef::Kind::Input) {
        auto iw = input_word(v, h.index);
        w.insert(w.end(), iw.begin(), iw.end());
      } else {
        const Word& r = pw_[h.index];
        w.insert(w.end(), r.begin(), r.end());
      }
    }
    return w;
  };
  for (auto i : order_) {
    const Transfer& x = t_.transfers[i];
    for (std::uint32_t k = 0; k < x.payload_len; ++k)
      pw_[slot_[i] + k] = build(x.src, df_.payload[slot_[i] + k]);
  }
  fw_.assign(t_.final_output.size(), {});
  for (NodeId v = 0; v < t_.final_output.size(); ++v)
    for (auto& dv : df_.final_output[v]) fw_[v].push_back(build(v, dv));
}

std::uint64_t Flow::size() const {
  std::uint64_t n = 0;
  for (auto& dv : df_.payload) n += 2 + dv.parts.size();
  for (auto& f : df_.final_output)
    for (auto& dv : f) n += 2 + dv.parts.size();
  return n;
}

std::string Flow::check_ref(NodeId v, const HeldRef& h, std::optional<std::uint32_t> step) const {
  if (h.kind == HeldRef::Kind::Input) {
    if (v >= t_.initial_input.size() || h.index >= t_.initial_input[v].size())
      return fmt::format("input element {} of node {}, which it does not have", h.index,
                         t_.topology.label(v));
    return "";
  }
  if (h.index >= xfer_.size() || xfer_[h.index] == UINT32_MAX)
    return fmt::format("payload item {}, which no transfer carries", h.index);
  const Transfer& x = t_.transfers[xfer_[h.index]];
  if (x.dst != v || unreceived_[xfer_[h.index]] || (step && x.step >= *step))
    return fmt::format("payload item {} (step {}, {} -> {}), which node {} did not hold then",
                       h.index, x.step, t_.topology.label(x.src), t_.topology.label(x.dst),
                       t_.topology.label(v));
  return "";
}

std::string Flow::validate() const {
  if (df_.slot != slot_ || df_.payload.size() != xfer_.size() ||
      df_.final_output.size() != t_.final_output.size())
    return "the data-flow analysis does not cover this trace";
  for (auto i : order_) {
    const Transfer& x = t_.transfers[i];
    for (std::uint32_t k = 0; k < x.payload_len; ++k) {
      const Derivation& dv = df_.payload[slot_[i] + k];
      std::string where = fmt::format("step {}: {} -> {}, item {}", x.step,
                                      t_.topology.label(x.src), t_.topology.label(x.dst), k);
      if (!dv.found) return where + ": no derivation from what the sender held";
      for (auto& h : dv.parts)
        if (auto e = check_ref(x.src, h, x.step); !e.empty()) return where + ": refers to " + e;
    }
  }
  for (NodeId v = 0; v < t_.final_output.size(); ++v) {
    if (df_.final_output[v].size() != t_.final_output[v].size())
      return "the data-flow analysis does not cover the final buffers";
    for (std::uint32_t i = 0; i < df_.final_output[v].size(); ++i) {
      const Derivation& dv = df_.final_output[v][i];
      std::string where = fmt::format("node {} final item {}", t_.topology.label(v), i);
      if (!dv.found) return where + ": no derivation from what the node held at the end";
      for (auto& h : dv.parts)
        if (auto e = check_ref(v, h, std::nullopt); !e.empty()) return where + ": refers to " + e;
    }
  }
  return "";
}

}  // namespace collv::smt_flow
