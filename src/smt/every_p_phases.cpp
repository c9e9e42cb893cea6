// The every-p prover's phased reading (docs/smt.md, "Every p from the model", phases): an
// unrooted program in which an `if` on my_id puts sends and receives in branches (MPICH's
// non-power-of-two fold: the even ranks below 2 rem send once and receive once at the end, the odd
// ones receive, run the round loop and send), so that the ranks do not all run the same rounds.
//
// A phase is a statement at the program's phase level (outside every `if` on my_id, inside `if`s
// whose condition is free of my_id, which every rank takes alike) that communicates: an `if` on
// my_id, a round loop or a send or receive. On each path a phase holds either one round loop
// (send before receive in its body) and no other communication, or at most one send and at most
// one receive, the send first. Event (phase, index): a straight-line one has index 0, a loop's
// the iteration minus the first. The obligations, over every path (each path's condition a term
// over r):
//
//   match-line-N     r's source S is a rank, and some path whose condition holds at S sends to r
//                    at the same (phase, index); the received value is that send's, in S's state
//   received-...     every send of r goes to a rank D, and some path whose condition holds at D
//                    receives from r at the same (phase, index) (in a loop: the partner takes part)
//   rounds-PHASE     every rank's rounds in the phase are at most the witness's (the proof's
//                    `witness PHASE TERM`, a rank: 0 unless given)
//   steps            the phases' rounds (the witnesses') add up to the `steps` claim
//   infeasible-...   a branch of an `if` on my_id that no rank takes (pruned: its queries would be
//                    vacuous)
//
// Why it is the program's behaviour: by match and received, on every channel (s, d) the sends of
// s to d and the receives of d from s sit at the same (phase, index) positions; program order is
// the lexicographic order of the positions on every path, so per-pair FIFO delivers each send to
// the receive of its position. No deadlock, by induction on the positions: a receive at (f, j)
// waits for its source's send at (f, j), which that source reaches after events of smaller
// positions only (sends first within a round and within a straight-line phase), all completed,
// and sends are buffered. The rounds are then a synchronous schedule: phase f takes rounds
// offset(f) .. offset(f) + R(f) - 1, one send and one receive per rank and round (single-port).
// A loop's induction hypothesis is stated for the ranks on the paths that run it (a source or
// partner on another path is named by that path's condition), and the values the loop does not
// assign are each path's own (newrank: r div 2 on the odd fold ranks, r - rem past 2 rem).
//
// The program is read until every path's sends and receives (templates over r) are the same as in
// the reading before (a receive takes its value from the reading before): a fixed point, reached
// in as many readings as there are phases, plus one.
#include "smt/every_p_analyzer.hpp"
#include "smt/solver.hpp"

namespace collv::everyp {

namespace {

std::string phase_key(const Stmt* s) { return fmt::format("line-{}", s->loc.line); }

}  // namespace

bool Analyzer::has_comm(const std::vector<StmtPtr>& body) {
  for (const auto& s : body)
    if (s->kind == StmtKind::Send || s->kind == StmtKind::Receive || has_comm(s->body) ||
        has_comm(s->else_body))
      return true;
  return false;
}

int Analyzer::loop_id(const Stmt& s) {
  if (!phased_) return ++out_.loops;
  // One loop statement, one induction: its iteration and exit constants are shared by the paths
  // that run it (its bounds are free of r and the same on each: checked in round_loop).
  auto f = ploop_id_.find(&s);
  if (f != ploop_id_.end()) return f->second;
  int id = ++out_.loops;
  ploop_id_[&s] = id;
  return id;
}

void Analyzer::phased_run(const std::vector<const Stmt*>& todo, const Path& p0) {
  // A barrier's knowledge is not carried across paths yet: refused, not under-approximated.
  if (barrier_)
    refuse(
        "a barrier whose ranks take different rounds (an `if` on my_id around communication) "
        "is outside the fragment",
        m_.header.loc);
  phased_ = true;
  pdecl_.clear();
  auto signature = [](const std::vector<PhaseEvent>& ev) {
    std::string out;
    for (const auto& e : ev)
      out += fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}\n", e.send, e.in_loop, e.phase, e.idx,
                         e.lo, e.hi, e.iter, e.pc, e.peer, e.len, e.blk, e.loc.str());
    return out;
  };
  for (int pass = 0; pass < 8; ++pass) {
    out_.obligations.clear();
    out_.loops = 0;
    paths_ = 0;
    loop_seen_.clear();
    loop_name_.clear();
    splits_.clear();
    ploop_id_.clear();
    ploop_bounds_.clear();
    pev_cur_.clear();
    pfinal_.clear();
    explore(todo, 0, p0);
    if (pass > 0 && signature(pev_cur_) == signature(pev_prev_)) {
      phased_global();
      return;
    }
    pev_prev_ = pev_cur_;
  }
  refuse("the phases' messages did not reach a fixed point in 8 readings", m_.header.loc);
}

