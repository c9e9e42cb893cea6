// The every-p prover's binomial trees (docs/smt.md, "Every p from the model", binomial trees):
// MPICH's broadcast from any root, a receive loop left by `break` once the rank has received,
// then a send loop that halves the mask from where the receive loop stopped.
//
// The shape (anything else is refused, naming the statement): at the end of a rooted program's
// path,
//   while C do  [assignments]  if C1 then receive X from E; break; endif  [assignments]  endwhile
//   [assignments]
//   while C2 do  [assignments]  [if C3 then [assignments]] send V to E [endif]  [assignments]
//   endwhile [assignments]
// The paths before the loops (MPICH's scatter: the root's, which lays x out first, and the
// others') are one tree: the first reading collects each one's unrolled paths (tree_calls_), the
// second matches every receive against the sends of all of them. A path of the receive loop no
// rank takes is pruned (`infeasible-line-N`, its unsat query the certificate).
// Both loops are unrolled: the mask starts as a numeral and the bodies double or halve it, so at
// every iteration it is a numeral and its bit tests `(rel AND mask)` are linear integer terms
// (every_p_bits.hpp). The receive loop runs at most 32 iterations (`unroll-bound`: its condition
// fails at the 33rd head, which needs p < 2^31); each iteration k splits the rank's path into
// `exit-kK` (the condition fails at head K) and `recv-kK` (C1 holds: the rank receives at
// iteration K). On every path the send loop's condition is then a numeral (it must be, else
// refused): it runs a known number of times, each send guarded by its condition C3.
//
// The proof file gives three terms: `order TERM` (over r, p, root: a rank's place in the
// waits-for order), `round TERM` (over p, root and the program's integer variables at a send or
// receive: its round; it may not depend on r) and `message length|block TERM` (what every
// message carries, over p, root, b, the receiver r and the numerals of the unrolled loops: a
// send matches only a receive of equal numerals). Obligations, on each path P (NAME-line-N@P):
//   unroll-bound-loop-while  the receive loop's condition fails after 32 iterations;
//   match-line-N        the receive's source S is a rank that, on its path, sends to r in the
//                       receive's round (the paths that continue past the iteration of the
//                       matching mask, when they all make that send, are one disjunct);
//   order-line-N        0 <= order(S) < order(r): the rank r waits for waits for nobody after
//                       r, so by induction on order every receive completes (sends are buffered
//                       and come after the path's one receive): no deadlock;
//   received-line-N     every send goes to a rank whose path receives from r in the send's round
//                       (one obligation for the sends that every path past an iteration m of the
//                       receive loop makes: `@past-km`);
//   send-dst-line-N     every send goes to a rank;
//   message-line-N      every send carries the message term, assuming the path's receive got it
//                       (induction on order: the sender comes before r, its sends carry it);
//   nodup-V-line-N, fill-line-N, read-...   as for the other fragments, the received value
//                       being the message term;
//   rounds-line-N       strictly increasing rounds along the path (and 0 <= round < steps):
//                       with received-line-N and one receive a path, no rank sends twice to one
//                       rank (the receiver's one receive has one round, the two sends two), so
//                       the match is the only message on its channel;
//                       a schedule of `steps` synchronous rounds, one event of a rank per round,
//                       each message sent and received in its round; with `steps-root` (the root
//                       sends `steps` messages, one a round) the round count is exactly steps;
//   postcondition-...   at the path's end, as for every rooted program;
//   bits-prefix-kK      the prefix form (below, where the receive loop is built): for every
//                       integer x, the program's bit tests of iterations 0 .. K - 1 all false
//                       iff (mod x 2^K) = 0, and iteration K's true iff (mod x 2^(K+1)) = 2^K,
//                       so each path states one fact about rel instead of K + 1 bit tests;
//   bits-lemma-J        the bits lemma (every_p_bits.hpp), assumed by the above.
#include "smt/every_p_analyzer.hpp"
#include "smt/every_p_bits.hpp"

