// The every-p prover's loops (induction over a round loop) and the end of a path (postcondition,
// rounds): see every_p.hpp and docs/smt.md, "Every p from the model".
#include "smt/every_p_analyzer.hpp"

namespace collv::everyp {

const EveryPInvariant* Analyzer::invariant(const std::string& loop, const std::string& var,
                                           const std::string& part) {
  for (const auto& i : pf_.invariants)
    if (i.loop == loop && i.var == var && i.part == part) return &i;
  return nullptr;
}

std::string Analyzer::inv_term(const EveryPInvariant& inv, const std::string& counter,
                               const std::string& iter) {
  std::set<std::string> vars = {"r", "p", "count", "root", counter};
  if (inv.part == "block" || inv.part == "care") vars.insert("b");
  if (inv.part == "heard" || (inv.part == "block" && sets())) vars.insert("q");
  std::string why = !sets() && mentions(inv.term, "ss")
                        ? "(ss ...) is a sum over a set of ranks: the proof needs `sums sets`"
                        : check_user_term(inv.term, vars);
  if (!why.empty())
    throw Refused{fmt::format("{}:{}: invariant term: {}", pf_.path, inv.line, why),
                  SourceLoc{pf_.path, inv.line, 1}};
  return rename(inv.term, {{counter, iter}});
}

void Analyzer::assigned(const std::vector<StmtPtr>& body, std::set<std::string>& out) {
  for (const auto& s : body) {
    if (s->kind == StmtKind::Assign || s->kind == StmtKind::Receive)
      out.insert(s->target->kind == ExprKind::Name ? s->target->name : s->target->args[0]->name);
    assigned(s->body, out);
    assigned(s->else_body, out);
  }
}

bool Analyzer::write_first(const std::vector<StmtPtr>& body, const std::string& v) {
  for (const auto& s : body) {
    bool writes = (s->kind == StmtKind::Assign || s->kind == StmtKind::Receive) &&
                  s->target->kind == ExprKind::Name && s->target->name == v;
    bool reads = (s->value && reads_name(*s->value, v)) || (s->peer && reads_name(*s->peer, v)) ||
                 (s->target && s->target->kind != ExprKind::Name && reads_name(*s->target, v));
    if (reads) return false;
    if (writes) return true;
  }
  return false;
}
void Analyzer::loop(const Stmt& s, Path& path) {
  // A loop's name is its counter, with #N for the N-th loop (in program order) with that counter;
  // a loop explored again on another path keeps its name.
  auto named = loop_name_.find(&s);
  if (named == loop_name_.end()) {
    int nth = ++loop_seen_[s.var];
    named = loop_name_.emplace(&s, nth == 1 ? s.var : fmt::format("{}#{}", s.var, nth)).first;
  }
  std::string lname = named->second;
  int id = loop_id(s);
  if (s.var == "r" || s.var == "b" || s.var == "p" || s.var == "t" || s.var == "q")
    refuse("a loop counter named r, b, t, q or p clashes with the invariant language's names",
           s.loc);
  Lin lo = int_expr(*s.value, path.st), hi = int_expr(*s.limit, path.st);
  if (s.downto) refuse("a `downto` loop is outside the fragment", s.loc);
  std::string lot = render(lo), hit = render(hi);
  if (mentions(lot, "r") || mentions(hit, "r"))
    refuse(
        "the loop's trip count depends on my_id: outside the fragment (every rank must run "
        "the same rounds)",
        s.loc);
  round_loop(s, path, LoopSpec{lname, s.var, false, lot, hit, nullptr, id});
}

void Analyzer::round_loop(const Stmt& s, Path& path, const LoopSpec& spec) {
  const std::string &lname = spec.lname, &lot = spec.lot, &hit = spec.hit;
  const int id = spec.id;
  std::string iter = fmt::format("i_L{}", id);
  std::string loop_where = fmt::format("loop {} ({})", lname, s.loc.str());
  // A phased program's loop is one induction over the paths that run it: the same bounds on each.
  if (phased_) {
    auto [at, fresh] = ploop_bounds_.emplace(id, std::make_pair(lot, hit));
    if (!fresh && at->second != std::make_pair(lot, hit))
      refuse(
          "a round loop run on several paths with bounds that differ between them is outside "
          "the fragment",
          s.loc);
  }
  // The body: assignments, one send and one receive, in either order; an `if` (no else) around
  // the send or the receive is read as its statements, with `always-line-N` (every_p_halving.cpp).
  std::vector<const Stmt*> body;
  std::map<const Stmt*, const Stmt*> guard_of;
  flatten_guards(s, body, guard_of);
  const Stmt* snd = nullptr;
  const Stmt* rcv = nullptr;
  for (const Stmt* b : body) {
    if (b->kind == StmtKind::Send || b->kind == StmtKind::Receive) {
      const Stmt*& slot = b->kind == StmtKind::Send ? snd : rcv;
      if (slot)
        refuse("more than one send or receive in a round loop: outside the fragment", b->loc);
      if (b->along_link) refuse("`along link` is outside the fragment", b->loc);
      slot = b;
    } else if (b->kind != StmtKind::Assign &&
               !(b->kind == StmtKind::If && assignments_only(b->body) &&
                 assignments_only(b->else_body))) {
      refuse(
          "inside a round loop only assignments, one send and one receive are in the fragment "
          "(assignments also under an `if` whose branches are assignments only)",
          b->loc);
    }
  }
  // A local loop (no send and no receive: a rotation, a copy) is an induction without rounds.
  const bool local_loop = !snd && !rcv;
  if (!local_loop && (!snd || !rcv))
    refuse("a loop with a send and no receive, or a receive and no send, is outside the fragment",
           s.loc);
  bool send_first = false;
  for (const Stmt* b : body) {
    if (b == snd) send_first = true;
    if (b == rcv) break;
  }
  auto first_write = [&](const std::string& v) {
    return guard_of.empty() ? write_first(s.body, v) : write_first_flat(body, guard_of, v);
  };
  // A phased program's round: the send comes first, so a rank waiting for its partner's send of
  // a round waits only for rounds before it (no deadlock by induction on the rounds).
  if (phased_ && !local_loop && !send_first)
    refuse("in a phased program a round loop sends before it receives (else outside the fragment)",
           s.loc);

  // The head of iteration `iter`: the proof's closed forms for what the loop assigns. A variable
  // without one has no value at the head (a read before the body writes it is refused).
  std::set<std::string> vars, local;
  std::map<std::string, std::string> care;  // a data variable's `care` term, over iter
  assigned(s.body, vars);
  if (!spec.ghost && vars.count(s.var))
    refuse("the loop assigns its own counter '" + s.var + "': outside the fragment", s.loc);
  State head = path.st;
  if (!spec.ghost) {
    head.ints[s.var] = Lin{"0", iter};
    head.dead.erase(s.var);
  }
  for (const auto& v : std::set<std::string>(vars)) {
    bool is_data = false;
    for (std::size_t k = 0; k < m_.var_names.size(); ++k)
      if (m_.var_names[k] == v) is_data = m_.var_types[k] == Type::Data;
    if (!is_data) {
      const EveryPInvariant* inv = invariant(lname, v, "value");
      if (!inv) {
        head.ints.erase(v);
        local.insert(v);
        vars.erase(v);
        continue;
      }
      head.ints[v] = Lin{"0", inv_term(*inv, spec.counter, iter)};
    } else {
      const EveryPInvariant* li = invariant(lname, v, "length");
      const EveryPInvariant* bi = invariant(lname, v, "block");
      if (!li && !bi) {
        head.data.erase(v);
        local.insert(v);
        vars.erase(v);
        continue;
      }
      if (!li || !bi)
        refuse(fmt::format("{} assigns the data variable '{}': the proof needs both 'invariant {} "
                           "{} length TERM' and 'invariant {} {} block TERM'",
                           loop_where, v, lname, v, lname, v),
               s.loc);
      head.data[v] = Buf{inv_term(*li, spec.counter, iter), inv_term(*bi, spec.counter, iter)};
      // `care`: the closed form covers the blocks where the term holds; the others are unknown.
      if (const EveryPInvariant* ci = invariant(lname, v, "care")) {
        care[v] = inv_term(*ci, spec.counter, iter);
        std::string hv = fmt::format("havoc_L{}_{}", id, v);
        havocs_.insert(hv);
        head.data[v].blk =
            fmt::format("(ite {} {} ({} r {} b))", care[v], head.data[v].blk, hv, iter);
      }
    }
  }
  // A barrier's knowledge: the proof's `heard LOOP TERM` (a Bool term over r, q and the counter).
  if (barrier_) {
    const EveryPInvariant* hv = invariant(lname, "#heard", "heard");
    if (!hv)
      refuse(fmt::format("{} is a barrier's round loop: the proof needs 'heard {} TERM' (what "
                         "rank r has heard from rank q at the head of an iteration)",
                         loop_where, lname),
             s.loc);
    head.know = inv_term(*hv, spec.counter, iter);
  }
  auto head_at = [&](const std::string& t) {  // the closed forms at iteration t
    State h = head;
    for (auto& [v, l] : h.ints)
      if (vars.count(v)) l.k = rename(l.k, {{iter, t}});
    for (auto& [v, b] : h.data)
      if (vars.count(v)) b = Buf{rename(b.len, {{iter, t}}), rename(b.blk, {{iter, t}})};
    h.know = rename(h.know, {{iter, t}});
    return h;
  };
  if (barrier_)
    oblige(path, fmt::format("initiation-heard-loop-{}", lname),
           fmt::format("before {}, what r has heard equals the proof's `heard` at the first "
                       "iteration",
                       loop_where),
           "", "(and (<= 0 q) (< q p))", op2("=", path.st.know, head_at(lot).know), s.loc);

  // Initiation: the state before the loop is the closed forms at the first iteration (not needed
  // for a variable the body writes before reading it).
  State first = head_at(lot);
  for (const auto& v : vars) {
    if (first_write(v)) continue;
    std::string name = fmt::format("initiation-{}-loop-{}", v, lname);
    if (first.ints.count(v)) {
      if (!path.st.ints.count(v))
        refuse(fmt::format("'{}' has no value before {}", v, loop_where), s.loc);
      oblige(
          path, name,
          fmt::format("before {}, {} equals its invariant at the first iteration", loop_where, v),
          "", "true", op2("=", render(path.st.ints.at(v)), first.ints.at(v).k), s.loc);
    } else {
      Buf before = path.st.data.count(v) ? path.st.data.at(v) : Buf{"0", "none"};
      const Buf& want = first.data.at(v);
      oblige(path, name,
             fmt::format("before {}, {} (length and every block) equals its invariant at the "
                         "first iteration",
                         loop_where, v),
             "(declare-const b Int)\n", "(> count 0)",
             fmt::format("(and (= {} {}) (=> (and (<= 0 b) (< b {}) {}) (= {} {})))", before.len,
                         want.len, before.len,
                         care.count(v) ? rename(care.at(v), {{iter, lot}}) : "true", before.blk,
                         want.blk),
             s.loc);
    }
  }

  std::vector<std::pair<std::string, std::string>> reads;
  std::vector<std::pair<std::string, SourceLoc>> fits;
  AssignFn assign;
  assign = [&](const Stmt& b, State& st) {
    if (b.kind == StmtKind::If) return branch_assign(b, st, assign, reads, fits);
    if (b.value->type == Type::Data || b.target->kind != ExprKind::Name ||
        b.value->kind == ExprKind::EmptyBuf) {
      Buf v = data_expr(*b.value, st, &reads);
      std::string f = write(*b.target, v, st);
      if (f != "true") fits.emplace_back(f, b.loc);
    } else {
      st.ints[b.target->name] = int_expr(*b.value, st);
    }
  };
  // The loop's send, as a template over r and the iteration. When the body receives first, the
  // message depends on what was received: it is computed with the received variable at its
  // closed form at the next iteration, which is its value from the receive on (checked: the
  // body does not assign it after the receive); the receives that use it take it from earlier
  // iterations only, whose closed forms the induction has established.
  SendEvent ev;
  ev.in_loop = true;
  ev.idx = path.nsend;
  ev.lo = lot;
  ev.hi = hit;
  ev.iter = iter;
  ev.loop_id = id;
  ev.before_recv = send_first;
  if (!local_loop) {
    State st = head;
    State next = head_at(add(iter, "1"));
    bool after_recv = false;
    std::string rv;
    for (const Stmt* b : body) {
      if (b == rcv) {
        rv = b->target->kind == ExprKind::Name ? b->target->name : b->target->args[0]->name;
        if (!next.data.count(rv))
          refuse(fmt::format("{} sends after it receives into '{}', which has no invariant",
                             loop_where, rv),
                 b->loc);
        st.data[rv] = next.data.at(rv);
        st.know = next.know;  // a barrier's: what r knows from its receive on
        after_recv = true;
      } else if (b == snd) {
        ev.dst = render(int_expr(*b->peer, st));
        Buf m = data_expr(*b->value, st, &reads);
        ev.len = m.len;
        ev.blk = m.blk;
        ev.know = st.know;
        break;
      } else {
        assign(*b, st);
      }
    }
    if (after_recv) {
      bool seen = false;
      for (const Stmt* b : body) {
        if (b == rcv) seen = true;
        if (seen && b != rcv && b->kind == StmtKind::Assign) {
          std::string w =
              b->target->kind == ExprKind::Name ? b->target->name : b->target->args[0]->name;
          if (w == rv)
            refuse(fmt::format("{} assigns '{}' after receiving into it: outside the fragment",
                               loop_where, rv),
                   b->loc);
        }
      }
    }
  }
  if (!local_loop) path.sends.push_back(ev);

  // One iteration of r from the head, with the real receive.
  std::vector<Pending> obs;
  State st = head;
  std::string src;
  std::string K = phased_ ? sub(iter, lot) : add(path.nrecv, sub(iter, lot));
  std::vector<std::pair<std::string, SourceLoc>> always;  // each guard's condition, where it is
  const Stmt* at_guard = nullptr;
  for (const Stmt* b : body) {
    auto g = guard_of.find(b);
    const Stmt* gs = g == guard_of.end() ? nullptr : g->second;
    if (gs && gs != at_guard) always.emplace_back(bool_expr(*gs->cond, st), gs->loc);
    at_guard = gs;
    if (b == snd) continue;  // its obligations are the template's (reads) and the match
    if (b == rcv)
      do_receive(*b, st, path, K, id, iter, obs, src);
    else
      assign(*b, st);
  }
  std::string decls = fmt::format(
      "(declare-const {} Int)\n(declare-const src_r Int)\n(declare-const b Int)\n"
      "(declare-const t Int)\n(declare-const k Int)\n",
      iter);
  std::string hyp = fmt::format("(and (<= {} {}) (<= {} {}) (= src_r {}))", lot, iter, iter, hit,
                                local_loop ? "(- 1)" : src);
  // A while loop runs iteration lot..hit exactly (its `trips-...` obligations): its condition
  // holds at the head of each, and the consecution may use it.
  if (spec.cond) hyp = fmt::format("(and {} {})", hyp, while_holds(spec, head));
  std::string hypc = fmt::format("(and {} (> count 0))", hyp);
  for (const auto& [c, loc] : always)
    oblige(path, fmt::format("always-line-{}", loc.line),
           fmt::format("in every round of {}, the condition of the `if` at line {} holds (its "
                       "send or receive is made every round)",
                       loop_where, loc.line),
           decls, hyp, c, loc);
  if (snd)
    oblige(path, fmt::format("send-dst-loop-{}", lname),
           fmt::format("in every round of {}, r sends to a rank", loop_where), decls, hyp,
           fmt::format("(and (<= 0 {}) (< {} p))", ev.dst, ev.dst), snd->loc);
  if (phased_ && snd) {
    // The partner takes part: its path receives from r in the same phase and round.
    phase_event(
        PhaseEvent{true, true, "", "0", lot, hit, iter, path.pc, ev.dst, ev.len, ev.blk, snd->loc},
        path);
    phase_event(
        PhaseEvent{false, true, "", "0", lot, hit, iter, path.pc, src, "0", "none", rcv->loc},
        path);
    oblige(path, fmt::format("received-loop-{}", lname),
           fmt::format("in every round of {}, r's partner takes part: its path receives from r "
                       "in the same phase and round",
                       loop_where),
           decls, hyp, phase_received(path, ev.dst, sub(iter, lot)), snd->loc);
  }
  for (const auto& o : obs)
    oblige(path, o.name, o.what + " (" + loop_where + ")", decls, o.data ? hypc : hyp, o.goal,
           o.loc);
  for (const auto& [g, what] : reads)
    oblige(path, read_name(what, "loop-" + lname), what, decls, hypc, g, s.loc);
  for (const auto& [g, loc] : fits)
    oblige(path, fmt::format("fill-line-{}", loc.line), "the value fills its slice exactly", decls,
           hypc, g, loc);
  // Consecution: after the body, the closed forms hold at the next iteration.
  State next = head_at(add(iter, "1"));
  for (const auto& v : vars) {
    std::string name = fmt::format("consecution-{}-loop-{}", v, lname);
    if (next.ints.count(v)) {
      oblige(path, name,
             fmt::format("{}: if the invariants hold for every rank at every iteration up to i, "
                         "{} holds for r at i + 1",
                         loop_where, v),
             decls, hyp, op2("=", render(st.ints.at(v)), next.ints.at(v).k), s.loc);
    } else {
      const Buf& got = st.data.at(v);
      const Buf& want = next.data.at(v);
      oblige(path, name,
             fmt::format("{}: if the invariants hold for every rank at every iteration up to i, "
                         "{} (length and every block) holds for r at i + 1",
                         loop_where, v),
             decls, hypc,
             fmt::format("(and (= {} {}) (=> (and (<= 0 b) (< b {}) {}) (= {} {})))", got.len,
                         want.len, got.len,
                         care.count(v) ? rename(care.at(v), {{iter, add(iter, "1")}}) : "true",
                         got.blk, want.blk),
             s.loc);
    }
  }
  if (barrier_)
    oblige(path, fmt::format("consecution-heard-loop-{}", lname),
           fmt::format("{}: if the invariants hold for every rank at every iteration up to i, "
                       "what r has heard (its own, and what its source knew when it sent) is the "
                       "proof's `heard` at i + 1",
                       loop_where),
           decls, fmt::format("(and {} (<= 0 q) (< q p))", hyp), op2("=", st.know, next.know),
           s.loc);
  if (spec.cond) while_trips(s, path, spec, head, head_at(add(hit, "1")));
  // After the loop: the closed forms at the exit index; sends and receives add the trip count.
  std::string exit = fmt::format("x_L{}", id);
  path.decls +=
      fmt::format("(declare-const {} Int)\n(assert (= {} (ite (>= (+ {} 1) {}) (+ {} 1) {})))\n",
                  exit, exit, hit, lot, hit, lot);
  State after = head_at(exit);
  if (!spec.ghost) {
    after.ints.erase(s.var);
    after.dead.insert(s.var);
  }
  for (const auto& v : local) {
    after.ints.erase(v);
    after.data.erase(v);
  }
  // A variable without initiation (written before read in the body) has its closed form only if
  // the loop ran; otherwise its value before the loop: for a data variable that had none, the
  // empty buffer (data variables start empty); an integer that had none is left without a value
  // (a later read is refused).
  std::string ran = op2("<=", lot, hit);
  for (const auto& v : vars) {
    if (!first_write(v)) continue;
    if (after.ints.count(v)) {
      if (path.st.ints.count(v))
        after.ints[v] = Lin{"0", ite(ran, after.ints[v].k, render(path.st.ints.at(v)))};
      else
        after.ints.erase(v);
    } else if (after.data.count(v)) {
      Buf other = path.st.data.count(v) ? path.st.data.at(v) : Buf{"0", "none"};
      after.data[v] =
          Buf{ite(ran, after.data[v].len, other.len), ite(ran, after.data[v].blk, other.blk)};
    }
  }
  path.st = after;
  std::string trips = fmt::format("(- {} {})", exit, lot);
  if (!local_loop) {
    path.nsend = add(path.nsend, trips);
    path.nrecv = add(path.nrecv, trips);
    if (phased_) {
      path.psend = trips;
      path.precv = trips;
      pdecl_[exit] = fmt::format(
          "(declare-const {} Int)\n(assert (= {} (ite (>= (+ {} 1) {}) (+ {} 1) {})))\n", exit,
          exit, hit, lot, hit, lot);
    }
  }
}

void Analyzer::finish(const Path& path) {
  if (rooted_) return rooted_finish(path);
  if (phased_) {
    Path done = path;
    phase_close(done);
    pfinal_.push_back(done);
  }
  const auto& h = m_.header;
  const Buf& out = data_var(h.output, path.st, h.loc);
  if (more_collective(h.collective)) {
    more_postcondition(path, out);
  } else if (h.collective == Collective::Allgather) {
    // allgather in MPI's layout: p blocks, block b = rank b's input.
    oblige(path, "postcondition-length", "the output has p blocks of count elements (MPI's layout)",
           "", "(> count 0)", op2("=", out.len, "p"), h.loc);
    oblige(path, "postcondition-blocks", "block b of the output is rank b's input (MPI's layout)",
           "(declare-const b Int)\n", "(and (> count 0) (<= 0 b) (< b p))",
           op2("=", out.blk, "(it b 0)"), h.loc);
  } else if (barrier_) {
    // barrier: every rank, when it leaves, has heard (through a chain of messages, each sent
    // after its sender heard what it passes on) from every rank's entry.
    oblige(path, "postcondition-heard",
           "when r leaves, it has heard from every rank q (causal order: the barrier's "
           "postcondition)",
           "", "(and (<= 0 q) (< q p))", path.st.know, h.loc);
  } else {
    // reduce-scatter: rank r ends with one block, block r summed over all p ranks (from rank 0
    // up, unless the model declares a commutative operator).
    bool comm = h.op_class == OperatorClass::Commutative;
    std::string b0 = at_block(out.blk, "0");
    oblige(path, "postcondition-length", "the output is one block of count elements", "",
           "(> count 0)", op2("=", out.len, "1"), h.loc);
    oblige(path, "postcondition-blocks",
           sets() ? "the output is block r summed over exactly the ranks 0..p-1 (a set: each once)"
           : comm ? "the output is block r of every rank's input, summed, each once"
                  : "the output is block r of every rank's input, summed in rank order, each once",
           "", "(> count 0)",
           sets() ? fmt::format("(and ((_ is ss) {}) (= (ssb {}) r) (= (ssm {}) (and (<= 0 q) (< q "
                                "p))))",
                                b0, b0, b0)
                  : fmt::format("(and ((_ is sm) {}) (= (sb {}) r) (= (sn {}) p){})", b0, b0, b0,
                                comm ? "" : fmt::format(" (= (slo {}) 0)", b0)),
           h.loc);
  }
  if (phased_) return;  // matched per phase and channel; rounds by phase (phased_global)
  oblige(path, "sends-received",
         "every rank receives as many messages as it sends (with the matches above, every send "
         "is received in its round)",
         "", "true", op2("=", path.nsend, path.nrecv), h.loc);
  if (h.steps) {
    std::string claim = header_term(*h.steps);
    oblige(path, "steps",
           h.steps_at_most
               ? "the rounds (sends of each rank) are at most the `steps` claim"
               : "the rounds (sends of each rank: loops count their trips) equal the `steps` claim",
           "", "true", op2(h.steps_at_most ? "<=" : "=", path.nsend, claim), h.loc);
  }
}

}  // namespace collv::everyp
