// Expression evaluation (see eval.hpp).
#include "exec/eval.hpp"

#include <algorithm>
#include <cmath>

namespace collv::interp {

namespace {

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

}  // namespace

std::int64_t Evaluator::env_value(const Expr& e, NodeId v) {
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

void Evaluator::eval_int(const Expr& e, const NodeId* nodes, std::size_t cnt, std::int64_t* out,
                         int depth) {
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
              rt_error(e, nodes[i],
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
      for (std::size_t i = 0; i < cnt; ++i) out[i] = array_element(e, a, nodes[i], out[i]);
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
      if (e.name == "counts" || e.name == "displs" || e.name == "sdispls" || e.name == "rdispls") {
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
          auto r = neighbor(nodes[i], static_cast<int>(x));
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
void Evaluator::eval_v_count(const Expr& e, const NodeId* nodes, std::size_t cnt, std::int64_t* out,
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

void Evaluator::eval_data(const Expr& e, const NodeId* nodes, std::size_t cnt, Buffer* out,
                          int depth) {
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
            rt_error(e, nodes[i],
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
void Evaluator::store(const Expr& target, const NodeId* nodes, std::size_t cnt, Buffer* val,
                      int depth, bool receive) {
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
void Evaluator::check_buffer_size(const Expr& e, NodeId v, std::uint64_t n) {
  if (n > kMaxBufferItems)
    throw LimitError(fmt::format(
        "{}: at node {} ({}) a buffer would hold {} items; a buffer may hold at most {}",
        e.loc.str(), v, topo_.label(v), n, kMaxBufferItems));
}

// Positions a .. b of a buffer that a statement writes: before the first position is the
// model's fault; past 2^28 items (kMaxBufferItems) a limit of collv (exit 3).
void Evaluator::check_positions(const Expr& target, NodeId v, std::int64_t a, std::int64_t b,
                                const char* verb) {
  if (a < 0 || b < a - 1)
    rt_error(target, v, fmt::format("cannot {} positions [{} .. {}]", verb, a, b));
  if (b >= static_cast<std::int64_t>(kMaxBufferItems))
    throw LimitError(fmt::format(
        "{}: at node {} ({}) positions [{} .. {}] lie past the {} items a buffer may hold (a "
        "limit of collv, not a fault of the model)",
        target.loc.str(), v, topo_.label(v), a, b, kMaxBufferItems));
}

}  // namespace collv::interp
