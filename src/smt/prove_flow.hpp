// The data flow of a trace as SMT-LIB terms, for smt_check_trace (prove.cpp): every payload item
// a transfer carries is a constant m<k> defined from what its sender held (inputs and items it
// received earlier), every final item o<v>_<i> from what its node held at the end. The terms come
// from the schedule's derivations (analyze_dataflow), never from collv's values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "check/dataflow.hpp"
#include "exec/trace.hpp"

namespace collv::smt_flow {

using Word = std::vector<std::uint32_t>;  // contributions in operand order

// The schedule's data flow as terms. Validates the derivations against what each node holds
// (a received value only after the step it arrived in, never from a send that was not received).
class Flow {
 public:
  Flow(const Trace& t, const Dataflow& df);

  // What payload item j is: a node's input element, or a payload item that combines values.
  struct Root {
    bool input = false;
    NodeId node = 0;
    std::uint32_t index = 0;
  };
  const Root& root(std::uint32_t j) const { return root_[j]; }
  bool is_copy(std::uint32_t j) const { return df_.payload[j].parts.size() == 1; }

  // Empty when every payload item and every final item has a derivation from held values.
  const std::string& problem() const { return problem_; }
  const std::vector<std::uint32_t>& order() const { return order_; }

  std::string xname(std::uint32_t c) const {
    return fmt::format("x{}_{}", c / d_.elems(), c % d_.elems());
  }
  std::string leaf(std::uint32_t c, bool seq) const {
    return seq ? fmt::format("(seq.unit {})", xname(c)) : xname(c);
  }
  static std::string combine(const std::vector<std::string>& parts, bool seq) {
    if (parts.empty()) return seq ? "(as seq.empty (Seq Int))" : "0";
    if (parts.size() == 1) return parts[0];
    std::string s = seq ? "(seq.++" : "(+";
    for (auto& p : parts) s += " " + p;
    return s + ")";
  }
  // A term of contributions (an input element, or a required output), from the definition.
  std::string word_term(const Word& w, bool seq) const {
    std::vector<std::string> ps;
    for (auto c : w) ps.push_back(leaf(c, seq));
    return combine(ps, seq);
  }
  // Node v's input element idx: the collective's precondition (usually one leaf x<v>_<e>).
  Word input_word(NodeId v, std::uint32_t idx) const { return d_.terms(t_.initial_input[v][idx]); }

  std::string part(NodeId v, const HeldRef& h, bool seq) const {
    if (h.kind == HeldRef::Kind::Input) return word_term(input_word(v, h.index), seq);
    const Root& r = root_[h.index];
    if (r.input) return word_term(input_word(r.node, r.index), seq);
    return fmt::format("m{}", r.index);
  }
  std::string derivation(NodeId v, const Derivation& dv, bool seq) const {
    std::vector<std::string> ps;
    for (auto& h : dv.parts) ps.push_back(part(v, h, seq));
    return combine(ps, seq);
  }

  // A held value as the schedule names it, copies not collapsed: an input element, or the item
  // m<k> of the transfer that brought it.
  std::string direct_part(NodeId v, const HeldRef& h, bool seq) const {
    if (h.kind == HeldRef::Kind::Input) return word_term(input_word(v, h.index), seq);
    return fmt::format("m{}", h.index);
  }
  std::string direct_derivation(NodeId v, const Derivation& dv, bool seq) const {
    std::vector<std::string> ps;
    for (auto& h : dv.parts) ps.push_back(direct_part(v, h, seq));
    return combine(ps, seq);
  }
  // The final item o<v>_<i> as node v builds it from what it holds at the end.
  std::string final_term(NodeId v, std::uint32_t i, bool seq) const {
    return direct_derivation(v, df_.final_output[v][i], seq);
  }

  // The data checks' premises: every item a transfer carries is a declared constant m<k> with one
  // fact, (assert (= m<k> ...)), saying what its sender built it from (its inputs and the items
  // m<j> it received earlier; a forwarded item is (= m<k> m<j>)). Nothing is collapsed, so every
  // transfer on the way from an input to a final buffer is a premise of the certificate, and
  // breaking or deleting one makes the query sat. Then (define-fun o<v>_<i> ...) for every final
  // item.
  std::string definitions(bool seq, bool finals) const;

  // The contributions of the payload and final items in operand order, as the derivations build
  // them (not collv's values).
  void compute_words();
  const std::vector<std::vector<Word>>& final_words() const { return fw_; }
  const Word& payload_word(std::uint32_t j) const { return pw_[j]; }

  // Size of the query the derivations make (terms), for the cap.
  std::uint64_t size() const;

  std::uint32_t transfer_of(std::uint32_t payload) const { return xfer_[payload]; }
  // Transfer i's first slot: its item k is m<slot(i) + k>.
  std::uint32_t slot(std::uint32_t i) const { return slot_[i]; }

 private:
  std::string check_ref(NodeId v, const HeldRef& h, std::optional<std::uint32_t> step) const;
  std::string validate() const;

  const Trace& t_;
  const Dataflow& df_;
  const Domain& d_;
  std::vector<std::uint32_t> slot_;  // per transfer (payload_slots)
  std::vector<std::uint32_t> xfer_;  // per slot: the transfer that carries it
  std::vector<bool> unreceived_;
  std::vector<std::uint32_t> order_;
  std::string problem_;
  std::vector<Root> root_;
  std::vector<Word> pw_;
  std::vector<std::vector<Word>> fw_;
};

}  // namespace collv::smt_flow
