// The executor's state and the helpers every room uses (exec/machine.hpp draws the rooms): the
// variable columns (data and buffers: exec/node_col.hpp; the values are the Domain's items,
// exec/domain*.hpp), the ready lists of the scheduler, the mailboxes, the timing references
// (exec/timing.hpp), the scratch columns of expression evaluation, failing a run and charging
// memory. Each room derives from the one below it: MachineState, Evaluator (eval.hpp), Ports
// (ports.hpp), RequestLocks (request_locks.hpp), Requests (requests.hpp), Statements
// (statements.hpp), Machine (machine.hpp).
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "exec/executor.hpp"
#include "exec/node_col.hpp"
#include "exec/program.hpp"
#include "exec/timing.hpp"
#include "util/memory.hpp"

namespace collv::interp {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
constexpr std::size_t kChunk = 1024;
// A ready list keeps at most this capacity once it is emptied (run_local).
constexpr std::size_t kKeepReady = 4096;
// The most elements one integer array may hold (per node).
constexpr std::int64_t kMaxArrayElements = std::int64_t{1} << 20;
// The most items one local buffer may hold (a message: at most 65535).
constexpr std::uint64_t kMaxBufferItems = 1ULL << 28;

// A runtime error of the model at one node.
struct ModelRuntimeError {
  SourceLoc loc;
  NodeId node;
  std::string msg;
};

// Runs the nodes lo .. hi-1 (every node, or a slice of a partitioned run: SliceMachine).
class MachineState {
 public:
  MachineState(const Model& m, const Topology& t, const RunOptions& o, Trace& tr, MemoryWatch& w,
               NodeId lo, NodeId hi);

  // init[i]: node lo + i's.
  void set_input(int slot, std::vector<Buffer> init) {
    for (NodeId v = lo_; v < hi_; ++v) data_[slot].set(v, std::move(init[v - lo_]));
  }
  // The column itself, for the end of the run (the Machine does not run again).
  std::vector<Buffer> take_column(int slot) { return data_[slot].take(); }
  const TimingRecord& timing_record() const { return timing_; }
  void start_stream() {
    stream_ = std::make_unique<StreamTiming>(n_local_, &deps_, lo_);
    last_recv_ = {};  // a streamed run's last receives are StreamTiming's (4 bytes a node)
  }
  void reserve_timing(std::size_t n) {
    timing_.dep.reserve(n);
    timing_.prev_recv.reserve(n);
  }

 protected:
  void mark_ready(std::uint32_t pc) {
    if (queued_[pc] || ready_[pc].empty()) return;
    queued_[pc] = 1;
    pending_.push(pc);
  }

  void fail(RunFailure::Kind k, std::string msg) {
    tr_.failure.kind = k;
    tr_.failure.message = std::move(msg);
  }

  [[noreturn]] void rt_error(const Expr& e, NodeId v, std::string msg) {
    throw ModelRuntimeError{e.loc, v, std::move(msg)};
  }
  [[noreturn]] void rt_error(const Stmt& s, NodeId v, std::string msg) {
    throw ModelRuntimeError{s.loc, v, std::move(msg)};
  }

  // The neighbour of v (one of this Machine's nodes) along link k: a load from the slice's star
  // table where the Topology would unrank it (Topology::star_rows).
  std::optional<NodeId> neighbor(NodeId v, int k) const {
    if (!star_rows_.empty() && v - lo_ < n_local_) {
      const std::uint32_t i = static_cast<std::uint32_t>(k) - 2u;
      if (i >= star_deg_) return std::nullopt;
      return star_rows_[std::size_t{v - lo_} * star_deg_ + i];
    }
    return topo_.neighbor(v, k);
  }

  std::vector<std::int64_t>& iscratch(int depth) {
    if (static_cast<int>(iscr_.size()) <= depth) iscr_.resize(depth + 1);
    auto& v = iscr_[depth];
    if (v.size() < kChunk) v.resize(kChunk);
    return v;
  }
  std::vector<Buffer>& dscratch(int depth) {
    if (static_cast<int>(dscr_.size()) <= depth) dscr_.resize(depth + 1);
    auto& v = dscr_[depth];
    if (v.size() < kChunk) v.resize(kChunk);
    return v;
  }

