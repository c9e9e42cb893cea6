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
//
// Open MPI's shape (a search loop of assignments, then a straight receive) is read in
// every_p_tree_search.cpp; both readers hand their unrolled paths to tree_back (below), which
// reads each path's send loop and writes the obligations.
#include "smt/every_p_tree.hpp"

#include "smt/every_p_bits.hpp"

namespace collv::everyp {

namespace {

const char* kShape =
    "a binomial tree (docs/smt.md): `while C do [assignments] if C1 then receive X from E; "
    "break; endif [assignments] endwhile`, assignments, then `while C2 do [assignments] [if C3 "
    "then] send V to E [endif] [assignments] endwhile` at the end of the path, with nothing "
    "before it that sends or receives";

}  // namespace
void Analyzer::tree(const std::vector<const Stmt*>& todo, std::size_t at, const Path& path) {
  const Stmt& w1 = *todo[at];
  if (!path.sends.empty() || !path.recvs.empty()) refuse(kShape, w1.loc);
  // Open MPI's shape: a loop without a receive (a search of assignments, or the send loop itself).
  const bool mpich = std::any_of(w1.body.begin(), w1.body.end(), [](const StmtPtr& b) {
    return b->kind == StmtKind::If && b->body.size() == 2 &&
           b->body[0]->kind == StmtKind::Receive && b->body[1]->kind == StmtKind::Break;
  });
  if (!mpich) return tree_search(todo, at, path);
  // The receive loop's body: assignments and one `if C1 then receive; break endif`.
  const Stmt* rif = nullptr;
  for (const auto& b : w1.body) {
    if (b->kind == StmtKind::Assign) continue;
    if (b->kind != StmtKind::If || rif || !b->else_body.empty() || b->body.size() != 2 ||
        b->body[0]->kind != StmtKind::Receive || b->body[1]->kind != StmtKind::Break)
      refuse(kShape, b->loc);
    rif = b.get();
  }
  const Stmt& rcv = *rif->body[0];
  if (rcv.along_link) refuse("`along link` is outside the fragment", rcv.loc);
  std::size_t w2i = at + 1;
  while (w2i < todo.size() && todo[w2i]->kind == StmtKind::Assign) ++w2i;
  if (w2i >= todo.size() || todo[w2i]->kind != StmtKind::While)
    refuse(kShape, w2i < todo.size() ? todo[w2i]->loc : w1.loc);
  for (std::size_t k = w2i + 1; k < todo.size(); ++k)  // assignments after the send loop
    if (todo[k]->kind != StmtKind::Assign) refuse(kShape, todo[k]->loc);
  const TreeTerms tt = tree_terms(path, w1.loc);

  TreeFront f;
  f.w2 = todo[w2i];
  f.w2i = w2i;
  f.loc = w1.loc;
  f.prune_loc = rif->loc;
  // With a tree on more than one path before the loops (the root's and the others'), each path's
  // obligations are tagged with that path's index (pathN-recv-k3).
  if (!pass1_ && tree_calls_.size() > 1) f.tpre = fmt::format("path{}-", path.index);
  // The lemmas are stated once, with the first path's tree.
  f.first_call = pass1_ || tree_calls_.empty() || tree_calls_.front()->pre == path.pc;
  const std::string& tpre = f.tpre;
  std::vector<const Stmt*> between(todo.begin() + static_cast<long>(at) + 1,
                                   todo.begin() + static_cast<long>(w2i));

  // The receive loop, unrolled: iteration k's head is reached on `spine`.
  constexpr int kUnroll = 32;
  std::vector<TreePath>& tps = f.tps;
  std::vector<std::string>& alive = f.alive;  // alive[k]: past iteration k, still in the loop
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
      e.between = between;
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
        e.rstmt = &rcv;
        e.between = between;
        e.src = render(int_expr(*rcv.peer, cur.st));
        e.round = tree_round(tt, cur.st, rcv.loc, true, e.src);
        e.key = tree_key(tt, cur.st, rcv.loc, true);
        e.msg = tree_msg(tt, cur.st, "r", rcv.loc, true);
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
  f.prefix = prefix;
  for (auto& tp : tps)
    tp.pc =
        fmt::format("(and {} {})", tp.pc, tree_lem(prefix, {"r"}, tp.recv ? tp.iter : tp.iter - 1));
  tree_back(todo, path, f, tt);
  if (pass1_ || !prefix || !f.first_call) return;
  // The prefix form's equivalences, for every integer bx, over the program's tests at
  // iterations 0 .. K, assuming the bits lemma's instances for bx (`bits-lemma`, tree_back).
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

namespace {
// `(< N p)` with N a numeral: N, else nullopt (a doubling send loop's condition `mask < p`).
std::optional<long long> below_p(const std::string& c) {
  if (c.rfind("(< ", 0) != 0 || c.size() < 6 || c.compare(c.size() - 3, 3, " p)") != 0)
    return std::nullopt;
  return as_int(c.substr(3, c.size() - 6));
}
}  // namespace

void Analyzer::tree_back(const std::vector<const Stmt*>& todo, const Path& path, TreeFront& f,
                         const TreeTerms& tt) {
  const auto& h = m_.header;
  const Stmt& w2 = *f.w2;
  const std::size_t w2i = f.w2i;
  std::vector<TreePath>& tps = f.tps;
  const std::vector<std::string>& alive = f.alive;
  const std::string& tpre = f.tpre;
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
  for (std::size_t k = w2i + 1; k < todo.size(); ++k)  // assignments after the send loop
    if (todo[k]->kind != StmtKind::Assign) refuse(kShape, todo[k]->loc);

  // A path no rank takes (the root's receives, the others' exits when a branch before the loops
  // tells them apart) is pruned after Z3 proves its condition unsat (`infeasible-line-N`, a
  // certificate like the others): its queries would be vacuous, and were most of the scatter's.
  {
    std::vector<TreePath> keep;
    for (auto& tp : tps) {
      Path P = path;
      P.pc = tp.pc;
      P.tag = tp.tag;
      oblige(P, fmt::format("infeasible-line-{}", f.prune_loc.line),
             "no rank takes this path of the unrolled loop (its queries are left out)", "", "true",
             "false", f.prune_loc);
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
      const Stmt& rcv = *tp.rstmt;
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
      std::string fill = write(*rcv.target, msg, P.st);
      if (fill != "true")
        oblige(P, fmt::format("fill-line-{}", rcv.loc.line),
               "the message fills the receive's slice exactly", "", "(> count 0)", fill, rcv.loc);
    }
    for (const Stmt* s : tp.between) straight(*s, P);
    // The send loop, unrolled. Its condition is a numeral at each head (MPICH's halving mask), or
    // a term (Open MPI's `mask < p`): then an iteration runs under the conditions of its head and
    // every earlier one (`run`), and the unrolling stops where a doubling mask has reached 2^31,
    // with the obligation that the condition fails there (`unroll-bound-line-N`, p < 2^31).
    std::vector<std::string> run;  // the heads' conditions so far that are not numerals
    std::set<std::string> w2_assigns;
    assigned(w2.body, w2_assigns);
    auto run_term = [&] {
      std::string out = "true";
      for (const auto& c : run) out = out == "true" ? c : fmt::format("(and {} {})", out, c);
      return out;
    };
    for (int i = 0;; ++i) {
      std::string c = bool_expr(*w2.cond, P.st);
      if (c == "false") break;
      if (c != "true") {
        bool passed = false;  // a numeral the body assigns has reached 2^31
        for (const auto& n : w2_assigns) {
          auto fv = P.st.ints.find(n);
          auto v = fv == P.st.ints.end() ? std::nullopt : as_int(render(fv->second));
          if (v && *v >= (1LL << 31)) passed = true;
        }
        if (passed || i == 40) {
          oblige(P, fmt::format("unroll-bound-line-{}", w2.loc.line),
                 fmt::format("the send loop's condition ({}) fails at the head of its iteration "
                             "{} on this path (ranks are 32-bit, p < 2^31)",
                             w2.loc.str(), i),
                 "", run_term(), fmt::format("(not {})", c), w2.loc);
          break;
        }
        // `(< N p)` makes an earlier `(< M p)` with M <= N redundant: the same conjunction.
        if (auto n = below_p(c))
          run.erase(std::remove_if(run.begin(), run.end(),
                                   [&](const std::string& x) {
                                     auto m = below_p(x);
                                     return m && *m <= *n;
                                   }),
                    run.end());
        run.push_back(c);
      }
      if (i == 64) refuse("the send loop runs more than 64 times on an unrolled path", w2.loc);
      const std::string on = run_term();
      for (const auto& b : w2.body) {
        if (b->kind == StmtKind::Assign) {
          if (on != "true" && (b->value->type == Type::Data || b->target->kind != ExprKind::Name ||
                               b->value->kind == ExprKind::EmptyBuf))
            refuse(
                "a send loop whose condition is not a numeral may assign integers only (its "
                "exit is not one path)",
                b->loc);
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
          G.pc = on == "true" ? fmt::format("(and {} {})", P.pc, g)
                              : fmt::format("(and {} {} {})", P.pc, on, g);
          for (std::size_t i = 0; i + 1 < b->body.size(); ++i) straight(*b->body[i], G);
          // After the `if`: a variable it assigned is ite(C3, new, old), or unreadable if it had
          // no value before; buffers it changed are outside the fragment.
          for (const auto& [n, v] : G.st.data) {
            auto fd = P.st.data.find(n);
            if (fd == P.st.data.end() || fd->second.len != v.len || fd->second.blk != v.blk)
              refuse("a send loop's `if` that changes a buffer is outside the fragment", b->loc);
          }
          for (const auto& [n, v] : G.st.ints) {
            auto fi = P.st.ints.find(n);
            if (fi == P.st.ints.end()) {
              P.st.dead.insert(n);
            } else if (fi->second.c != v.c || fi->second.k != v.k) {
              fi->second = Lin{ite(g, v.c, fi->second.c), ite(g, v.k, fi->second.k)};
            }
          }
        } else if (on != "true") {
          G.pc = fmt::format("(and {} {})", P.pc, on);
        }
        g = on == "true" ? g : g == "true" ? on : fmt::format("(and {} {})", on, g);
        TreeSend s;
        s.guard = g;
        s.loc = snd->loc;
        s.dst = render(int_expr(*snd->peer, G.st));
        s.val = data_expr(*snd->value, G.st, &s.reads);
        s.round = tree_round(tt, G.st, snd->loc, false);
        s.key = tree_key(tt, G.st, snd->loc, false);
        s.msg = tree_msg(tt, G.st, "(+ 0 " + s.dst + ")", snd->loc, false);
        tp.sends.push_back(std::move(s));
        tp.nsend = add(tp.nsend, ite(g, "1", "0"));
      }
    }
    // Where the loop left at a head that is not a numeral, what it assigned is not one value.
    if (!run.empty())
      for (const auto& n : w2_assigns)
        if (P.st.ints.count(n)) P.st.dead.insert(n);
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
  // `steps at most`: the rounds (0 <= round < steps) bound the schedule; no steps-root.

  std::set<std::pair<std::string, std::string>> dst_done;  // sends whose send-dst is stated
  for (const auto& tp : tps) {
    Path P = path;
    P.pc = tp.pc;
    P.tag = tp.tag;
    P.st = tp.st;
    const std::string sl = fmt::format("line-{}", sline);
    const std::string rl = tp.recv ? fmt::format("line-{}", tp.rstmt->loc.line) : sl;
    if (tp.recv) {
      const Stmt& rcv = *tp.rstmt;
      const std::string S = "(+ 0 " + tp.src + ")";
      // The sends of the receive's round, grouped by their guard and destination; a group made
      // by every path past some iteration m of the receive loop is the one condition alive[m].
      // Over the trees of every path before the loops (the first reading's).
      std::map<std::pair<std::string, std::string>, std::set<std::pair<std::size_t, std::size_t>>>
          groups;
      for (std::size_t c = 0; c < tree_calls_.size(); ++c)
        for (std::size_t q = 0; q < tree_calls_[c]->tps.size(); ++q)
          for (const auto& s : tree_calls_[c]->tps[q].sends)
            if ((tt.round_r ? rename(s.round, {{"r", S}}) == tp.round : s.round == tp.round) &&
                s.key == tp.key)
              groups[{s.guard, s.dst}].insert({c, q});
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
             tree_lem(f.prefix, {S}, tp.iter),
             fmt::format("(and (<= 0 {}) (< {} p) {})", S, S, any), rcv.loc);
      oblige(P, "order-" + rl,
             "the rank r receives from comes before r in the proof's order (0 <= order(src) < "
             "order(r)): no cycle of waits, no deadlock",
             "", "true",
             fmt::format("(and (<= 0 {}) (< {} {}))", rename(tt.order, {{"r", S}}),
                         rename(tt.order, {{"r", S}}), tt.order),
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
      if (h.steps && f.guarded_rounds) {
        // A send loop whose condition is a term unrolls past the sends some ranks make: each
        // send's round is bounded where it is made.
        g = fmt::format("(<= 0 {})", rounds.front());
        if (tp.recv) g = fmt::format("(and {} (< {} {}))", g, tp.round, claim);
        for (const auto& s : tp.sends)
          g = fmt::format("(and {} (=> {} (< {} {})))", g, s.guard, s.round, claim);
      }
      for (std::size_t i = 0; i + 1 < rounds.size(); ++i)
        g = fmt::format("(and {} (< {} {}))", g, rounds[i], rounds[i + 1]);
      // A round term over the sender that reads the bits of a value X: the instances of the
      // bits lemmas at r (and at the source, with the source's X one lowest bit below r's,
      // `bits-src-line-N`, so the receive's round is comparable with r's own: every_p_bits.hpp).
      std::string facts = "true";
      if (!tt.round_x.empty()) {
        const std::string xr = tt.round_x;
        facts = bits_range_lemma(xr);
        if (tp.recv) {
          const std::string xs = rename(xr, {{"r", "(+ 0 " + tp.src + ")"}});
          const int k = tp.iter;
          const std::string src_fact = bits_shift_hyp(xr, xs, k);
          oblige(P, "bits-src-" + rl,
                 "the round term's value at r's source is r's minus r's lowest set bit 2^k (the "
                 "receive's iteration), and r's is 2^k modulo 2^(k+1)",
                 "", "true", src_fact, tp.rstmt->loc);
          facts = fmt::format("(and {} {} {} {})", facts, src_fact, bits_range_lemma(xs),
                              bits_shift_lemma(xr, xs, k));
          if (shift_ks_.insert(k).second) {
            Path L = path;
            L.pc = "true";
            L.tag.clear();
            L.index = 0;
            oblige(L, fmt::format("bits-shift-k{}", k),
                   fmt::format("for all integers x and y with y = x - 2^{0} and x = 2^{0} modulo "
                               "2^{1} (x = 2^{1} q + 2^{0}, y = 2^{1} q for an integer q): x and y "
                               "halved {1} times are equal, bits 0..{0} of y are 0 and bit {0} is "
                               "x's lowest set bit (the instances the rounds queries assume)",
                               k, k + 1),
                   "(declare-const q Int)\n", "true",
                   bits_shift_claim(fmt::format("(+ (* {} q) {})", 1LL << (k + 1), 1LL << k),
                                    fmt::format("(* {} q)", 1LL << (k + 1)), k),
                   tp.rstmt->loc);
          }
        }
      }
      oblige(P, "rounds-" + (tp.recv ? rl : sl),
             h.steps ? "the path's events have rounds 0 <= round < steps, strictly increasing (one "
                       "event of r a round)"
                     : "the path's events have strictly increasing rounds (one event of r a round)",
             "", facts, g, tp.recv ? tp.rstmt->loc : sloc);
    }
    more_postcondition(P, data_var(h.output, P.st, h.loc));
    if (h.steps && !h.steps_at_most)
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
        if (q.recv && (tt.round_r || q.round == rho) && q.key == mkey)
          who = fmt::format("(or {} (and {} (= {} r){}))", who, rename(q.pc, {{"r", D}}),
                            rename(q.src, {{"r", D}}),
                            tt.round_r ? fmt::format(" (= {} {})", rename(q.round, {{"r", D}}), rho)
                                       : std::string());
    std::vector<std::pair<std::string, std::string>> on;  // (condition, tag)
    for (std::size_t m = 0; m < alive.size() && on.empty(); ++m) {
      std::set<std::size_t> past;
      for (std::size_t q = 0; q < tps.size(); ++q)
        if (tps[q].iter > static_cast<int>(m)) past.insert(q);
      if (past == qs)
        on.emplace_back(
            fmt::format("(and {} {})", alive[m], tree_lem(f.prefix, {"r"}, static_cast<int>(m))),
            fmt::format("{}past-k{}", tpre, m));
    }
    int maxj = 0;
    for (std::size_t q : qs) maxj = std::max(maxj, tps[q].iter);
    if (on.empty() && f.guarded_rounds && qs.size() > 1) {
      // Open MPI's shape: the paths that make a send are those that left the search early (a
      // smaller highest bit), not a prefix past an iteration; one query on their disjunction.
      std::string any = "false";
      int minj = maxj;
      for (std::size_t q : qs) {
        any = fmt::format("(or {} {})", any, tps[q].pc);
        minj = std::min(minj, tps[q].iter);
      }
      on.emplace_back(any, fmt::format("{}some-k{}-k{}", tpre, minj, maxj));
    }
    if (on.empty())
      for (std::size_t q : qs) on.emplace_back(tps[q].pc, tps[q].tag);
    for (const auto& [c, tag] : on) {
      Path P = path;
      P.pc = c;
      P.tag = tag;
      oblige(P, fmt::format("received-line-{}", sline),
             "the rank r's send goes to receives from r in the send's round", "",
             fmt::format("(and {} {})", g, tree_lem(f.prefix, {D}, maxj)), who, sloc);
    }
  }
  if (!bit_xs_.empty() && f.first_call) {
    Path P = path;
    P.pc = "true";
    // One query per j: Z3 answers each in milliseconds, all 33 as one conjunction not in 10 s.
    for (int j = 0; j <= 32; ++j)
      oblige(P, fmt::format("bits-lemma-{}", j),
             fmt::format("for every integer x: (mod x 2^{}) = (mod x 2^{}) + 2^{} * bit {} of x "
                         "(the instances the tree's queries assume)",
                         j + 1, j, j, j),
             "(declare-const x Int)\n", "true", bit_lemma("x", j), f.loc);
  }
  if (!tt.round_x.empty() && f.first_call) {
    Path P = path;
    P.pc = "true";
    P.tag.clear();
    P.index = 0;
    oblige(P, "bits-range",
           "for every integer x and 0 <= b <= 32: 0 <= x < 2^b implies x halved b times is 0 "
           "(the instances the rounds queries assume)",
           "(declare-const x Int)\n", "true", bits_range_lemma("x"), f.loc);
  }
  ++paths_;
}

}  // namespace collv::everyp
