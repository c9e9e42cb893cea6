// The every-p prover's binomial trees in Open MPI's shape (docs/smt.md, "Every p from the model",
// binomial trees): ompi_coll_base_topo_build_bmtree's parent is the relative rank without its
// highest set bit, which the model finds with a loop of assignments before it receives,
//   while C do [assignments] endwhile      (the search: hb doubles while hb * 2 <= rel)
//   [assignments]  receive X from E  or  if C1 then receive X from E endif  [assignments]
//   while C2 do [assignments] [if C3 then [assignments]] send V to E [endif] [assignments] endwhile
//   [assignments]
// or, on the root's path, the send loop alone. The search loop is unrolled as MPICH's receive
// loop is (every_p_tree.cpp): its variable starts as a numeral and the body doubles it, so at
// every head it is a numeral and the condition a linear term; it runs at most 32 times
// (`unroll-bound-loop-while`: the condition fails at the 33rd head, p < 2^31). Each head k where
// the condition may fail is a path `exit-kK` (no receive: the `if` around the receive fails, or
// there is none) or `recv-kK` (it receives); tree_back then reads each path's send loop, whose
// condition may be a term here (`mask < p`: every_p_tree.cpp), and writes the obligations.
#include "smt/every_p_tree.hpp"

namespace collv::everyp {

namespace {
const char* kSearchShape =
    "a binomial tree in Open MPI's shape (docs/smt.md): `while C do [assignments] endwhile`, "
    "assignments and at most one receive (or `if C1 then receive X from E endif`), then `while "
    "C2 do [assignments] [if C3 then] send V to E [endif] [assignments] endwhile` at the end of "
    "the path, with nothing before it that sends or receives";
}  // namespace

void Analyzer::tree_search(const std::vector<const Stmt*>& todo, std::size_t at, const Path& path) {
  const Stmt& w1 = *todo[at];
  const bool search = std::all_of(w1.body.begin(), w1.body.end(),
                                  [](const StmtPtr& b) { return b->kind == StmtKind::Assign; });
  std::size_t w2i = at;
  if (search) {
    int recvs = 0;
    for (w2i = at + 1; w2i < todo.size() && todo[w2i]->kind != StmtKind::While; ++w2i) {
      const Stmt& s = *todo[w2i];
      const Stmt* r = &s;
      if (s.kind == StmtKind::If && s.else_body.empty() && s.body.size() == 1) r = s.body[0].get();
      if (s.kind == StmtKind::Assign) continue;
      if (r->kind != StmtKind::Receive || ++recvs > 1) refuse(kSearchShape, s.loc);
      if (r->along_link) refuse("`along link` is outside the fragment", r->loc);
    }
    if (w2i >= todo.size()) refuse(kSearchShape, w1.loc);
  }
  const TreeTerms tt = tree_terms(path, w1.loc);

  TreeFront f;
  f.w2 = todo[w2i];
  f.w2i = w2i;
  f.loc = w1.loc;
  f.prune_loc = w1.loc;
  f.guarded_rounds = true;
  if (!pass1_ && tree_calls_.size() > 1) f.tpre = fmt::format("path{}-", path.index);
  f.first_call = pass1_ || tree_calls_.empty() || tree_calls_.front()->pre == path.pc;
  Path cur = path;
  cur.sends.clear();
  for (auto& [name, buf] : cur.st.data) buf = Buf{mod_p_by_cases(buf.len), mod_p_by_cases(buf.blk)};

  // The search loop, unrolled: the state where it leaves at head k, on that path's condition.
  struct Exit {
    std::string pc;
    State st;
    int iter;
  };
  std::vector<Exit> exits;
  if (!search) {
    exits.push_back({path.pc, cur.st, 0});
  } else {
    constexpr int kUnroll = 32;
    std::string spine = path.pc;
    for (int k = 0;; ++k) {
      std::string c = bool_expr(*w1.cond, cur.st);
      if (k == kUnroll) {
        Path at_bound = path;
        at_bound.pc = spine;
        at_bound.tag = f.tpre.empty() ? "" : f.tpre.substr(0, f.tpre.size() - 1);
        oblige(at_bound, "unroll-bound-loop-while",
               fmt::format("the condition of the search loop ({}) fails at the head of iteration "
                           "{}: the loop runs at most {} times (ranks are 32-bit, p < 2^31)",
                           w1.loc.str(), kUnroll, kUnroll),
               "", "true", fmt::format("(not {})", c), w1.loc);
        break;
      }
      if (c != "true") exits.push_back({fmt::format("(and {} (not {}))", spine, c), cur.st, k});
      if (c == "false") break;
      spine = fmt::format("(and {} {})", spine, c);
      cur.pc = spine;
      for (const auto& b : w1.body) straight(*b, cur);
      f.alive.push_back(spine);
    }
  }

  // Each exit: the assignments up to the receive, the receive (on the paths where its `if`
  // holds), the rest up to the send loop left for tree_back.
  for (const auto& e : exits) {
    Path P = cur;
    P.pc = e.pc;
    P.st = e.st;
    const std::string k = search ? fmt::format("-k{}", e.iter) : "";
    auto path_of = [&](const std::string& pc, std::size_t from) {
      TreePath tp;
      tp.pc = fmt::format("(and {} {})", pc, tree_lem(false, {"r"}, e.iter));
      tp.iter = e.iter;
      tp.st = P.st;
      tp.between.assign(todo.begin() + static_cast<long>(from),
                        todo.begin() + static_cast<long>(w2i));
      return tp;
    };
    std::size_t i = search ? at + 1 : w2i;
    for (; i < w2i && todo[i]->kind == StmtKind::Assign; ++i) straight(*todo[i], P);
    if (i == w2i) {
      TreePath tp = path_of(P.pc, w2i);
      tp.tag = f.tpre + (search ? "exit" + k : "sends");
      f.tps.push_back(std::move(tp));
      continue;
    }
    const Stmt& s = *todo[i];
    const Stmt& rcv = s.kind == StmtKind::If ? *s.body[0] : s;
    const std::string c = s.kind == StmtKind::If ? bool_expr(*s.cond, P.st) : "true";
    if (c != "true") {
      TreePath tp = path_of(fmt::format("(and {} (not {}))", P.pc, c), i + 1);
      tp.tag = f.tpre + (search ? "exit" + k : "sends");
      f.tps.push_back(std::move(tp));
    }
    if (c != "false") {
      TreePath tp = path_of(c == "true" ? P.pc : fmt::format("(and {} {})", P.pc, c), i + 1);
      tp.tag = f.tpre + "recv" + k;
      tp.recv = true;
      tp.rstmt = &rcv;
      tp.src = render(int_expr(*rcv.peer, P.st));
      tp.round = tree_round(tt, P.st, rcv.loc, true, tp.src);
      tp.key = tree_key(tt, P.st, rcv.loc, true);
      tp.msg = tree_msg(tt, P.st, "r", rcv.loc, true);
      f.tps.push_back(std::move(tp));
    }
  }
  tree_back(todo, path, f, tt);
}

}  // namespace collv::everyp
