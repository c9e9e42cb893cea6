// The every-p prover's paths: the start of a program, its statements read along each path,
// straight-line sends and receives, and the obligations they write (see every_p_analyzer.hpp).
#include "smt/every_p_analyzer.hpp"

namespace collv::everyp {

void Analyzer::run() {
  const auto& h = m_.header;
  rooted_ = collective_is_rooted(h.collective);
  barrier_ = h.collective == Collective::Barrier;
  if (h.collective != Collective::Allgather && h.collective != Collective::ReduceScatter &&
      !more_collective(h.collective) && !barrier_)
    throw Refused{
        fmt::format(
            "collective {} is not in the fragment yet (allgather, "
            "reduce-scatter, barrier, alltoall, allreduce, broadcast, scatter, gather and reduce "
            "only)",
            collective_name(h.collective)),
        h.loc};
  if (h.elements) throw Refused{"an `elements` line is not in the fragment", h.loc};
  if (chunked() && h.collective != Collective::Allreduce)
    throw Refused{"the proof's `chunks` line applies to allreduce only", h.loc};
  base_ = "(and (>= p 2) (< p 2147483648) (>= count 0) (< count 2147483648) (<= 0 r) (< r p)";
  base_ += rooted_ ? " (<= 0 root) (< root p))" : " (= root 0))";
  if (h.requires_) base_ = fmt::format("(and {} {})", base_, header_term(*h.requires_));
  out_.assumptions = {"2 <= p < 2^31", "0 <= count < 2^31", "0 <= my_id < p"};
  if (rooted_) out_.assumptions.push_back("0 <= root < p");
  if (h.requires_) out_.assumptions.push_back("requires " + expr_to_string(*h.requires_));
  Path p0;
  sets_check();
  p0.st.data[h.input] = more_collective(h.collective) ? more_input(h.collective, chunked())
                        : h.collective == Collective::Allgather ? Buf{"1", "(it r 0)"}
                        : barrier_                              ? Buf{"0", "none"}
                        : sets()                                ? Buf{"p", "(ss b (= q r))"}
                                                                : Buf{"p", "(sm b r 1)"};
  if (h.output != h.input) p0.st.data[h.output] = Buf{"0", "none"};
  std::vector<const Stmt*> todo;
  for (const auto& s : m_.body) todo.push_back(s.get());
  if (rooted_) {
    rooted_run(todo, p0);
  } else {
    try {
      explore(todo, 0, p0);
    } catch (const Refused&) {
      // An `if` on my_id around communication: the ranks take different rounds, read as phases.
      if (!my_id_if_) throw;
      phased_run(todo, p0);
    }
  }
  out_.paths = paths_;
  split_obligations();
  case_obligations();
  abstract_obligations();
}

void Analyzer::oblige(const Path& path, const std::string& name, const std::string& what,
                      const std::string& decls, const std::string& hyp, const std::string& goal,
                      const SourceLoc& loc) {
  EveryPObligation ob;
  const std::string named = !path.tag.empty() ? fmt::format("{}@{}", name, path.tag)
                            : path.index > 0  ? fmt::format("{}@path{}", name, path.index + 1)
                                              : name;
  ob.name = named;
  // Names are unique (each is a certificate's file name): a second read of a loop gets "-2".
  for (int n = 2; std::any_of(out_.obligations.begin(), out_.obligations.end(),
                              [&](const EveryPObligation& o) { return o.name == ob.name; });
       ++n)
    ob.name = fmt::format("{}-{}", named, n);
  ob.description = what;
  ob.loc = loc;
  std::string body =
      "(declare-const p Int)\n(declare-const count Int)\n(declare-const root Int)\n"
      "(declare-const r Int)\n(declare-const a Bool)\n";
  const std::string more =
      phased_ ? phase_decls(path.pc + hyp + goal + decls, path.decls + decls) : std::string();
  std::string tail = fmt::format("(assert {})\n(assert {})\n", base_, path.pc);
  if (hyp != "true") tail += fmt::format("(assert {})\n", hyp);
  tail += fmt::format("(assert (=> a (not {})))\n", goal);
  body += std::string(barrier_ ? "(declare-const q Int)\n" : "") +
          set_decls(path.decls + more + decls + tail) + path.decls + more + decls + tail;
  // Powers of two and ceil(log2 x) on the 32-bit range (x < 2^31), as finite case splits (the
  // doubling loops' masks and the `clog2` of headers stay quantifier-free and linear), only in
  // the queries that use them: an unused definition changed Z3's search enough to take NCCL's
  // all-reduce consecution from 12 s to over 60 s.
  const bool pw = body.find("pow2") != std::string::npos ||
                  body.find("clog2") != std::string::npos ||
                  body.find("popcount_undefined") != std::string::npos;
  ob.script = fmt::format("; {}\n; {} ({})\n", ob.name, what, loc.str()) +
              (sets() ? kPreludeSets : kPrelude) + (pw ? pow2_defs() : std::string()) +
              (body.find("xor_pow2") != std::string::npos ? xor_defs() : std::string()) +
              // a header's exact division where it is not an integer (every_p_expr.cpp)
              (body.find("hdiv_undefined") != std::string::npos
                   ? "(declare-fun hdiv_undefined (Int Int) Int)\n"
                   : std::string()) +
              body;
  out_.obligations.push_back(std::move(ob));
}

void Analyzer::explore(std::vector<const Stmt*> todo, std::size_t at, Path path) {
  while (at < todo.size()) {
    if (phased_ && path.phase && at >= path.phase_end) phase_close(path);
    const Stmt& s = *todo[at];
    switch (s.kind) {
      case StmtKind::Assign:
        straight(s, path);
        ++at;
        continue;
      case StmtKind::If: {
        std::string c = bool_expr(*s.cond, path.st);
        if (rooted_ && !path.recvs.empty())
          refuse("an `if` after a receive in a rooted program is outside the fragment", s.loc);
        std::vector<bool> feasible = {true, true};
        const bool opens = phased_ && mentions(c, "r") && !path.phase &&
                           (has_comm(s.body) || has_comm(s.else_body));
        if (phased_) phased_if(s, c, path, feasible);  // also `newrank <> -1` folded to false
        if (mentions(c, "r") && !rooted_ && !phased_) {
          my_id_if_ = has_comm(s.body) || has_comm(s.else_body);
          refuse(
              "an `if` whose condition depends on my_id, around communication or data, is "
              "outside the fragment",
              s.loc);
        }
        if (++paths_ > 64) refuse("more than 64 paths", s.loc);
        std::vector<const Stmt*> t2(todo.begin(), todo.begin() + static_cast<long>(at));
        std::vector<const Stmt*> e2 = t2;
        for (const auto& x : s.body) t2.push_back(x.get());
        for (const auto& x : s.else_body) e2.push_back(x.get());
        std::size_t then_at = t2.size() - s.body.size(), else_at = e2.size() - s.else_body.size();
        for (std::size_t k = at + 1; k < todo.size(); ++k) {
          t2.push_back(todo[k]);
          e2.push_back(todo[k]);
        }
        Path pt = path, pe = path;
        pt.pc = fmt::format("(and {} {})", path.pc, c);
        pe.pc = fmt::format("(and {} (not {}))", path.pc, c);
        pe.index = paths_;
        if (path.phase && path.phase_end > at) {  // the phase's end moves with the flattening
          pt.phase_end = path.phase_end + s.body.size() - 1;
          pe.phase_end = path.phase_end + s.else_body.size() - 1;
        }
        if (opens) {
          phase_open(s, pt, at + s.body.size());
          phase_open(s, pe, at + s.else_body.size());
        }
        if (feasible[0]) explore(t2, then_at, pt);
        if (feasible[1]) explore(e2, else_at, pe);
        return;
      }
      case StmtKind::For:
        if (rooted_ && !has_comm(s.body)) {
          // A loop without communication (the root laying out a buffer): read with its
          // invariants, as every loop of a round program.
          loop(s, path);
          ++at;
          continue;
        }
        if (rooted_) {
          rooted_loop(s, path);
          ++at;
          continue;
        }
        if (chunked()) return split_loop(s, todo, at, path);
        if (phased_) phase_comm(s, path, true);
        loop(s, path);
        ++at;
        continue;
      case StmtKind::While:
        if (rooted_) return fanin_shape(s) ? fanin(todo, at, path) : tree(todo, at, path);
        if (phased_skip(s, path)) {
          ++at;
          continue;
        }
        if (phased_) phase_comm(s, path, true);
        while_loop(s, path);
        ++at;
        continue;
      case StmtKind::Send:
      case StmtKind::Receive:
        if (s.along_link) refuse("`along link` is outside the fragment", s.loc);
        if (phased_) phase_comm(s, path, false);
        if (!rooted_)
          straight_comm(s, path);
        else if (s.kind == StmtKind::Send)
          rooted_send(s, path);
        else
          rooted_receive(s, path);
        ++at;
        continue;
      default:
        refuse(
            "this statement is outside the fragment (assignments, `if` on conditions free of "
            "my_id, and `for` loops of send-receive rounds)",
            s.loc);
    }
  }
  finish(path);
}

void Analyzer::straight(const Stmt& s, Path& path) {
  if (s.kind != StmtKind::Assign) refuse("outside the fragment here", s.loc);
  bool data = s.value->type == Type::Data || (s.target->kind != ExprKind::Name) ||
              s.value->kind == ExprKind::EmptyBuf;
  if (!data) {
    path.st.ints[s.target->name] = int_expr(*s.value, path.st);
    path.st.dead.erase(s.target->name);
    return;
  }
  std::vector<std::pair<std::string, std::string>> reads;
  Buf v = data_expr(*s.value, path.st, &reads);
  std::string fits = write(*s.target, v, path.st);
  for (const auto& [g, what] : reads)
    oblige(path, read_name(what, fmt::format("line-{}", s.loc.line)), what,
           "(declare-const b Int)\n", "(> count 0)", g, s.loc);
  if (fits != "true")
    oblige(path, fmt::format("assign-length-line-{}", s.loc.line),
           "the assigned value fills the slice exactly", "", "(> count 0)", fits, s.loc);
}

Analyzer::Incoming Analyzer::incoming(const Path& path, const std::string& K, int cur_loop,
                                      const std::string& iter) {
  if (phased_) return phased_incoming(path, K);
  Incoming in;
  for (const auto& e : path.sends) {
    std::string cond;
    std::map<std::string, std::string> ren = {{"r", "src_r"}};
    if (!e.in_loop) {
      cond = op2("=", K, e.idx);
    } else {
      std::string jp = add(e.lo, sub(K, e.idx));
      cond = fmt::format("(and (<= {} {}) (<= {} {}))", e.lo, jp, jp, e.hi);
      if (e.loop_id == cur_loop)
        cond = fmt::format("(and {} ({} {} {}))", cond, e.before_recv ? "<=" : "<", jp, iter);
      ren[e.iter] = jp;
    }
    in.exists = fmt::format("(or {} {})", cond, in.exists);
    in.len = ite(cond, rename(e.len, ren), in.len);
    in.blk = ite(cond, rename(e.blk, ren), in.blk);
    in.dst = ite(cond, rename(e.dst, ren), in.dst);
    if (barrier_) in.know = ite(cond, rename(e.know, ren), in.know);
  }
  return in;
}

void Analyzer::do_receive(const Stmt& b, State& st, const Path& path, const std::string& K,
                          int cur_loop, const std::string& iter, std::vector<Pending>& obs,
                          std::string& src) {
  src = render(int_expr(*b.peer, st));
  Incoming in = incoming(path, K, cur_loop, iter);
  obs.push_back({fmt::format("match-line-{}", b.loc.line),
                 "r's source is a rank whose send of the same index (an earlier statement) "
                 "goes to r",
                 fmt::format("(and {} (<= 0 src_r) (< src_r p) (= {} r))", in.exists, in.dst),
                 false, b.loc});
  if (m_.header.nodup)
    for (const auto& [name, buf] : st.data)
      obs.push_back(
          {fmt::format("nodup-{}-line-{}", name, b.loc.line),
           fmt::format("no item r receives at line {} is one r already holds in {}", b.loc.line,
                       name),
           fmt::format("(not (and (<= 0 t) (< t {}) (not (= {} none)) (<= 0 b) (< b {}) {}))",
                       in.len, at_block(in.blk, "t"), buf.len,
                       overlap(buf.blk, at_block(in.blk, "t"))),
           true, b.loc});
  std::string f = write(*b.target, Buf{in.len, in.blk}, st);
  // A barrier's receive: r now knows what its source knew when it sent (the send of the same
  // index, an earlier statement of the source).
  if (barrier_) st.know = fmt::format("(or {} {})", st.know, in.know);
  if (f != "true")
    obs.push_back({fmt::format("fill-line-{}", b.loc.line),
                   "the message fills the receive's slice exactly", f, true, b.loc});
}

void Analyzer::straight_comm(const Stmt& s, Path& path) {
  if (s.kind == StmtKind::Send) {
    SendEvent e;
    e.idx = phased_ ? path.psend : path.nsend;
    e.dst = render(int_expr(*s.peer, path.st));
    std::vector<std::pair<std::string, std::string>> reads;
    Buf m = data_expr(*s.value, path.st, &reads);
    e.len = m.len;
    e.blk = m.blk;
    e.know = path.st.know;
    for (const auto& [g, what] : reads)
      oblige(path, read_name(what, fmt::format("line-{}", s.loc.line)), what,
             "(declare-const b Int)\n", "(> count 0)", g, s.loc);
    path.sends.push_back(e);
    path.nsend = add(path.nsend, "1");
    if (phased_) {
      PhaseEvent pe{true, false, "", e.idx, "", "", "", path.pc, e.dst, e.len, e.blk, s.loc};
      phase_event(pe, path);
      oblige(path, fmt::format("received-line-{}", s.loc.line),
             "the send goes to a rank whose path receives from r in the same phase and round", "",
             "true", phase_received(path, e.dst, e.idx), s.loc);
      path.psend = add(path.psend, "1");
    }
    return;
  }
  std::vector<Pending> obs;
  std::string src;
  std::string K = phased_ ? path.precv : path.nrecv;
  State st = path.st;
  do_receive(s, st, path, K, -1, "", obs, src);
  std::string decls =
      "(declare-const src_r Int)\n(declare-const b Int)\n(declare-const t Int)\n(declare-const "
      "k Int)\n";
  for (const auto& o : obs)
    oblige(path, o.name, o.what, decls,
           o.data ? fmt::format("(and (= src_r {}) (> count 0))", src)
                  : fmt::format("(= src_r {})", src),
           o.goal, o.loc);
  // The state goes on without the query's name for the source: its term, over r.
  std::string srcp = "(" + std::string("+ 0 ") + src + ")";
  for (auto& [n, l] : st.ints)
    l = Lin{rename(l.c, {{"src_r", srcp}}), rename(l.k, {{"src_r", srcp}})};
  for (auto& [n, bf] : st.data)
    bf = Buf{rename(bf.len, {{"src_r", srcp}}), rename(bf.blk, {{"src_r", srcp}})};
  st.know = rename(st.know, {{"src_r", srcp}});
  path.st = st;
  path.nrecv = add(path.nrecv, "1");
  if (phased_) {
    phase_event(PhaseEvent{false, false, "", K, "", "", "", path.pc, src, "0", "none", s.loc},
                path);
    path.precv = add(path.precv, "1");
  }
}
}  // namespace collv::everyp
