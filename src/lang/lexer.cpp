// The model language's lexer (lexer.hpp), and printable, which quotes input in messages.
#include "lang/lexer.hpp"

#include <cctype>
#include <cstring>
#include <utility>

#include "lang/ast.hpp"
#include "lang/check.hpp"

namespace collv {

namespace parser_detail {

std::vector<Token> Lexer::run() {
  std::vector<Token> out;
  for (;;) {
    skip_space_and_comments();
    Token t;
    t.line = line_;
    t.col = col_;
    if (i_ >= s_.size()) {
      t.kind = Tok::End;
      t.text = "end of file";
      out.push_back(t);
      return out;
    }
    unsigned char c = s_[i_];
    if (std::isalpha(c) || c == '_') {
      t.kind = Tok::Ident;
      while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
        t.text += advance();
    } else if (std::isdigit(c)) {
      t.kind = Tok::Number;
      std::size_t digits = 0;
      bool too_large = false;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        char ch = advance();
        ++digits;
        if (t.text.size() < 64) t.text += ch;
        // Every literal that fits in a signed 64-bit integer is accepted (up to 19 digits).
        if (!too_large && (__builtin_mul_overflow(t.value, 10, &t.value) ||
                           __builtin_add_overflow(t.value, ch - '0', &t.value)))
          too_large = true;
      }
      // A version (`library openmpi 4.1`): digits, then '.' and digits, repeated; "0..3" stays
      // a number and a range.
      while (i_ + 1 < s_.size() && s_[i_] == '.' &&
             std::isdigit(static_cast<unsigned char>(s_[i_ + 1]))) {
        t.kind = Tok::Version;
        t.text += advance();
        while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])) &&
               t.text.size() < 64)
          t.text += advance();
      }
      if (t.kind == Tok::Version) {
        if (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])))
          error(t, "version too long: " + t.text + "...");
        too_large = false;
      }
      if (too_large) {
        std::string shown =
            digits <= 64 ? t.text
                         : t.text.substr(0, 40) + "... (" + std::to_string(digits) + " digits)";
        error(t, "number too large: " + shown + " (the largest is 9223372036854775807)");
      }
    } else if (c == '"') {
      t.kind = Tok::String;
      advance();
      while (i_ < s_.size() && s_[i_] != '"' && s_[i_] != '\n') t.text += advance();
      if (i_ >= s_.size() || s_[i_] != '"') error(t, "unterminated string (missing '\"')");
      advance();
    } else {
      t.kind = Tok::Punct;
      t.text = punct(t);
    }
    out.push_back(std::move(t));
  }
}

[[noreturn]] void Lexer::error(const Token& t, const std::string& msg) {
  throw ModelError(SourceLoc{file_, t.line, t.col}, msg);
}

char Lexer::advance() {
  char c = s_[i_++];
  if (c == '\n') {
    ++line_;
    col_ = 1;
  } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
    // Count code points, not bytes: a UTF-8 continuation byte does not move the column.
    ++col_;
  }
  return c;
}

bool Lexer::starts(const char* lit) const { return s_.compare(i_, std::strlen(lit), lit) == 0; }

void Lexer::skip_space_and_comments() {
  while (i_ < s_.size()) {
    unsigned char c = s_[i_];
    if (std::isspace(c)) {
      advance();
    } else if (c == '#') {
      while (i_ < s_.size() && s_[i_] != '\n') advance();
    } else if (starts("/*")) {
      Token t{Tok::Punct, "", 0, line_, col_};
      advance();
      advance();
      while (i_ < s_.size() && !starts("*/")) advance();
      if (i_ >= s_.size()) error(t, "unterminated comment (missing '*/')");
      advance();
      advance();
    } else {
      return;
    }
  }
}

std::string Lexer::punct(const Token& t) {
  static const std::pair<const char*, const char*> multi[] = {
      {":=", ":="},           {"..", ".."}, {"<>", "<>"},           {"!=", "<>"},
      {"<=", "<="},           {">=", ">="}, {"\xE2\x89\xA0", "<>"},  // ≠
      {"\xE2\x89\xA4", "<="},                                        // ≤
      {"\xE2\x89\xA5", ">="},                                        // ≥
      {"\xE2\x88\xAA", "∪"},                                         // ∪
      {"\xE2\x88\x92", "-"},                                         // − (minus sign)
  };
  for (auto& [lit, norm] : multi) {
    if (starts(lit)) {
      for (std::size_t k = 0; k < std::strlen(lit); ++k) advance();
      return norm;
    }
  }
  char c = s_[i_];
  if (c != '\0' && std::strchr("+-*/^()[],;=<>", c)) {
    advance();
    return std::string(1, c);
  }
  std::string shown;
  if (static_cast<unsigned char>(c) >= 0x80) {
    shown = "a non-ASCII character";
  } else {
    shown = "'";  // appended, not "'" + ...: GCC 12 warns (-Wrestrict) once the lexer is apart
    shown += printable(std::string(1, c));
    shown += "'";
  }
  error(t, "unexpected character: " + shown);
}

}  // namespace parser_detail

std::string printable(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  auto hex = [&](unsigned char c) {
    static const char* digits = "0123456789abcdef";
    out += "\\x";
    out += digits[c >> 4];
    out += digits[c & 15];
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      hex(c);
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      // Keep well-formed UTF-8 sequences; escape any other byte.
      std::size_t n = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
      bool ok = n > 0 && i + n <= s.size();
      for (std::size_t k = 1; ok && k < n; ++k)
        ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
      if (ok) {
        out.append(s, i, n);
        i += n - 1;
      } else {
        hex(c);
      }
    }
  }
  return out;
}

}  // namespace collv
