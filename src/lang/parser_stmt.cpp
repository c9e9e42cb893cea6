// The parser's statements: blocks, one-line bodies, assignments, if, for, while, send and
// receive, the nonblocking ones (parser_detail.hpp has the Parser).
#include <memory>
#include <string>
#include <unordered_map>

#include "lang/parser_detail.hpp"

namespace collv::parser_detail {

namespace {

const std::unordered_map<std::string, bool>& block_enders() {
  static const std::unordered_map<std::string, bool> m = {
      {"endif", true},    {"else", true}, {"endelse", true},  {"endfor", true},
      {"endwhile", true}, {"end", true},  {"procedure", true}};
  return m;
}

}  // namespace

bool Parser::at_block_end() const {
  const Token& t = peek();
  if (t.kind == Tok::End) return true;
  return t.kind == Tok::Ident && block_enders().count(t.text);
}

std::vector<StmtPtr> Parser::block() {
  std::vector<StmtPtr> out;
  while (!at_block_end()) {
    if (accept(";")) continue;
    out.push_back(statement());
  }
  return out;
}

// The body after 'then', 'else' or 'do'. If it starts on the keyword's line, it is a one-line
// body ("if c then x := 1;" as the book prints it): the statements on that line. Otherwise it is
// a block closed by the matching end keyword.
std::vector<StmtPtr> Parser::body_after(const Token& kw, bool& one_line) {
  one_line = peek().line == kw.line && !at_block_end();
  if (!one_line) return block();
  std::vector<StmtPtr> out;
  while (peek().line == kw.line && !at_block_end()) {
    if (accept(";")) continue;
    out.push_back(statement());
  }
  return out;
}

StmtPtr Parser::statement() {
  const Token& t = peek();
  Nest guard(*this, t);
  if (t.kind != Tok::Ident) error(t, "expected a statement, found " + describe(t));
  if (t.text == "if") return if_stmt();
  if (t.text == "for") return for_stmt();
  if (t.text == "while") return while_stmt();
  if (t.text == "send") return send_stmt();
  if (t.text == "receive") return receive_stmt();
  // Nonblocking point-to-point; `wait := 1` still assigns a variable of that name.
  if ((t.text == "irecv" || t.text == "isend" || t.text == "wait" || t.text == "waitall") &&
      !is_punct(":=", 1) && !is_punct("[", 1))
    return nonblocking_stmt();
  if (t.text == "array" && peek(1).kind == Tok::Ident && is_punct("[", 2)) {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::Array;
    s->loc = loc(next());
    s->var = ident("the array's name after 'array'");
    expect("[", "'[' and the number of elements after the array's name");
    s->value = expr();
    expect("]", "']' after the number of elements of '" + s->var + "'");
    return s;
  }
  if (t.text == "break") {
    if (loop_depth_ == 0) error(t, "'break' outside a loop (it leaves the innermost for or while)");
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::Break;
    s->loc = loc(next());
    return s;
  }
  if (t.text == "begin") {
    error(t, "nested 'begin' blocks are not part of the language; write the statements directly");
  }
  // assignment
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::Assign;
  s->loc = loc(t);
  s->target = lvalue();
  if (!is_punct(":=")) {
    if (is_punct("=")) error(peek(), "expected ':=' in an assignment ('=' compares), found '='");
    error(peek(), "expected ':=' after '" + t.text + "' (or a statement keyword), found " +
                      describe(peek()));
  }
  next();
  s->value = expr();
  return s;
}

ExprPtr Parser::lvalue() {
  const Token& t = peek();
  auto e = std::make_unique<Expr>();
  e->kind = ExprKind::Name;
  e->loc = loc(t);
  e->name = ident("a variable name");
  if (is_punct("[")) return postfix_index(std::move(e));
  return e;
}

StmtPtr Parser::if_stmt() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::If;
  s->loc = loc(next());
  s->cond = expr();
  const Token& then_tok = peek();
  expect_word("then", "'then' after the condition of 'if'");
  bool one_line = false;
  s->body = body_after(then_tok, one_line);
  if (is_word("else") && (!one_line || peek().line == then_tok.line)) {
    const Token& else_tok = next();
    bool else_one = false;
    s->else_body = body_after(else_tok, else_one);
    if (else_one && !(peek().line == else_tok.line && (is_word("endif") || is_word("endelse"))))
      return s;
    if (!accept_word("endif") && !accept_word("endelse"))
      error(peek(), "expected 'endif' (or 'endelse') to close the 'if' at line " +
                        std::to_string(s->loc.line) + ", found " + describe(peek()));
    return s;
  }
  if (one_line) {
    if (peek().line == then_tok.line) accept_word("endif");
    return s;
  }
  if (!accept_word("endif"))
    error(peek(), "expected 'endif' or 'else' to close the 'if' at line " +
                      std::to_string(s->loc.line) + ", found " + describe(peek()));
  return s;
}