  template <class V>
  void charge_growth(const V& v, std::size_t n) {
    if (v.size() + n > v.capacity())
      watch_.charge(std::max(2 * v.capacity(), v.size() + n) * sizeof(typename V::value_type));
  }

  // Buffers are about to grow by `items` items (beyond the two held inline).
  void charge_items(std::uint64_t items) {
    if (items > 2 * kChunk) watch_.charge(items * sizeof(Item));
  }
  void check_memory();

  bool has_nb_ = false;

 public:
  Domain* dom_ = nullptr;

 protected:
  const Model& m_;
  const Topology& topo_;
  const RunOptions& opts_;
  Trace& tr_;
  MemoryWatch& watch_;
  std::uint32_t p_;
  NodeId lo_, hi_;  // the nodes this Machine runs
  std::uint32_t n_local_;
  std::vector<RemoteSend> outbox_;  // sends to other processes' nodes, until exchanged
  Program prog_;
  std::int64_t d_ = -1, n_ = -1, rows_ = -1, cols_ = -1;
  // A slice's star links (Topology::star_rows; empty for a whole run or another topology).
  std::vector<NodeId> star_rows_;
  std::uint32_t star_deg_ = 0;
  std::vector<IntCol> ints_;  // 5 bytes a node while every value fits in 32 bits
  // Integer arrays: per slot and node its elements (empty until its `array` statement runs).
  std::vector<NodeCol<std::vector<std::int64_t>>> arrays_;
  std::vector<NodeCol<std::uint8_t>> array_ran_;  // per slot and node: `array` has run
  bool array_declared(int slot, NodeId v) const { return array_ran_[slot][v] != 0; }
  // Element `at` of the integer array `a` (a Name with its slot) at node v, read or written by
  // `e`: a run-time error at e if the array's `array` statement has not run there or `at` is
  // outside it.
  std::int64_t& array_element(const Expr& e, const Expr& a, NodeId v, std::int64_t at) {
    auto& arr = arrays_[a.slot][v];
    if (at < 0 || at >= static_cast<std::int64_t>(arr.size()))
      rt_error(e, v,
               arr.empty() && !array_declared(a.slot, v)
                   ? fmt::format("'{}' is used before its 'array' statement ran", a.name)
                   : fmt::format("index {} is out of range for '{}' of {} elements", at, a.name,
                                 arr.size()));
    return arr[static_cast<std::size_t>(at)];
  }
  std::vector<DataCol> data_;  // 9 bytes a node while a buffer holds at most one item
  static_assert(std::is_same_v<DataCol::Buf, Buffer>);
  NodeCol<std::uint32_t> waiting_on_, blocked_pc_;
  InboxCol inbox_;
  std::vector<std::vector<NodeId>> ready_;
  // The program points whose ready_ list may be non-empty, lowest on top; queued_[pc] says pc is
  // in the heap.
  std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, std::greater<>> pending_;
  std::vector<std::uint8_t> queued_;
  std::deque<std::vector<std::int64_t>> iscr_;  // deque: growing keeps references valid
  std::deque<std::vector<Buffer>> dscr_;
  std::uint64_t ops_ = 0, finished_ = 0, dispatches_ = 0;
  std::uint32_t max_step_ = 0;
  // Timing (exec/timing.hpp).
  StepBound bound_{opts_.port, n_local_, lo_};
  TimingRecord timing_;
  DepTable deps_;
  std::vector<int> dep_col_;  // per slot: its DepTable column, -1 if not a data variable

 public:
  std::unique_ptr<StreamTiming> stream_;  // streamed runs only

 protected:
  NodeCol<std::uint32_t> recv_count_, last_recv_;
  std::vector<std::vector<int>> reads_;
  struct SelfMessage {
    Buffer value;
    DepTag dep;
    SourceLoc loc;
  };
  NodeCol<std::deque<SelfMessage>> self_box_;  // per node; empty until a node sends itself
};

}  // namespace collv::interp
