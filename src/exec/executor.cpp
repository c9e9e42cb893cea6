// The batched executor (see executor.hpp). The procedure is compiled to a flat list of
// instructions; each processor has a program point; all processors at the same point run its
// instruction together, chunk by chunk, with every variable stored as one column per slot.
#include "exec/executor.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <unordered_map>

#include <fmt/format.h>

#include "exec/timing.hpp"
#include "lang/check.hpp"
#include "util/deadline.hpp"
#include "util/memory.hpp"

namespace collv {

namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
constexpr std::size_t kChunk = 1024;
// A ready list keeps at most this capacity once it is emptied (run_local).
constexpr std::size_t kKeepReady = 4096;
// The most elements one integer array may hold (per node).
constexpr std::int64_t kMaxArrayElements = std::int64_t{1} << 20;
// The most items one local buffer may hold (a message: at most 65535).
constexpr std::uint64_t kMaxBufferItems = 1ULL << 28;

enum class IOp {
  Assign,
  Send,
  Recv,
  JumpIfFalse,
  Jump,
  ForInit,
  ForTest,
  ForNext,
  ArrayInit,
  Irecv,
  Isend,
  Wait
};
// Outstanding nonblocking requests per node (docs/language.md, "Nonblocking point-to-point"):
// a limit of collv, checked before a request is added.
constexpr std::size_t kMaxRequests = 65536;

struct Instr {
  IOp op;
  const Stmt* stmt = nullptr;
  const Expr* cond = nullptr;
  int limit_slot = -1;  // For: hidden slot holding the evaluated limit
  std::uint32_t target = 0;
};

struct Program {
  std::vector<Instr> code;
  int num_slots = 0;  // model variables + hidden loop limits
  // While compiling: the jumps of the `break`s of each enclosing loop, patched at the loop's end.
  std::vector<std::vector<std::uint32_t>> breaks;
};

void compile_block(const std::vector<StmtPtr>& body, Program& prog);

void compile_stmt(const Stmt& s, Program& prog) {
  auto emit = [&](Instr in) {
    prog.code.push_back(in);
    return static_cast<std::uint32_t>(prog.code.size() - 1);
  };
  switch (s.kind) {
    case StmtKind::Assign:
      emit({IOp::Assign, &s});
      break;
    case StmtKind::Send:
      emit({IOp::Send, &s});
      break;
    case StmtKind::Receive:
      emit({IOp::Recv, &s});
      break;
    case StmtKind::Irecv:
      emit({IOp::Irecv, &s});
      break;
    case StmtKind::Isend:
      emit({IOp::Isend, &s});
      break;
    case StmtKind::Wait:
      emit({IOp::Wait, &s});
      break;
    case StmtKind::If: {
      auto jf = emit({IOp::JumpIfFalse, &s, s.cond.get()});
      compile_block(s.body, prog);
      if (s.else_body.empty()) {
        prog.code[jf].target = prog.code.size();
      } else {
        auto j = emit({IOp::Jump, &s});
        prog.code[jf].target = prog.code.size();
        compile_block(s.else_body, prog);
        prog.code[j].target = prog.code.size();
      }
      break;
    }
    case StmtKind::Break:
      prog.breaks.back().push_back(emit({IOp::Jump, &s}));
      break;
    case StmtKind::Array:
      emit({IOp::ArrayInit, &s});
      break;
    case StmtKind::While: {
      auto test = emit({IOp::JumpIfFalse, &s, s.cond.get()});
      prog.breaks.emplace_back();
      compile_block(s.body, prog);
      Instr back{IOp::Jump, &s};
      back.target = test;
      emit(back);
      prog.code[test].target = prog.code.size();
      for (auto j : prog.breaks.back()) prog.code[j].target = prog.code.size();
      prog.breaks.pop_back();
      break;
    }
    case StmtKind::For: {
      int lim = prog.num_slots++;
      Instr init{IOp::ForInit, &s};
      init.limit_slot = lim;
      emit(init);
      Instr test_in{IOp::ForTest, &s};
      test_in.limit_slot = lim;
      auto test = emit(test_in);
      prog.breaks.emplace_back();
      compile_block(s.body, prog);
      Instr next{IOp::ForNext, &s};
      next.target = test;
      emit(next);
      prog.code[test].target = prog.code.size();
      for (auto j : prog.breaks.back()) prog.code[j].target = prog.code.size();
      prog.breaks.pop_back();
      break;
    }
  }
}

void compile_block(const std::vector<StmtPtr>& body, Program& prog) {
  for (const auto& s : body) compile_stmt(*s, prog);
}

// The data variables an expression reads (their values' dependencies flow into its value).
void data_slots_read(const Expr& e, const Model& m, std::vector<int>& out) {
  if (e.kind == ExprKind::Name && e.slot >= 0 && e.slot < static_cast<int>(m.var_types.size()) &&
      m.var_types[e.slot] == Type::Data && std::find(out.begin(), out.end(), e.slot) == out.end())
    out.push_back(e.slot);
  for (const auto& a : e.args) data_slots_read(*a, m, out);
}

bool uses_nonblocking(const std::vector<StmtPtr>& body) {
  for (const auto& s : body)
    if (s->kind == StmtKind::Irecv || s->kind == StmtKind::Isend || s->kind == StmtKind::Wait ||
        uses_nonblocking(s->body) || uses_nonblocking(s->else_body))
      return true;
  return false;
}

// A runtime error of the model at one node.
struct ModelRuntimeError {
  SourceLoc loc;
  NodeId node;
  std::string msg;
};

// b^e for e >= 0 by repeated squaring: at most 63 squarings whatever e is (1^e, 0^e and (-1)^e
// are decided at once), so a huge exponent never loops.
std::int64_t ipow(std::int64_t b, std::int64_t e, bool& overflow) {
  if (e == 0) return 1;
  if (b == 0 || b == 1) return b;
  if (b == -1) return (e & 1) ? -1 : 1;
  std::int64_t r = 1;
  for (;;) {
    if ((e & 1) && __builtin_mul_overflow(r, b, &r)) break;
    e >>= 1;
    if (e == 0) return r;
    if (__builtin_mul_overflow(b, b, &b)) break;  // |b| >= 2 and more factors to come
  }
  overflow = true;
  return 0;
}

// floor(sqrt(x)) for x >= 0, exact on every int64 (no floating-point rounding, no overflow).
std::int64_t isqrt(std::int64_t x) {
  auto u = static_cast<std::uint64_t>(x);
  auto r = static_cast<std::uint64_t>(std::sqrt(static_cast<double>(u)));
  if (r > 3037000499u) r = 3037000499u;  // floor(sqrt(INT64_MAX))
  while (r * r > u) --r;
  while (r < 3037000499u && (r + 1) * (r + 1) <= u) ++r;
  return static_cast<std::int64_t>(r);
}

// Runs the nodes lo .. hi-1 (every node, or a slice of a partitioned run: SliceMachine).
class Machine : public SliceMachine {
 public:
  Machine(const Model& m, const Topology& t, const RunOptions& o, Trace& tr, MemoryWatch& w,
          NodeId lo, NodeId hi)
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
    if (has_nb_) init_nonblocking();
    waiting_on_.assign(n_local_, kNone, lo_);
    blocked_pc_.assign(n_local_, kNone, lo_);
    inbox_.resize(n_local_, lo_);
    ready_.resize(prog_.code.size() + 1);
    queued_.assign(prog_.code.size() + 1, 0);
  }

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

  // Messages still queued when the run ends: sent, never received (ascending transfer ids).
  std::vector<std::uint32_t> unreceived() const {
    std::vector<std::uint32_t> out;
    inbox_.append_all(out);
    std::sort(out.begin(), out.end());
    return out;
  }

  void run() {
    start();
    run_local();
    if (tr_.failure.kind == RunFailure::Kind::None && finished_ < n_local_) report_deadlock();
  }

  // SliceMachine (partitioned runs; run() for a whole one).
  void start() override {
    auto& all = ready_[0];
    all.resize(n_local_);
    for (NodeId v = lo_; v < hi_; ++v) all[v - lo_] = v;
    mark_ready(0);
  }
  std::vector<RemoteSend>& outbox() override { return outbox_; }
  void deliver(NodeId src, NodeId dst, std::uint16_t len, std::uint16_t line, std::uint32_t origin,
               Buffer&& payload, std::uint32_t& tid) override {
    stream_->make_room();
    tid = stream_->on_arrive(src, dst, len, line, origin, std::move(payload));
    inbox_.push(dst, tid);
    wake(src, dst);
  }
  StreamTiming& timing() override { return *stream_; }
  void set_horizon(std::uint32_t h) override {
    COLLV_ASSERT(h == 0 || opts_.port == PortModel::Single);
    horizon_ = h;
    for (auto [pc, v] : held_) {
      ready_[pc].push_back(v);
      mark_ready(pc);
    }
    held_.clear();
  }
  std::uint64_t held() const override { return held_.size(); }
  void run_receives() override {
    no_sends_ = true;
    run_local();
    no_sends_ = false;
  }
  std::uint64_t unfinished() const override { return n_local_ - finished_; }
  std::vector<std::pair<NodeId, NodeId>> waiting() const override {
    std::vector<std::pair<NodeId, NodeId>> w;
    for (NodeId v = lo_; v < hi_; ++v)
      if (waiting_on_[v] != kNone) w.emplace_back(v, waiting_on_[v]);
    return w;
  }
  SourceLoc blocked_at(NodeId v) const override { return prog_.code[blocked_pc_[v]].stmt->loc; }

  // Runs until every node finished or waits for a message (or the run fails).
  void run_local() override {
    std::uint64_t op_budget = sat_mul(opts_.max_ops_per_node, std::max<std::uint64_t>(n_local_, 1));
    std::vector<NodeId> batch;
    for (;;) {
      // The lowest program point with waiting nodes. A heap of the non-empty points keeps this
      // O(log n): scanning ready_ from 0 made a run quadratic in the program's length.
      if (pending_.empty()) break;
      std::uint32_t pc = pending_.top();
      pending_.pop();
      queued_[pc] = 0;
      if (ready_[pc].empty()) continue;
      batch.clear();
      batch.swap(ready_[pc]);
      // The list gets batch's old storage; a large one is given back rather than left at this
      // point: swapped from point to point, every list kept the capacity of the largest batch
      // (about 64 bytes a node at star:9, a dozen points of 4 bytes a node and their doubling).
      if (ready_[pc].capacity() > kKeepReady) std::vector<NodeId>().swap(ready_[pc]);
      if (pc == prog_.code.size()) {  // finished
        finished_ += batch.size();
        continue;
      }
      if ((horizon_ != 0 || no_sends_) && prog_.code[pc].op == IOp::Send) {  // hold at the horizon
        std::size_t keep = 0;
        for (NodeId v : batch) {
          if (!no_sends_ && bound_.sends(v) < horizon_)
            batch[keep++] = v;
          else
            held_.emplace_back(pc, v);
        }
        batch.resize(keep);
        if (batch.empty()) continue;
      }
      if (!std::is_sorted(batch.begin(), batch.end())) std::sort(batch.begin(), batch.end());
      ops_ += batch.size();
      if ((++dispatches_ & 0xFFF) == 0) watch_.check();
      if ((dispatches_ & 0xFF) == 0 && deadline_passed())  // --timeout: exit 3
        check_deadline(fmt::format("running {} on {}", m_.header.name, topo_.spec()));
      if (ops_ > op_budget) {
        fail(RunFailure::Kind::OpLimit,
             fmt::format("the run exceeded {} operations per node on average (a loop that never "
                         "ends?); raise --max-ops to allow more",
                         opts_.max_ops_per_node));
        return;
      }
      for (std::size_t off = 0; off < batch.size(); off += kChunk) {
        std::size_t cnt = std::min(kChunk, batch.size() - off);
        try {
          exec(pc, batch.data() + off, cnt);
        } catch (const ModelRuntimeError& e) {
          fail(RunFailure::Kind::RuntimeError,
               fmt::format("{}: runtime error at node {} ({}): {}", e.loc.str(), e.node,
                           topo_.label(e.node), e.msg));
          return;
        }
        if (tr_.failure.kind != RunFailure::Kind::None) return;
      }
    }
  }

 private:
  void mark_ready(std::uint32_t pc) {
    if (queued_[pc] || ready_[pc].empty()) return;
    queued_[pc] = 1;
    pending_.push(pc);
  }

  void fail(RunFailure::Kind k, std::string msg) {
    tr_.failure.kind = k;
    tr_.failure.message = std::move(msg);
  }

  void report_deadlock() {
    std::vector<NodeId> waiting;
    for (NodeId v = lo_; v < hi_; ++v)
      if (waiting_on_[v] != kNone) waiting.push_back(v);
    COLLV_ASSERT(!waiting.empty());
    // Before the move: the order in which arguments are evaluated is unspecified (clang moved
    // `waiting` first and read front() of an empty vector; the fuzz_run harness found it).
    const auto at = blocked_at(waiting.front());
    tr_.failure = deadlock_failure(
        topo_, std::move(waiting), [&](NodeId v) { return waiting_on_[v]; }, at);
  }

