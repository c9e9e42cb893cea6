// The model language's recursive-descent parser (internal to src/lang; parse_model in ast.hpp is
// the interface). Its work is in three files: parser.cpp the model and its header (keys, library
// lines and their selectors), parser_stmt.cpp the statements, parser_expr.cpp the expressions
// and the header's helper functions (`def`). The token helpers below are shared by all three.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "lang/ast.hpp"
#include "lang/check.hpp"
#include "lang/lexer.hpp"

namespace collv::parser_detail {

class Parser {
  // Counts the parser's own recursion (parentheses, unary operators, nested statements) so that
  // deep input is refused with its position instead of overflowing the stack.
  struct Nest {
    Parser& p;
    Nest(Parser& parser, const Token& at) : p(parser) {
      if (++p.nest_ > kMaxNesting)
        p.error(at, "nested too deeply: more than " + std::to_string(kMaxNesting) +
                        " levels of parentheses, unary operators or blocks");
    }
    ~Nest() { --p.nest_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
  };

 public:
  Parser(std::vector<Token> toks, std::string file) : t_(std::move(toks)), file_(std::move(file)) {}

  Model model();

 private:
  // ---- tokens ----
  const Token& peek(int k = 0) const {
    std::size_t i = std::min(pos_ + k, t_.size() - 1);
    return t_[i];
  }
  const Token& next() {
    const Token& t = t_[pos_];
    if (pos_ + 1 < t_.size()) ++pos_;
    return t;
  }
  SourceLoc loc(const Token& t) const { return SourceLoc{file_, t.line, t.col}; }
  [[noreturn]] void error(const Token& t, const std::string& msg) const {
    throw ModelError(loc(t), msg);
  }
  [[noreturn]] void error_at(const SourceLoc& at, const std::string& msg) const {
    throw ModelError(at, msg);
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::End:
        return "end of file";
      case Tok::String:
        return "string \"" + printable(t.text.size() > 60 ? t.text.substr(0, 60) + "..." : t.text) +
               "\"";
      case Tok::Number:
        return "number " + t.text;
      case Tok::Version:
        return "version " + t.text;
      default:
        return std::string("'") + printable(t.text) + "'";  // not "'" + ...: GCC 12's -Wrestrict
    }
  }
  bool is_punct(const char* p, int k = 0) const {
    return peek(k).kind == Tok::Punct && peek(k).text == p;
  }
  bool is_word(const char* w, int k = 0) const {
    return peek(k).kind == Tok::Ident && peek(k).text == w;
  }
  bool accept(const char* p) {
    if (is_punct(p)) {
      next();
      return true;
    }
    return false;
  }
  bool accept_word(const char* w) {
    if (is_word(w)) {
      next();
      return true;
    }
    return false;
  }
  // `at most` before a claim's formula: the claim is a bound.
  bool accept_at_most() {
    if (!is_word("at") || peek(1).kind != Tok::Ident || peek(1).text != "most") return false;
    next();
    next();
    return true;
  }
  void expect(const char* p, const std::string& what) {
    if (!accept(p)) error(peek(), "expected " + what + ", found " + describe(peek()));
  }
  void expect_word(const char* w, const std::string& what) {
    if (!accept_word(w)) error(peek(), "expected " + what + ", found " + describe(peek()));
  }
  std::string ident(const std::string& what) {
    if (peek().kind != Tok::Ident)
      error(peek(), "expected " + what + ", found " + describe(peek()));
    return next().text;
  }
  std::string string_lit(const std::string& what) {
    if (peek().kind != Tok::String)
      error(peek(), "expected " + what + ", found " + describe(peek()));
    return next().text;
  }

  // ---- header (parser.cpp) ----
  void header(ModelHeader& h);
  void library_line(const Token& key, ModelHeader& h);
  static bool version_less(const std::string& a, const std::string& b);
  void check_selectors(const LibraryClaim& l, Collective c) const;

  // ---- statements (parser_stmt.cpp) ----
  bool at_block_end() const;
  std::vector<StmtPtr> block();
  std::vector<StmtPtr> body_after(const Token& kw, bool& one_line);
  StmtPtr statement();
  ExprPtr lvalue();
  StmtPtr if_stmt();
  StmtPtr for_stmt();
  StmtPtr while_stmt();
  void peer(Stmt& s, const char* dir_word, const char* verb);
  StmtPtr send_stmt();
  StmtPtr receive_stmt();
  StmtPtr nonblocking_stmt();

  // ---- expressions, precedence climbing, loosest first (parser_expr.cpp) ----
  ExprPtr sized(ExprPtr e);
  ExprPtr make_binary(Op op, const Token& at, ExprPtr a, ExprPtr b);
  ExprPtr make_unary(Op op, const Token& at, ExprPtr a);
  ExprPtr expr();
  ExprPtr or_expr();
  ExprPtr and_expr();
  ExprPtr not_expr();
  ExprPtr cmp_expr();
  ExprPtr bitor_expr();
  ExprPtr bitand_expr();
  ExprPtr add_expr();
  ExprPtr mul_expr();
  ExprPtr unary_expr();
  ExprPtr pow_expr();
  ExprPtr postfix_index(ExprPtr base);
  ExprPtr postfix_expr() { return postfix_index(primary()); }
  ExprPtr primary();

  // ---- helper functions: `def NAME(A, B) = EXPR` in the header, expanded where they are called
  struct Helper {
    std::vector<std::string> params;
    ExprPtr body;
  };
  static constexpr std::size_t kMaxHelperNodes = std::size_t{1} << 16;

  void helper_def(const Token& key);
  ExprPtr substitute(const Expr& e, const Helper& h, const Expr& call, std::size_t& nodes);
  ExprPtr expand(const Expr& call, const Helper& h);

  std::map<std::string, Helper> defs_;
  std::vector<Token> t_;
  std::string file_;
  std::size_t pos_ = 0;
  int nest_ = 0;
  int loop_depth_ = 0;  // enclosing for and while bodies: where `break` may stand
};

}  // namespace collv::parser_detail