StmtPtr Parser::for_stmt() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::For;
  s->loc = loc(next());
  s->var = ident("the loop variable after 'for'");
  expect(":=", "':=' after the loop variable");
  s->value = expr();
  if (accept_word("downto")) {
    s->downto = true;
  } else if (!accept_word("to")) {
    error(peek(), "expected 'to' or 'downto' in the 'for' loop, found " + describe(peek()));
  }
  s->limit = expr();
  const Token& do_tok = peek();
  expect_word("do", "'do' after the bounds of 'for'");
  bool one_line = false;
  ++loop_depth_;
  s->body = body_after(do_tok, one_line);
  --loop_depth_;
  if (one_line && peek().line != do_tok.line) return s;
  if (!accept_word("endfor"))
    error(peek(), "expected 'endfor' to close the 'for' at line " + std::to_string(s->loc.line) +
                      ", found " + describe(peek()));
  return s;
}

StmtPtr Parser::while_stmt() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::While;
  s->loc = loc(next());
  s->cond = expr();
  const Token& do_tok = peek();
  expect_word("do", "'do' after the condition of 'while'");
  bool one_line = false;
  ++loop_depth_;
  s->body = body_after(do_tok, one_line);
  --loop_depth_;
  if (one_line && peek().line != do_tok.line) return s;
  if (!accept_word("endwhile"))
    error(peek(), "expected 'endwhile' to close the 'while' at line " +
                      std::to_string(s->loc.line) + ", found " + describe(peek()));
  return s;
}

void Parser::peer(Stmt& s, const char* dir_word, const char* verb) {
  if (accept_word(dir_word)) {
    s.peer = expr();
  } else if (accept_word("along")) {
    expect_word("link", "'link' after 'along'");
    s.along_link = true;
    s.peer = expr();
  } else {
    error(peek(), std::string("expected '") + dir_word + "' or 'along link' in '" + verb +
                      "', found " + describe(peek()));
  }
}

StmtPtr Parser::send_stmt() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::Send;
  s->loc = loc(next());
  s->value = expr();
  peer(*s, "to", "send");
  return s;
}

StmtPtr Parser::receive_stmt() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::Receive;
  s->loc = loc(next());
  s->target = lvalue();
  peer(*s, "from", "receive");
  return s;
}

// `irecv T from S as R`, `isend E to D as R`, `wait R`, `waitall [R1, R2, ...]` (the list,
// if any, starts on the keyword's line; a bare `waitall` completes every outstanding request).
StmtPtr Parser::nonblocking_stmt() {
  auto s = std::make_unique<Stmt>();
  const Token& kw = next();
  const std::string word = kw.text;
  s->loc = loc(kw);
  if (word == "irecv" || word == "isend") {
    s->kind = word == "irecv" ? StmtKind::Irecv : StmtKind::Isend;
    if (s->kind == StmtKind::Irecv)
      s->target = lvalue();
    else
      s->value = expr();
    peer(*s, s->kind == StmtKind::Irecv ? "from" : "to", word.c_str());
    expect_word("as", "'as' and the request's variable after '" + word + " ... " +
                          (s->kind == StmtKind::Irecv ? "from" : "to") + " ...'");
    s->request = lvalue();
    return s;
  }
  s->kind = StmtKind::Wait;
  s->wait_all = word == "waitall";
  if (word == "wait" || (peek().line == kw.line && !is_punct(";") && !at_block_end())) {
    do {
      s->requests.push_back(expr());
    } while (accept(","));
  }
  return s;
}

}  // namespace collv::parser_detail
