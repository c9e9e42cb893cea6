// The model language's lexer: a model file's text as tokens, each with its line and column
// (internal to src/lang; parse_model in ast.hpp is the interface).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace collv::parser_detail {

// Version: digits '.' digits [...] ("4.1", "2.19.3"), only in a `library` line; anywhere else
// the parser refuses it as it refuses any token it does not expect.
enum class Tok { Ident, Number, String, Punct, End, Version };

struct Token {
  Tok kind;
  std::string text;  // identifier, punctuation (normalised: "<>" for ≠, "<=" for ≤ ...), string
  std::int64_t value = 0;
  int line = 0, col = 0;
};

class Lexer {
 public:
  Lexer(const std::string& text, std::string file) : s_(text), file_(std::move(file)) {}

  std::vector<Token> run();

 private:
  [[noreturn]] void error(const Token& t, const std::string& msg);
  char advance();
  bool starts(const char* lit) const;
  void skip_space_and_comments();
  std::string punct(const Token& t);

  const std::string& s_;
  std::string file_;
  std::size_t i_ = 0;
  int line_ = 1, col_ = 1;
};

}  // namespace collv::parser_detail
