// The every-p prover's binomial fan-in (docs/smt.md, "Every p from the model", binomial trees,
// "The fan-in"): MPICH's gather and reduce from any root. A rank with relative rank rel runs
//   while C do  [assignments]
//     if (V AND mask) = 0 then  [assignments] [if C2 then] receive X from E [assignments] [endif]
//                               [assignments]
//     else  send Y to E; break  endif
//     [assignments]
//   endwhile
// then assignments, `if`s and `for` loops without communication (the root's rotation of tmp into
// the result), and at most one send then one receive (every_p_fanin_tail.cpp). The send branch
// may end with assignments instead of `break` (a flag: `done := 1` under `while ... and done =
// 0`; leave-loop-while checks that the condition then fails), and in Open MPI's shape the bit
// test is the loop condition's second operand and the send comes after the loop, read on the
// paths that leave at the bit (every_p_fanin_tail.cpp, fanin_presend). The loop is unrolled, as the
// fan-out's (every_p_tree.cpp): the mask is a numeral at every iteration, so its bit tests are
// linear terms, and it runs at most 32 iterations (ranks are 32-bit, p < 2^31). Unlike the fan-out,
// a rank receives in many iterations (one a child, each under `if src < p`) before its one send, so
// the state is not unrolled along a path (a chain of up to 31 guarded concatenations or sums): the
// proof gives the **holder invariant**, the value of each data variable the loop carries at the
// head of every iteration (`invariant while VAR length|block TERM`, over r, p, count, root, the
// iteration k and the loop's numerals, e.g. the mask), and each iteration j is one induction step
// for every rank at once. Per iteration j (tags `recv-kJ`: the ranks that reach iteration j with
// bit j of V clear; `send-kJ`: those with bit j set, which send and leave; `exit-kJ`: those that
// leave at the head of j):
//   initiation-V-loop-while   the state before the loop is the holder at iteration 0;
//   consecution-V-loop-while  from the holder at j (for r and for its source S: the message is
//                             the program's send expression in S's state at j), r's body gives
//                             the holder at j + 1 (the receive under its guard, merged);
//   match-line-N              r's source S is a rank that, at iteration j, takes the send branch
//                             and sends to r: every receive is matched by that send, one message
//                             on the channel (S sends once in all);
//   order-line-N              0 <= order(S) < order(r) (the proof's order): a child finishes
//                             (its receives, then its buffered send) before its parent waits for
//                             it, so by induction on order no rank waits forever: no deadlock;
//   received-line-N           every send goes to a rank D that, at iteration j, takes the receive
//                             branch, its guard holds and its source is r;
//   send-dst-line-N, read-..., nodup-V-line-N, fill-line-N, combine-...   as elsewhere;
//   rounds-line-N             along a path the rounds of iterations 0 .. j (the proof's round at
//                             each, a function of the numerals) strictly increase and lie in
//                             0 .. steps - 1: one event of a rank a round, every message sent and
//                             received in the round of its iteration (single-port);
//   steps-root                the root's events (receives) equal the claim;
//   postcondition-...         at the end of every path, after the statements after the loop;
//   infeasible-line-N         a path (or a branch after the loop) no rank takes, pruned;
//   unroll-bound, bits-prefix-kK, bits-lemma-J   as for the fan-out: a path states its bit tests
//                             as one fact, (mod V 2^j) = 0 at the head of iteration j.
#include <functional>

#include "smt/every_p_analyzer.hpp"
#include "smt/every_p_bits.hpp"