void Analyzer::phased_if(const Stmt& s, const std::string& c, const Path& path,
                         std::vector<bool>& feasible) {
  // A branch no rank takes is pruned, with a query that proves it (its condition is unsat).
  for (int side = 0; side < 2; ++side) {
    Path b = path;
    b.pc = fmt::format("(and {} {})", path.pc, side == 0 ? c : fmt::format("(not {})", c));
    oblige(b, fmt::format("infeasible-line-{}-{}", s.loc.line, side == 0 ? "then" : "else"),
           "no rank takes this branch of an `if` on my_id (its queries are left out)", "", "true",
           "false", s.loc);
    if (proved_now(out_.obligations.back().script))
      feasible[side] = false;
    else
      out_.obligations.pop_back();
  }
}

bool Analyzer::proved_now(const std::string& script) {
  auto known = pruned_.find(script);  // each reading asks the same questions
  if (known == pruned_.end()) {
    smt::Solver z(smt::Limits{10000, 20'000'000});
    z.reserve(script.size() / 8 + 16);
    z.add(script);
    known = pruned_.emplace(script, z.check({"a"}).answer == smt::Answer::Unsat).first;
  }
  return known->second;
}

void Analyzer::phase_open(const Stmt& s, Path& path, std::size_t end) {
  // A phase is named by its line: two on one line would share their events' positions.
  auto [at, fresh] = phase_stmt_.emplace(phase_key(&s), &s);
  if (!fresh && at->second != &s)
    refuse("two communicating statements on one line: the phases need a line each", s.loc);
  path.phase = &s;
  path.phase_end = end;
  path.psend = "0";
  path.precv = "0";
  path.phase_loop = false;
}

void Analyzer::phase_close(Path& path) {
  if (!path.phase) return;
  std::string n = path.psend == path.precv
                      ? path.psend
                      : ite(op2(">=", path.psend, path.precv), path.psend, path.precv);
  path.phase_n.emplace_back(phase_key(path.phase), n);
  path.phase = nullptr;
}

void Analyzer::phase_comm(const Stmt& s, Path& path, bool loop) {
  if (loop && !has_comm(s.body)) return;  // a local loop (a rotation, a doubling to pof2)
  // Communication at the phase level is a phase of its own (closed before the next statement).
  if (!path.phase) phase_open(s, path, 0);
  if (path.phase_loop)
    refuse("a phase with a round loop has no other send or receive (outside the fragment)", s.loc);
  if (loop) {
    if (path.psend != "0" || path.precv != "0")
      refuse("a phase with a round loop has no other send or receive (outside the fragment)",
             s.loc);
    path.phase_loop = true;
  } else if (s.kind == StmtKind::Send && (path.psend != "0" || path.precv != "0")) {
    refuse(
        "a phase of straight-line communication has at most one send, before its receive "
        "(outside the fragment)",
        s.loc);
  } else if (s.kind == StmtKind::Receive && path.precv != "0") {
    refuse("a phase of straight-line communication has at most one receive (outside the fragment)",
           s.loc);
  }
}

void Analyzer::phase_event(const PhaseEvent& e, const Path& path) {
  PhaseEvent x = e;
  x.phase = phase_key(path.phase);
  pev_cur_.push_back(x);
}

std::string Analyzer::phase_at(const PhaseEvent& e, const std::string& K,
                               std::map<std::string, std::string>& ren) {
  if (!e.in_loop) return op2("=", K, e.idx);
  std::string jp = add(e.lo, K);
  ren[e.iter] = jp;
  return fmt::format("(and (<= {} {}) (<= {} {}))", e.lo, jp, jp, e.hi);
}

