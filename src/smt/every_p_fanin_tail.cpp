// The every-p prover's binomial fan-in, its statements after the loop (docs/smt.md, "Every p
// from the model", binomial trees, "The fan-in"; the loop itself is read in every_p_fanin.cpp):
// Open MPI's send to the parent, read on the paths that leave the loop at the bit
// (fanin_presend), and the send and receive after the tree (MPICH's non-commutative reduce: rank
// 0's result to a root other than 0), read twice: the first reading collects every path's
// events as templates over r, the second matches them (match, received, channel) and writes the
// obligations.
#include "smt/every_p_analyzer.hpp"
#include "smt/every_p_bits.hpp"

namespace collv::everyp {

// The two branches of an `if` on path P, each pruned (Z3 proves no rank of P takes it, the query
// kept as its certificate) or not: the else branch is asked only when the then branch is taken.
std::pair<bool, bool> Analyzer::fanin_split(const Stmt& s, const Path& P, Path& T, Path& E) {
  const std::string c = bool_expr(*s.cond, P.st);
  T = P;
  E = P;
  T.pc = fmt::format("(and {} {})", P.pc, c);
  E.pc = fmt::format("(and {} (not {}))", P.pc, c);
  const bool no_then = fanin_prune(T, fmt::format("infeasible-line-{}-then", s.loc.line), s.loc);
  const bool no_else =
      !no_then && fanin_prune(E, fmt::format("infeasible-line-{}-else", s.loc.line), s.loc);
  return {no_then, no_else};
}

// Open MPI's send after the loop, on a path that leaves at the bit: the statements up to the
// first send (assignments, and `if`s that the path takes one way, the other branch pruned), read
// on P; `after` gets the statements after the send. Returns the send.
const Stmt* Analyzer::fanin_presend(std::vector<const Stmt*> seq, Path& P,
                                    std::vector<const Stmt*>& after) {
  for (std::size_t i = 0; i < seq.size(); ++i) {
    const Stmt* s = seq[i];
    if (s->kind == StmtKind::Assign) {
      straight(*s, P);
    } else if (s->kind == StmtKind::If) {
      Path T, E;
      const auto [no_then, no_else] = fanin_split(*s, P, T, E);
      if (!no_then && !no_else)
        refuse(
            "an `if` before a fan-in's send after its loop must be taken one way by the ranks "
            "that leave the loop at the same bit",
            s->loc);
      P = no_then ? E : T;
      std::vector<const Stmt*> rest;
      for (const auto& x : no_then ? s->else_body : s->body) rest.push_back(x.get());
      rest.insert(rest.end(), seq.begin() + static_cast<std::ptrdiff_t>(i) + 1, seq.end());
      return fanin_presend(rest, P, after);
    } else if (s->kind == StmtKind::Send) {
      after.assign(seq.begin() + static_cast<std::ptrdiff_t>(i) + 1, seq.end());
      return s;
    } else {
      refuse(kFanShape, s->loc);
    }
  }
  return nullptr;
}

// Whether no rank takes path P: Z3 proves its condition unsat (the query is kept as the
// certificate); otherwise the query is dropped.
bool Analyzer::fanin_prune(const Path& P, const std::string& name, const SourceLoc& loc) {
  oblige(P, name, "no rank takes this path (its queries are left out)", "", "true", "false", loc);
  if (proved_now(out_.obligations.back().script)) return true;
  out_.obligations.pop_back();
  return false;
}

void Analyzer::fanin_tail(const std::vector<const Stmt*>& rest, std::size_t i, FanPath fp,
                          FanTail& ft, std::vector<FanPath>& out) {
  for (; i < rest.size(); ++i) {
    const Stmt* s = rest[i];
    Path& P = fp.P;
    if (s->kind == StmtKind::Assign) {
      straight(*s, P);
    } else if (s->kind == StmtKind::For && !has_comm(s->body)) {
      loop(*s, P);
    } else if (s->kind == StmtKind::If) {
      // A branch no rank of the path takes is pruned by Z3 (the root's rotation is read on the
      // root's paths only). One without communication is taken one way on each path; one around
      // communication that the path's ranks take both ways splits it (tagged -tN / -eN).
      const bool comm = has_comm(s->body) || has_comm(s->else_body);
      Path T, E;
      const auto [no_then, no_else] = fanin_split(*s, P, T, E);
      if (!no_then && !no_else && !comm)
        refuse(
            "an `if` after a fan-in's loop that the ranks of one path take both ways is outside "
            "the fragment (unless it holds a send or receive)",
            s->loc);
      for (const bool then : {true, false}) {
        if (then ? no_then : no_else) continue;
        FanPath b = fp;
        b.P = then ? T : E;
        if (!no_then && !no_else) b.P.tag += fmt::format("-{}{}", then ? "t" : "e", s->loc.line);
        std::vector<const Stmt*> seq;
        for (const auto& x : then ? s->body : s->else_body) seq.push_back(x.get());
        seq.insert(seq.end(), rest.begin() + static_cast<std::ptrdiff_t>(i) + 1, rest.end());
        fanin_tail(seq, 0, std::move(b), ft, out);
      }
      return;
    } else if (s->kind == StmtKind::Send || s->kind == StmtKind::Receive) {
      if (s->along_link) refuse("`along link` is outside the fragment", s->loc);
      if (ft.round.empty())
        refuse(
            "a send or receive after a binomial fan-in's loop needs 'round-after TERM' in the "
            "proof "
            "(its round, over p, count and root)",
            s->loc);
      if (!P.decls.empty())
        refuse("a send or receive after a loop that follows a fan-in is outside the fragment",
               s->loc);
      if (s->kind == StmtKind::Send)
        fanin_tail_send(*s, fp, ft);
      else
        fanin_tail_receive(*s, fp, ft);
      fp.rounds.push_back(ft.round);
      fp.loc = s->loc;
    } else {
      refuse(kFanShape, s->loc);
    }
  }
  out.push_back(std::move(fp));
}

// A send after the fan-in's loop: one a path, before its receive (so, sends being buffered, every
// rank reaches its receive after the loop, whose matching send its source makes before its own
// receive: no deadlock).
void Analyzer::fanin_tail_send(const Stmt& s, FanPath& fp, FanTail& ft) {
  if (fp.sent || fp.received)
    refuse(
        "after a fan-in's loop a rank sends at most once, before it receives (outside the "
        "fragment)",
        s.loc);
  fp.sent = true;
  Path& P = fp.P;
  std::vector<std::pair<std::string, std::string>> reads;
  const Buf val = data_expr(*s.value, P.st, &reads);
  const std::string dst = render(int_expr(*s.peer, P.st));
  if (ft.collect) {
    ft.sends.push_back(FanEvent{P.pc, dst, val, s.loc});
    return;
  }
  const int sl = s.loc.line;
  for (const auto& [gl, what] : reads)
    oblige(P, read_name(what, fmt::format("line-{}", sl)), what, "(declare-const b Int)\n",
           "(> count 0)", gl, s.loc);
  oblige(P, fmt::format("send-dst-line-{}", sl), "r sends to a rank", "", "true",
         fmt::format("(and (<= 0 {}) (< {} p))", dst, dst), s.loc);
  const std::string D = "(+ 0 " + dst + ")";
  std::string recv = "false";
  for (const FanEvent& q : ft.recvs)
    recv = fmt::format("(or {} (and {} (= {} r)))", recv, at_rank(q.pc, D), at_rank(q.peer, D));
  oblige(P, fmt::format("received-line-{}", sl),
         "the rank r sends to (after the loop) takes a path that receives from r after the loop",
         "", bit_lemmas(at_rank(ft.bx, D), 31),
         fmt::format("(and (<= 0 {}) (< {} p) {})", D, D, recv), s.loc);
  // One message on the channel: r's send in the loop went to another rank.
  if (!fp.loop_dst.empty())
    oblige(P, fmt::format("channel-line-{}", sl),
           "r's send after the loop and its send in the loop go to different ranks (one message "
           "on each channel)",
           "", "true", fmt::format("(not (= {} {}))", dst, fp.loop_dst), s.loc);
}

// A receive after the fan-in's loop: its source's path sends to r after the loop; the value is
// that send's (an if-then-else over the paths that send after the loop, at the source).
void Analyzer::fanin_tail_receive(const Stmt& s, FanPath& fp, FanTail& ft) {
  if (fp.received)
    refuse("after a fan-in's loop a rank receives at most once (outside the fragment)", s.loc);
  fp.received = true;
  Path& P = fp.P;
  const std::string src = render(int_expr(*s.peer, P.st));
  if (ft.collect) {
    ft.recvs.push_back(FanEvent{P.pc, src, Buf{"0", "none"}, s.loc});
    write(*s.target, Buf{"0", "none"}, P.st);
    return;
  }
  const int rl = s.loc.line;
  const std::string S = "(+ 0 " + src + ")";
  std::string exists = "false";
  Buf msg{"0", "none"};
  for (auto it = ft.sends.rbegin(); it != ft.sends.rend(); ++it) {
    const std::string c =
        fmt::format("(and {} (= {} r))", at_rank(it->pc, S), at_rank(it->peer, S));
    exists = fmt::format("(or {} {})", c, exists);
    msg = Buf{ite(c, at_rank(it->val.len, S), msg.len), ite(c, at_rank(it->val.blk, S), msg.blk)};
  }
  oblige(P, fmt::format("match-line-{}", rl),
         "r's source (after the loop) is a rank whose path sends to r after the loop", "",
         bit_lemmas(at_rank(ft.bx, S), 31),
         fmt::format("(and (<= 0 {}) (< {} p) {})", S, S, exists), s.loc);
  fanin_nodup(P, msg, s.loc);
  const std::string fill = write(*s.target, msg, P.st);
  if (fill != "true")
    oblige(P, fmt::format("fill-line-{}", rl), "the message fills the receive's slice exactly", "",
           "(> count 0)", fill, s.loc);
}

// NODUP (unless the model says `nodup no`): no item r receives is one it already holds.
void Analyzer::fanin_nodup(const Path& P, const Buf& msg, const SourceLoc& loc) {
  if (!m_.header.nodup) return;
  for (const auto& [name, buf] : P.st.data)
    oblige(
        P, fmt::format("nodup-{}-line-{}", name, loc.line),
        fmt::format("no item r receives at line {} is one r already holds in {}", loc.line, name),
        "(declare-const b Int)\n(declare-const t Int)\n(declare-const k Int)\n", "(> count 0)",
        fmt::format("(not (and (<= 0 t) (< t {}) (not (= {} none)) (<= 0 b) (< b {}) {}))", msg.len,
                    at_block(msg.blk, "t"), buf.len, overlap(buf.blk, at_block(msg.blk, "t"))),
        loc);
}

}  // namespace collv::everyp
