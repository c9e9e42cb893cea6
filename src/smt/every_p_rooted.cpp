// The every-p prover's rooted programs (see docs/smt.md, "Every p from the model", rooted): paths
// split on my_id (the rank's role), matched per channel instead of by round index.
//
// The fragment: on every path a rank makes all its sends before its first receive (buffered
// sends: no rank waits before it has sent everything, so no deadlock); a send is straight-line
// or in a `for` loop whose body is sends, each possibly under `if COUNTER <> E` or `if COUNTER =
// E`; receives are straight-line. The program is read twice: the first reading collects every
// path's sends and receives, the second matches each receive with a send of its source's path
// and writes the obligations:
//   match-line-N        the source is a rank that, on its path, sends to r (some send, some
//                       iteration);
//   channel-...         no rank sends twice to the same rank (so the match is that one send);
//   sources-line-N      a rank's receives come from distinct sources;
//   received-line-N     every send goes to a rank that receives from the sender;
// so sends and receives are in one-to-one correspondence, one per (sender, receiver) pair, and
// FIFO order is trivially kept. Steps (single port): a transfer's step is its place among its
// sender's sends or its receiver's receives, whichever is later; if in every transfer the sender
// sends once or the receiver receives once (`one-sided-line-N`), no chain of transfers mixes the
// two, so the rounds are the largest number of sends or receives of one rank: `steps-bound`
// (every rank's is at most the claim) and `steps-root` (the root's equals it; a claim met only
// at another rank is not proved, never wrongly proved).
#include "smt/every_p_analyzer.hpp"