  [[noreturn]] void rt_error(const Expr& e, NodeId v, std::string msg) {
    throw ModelRuntimeError{e.loc, v, std::move(msg)};
  }
  [[noreturn]] void rt_error(const Stmt& s, NodeId v, std::string msg) {
    throw ModelRuntimeError{s.loc, v, std::move(msg)};
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

  std::int64_t env_value(const Expr& e, NodeId v) {
    const std::string& n = e.name;
    auto dir = [&](Direction d) -> std::int64_t {
      auto r = topo_.direction(v, d);
      if (!r) rt_error(e, v, "'" + n + "' does not exist at this node");
      return *r;
    };
    switch (n[0]) {
      case 'm':
        if (n == "my_id") return v;
        if (n == "m") return m_.header.elements ? 1 : opts_.count;  // the message's items
        break;
      case 'p':
        return p_;
      case 'd':
        if (n == "d") return d_;
        return dir(Direction::Down);
      case 'n':
        return n_;
      case 'r':
        if (n == "rows") return rows_;
        if (n == "root") return opts_.root;
        return dir(Direction::Right);
      case 'c':
        if (n == "count") return opts_.count;
        return cols_;
      case 's':
        return opts_.root;
      case 'q':
        return opts_.shift;
      case 'l':
        return dir(Direction::Left);
      case 'u':
        return dir(Direction::Up);
    }
    rt_error(e, v, "unknown name '" + n + "'");
  }

  void eval_int(const Expr& e, const NodeId* nodes, std::size_t cnt, std::int64_t* out, int depth) {
    switch (e.kind) {
      case ExprKind::Number:
        std::fill(out, out + cnt, e.value);
        return;
      case ExprKind::Name:
        if (e.slot >= 0) {
          const auto& col = ints_[e.slot];
          for (std::size_t i = 0; i < cnt; ++i) {
            if (!col.assigned(nodes[i]))
              rt_error(e, nodes[i], "'" + e.name + "' is read before it is assigned");
            out[i] = col.get(nodes[i]);
          }
        } else {
          for (std::size_t i = 0; i < cnt; ++i) out[i] = env_value(e, nodes[i]);
        }
        return;
      case ExprKind::Unary: {
        eval_int(*e.args[0], nodes, cnt, out, depth + 1);
        for (std::size_t i = 0; i < cnt; ++i) {
          if (e.op == Op::Neg) {
            if (out[i] == std::numeric_limits<std::int64_t>::min())
              rt_error(e, nodes[i], fmt::format("integer overflow: -({})", out[i]));
            out[i] = -out[i];
          } else if (e.op == Op::BitNot)
            out[i] = ~out[i];
          else
            out[i] = out[i] == 0;
        }
        return;
      }
      case ExprKind::Binary: {
        eval_int(*e.args[0], nodes, cnt, out, depth + 1);
        auto& b = iscratch(depth);
        eval_int(*e.args[1], nodes, cnt, b.data(), depth + 1);
        for (std::size_t i = 0; i < cnt; ++i) {
          std::int64_t x = out[i], y = b[i];
          std::int64_t r = 0;
          switch (e.op) {
            case Op::Add:
              if (__builtin_add_overflow(x, y, &r))
                rt_error(e, nodes[i], fmt::format("integer overflow: {} + {}", x, y));
              break;
            case Op::Sub:
              if (__builtin_sub_overflow(x, y, &r))
                rt_error(e, nodes[i], fmt::format("integer overflow: {} - {}", x, y));
              break;
            case Op::Mul:
              if (__builtin_mul_overflow(x, y, &r))
                rt_error(e, nodes[i], fmt::format("integer overflow: {} * {}", x, y));
              break;
            case Op::Div:
            case Op::IntDiv:
              if (y == 0) rt_error(e, nodes[i], "division by zero");
              if (y == -1 && x == std::numeric_limits<std::int64_t>::min())
                rt_error(
                    e, nodes[i],
                    fmt::format("integer overflow: {} {} -1", x, e.op == Op::Div ? "/" : "div"));
              r = x / y;
              if ((x % y != 0) && ((x < 0) != (y < 0))) --r;  // floor
              break;
            case Op::Mod:
              if (y == 0) rt_error(e, nodes[i], "'mod 0'");
              r = y == -1 ? 0 : x % y;  // INT64_MIN % -1 traps on x86; every x mod -1 is 0
              if (r < 0) r = y < 0 ? r - y : r + y;  // |r| < |y|: no overflow, not even -y
              break;
            case Op::Pow: {
              if (y < 0) rt_error(e, nodes[i], fmt::format("negative exponent {}", y));
              bool of = false;
              r = ipow(x, y, of);
              if (of) rt_error(e, nodes[i], fmt::format("{}^{} overflows", x, y));
              break;
            }
            case Op::BitXor:
              r = x ^ y;
              break;
            case Op::BitAnd:
              r = x & y;
              break;
            case Op::BitOr:
              r = x | y;
              break;
            case Op::Eq:
              r = x == y;
              break;
            case Op::Ne:
              r = x != y;
              break;
            case Op::Lt:
              r = x < y;
              break;
            case Op::Le:
              r = x <= y;
              break;
            case Op::Gt:
              r = x > y;
              break;
            case Op::Ge:
              r = x >= y;
              break;
            case Op::And:
              r = (x != 0) && (y != 0);
              break;
            case Op::Or:
              r = (x != 0) || (y != 0);
              break;
            default:
              rt_error(e, nodes[i], "operator not defined on numbers");
          }
          out[i] = r;
        }
        return;
      }
      case ExprKind::Index: {
        const Expr& a = *e.args[0];
        if (a.slot < 0 || m_.var_types[static_cast<std::size_t>(a.slot)] != Type::IntArray)
          rt_error(e, nodes[0], "a buffer where a number is needed");
        eval_int(*e.args[1], nodes, cnt, out, depth + 1);
        for (std::size_t i = 0; i < cnt; ++i) {
          const auto& arr = arrays_[a.slot][nodes[i]];
          if (out[i] < 0 || out[i] >= static_cast<std::int64_t>(arr.size()))
            rt_error(e, nodes[i],
                     arr.empty() && !array_declared(a.slot, nodes[i])
                         ? fmt::format("'{}' is used before its 'array' statement ran", a.name)
                         : fmt::format("index {} is out of range for '{}' of {} elements", out[i],
                                       a.name, arr.size()));
          out[i] = arr[static_cast<std::size_t>(out[i])];
        }
        return;
      }
      case ExprKind::Cond: {
        // Per node, only the branch taken is evaluated (the other may divide by zero there).
        std::vector<std::int64_t> c(cnt);
        eval_int(*e.args[0], nodes, cnt, c.data(), depth + 1);
        for (int branch = 1; branch <= 2; ++branch) {
          std::vector<NodeId> sub;
          std::vector<std::size_t> at;
          for (std::size_t i = 0; i < cnt; ++i)
            if ((c[i] != 0) == (branch == 1)) {
              sub.push_back(nodes[i]);
              at.push_back(i);
            }
          if (sub.empty()) continue;
          std::vector<std::int64_t> val(sub.size());
          eval_int(*e.args[static_cast<std::size_t>(branch)], sub.data(), sub.size(), val.data(),
                   depth + 1);
          for (std::size_t k = 0; k < sub.size(); ++k) out[at[k]] = val[k];
        }
        return;
      }
      case ExprKind::Call: {
        if (e.name == "len") {
          auto& d = dscratch(depth);
          eval_data(*e.args[0], nodes, cnt, d.data(), depth + 1);
          for (std::size_t i = 0; i < cnt; ++i) out[i] = d[i].size();
          return;
        }
        if (e.name == "counts" || e.name == "displs" || e.name == "sdispls" ||
            e.name == "rdispls") {
          eval_v_count(e, nodes, cnt, out, depth);
          return;
        }
        eval_int(*e.args[0], nodes, cnt, out, depth + 1);
        if (e.name == "min" || e.name == "max") {
          auto& b = iscratch(depth);
          eval_int(*e.args[1], nodes, cnt, b.data(), depth + 1);
          for (std::size_t i = 0; i < cnt; ++i)
            out[i] = e.name == "min" ? std::min(out[i], b[i]) : std::max(out[i], b[i]);
          return;
        }
        for (std::size_t i = 0; i < cnt; ++i) {
          std::int64_t x = out[i];
          if (e.name == "neighbor") {
            if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
              rt_error(e, nodes[i], fmt::format("no link {} at this node", x));
            auto r = topo_.neighbor(nodes[i], static_cast<int>(x));
            if (!r) rt_error(e, nodes[i], fmt::format("no link {} at this node", x));
            out[i] = *r;
          } else if (e.name == "log2") {
            if (x <= 0) rt_error(e, nodes[i], fmt::format("log2({}) is undefined", x));
            out[i] = 63 - __builtin_clzll(static_cast<unsigned long long>(x));
          } else {  // sqrt
            if (x < 0) rt_error(e, nodes[i], fmt::format("sqrt({}) is undefined", x));
            out[i] = isqrt(x);
          }
        }
        return;
      }
      default:
        rt_error(e, nodes[0], "a buffer where a number is needed");
    }
  }

  // counts(j), displs(j) (the prefix sum: MPI's default displacements); alltoallv's
  // counts(i, j), sdispls(i, j) (where rank i's block for j starts), rdispls(i, j) (where rank
  // j's block from i starts). Ranks out of range are runtime errors.
  void eval_v_count(const Expr& e, const NodeId* nodes, std::size_t cnt, std::int64_t* out,
                    int depth) {
    eval_int(*e.args[0], nodes, cnt, out, depth + 1);
    std::vector<std::int64_t> b(cnt, 0);
    if (e.args.size() > 1) eval_int(*e.args[1], nodes, cnt, b.data(), depth + 1);
    const std::int64_t c = opts_.count, p = p_;
    for (std::size_t i = 0; i < cnt; ++i) {
      std::int64_t x = out[i], y = b[i];
      if (x < 0 || x >= p || (e.args.size() > 1 && (y < 0 || y >= p)))
        rt_error(e, nodes[i],
                 e.args.size() > 1
                     ? fmt::format("{}({}, {}): rank out of range (p = {})", e.name, x, y, p)
                     : fmt::format("{}({}): rank out of range (p = {})", e.name, x, p));
      std::int64_t r = 0;
      if (e.name == "counts") {
        r = e.args.size() > 1 ? v_pair_count(c, x, y) : v_count(c, x);
      } else if (e.name == "displs") {
        r = v_displs(c, x);
      } else if (e.name == "sdispls") {
        r = v_sdispls(c, x, y);
      } else {  // rdispls
        r = v_rdispls(c, x, y);
      }
      out[i] = r;
    }
  }

  void eval_data(const Expr& e, const NodeId* nodes, std::size_t cnt, Buffer* out, int depth) {
    switch (e.kind) {
      case ExprKind::Number:  // 0: the identity item
        for (std::size_t i = 0; i < cnt; ++i) {
          out[i].clear();
          out[i].push_back(0);
        }
        return;
      case ExprKind::EmptyBuf:
        for (std::size_t i = 0; i < cnt; ++i) out[i].clear();
        return;
      case ExprKind::Name: {
        const auto& col = data_[e.slot];
        std::uint64_t items = 0;
        for (std::size_t i = 0; i < cnt; ++i) items += col.size_at(nodes[i]);
        charge_items(items);
        ops_ += items;  // work: each item copied is an operation (--max-ops)
        for (std::size_t i = 0; i < cnt; ++i) col.get(nodes[i], out[i]);
        return;
      }
      case ExprKind::Binary: {
        const Expr& a = *e.args[0];
        const Expr& b = *e.args[1];
        bool a_zero = a.kind == ExprKind::Number, b_zero = b.kind == ExprKind::Number;
        if (e.op == Op::Add && (a_zero || b_zero)) {  // 0 + x = x + 0 = x, whatever x's length
          eval_data(a_zero ? b : a, nodes, cnt, out, depth + 1);
          return;
        }
        eval_data(a, nodes, cnt, out, depth + 1);
        auto& rhs = dscratch(depth);
        eval_data(b, nodes, cnt, rhs.data(), depth + 1);
        if (e.op == Op::Union) {
          std::uint64_t items = 0;
          for (std::size_t i = 0; i < cnt; ++i) {
            std::uint64_t n = std::uint64_t{out[i].size()} + rhs[i].size();
            check_buffer_size(e, nodes[i], n);
            items += rhs[i].size();
          }
          charge_items(items);
          ops_ += items;
        } else {
          for (std::size_t i = 0; i < cnt; ++i) ops_ += out[i].size();  // items combined
        }
        for (std::size_t i = 0; i < cnt; ++i) {
          Buffer& x = out[i];
          const Buffer& y = rhs[i];
          if (e.op == Op::Union) {
            for (Item it : y) x.push_back(it);
          } else {
            if (x.size() != y.size())
              rt_error(
                  e, nodes[i],
                  fmt::format("'+' combines buffers item by item, but they hold {} and {} items",
                              x.size(), y.size()));
            if (opts_.on_combine)
              for (std::uint32_t k = 0; k < x.size(); ++k) opts_.on_combine(nodes[i], x[k], y[k]);
            for (std::uint32_t k = 0; k < x.size(); ++k) x[k] = dom_->combine(x[k], y[k]);
          }
        }
        return;
      }
      case ExprKind::Index:
      case ExprKind::Slice: {
        // Positions of a variable are read in place: `x[a .. b]` costs b - a + 1 items, not a
        // copy of all of x (a ring that sends one block of its result per step was quadratic).
        const bool direct = e.args[0]->kind == ExprKind::Name;
        auto& base = dscratch(depth);
        if (!direct) eval_data(*e.args[0], nodes, cnt, base.data(), depth + 1);
        auto& lo = iscratch(depth);
        eval_int(*e.args[1], nodes, cnt, lo.data(), depth + 1);
        std::vector<std::int64_t> hi_store;
        if (e.kind == ExprKind::Slice) {
          hi_store.resize(cnt);
          eval_int(*e.args[2], nodes, cnt, hi_store.data(), depth + 1);
        }
        for (std::size_t i = 0; i < cnt; ++i) {
          std::int64_t a = lo[i];
          std::int64_t b = e.kind == ExprKind::Slice ? hi_store[i] : a;
          const std::uint32_t src_size =
              direct ? data_[e.args[0]->slot].size_at(nodes[i]) : base[i].size();
          // An empty slice reads nothing, wherever it starts (a segment past the data's end).
          if (e.kind == ExprKind::Slice && a >= 0 && b == a - 1) {
            out[i].clear();
            continue;
          }
          if (a < 0 || b < a || b >= static_cast<std::int64_t>(src_size))
            rt_error(
                e, nodes[i],
                e.kind == ExprKind::Index
                    ? fmt::format("index {} is out of range for a buffer of {} items", a, src_size)
                    : fmt::format("slice [{} .. {}] is out of range for a buffer of {} items", a, b,
                                  src_size));
          charge_items(static_cast<std::uint64_t>(b - a + 1));
          ops_ += static_cast<std::uint64_t>(b - a + 1);
          const Item* src = direct ? data_[e.args[0]->slot].items(nodes[i]) : base[i].data();
          out[i].assign(src + a, static_cast<std::uint32_t>(b - a + 1));
        }
        return;
      }
      default:
        rt_error(e, nodes[0], "a number where a buffer is needed");
    }
  }

  // Stores `val` into the target lvalue at each node. A receive (`receive`) may bring fewer
  // items than a slice or index target has positions, as MPI's receive count is an upper bound:
  // the message fills the first positions and the rest stays as it was (never extended). More
  // items than positions is MPI's truncation error, a runtime error here as everywhere.
  void store(const Expr& target, const NodeId* nodes, std::size_t cnt, Buffer* val, int depth,
             bool receive = false) {
    if (target.kind == ExprKind::Name) {
      auto& col = data_[target.slot];
      for (std::size_t i = 0; i < cnt; ++i) col.set(nodes[i], std::move(val[i]));
      return;
    }
    if (target.args[0]->kind != ExprKind::Name)
      rt_error(target, nodes[0], "only one level of indexing can be assigned");
    auto& col = data_[target.args[0]->slot];
    auto& lo = iscratch(depth);
    eval_int(*target.args[1], nodes, cnt, lo.data(), depth + 1);
    std::vector<std::int64_t> hi(cnt);
    if (target.kind == ExprKind::Slice) {
      eval_int(*target.args[2], nodes, cnt, hi.data(), depth + 1);
    } else {
      for (std::size_t i = 0; i < cnt; ++i) hi[i] = lo[i];
    }
    for (std::size_t i = 0; i < cnt; ++i) {
      std::int64_t a = lo[i], b = hi[i];
      check_positions(target, nodes[i], a, b, "assign to");
      if (receive && val[i].size() > static_cast<std::uint64_t>(b - a + 1))
        rt_error(target, nodes[i],
                 fmt::format("a message of {} items is received into {} positions (MPI's "
                             "truncation error: a receive may be larger than its message, "
                             "never smaller)",
                             val[i].size(), b - a + 1));
      if (receive) b = a + static_cast<std::int64_t>(val[i].size()) - 1;
      if (val[i].size() != static_cast<std::uint64_t>(b - a + 1))
        rt_error(target, nodes[i],
                 fmt::format("assigning {} items to {} positions", val[i].size(), b - a + 1));
      if (b == a - 1) continue;  // an empty slice writes nothing and does not extend the buffer
      Buffer& dst = col.edit(nodes[i]);
      ops_ += static_cast<std::uint64_t>(b - a + 1);  // work: items written (--max-ops)
      if (static_cast<std::int64_t>(dst.size()) <= b) {
        charge_items(static_cast<std::uint64_t>(b + 1 - dst.size()));
        ops_ += static_cast<std::uint64_t>(b + 1 - dst.size());  // and the positions filled
        dst.resize(static_cast<std::uint32_t>(b + 1), 0);
      }
      for (std::int64_t k = a; k <= b; ++k)
        dst[static_cast<std::uint32_t>(k)] = val[i][static_cast<std::uint32_t>(k - a)];
      col.settle(nodes[i]);
    }
  }

  // A union that would make a buffer of n items: past 2^28 a limit of collv (exit 3).
  void check_buffer_size(const Expr& e, NodeId v, std::uint64_t n) {
    if (n > kMaxBufferItems)
      throw LimitError(fmt::format(
          "{}: at node {} ({}) a buffer would hold {} items; a buffer may hold at most {}",
          e.loc.str(), v, topo_.label(v), n, kMaxBufferItems));
  }

  // Positions a .. b of a buffer that a statement writes: before the first position is the
  // model's fault; past 2^28 items (kMaxBufferItems) a limit of collv (exit 3).
  void check_positions(const Expr& target, NodeId v, std::int64_t a, std::int64_t b,
                       const char* verb) {
    if (a < 0 || b < a - 1)
      rt_error(target, v, fmt::format("cannot {} positions [{} .. {}]", verb, a, b));
    if (b >= static_cast<std::int64_t>(kMaxBufferItems))
      throw LimitError(fmt::format(
          "{}: at node {} ({}) positions [{} .. {}] lie past the {} items a buffer may hold (a "
          "limit of collv, not a fault of the model)",
          target.loc.str(), v, topo_.label(v), a, b, kMaxBufferItems));
  }

  NodeId peer_of(const Stmt& s, NodeId v, std::int64_t x) {
    if (s.along_link) {
      if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
        rt_error(*s.peer, v, fmt::format("no link {} at this node", x));
      auto r = topo_.neighbor(v, static_cast<int>(x));
      if (!r) rt_error(*s.peer, v, fmt::format("no link {} at this node", x));
      return *r;
    }
    if (x < 0 || x >= static_cast<std::int64_t>(p_))
      rt_error(*s.peer, v, fmt::format("node {} does not exist (p = {})", x, p_));
    return static_cast<NodeId>(x);  // may be v itself: a self-message (no link, no port)
  }

  void exec(std::uint32_t pc, const NodeId* nodes, std::size_t cnt) {
    const Instr& in = prog_.code[pc];
    const Stmt& s = *in.stmt;
    auto advance_all = [&](std::uint32_t to) {
      auto& r = ready_[to];
      r.insert(r.end(), nodes, nodes + cnt);
      mark_ready(to);
    };
    if (has_nb_ && (!acc_[pc].reads.empty() || acc_[pc].write >= 0)) check_access(pc, nodes, cnt);
    switch (in.op) {
      case IOp::Assign: {
        const Expr& tgt = *s.target;
        int slot = tgt.kind == ExprKind::Name ? tgt.slot : -1;
        if (slot >= 0 && m_.var_types[slot] == Type::Int) {
          auto& v = iscratch(0);
          eval_int(*s.value, nodes, cnt, v.data(), 1);
          for (std::size_t i = 0; i < cnt; ++i) ints_[slot].set(nodes[i], v[i]);
        } else if (tgt.kind == ExprKind::Index && tgt.args[0]->slot >= 0 &&
                   m_.var_types[static_cast<std::size_t>(tgt.args[0]->slot)] == Type::IntArray) {
          const int as = tgt.args[0]->slot;
          auto& v = iscratch(0);
          eval_int(*s.value, nodes, cnt, v.data(), 1);
          std::vector<std::int64_t> at(cnt);
          eval_int(*tgt.args[1], nodes, cnt, at.data(), 1);
          for (std::size_t i = 0; i < cnt; ++i) {
            auto& arr = arrays_[as][nodes[i]];
            if (at[i] < 0 || at[i] >= static_cast<std::int64_t>(arr.size()))
              rt_error(tgt, nodes[i],
                       arr.empty() && !array_declared(as, nodes[i])
                           ? fmt::format("'{}' is used before its 'array' statement ran",
                                         tgt.args[0]->name)
                           : fmt::format("index {} is out of range for '{}' of {} elements", at[i],
                                         tgt.args[0]->name, arr.size()));
            arr[static_cast<std::size_t>(at[i])] = v[i];
          }
        } else if (slot >= 0 && s.value->kind == ExprKind::Binary && s.value->op == Op::Union &&
                   s.value->args[0]->kind == ExprKind::Name && s.value->args[0]->slot == slot) {
          // `x := x ∪ y` appends y in place: its work is y's items, not a copy of x (a result
          // that grows by a block a step was quadratic in its length).
          const Expr& y = *s.value->args[1];
          auto& v = dscratch(0);
          eval_data(y, nodes, cnt, v.data(), 1);
          auto& col = data_[slot];
          std::uint64_t items = 0;
          for (std::size_t i = 0; i < cnt; ++i) {
            std::uint64_t n = std::uint64_t{col.size_at(nodes[i])} + v[i].size();
            check_buffer_size(*s.value, nodes[i], n);
            items += v[i].size();
          }
          charge_items(items);
          ops_ += items;
          for (std::size_t i = 0; i < cnt; ++i) {
            if (v[i].empty()) continue;
            Buffer& dst = col.edit(nodes[i]);
            for (Item it : v[i]) dst.push_back(it);
            col.settle(nodes[i]);
          }
          track_assign(pc, tgt, nodes, cnt);
        } else {
          auto& v = dscratch(0);
          eval_data(*s.value, nodes, cnt, v.data(), 1);
          store(tgt, nodes, cnt, v.data(), 1);
          track_assign(pc, tgt, nodes, cnt);
        }
        advance_all(pc + 1);
        return;
      }
      case IOp::ArrayInit: {
        auto& n = iscratch(0);
        eval_int(*s.value, nodes, cnt, n.data(), 1);
        for (std::size_t i = 0; i < cnt; ++i) {
          if (n[i] < 0 || n[i] > kMaxArrayElements)
            rt_error(*s.value, nodes[i],
                     fmt::format("array '{}' of {} elements (at most {})", s.var, n[i],
                                 kMaxArrayElements));
          auto& arr = arrays_[s.var_slot][nodes[i]];
          // Work, not statements: an array of n elements costs n operations (a loop that makes
          // a fresh array of 2^20 elements for ever meets --max-ops, not only the memory limit).
          ops_ += static_cast<std::uint64_t>(n[i]);
          if (n[i] > 2 * static_cast<std::int64_t>(kChunk))
            watch_.charge(static_cast<std::uint64_t>(n[i]) * sizeof(std::int64_t));
          arr.assign(static_cast<std::size_t>(n[i]), 0);
          array_ran_[s.var_slot][nodes[i]] = 1;
        }
        advance_all(pc + 1);
        return;
      }
      case IOp::JumpIfFalse: {
        auto& c = iscratch(0);
        eval_int(*in.cond, nodes, cnt, c.data(), 1);
        std::size_t taken = 0;
        for (std::size_t i = 0; i < cnt; ++i) taken += c[i] != 0;
        if (taken == cnt || taken == 0) {  // the whole chunk goes one way: one copy
          advance_all(taken ? pc + 1 : in.target);
          return;
        }
        for (std::size_t i = 0; i < cnt; ++i) ready_[c[i] ? pc + 1 : in.target].push_back(nodes[i]);
        mark_ready(pc + 1);
        mark_ready(in.target);
        return;
      }
      case IOp::Jump:
        advance_all(in.target);
        return;
      case IOp::ForInit: {
        auto& a = iscratch(0);
        eval_int(*s.value, nodes, cnt, a.data(), 1);
        for (std::size_t i = 0; i < cnt; ++i) ints_[s.var_slot].set(nodes[i], a[i]);
        eval_int(*s.limit, nodes, cnt, a.data(), 1);
        for (std::size_t i = 0; i < cnt; ++i) ints_[in.limit_slot].set(nodes[i], a[i]);
        advance_all(pc + 1);
        return;
      }
      case IOp::ForTest: {
        const auto& var = ints_[s.var_slot];
        const auto& lim = ints_[in.limit_slot];
        std::size_t go_on = 0;
        for (std::size_t i = 0; i < cnt; ++i) {
          NodeId v = nodes[i];
          go_on += s.downto ? var.get(v) >= lim.get(v) : var.get(v) <= lim.get(v);
        }
        if (go_on == cnt || go_on == 0) {  // the whole chunk goes one way: one copy
          advance_all(go_on ? pc + 1 : in.target);
          return;
        }
        for (std::size_t i = 0; i < cnt; ++i) {
          NodeId v = nodes[i];
          bool go = s.downto ? var.get(v) >= lim.get(v) : var.get(v) <= lim.get(v);
          ready_[go ? pc + 1 : in.target].push_back(v);
        }
        mark_ready(pc + 1);
        mark_ready(in.target);
        return;
      }
      case IOp::ForNext: {
        // A counter at INT64_MAX (`to`) or INT64_MIN (`downto`) has no next value: the loop ends
        // there (the variable keeps it) instead of wrapping round and running again.
        auto& var = ints_[s.var_slot];
        const std::uint32_t exit_pc = prog_.code[in.target].target;
        const std::int64_t last = s.downto ? std::numeric_limits<std::int64_t>::min()
                                           : std::numeric_limits<std::int64_t>::max();
        bool any_exit = false;
        std::size_t at_last = 0;
        for (std::size_t i = 0; i < cnt; ++i) at_last += var.get(nodes[i]) == last;
        if (at_last == 0) {  // the usual case: every counter moves on
          const std::int64_t d = s.downto ? -1 : 1;
          for (std::size_t i = 0; i < cnt; ++i) var.set(nodes[i], var.get(nodes[i]) + d);
          advance_all(in.target);
          return;
        }
        for (std::size_t i = 0; i < cnt; ++i) {
          NodeId v = nodes[i];
          if (var.get(v) == last) {
            ready_[exit_pc].push_back(v);
            any_exit = true;
          } else {
            var.set(v, var.get(v) + (s.downto ? -1 : 1));
            ready_[in.target].push_back(v);
          }
        }
        if (any_exit) mark_ready(exit_pc);
        mark_ready(in.target);
        return;
      }
      case IOp::Irecv:
        post_irecv(pc, nodes, cnt);
        return;
      case IOp::Wait:
        run_wait(pc, nodes, cnt);
        return;
      case IOp::Isend:
        post_isend(pc, nodes, cnt);
        [[fallthrough]];  // the transfer itself is a send's (sends are buffered)
      case IOp::Send: {
        auto& val = dscratch(0);
        eval_data(*s.value, nodes, cnt, val.data(), 1);
        auto& peer = iscratch(0);
        eval_int(*s.peer, nodes, cnt, peer.data(), 1);
        // The destinations first, so that the loop below can prefetch each one's mailbox ahead
        // of its use (at star:10 and beyond they are cache misses). A node whose peer is an
        // error stops the loop there, as it did when peers were found one send at a time.
        auto& dsts = iscratch(1);
        std::size_t good = 0;
        try {
          for (; good < cnt; ++good) dsts[good] = peer_of(s, nodes[good], peer[good]);
        } catch (const ModelRuntimeError&) {
        }
        constexpr std::size_t kAhead = 8;
        for (std::size_t i = 0; i < good; ++i) {
          if (i + kAhead < good) {
            const auto ahead = static_cast<NodeId>(dsts[i + kAhead]);
            __builtin_prefetch(inbox_.front_addr(ahead), 1);
            __builtin_prefetch(&waiting_on_[ahead], 0);
          }
          NodeId v = nodes[i];
          const auto dst = static_cast<NodeId>(dsts[i]);
          if (dst == v) {  // a self-message: queued at the node, no transfer, no step
            self_send(s, pc, v, std::move(val[i]));
            continue;
          }
          std::uint32_t step = bound_.on_send(v, dst);  // a lower bound; timing.cpp assigns it
          max_step_ = std::max(max_step_, step);
          if (step > opts_.max_steps) {
            fail(RunFailure::Kind::StepLimit,
                 fmt::format("{}: node {} would send at step {} or later, past the step limit {} "
                             "(raise --max-steps to allow more)",
                             s.loc.str(), topo_.label(v), step, opts_.max_steps));
            return;
          }
          if (val[i].size() > 0xFFFF)  // a limit of collv's Trace, not an error of the model
            throw LimitError(fmt::format(
                "{}: node {} sends a message of {} items; collv records at most 65535 items per "
                "message (a limit of collv, not a fault of the model)",
                s.loc.str(), topo_.label(v), val[i].size()));
          std::uint32_t tid;
          if (stream_) {
            // A peer reached along a link is a neighbour by construction: no test (at star:11
            // each one unranks two permutations).
            if (!s.along_link && !topo_.adjacent(v, dst))
              throw StreamRefused(fmt::format(
                  "{}: node {} sends to {}, which is not its neighbour; the link loads of routed "
                  "transfers need the stored trace (a streamed run follows neighbour transfers "
                  "only)",
                  s.loc.str(), topo_.label(v), topo_.label(dst)));
            stream_->make_room();
            if (dst < lo_ || dst >= hi_) {  // another process's node (partitioned runs)
              const auto len = static_cast<std::uint16_t>(val[i].size());
              const auto line = static_cast<std::uint16_t>(std::min(s.loc.line, 0xFFFF));
              tid = stream_->on_send_remote(v, dst, deps_of(pc, v));
              outbox_.push_back({tid, v, dst, len, line, std::move(val[i])});
              continue;
            }
            tid = stream_->on_send(v, dst, static_cast<std::uint16_t>(val[i].size()),
                                   static_cast<std::uint16_t>(std::min(s.loc.line, 0xFFFF)),
                                   deps_of(pc, v), std::move(val[i]));
            inbox_.push(dst, tid);
            wake(v, dst);
            continue;
          }
          if (tr_.payload.size() + val[i].size() > std::numeric_limits<std::uint32_t>::max() ||
              tr_.transfers.size() >= std::numeric_limits<std::uint32_t>::max() - 1)
            throw LimitError("the run records more than 2^32 transfers or items; it is too large");
          tid = static_cast<std::uint32_t>(tr_.transfers.size());
          charge_growth(tr_.payload, val[i].size());
          charge_growth(tr_.transfers, 1);
          tr_.transfers.push_back(
              Transfer{step, v, dst, static_cast<std::uint32_t>(tr_.payload.size()),
                       static_cast<std::uint16_t>(val[i].size()),
                       static_cast<std::uint16_t>(std::min(s.loc.line, 0xFFFF))});
          tr_.payload.insert(tr_.payload.end(), val[i].begin(), val[i].end());
          timing_.on_send(dep_transfer(deps_of(pc, v)));
          if (m_.header.collective == Collective::Barrier) tr_.events.push_back(tid << 1);
          inbox_.push(dst, tid);
          wake(v, dst);
        }
        if (good < cnt) (void)peer_of(s, nodes[good], peer[good]);  // throws its error
        const std::uint64_t issued = stream_ ? stream_->issued() : tr_.transfers.size();
        if ((issued & 0xFFFF) < cnt) {
          check_memory();
          if (opts_.progress) opts_.progress(issued, max_step_);
        }
        advance_all(pc + 1);
        return;
      }
      case IOp::Recv: {
        auto& peer = iscratch(0);
        eval_int(*s.peer, nodes, cnt, peer.data(), 1);
        // Nodes whose message is there receive now; the others wait at this instruction.
        std::vector<NodeId> got;
        std::vector<std::uint32_t> tids;
        std::vector<NodeId> self_got;
        got.reserve(cnt);
        tids.reserve(cnt);
        constexpr std::size_t kAhead = 8;
        for (std::size_t i = 0; i < cnt; ++i) {
          if (i + kAhead < cnt) {  // the message a node ahead will look at first: a cache miss
            const NodeId ahead = nodes[i + kAhead];
            if (!inbox_.empty(ahead)) {
              if (stream_)
                stream_->prefetch(inbox_.front(ahead));
              else
                __builtin_prefetch(&tr_.transfers[inbox_.front(ahead)], 0);
            }
          }
          NodeId v = nodes[i];
          NodeId src = peer_of(s, v, peer[i]);
          if (src == v) {  // a self-message: the oldest one the node sent itself
            if (has_nb_ && !match_pending(v, v, kNone)) {
              waiting_on_[v] = v;
              blocked_pc_[v] = pc;
              continue;
            }
            if (self_box_.empty() || self_box_[v].empty()) {
              waiting_on_[v] = v;  // no earlier send to itself: it waits for ever
              blocked_pc_[v] = pc;
              continue;
            }
            self_got.push_back(v);
            continue;
          }
          // MPI's non-overtaking rule: irecvs posted earlier from src take the first messages.
          if (has_nb_ && !match_pending(v, src, kNone)) {
            waiting_on_[v] = src;
            blocked_pc_[v] = pc;
            continue;
          }
          const std::uint32_t k = inbox_.find(v, [&](std::uint32_t t) { return src_of(t) == src; });
          if (k == inbox_.size(v)) {
            waiting_on_[v] = src;
            blocked_pc_[v] = pc;
            continue;
          }
          std::uint32_t tid = inbox_.take(v, k);
          if (stream_) {
            got.push_back(v);
            tids.push_back(tid);
            continue;
          }
          if (has_nb_) {  // the receive port is ordered when the run ends (check_requests)
            const std::uint32_t at = tick(v);
            nb_[v].port.push_back(PortEntry{tid, at, at});
          } else {
            timing_.prev_recv[tid] = last_recv_[v];
            last_recv_[v] = tid;
          }
          if (m_.header.collective == Collective::Barrier) tr_.events.push_back((tid << 1) | 1);
          got.push_back(v);
          tids.push_back(tid);
        }
        if (!self_got.empty()) self_receive(s, pc, self_got);
        if (got.empty()) return;
        auto& val = dscratch(0);
        for (std::size_t i = 0; i < got.size(); ++i) {
          if (stream_) {
            val[i] = stream_->on_receive(tids[i], got[i]);
            ops_ += val[i].size();  // work: the message's items delivered (--max-ops)
            continue;
          }
          const Transfer& t = tr_.transfers[tids[i]];
          val[i].assign(tr_.payload.data() + t.payload_begin, t.payload_len);
          ops_ += t.payload_len;  // work: the message's items delivered (--max-ops)
        }
        store(*s.target, got.data(), got.size(), val.data(), 1, true);
        track_receive(*s.target, got.data(), got.size(), tids.data());
        if (stream_) stream_->resolve(false);
        auto& r = ready_[pc + 1];
        r.insert(r.end(), got.begin(), got.end());
        mark_ready(pc + 1);
        return;
      }
    }
  }

  // ---- Nonblocking point-to-point (docs/language.md, "Nonblocking point-to-point") ----
  // An irecv is matched, in posting order per source (MPI's non-overtaking rule), when a wait
  // or a later blocking receive from the same source needs it; its data is written into the
  // buffer at its wait. Until then the positions it targets may be neither read nor written
  // (other positions of the variable may; a read of the whole variable reads them all); the
  // positions an isend sends may not be written until its wait. Each receive's program points
  // (posted, completed) go to the timing pass when the run ends, which orders the receive port
  // (timing.cpp, assign_steps_free).
  // A buffer (part) a request holds: positions lo .. hi of a data variable (kWholeBuffer: the
  // whole variable, as `irecv x` or `isend x` name it). Empty when hi < lo.
  static constexpr std::int64_t kWholeBuffer = std::numeric_limits<std::int64_t>::max();
  struct Part {
    int slot = -1;
    std::int64_t lo = 0, hi = -1;
  };
  struct Request {
    const Stmt* stmt = nullptr;
    NodeId peer = 0;
    bool recv = false, matched = false, whole = false;
    int slot = -1;                 // irecv: the target buffer
    std::int64_t lo = 0, hi = -1;  // irecv into a slice: its positions
    std::uint32_t port = kNone;    // irecv: its place in NbNode::port (not for self-messages)
    std::uint32_t tid = kNoTransfer;
    Buffer self_val;  // irecv from the node itself, once matched
    DepTag self_dep = 0;
    std::vector<Part> send_parts;  // isend: the positions its message is made of (not writable
                                   // until its wait)
  };
  // The outstanding requests that hold one data variable of a node: how many irecvs write it, and
  // the positions each irecv and isend holds. A read or write of positions no irecv holds is
  // allowed, as MPI allows it (and a write of positions no isend sends); MPI forbids a receive
  // buffer that overlaps the buffer of another pending receive or send.
  struct Held {
    std::int64_t hi;
    std::uint32_t handle;
  };
  struct Lock {
    int slot = -1;
    std::uint32_t recv = 0;
    std::map<std::int64_t, Held> recvs;       // irecvs' buffers by first position: disjoint
    std::multimap<std::int64_t, Held> sends;  // isends' parts by first position: may overlap
    std::int64_t send_span = 0;  // the largest hi - lo in `sends` since it was last empty
  };
  // A receive of the node (a transfer id once matched) and the node's program points at which
  // it was posted and completed (TimingRecord::posted, completed).
  struct PortEntry {
    std::uint32_t tid = kNoTransfer, posted = 0, completed = 0;
  };
  struct NbNode {
    std::map<std::uint32_t, Request> reqs;                  // outstanding, by handle
    std::map<NodeId, std::deque<std::uint32_t>> unmatched;  // irecvs per source, posting order
    std::uint32_t next = 0;                                 // the last handle given
    std::vector<PortEntry> port;  // this node's receives from other nodes, posting order
    std::uint32_t clock = 0;      // the node's program points: posts, receives, waits
    std::vector<Lock> locks;
    // The wait the node is blocked in (run_wait): its program point, its requests and the first
    // one not yet matched.
    std::uint32_t wait_pc = kNone, wait_pos = 0;
    std::vector<std::uint32_t> wait_list;
  };
  // The node's next program point.
  std::uint32_t tick(NodeId v) {
    NbNode& n = nb_[v];
    if (n.clock == std::numeric_limits<std::uint32_t>::max() - 1)
      throw LimitError(fmt::format(
          "node {} posts, receives and waits more than 2^32 times; collv's timing counts at most "
          "that many per node",
          topo_.label(v)));
    return ++n.clock;
  }
  struct Access {
    std::vector<int> reads;          // data slots an instruction reads
    std::vector<const Expr*> roots;  // the expressions it reads them from
    int write = -1;                  // the data slot it writes
    const Expr* target = nullptr;    // and its target: `x`, `x[i]` or `x[i .. j]`
  };

  void init_nonblocking() {
    nb_.resize(n_local_, lo_);
    acc_.resize(prog_.code.size());
    auto data_slot = [&](const Expr& e) {
      return e.slot >= 0 && e.slot < static_cast<int>(m_.var_types.size()) &&
                     m_.var_types[e.slot] == Type::Data
                 ? e.slot
                 : -1;
    };
    for (std::size_t pc = 0; pc < prog_.code.size(); ++pc) {
      const Instr& in = prog_.code[pc];
      const Stmt& s = *in.stmt;
      Access& a = acc_[pc];
      auto read = [&](const Expr* e) {
        if (!e) return;
        data_slots_read(*e, m_, a.reads);
        a.roots.push_back(e);
      };
      auto target = [&](bool writes) {
        const Expr& t = *s.target;
        if (t.kind == ExprKind::Name) {
          if (writes) a.write = data_slot(t);
        } else {
          for (std::size_t k = 1; k < t.args.size(); ++k) read(t.args[k].get());
          if (writes && t.args[0]->kind == ExprKind::Name) a.write = data_slot(*t.args[0]);
        }
        if (a.write >= 0) a.target = &t;
      };
      switch (in.op) {
        case IOp::Assign:
          read(s.value.get());
          target(true);
          break;
        case IOp::Send:
        case IOp::Isend:
          read(s.value.get());
          read(s.peer.get());
          break;
        case IOp::Recv:
        case IOp::Irecv:
          read(s.peer.get());
          target(in.op == IOp::Recv);
          break;
        case IOp::JumpIfFalse:
          read(in.cond);
          break;
        case IOp::ForInit:
          read(s.value.get());
          read(s.limit.get());
          break;
        case IOp::ArrayInit:
          read(s.value.get());
          break;
        case IOp::Wait:
          for (const auto& r : s.requests) read(r.get());
          break;
        default:
          break;
      }
    }
  }

  static Lock* find_lock(NbNode& n, int slot) {
    for (auto& l : n.locks)
      if (l.slot == slot) return &l;
    return nullptr;
  }
  static Lock& lock_of(NbNode& n, int slot) {
    if (Lock* l = find_lock(n, slot)) return *l;
    n.locks.emplace_back();
    n.locks.back().slot = slot;
    return n.locks.back();
  }
  static void unlock_empty(NbNode& n) {
    n.locks.erase(std::remove_if(n.locks.begin(), n.locks.end(),
                                 [](const Lock& l) { return l.recv == 0 && l.sends.empty(); }),
                  n.locks.end());
  }

  // An outstanding request's buffer that a part overlaps: its positions and its handle.
  struct Hit {
    std::int64_t lo = 0, hi = -1;
    std::uint32_t handle = 0;
  };
  // The irecv of lock l whose buffer overlaps `part`, if any.
  static std::optional<Hit> recv_hit(const Lock& l, const Part& part) {
    if (part.hi < part.lo || l.recvs.empty()) return std::nullopt;
    // The irecvs' buffers are disjoint: the last one starting at or before part.hi is the only
    // candidate.
    auto it = l.recvs.upper_bound(part.hi);
    if (it == l.recvs.begin()) return std::nullopt;
    --it;
    if (it->second.hi < part.lo) return std::nullopt;
    return Hit{it->first, it->second.hi, it->second.handle};
  }
  // An isend of lock l whose buffer overlaps `part`, if any.
  static std::optional<Hit> send_hit(const Lock& l, const Part& part) {
    if (part.hi < part.lo || l.sends.empty()) return std::nullopt;
    // An isend's part overlapping part starts at or after part.lo - send_span.
    auto it = part.lo > l.send_span ? l.sends.lower_bound(part.lo - l.send_span) : l.sends.begin();
    for (; it != l.sends.end() && it->first <= part.hi; ++it)
      if (it->second.hi >= part.lo) return Hit{it->first, it->second.hi, it->second.handle};
    return std::nullopt;
  }

  // The positions of data variable `slot` that `x[i]` or `x[i .. j]` (x that variable) names at
  // node v, evaluated now; all of it for `x` itself. Positions out of range are the statement's
  // own error (an empty part here overlaps nothing).
  Part part_at(const Expr& e, NodeId v) {
    if (e.kind == ExprKind::Name) return Part{e.slot, 0, kWholeBuffer};
    std::int64_t lo = 0, hi = 0;
    eval_int(*e.args[1], &v, 1, &lo, 1);
    if (e.kind == ExprKind::Slice)
      eval_int(*e.args[2], &v, 1, &hi, 1);
    else
      hi = lo;
    if (lo < 0) return Part{e.args[0]->slot, 0, -1};
    return Part{e.args[0]->slot, lo, hi};
  }
  // The parts of data variable `slot` that expression e reads at node v: the positions of each
  // `x[i]` and `x[i .. j]`, all of x wherever else x is named (`x`, `len(x)`).
  void parts_read(const Expr& e, int slot, NodeId v, std::vector<Part>& out) {
    if (e.kind == ExprKind::Name) {
      if (e.slot == slot) out.push_back(Part{slot, 0, kWholeBuffer});
      return;
    }
    std::size_t k = 0;
    if ((e.kind == ExprKind::Index || e.kind == ExprKind::Slice) &&
        e.args[0]->kind == ExprKind::Name && e.args[0]->slot == slot) {
      out.push_back(part_at(e, v));
      k = 1;  // the positions' expressions may name the variable too (`x[len(x) - 1]`)
    }
    for (; k < e.args.size(); ++k) parts_read(*e.args[k], slot, v, out);
  }

  // Positions held by an outstanding request are read or written: a runtime error naming both.
  // "it" when the access is to the whole variable (then a held part of it is enough).
  void access_error(const Stmt& s, NodeId v, const Part& part, const Hit& hit, bool write,
                    bool recv) {
    const Request& r = nb_[v].reqs.at(hit.handle);
    const Part held{part.slot, hit.lo, hit.hi};
    const bool whole = part.hi == kWholeBuffer;
    const std::string what = whole ? "it" : part_name(held);
    std::string tail;
    if (whole && held.hi != kWholeBuffer)
      tail = fmt::format("; it {} {}, and {} all of '{}' {} those positions",
                         recv ? "receives into" : "sends", part_name(held),
                         write ? "assigning" : "reading", m_.var_names[part.slot],
                         write ? "writes" : "reads");
    const std::string posted = r.stmt->loc.str();
    if (!recv)
      rt_error(s, v,
               fmt::format("{} is written before the isend of {} (posted at {}) is completed: MPI "
                           "forbids changing a send buffer before its wait{}",
                           part_name(part), what, posted, tail));
    if (write)
      rt_error(s, v,
               fmt::format("{} is written before the irecv into {} (posted at {}) is completed: "
                           "wait for it first{}",
                           part_name(part), what, posted, tail));
    rt_error(s, v,
             fmt::format("{} is read before the irecv into {} (posted at {}) is completed: data an "
                         "irecv brings may be used only after its wait{}",
                         part_name(part), what, posted, tail));
  }

  // Reads of positions an outstanding irecv targets, and writes of positions an outstanding irecv
  // targets or an outstanding isend sends, are runtime errors; other positions of the same
  // variables may be read and written (MPI allows it: in-place pairwise exchanges send one part
  // of a buffer while receiving into another).
  void check_access(std::uint32_t pc, const NodeId* nodes, std::size_t cnt) {
    const Access& a = acc_[pc];
    const Stmt& s = *prog_.code[pc].stmt;
    std::vector<Part> parts;
    for (std::size_t i = 0; i < cnt; ++i) {
      const NodeId v = nodes[i];
      NbNode& n = nb_[v];
      if (n.locks.empty()) continue;
      for (int r : a.reads) {
        const Lock* l = find_lock(n, r);
        if (!l || l->recvs.empty()) continue;
        parts.clear();
        for (const Expr* e : a.roots) parts_read(*e, r, v, parts);
        for (const Part& pt : parts)
          if (auto hit = recv_hit(*l, pt)) access_error(s, v, pt, *hit, false, true);
      }
      if (a.write < 0) continue;
      if (const Lock* l = find_lock(n, a.write)) {
        const Part pt = part_at(*a.target, v);
        if (auto hit = recv_hit(*l, pt)) access_error(s, v, pt, *hit, true, true);
        if (auto hit = send_hit(*l, pt)) access_error(s, v, pt, *hit, true, false);
      }
    }
  }

  std::uint32_t new_handle(const Stmt& s, NodeId v) {
    NbNode& n = nb_[v];
    if (n.reqs.size() >= kMaxRequests || n.next == std::numeric_limits<std::uint32_t>::max())
      throw LimitError(fmt::format(
          "{}: node {} would have more than {} outstanding requests (or issue more than 2^32); "
          "collv keeps at most that many per node (a limit of collv, not a fault of the model)",
          s.loc.str(), topo_.label(v), kMaxRequests));
    // A request and its entries (map nodes, port entry) are about 250 bytes: charged, so that
    // many outstanding requests on many nodes meet --max-memory, as buffers do.
    watch_.charge(256);
    return ++n.next;
  }

  // `as R`: the handles into R (an integer variable or an integer array's element).
  void store_handles(const Expr& tgt, const NodeId* nodes, std::size_t cnt,
                     const std::vector<std::int64_t>& h) {
    if (tgt.kind == ExprKind::Name) {
      for (std::size_t i = 0; i < cnt; ++i) ints_[tgt.slot].set(nodes[i], h[i]);
      return;
    }
    const int as = tgt.args[0]->slot;
    std::vector<std::int64_t> at(cnt);
    eval_int(*tgt.args[1], nodes, cnt, at.data(), 1);
    for (std::size_t i = 0; i < cnt; ++i) {
      auto& arr = arrays_[as][nodes[i]];
      if (at[i] < 0 || at[i] >= static_cast<std::int64_t>(arr.size()))
        rt_error(
            tgt, nodes[i],
            arr.empty() && !array_declared(as, nodes[i])
                ? fmt::format("'{}' is used before its 'array' statement ran", tgt.args[0]->name)
                : fmt::format("index {} is out of range for '{}' of {} elements", at[i],
                              tgt.args[0]->name, arr.size()));
      arr[static_cast<std::size_t>(at[i])] = h[i];
    }
  }

  void post_irecv(std::uint32_t pc, const NodeId* nodes, std::size_t cnt) {
    const Stmt& s = *prog_.code[pc].stmt;
    const Expr& tgt = *s.target;
    std::vector<std::int64_t> peer(cnt), lo(cnt), hi(cnt), handles(cnt);
    eval_int(*s.peer, nodes, cnt, peer.data(), 1);
    const bool whole = tgt.kind == ExprKind::Name;
    if (!whole && tgt.args[0]->kind != ExprKind::Name)
      rt_error(tgt, nodes[0], "only one level of indexing can be received into");
    const int slot = whole ? tgt.slot : tgt.args[0]->slot;
    if (!whole) {
      eval_int(*tgt.args[1], nodes, cnt, lo.data(), 1);
      if (tgt.kind == ExprKind::Slice)
        eval_int(*tgt.args[2], nodes, cnt, hi.data(), 1);
      else
        hi = lo;
    }
    for (std::size_t i = 0; i < cnt; ++i) {
      const NodeId v = nodes[i];
      const NodeId src = peer_of(s, v, peer[i]);
      if (!whole) check_positions(tgt, v, lo[i], hi[i], "receive into");
      const std::uint32_t h = new_handle(s, v);
      NbNode& n = nb_[v];
      const Part part{slot, whole ? 0 : lo[i], whole ? kWholeBuffer : hi[i]};
      check_overlap(s, v, part);
      Lock& l = lock_of(n, slot);
      Request r;
      r.stmt = &s;
      r.peer = src;
      r.recv = true;
      r.whole = whole;
      r.slot = slot;
      r.lo = lo[i];
      r.hi = hi[i];
      if (src != v) {
        r.port = static_cast<std::uint32_t>(n.port.size());
        n.port.push_back(PortEntry{kNoTransfer, tick(v), 0});
      }
      ++l.recv;
      if (part.lo <= part.hi) l.recvs.emplace(part.lo, Held{part.hi, h});
      n.unmatched[src].push_back(h);
      n.reqs.emplace(h, std::move(r));
      handles[i] = h;
    }
    store_handles(*s.request, nodes, cnt, handles);
    auto& r = ready_[pc + 1];
    r.insert(r.end(), nodes, nodes + cnt);
    mark_ready(pc + 1);
  }

  // Before the send itself (the IOp::Send code): the requests and their handles.
  void post_isend(std::uint32_t pc, const NodeId* nodes, std::size_t cnt) {
    const Stmt& s = *prog_.code[pc].stmt;
    std::vector<std::int64_t> handles(cnt);
    std::vector<std::vector<Part>> parts(cnt);
    send_parts(*s.value, nodes, cnt, parts);
    for (std::size_t i = 0; i < cnt; ++i) {
      const NodeId v = nodes[i];
      const std::uint32_t h = new_handle(s, v);
      NbNode& n = nb_[v];
      Request r;
      r.stmt = &s;
      for (const Part& pt : parts[i]) {
        if (pt.hi < pt.lo) continue;
        Lock& l = lock_of(n, pt.slot);
        l.sends.emplace(pt.lo, Held{pt.hi, h});
        l.send_span = std::max(l.send_span, pt.hi - pt.lo);
      }
      r.send_parts = std::move(parts[i]);
      n.reqs.emplace(h, std::move(r));
      handles[i] = h;
    }
    store_handles(*s.request, nodes, cnt, handles);
  }

  // The parts of data variables an isend's message is made of, per node: `x` is all of x, `x[i]`
  // and `x[i .. j]` their positions (evaluated now, as MPI fixes a send buffer's address when
  // the isend is posted); any other expression, every variable it names, whole.
  void send_parts(const Expr& e, const NodeId* nodes, std::size_t cnt,
                  std::vector<std::vector<Part>>& out) {
    auto is_data = [&](const Expr& x) {
      return x.kind == ExprKind::Name && x.slot >= 0 &&
             x.slot < static_cast<int>(m_.var_types.size()) && m_.var_types[x.slot] == Type::Data;
    };
    if (is_data(e)) {
      for (std::size_t i = 0; i < cnt; ++i) out[i].push_back(Part{e.slot, 0, kWholeBuffer});
      return;
    }
    if ((e.kind == ExprKind::Index || e.kind == ExprKind::Slice) && is_data(*e.args[0])) {
      std::vector<std::int64_t> lo(cnt), hi(cnt);
      eval_int(*e.args[1], nodes, cnt, lo.data(), 1);
      if (e.kind == ExprKind::Slice)
        eval_int(*e.args[2], nodes, cnt, hi.data(), 1);
      else
        hi = lo;
      for (std::size_t i = 0; i < cnt; ++i) out[i].push_back(Part{e.args[0]->slot, lo[i], hi[i]});
      return;
    }
    for (const auto& a : e.args) send_parts(*a, nodes, cnt, out);
  }

  // "'x'", "'x[3]'", "'x[3 .. 5]'".
  std::string part_name(const Part& p) const {
    const std::string& name = m_.var_names[p.slot];
    if (p.hi == kWholeBuffer) return fmt::format("'{}'", name);
    if (p.lo == p.hi) return fmt::format("'{}[{}]'", name, p.lo);
    return fmt::format("'{}[{} .. {}]'", name, p.lo, p.hi);
  }

  // An irecv into `part` at node v: a runtime error if its buffer overlaps that of an
  // outstanding irecv or isend of v (MPI: erroneous; which one writes last would decide the
  // value). Disjoint positions of one variable are allowed, as MPICH posts them.
  void check_overlap(const Stmt& s, NodeId v, const Part& part) {
    if (part.hi < part.lo) return;  // an empty buffer (count 0) overlaps nothing
    Lock* l = find_lock(nb_[v], part.slot);
    if (!l) return;
    bool recv = true;
    std::optional<Hit> hit = recv_hit(*l, part);
    if (!hit) {
      hit = send_hit(*l, part);
      recv = false;
    }
    if (!hit) return;
    const Request& earlier = nb_[v].reqs.at(hit->handle);
    rt_error(s, v,
             fmt::format("the buffer of this irecv, {}, overlaps the buffer of the {} posted at {} "
                         "({}), which is still outstanding: {}",
                         part_name(part), recv ? "irecv" : "isend", earlier.stmt->loc.str(),
                         part_name(Part{part.slot, hit->lo, hit->hi}),
                         recv ? "MPI forbids two pending receives into overlapping buffers (the "
                                "one completed last would decide the values); irecvs into one "
                                "variable at once need disjoint positions"
                              : "MPI forbids receiving into a send buffer before the send's wait"));
  }

  // Matches node v's irecvs from src, oldest first, up to the one with handle `upto` (all of
  // them for kNone). False if a message is not there yet (the node waits for src).
  bool match_pending(NodeId v, NodeId src, std::uint32_t upto) {
    NbNode& n = nb_[v];
    auto it = n.unmatched.find(src);
    if (it == n.unmatched.end()) return true;
    auto& q = it->second;
    while (!q.empty()) {
      const std::uint32_t h = q.front();
      Request& r = n.reqs.at(h);
      if (src == v) {
        if (self_box_.empty() || self_box_[v].empty()) return false;
        r.self_val = std::move(self_box_[v].front().value);
        r.self_dep = self_box_[v].front().dep;
        self_box_[v].pop_front();
      } else {
        const std::uint32_t k = inbox_.find(v, [&](std::uint32_t t) { return src_of(t) == src; });
        if (k == inbox_.size(v)) return false;
        r.tid = inbox_.take(v, k);
        n.port[r.port].tid = r.tid;
        if (m_.header.collective == Collective::Barrier) tr_.events.push_back((r.tid << 1) | 1);
      }
      r.matched = true;
      q.pop_front();
      if (h == upto) break;
    }
    if (q.empty()) n.unmatched.erase(it);
    return true;
  }

  // Completes a matched request at the node's program point `at` (its wait): an irecv's data
  // goes into its buffer (and its dependency: receives are numbered in the order they complete,
  // so a dependency tag's newest receive is the last one whose data the node could have used).
  void complete(NodeId v, std::uint32_t h, std::uint32_t at) {
    NbNode& n = nb_[v];
    auto node = n.reqs.extract(h);
    Request& r = node.mapped();
    if (!r.recv) {
      for (const Part& pt : r.send_parts) {
        if (pt.hi < pt.lo) continue;
        Lock& l = lock_of(n, pt.slot);
        auto [b, e] = l.sends.equal_range(pt.lo);
        for (; b != e; ++b)
          if (b->second.handle == h) {
            l.sends.erase(b);
            break;
          }
        if (l.sends.empty()) l.send_span = 0;
      }
      unlock_empty(n);
      return;
    }
    Lock& l = lock_of(n, r.slot);
    --l.recv;
    if (r.whole || r.lo <= r.hi) l.recvs.erase(r.whole ? 0 : r.lo);  // (as check_overlap put it)
    unlock_empty(n);
    Buffer val;
    DepTag dep;
    if (r.peer == v) {
      val = std::move(r.self_val);
      dep = r.self_dep;
    } else {
      const Transfer& t = tr_.transfers[r.tid];
      val.assign(tr_.payload.data() + t.payload_begin, t.payload_len);
      ops_ += t.payload_len;  // work: the message's items delivered (--max-ops)
      if (recv_count_[v] == kMaxDepSeq)
        throw LimitError(fmt::format(
            "node {} receives more than {} messages; collv's timing counts at most that many per "
            "node",
            topo_.label(v), kMaxDepSeq));
      dep = dep_tag(++recv_count_[v], r.tid);
      n.port[r.port].completed = at;
    }
    DepTag& tag = deps_.row(v)[dep_col_[r.slot]];
    if (r.whole) {
      data_[r.slot].set(v, std::move(val));
      tag = dep;
      return;
    }
    const Expr& tgt = *r.stmt->target;
    if (val.size() > static_cast<std::uint64_t>(r.hi - r.lo + 1))
      rt_error(tgt, v,
               fmt::format("a message of {} items is received into {} positions (MPI's "
                           "truncation error: a receive may be larger than its message, never "
                           "smaller)",
                           val.size(), r.hi - r.lo + 1));
    tag = std::max(tag, dep);
    if (val.size() == 0) return;
    const std::int64_t b = r.lo + static_cast<std::int64_t>(val.size()) - 1;
    Buffer& dst = data_[r.slot].edit(v);
    if (static_cast<std::int64_t>(dst.size()) <= b) {
      charge_items(static_cast<std::uint64_t>(b + 1 - dst.size()));
      dst.resize(static_cast<std::uint32_t>(b + 1), 0);
    }
    for (std::int64_t k = r.lo; k <= b; ++k)
      dst[static_cast<std::uint32_t>(k)] = val[static_cast<std::uint32_t>(k - r.lo)];
    data_[r.slot].settle(v);
  }

  // `wait R`, `waitall R1, ...`, `waitall`: a node goes on once every listed request is
  // matched; until then it waits for the source of the first one that is not (in the list's
  // order; for a bare `waitall`, posting order). The list is read, checked and kept when the node
  // reaches the wait; each wake-up goes on from the first request not yet matched, so a wait is
  // linear in its requests however often the node is woken (reading and searching the whole
  // list again at every wake-up made 3,000 requests from 3,000 peers quadratic, and a search for
  // a request listed twice cubic).
  void run_wait(std::uint32_t pc, const NodeId* nodes, std::size_t cnt) {
    const Stmt& s = *prog_.code[pc].stmt;
    std::vector<NodeId> fresh;  // the nodes that reach the wait now (not woken in it)
    for (std::size_t i = 0; i < cnt; ++i)
      if (nb_[nodes[i]].wait_pc != pc) fresh.push_back(nodes[i]);
    std::vector<std::vector<std::int64_t>> hs(s.requests.size());
    for (std::size_t k = 0; k < s.requests.size() && !fresh.empty(); ++k) {
      hs[k].resize(fresh.size());
      eval_int(*s.requests[k], fresh.data(), fresh.size(), hs[k].data(), 1);
    }
    std::vector<NodeId> done;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> dup;
    std::size_t f = 0;  // the next node of `fresh`
    for (std::size_t i = 0; i < cnt; ++i) {
      const NodeId v = nodes[i];
      NbNode& n = nb_[v];
      if (n.wait_pc != pc) {
        const std::size_t j = f++;
        std::vector<std::uint32_t>& list = n.wait_list;
        list.clear();
        n.wait_pos = 0;
        if (s.requests.empty()) {  // `waitall`: every outstanding request, in posting order
          for (const auto& kv : n.reqs) list.push_back(kv.first);
        } else {
          for (std::size_t k = 0; k < s.requests.size(); ++k) {
            const std::int64_t h = hs[k][j];
            if (h <= 0 || h > std::numeric_limits<std::uint32_t>::max() ||
                !n.reqs.count(static_cast<std::uint32_t>(h)))
              rt_error(*s.requests[k], v,
                       fmt::format("{} is not an outstanding request at this node (never posted, "
                                   "or already completed by a wait)",
                                   h));
            list.push_back(static_cast<std::uint32_t>(h));
          }
          // A request listed twice: sorted (handle, place) pairs put its places side by side.
          dup.clear();
          for (std::uint32_t k = 0; k < list.size(); ++k) dup.emplace_back(list[k], k);
          std::sort(dup.begin(), dup.end());
          std::uint32_t first = kNone;  // the first place that repeats an earlier one
          for (std::size_t k = 1; k < dup.size(); ++k)
            if (dup[k].first == dup[k - 1].first) first = std::min(first, dup[k].second);
          if (first != kNone)
            rt_error(*s.requests[first], v, fmt::format("request {} is listed twice", list[first]));
        }
        n.wait_pc = pc;
      }
      std::vector<std::uint32_t>& list = n.wait_list;
      bool all = true;
      for (; n.wait_pos < list.size(); ++n.wait_pos) {
        Request& r = n.reqs.at(list[n.wait_pos]);
        if (r.recv && !r.matched && !match_pending(v, r.peer, list[n.wait_pos])) {
          waiting_on_[v] = r.peer;
          blocked_pc_[v] = pc;
          all = false;
          break;
        }
      }
      if (!all) continue;
      // Completed at one program point, numbered in posting order whatever the list's order.
      std::sort(list.begin(), list.end());
      const std::uint32_t at = tick(v);
      for (std::uint32_t h : list) complete(v, h, at);
      n.wait_pc = kNone;
      if (list.capacity() > 1024) std::vector<std::uint32_t>().swap(list);
      done.push_back(v);
    }
    if (done.empty()) return;
    auto& r = ready_[pc + 1];
    r.insert(r.end(), done.begin(), done.end());
    mark_ready(pc + 1);
  }

  // The run ended: every request must have been completed. The timing pass gets each
  // receive's program points, and each node's receives chained in the order they completed
  // (then posted): the order of their dependency tags.
  void check_requests() {
    const std::size_t n = tr_.transfers.size();
    timing_.posted.assign(n, kNoTransfer);
    timing_.completed.assign(n, kNoTransfer);
    std::vector<PortEntry> done;
    for (NodeId v = lo_; v < hi_; ++v) {
      done.clear();
      for (const PortEntry& e : nb_[v].port)
        if (e.tid != kNoTransfer && e.completed != 0) done.push_back(e);
      std::sort(done.begin(), done.end(), [](const PortEntry& a, const PortEntry& b) {
        return std::pair(a.completed, a.posted) < std::pair(b.completed, b.posted);
      });
      std::uint32_t prev = kNoTransfer;
      for (const PortEntry& e : done) {
        timing_.posted[e.tid] = e.posted;
        timing_.completed[e.tid] = e.completed;
        timing_.prev_recv[e.tid] = prev;
        prev = e.tid;
      }
    }
    if (tr_.failure.kind != RunFailure::Kind::None) return;
    for (NodeId v = lo_; v < hi_; ++v) {
      if (nb_[v].reqs.empty()) continue;
      const Request& r = nb_[v].reqs.begin()->second;
      tr_.failure.kind = RunFailure::Kind::RuntimeError;
      tr_.failure.message = fmt::format(
          "{}: runtime error at node {} ({}): the {} posted here is never completed (MPI "
          "requires a wait or waitall for every request)",
          r.stmt->loc.str(), v, topo_.label(v), r.recv ? "irecv" : "isend");
      return;
    }
  }

  bool has_nb_ = false;
  NodeCol<NbNode> nb_;
  std::vector<Access> acc_;

  // Self-messages (docs/language.md, "Self-messages"): a send to oneself queues the value with
  // the dependency of the data it carries; the matching receive takes the oldest one (FIFO, as
  // between two nodes). Neither is a transfer: no link, no port, no step.
  void self_send(const Stmt& s, std::uint32_t pc, NodeId v, Buffer val) {
    if (self_box_.empty()) self_box_.resize(n_local_, lo_);
    charge_items(val.size());
    self_box_[v].push_back(SelfMessage{std::move(val), deps_of(pc, v), s.loc});
  }
  void self_receive(const Stmt& s, std::uint32_t pc, const std::vector<NodeId>& nodes) {
    std::vector<Buffer> vals(nodes.size());
    std::vector<DepTag> deps(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      auto& box = self_box_[nodes[i]];
      vals[i] = std::move(box.front().value);
      deps[i] = box.front().dep;
      box.pop_front();
    }
    store(*s.target, nodes.data(), nodes.size(), vals.data(), 1, true);
    // The target depends on what the sent value depended on (a whole target: only that).
    bool whole = s.target->kind == ExprKind::Name;
    const int j = dep_col_[whole ? s.target->slot : s.target->args[0]->slot];
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      DepTag& t = deps_.row(nodes[i])[j];
      t = whole ? deps[i] : std::max(t, deps[i]);
    }
    auto& r = ready_[pc + 1];
    r.insert(r.end(), nodes.begin(), nodes.end());
    mark_ready(pc + 1);
  }