namespace collv::everyp {

const char* const kFanShape =
    "a binomial fan-in (docs/smt.md) is `while C do [assignments] if (V AND "
    "mask) = 0 then [assignments] [if C2 then] receive X from E [assignments] [endif] "
    "[assignments] else send Y to E; break | send Y to E; assignments after which C fails "
    "endif [assignments] endwhile` (or Open MPI's `while C and (V AND mask) = 0 do [if C2 "
    "then] receive X from E [assignments] [endif] [assignments] endwhile`, the send after it) "
    "with nothing before it that sends or receives, then assignments, `if`s and `for` loops "
    "without communication, and at most one send, then at most one receive";

std::string Analyzer::test_over_bx(const Expr& cond, const State& st, const std::string& v) {
  // my_id is the rank r itself: the test (over my_id and numerals only, checked by the caller)
  // with r renamed.
  if (v == "my_id") return rename(bool_expr(cond, st), {{"r", "bx"}});
  State sx = st;
  sx.ints[v] = Lin{"0", "bx"};
  const bool had = bit_xs_.count("bx") > 0;
  std::string tx = bool_expr(cond, sx);
  if (!had) bit_xs_.erase("bx");
  return tx;
}

bool Analyzer::fanin_shape(const Stmt& w) {
  for (const auto& b : w.body)
    if (b->kind == StmtKind::If)
      for (const auto& e : b->else_body)
        if (e->kind == StmtKind::Send) return true;
  return fanin_ompi(w);
}

// Open MPI's fan-in: `while C and (V AND mask) = 0 do` whose body receives and never sends (the
// send to the parent comes after the loop).
bool Analyzer::fanin_ompi(const Stmt& w) {
  const Expr& c = *w.cond;
  if (!(c.kind == ExprKind::Binary && c.op == Op::And && is_bit_test(*c.args[1]))) return false;
  std::function<bool(const std::vector<StmtPtr>&)> sends = [&](const std::vector<StmtPtr>& b) {
    for (const auto& x : b)
      if (x->kind == StmtKind::Send || sends(x->body) || sends(x->else_body)) return true;
    return false;
  };
  return has_comm(w.body) && !sends(w.body);
}

bool Analyzer::is_bit_test(const Expr& e) {
  return e.kind == ExprKind::Binary && e.op == Op::Eq && e.args[1]->kind == ExprKind::Number &&
         e.args[1]->value == 0 && e.args[0]->kind == ExprKind::Binary &&
         e.args[0]->op == Op::BitAnd && e.args[0]->args[0]->kind == ExprKind::Name;
}

void Analyzer::fanin(const std::vector<const Stmt*>& todo, std::size_t at, const Path& path) {
  const auto& h = m_.header;
  const Stmt& w = *todo[at];
  // Every match is between iterations of this loop: the first reading has nothing to collect.
  if (pass1_) return;
  if (!path.sends.empty() || !path.recvs.empty() || !rsends_.empty() || !rrecvs_.empty())
    refuse("a binomial fan-in and other communication in one program is outside the fragment",
           w.loc);
  if (mentions(path.pc, "r"))
    refuse("a binomial fan-in on a path the rank chooses before its loop is outside the fragment",
           w.loc);

  // The shape: assignments (pre), the `if` on the bit (cif), assignments (post); in its then
  // branch assignments (tpre), the receive (under gif, with tin), assignments (tpost). Open MPI's
  // shape: the bit test is the loop condition's second operand, the body the receive (under gif,
  // with tin) and assignments (post), and the send comes after the loop.
  const bool ompi = fanin_ompi(w);
  const std::vector<const Stmt*> rest(todo.begin() + static_cast<std::ptrdiff_t>(at) + 1,
                                      todo.end());
  std::vector<const Stmt*> pre, post, tpre, tin, tpost;
  const Stmt* cif = nullptr;
  const Stmt* gif = nullptr;
  const Stmt* rcv = nullptr;
  // A receive, bare or first in an `if` without else followed by assignments.
  auto take_receive = [&](const Stmt* x) {
    if (x->kind == StmtKind::If && x->else_body.empty() && !x->body.empty() &&
        x->body[0]->kind == StmtKind::Receive) {
      gif = x;
      rcv = x->body[0].get();
      for (std::size_t i = 1; i < x->body.size(); ++i) {
        if (x->body[i]->kind != StmtKind::Assign) refuse(kFanShape, x->body[i]->loc);
        tin.push_back(x->body[i].get());
      }
      return;
    }
    if (x->kind != StmtKind::Receive) refuse(kFanShape, x->loc);
    rcv = x;
  };
  bool brk = true;
  std::vector<const Stmt*> sflag;  // the assignments after the send (no `break`)
  const Stmt* first_send = nullptr;
  if (ompi) {
    for (const auto& b : w.body) {
      if (b->kind == StmtKind::Assign && rcv) {
        post.push_back(b.get());
        continue;
      }
      if (rcv) refuse(kFanShape, b->loc);
      take_receive(b.get());
    }
    // The send: the first one after the loop (each path that leaves at the bit must reach it).
    std::function<const Stmt*(const std::vector<const Stmt*>&)> find =
        [&](const std::vector<const Stmt*>& seq) -> const Stmt* {
      for (const Stmt* x : seq) {
        if (x->kind == StmtKind::Send) return x;
        for (const auto* part : {&x->body, &x->else_body}) {
          std::vector<const Stmt*> in;
          for (const auto& y : *part) in.push_back(y.get());
          if (const Stmt* f = find(in)) return f;
        }
      }
      return nullptr;
    };
    first_send = find(rest);
    if (!first_send) refuse(kFanShape, w.loc);
  } else {
    for (const auto& b : w.body) {
      if (b->kind == StmtKind::Assign) {
        (cif ? post : pre).push_back(b.get());
        continue;
      }
      if (b->kind != StmtKind::If || cif) refuse(kFanShape, b->loc);
      cif = b.get();
    }
    // The send branch leaves the loop: `send; break`, or `send` then assignments after which the
    // loop's condition fails (a flag: `done := 1` under `while ... and done = 0`, checked below).
    if (!cif || cif->else_body.size() < 2 || cif->else_body[0]->kind != StmtKind::Send)
      refuse(kFanShape, cif ? cif->loc : w.loc);
    brk = cif->else_body[1]->kind == StmtKind::Break;
    for (std::size_t i = 1; i < cif->else_body.size(); ++i) {
      const Stmt* x = cif->else_body[i].get();
      if ((brk && (i > 1 || x->kind != StmtKind::Break)) || (!brk && x->kind != StmtKind::Assign))
        refuse(kFanShape, x->loc);
      if (!brk) sflag.push_back(x);
    }
    for (const auto& b : cif->body) {
      const Stmt* x = b.get();
      if (x->kind == StmtKind::Assign) {
        (rcv ? (gif ? tpost : tin) : tpre).push_back(x);
        continue;
      }
      if (rcv) refuse(kFanShape, x->loc);
      take_receive(x);
    }
  }
  const Stmt& snd = ompi ? *first_send : *cif->else_body[0];
  const SourceLoc tloc = ompi ? w.loc : cif->loc;  // where the bit test is
  const Expr& loop_c = ompi ? *w.cond->args[0] : *w.cond;
  if (!rcv) refuse(kFanShape, tloc);
  for (const Stmt* c : {rcv, &snd})
    if (c->along_link) refuse("`along link` is outside the fragment", c->loc);
  const Expr& c1e = ompi ? *w.cond->args[1] : *cif->cond;
  if (!is_bit_test(c1e))
    refuse(
        "a fan-in's test must be `(V AND mask) = 0` (V a variable, mask 2^k "
        "at iteration k)",
        tloc);
  const Expr& vx = *c1e.args[0]->args[0];
  const Expr& mx = *c1e.args[0]->args[1];

  // What the loop assigns: locals (written whole before any read, on the receive branch; the
  // send reads them only if the assignments before the `if` wrote them), integers carried as
  // numerals (the mask), data carried with the proof's holder invariant.
  std::set<std::string> asg;
  assigned(w.body, asg);
  auto writes_whole = [](const Stmt* s, const std::string& v) {
    return (s->kind == StmtKind::Assign || s->kind == StmtKind::Receive) &&
           s->target->kind == ExprKind::Name && s->target->name == v;
  };
  auto reads_stmt = [](const Stmt* s, const std::string& v) {
    return (s->value && reads_name(*s->value, v)) || (s->peer && reads_name(*s->peer, v)) ||
           (s->target && s->target->kind != ExprKind::Name && reads_name(*s->target, v));
  };
  auto is_local = [&](const std::string& v) {
    if (reads_name(*w.cond, v)) return false;
    bool in_pre = false;
    for (const Stmt* s : pre) {
      if (reads_stmt(s, v)) return false;
      if (writes_whole(s, v)) in_pre = true;
    }
    if (in_pre) return true;
    if (reads_stmt(&snd, v) || reads_name(c1e, v)) return false;
    std::vector<const Stmt*> seq = tpre;
    for (const Stmt* s : std::vector<const Stmt*>{rcv}) seq.push_back(s);
    for (const auto* part : {&tin, &tpost, &post})
      seq.insert(seq.end(), part->begin(), part->end());
    for (const Stmt* s : seq) {
      if (s == rcv && gif && reads_name(*gif->cond, v)) return false;
      if (reads_stmt(s, v)) return false;
      if (writes_whole(s, v)) return true;
    }
    return false;
  };
  auto checked = [&](const EveryPInvariant* inv, const std::set<std::string>& vars) {
    std::string why = check_user_term(inv->term, vars);
    if (!why.empty())
      throw Refused{fmt::format("{}:{}: {} term: {}", pf_.path, inv->line, inv->part, why),
                    SourceLoc{pf_.path, inv->line, 1}};
    return mod_p_by_cases(inv->term);
  };
  std::map<std::string, long long> nums;  // carried integers at the head of the iteration
  std::vector<std::string> carried_data, locals;
  for (const auto& v : asg) {
    if (is_local(v)) {
      locals.push_back(v);
      continue;
    }
    bool data = false;
    for (std::size_t k = 0; k < m_.var_names.size(); ++k)
      if (m_.var_names[k] == v) data = m_.var_types[k] == Type::Data;
    if (data) {
      carried_data.push_back(v);
      continue;
    }
    auto f = path.st.ints.find(v);
    auto n = f == path.st.ints.end() ? std::nullopt : as_int(render(f->second));
    if (!n)
      refuse(fmt::format("the fan-in loop carries '{}', which must be a numeral before it (a mask)",
                         v),
             w.loc);
    nums[v] = *n;
  }
  std::set<std::string> hvars = {"r", "p", "count", "root", "k"};
  for (const auto& [v, n] : nums) hvars.insert(v);
  std::map<std::string, std::pair<std::string, std::string>> holder;  // var -> (length, block)
  for (const auto& v : carried_data) {
    const EveryPInvariant* li = invariant("while", v, "length");
    const EveryPInvariant* bi = invariant("while", v, "block");
    if (!li || !bi)
      refuse(fmt::format("the fan-in loop ({}) carries '{}': the proof needs 'invariant while {} "
                         "length TERM' and 'invariant while {} block TERM' (its value at the head "
                         "of every iteration, over r, k and the mask)",
                         w.loc.str(), v, v, v),
             w.loc);
    std::set<std::string> bv = hvars;
    bv.insert("b");
    holder[v] = {checked(li, hvars), checked(bi, bv)};
  }
  const EveryPInvariant* ord = invariant("tree", "#order", "order");
  const EveryPInvariant* rnd = invariant("tree", "#round", "round");
  if (!ord || !rnd)
    refuse(
        "a binomial fan-in needs 'order TERM' (a rank's place in the waits-for order, e.g. '(- p "
        "(mod (- r root) p))') and 'round TERM' (an iteration's round, e.g. '(clog2 mask)') in "
        "the proof",
        w.loc);
  // The loop's condition with folded operands deciding or dropping out of `and` / `or` (the
  // flag: `mask < p and done = 0` is `mask < p` at a head, false after the send branch).
  std::function<std::string(const Expr&, const State&)> cond_at = [&](const Expr& e,
                                                                      const State& st) {
    if (e.kind != ExprKind::Binary || (e.op != Op::And && e.op != Op::Or)) return bool_expr(e, st);
    const std::string a = cond_at(*e.args[0], st), b = cond_at(*e.args[1], st);
    const std::string unit = e.op == Op::And ? "true" : "false";
    const std::string zero = e.op == Op::And ? "false" : "true";
    if (a == zero || b == zero) return zero;
    if (a == unit) return b;
    if (b == unit) return a;
    return op2(e.op == Op::And ? "and" : "or", a, b);
  };
  const std::string order = checked(ord, {"r", "p", "count", "root"});
  std::set<std::string> rv = hvars;
  rv.erase("r");
  const std::string round_t = checked(rnd, rv);
  auto numerals = [&](int k, const std::map<std::string, long long>& nm) {
    std::map<std::string, std::string> ren{{"k", num(k)}};
    for (const auto& [v, n] : nm) ren[v] = num(n);
    return ren;
  };
  State st0 = path.st;
  for (auto& [name, buf] : st0.data) buf = Buf{mod_p_by_cases(buf.len), mod_p_by_cases(buf.blk)};
  auto head_state = [&](int k, const std::map<std::string, long long>& nm) {
    State s = st0;
    const auto ren = numerals(k, nm);
    for (const auto& [v, n] : nm) s.ints[v] = Lin{"0", num(n)};
    for (const auto& [v, hb] : holder)
      s.data[v] = Buf{rename(hb.first, ren), rename(hb.second, ren)};
    for (const auto& v : locals) {
      s.ints.erase(v);
      s.data.erase(v);
    }
    return s;
  };
  auto same = [](const std::string& len, const std::string& blk, const Buf& want) {
    return fmt::format("(and (= {} {}) (=> (and (<= 0 b) (< b {})) (= {} {})))", len, want.len, len,
                       blk, want.blk);
  };
  {
    const State first = head_state(0, nums);
    for (const auto& v : carried_data) {
      Buf before = st0.data.count(v) ? st0.data.at(v) : Buf{"0", "none"};
      oblige(path, fmt::format("initiation-{}-loop-while", v),
             fmt::format("before the fan-in loop ({}), {} equals its holder invariant at the first "
                         "iteration",
                         w.loc.str(), v),
             "(declare-const b Int)\n", "(> count 0)",
             same(before.len, before.blk, first.data.at(v)), w.loc);
    }
  }

  const int rl = rcv->loc.line, sl = snd.loc.line;
  struct End {
    Path P;
    int j;
    bool sends;
    std::string dst;                // the loop's send (send paths)
    std::vector<const Stmt*> rest;  // the statements after the loop (after Open MPI's send)
  };
  std::vector<End> ends;
  std::vector<std::string> rounds, guards, tests_x;
  std::string heads = "true", bx_term;
  auto alive = [&](int k) {
    return k == 0 ? std::string("true") : fmt::format("(= (mod {} {}) 0)", bx_term, 1LL << k);
  };
  constexpr int kUnroll = 32;
  for (int j = 0;; ++j) {
    const State hd = head_state(j, nums);
    const std::string c = cond_at(loop_c, hd);
    if (j == kUnroll) {
      Path U = path;
      U.pc = fmt::format("(and {} {})", path.pc, heads);
      oblige(U, "unroll-bound-loop-while",
             fmt::format("the condition of the fan-in loop ({}) fails at the head of iteration "
                         "{}: the loop runs at most {} times (ranks are 32-bit, p < 2^31)",
                         w.loc.str(), kUnroll, kUnroll),
             "", "true", fmt::format("(not {})", c), w.loc);
      break;
    }
    if (c != "true") {
      End e{path, j, false, "", rest};
      e.P.pc = fmt::format("(and {} {} (not {}) {})", path.pc, heads, c, alive(j));
      e.P.tag = fmt::format("exit-k{}", j);
      e.P.st = hd;
      if (!fanin_prune(e.P, fmt::format("infeasible-line-{}", w.loc.line), w.loc))
        ends.push_back(std::move(e));
    }
    if (c == "false") break;
    heads = fmt::format("(and {} {})", heads, c);
    Path A = path;
    A.pc = fmt::format("(and {} {} {})", path.pc, heads, alive(j));
    A.tag = fmt::format("head-k{}", j);
    A.st = hd;
    for (const Stmt* s : pre) straight(*s, A);
    // The test, in the prefix form: the same value X at every iteration, the mask 2^j.
    const std::string c1 = bool_expr(c1e, A.st);
    {
      const std::string x = render(int_expr(vx, A.st));
      auto mask = as_int(render(int_expr(mx, A.st)));
      const std::string tx = test_over_bx(c1e, A.st, vx.name);
      if ((j > 0 && x != bx_term) || !mask || *mask != (1LL << j) ||
          rename(tx, {{"bx", x}}) != c1 || mentions(x, "bx"))
        refuse(
            "the fan-in's test must test bit k of one value at iteration k "
            "(`(V AND mask) = 0`, mask 2^k, V unchanged by the loop)",
            tloc);
      bx_term = x;
      tests_x.push_back(tx);
    }
    const std::string lem = bit_lemma(bx_term, j);
    const std::string zero = fmt::format("(= (mod {} {}) 0)", bx_term, 1LL << (j + 1));
    const std::string one = fmt::format("(= (mod {} {}) {})", bx_term, 1LL << (j + 1), 1LL << j);
    rounds.push_back([&] {
      std::string t = rename(round_t, numerals(j, nums));
      for (const auto& v : hvars)
        if (v != "k" && mentions(t, v))
          refuse("the round term reads '" + v + "', which has no value here", w.loc);
      return t;
    }());
    // The send branch (bit j set; r sends to its parent and leaves the loop): its message and
    // destination, over r (the parent's receive reads them at S). Open MPI's send is after the
    // loop: the statements up to it are read on the path.
    Path Sd = A;
    Sd.pc = fmt::format("(and {} {} {} {})", path.pc, heads, one, lem);
    Sd.tag = fmt::format("send-k{}", j);
    const bool s_pruned = fanin_prune(Sd, fmt::format("infeasible-line-{}", tloc.line), tloc);
    std::vector<const Stmt*> s_after = rest;
    if (ompi && !s_pruned && fanin_presend(rest, Sd, s_after) != &snd)
      refuse("the ranks that leave a fan-in's loop at a bit must make its first send after it",
             snd.loc);
    std::vector<std::pair<std::string, std::string>> sreads;
    const Buf sval = data_expr(*snd.value, ompi ? Sd.st : A.st, &sreads);
    const std::string sdst = render(int_expr(*snd.peer, ompi ? Sd.st : A.st));

    // The receive branch: bit j clear.
    Path R = A;
    R.pc = fmt::format("(and {} {} {} {})", path.pc, heads, zero, lem);
    R.tag = fmt::format("recv-k{}", j);
    const bool r_pruned = fanin_prune(R, fmt::format("infeasible-line-{}", tloc.line), tloc);
    const std::size_t mark = out_.obligations.size();
    for (const Stmt* s : tpre) straight(*s, R);
    const std::string g = gif ? bool_expr(*gif->cond, R.st) : "true";
    const std::string src = render(int_expr(*rcv->peer, R.st));
    const std::string S = "(+ 0 " + src + ")";
    Path RG = R;
    RG.pc = fmt::format("(and {} {})", R.pc, g);
    oblige(RG, fmt::format("match-line-{}", rl),
           "r's source is a rank that, at the same iteration, takes the send branch and sends to "
           "r (its one send)",
           "", bit_lemma(at_rank(bx_term, S), j),
           fmt::format("(and (<= 0 {}) (< {} p) {} (= {} r))", S, S, at_rank(one, S),
                       at_rank(sdst, S)),
           rcv->loc);
    oblige(RG, fmt::format("order-line-{}", rl),
           "the rank r receives from comes before r in the proof's order (0 <= order(src) < "
           "order(r)): no cycle of waits, no deadlock",
           "", "true",
           fmt::format("(and (<= 0 {}) (< {} {}))", at_rank(order, S), at_rank(order, S), order),
           rcv->loc);
    const Buf msg{at_rank(sval.len, S), at_rank(sval.blk, S)};
    fanin_nodup(RG, msg, rcv->loc);
    const std::string fill = write(*rcv->target, msg, RG.st);
    if (fill != "true")
      oblige(RG, fmt::format("fill-line-{}", rl), "the message fills the receive's slice exactly",
             "", "(> count 0)", fill, rcv->loc);
    for (const Stmt* s : tin) straight(*s, RG);
    // After the guarded receive: a variable is ite(g, received, not), one with a value on the
    // receiving side only has none.
    Path M = R;
    if (g == "true") {
      M.st = RG.st;
    } else {
      M.st.ints.clear();
      M.st.data.clear();
      for (const auto& [v, l] : RG.st.ints)
        if (auto f = R.st.ints.find(v); f != R.st.ints.end())
          M.st.ints[v] = Lin{ite(g, l.c, f->second.c), ite(g, l.k, f->second.k)};
      for (const auto& [v, d] : RG.st.data)
        if (auto f = R.st.data.find(v); f != R.st.data.end())
          M.st.data[v] = d.len == f->second.len && d.blk == f->second.blk
                             ? d
                             : Buf{ite(g, d.len, f->second.len), ite(g, d.blk, f->second.blk)};
    }
    for (const auto* part : {&tpost, &post})
      for (const Stmt* s : *part) straight(*s, M);
    std::map<std::string, long long> next;
    for (const auto& [v, n] : nums) {
      auto f = M.st.ints.find(v);
      auto nv = f == M.st.ints.end() ? std::nullopt : as_int(render(f->second));
      if (!nv)
        refuse(
            fmt::format("the fan-in loop carries '{}', which is not a numeral after iteration {} "
                        "(a mask must change by numerals)",
                        v, j),
            w.loc);
      next[v] = *nv;
    }
    const State nx = head_state(j + 1, next);
    for (const auto& v : carried_data) {
      auto f = M.st.data.find(v);
      if (f == M.st.data.end()) refuse("'" + v + "' has no value after the fan-in's body", w.loc);
      oblige(M, fmt::format("consecution-{}-loop-while", v),
             fmt::format("the fan-in loop ({}): from the holder invariant at iteration {} (r's and "
                         "its source's), r's body gives {} its invariant at iteration {}",
                         w.loc.str(), j, v, j + 1),
             "(declare-const b Int)\n", "(> count 0)",
             same(f->second.len, f->second.blk, nx.data.at(v)), w.loc);
    }
    if (r_pruned)
      out_.obligations.erase(out_.obligations.begin() + static_cast<std::ptrdiff_t>(mark),
                             out_.obligations.end());
    guards.push_back(g);

    // The send branch's obligations.
    if (!s_pruned) {
      for (const auto& [gl, what] : sreads)
        oblige(Sd, read_name(what, fmt::format("line-{}", sl)), what, "(declare-const b Int)\n",
               "(> count 0)", gl, snd.loc);
      oblige(Sd, fmt::format("send-dst-line-{}", sl), "r sends to a rank", "", "true",
             fmt::format("(and (<= 0 {}) (< {} p))", sdst, sdst), snd.loc);
      const std::string D = "(+ 0 " + sdst + ")";
      oblige(Sd, fmt::format("received-line-{}", sl),
             "the rank r sends to takes the receive branch at the same iteration (same round), "
             "its guard holds and its source is r",
             "", bit_lemma(at_rank(bx_term, D), j),
             fmt::format("(and {} {} (= {} r))", at_rank(zero, D), at_rank(g, D), at_rank(src, D)),
             snd.loc);
      End e{Sd, j, true, sdst, s_after};
      if (!ompi) e.P.st = A.st;
      if (!brk) {
        // No `break`: the assignments after the send and those after the `if`, then the loop's
        // condition must fail (the rank takes no more part in the loop).
        for (const Stmt* x : sflag) straight(*x, e.P);
        for (const Stmt* x : post) straight(*x, e.P);
        const std::string again = cond_at(*w.cond, e.P.st);
        if (again != "false")
          oblige(e.P, "leave-loop-while",
                 fmt::format("after its send (line {}) r leaves the fan-in loop ({}): the loop's "
                             "condition fails",
                             sl, w.loc.str()),
                 "", "true", fmt::format("(not {})", again), snd.loc);
      }
      ends.push_back(std::move(e));
    }
    nums = next;
  }

  // Every path to its end: the statements after the loop, its rounds, the postcondition. The
  // first reading of the statements after the loop collects their sends and receives (its
  // queries are dropped), the second matches them.
  const std::string claim = h.steps ? header_term(*h.steps) : "";
  FanTail ft;
  ft.bx = bx_term;
  if (const EveryPInvariant* ra = invariant("tree", "#round-after", "round-after"))
    ft.round = checked(ra, {"p", "count", "root"});
  {
    const std::size_t mark = out_.obligations.size();
    const int loops = out_.loops;
    for (const auto& e : ends) {
      std::vector<FanPath> dropped;
      fanin_tail(e.rest, 0, FanPath{e.P, e.dst, {}, {}, false, false}, ft, dropped);
    }
    out_.obligations.erase(out_.obligations.begin() + static_cast<std::ptrdiff_t>(mark),
                           out_.obligations.end());
    out_.loops = loops;
    ft.collect = false;
  }
  // The rank whose events equal the claim (`witness steps TERM`; the root if not given).
  std::string wit = "root";
  if (const EveryPInvariant* wi = invariant("steps", "#witness", "witness"))
    wit = "(+ 0 " + checked(wi, {"p", "count", "root"}) + ")";
  for (const auto& e : ends) {
    std::vector<FanPath> finals;
    fanin_tail(e.rest, 0, FanPath{e.P, e.dst, {}, {}, false, false}, ft, finals);
    const std::size_t n = static_cast<std::size_t>(e.j) + (e.sends ? 1 : 0);
    std::string events = e.sends ? "1" : "0";
    for (int i = 0; i < e.j; ++i)
      events = add(events, ite(guards[static_cast<std::size_t>(i)], "1", "0"));
    for (const FanPath& f : finals) {
      const Path& P = f.P;
      std::vector<std::string> rs(rounds.begin(), rounds.begin() + static_cast<std::ptrdiff_t>(n));
      rs.insert(rs.end(), f.rounds.begin(), f.rounds.end());
      if (!rs.empty()) {
        std::string g = h.steps
                            ? fmt::format("(and (<= 0 {}) (< {} {}))", rs.front(), rs.back(), claim)
                            : "true";
        for (std::size_t i = 0; i + 1 < rs.size(); ++i)
          g = fmt::format("(and {} (< {} {}))", g, rs[i], rs[i + 1]);
        const bool after = !f.rounds.empty();
        oblige(P,
               fmt::format("rounds-line-{}", after     ? f.loc.line
                                             : e.sends ? sl
                                                       : rl),
               "the path's events (its iterations', then those after the loop) have rounds 0 <= "
               "round < steps, strictly increasing (one event of r a round)",
               "", "true", g,
               after     ? f.loc
               : e.sends ? snd.loc
                         : rcv->loc);
      }
      more_postcondition(P, data_var(h.output, P.st, h.loc));
      if (h.steps && !h.steps_at_most) {
        const std::string ev = add(events, num(static_cast<long long>(f.rounds.size())));
        // The witness must be a rank (the root is one by the queries' assumptions).
        tree_root_ = fmt::format("(or {} (and (<= 0 {}) (< {} p) {} (= {} {})))", tree_root_, wit,
                                 wit, at_rank(P.pc, wit), at_rank(ev, wit), claim);
      }
      ++paths_;
    }
  }

  // The prefix form's equivalences over the program's own tests, and the bits lemma.
  Path B = path;
  B.pc = "true";
  std::string zero_x = "true";
  for (std::size_t k = 0; k < tests_x.size(); ++k) {
    oblige(
        B, fmt::format("bits-prefix-k{}", k),
        fmt::format("for every integer x: the fan-in's bit tests (line {}) hold at iterations 0 "
                    ".. {} iff (mod x 2^{}) = 0, and then iteration {}'s fails iff (mod x 2^{}) "
                    "= 2^{}",
                    tloc.line, static_cast<long long>(k) - 1, k, k, k + 1, k),
        "(declare-const bx Int)\n", bit_lemmas("bx", static_cast<int>(k)),
        bits_prefix_claim("bx", zero_x, fmt::format("(not {})", tests_x[k]), static_cast<int>(k)),
        tloc);
    zero_x = fmt::format("(and {} {})", zero_x, tests_x[k]);
  }
  for (int j = 0; j <= 32; ++j)
    oblige(B, fmt::format("bits-lemma-{}", j),
           fmt::format("for every integer x: (mod x 2^{}) = (mod x 2^{}) + 2^{} * bit {} of x (the "
                       "instances the fan-in's queries assume)",
                       j + 1, j, j, j),
           "(declare-const x Int)\n", "true", bit_lemma("x", j), w.loc);
}

}  // namespace collv::everyp