namespace collv::everyp {

struct TreeSend {
  std::string guard, dst, round;
  std::string key;  // the numerals the message term reads (a send matches a receive of equal key)
  Buf val, msg;     // what it sends, and the message term for its destination
  std::vector<std::pair<std::string, std::string>> reads;
  SourceLoc loc;
};

struct TreePath {
  std::string pc, tag, src, round;  // src, round: the receive's (recv paths)
  std::string key;                  // the receive's message key, and the message it gets
  Buf msg;
  int iter = 0;  // the receive loop's iteration it left at
  bool recv = false;
  State st;
  std::vector<TreeSend> sends;
  std::string nsend = "0";
};

// One reading of the tree, on one path before the receive loop (the root's and the others' when
// the program branches before the loops): its paths, and alive[m] (past iteration m).
struct TreeCall {
  std::string pre;  // the path's condition before the loops
  std::vector<TreePath> tps;
  std::vector<std::string> alive;
};

namespace {

const char* kShape =
    "a binomial tree (docs/smt.md): `while C do [assignments] if C1 then receive X from E; "
    "break; endif [assignments] endwhile`, assignments, then `while C2 do [assignments] [if C3 "
    "then] send V to E [endif] [assignments] endwhile` at the end of the path, with nothing "
    "before it that sends or receives";

}  // namespace

void Analyzer::tree(const std::vector<const Stmt*>& todo, std::size_t at, const Path& path) {
  const auto& h = m_.header;
  const Stmt& w1 = *todo[at];
  if (!path.sends.empty() || !path.recvs.empty()) refuse(kShape, w1.loc);
  // The receive loop's body: assignments and one `if C1 then receive; break endif`.
  const Stmt* rif = nullptr;
  for (const auto& b : w1.body) {
    if (b->kind == StmtKind::Assign) continue;
    if (b->kind != StmtKind::If || rif || !b->else_body.empty() || b->body.size() != 2 ||
        b->body[0]->kind != StmtKind::Receive || b->body[1]->kind != StmtKind::Break)
      refuse(kShape, b->loc);
    rif = b.get();
  }
  if (!rif) refuse(kShape, w1.loc);
  const Stmt& rcv = *rif->body[0];
  if (rcv.along_link) refuse("`along link` is outside the fragment", rcv.loc);
  std::size_t w2i = at + 1;
  while (w2i < todo.size() && todo[w2i]->kind == StmtKind::Assign) ++w2i;
  if (w2i >= todo.size() || todo[w2i]->kind != StmtKind::While)
    refuse(kShape, w2i < todo.size() ? todo[w2i]->loc : w1.loc);
  for (std::size_t k = w2i + 1; k < todo.size(); ++k)  // assignments after the send loop
    if (todo[k]->kind != StmtKind::Assign) refuse(kShape, todo[k]->loc);
  const Stmt& w2 = *todo[w2i];
  int nsend_stmts = 0;
  for (const auto& b : w2.body) {
    if (b->kind == StmtKind::Assign) continue;
    const Stmt* snd = b.get();
    if (b->kind == StmtKind::If && b->else_body.empty() && !b->body.empty()) {
      // `if C3 then [assignments] send V to E endif`
      snd = b->body.back().get();
      for (std::size_t i = 0; i + 1 < b->body.size(); ++i)
        if (b->body[i]->kind != StmtKind::Assign) refuse(kShape, b->body[i]->loc);
    }
    if (snd->kind != StmtKind::Send || ++nsend_stmts > 1) refuse(kShape, b->loc);
    if (snd->along_link) refuse("`along link` is outside the fragment", snd->loc);
  }
  if (nsend_stmts == 0) refuse(kShape, w2.loc);
  if (!pass1_ && (!rsends_.empty() || !rrecvs_.empty()))
    refuse("a binomial tree on one path and other communication on another is outside the fragment",
           w1.loc);

  // The proof's terms.
  auto need = [&](const char* var, const char* part, const char* example) {
    const EveryPInvariant* inv = invariant("tree", var, part);
    if (!inv)
      refuse(fmt::format("a binomial tree needs '{}' in the proof (e.g. '{}')", example, example),
             w1.loc);
    return inv;
  };
  const EveryPInvariant* ord = need("#order", "order", "order (mod (- r root) p)");
  const EveryPInvariant* rnd = need("#round", "round", "round (- (clog2 p) 1 (clog2 mask))");
  const EveryPInvariant* mlen = need("#message", "length", "message length 1");
  const EveryPInvariant* mblk = need("#message", "block", "message block (it root 0)");
  std::set<std::string> names;
  {
    std::set<std::string> a;
    assigned(w1.body, a);
    assigned(w2.body, a);
    for (std::size_t k = at + 1; k < w2i; ++k) a.insert(todo[k]->target->name);
    for (const auto& [n, v] : path.st.ints) a.insert(n);
    for (const auto& n : a)
      if (n != "r" && n != "b" && n != "p" && n != "q" && n != "t") names.insert(n);
  }
  auto checked = [&](const EveryPInvariant* inv, std::set<std::string> vars) {
    std::string why = check_user_term(inv->term, vars);
    if (!why.empty())
      throw Refused{fmt::format("{}:{}: {} term: {}", pf_.path, inv->line, inv->part, why),
                    SourceLoc{pf_.path, inv->line, 1}};
    return inv->term;
  };
  const std::string order = mod_p_by_cases(checked(ord, {"r", "p", "count", "root"}));
  std::set<std::string> rvars = names;
  rvars.insert({"p", "count", "root"});
  const std::string round_t = checked(rnd, rvars);
  // The message may depend on the receiver r and on the program's integer variables that are
  // numerals at the receive and at the send (the unrolled mask): a send and a receive match only
  // where those numerals agree, so the term the sender is held to is the one the receiver gets.
  std::set<std::string> mvars = names;
  mvars.insert({"p", "count", "root", "r"});
  const Buf msg_t{mod_p_by_cases(checked(mlen, mvars)), [&] {
                    mvars.insert("b");
                    return mod_p_by_cases(checked(mblk, mvars));
                  }()};
  std::set<std::string> msg_names;
  for (const auto& n : names)
    if (mentions(msg_t.len, n) || mentions(msg_t.blk, n)) msg_names.insert(n);
  // The message at an event with state st, for the receiver rr; and the numerals it reads.
  auto msg_key = [&](const State& st, const SourceLoc& loc) {
    std::string key;
    for (const auto& n : msg_names) {
      auto f = st.ints.find(n);
      auto v = f == st.ints.end() ? std::nullopt : as_int(render(f->second));
      if (!v)
        refuse("the message term reads '" + n +
                   "', which is not a numeral here (it must be a "
                   "variable of the unrolled loops)",
               loc);
      key += fmt::format("{}={};", n, *v);
    }
    return key;
  };
  auto msg_at = [&](const State& st, const std::string& rr, const SourceLoc& loc) {
    msg_key(st, loc);
    std::map<std::string, std::string> ren{{"r", rr}};
    for (const auto& n : msg_names) ren[n] = render(st.ints.at(n));
    return Buf{rename(msg_t.len, ren), rename(msg_t.blk, ren)};
  };
  auto round_at = [&](const State& st, const SourceLoc& loc) {
    std::map<std::string, std::string> ren;
    for (const auto& n : names) {
      auto f = st.ints.find(n);
      if (f != st.ints.end()) ren[n] = "(+ 0 " + render(f->second) + ")";
    }
    std::string t = rename(round_t, ren);
    for (const auto& n : names)
      if (mentions(t, n)) refuse("the round term reads '" + n + "', which has no value here", loc);
    if (mentions(t, "r"))
      refuse(
          "the round term depends on the rank here (it must be a function of the numerals "
          "of the unrolled loops and p)",
          loc);
    return t;
  };

  // With a tree on more than one path before the loops (the root's and the others'), each path's
  // obligations are tagged with that path's index (pathN-recv-k3).
  std::string tpre;
  if (!pass1_ && tree_calls_.size() > 1) tpre = fmt::format("path{}-", path.index);
  // The lemmas are stated once, with the first path's tree.
  const bool first_call = pass1_ || tree_calls_.empty() || tree_calls_.front()->pre == path.pc;

  // The receive loop, unrolled: iteration k's head is reached on `spine`.
  constexpr int kUnroll = 32;
  std::vector<TreePath> tps;
  std::vector<std::string> alive;  // alive[k]: past iteration k without leaving the loop
  Path cur = path;
  cur.sends.clear();
  // The buffers' terms from before the loops (a root's layout loop: its invariant's closed form)
  // with their mod p by cases too.
  for (auto& [name, buf] : cur.st.data) buf = Buf{mod_p_by_cases(buf.len), mod_p_by_cases(buf.blk)};
  std::string spine = path.pc;
  // The prefix form (MPICH's `(rel AND mask) <> 0`, mask = 2^k at iteration k): the bit tests
  // of iterations 0 .. k - 1 all false is the one fact (mod X 2^k) = 0, and with iteration k's
  // true (mod X 2^(k+1)) = 2^k, X the tested value (the same term at every iteration). Each
  // equivalence is an obligation over the program's own tests (`bits-prefix-kK`, for every
  // integer x); the paths then state the one fact instead of k + 1 bit tests, and Z3 decides the
  // parent's bits without branch-and-bound over k divisions. Built beside the bit-test form,
  // used when every iteration's test has that shape (else the bit tests, as before).
  const Expr* bx_e = nullptr;  // E of `(E AND M) <> 0`, E a variable
  {
    const Expr& c1 = *rif->cond;
    if (c1.kind == ExprKind::Binary && c1.op == Op::Ne && c1.args[1]->kind == ExprKind::Number &&
        c1.args[1]->value == 0 && c1.args[0]->kind == ExprKind::Binary &&
        c1.args[0]->op == Op::BitAnd && c1.args[0]->args[0]->kind == ExprKind::Name)
      bx_e = c1.args[0]->args[0].get();
  }
  bool prefix = bx_e != nullptr;
  std::string bx_term;                 // X
  std::vector<std::string> tests_x;    // iteration k's bit test over the free name bx
  std::string heads = path.pc;         // the loop's conditions at heads 0 .. k (no bit tests)
  std::vector<std::string> pc_prefix;  // tps[i]'s condition in the prefix form
  std::vector<std::string> alive_prefix;
  auto zero_below = [&](int k) {
    return k == 0 ? std::string("true") : fmt::format("(= (mod {} {}) 0)", bx_term, 1LL << k);
  };
  for (int k = 0;; ++k) {
    std::string c = bool_expr(*w1.cond, cur.st);
    if (k == kUnroll) {
      Path at_bound = path;
      at_bound.pc = spine;
      at_bound.tag = tpre.empty() ? "" : tpre.substr(0, tpre.size() - 1);
      oblige(at_bound, "unroll-bound-loop-while",
             fmt::format("the condition of the receive loop ({}) fails at the head of iteration "
                         "{}: the loop runs at most {} times (ranks are 32-bit, p < 2^31)",
                         w1.loc.str(), kUnroll, kUnroll),
             "", "true", fmt::format("(not {})", c), w1.loc);
      break;
    }
    if (c != "true") {
      TreePath e;
      e.pc = fmt::format("(and {} (not {}))", spine, c);
      pc_prefix.push_back(fmt::format("(and {} (not {}) {})", heads, c, zero_below(k)));
      e.tag = fmt::format("{}exit-k{}", tpre, k);
      e.iter = k;
      e.st = cur.st;
      tps.push_back(std::move(e));
    }
    if (c == "false") break;
    spine = fmt::format("(and {} {})", spine, c);
    heads = fmt::format("(and {} {})", heads, c);
    bool left = false;
    for (const auto& b : w1.body) {
      if (b->kind == StmtKind::Assign) {
        cur.pc = spine;
        straight(*b, cur);
        continue;
      }
      std::string c1 = bool_expr(*b->cond, cur.st);
      if (prefix) {
        // The test over the free name bx; the prefix form applies to this iteration if the
        // program's test is literally that test of X, with the mask 2^k.
        const std::string x = render(int_expr(*bx_e, cur.st));
        auto mask = as_int(render(int_expr(*b->cond->args[0]->args[1], cur.st)));
        std::string tx = test_over_bx(*b->cond, cur.st, bx_e->name);
        if ((k > 0 && x != bx_term) || !mask || *mask != (1LL << k) || c1 == "true" ||
            c1 == "false" || rename(tx, {{"bx", x}}) != c1 || mentions(x, "bx"))
          prefix = false;
        bx_term = x;
        tests_x.push_back(tx);
      }
      if (c1 != "false") {
        TreePath e;
        e.pc = fmt::format("(and {} {})", spine, c1);
        e.tag = fmt::format("{}recv-k{}", tpre, k);
        e.iter = k;
        e.recv = true;
        e.st = cur.st;
        e.src = render(int_expr(*rcv.peer, cur.st));
        e.round = round_at(cur.st, rcv.loc);
        e.key = msg_key(cur.st, rcv.loc);
        e.msg = msg_at(cur.st, "r", rcv.loc);
        tps.push_back(std::move(e));
        if (prefix)
          pc_prefix.push_back(
              fmt::format("(and {} (= (mod {} {}) {}))", heads, bx_term, 1LL << (k + 1), 1LL << k));
      }
      if (c1 == "true") left = true;
      spine = fmt::format("(and {} (not {}))", spine, c1);
    }
    alive.push_back(spine);
    if (prefix)
      alive_prefix.push_back(
          fmt::format("(and {} (= (mod {} {}) 0))", heads, bx_term, 1LL << (k + 1)));
    if (left) break;
  }
  if (prefix && pc_prefix.size() == tps.size() && alive_prefix.size() == alive.size()) {
    for (std::size_t i = 0; i < tps.size(); ++i) tps[i].pc = pc_prefix[i];
    alive = alive_prefix;
  } else {
    prefix = false;
  }

  // The bits lemma's instances (every_p_bits.hpp) for the values whose bits the program tests, at
  // the ranks a query names, for bits 0 .. maxj: proved once for every integer (`bits-lemma`).
  auto lem = [&](const std::vector<std::string>& ranks, int maxj) {
    std::string out = "true";
    if (prefix) return out;  // the prefix form has no bit tests
    for (const auto& x : bit_xs_)
      for (const auto& R : ranks)
        out = fmt::format("(and {} {})", out, bit_lemmas(rename(x, {{"r", R}}), maxj));
    return out;
  };
  for (auto& tp : tps)
    tp.pc = fmt::format("(and {} {})", tp.pc, lem({"r"}, tp.recv ? tp.iter : tp.iter - 1));
  // A path no rank takes (the root's receives, the others' exits when a branch before the loops
  // tells them apart) is pruned after Z3 proves its condition unsat (`infeasible-line-N`, a
  // certificate like the others): its queries would be vacuous, and were most of the scatter's.
  {
    std::vector<TreePath> keep;
    for (auto& tp : tps) {
      Path P = path;
      P.pc = tp.pc;
      P.tag = tp.tag;
      oblige(P, fmt::format("infeasible-line-{}", rif->loc.line),
             "no rank takes this path of the receive loop (its queries are left out)", "", "true",
             "false", rif->loc);
      if (proved_now(out_.obligations.back().script)) continue;
      out_.obligations.pop_back();
      keep.push_back(std::move(tp));
    }
    tps = std::move(keep);
  }

  // Each path: the receive, the assignments between the loops, the send loop unrolled.
  for (auto& tp : tps) {
    Path P = path;
    P.pc = tp.pc;
    P.tag = tp.tag;
    P.st = tp.st;
    P.sends.clear();
    if (tp.recv) {
      const Buf& msg = tp.msg;
      if (h.nodup)
        for (const auto& [name, buf] : P.st.data)
          oblige(P, fmt::format("nodup-{}-line-{}", name, rcv.loc.line),
                 fmt::format("no item r receives at line {} is one r already holds in {}",
                             rcv.loc.line, name),
                 "(declare-const b Int)\n(declare-const t Int)\n(declare-const k Int)\n",
                 "(> count 0)",
                 fmt::format("(not (and (<= 0 t) (< t {}) (not (= {} none)) (<= 0 b) (< b {}) {}))",
                             msg.len, at_block(msg.blk, "t"), buf.len,
                             overlap(buf.blk, at_block(msg.blk, "t"))),
                 rcv.loc);
      std::string f = write(*rcv.target, msg, P.st);
      if (f != "true")
        oblige(P, fmt::format("fill-line-{}", rcv.loc.line),
               "the message fills the receive's slice exactly", "", "(> count 0)", f, rcv.loc);
    }
    for (std::size_t k = at + 1; k < w2i; ++k) straight(*todo[k], P);
    for (int i = 0;; ++i) {
      std::string c = bool_expr(*w2.cond, P.st);
      if (c == "false") break;
      if (c != "true")
        refuse(
            "the send loop's condition is not a numeral on the unrolled path (its mask must "
            "start where the receive loop left it and change by numerals)",
            w2.loc);
      if (i == 64) refuse("the send loop runs more than 64 times on an unrolled path", w2.loc);
      for (const auto& b : w2.body) {
        if (b->kind == StmtKind::Assign) {
          straight(*b, P);
          continue;
        }
        const Stmt* snd = b.get();
        std::string g = "true";
        Path G = P;  // the state at the send: the guarded branch's assignments run first
        if (b->kind == StmtKind::If) {
          g = bool_expr(*b->cond, P.st);
          snd = b->body.back().get();
          if (g == "false") continue;
          G.pc = fmt::format("(and {} {})", P.pc, g);
          for (std::size_t i = 0; i + 1 < b->body.size(); ++i) straight(*b->body[i], G);
          // After the `if`: a variable it assigned is ite(C3, new, old), or unreadable if it had
          // no value before; buffers it changed are outside the fragment.
          for (const auto& [n, v] : G.st.data) {
            auto f = P.st.data.find(n);
            if (f == P.st.data.end() || f->second.len != v.len || f->second.blk != v.blk)
              refuse("a send loop's `if` that changes a buffer is outside the fragment", b->loc);
          }
          for (const auto& [n, v] : G.st.ints) {
            auto f = P.st.ints.find(n);
            if (f == P.st.ints.end()) {
              P.st.dead.insert(n);
            } else if (f->second.c != v.c || f->second.k != v.k) {
              f->second = Lin{ite(g, v.c, f->second.c), ite(g, v.k, f->second.k)};
            }
          }
        }
        if (g == "false") continue;
        TreeSend s;
        s.guard = g;
        s.loc = snd->loc;
        s.dst = render(int_expr(*snd->peer, G.st));
        s.val = data_expr(*snd->value, G.st, &s.reads);
        s.round = round_at(G.st, snd->loc);
        s.key = msg_key(G.st, snd->loc);
        s.msg = msg_at(G.st, "(+ 0 " + s.dst + ")", snd->loc);
        tp.sends.push_back(std::move(s));
        tp.nsend = add(tp.nsend, ite(g, "1", "0"));
      }
    }
    for (std::size_t k = w2i + 1; k < todo.size(); ++k) straight(*todo[k], P);
    tp.st = P.st;
  }
  if (pass1_) {
    // The first reading: this path's tree, for the second reading's matches (all paths').
    auto call = std::make_shared<TreeCall>();
    call->pre = path.pc;
    call->tps = tps;
    call->alive = alive;
    tree_calls_.push_back(std::move(call));
    return;
  }

  const int sline = [&] {
    for (const auto& b : w2.body)
      if (b->kind != StmtKind::Assign)
        return b->kind == StmtKind::If ? b->body.back()->loc.line : b->loc.line;
    return w2.loc.line;
  }();
  const SourceLoc sloc = [&] {
    for (const auto& b : w2.body)
      if (b->kind != StmtKind::Assign)
        return b->kind == StmtKind::If ? b->body.back()->loc : b->loc;
    return w2.loc;
  }();
  std::string claim = h.steps ? header_term(*h.steps) : "";
  if (h.steps && h.steps_at_most)
    refuse("`steps at most` in a rooted program is not in the fragment", h.loc);

  std::set<std::pair<std::string, std::string>> dst_done;  // sends whose send-dst is stated
  for (const auto& tp : tps) {
    Path P = path;
    P.pc = tp.pc;
    P.tag = tp.tag;
    P.st = tp.st;
    const std::string rl = fmt::format("line-{}", rcv.loc.line), sl = fmt::format("line-{}", sline);
    if (tp.recv) {
      const std::string S = "(+ 0 " + tp.src + ")";
      // The sends of the receive's round, grouped by their guard and destination; a group made
      // by every path past some iteration m of the receive loop is the one condition alive[m].
      // Over the trees of every path before the loops (the first reading's).
      std::map<std::pair<std::string, std::string>, std::set<std::pair<std::size_t, std::size_t>>>
          groups;
      for (std::size_t c = 0; c < tree_calls_.size(); ++c)
        for (std::size_t q = 0; q < tree_calls_[c]->tps.size(); ++q)
          for (const auto& s : tree_calls_[c]->tps[q].sends)
            if (s.round == tp.round && s.key == tp.key) groups[{s.guard, s.dst}].insert({c, q});
      std::string any = "false";
      for (const auto& [gd, cqs] : groups) {
        std::string on = "false";
        for (std::size_t c = 0; c < tree_calls_.size(); ++c) {
          const TreeCall& tc = *tree_calls_[c];
          std::set<std::size_t> qs;
          for (const auto& [c2, q] : cqs)
            if (c2 == c) qs.insert(q);
          if (qs.empty()) continue;
          std::string on_c = "false";
          for (std::size_t m = 0; m < tc.alive.size() && on_c == "false"; ++m) {
            std::set<std::size_t> past;
            for (std::size_t q = 0; q < tc.tps.size(); ++q)
              if (tc.tps[q].iter > static_cast<int>(m)) past.insert(q);
            if (past == qs) on_c = tc.alive[m];
          }
          if (on_c == "false")
            for (std::size_t q : qs) on_c = fmt::format("(or {} {})", on_c, tc.tps[q].pc);
          on = on == "false" ? on_c : fmt::format("(or {} {})", on, on_c);
        }
        any = fmt::format("(or {} (and {} {} (= {} r)))", any, rename(on, {{"r", S}}),
                          rename(gd.first, {{"r", S}}), rename(gd.second, {{"r", S}}));
      }
      oblige(P, "match-" + rl,
             "r's source is a rank that, on its path, sends to r in the receive's round", "",
             lem({S}, tp.iter), fmt::format("(and (<= 0 {}) (< {} p) {})", S, S, any), rcv.loc);
      oblige(P, "order-" + rl,
             "the rank r receives from comes before r in the proof's order (0 <= order(src) < "
             "order(r)): no cycle of waits, no deadlock",
             "", "true",
             fmt::format("(and (<= 0 {}) (< {} {}))", rename(order, {{"r", S}}),
                         rename(order, {{"r", S}}), order),
             rcv.loc);
    }
    if (!tp.sends.empty()) {
      std::string dst = "true", carry = "true";
      std::map<std::string, std::pair<std::string, std::string>> reads;  // name -> (what, goal)
      for (std::size_t i = 0; i < tp.sends.size(); ++i) {
        const TreeSend& s = tp.sends[i];
        if (dst_done.insert({s.guard, s.dst}).second)
          dst =
              fmt::format("(and {} (=> {} (and (<= 0 {}) (< {} p))))", dst, s.guard, s.dst, s.dst);
        carry =
            fmt::format("(and {} (=> {} (and (= {} {}) (=> (and (<= 0 b) (< b {})) (= {} {})))))",
                        carry, s.guard, s.val.len, s.msg.len, s.msg.len, s.val.blk, s.msg.blk);
        for (const auto& [g, what] : s.reads) {
          auto [it, fresh] = reads.try_emplace(read_name(what, sl), what, "true");
          it->second.second = fmt::format("(and {} (=> {} {}))", it->second.second, s.guard, g);
        }
      }
      // The slice reads of the path's sends, one obligation a kind (not one a send: the unrolled
      // send loop makes up to 32 sends on each of up to 64 paths).
      for (const auto& [name, wg] : reads)
        oblige(P, name, wg.first + " (every send of the path)", "(declare-const b Int)\n",
               "(> count 0)", wg.second, sloc);
      // Without the path's condition (its bit tests only slow Z3 down here): a stronger claim,
      // the same on every path, so each send (guard and destination) once, on the first path
      // that makes it.
      Path G = P;
      G.pc = path.pc;
      if (dst != "true")
        oblige(G, "send-dst-" + sl, "every send goes to a rank (on any path)", "", "true", dst,
               sloc);

      oblige(P, "message-" + sl,
             "every send carries the proof's message (r's receive, if any, got it from a rank "
             "before r in the order)",
             "(declare-const b Int)\n", "(> count 0)", carry, sloc);
    }
    if (tp.recv || !tp.sends.empty()) {
      std::vector<std::string> rounds;
      if (tp.recv) rounds.push_back(tp.round);
      for (const auto& s : tp.sends) rounds.push_back(s.round);
      std::string g =
          h.steps ? fmt::format("(and (<= 0 {}) (< {} {}))", rounds.front(), rounds.back(), claim)
                  : "true";
      for (std::size_t i = 0; i + 1 < rounds.size(); ++i)
        g = fmt::format("(and {} (< {} {}))", g, rounds[i], rounds[i + 1]);
      oblige(P, "rounds-" + (tp.recv ? rl : sl),
             h.steps ? "the path's events have rounds 0 <= round < steps, strictly increasing (one "
                       "event of r a round)"
                     : "the path's events have strictly increasing rounds (one event of r a round)",
             "", "true", g, tp.recv ? rcv.loc : sloc);
    }
    more_postcondition(P, data_var(h.output, P.st, h.loc));
    if (h.steps)
      tree_root_ =
          fmt::format("(or {} (and {} (= {} {})))", tree_root_, rename(tp.pc, {{"r", "root"}}),
                      rename(tp.nsend, {{"r", "root"}}), claim);
  }
  // Every send is received: the sends grouped by guard, destination and round; a group made by
  // every path past iteration m of the receive loop is one obligation on that condition (the
  // paths' later bit tests are not needed, and each slowed Z3 down), else one per path.
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::set<std::size_t>>
      sent;
  for (std::size_t q = 0; q < tps.size(); ++q)
    for (const auto& s : tps[q].sends) sent[{s.guard, s.dst, s.round, s.key}].insert(q);
  for (const auto& [key, qs] : sent) {
    const auto& [g, d, rho, mkey] = key;
    const std::string D = "(+ 0 " + d + ")";
    std::string who = "false";
    for (const auto& call : tree_calls_)
      for (const auto& q : call->tps)
        if (q.recv && q.round == rho && q.key == mkey)
          who = fmt::format("(or {} (and {} (= {} r)))", who, rename(q.pc, {{"r", D}}),
                            rename(q.src, {{"r", D}}));
    std::vector<std::pair<std::string, std::string>> on;  // (condition, tag)
    for (std::size_t m = 0; m < alive.size() && on.empty(); ++m) {
      std::set<std::size_t> past;
      for (std::size_t q = 0; q < tps.size(); ++q)
        if (tps[q].iter > static_cast<int>(m)) past.insert(q);
      if (past == qs)
        on.emplace_back(fmt::format("(and {} {})", alive[m], lem({"r"}, static_cast<int>(m))),
                        fmt::format("{}past-k{}", tpre, m));
    }
    int maxj = 0;
    for (std::size_t q : qs) maxj = std::max(maxj, tps[q].iter);
    if (on.empty())
      for (std::size_t q : qs) on.emplace_back(tps[q].pc, tps[q].tag);
    for (const auto& [c, tag] : on) {
      Path P = path;
      P.pc = c;
      P.tag = tag;
      oblige(P, fmt::format("received-line-{}", sline),
             "the rank r's send goes to receives from r in the send's round", "",
             fmt::format("(and {} {})", g, lem({D}, maxj)), who, sloc);
    }
  }
  if (prefix && first_call) {
    // The prefix form's equivalences, for every integer bx, over the program's tests at
    // iterations 0 .. K, assuming the bits lemma's instances for bx (proved below).
    Path P = path;
    P.pc = "true";
    std::string zero = "true";
    for (std::size_t k = 0; k < tests_x.size(); ++k) {
      const std::string g = bits_prefix_claim("bx", zero, tests_x[k], static_cast<int>(k));
      oblige(P, fmt::format("bits-prefix-k{}", k),
             fmt::format("for every integer x: the receive loop's bit tests (line {}) are false "
                         "at iterations 0 .. {} iff (mod x 2^{}) = 0, and then iteration {}'s is "
                         "true iff (mod x 2^{}) = 2^{}",
                         rif->loc.line, static_cast<long long>(k) - 1, k, k, k + 1, k),
             "(declare-const bx Int)\n", bit_lemmas("bx", static_cast<int>(k)), g, rif->loc);
      zero = fmt::format("(and {} (not {}))", zero, tests_x[k]);
    }
    // An exit at the head after the last test (the loop's condition false there).
    const std::size_t K = tests_x.size();
    if (std::any_of(tps.begin(), tps.end(),
                    [&](const TreePath& t) { return static_cast<std::size_t>(t.iter) == K; }))
      oblige(P, fmt::format("bits-prefix-k{}", K),
             fmt::format("for every integer x: the receive loop's bit tests (line {}) are false "
                         "at iterations 0 .. {} iff (mod x 2^{}) = 0",
                         rif->loc.line, static_cast<long long>(K) - 1, K),
             "(declare-const bx Int)\n", bit_lemmas("bx", static_cast<int>(K)),
             bits_prefix_claim("bx", zero, "", static_cast<int>(K)), rif->loc);
  }
  if (!bit_xs_.empty() && first_call) {
    Path P = path;
    P.pc = "true";
    // One query per j: Z3 answers each in milliseconds, all 33 as one conjunction not in 10 s.
    for (int j = 0; j <= 32; ++j)
      oblige(P, fmt::format("bits-lemma-{}", j),
             fmt::format("for every integer x: (mod x 2^{}) = (mod x 2^{}) + 2^{} * bit {} of x "
                         "(the instances the tree's queries assume)",
                         j + 1, j, j, j),
             "(declare-const x Int)\n", "true", bit_lemma("x", j), w1.loc);
  }
  ++paths_;
}

}  // namespace collv::everyp
