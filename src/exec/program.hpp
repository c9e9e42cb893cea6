// Program compilation, the executor's first room: a model's procedure as a flat list of
// instructions (IOp), with the jumps of its branches and loops resolved. Every other room of the
// executor (exec/machine.hpp) reads the Program by program point.
#pragma once

#include <cstdint>
#include <vector>

#include "lang/ast.hpp"

namespace collv::interp {

enum class IOp {
  Assign,
  Send,
  Recv,
  JumpIfFalse,
  Jump,
  ForInit,
  ForTest,
  ForNext,
  ArrayInit,
  Irecv,
  Isend,
  Wait
};

struct Instr {
  IOp op;
  const Stmt* stmt = nullptr;
  const Expr* cond = nullptr;
  int limit_slot = -1;  // For: hidden slot holding the evaluated limit
  std::uint32_t target = 0;
};

struct Program {
  std::vector<Instr> code;
  int num_slots = 0;  // model variables + hidden loop limits
  // While compiling: the jumps of the `break`s of each enclosing loop, patched at the loop's end.
  std::vector<std::vector<std::uint32_t>> breaks;
};

// Appends the instructions of `body` to prog.
void compile_block(const std::vector<StmtPtr>& body, Program& prog);

// The data variables an expression reads (their values' dependencies flow into its value).
void data_slots_read(const Expr& e, const Model& m, std::vector<int>& out);

// Whether the body posts irecvs or isends or waits (docs/language.md, "Nonblocking
// point-to-point").
bool uses_nonblocking(const std::vector<StmtPtr>& body);
// Counts the sends and isends of the body that send a whole data variable and those that send
// anything else (a slice, an element, an expression): for the stored trace's estimate.
void count_sends(const std::vector<StmtPtr>& body, std::uint64_t& whole, std::uint64_t& other);

}  // namespace collv::interp
