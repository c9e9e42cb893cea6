// The streamed and partitioned side of the executor (see machine.hpp): messages delivered from
// other processes, the horizon that paces a slice, and the end of a streamed run.
#include "exec/machine.hpp"

namespace collv::interp {

void Machine::deliver(NodeId src, NodeId dst, std::uint16_t len, std::uint16_t line,
                      std::uint32_t origin, Buffer&& payload, std::uint32_t& tid) {
  stream_->make_room();
  tid = stream_->on_arrive(src, dst, len, line, origin, std::move(payload));
  inbox_.push(dst, tid);
  // As wake(src, dst), but the receiver joins its ready list in node order (wake_delivered).
  if (waiting_on_[dst] != src) return;
  waiting_on_[dst] = kNone;
  if (delivered_.empty()) delivered_.assign((std::size_t{n_local_} + 63) / 64, 0);
  const std::size_t i = dst - lo_;
  delivered_[i / 64] |= std::uint64_t{1} << (i % 64);
  any_delivered_ = true;
}

void Machine::wake_delivered() {
  if (!any_delivered_) return;
  any_delivered_ = false;
  for (std::size_t w = 0; w < delivered_.size(); ++w) {
    for (std::uint64_t bits = delivered_[w]; bits != 0; bits &= bits - 1) {
      const auto v =
          static_cast<NodeId>(lo_ + w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits)));
      ready_[blocked_pc_[v]].push_back(v);
      mark_ready(blocked_pc_[v]);
    }
    delivered_[w] = 0;
  }
}

void Machine::set_horizon(std::uint32_t h) {
  COLLV_ASSERT(h == 0 || opts_.port == PortModel::Single);
  horizon_ = h;
  for (auto [pc, v] : held_) {
    ready_[pc].push_back(v);
    mark_ready(pc);
  }
  held_.clear();
}

void Machine::run_receives() {
  no_sends_ = true;
  run_local();
  no_sends_ = false;
}

// The end of a streamed run: the last transfers timed, the statistics and the cost as
// Trace::compute_stats gives them, and what the transfer checks cannot judge without the stored
// trace.
void finish_stream(Trace& tr, StreamTotals st, const RunOptions& opts) {
  tr.streamed = true;
  tr.port = opts.port;
  tr.streamed_transfers = st.issued;
  tr.steps = st.steps;
  tr.per_step = std::move(st.per_step);
  tr.cost_ts = tr.steps;
  tr.cost_tw = 0;
  for (const auto& s : tr.per_step) tr.cost_tw += s.max_link_items;
  std::vector<std::string> why;
  if (st.unreceived > 0)
    why.push_back(fmt::format("{} transfer(s) are never received", st.unreceived));
  if (st.unresolved > 0)
    why.push_back(fmt::format(
        "{} transfer(s) wait on a cycle of port orders (no single-port schedule exists)",
        st.unresolved));
  if (!why.empty()) {
    tr.stream_incomplete = why[0] + (why.size() > 1 ? "; " + why[1] : "");
    if (tr.failure.kind == RunFailure::Kind::None && st.unresolved > 0) {
      tr.failure.kind = RunFailure::Kind::Deadlock;
      tr.failure.ports = true;
      tr.failure.message = fmt::format(
          "{}: deadlock of the ports (--port single): no schedule takes every node's sends and "
          "receives in program order ({}; the stored run names the cycle)",
          tr.model_file, tr.stream_incomplete);
    }
  }
  if (tr.failure.kind == RunFailure::Kind::None && tr.steps > opts.max_steps) {
    tr.failure.kind = RunFailure::Kind::StepLimit;
    tr.failure.message = fmt::format(
        "{}: the schedule takes {} steps, past the step limit {} (raise --max-steps to allow "
        "more)",
        tr.model_file, tr.steps, opts.max_steps);
  }
}

}  // namespace collv::interp