 public:
  // A self-message still queued when the run ends (sent, never received): its send's position.
  std::optional<std::pair<NodeId, SourceLoc>> unreceived_self() const {
    for (NodeId v = lo_; v < lo_ + self_box_.size(); ++v)
      if (!self_box_[v].empty()) return std::make_pair(v, self_box_[v].front().loc);
    return std::nullopt;
  }
  // The run ended: a self-message never received is a runtime error (if nothing failed before).
  void check_self_messages() override {
    if (has_nb_) check_requests();
    if (tr_.failure.kind == RunFailure::Kind::None)
      if (auto self = unreceived_self()) {
        tr_.failure.kind = RunFailure::Kind::RuntimeError;
        tr_.failure.message = fmt::format(
            "{}: runtime error at node {} ({}): a message the node sent to itself is never "
            "received (a send to oneself needs its matching receive)",
            self->second.str(), self->first, topo_.label(self->first));
      }
  }

 private:
  NodeId src_of(std::uint32_t tid) const {
    return stream_ ? stream_->src(tid) : tr_.transfers[tid].src;
  }
  // dst was waiting for a message from v, which has just been sent.
  void wake(NodeId v, NodeId dst) {
    if (waiting_on_[dst] != v) return;
    waiting_on_[dst] = kNone;
    ready_[blocked_pc_[dst]].push_back(dst);
    mark_ready(blocked_pc_[dst]);
  }

