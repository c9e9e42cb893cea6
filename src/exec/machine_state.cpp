// The executor's state (see machine_state.hpp).
#include "exec/machine_state.hpp"

#include <algorithm>

#include "lang/check.hpp"

namespace collv::interp {

MachineState::MachineState(const Model& m, const Topology& t, const RunOptions& o, Trace& tr,
                           MemoryWatch& w, NodeId lo, NodeId hi)
    : m_(m),
      topo_(t),
      opts_(o),
      tr_(tr),
      watch_(w),
      p_(static_cast<std::uint32_t>(t.num_processors())),
      lo_(lo),
      hi_(hi),
      n_local_(hi - lo) {
  prog_.num_slots = static_cast<int>(m.var_names.size());
  compile_block(m.body, prog_);
  auto env = topology_env(t);
  auto get = [&](const char* k) { return env.count(k) ? env.at(k) : -1; };
  d_ = get("d");
  n_ = get("n");
  rows_ = get("rows");
  cols_ = get("cols");
  if (n_local_ < p_) {  // a slice: its rows of the star table no process keeps whole
    star_rows_ = t.star_rows(lo, hi);
    if (!star_rows_.empty()) star_deg_ = static_cast<std::uint32_t>(star_rows_.size() / n_local_);
  }
  ints_.resize(prog_.num_slots);
  data_.resize(prog_.num_slots);
  arrays_.resize(prog_.num_slots);
  array_ran_.resize(prog_.num_slots);
  for (int s = 0; s < prog_.num_slots; ++s) {
    bool is_data = s < static_cast<int>(m.var_types.size()) && m.var_types[s] == Type::Data;
    if (s < static_cast<int>(m.var_types.size()) && m.var_types[s] == Type::IntArray) {
      arrays_[s].resize(n_local_, lo_);  // empty until the node runs its `array` statement
      array_ran_[s].assign(n_local_, 0, lo_);
    } else if (is_data) {
      data_[s].resize(n_local_, lo_);
    } else {
      ints_[s].assign(n_local_, lo_);
    }
  }
  // Timing (exec/timing.hpp): per node and data variable a dependency tag (node-major), per
  // node its receive count and last receive; per instruction the data variables its value
  // reads (as DepTable columns). A data variable no statement writes (an input only read:
  // only assignments, receives and irecvs have targets) keeps tag 0 and has no column.
  std::vector<char> written(prog_.num_slots, 0);
  for (const Instr& in : prog_.code) {
    if (!in.stmt || !in.stmt->target) continue;
    const Expr& t = *in.stmt->target;
    const int slot = t.kind == ExprKind::Name ? t.slot : t.args.empty() ? -1 : t.args[0]->slot;
    if (slot >= 0) written[slot] = 1;
  }
  dep_col_.assign(prog_.num_slots, -1);
  int width = 0;
  for (int s = 0; s < prog_.num_slots; ++s)
    if (!data_[s].empty() && written[s]) dep_col_[s] = width++;
  deps_.init(n_local_, static_cast<std::uint32_t>(width), lo_);
  recv_count_.assign(n_local_, 0, lo_);
  last_recv_.assign(n_local_, kNoTransfer, lo_);
  reads_.resize(prog_.code.size());
  for (std::size_t pc = 0; pc < prog_.code.size(); ++pc) {
    const Instr& in = prog_.code[pc];
    if ((in.op == IOp::Assign || in.op == IOp::Send || in.op == IOp::Isend) && in.stmt->value)
      data_slots_read(*in.stmt->value, m, reads_[pc]);
    if (in.op == IOp::Irecv || in.op == IOp::Isend || in.op == IOp::Wait) has_nb_ = true;
    for (int& slot : reads_[pc]) slot = dep_col_[slot];
    std::erase(reads_[pc], -1);  // a variable never written: tag 0
  }
  waiting_on_.assign(n_local_, kNone, lo_);
  blocked_pc_.assign(n_local_, kNone, lo_);
  inbox_.resize(n_local_, lo_);
  ready_.resize(prog_.code.size() + 1);
  queued_.assign(prog_.code.size() + 1, 0);
}

void MachineState::check_memory() {
  watch_.check();
  std::uint64_t bytes = tr_.transfers.capacity() * sizeof(Transfer) +
                        tr_.transfers.capacity() * timing_.bytes_per_transfer() +
                        tr_.payload.capacity() * sizeof(Item) + dom_->memory_bytes() +
                        (stream_ ? stream_->bytes() : 0);
  if (bytes > opts_.max_memory)
    throw LimitError(fmt::format(
        "the run needs more than {} MiB (trace and values so far: {} MiB); raise --max-memory "
        "or use a smaller topology or the fingerprint domain",
        opts_.max_memory >> 20, bytes >> 20));
}

}  // namespace collv::interp