namespace collv::everyp {

namespace {
bool has_while(const std::vector<StmtPtr>& body) {
  for (const auto& s : body)
    if (s->kind == StmtKind::While || has_while(s->body) || has_while(s->else_body)) return true;
  return false;
}
}  // namespace

void Analyzer::rooted_run(const std::vector<const Stmt*>& todo, const Path& p0) {
  tree_mod_ = has_while(m_.body);
  // First reading: every path's sends and receives, with its final condition and send count.
  pass1_ = true;
  explore(todo, 0, p0);
  pass1_ = false;
  out_.obligations.clear();
  out_.loops = 0;
  paths_ = 0;
  loop_seen_.clear();
  loop_name_.clear();
  rseq_ = 0;
  tree_root_ = "false";
  // Second reading: the obligations, with the receives matched against the first's sends.
  explore(todo, 0, p0);
  rooted_global();
}

// The condition that send e of rank S, at iteration J (loops), is a send to r.
std::string Analyzer::rooted_match(const SendEvent& e, const std::string& S, const std::string& J) {
  std::map<std::string, std::string> ren = {{"r", S}};
  if (e.in_loop) ren[e.iter] = J;
  std::string c = fmt::format("(and {} {} (= {} r))", rename(e.pc, ren), rename(e.guard, ren),
                              rename(e.dst, ren));
  if (e.in_loop)
    c = fmt::format("(and (<= {} {}) (<= {} {}) {})", rename(e.lo, ren), J, J, rename(e.hi, ren),
                    c);
  return c;
}

void Analyzer::rooted_send(const Stmt& s, Path& path) {
  if (!path.recvs.empty())
    refuse(
        "a send after a receive in a rooted program is outside the fragment (every rank "
        "sends everything before it receives)",
        s.loc);
  SendEvent e;
  e.loc = s.loc;
  e.dst = render(int_expr(*s.peer, path.st));
  std::vector<std::pair<std::string, std::string>> reads;
  Buf m = data_expr(*s.value, path.st, &reads);
  e.len = m.len;
  e.blk = m.blk;
  for (const auto& [g, what] : reads)
    oblige(path, read_name(what, fmt::format("line-{}", s.loc.line)), what,
           "(declare-const b Int)\n", "(> count 0)", g, s.loc);
  oblige(path, fmt::format("send-dst-line-{}", s.loc.line), "r sends to a rank", "", "true",
         fmt::format("(and (<= 0 {}) (< {} p))", e.dst, e.dst), s.loc);
  path.sends.push_back(e);
  path.nsend = add(path.nsend, "1");
}

void Analyzer::rooted_loop(const Stmt& s, Path& path) {
  if (s.downto) refuse("a `downto` loop is outside the fragment", s.loc);
  if (s.var == "r" || s.var == "b" || s.var == "p" || s.var == "t" || s.var == "q")
    refuse("a loop counter named r, b, t, q or p clashes with the invariant language's names",
           s.loc);
  if (!path.recvs.empty())
    refuse("a loop after a receive in a rooted program is outside the fragment", s.loc);
  int id = ++out_.loops;
  std::string iter = fmt::format("{}_R{}", s.var, id);
  std::string lot = render(int_expr(*s.value, path.st)), hit = render(int_expr(*s.limit, path.st));
  State st = path.st;
  st.ints[s.var] = Lin{"0", iter};
  st.dead.erase(s.var);
  std::string trips = fmt::format("(ite (<= {} {}) (+ (- {} {}) 1) 0)", lot, hit, hit, lot);
  // The body: sends, each possibly under `if COUNTER <> E` or `if COUNTER = E` (E free of the
  // counter); the branch taken at COUNTER = E alone may instead be assignments, which run once, at
  // iteration E: they are read after the loop (the loop changes nothing else, and no send reads
  // what they write).
  struct Guarded {
    const Stmt* snd;
    std::string guard, count;
  };
  std::vector<Guarded> body;
  const std::vector<StmtPtr>* once = nullptr;
  std::string once_at, once_in;
  const char* shape_why =
      "in a rooted program's loop only sends, each possibly under `if COUNTER <> E` or `if "
      "COUNTER = E` (E free of the counter; the branch at COUNTER = E may be assignments), are in "
      "the fragment";
  for (const auto& b : s.body) {
    if (b->kind == StmtKind::Send) {
      body.push_back({b.get(), "true", trips});
      continue;
    }
    if (b->kind != StmtKind::If) refuse(shape_why, b->loc);
    const Expr& c = *b->cond;
    const Expr* other = nullptr;
    if (c.kind == ExprKind::Binary && (c.op == Op::Ne || c.op == Op::Eq)) {
      if (c.args[0]->kind == ExprKind::Name && c.args[0]->name == s.var)
        other = c.args[1].get();
      else if (c.args[1]->kind == ExprKind::Name && c.args[1]->name == s.var)
        other = c.args[0].get();
    }
    if (!other || reads_name(*other, s.var)) refuse(shape_why, b->loc);
    std::string E = render(int_expr(*other, path.st));
    std::string in = fmt::format("(and (<= {} {}) (<= {} {}))", lot, E, E, hit);
    std::string g = bool_expr(c, st), n1 = ite(in, "1", "0");
    // (branch, its guard, its sends' count, taken at COUNTER = E alone)
    const std::vector<StmtPtr>* eq_branch = c.op == Op::Eq ? &b->body : &b->else_body;
    for (const auto* br : {&b->body, &b->else_body}) {
      bool then = br == &b->body;
      std::string guard = then ? g : fmt::format("(not {})", g);
      std::string count = (c.op == Op::Eq) == then ? n1 : sub(trips, n1);
      if (br->empty()) continue;
      if (br->size() == 1 && (*br)[0]->kind == StmtKind::Send) {
        body.push_back({(*br)[0].get(), guard, count});
        continue;
      }
      bool assigns = br == eq_branch && !once;
      for (const auto& a : *br) assigns = assigns && a->kind == StmtKind::Assign;
      if (!assigns) refuse(shape_why, (*br)[0]->loc);
      once = br;
      once_at = E;
      once_in = in;
    }
  }
  if (once) {
    std::set<std::string> written;
    assigned(*once, written);
    for (const auto& g : body)
      for (const auto& w : written)
        if (reads_name(*g.snd->value, w) || reads_name(*g.snd->peer, w))
          refuse("a send in the loop reads '" + w + "', which the loop assigns", g.snd->loc);
    if (written.count(s.var))
      refuse("the loop assigns its own counter '" + s.var + "': outside the fragment", s.loc);
  }
  std::string total = "0";
  for (const auto& g : body) {
    const Stmt* snd = g.snd;
    const std::string &guard = g.guard, &count = g.count;
    if (snd->along_link) refuse("`along link` is outside the fragment", snd->loc);
    SendEvent e;
    e.in_loop = true;
    e.loc = snd->loc;
    e.lo = lot;
    e.hi = hit;
    e.iter = iter;
    e.loop_id = id;
    e.guard = guard;
    e.dst = render(int_expr(*snd->peer, st));
    std::vector<std::pair<std::string, std::string>> reads;
    Buf m = data_expr(*snd->value, st, &reads);
    e.len = m.len;
    e.blk = m.blk;
    std::string decls = fmt::format("(declare-const {} Int)\n(declare-const b Int)\n", iter);
    std::string hyp = fmt::format("(and (<= {} {}) (<= {} {}) {})", lot, iter, iter, hit, guard);
    for (const auto& [g, what] : reads)
      oblige(path, read_name(what, fmt::format("line-{}", snd->loc.line)), what, decls,
             fmt::format("(and {} (> count 0))", hyp), g, snd->loc);
    oblige(path, fmt::format("send-dst-line-{}", snd->loc.line),
           "in every iteration that sends, r sends to a rank", decls, hyp,
           fmt::format("(and (<= 0 {}) (< {} p))", e.dst, e.dst), snd->loc);
    path.sends.push_back(e);
    total = add(total, count);
  }
  path.nsend = add(path.nsend, total);
  if (once) {
    // The assignments of iteration E, on the state before the loop with the counter at E; where
    // E is not an iteration they do not run.
    State at = path.st;
    at.ints[s.var] = Lin{"0", once_at};
    at.dead.erase(s.var);
    Path tmp = path;
    tmp.pc = fmt::format("(and {} {})", path.pc, once_in);
    tmp.st = at;
    for (const auto& a : *once) straight(*a, tmp);
    std::set<std::string> written;
    assigned(*once, written);
    for (const auto& w : written) {
      if (tmp.st.ints.count(w)) {
        Lin before = path.st.ints.count(w) ? path.st.ints.at(w) : Lin{};
        if (!path.st.ints.count(w))
          refuse("'" + w + "' has no value before the loop that assigns it once", s.loc);
        path.st.ints[w] =
            Lin{ite(once_in, tmp.st.ints[w].c, before.c), ite(once_in, tmp.st.ints[w].k, before.k)};
      } else {
        Buf before = path.st.data.count(w) ? path.st.data.at(w) : Buf{"0", "none"};
        const Buf& now = tmp.st.data.at(w);
        path.st.data[w] = Buf{ite(once_in, now.len, before.len), ite(once_in, now.blk, before.blk)};
      }
    }
    // Their obligations (reads, lengths) were written under the path condition and E in range.
  }
  path.st.ints.erase(s.var);
  path.st.dead.insert(s.var);
}

void Analyzer::rooted_receive(const Stmt& s, Path& path) {
  const int n = ++rseq_;
  std::string src = render(int_expr(*s.peer, path.st));
  std::string S = "(+ 0 " + src + ")";
  // The matched send: some send e of the source's path at some iteration j_n_e (a fresh name).
  std::string exists = "false", which = "false", len = "0", blk = "none", total = "0";
  std::string decls;
  for (std::size_t k = 0; k < rsends_.size(); ++k) {
    const SendEvent& e = rsends_[k];
    std::string J = fmt::format("j_{}_{}", n, k), M = fmt::format("m_{}_{}", n, k);
    decls += fmt::format("(declare-const {} Int)\n(declare-const {} Bool)\n", J, M);
    exists = fmt::format("(or {} {})", exists,
                         e.in_loop ? fmt::format("(exists (({} Int)) {})", J, rooted_match(e, S, J))
                                   : rooted_match(e, S, J));
    which = fmt::format("(or {} (and {} {}))", which, M, rooted_match(e, S, J));
    std::map<std::string, std::string> ren = {{"r", S}};
    if (e.in_loop) ren[e.iter] = J;
    len = ite(M, rename(e.len, ren), len);
    blk = ite(M, rename(e.blk, ren), blk);
    total = ite(M, rename(e.total, ren), total);
  }
  oblige(path, fmt::format("match-line-{}", s.loc.line),
         "r's source is a rank that, on its path, sends to r", "", "true",
         fmt::format("(and (<= 0 {}) (< {} p) {})", src, src, exists), s.loc);
  for (const auto& o : path.recvs)
    oblige(path, fmt::format("sources-line-{}", s.loc.line),
           fmt::format("r's receives at lines {} and {} come from different ranks", o.loc.line,
                       s.loc.line),
           "", "true", fmt::format("(not (= {} {}))", o.src, src), s.loc);
  // From here on the path knows which send it received (the match and the one send per channel
  // make it the only one).
  path.decls += decls + fmt::format("(assert {})\n", which);
  if (m_.header.nodup)
    for (const auto& [name, buf] : path.st.data)
      oblige(path, fmt::format("nodup-{}-line-{}", name, s.loc.line),
             fmt::format("no item r receives at line {} is one r already holds in {}", s.loc.line,
                         name),
             "(declare-const b Int)\n(declare-const t Int)\n(declare-const k Int)\n", "(> count 0)",
             fmt::format("(not (and (<= 0 t) (< t {}) (not (= {} none)) (<= 0 b) (< b {}) {}))",
                         len, at_block(blk, "t"), buf.len, overlap(buf.blk, at_block(blk, "t"))),
             s.loc);
  std::string f = write(*s.target, Buf{len, blk}, path.st);
  if (f != "true")
    oblige(path, fmt::format("fill-line-{}", s.loc.line),
           "the message fills the receive's slice exactly", "", "(> count 0)", f, s.loc);
  path.recvs.push_back(RecvEvent{"", src, s.loc});
  path.sender_total.push_back(total);
  path.nrecv = add(path.nrecv, "1");
}

void Analyzer::rooted_finish(const Path& path) {
  const auto& h = m_.header;
  if (pass1_) {
    for (SendEvent e : path.sends) {
      e.pc = path.pc;
      e.total = path.nsend;
      rsends_.push_back(e);
    }
    for (RecvEvent e : path.recvs) {
      e.pc = path.pc;
      rrecvs_.push_back(e);
    }
    return;
  }
  rfinal_.push_back(path);
  for (std::size_t k = 0; k < path.recvs.size(); ++k)
    oblige(path, fmt::format("one-sided-line-{}", path.recvs[k].loc.line),
           "the transfer's sender sends once or its receiver receives once (single port: the "
           "rounds are then the most sends or receives of one rank)",
           "", "true", fmt::format("(or (= {} 1) (= {} 1))", path.nrecv, path.sender_total[k]),
           path.recvs[k].loc);
  more_postcondition(path, data_var(h.output, path.st, h.loc));
  if (h.steps) {
    // `steps at most`: the bound alone (steps-root, below, is for an exact claim).
    std::string claim = header_term(*h.steps);
    oblige(path, "steps-bound", "r's sends and receives are each at most the `steps` claim", "",
           "true", fmt::format("(and (<= {} {}) (<= {} {}))", path.nsend, claim, path.nrecv, claim),
           h.loc);
  }
}

// The obligations over all paths: every send received, one send per channel, the root's rounds.
void Analyzer::rooted_global() {
  const auto& h = m_.header;
  for (std::size_t k = 0; k < rsends_.size(); ++k) {
    const SendEvent& e = rsends_[k];
    Path at;
    at.pc = e.pc;
    std::string decls = e.in_loop ? fmt::format("(declare-const {} Int)\n", e.iter) : "";
    std::string hyp = e.in_loop ? fmt::format("(and (<= {} {}) (<= {} {}) {})", e.lo, e.iter,
                                              e.iter, e.hi, e.guard)
                                : "true";
    std::string D = "(+ 0 " + e.dst + ")";
    std::string recv = "false";
    for (const auto& q : rrecvs_)
      recv = fmt::format("(or {} (and {} (= {} r)))", recv, rename(q.pc, {{"r", D}}),
                         rename(q.src, {{"r", D}}));
    oblige(at, fmt::format("received-line-{}", e.loc.line), "the rank r sends to receives from r",
           decls, hyp, recv, e.loc);
    // No rank sends twice to one rank: e (at i) and a send e2 of the same path (at i2, another
    // iteration when e2 is e) go to different ranks.
    for (std::size_t k2 = k; k2 < rsends_.size(); ++k2) {
      const SendEvent& e2 = rsends_[k2];
      if (e2.pc != e.pc || (k2 == k && !e.in_loop)) continue;
      std::string i2 = e2.iter + "_2";
      std::map<std::string, std::string> ren;
      if (e2.in_loop) ren[e2.iter] = i2;
      std::string hyp2 = e2.in_loop ? fmt::format("(and (<= {} {}) (<= {} {}) {})", e2.lo, i2, i2,
                                                  e2.hi, rename(e2.guard, ren))
                                    : "true";
      if (k2 == k) hyp2 = fmt::format("(and {} (not (= {} {})))", hyp2, e.iter, i2);
      oblige(at, fmt::format("channel-line-{}-{}", e.loc.line, e2.loc.line),
             fmt::format("r's sends at lines {} and {} (two different messages) go to different "
                         "ranks",
                         e.loc.line, e2.loc.line),
             decls + (e2.in_loop ? fmt::format("(declare-const {} Int)\n", i2) : ""),
             fmt::format("(and {} {})", hyp, hyp2),
             fmt::format("(not (= {} {}))", e.dst, rename(e2.dst, ren)), e.loc);
    }
  }
  if (h.steps && !h.steps_at_most && (!rfinal_.empty() || tree_root_ != "false")) {
    std::string claim = header_term(*h.steps), at_root = tree_root_;
    for (const auto& f : rfinal_) {
      std::string most = fmt::format("(ite (>= {} {}) {} {})", f.nsend, f.nrecv, f.nsend, f.nrecv);
      at_root = fmt::format("(or {} (and {} (= {} {})))", at_root, rename(f.pc, {{"r", "root"}}),
                            rename(most, {{"r", "root"}}), claim);
    }
    Path at;
    oblige(at, "steps-root",
           "the root's sends or receives (the most of one rank) equal the `steps` claim", "",
           "true", at_root, h.loc);
  }
}

}  // namespace collv::everyp