  // Timing dependencies (exec/timing.hpp). A value depends on the newest receive among the
  // variables it reads; assigning a whole variable replaces its dependency, assigning part of
  // it adds to it; a receive makes the target depend on that receive.
  DepTag deps_of(std::uint32_t pc, NodeId v) const {
    DepTag d = 0;
    const DepTag* row = deps_.row(v);
    for (int j : reads_[pc]) d = std::max(d, row[j]);
    return d;
  }
  void track_assign(std::uint32_t pc, const Expr& target, const NodeId* nodes, std::size_t cnt) {
    bool whole = target.kind == ExprKind::Name;
    const int j = dep_col_[whole ? target.slot : target.args[0]->slot];
    for (std::size_t i = 0; i < cnt; ++i) {
      DepTag d = deps_of(pc, nodes[i]);
      DepTag& t = deps_.row(nodes[i])[j];
      t = whole ? d : std::max(t, d);
    }
  }
  void track_receive(const Expr& target, const NodeId* nodes, std::size_t cnt,
                     const std::uint32_t* tids) {
    const int j = dep_col_[target.kind == ExprKind::Name ? target.slot : target.args[0]->slot];
    for (std::size_t i = 0; i < cnt; ++i) {
      if (recv_count_[nodes[i]] == kMaxDepSeq)
        throw LimitError(
            fmt::format("node {} receives more than {} messages; collv's timing "
                        "counts at most that many per node",
                        topo_.label(nodes[i]), kMaxDepSeq));
      deps_.row(nodes[i])[j] = dep_tag(++recv_count_[nodes[i]], tids[i]);
    }
  }

