// Program compilation (see program.hpp).
#include "exec/program.hpp"

#include <algorithm>

namespace collv::interp {

namespace {

void compile_stmt(const Stmt& s, Program& prog) {
  auto emit = [&](Instr in) {
    prog.code.push_back(in);
    return static_cast<std::uint32_t>(prog.code.size() - 1);
  };
  switch (s.kind) {
    case StmtKind::Assign:
      emit({IOp::Assign, &s});
      break;
    case StmtKind::Send:
      emit({IOp::Send, &s});
      break;
    case StmtKind::Receive:
      emit({IOp::Recv, &s});
      break;
    case StmtKind::Irecv:
      emit({IOp::Irecv, &s});
      break;
    case StmtKind::Isend:
      emit({IOp::Isend, &s});
      break;
    case StmtKind::Wait:
      emit({IOp::Wait, &s});
      break;
    case StmtKind::If: {
      auto jf = emit({IOp::JumpIfFalse, &s, s.cond.get()});
      compile_block(s.body, prog);
      if (s.else_body.empty()) {
        prog.code[jf].target = prog.code.size();
      } else {
        auto j = emit({IOp::Jump, &s});
        prog.code[jf].target = prog.code.size();
        compile_block(s.else_body, prog);
        prog.code[j].target = prog.code.size();
      }
      break;
    }
    case StmtKind::Break:
      prog.breaks.back().push_back(emit({IOp::Jump, &s}));
      break;
    case StmtKind::Array:
      emit({IOp::ArrayInit, &s});
      break;
    case StmtKind::While: {
      auto test = emit({IOp::JumpIfFalse, &s, s.cond.get()});
      prog.breaks.emplace_back();
      compile_block(s.body, prog);
      Instr back{IOp::Jump, &s};
      back.target = test;
      emit(back);
      prog.code[test].target = prog.code.size();
      for (auto j : prog.breaks.back()) prog.code[j].target = prog.code.size();
      prog.breaks.pop_back();
      break;
    }
    case StmtKind::For: {
      int lim = prog.num_slots++;
      Instr init{IOp::ForInit, &s};
      init.limit_slot = lim;
      emit(init);
      Instr test_in{IOp::ForTest, &s};
      test_in.limit_slot = lim;
      auto test = emit(test_in);
      prog.breaks.emplace_back();
      compile_block(s.body, prog);
      Instr next{IOp::ForNext, &s};
      next.target = test;
      emit(next);
      prog.code[test].target = prog.code.size();
      for (auto j : prog.breaks.back()) prog.code[j].target = prog.code.size();
      prog.breaks.pop_back();
      break;
    }
  }
}

}  // namespace

void compile_block(const std::vector<StmtPtr>& body, Program& prog) {
  for (const auto& s : body) compile_stmt(*s, prog);
}

void data_slots_read(const Expr& e, const Model& m, std::vector<int>& out) {
  if (e.kind == ExprKind::Name && e.slot >= 0 && e.slot < static_cast<int>(m.var_types.size()) &&
      m.var_types[e.slot] == Type::Data && std::find(out.begin(), out.end(), e.slot) == out.end())
    out.push_back(e.slot);
  for (const auto& a : e.args) data_slots_read(*a, m, out);
}

bool uses_nonblocking(const std::vector<StmtPtr>& body) {
  for (const auto& s : body)
    if (s->kind == StmtKind::Irecv || s->kind == StmtKind::Isend || s->kind == StmtKind::Wait ||
        uses_nonblocking(s->body) || uses_nonblocking(s->else_body))
      return true;
  return false;
}

void count_sends(const std::vector<StmtPtr>& body, std::uint64_t& whole, std::uint64_t& other) {
  for (const auto& s : body) {
    if ((s->kind == StmtKind::Send || s->kind == StmtKind::Isend) && s->value)
      ++(s->value->kind == ExprKind::Name && s->value->type == Type::Data ? whole : other);
    count_sends(s->body, whole, other);
    count_sends(s->else_body, whole, other);
  }
}

}  // namespace collv::interp