Analyzer::Incoming Analyzer::phased_incoming(const Path& path, const std::string& K) {
  Incoming in;
  const std::string key = phase_key(path.phase);
  for (const auto& e : pev_prev_) {
    if (!e.send || e.phase != key) continue;
    std::map<std::string, std::string> ren = {{"r", "src_r"}};
    std::string cond = phase_at(e, K, ren);
    cond = fmt::format("(and {} {})", cond, rename(e.pc, ren));
    in.exists = fmt::format("(or {} {})", cond, in.exists);
    in.len = ite(cond, rename(e.len, ren), in.len);
    in.blk = ite(cond, rename(e.blk, ren), in.blk);
    in.dst = ite(cond, rename(e.peer, ren), in.dst);
  }
  return in;
}

std::string Analyzer::phase_received(const Path& path, const std::string& dst,
                                     const std::string& K) {
  const std::string key = phase_key(path.phase);
  std::string any = "false";
  for (const auto& f : pev_prev_) {
    if (f.send || f.phase != key) continue;
    std::map<std::string, std::string> ren = {{"r", dst}};
    const std::string cond = phase_at(f, K, ren);
    any = fmt::format("(or (and {} {} (= {} r)) {})", cond, rename(f.pc, ren), rename(f.peer, ren),
                      any);
  }
  return fmt::format("(and (<= 0 {}) (< {} p) {})", dst, dst, any);
}

std::string Analyzer::phase_decls(const std::string& text, const std::string& have) {
  // The loop exits another path's terms name (a matched send after that path's loop).
  std::string out, seen = text;
  for (bool more = true; more;) {
    more = false;
    for (const auto& [name, decl] : pdecl_) {
      const std::string head = "(declare-const " + name + " ";
      if (have.find(head) != std::string::npos || out.find(head) != std::string::npos) continue;
      if (!mentions(seen, name)) continue;
      out += decl;
      seen += decl;
      more = true;
    }
  }
  return out;
}

void Analyzer::phased_global() {
  // The rounds of each phase: the witness's (a rank on some path), at least every rank's.
  std::vector<std::string> phases;
  for (const auto& P : pfinal_)
    for (const auto& [k, n] : P.phase_n)
      if (std::find(phases.begin(), phases.end(), k) == phases.end()) phases.push_back(k);
  std::sort(phases.begin(), phases.end(), [](const std::string& a, const std::string& b) {
    return std::stoi(a.substr(5)) < std::stoi(b.substr(5));
  });
  auto rounds_of = [](const Path& P, const std::string& k) {
    for (const auto& [kk, n] : P.phase_n)
      if (kk == k) return n;
    return std::string("0");
  };
  for (const auto& i : pf_.invariants)
    if (i.part == "witness" && std::find(phases.begin(), phases.end(), i.loop) == phases.end())
      throw Refused{fmt::format("{}:{}: witness {}: the program has no phase there (phases: the "
                                "lines of its communicating statements outside every `if` on "
                                "my_id)",
                                pf_.path, i.line, i.loop),
                    SourceLoc{pf_.path, i.line, 1}};
  std::string total = "0";
  for (const auto& k : phases) {
    std::string w = "0";
    if (const EveryPInvariant* wi = invariant(k, "#witness", "witness")) {
      std::string why = check_user_term(wi->term, {"p", "count", "root"});
      if (!why.empty())
        throw Refused{fmt::format("{}:{}: witness term: {}", pf_.path, wi->line, why),
                      SourceLoc{pf_.path, wi->line, 1}};
      w = wi->term;
    }
    std::string R = "0";
    for (auto it = pfinal_.rbegin(); it != pfinal_.rend(); ++it)
      R = ite(rename(it->pc, {{"r", w}}), rounds_of(*it, k), R);
    SourceLoc loc = m_.header.loc;
    loc.line = std::stoi(k.substr(5));
    for (const auto& P : pfinal_)
      oblige(P, "rounds-" + k,
             fmt::format(
                 "r's rounds in the phase at {} are at most those of the witness {}, a rank", k, w),
             "", "true",
             fmt::format("(and (<= 0 {}) (< {} p) (<= {} {}))", w, w, rounds_of(P, k), R), loc);
    total = add(total, R);
  }
  const auto& h = m_.header;
  if (!h.steps) return;
  Path any;
  oblige(any, "steps",
         h.steps_at_most ? "the phases' rounds (each the witness's) are at most the `steps` claim"
                         : "the phases' rounds (each the witness's) add up to the `steps` claim",
         "", "true", op2(h.steps_at_most ? "<=" : "=", total, header_term(*h.steps)), h.loc);
}

}  // namespace collv::everyp