  // The trace's vector v is about to grow by n elements: when that reallocates, the new storage
  // (twice the old: both are held while it is copied) is charged before it is made. Large
  // messages filled the payload by doubling past --max-memory (768 MiB stopped at 1,186) while
  // the watch was read every 65,536 transfers.
  template <class V>
  void charge_growth(const V& v, std::size_t n) {
    if (v.size() + n > v.capacity())
      watch_.charge(std::max(2 * v.capacity(), v.size() + n) * sizeof(typename V::value_type));
  }

  // Buffers are about to grow by `items` items (beyond the two held inline).
  void charge_items(std::uint64_t items) {
    if (items > 2 * kChunk) watch_.charge(items * sizeof(Item));
  }

  void check_memory() {
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

 public:
  Domain* dom_ = nullptr;

 private:
  const Model& m_;
  const Topology& topo_;
  const RunOptions& opts_;
  Trace& tr_;
  MemoryWatch& watch_;
  std::uint32_t p_;
  NodeId lo_, hi_;  // the nodes this Machine runs
  std::uint32_t n_local_;
  std::vector<RemoteSend> outbox_;  // sends to other processes' nodes, until exchanged
  std::uint32_t horizon_ = 0;       // set_horizon
  bool no_sends_ = false;           // run_receives
  std::vector<std::pair<std::uint32_t, NodeId>> held_;  // (program point, node) at the horizon
  Program prog_;
  std::int64_t d_ = -1, n_ = -1, rows_ = -1, cols_ = -1;
  std::vector<IntCol> ints_;  // 5 bytes a node while every value fits in 32 bits
  // Integer arrays: per slot and node its elements (empty until its `array` statement runs).
  std::vector<NodeCol<std::vector<std::int64_t>>> arrays_;
  std::vector<NodeCol<std::uint8_t>> array_ran_;  // per slot and node: `array` has run
  bool array_declared(int slot, NodeId v) const { return array_ran_[slot][v] != 0; }
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

 private:
  NodeCol<std::uint32_t> recv_count_, last_recv_;
  std::vector<std::vector<int>> reads_;
  struct SelfMessage {
    Buffer value;
    DepTag dep;
    SourceLoc loc;
  };
  NodeCol<std::deque<SelfMessage>> self_box_;  // per node; empty until a node sends itself
};

// Elements per input: p for the collectives whose inputs are indexed by destination, else the
// header's `elements` (1 by default).
std::uint32_t elems_per_node(const Model& m, const Topology& t,
                             const std::map<std::string, double>& env, std::uint32_t count) {
  Collective c = m.header.collective;
  auto p = static_cast<std::uint64_t>(t.num_processors());
  if (c == Collective::ReduceScatter || c == Collective::Scatter || c == Collective::Alltoall) {
    if (p * count > 65535 && count > 1)
      throw LimitError(
          fmt::format("{} blocks of --count {} elements on {} are {} elements per "
                      "input, more than the 65,535 collv supports",
                      p, count, t.spec(), p * count));
    return static_cast<std::uint32_t>(p * count);
  }
  if (collective_is_v(c)) {
    // Elements per input (the domain's contributions per node): the largest input.
    std::uint64_t most = 0, total = 0;
    for (std::uint64_t j = 0; j < p; ++j) total += static_cast<std::uint64_t>(v_count(count, j));
    for (std::uint64_t i = 0; i < p; ++i) {
      std::uint64_t e = 0;
      if (c == Collective::Alltoallv)
        for (std::uint64_t j = 0; j < p; ++j)
          e += static_cast<std::uint64_t>(v_pair_count(count, i, j));
      else if (c == Collective::Allgatherv || c == Collective::Gatherv)
        e = static_cast<std::uint64_t>(v_count(count, i));
      else
        e = total;  // scatterv's root, reduce-scatterv's every rank
      most = std::max(most, e);
      if (c == Collective::Scatterv || c == Collective::ReduceScatterv) break;
    }
    if (most > 65535)
      throw LimitError(fmt::format(
          "a {} of --count {} on {} has inputs of {} elements, more than the 65,535 collv "
          "supports",
          collective_name(c), count, t.spec(), most));
    return static_cast<std::uint32_t>(most);
  }
  if (!m.header.elements) return count;
  double e =
      header_value(m.header, *m.header.elements, env, "'elements' on " + t.spec(), &t).approx;
  if (!(e >= 1 && e <= 65535) || e != std::floor(e))
    throw ModelError(m.header.elements->loc,
                     fmt::format("'elements' must be a whole number from 1 to 65535; on {} it "
                                 "is {}",
                                 t.spec(), e));
  return static_cast<std::uint32_t>(e);
}

// The operands of a `requires`'s top-level `and`s, in order.
void conjuncts(const Expr& e, std::vector<const Expr*>& out) {
  if (e.kind == ExprKind::Binary && e.op == Op::And) {
    conjuncts(*e.args[0], out);
    conjuncts(*e.args[1], out);
  } else {
    out.push_back(&e);
  }
}

// "source = 1, p = 8": the values of the names e uses.
std::string values_of_names(const Expr& e, const std::map<std::string, double>& env) {
  std::vector<std::string> names;
  std::vector<const Expr*> stack{&e};
  while (!stack.empty()) {
    const Expr* x = stack.back();
    stack.pop_back();
    if (x->kind == ExprKind::Name && std::find(names.begin(), names.end(), x->name) == names.end())
      names.push_back(x->name);
    for (auto it = x->args.rbegin(); it != x->args.rend(); ++it) stack.push_back(it->get());
  }
  std::string out;
  for (const auto& n : names) {
    auto it = env.find(n);
    if (it != env.end()) out += fmt::format("{}{} = {}", out.empty() ? "" : ", ", n, it->second);
  }
  return out;
}

// Assigns the steps (exec/timing.hpp) and reports what the machine model adds to the run: a
// cycle of port orders (no schedule exists) or a schedule longer than the step limit.
void apply_timing(Trace& tr, const TimingRecord& rec, const RunOptions& opts) {
  TimingOutcome o = assign_steps(tr, rec, opts.port);
  if (tr.failure.kind != RunFailure::Kind::None) return;
  if (!o.cycle.empty()) {
    RunFailure& f = tr.failure;
    f.kind = RunFailure::Kind::Deadlock;
    f.ports = true;
    std::string chain;
    for (auto t : o.cycle) {
      const Transfer& x = tr.transfers[t];
      chain += fmt::format("{}{} -> {} (line {})", chain.empty() ? "" : ", then ",
                           tr.topology.label(x.src), tr.topology.label(x.dst), x.line);
      // The nodes whose ports are involved, in the order the cycle meets them.
      for (NodeId v : {x.src, x.dst})
        if (std::find(f.waiting_cycle.begin(), f.waiting_cycle.end(), v) == f.waiting_cycle.end())
          f.waiting_cycle.push_back(v);
    }
    f.cycle_closed = true;
    f.waiting = f.waiting_cycle;
    std::sort(f.waiting.begin(), f.waiting.end());
    f.waiting.erase(std::unique(f.waiting.begin(), f.waiting.end()), f.waiting.end());
    if (rec.posted.empty())
      f.message = fmt::format(
          "{}: deadlock of the ports (--port single): no schedule takes every node's sends and "
          "receives in program order; each of these transfers must come before the next, and "
          "the last before the first: {} (a receiver takes them in an order their senders cannot "
          "send them in; --port all has no such order)",
          tr.model_file, chain);
    else  // a nonblocking model: receives outstanding at once may complete in any order
      f.message = fmt::format(
          "{}: deadlock of the ports (--port single): no schedule takes every node's sends in "
          "program order and its receives in any order its waits allow; each of these transfers "
          "must come before the next, and the last before the first: {} (--port all has no such "
          "order)",
          tr.model_file, chain);
    // Through a data dependency collv over-approximates, the data may not need the receive
    // that closes the cycle: a schedule may exist, so the run is not judged.
    if (o.approximate) {
      f.order_unexplored = true;
      f.message +=
          "; the cycle passes through the data of a receive completed no later than the one a "
          "sent value depends on, which collv counts as needed (one dependency per variable): "
          "the value may not need it, so MPI may complete this run (inconclusive, not a "
          "deadlock found)";
    }
    return;
  }
  std::uint32_t steps = 0;
  for (const auto& x : tr.transfers) steps = std::max(steps, x.step);
  if (steps > opts.max_steps) {
    tr.failure.kind = RunFailure::Kind::StepLimit;
    tr.failure.message = fmt::format(
        "{}: the schedule takes {} steps, past the step limit {} (raise --max-steps to allow "
        "more)",
        tr.model_file, steps, opts.max_steps);
  }
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

std::map<std::string, double> header_env(const Topology& t, const RunOptions& o) {
  std::map<std::string, double> env;
  for (const auto& [k, v] : topology_env(t)) env[k] = static_cast<double>(v);
  env["q"] = static_cast<double>(o.shift);
  env["count"] = static_cast<double>(o.count);
  env["source"] = env["root"] = o.root;
  return env;
}

}  // namespace

RunFailure deadlock_failure(const Topology& t, std::vector<NodeId> waiting,
                            const std::function<NodeId(NodeId)>& waits_for, const SourceLoc& at) {
  RunFailure f;
  f.kind = RunFailure::Kind::Deadlock;
  f.waiting = std::move(waiting);
  // Follow "waits for" edges from the first waiting node until a node repeats (a cycle) or the
  // chain reaches a node that is not waiting (it finished without sending).
  std::unordered_map<NodeId, std::size_t> seen_at;
  std::vector<NodeId> chain;
  NodeId v = f.waiting.front();
  while (v != kNone && !seen_at.count(v)) {
    seen_at[v] = chain.size();
    chain.push_back(v);
    v = waits_for(v);
  }
  if (v != kNone) {
    f.waiting_cycle.assign(chain.begin() + static_cast<std::ptrdiff_t>(seen_at[v]), chain.end());
    f.cycle_closed = true;
  } else {
    f.waiting_cycle = chain;
    f.cycle_closed = false;
  }
  // When the chain is not closed its last node is the one that finished.
  std::string desc;
  for (std::size_t i = 0; i < f.waiting_cycle.size(); ++i)
    desc += (i ? " -> " : "") + t.label(f.waiting_cycle[i]);
  desc += f.cycle_closed ? " -> " + t.label(f.waiting_cycle.front()) : " (finished)";
  f.message = fmt::format("{}: deadlock: {} of {} nodes wait for ever; waiting chain: {}", at.str(),
                          f.waiting.size(), t.num_processors(), desc);
  return f;
}

std::vector<Buffer> initial_inputs(Collective c, Domain& dom, std::uint32_t p, std::uint32_t root,
                                   NodeId lo, NodeId hi, std::uint32_t count) {
  hi = std::min(hi, p);
  std::vector<Buffer> in(hi - lo);
  std::uint32_t e = dom.elems();
  for (NodeId v = lo; v < hi; ++v) {
    // The v-collectives: rank v's own elements x[v][0 ..], as many as its counts say.
    std::int64_t own = -1;
    switch (c) {
      case Collective::Allgatherv:
      case Collective::Gatherv:
        own = v_count(count, v);
        break;
      case Collective::Scatterv:
        own = v == root ? e : 0;
        break;
      case Collective::ReduceScatterv:
        own = e;
        break;
      case Collective::Alltoallv:
        own = 0;
        for (std::uint32_t j = 0; j < p; ++j) own += v_pair_count(count, v, j);
        break;
      default:
        break;
    }
    if (own >= 0) {
      for (std::int64_t j = 0; j < own; ++j)
        in[v - lo].push_back(dom.leaf(v, static_cast<std::uint32_t>(j)));
      continue;
    }
    switch (c) {
      case Collective::Broadcast:
        if (v == root)
          for (std::uint32_t j = 0; j < e; ++j) in[v - lo].push_back(dom.leaf(v, j));
        break;
      case Collective::Scatter:
        if (v == root)
          for (std::uint32_t j = 0; j < e; ++j) in[v - lo].push_back(dom.leaf(v, j));
        break;
      case Collective::ReduceScatter:
      case Collective::Alltoall:
        for (std::uint32_t j = 0; j < e; ++j) in[v - lo].push_back(dom.leaf(v, j));
        break;
      case Collective::Barrier:  // no data
        break;
      default:
        for (std::uint32_t j = 0; j < e; ++j) in[v - lo].push_back(dom.leaf(v, j));
    }
  }
  return in;
}

std::optional<bool> model_applies(const Model& m, const Topology& t, const RunOptions& o) {
  if (!m.header.requires_) return true;
  try {
    return header_value(m.header, *m.header.requires_, header_env(t, o), "'requires'", &t).approx !=
           0;
  } catch (const ModelError&) {
    return std::nullopt;  // run_model reports why
  }
}

// The run; on a slice of the nodes driven by `drv` if given (a partitioned run).
Trace run_model_once(const Model& m, const Topology& t, const RunOptions& opts,
                     SliceDriver* drv = nullptr) {
  if (t.num_processors() == 0) throw UsageError("the topology has no processors");
  check_names_on(m, t);
  auto p = static_cast<std::uint32_t>(t.num_processors());
  if (collective_is_rooted(m.header.collective) && opts.root >= p)
    throw UsageError(
        fmt::format("--source {} is not a processor of {} (0 .. {})", opts.root, t.spec(), p - 1));
  auto env = header_env(t, opts);
  if (m.header.requires_) {
    // A name the topology does not define, or arithmetic undefined here, is a ModelError at its
    // position; a false condition is refused naming the conjunct that fails.
    std::string what = "'requires' on " + t.spec();
    if (header_value(m.header, *m.header.requires_, env, what, &t).approx == 0) {
      std::vector<const Expr*> parts;
      conjuncts(*m.header.requires_, parts);
      const Expr* failing = m.header.requires_.get();
      for (const Expr* c : parts)
        if (header_value(m.header, *c, env, what, &t).approx == 0) {
          failing = c;
          break;
        }
      std::string vals = values_of_names(*failing, env);
      throw UsageError(fmt::format("{}: model '{}' requires {}, which does not hold on {}{}",
                                   expr_start(*failing).str(), m.header.name,
                                   expr_to_string(*failing), t.spec(),
                                   vals.empty() ? "" : " (" + vals + ")"));
    }
  }
  Trace tr;
  tr.model_name = m.header.name;
  tr.model_file = m.file;
  tr.collective = m.header.collective;
  tr.op_class = m.header.op_class;
  tr.nodup_claimed = m.header.nodup;
  tr.layout_any = m.header.layout_any;
  tr.count = opts.count;
  tr.topology = t;
  tr.root = opts.root;
  tr.shift = opts.shift;
  std::uint32_t elems = elems_per_node(m, t, env, opts.count);

  // Claimed step count and cost, evaluated on this topology. A formula that cannot be evaluated
  // here throws ModelError (never a silently unchecked claim). A step claim that is not a whole
  // number is kept as it is, and check_steps fails it: it is never rounded.
  tr.claims_single_port = m.header.claims_single_port;
  if (m.header.steps) {
    // Evaluated exactly: `steps 2^70 mod 3` is 1 (double arithmetic gave 0).
    HeaderNumber s = header_value(m.header, *m.header.steps, env, "'steps' on " + t.spec(), &t);
    tr.steps_at_most = m.header.steps_at_most;
    std::optional<std::int64_t> whole =
        s.exact && s.value.is_integer() ? s.value.num.to_i64() : std::nullopt;
    if (!whole && tr.steps_at_most && s.exact && s.value.is_integer() && s.value.num.sign() > 0)
      whole = std::numeric_limits<std::int64_t>::max();  // a bound beyond 2^63 holds for any run
    if (whole)
      tr.claimed_steps = *whole;
    else
      tr.claimed_steps_real = s.approx;  // not a whole number, or beyond 2^63: it cannot hold
  }
  if (m.header.cost) {
    // m is the sources' message size in items: the run's count (per block for the blocked
    // collectives), or 1 when the model sets `elements` itself (its formula then counts items).
    auto ce = env;
    ce["m"] = m.header.elements ? 1.0 : static_cast<double>(opts.count);
    tr.cost_at_most = m.header.cost_at_most;
    CostClaim c = header_cost(m.header, *m.header.cost, ce, "'cost' on " + t.spec(), &t);
    tr.claimed_ts = c.ts.approx;
    tr.claimed_tw = c.tw.approx;
  }

  // Up-front memory estimate: variable columns; the trace if the claimed step count holds
  // (single-port: at most p transfers per step), and for reductions in the exact and ordered
  // domains a new interned value per transfer; the inputs, outputs and expected outputs of the
  // collective (collective_bytes). The run is watched as well (MemoryWatch), so an estimate that
  // is too low still stops near the limit.
  Collective coll = m.header.collective;
  bool reduction = coll == Collective::Reduce || coll == Collective::Allreduce ||
                   coll == Collective::Scan || coll == Collective::Exscan ||
                   coll == Collective::ReduceScatter || coll == Collective::ReduceScatterv;
  // Per node: a data variable's buffer (DataCol: 9 bytes while it holds one item; a longer one
  // 24 more in the side table, 8 bytes an item beyond two) and timing tag (8); an integer and its
  // assigned flag (IntCol: 5 bytes while its values fit in 32 bits, 9 once widened); an array's
  // vector (24, its elements are charged as they are made); about 56 bytes of the executor's own
  // (wait state, mailbox, ready lists, counters). Measured (2026-11-26): 302 bytes a node for
  // allreduce_star on star:10, streamed, with the link table (about 40 of them); this estimate
  // gives 318.
  std::uint64_t per_node = 56;
  for (std::size_t i = 0; i < m.var_names.size(); ++i) {
    Type ty = i < m.var_types.size() ? m.var_types[i] : Type::Int;
    per_node += ty == Type::Data
                    ? 17 + (elems > 1 ? 24 : 0) + (elems > 2 ? 8 * std::uint64_t{elems} : 0)
                : ty == Type::IntArray ? 32
                                       : 5;
  }
  if (uses_nonblocking(m.body)) per_node += 256;  // the request table, without its requests
  std::uint64_t est = sat_mul(p, per_node);
  std::uint64_t stored = 0;  // the trace, if it is kept
  if (tr.claimed_steps && *tr.claimed_steps > 0) {
    std::uint64_t per_transfer =
        sizeof(Transfer) + sizeof(Item) + 16;  // + timing records (exec/timing.hpp)
    if (reduction && opts.domain != DomainKind::Fingerprint) per_transfer += 96;
    // A run never takes more than --max-steps steps, whatever the claim (`at most 2^70`).
    auto steps =
        std::min<std::uint64_t>(static_cast<std::uint64_t>(*tr.claimed_steps), opts.max_steps);
    stored = sat_mul(sat_mul(p, steps), per_transfer);
  }
  std::string unstreamable;
  if (opts.port != PortModel::Single)
    unstreamable = "a streamed run times single-port runs only (--port all keeps the trace)";
  else if (t.declares_bandwidth())
    unstreamable = fmt::format(
        "{} declares link bandwidths; judging chunks against them needs the stored trace",
        t.spec());
  else if (uses_nonblocking(m.body))
    unstreamable =
        "the receive ports of irecvs are ordered when the run ends; a nonblocking model needs "
        "the stored trace";
  else if (m.header.collective == Collective::Barrier)
    unstreamable =
        "the barrier's postcondition replays every send and receive; it needs the "
        "stored trace";
  bool stream = opts.stream == RunOptions::Stream::On ||
                (opts.stream == RunOptions::Stream::Auto && unstreamable.empty() &&
                 stored > opts.max_memory / 4);
  if (stream && !unstreamable.empty()) throw StreamRefused(unstreamable);
  // A partitioned run is a streamed one: its nodes and their transfers are spread over the
  // processes (docs/partitioned.md). The estimate is of this process's slice.
  const NodeId lo = drv ? drv->lo(p) : 0, hi = drv ? drv->hi(p) : p;
  if (drv && !stream)
    throw StreamRefused(
        !unstreamable.empty()
            ? "partitioned verify follows streamed runs only, and " + unstreamable
            : fmt::format("partitioned verify follows streamed runs only, and this run would keep "
                          "its trace (--stream {}{}); use --stream on",
                          opts.stream == RunOptions::Stream::Off ? "off" : "auto",
                          opts.stream == RunOptions::Stream::Auto
                              ? ": it fits in a quarter of --max-memory"
                              : ""));
  if (drv) {
    p = hi - lo;
    est = sat_mul(p, per_node);
  }
  // Streamed: the window of waiting transfers, about one per processor and a quarter of slack
  // (48 bytes each), and two timing references per node.
  est = sat_add(est, stream ? sat_mul(p, 60 + 16) : stored);
  est = sat_add(est, collective_bytes(coll, opts.domain, p, elems));
  if (est > opts.max_memory)
    throw LimitError(fmt::format(
        "running {} on {} ({} processors{}, {} domain{}) needs about {}, more than the memory "
        "limit of {}; use a smaller topology{}, or raise --max-memory",
        m.header.name, t.spec(), p,
        tr.claimed_steps ? fmt::format(", {} claimed steps", *tr.claimed_steps) : "",
        domain_name(opts.domain), stream ? ", streamed" : "", mib_text(est),
        mib_text(opts.max_memory),
        opts.domain != DomainKind::Fingerprint ? ", the fingerprint domain"
        : !stream && unstreamable.empty()      ? ", --stream on"
                                               : ""));
  // Single-port: at most p transfers per step. Reserving both arrays avoids copying gigabytes
  // as they grow on large runs (star:10 records 163 million transfers).
  if (!stream && tr.claimed_steps && *tr.claimed_steps > 0 && *tr.claimed_steps < (1LL << 30)) {
    auto n = static_cast<std::size_t>(p) * static_cast<std::size_t>(*tr.claimed_steps);
    tr.transfers.reserve(n);
    if (elems == 1) tr.payload.reserve(n);
  }

  p = static_cast<std::uint32_t>(t.num_processors());
  tr.domain = make_domain(opts.domain, p, elems, opts.seed);
  MemoryWatch watch(fmt::format("running {} on {}", m.header.name, t.spec()), opts.max_memory);
  tr.domain->set_watch(&watch);
  struct Unwatch {  // the Trace outlives the watch
    Domain* d;
    ~Unwatch() { d->set_watch(nullptr); }
  } unwatch{tr.domain.get()};
  Machine mach(m, t, opts, tr, watch, lo, hi);
  mach.dom_ = tr.domain.get();
  if (stream) mach.start_stream();
  mach.reserve_timing(tr.transfers.capacity());
  int in_slot = -1, out_slot = -1;
  for (std::size_t i = 0; i < m.var_names.size(); ++i) {
    if (m.var_names[i] == m.header.input) in_slot = static_cast<int>(i);
    if (m.var_names[i] == m.header.output) out_slot = static_cast<int>(i);
  }
  COLLV_ASSERT(in_slot >= 0 && out_slot >= 0);
  tr.initial_input =
      initial_inputs(m.header.collective, *tr.domain, p, opts.root, lo, hi, opts.count);
  mach.set_input(in_slot, tr.initial_input);
  if (drv) {
    tr.slice_base = lo;
    StreamTotals totals = drv->drive(mach, tr);
    tr.final_output = mach.take_column(out_slot);
    finish_stream(tr, std::move(totals), opts);
    return tr;
  }
  mach.run();
  mach.check_self_messages();
  tr.final_output = mach.take_column(out_slot);
  if (mach.stream_) {
    StreamTiming& st = *mach.stream_;
    st.finish();
    finish_stream(tr, {st.issued(), st.unreceived(), st.unresolved(), st.steps(), st.per_step()},
                  opts);
    return tr;
  }
  apply_timing(tr, mach.timing_record(), opts);
  tr.unreceived = mach.unreceived();
  tr.compute_stats();
  return tr;
}

Trace run_model_sliced(const Model& m, const Topology& t, const RunOptions& opts, SliceDriver& d) {
  return run_model_once(m, t, opts, &d);
}

Trace run_model(const Model& m, const Topology& t, const RunOptions& opts) {
  if (opts.stream != RunOptions::Stream::Auto) return run_model_once(m, t, opts);
  // Auto: a streamed run that cannot follow the model, or whose transfer checks need the stored
  // trace, is run again with the trace kept when that fits in memory.
  RunOptions stored = opts;
  stored.stream = RunOptions::Stream::Off;
  Trace tr;
  try {
    tr = run_model_once(m, t, opts);
  } catch (const StreamRefused&) {
    return run_model_once(m, t, stored);
  }
  if (!tr.streamed || tr.stream_incomplete.empty()) return tr;
  try {
    return run_model_once(m, t, stored);
  } catch (const LimitError&) {
    return tr;  // too large to keep: the streamed verdicts, with the transfer checks unknown
  }
}

}  // namespace collv
