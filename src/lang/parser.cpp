// Lexer and recursive-descent parser for model files. Hand-written so that every error can say
// what was expected at which file:line:col, in the words of the language reference.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include "lang/ast.hpp"
#include "lang/check.hpp"

namespace collv {

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::Broadcast:
      return "broadcast";
    case Collective::Reduce:
      return "reduce";
    case Collective::Allgather:
      return "allgather";
    case Collective::ReduceScatter:
      return "reduce-scatter";
    case Collective::Allreduce:
      return "allreduce";
    case Collective::Scan:
      return "scan";
    case Collective::Scatter:
      return "scatter";
    case Collective::Gather:
      return "gather";
    case Collective::Alltoall:
      return "alltoall";
    case Collective::Shift:
      return "shift";
    case Collective::Barrier:
      return "barrier";
    case Collective::Exscan:
      return "exscan";
    case Collective::Allgatherv:
      return "allgatherv";
    case Collective::Gatherv:
      return "gatherv";
    case Collective::Scatterv:
      return "scatterv";
    case Collective::Alltoallv:
      return "alltoallv";
    case Collective::ReduceScatterv:
      return "reduce-scatterv";
  }
  return "?";
}

bool collective_is_v(Collective c) {
  return c == Collective::Allgatherv || c == Collective::Gatherv || c == Collective::Scatterv ||
         c == Collective::Alltoallv || c == Collective::ReduceScatterv;
}

std::int64_t v_count(std::int64_t count, std::int64_t j) { return (count + j) % (count + 1); }
std::int64_t v_pair_count(std::int64_t count, std::int64_t i, std::int64_t j) {
  return (count + i + 2 * j) % (count + 1);
}

namespace {

// GCC's 128-bit integer; __extension__ keeps -Wpedantic quiet about it.
__extension__ using i128 = __int128;

// The sum of floor((a k + b) / m) over k = 0 .. n - 1 (a, b >= 0, m > 0), in O(log m) steps: the
// terms with a >= m or b >= m are split off, and the rest is the same sum with a and m exchanged
// (the lattice points under the line, counted the other way).
i128 floor_sum(i128 n, i128 m, i128 a, i128 b) {
  i128 r = 0;
  for (;;) {
    if (a >= m) {
      r += n * (n - 1) / 2 * (a / m);
      a %= m;
    }
    if (b >= m) {
      r += n * (b / m);
      b %= m;
    }
    const i128 top = a * n + b;
    if (top < m) return r;
    n = top / m;
    b = top % m;
    std::swap(m, a);
  }
}

// The sum of (a + s k) mod m over k = 0 .. n - 1 (a, s >= 0, m > 0).
std::int64_t mod_sum(std::int64_t a, std::int64_t s, std::int64_t n, std::int64_t m) {
  if (n <= 0) return 0;
  const i128 plain = i128{a} * n + i128{s} * n * (n - 1) / 2;
  return static_cast<std::int64_t>(plain - i128{m} * floor_sum(n, m, s, a));
}

}  // namespace

std::int64_t v_displs(std::int64_t count, std::int64_t j) {
  return mod_sum(count, 1, j, count + 1);
}
std::int64_t v_sdispls(std::int64_t count, std::int64_t i, std::int64_t j) {
  return mod_sum(count + i, 2, j, count + 1);
}
std::int64_t v_rdispls(std::int64_t count, std::int64_t i, std::int64_t j) {
  return mod_sum(count + 2 * j, 1, i, count + 1);
}

std::optional<Collective> collective_from_name(const std::string& s) {
  for (int i = 0; i <= static_cast<int>(kLastCollective); ++i) {
    auto c = static_cast<Collective>(i);
    if (s == collective_name(c)) return c;
  }
  return std::nullopt;
}

bool collective_is_rooted(Collective c) {
  return c == Collective::Broadcast || c == Collective::Reduce || c == Collective::Scatter ||
         c == Collective::Gather || c == Collective::Scatterv || c == Collective::Gatherv;
}

const char* op_spelling(Op op) {
  switch (op) {
    case Op::Add:
      return "+";
    case Op::Sub:
      return "-";
    case Op::Mul:
      return "*";
    case Op::Div:
      return "/";
    case Op::IntDiv:
      return "div";
    case Op::Mod:
      return "mod";
    case Op::Pow:
      return "^";
    case Op::BitXor:
      return "XOR";
    case Op::BitAnd:
      return "AND";
    case Op::BitOr:
      return "OR";
    case Op::BitNot:
      return "NOT";
    case Op::Eq:
      return "=";
    case Op::Ne:
      return "<>";
    case Op::Lt:
      return "<";
    case Op::Le:
      return "<=";
    case Op::Gt:
      return ">";
    case Op::Ge:
      return ">=";
    case Op::And:
      return "and";
    case Op::Or:
      return "or";
    case Op::Not:
      return "not";
    case Op::Neg:
      return "-";
    case Op::Union:
      return "∪";
  }
  return "?";
}

namespace {

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

  std::vector<Token> run() {
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
        while (i_ < s_.size() &&
               (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
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

 private:
  [[noreturn]] void error(const Token& t, const std::string& msg) {
    throw ModelError(SourceLoc{file_, t.line, t.col}, msg);
  }
  char advance() {
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
  bool starts(const char* lit) const { return s_.compare(i_, std::strlen(lit), lit) == 0; }
  void skip_space_and_comments() {
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
  std::string punct(const Token& t) {
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
      shown = "'" + printable(std::string(1, c)) + "'";
    }
    error(t, "unexpected character: " + shown);
  }

  const std::string& s_;
  std::string file_;
  std::size_t i_ = 0;
  int line_ = 1, col_ = 1;
};

const std::unordered_map<std::string, bool>& block_enders() {
  static const std::unordered_map<std::string, bool> m = {
      {"endif", true},    {"else", true}, {"endelse", true},  {"endfor", true},
      {"endwhile", true}, {"end", true},  {"procedure", true}};
  return m;
}

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

  Model model() {
    Model m;
    m.file = file_;
    header(m.header);
    expect_word("procedure", "'procedure' after the model header");
    m.procedure = ident("the procedure's name");
    if (accept("(")) {
      if (!accept(")")) {
        do {
          m.params.push_back(ident("a parameter name"));
        } while (accept(","));
        expect(")", "')' to close the parameter list");
      }
    }
    expect_word("begin", "'begin' to start the procedure body");
    m.body = block();
    expect_word("end", "'end' to close the procedure (or a statement)");
    if (peek().kind == Tok::Ident && peek().text == m.procedure) next();
    accept(";");
    if (peek().kind != Tok::End)
      error(peek(), "expected end of file after the procedure, found " + describe(peek()));
    return m;
  }

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
        return "'" + printable(t.text) + "'";
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

  // ---- header ----
  void header(ModelHeader& h) {
    h.loc = loc(peek());
    expect_word("model", "'model NAME' at the start of the file");
    h.name = ident("the model's name after 'model'");
    bool have_collective = false, have_input = false, have_output = false;
    // A key that says one thing (all but note, def and library) says it once: a second line
    // would silently replace the first (a `steps 0` then `steps at most 1000` checked the bound).
    std::vector<std::pair<std::string, SourceLoc>> seen;
    while (peek().kind == Tok::Ident && peek().text != "procedure") {
      const Token& key = next();
      const std::string& k = key.text;
      if (k != "note" && k != "def" && k != "library") {
        for (const auto& [name, at] : seen)
          if (name == k)
            error(key, "a second '" + k + "' line (the first is at " + at.str() +
                           "; a header key is given once)");
        seen.emplace_back(k, loc(key));
      }
      if (k == "source") {
        h.source = string_lit("a quoted citation after 'source'");
      } else if (k == "note") {
        h.notes.push_back(string_lit("a quoted note after 'note'"));
      } else if (k == "collective") {
        const Token& v = peek();
        std::string name = ident("a collective after 'collective'");
        if (name == "reduce" && is_punct("-") &&
            (is_word("scatter", 1) || is_word("scatterv", 1))) {
          next();
          name = "reduce-" + next().text;
        }
        auto c = collective_from_name(name);
        if (!c)
          error(v, "unknown collective '" + name +
                       "' (expected broadcast, reduce, allgather, reduce-scatter, allreduce, "
                       "scan, exscan, scatter, gather, alltoall, shift, barrier, allgatherv, "
                       "gatherv, scatterv, alltoallv or reduce-scatterv)");
        h.collective = *c;
        have_collective = true;
      } else if (k == "topology") {
        do {
          const Token& v = peek();
          std::string f = ident("a topology family after 'topology'");
          static const char* fams[] = {"ring", "line", "mesh",     "torus",   "hypercube",
                                       "tree", "star", "complete", "debruijn"};
          bool ok = false;
          for (auto* x : fams) ok = ok || f == x;
          if (!ok)
            error(v, "unknown topology family '" + f +
                         "' (expected ring, line, mesh, torus, hypercube, tree, star, complete "
                         "or debruijn)");
          h.topologies.push_back(f);
        } while (accept(","));
      } else if (k == "operator") {
        const Token& v = peek();
        std::string o = ident("'commutative' or 'associative' after 'operator'");
        if (o == "commutative") {
          h.op_class = OperatorClass::Commutative;
        } else if (o == "associative") {
          h.op_class = OperatorClass::Associative;
        } else {
          error(v, "expected 'commutative' or 'associative' after 'operator', found '" + o + "'");
        }
      } else if (k == "nodup") {
        const Token& v = peek();
        std::string o = ident("'yes' or 'no' after 'nodup'");
        if (o != "yes" && o != "no")
          error(v, "expected 'yes' or 'no' after 'nodup', found '" + o + "'");
        h.nodup = o == "yes";
      } else if (k == "port") {
        const Token& v = peek();
        h.port_loc = loc(key);
        std::string o = ident("'single' after 'port'");
        if (o != "single")
          error(v, "expected 'single' after 'port', found '" + o +
                       "' (the line says the steps and cost claims are single-port formulas)");
        h.claims_single_port = true;
      } else if (k == "layout") {
        const Token& v = peek();
        std::string o = ident("'positional' or 'any' after 'layout'");
        if (o != "positional" && o != "any")
          error(v, "expected 'positional' or 'any' after 'layout', found '" + o + "'");
        h.layout_any = o == "any";
      } else if (k == "input") {
        h.input = ident("the input variable's name after 'input'");
        have_input = true;
      } else if (k == "output") {
        h.output = ident("the output variable's name after 'output'");
        have_output = true;
      } else if (k == "library") {
        library_line(key, h);
      } else if (k == "def") {
        helper_def(key);
      } else if (k == "requires") {
        h.requires_ = expr();
      } else if (k == "elements") {
        h.elements = expr();
      } else if (k == "steps") {
        h.steps_at_most = accept_at_most();
        h.steps = expr();
      } else if (k == "cost") {
        h.cost_at_most = accept_at_most();
        h.cost = expr();
      } else {
        error(key,
              "unknown header key '" + k +
                  "' (expected source, collective, topology, operator, nodup, layout, port, input, "
                  "output, library, "
                  "elements, requires, steps, cost, def, note or procedure)");
      }
      accept(";");
    }
    if (!have_collective) error(peek(), "the header has no 'collective' line");
    if (!have_input) error(peek(), "the header has no 'input' line");
    if (!have_output) error(peek(), "the header has no 'output' line");
    for (const LibraryClaim& l : h.libraries) check_selectors(l, h.collective);
  }

  // `library NAME VERSION [.. VERSION] KEY = VALUE [KEY = VALUE ...]` (docs/language.md).
  void library_line(const Token& key, ModelHeader& h) {
    LibraryClaim l;
    l.loc = loc(key);
    const Token& name = peek();
    l.library = ident("a library after 'library' (openmpi, mpich or nccl)");
    if (l.library != "openmpi" && l.library != "mpich" && l.library != "nccl")
      error(name,
            "unknown library '" + printable(l.library) + "' (expected openmpi, mpich or nccl)");
    auto version = [&](const char* what) {
      const Token& v = peek();
      if (v.kind != Tok::Version && v.kind != Tok::Number)
        error(v, std::string("expected ") + what + " (as 4.1 or 2.19.3), found " + describe(v));
      next();
      return v.text;
    };
    const Token& lo_tok = peek();
    l.version_lo = version("the library's version after its name");
    l.version_hi = l.version_lo;
    if (accept("..")) l.version_hi = version("the last version of the range after '..'");
    if (version_less(l.version_hi, l.version_lo))
      error(lo_tok, "empty version range " + l.version_lo + " .. " + l.version_hi +
                        " (the first version is the older)");
    while (peek().kind == Tok::Ident && is_punct("=", 1)) {
      std::string k = next().text;
      next();
      const Token& v = peek();
      if (v.kind != Tok::Ident && v.kind != Tok::Number)
        error(v, "expected the value of '" + k + "' (a number or a name), found " + describe(v));
      l.selectors.emplace_back(k, next().text);
    }
    if (l.selectors.empty())
      error(peek(),
            "expected the algorithm selector after the version (as "
            "coll_tuned_allreduce_algorithm = 4, MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM = "
            "recursive_doubling or NCCL_ALGO = Ring), found " +
                describe(peek()));
    // Several lines of one library are several algorithms the model stands for (MPICH's
    // recursive doubling and its `nb` over the nonblocking recursive doubling), each with its
    // own selectors; the same selectors twice say nothing more and are refused.
    for (const LibraryClaim& o : h.libraries)
      if (o.library == l.library && o.selectors == l.selectors)
        error(name, "a second 'library " + l.library +
                        "' line with the same selectors (a further line names another algorithm "
                        "of the library)");
    h.libraries.push_back(std::move(l));
  }

  static bool version_less(const std::string& a, const std::string& b) {
    auto parts = [](const std::string& v) {
      std::vector<long> out;
      std::size_t i = 0;
      while (i < v.size()) {
        std::size_t j = v.find('.', i);
        if (j == std::string::npos) j = v.size();
        out.push_back(std::stol(v.substr(i, std::min<std::size_t>(j - i, 9))));
        i = j + 1;
      }
      return out;
    };
    return parts(a) < parts(b);
  }

  // The selector names the model's collective in the library's own words: Open MPI's
  // coll_tuned_<name>_algorithm (a number), MPICH's MPIR_CVAR_<NAME>_INTRA_ALGORITHM (a name),
  // NCCL's NCCL_ALGO (Ring or Tree, all-reduce only in this library). Other keys of the same
  // library (a segment size) are accepted after the selector.
  void check_selectors(const LibraryClaim& l, Collective c) const {
    std::vector<std::string> names;  // the library's names for the collective
    switch (c) {
      case Collective::Broadcast:
        names = {"bcast"};
        break;
      case Collective::Reduce:
        names = {"reduce"};
        break;
      case Collective::Allgather:
        names = {"allgather", "allgatherv"};
        break;
      case Collective::ReduceScatter:
        names = {"reduce_scatter", "reduce_scatter_block"};
        break;
      case Collective::Allreduce:
        names = {"allreduce"};
        break;
      case Collective::Scan:
        names = {"scan"};
        break;
      case Collective::Exscan:
        names = {"exscan"};
        break;
      case Collective::Allgatherv:
        names = {"allgatherv"};
        break;
      case Collective::Gatherv:
        names = {"gatherv"};
        break;
      case Collective::Scatterv:
        names = {"scatterv"};
        break;
      case Collective::Alltoallv:  // MPI_Alltoallw's blocks are alltoallv's (docs/mpi.md)
        names = {"alltoallv", "alltoallw"};
        break;
      case Collective::ReduceScatterv:
        names = {"reduce_scatter"};
        break;
      case Collective::Scatter:
        names = {"scatter", "scatterv"};
        break;
      case Collective::Gather:
        names = {"gather", "gatherv"};
        break;
      case Collective::Alltoall:
        names = {"alltoall", "alltoallv", "alltoallw"};
        break;
      case Collective::Barrier:
        names = {"barrier"};
        break;
      default:
        break;
    }
    auto upper = [](std::string s) {
      for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      return s;
    };
    const auto& [key, value] = l.selectors.front();
    bool ok = false;
    std::string want;
    if (l.library == "openmpi") {
      for (const auto& n : names) ok = ok || key == "coll_tuned_" + n + "_algorithm";
      want = "coll_tuned_" + (names.empty() ? std::string("<collective>") : names[0]) +
             "_algorithm = <number>";
      if (ok && !std::all_of(value.begin(), value.end(), ::isdigit))
        error_at(l.loc, "'" + key + "' takes the algorithm's number in Open MPI (as 4), not '" +
                            value + "'");
    } else if (l.library == "mpich") {
      for (const auto& n : names) ok = ok || key == "MPIR_CVAR_" + upper(n) + "_INTRA_ALGORITHM";
      want = "MPIR_CVAR_" + upper(names.empty() ? std::string("<COLLECTIVE>") : names[0]) +
             "_INTRA_ALGORITHM = <name>";
      if (ok && std::isdigit(static_cast<unsigned char>(value[0])))
        error_at(l.loc, "'" + key + "' takes the algorithm's name in MPICH (as ring), not '" +
                            value + "'");
      // MPICH's `nb` runs the nonblocking collective's own selection: a further key
      // MPIR_CVAR_I<COLLECTIVE>_INTRA_ALGORITHM names the schedule, for `nb` of the same
      // collective only.
      for (std::size_t i = 1; ok && i < l.selectors.size(); ++i) {
        const auto& [k, v] = l.selectors[i];
        if (k.rfind("MPIR_CVAR_I", 0) != 0 || k.size() < 28 ||
            k.compare(k.size() - 16, 16, "_INTRA_ALGORITHM") != 0)
          continue;
        const std::string blocking = "MPIR_CVAR_" + k.substr(11);
        if (blocking != key)
          error_at(l.loc, "'" + k + "' selects another collective's nonblocking algorithm than '" +
                              key + "' (expected MPIR_CVAR_I" + key.substr(10) + ")");
        if (value != "nb")
          error_at(l.loc, "'" + k + "' is read by MPICH's `nb` algorithm only, and '" + key +
                              "' is '" + value + "', not nb");
        if (std::isdigit(static_cast<unsigned char>(v[0])))
          error_at(l.loc, "'" + k +
                              "' takes the algorithm's name in MPICH (as sched_binomial), "
                              "not '" +
                              v + "'");
      }
    } else {
      // NCCL's rings run every collective here; its trees only the all-reduce.
      ok = key == "NCCL_ALGO" && !names.empty() && c != Collective::Alltoall &&
           c != Collective::Barrier && c != Collective::Scan && c != Collective::Exscan &&
           !collective_is_v(c) && c != Collective::Scatter && c != Collective::Gather;
      want = "NCCL_ALGO = Ring or Tree, for a collective NCCL has";
      if (ok && value != "Ring" && !(value == "Tree" && c == Collective::Allreduce))
        error_at(l.loc, std::string("NCCL_ALGO is Ring") +
                            (c == Collective::Allreduce ? " or Tree" : "") + " for a " +
                            collective_name(c) + ", not '" + value + "'");
    }
    if (!ok)
      error_at(l.loc, "the selector '" + key + "' does not choose a " + collective_name(c) +
                          " algorithm in " + l.library + " (expected " + want + ")");
  }

  // ---- statements ----
  bool at_block_end() const {
    const Token& t = peek();
    if (t.kind == Tok::End) return true;
    return t.kind == Tok::Ident && block_enders().count(t.text);
  }

  std::vector<StmtPtr> block() {
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
  std::vector<StmtPtr> body_after(const Token& kw, bool& one_line) {
    one_line = peek().line == kw.line && !at_block_end();
    if (!one_line) return block();
    std::vector<StmtPtr> out;
    while (peek().line == kw.line && !at_block_end()) {
      if (accept(";")) continue;
      out.push_back(statement());
    }
    return out;
  }

  StmtPtr statement() {
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
      if (loop_depth_ == 0)
        error(t, "'break' outside a loop (it leaves the innermost for or while)");
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

  ExprPtr lvalue() {
    const Token& t = peek();
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::Name;
    e->loc = loc(t);
    e->name = ident("a variable name");
    if (is_punct("[")) return postfix_index(std::move(e));
    return e;
  }

  StmtPtr if_stmt() {
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

  StmtPtr for_stmt() {
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

  StmtPtr while_stmt() {
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

  void peer(Stmt& s, const char* dir_word, const char* verb) {
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

  StmtPtr send_stmt() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::Send;
    s->loc = loc(next());
    s->value = expr();
    peer(*s, "to", "send");
    return s;
  }

  StmtPtr receive_stmt() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::Receive;
    s->loc = loc(next());
    s->target = lvalue();
    peer(*s, "from", "receive");
    return s;
  }

  // `irecv T from S as R`, `isend E to D as R`, `wait R`, `waitall [R1, R2, ...]` (the list,
  // if any, starts on the keyword's line; a bare `waitall` completes every outstanding request).
  StmtPtr nonblocking_stmt() {
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

  // ---- expressions (precedence climbing, loosest first) ----
  // Sets e's height from its operands and refuses a tree higher than kMaxExprHeight (a sum of
  // thousands of terms builds such a tree without any parser recursion).
  ExprPtr sized(ExprPtr e) {
    std::uint32_t h = 0;
    for (const auto& a : e->args) h = std::max(h, a->height);
    e->height = h + 1;
    if (e->height > kMaxExprHeight)
      throw ModelError(e->loc, "expression too deep: more than " + std::to_string(kMaxExprHeight) +
                                   " nested operations (split it over several assignments)");
    return e;
  }
  ExprPtr make_binary(Op op, const Token& at, ExprPtr a, ExprPtr b) {
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::Binary;
    e->op = op;
    e->loc = loc(at);
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return sized(std::move(e));
  }
  ExprPtr make_unary(Op op, const Token& at, ExprPtr a) {
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::Unary;
    e->op = op;
    e->loc = loc(at);
    e->args.push_back(std::move(a));
    return sized(std::move(e));
  }

  ExprPtr expr() {
    Nest guard(*this, peek());
    return or_expr();
  }
  ExprPtr or_expr() {
    auto a = and_expr();
    while (is_word("or")) {
      const Token& t = next();
      a = make_binary(Op::Or, t, std::move(a), and_expr());
    }
    return a;
  }
  ExprPtr and_expr() {
    auto a = not_expr();
    while (is_word("and")) {
      const Token& t = next();
      a = make_binary(Op::And, t, std::move(a), not_expr());
    }
    return a;
  }
  ExprPtr not_expr() {
    if (is_word("not")) {
      const Token& t = next();
      Nest guard(*this, t);
      return make_unary(Op::Not, t, not_expr());
    }
    return cmp_expr();
  }
  ExprPtr cmp_expr() {
    auto a = bitor_expr();
    for (;;) {
      static const std::pair<const char*, Op> ops[] = {{"=", Op::Eq},  {"<>", Op::Ne},
                                                       {"<=", Op::Le}, {">=", Op::Ge},
                                                       {"<", Op::Lt},  {">", Op::Gt}};
      bool found = false;
      for (auto& [p, op] : ops) {
        if (is_punct(p)) {
          const Token& t = next();
          a = make_binary(op, t, std::move(a), bitor_expr());
          found = true;
          break;
        }
      }
      if (!found) return a;
    }
  }
  ExprPtr bitor_expr() {
    auto a = bitand_expr();
    for (;;) {
      if (is_word("OR") || is_word("XOR")) {
        const Token& t = next();
        Op op = t.text == "OR" ? Op::BitOr : Op::BitXor;
        a = make_binary(op, t, std::move(a), bitand_expr());
      } else {
        return a;
      }
    }
  }
  ExprPtr bitand_expr() {
    auto a = add_expr();
    while (is_word("AND")) {
      const Token& t = next();
      a = make_binary(Op::BitAnd, t, std::move(a), add_expr());
    }
    return a;
  }
  ExprPtr add_expr() {
    auto a = mul_expr();
    for (;;) {
      if (is_punct("+") || is_punct("-") || is_punct("∪") || is_word("union")) {
        const Token& t = next();
        Op op = t.text == "+" ? Op::Add : t.text == "-" ? Op::Sub : Op::Union;
        a = make_binary(op, t, std::move(a), mul_expr());
      } else {
        return a;
      }
    }
  }
  ExprPtr mul_expr() {
    auto a = unary_expr();
    for (;;) {
      if (is_punct("*") || is_punct("/") || is_word("div") || is_word("mod")) {
        const Token& t = next();
        Op op = t.text == "*"     ? Op::Mul
                : t.text == "/"   ? Op::Div
                : t.text == "div" ? Op::IntDiv
                                  : Op::Mod;
        a = make_binary(op, t, std::move(a), unary_expr());
      } else {
        return a;
      }
    }
  }
  ExprPtr unary_expr() {
    if (is_punct("-")) {
      const Token& t = next();
      Nest guard(*this, t);
      return make_unary(Op::Neg, t, unary_expr());
    }
    if (is_word("NOT")) {
      const Token& t = next();
      Nest guard(*this, t);
      return make_unary(Op::BitNot, t, unary_expr());
    }
    return pow_expr();
  }
  ExprPtr pow_expr() {
    auto a = postfix_expr();
    if (is_punct("^")) {
      const Token& t = next();
      Nest guard(*this, t);
      return make_binary(Op::Pow, t, std::move(a), unary_expr());
    }
    return a;
  }
  ExprPtr postfix_index(ExprPtr base) {
    while (is_punct("[")) {
      const Token& t = next();
      auto first = expr();
      auto e = std::make_unique<Expr>();
      e->loc = loc(t);
      e->args.push_back(std::move(base));
      e->args.push_back(std::move(first));
      if (accept("..")) {
        e->kind = ExprKind::Slice;
        e->args.push_back(expr());
      } else {
        e->kind = ExprKind::Index;
      }
      expect("]", "']' to close the index");
      base = sized(std::move(e));
    }
    return base;
  }
  ExprPtr postfix_expr() { return postfix_index(primary()); }
  ExprPtr primary() {
    const Token& t = peek();
    auto e = std::make_unique<Expr>();
    e->loc = loc(t);
    if (t.kind == Tok::Number) {
      e->kind = ExprKind::Number;
      e->value = next().value;
      return e;
    }
    if (is_punct("(")) {
      next();
      auto inner = expr();
      expect(")", "')' to close '('");
      return inner;
    }
    if (is_punct("[")) {
      next();
      expect("]", "']' (only the empty buffer '[]' can be written as a literal)");
      e->kind = ExprKind::EmptyBuf;
      return e;
    }
    if (is_word("if")) {
      // The conditional `if C then A else B` (header formulas; the checker refuses it in the
      // procedure). B extends as far as an expression can.
      next();
      e->kind = ExprKind::Cond;
      e->args.push_back(expr());
      expect_word("then", "'then' in the conditional 'if C then A else B'");
      e->args.push_back(expr());
      expect_word("else",
                  "'else' in the conditional 'if C then A else B' (it needs both branches)");
      e->args.push_back(expr());
      return sized(std::move(e));
    }
    if (t.kind == Tok::Ident) {
      static const char* reserved[] = {"then",   "do",        "to",    "downto",  "endif",
                                       "endfor", "endwhile",  "else",  "endelse", "end",
                                       "begin",  "procedure", "along", "from"};
      for (auto* r : reserved)
        if (t.text == r) error(t, "expected an expression, found '" + t.text + "'");
      e->name = next().text;
      if (accept("(")) {
        e->kind = ExprKind::Call;
        if (!accept(")")) {
          do {
            e->args.push_back(expr());
          } while (accept(","));
          expect(")", "')' to close the argument list of '" + e->name + "'");
        }
        auto d = defs_.find(e->name);
        if (d != defs_.end()) return expand(*e, d->second);
        return sized(std::move(e));
      }
      e->kind = ExprKind::Name;
      return e;
    }
    error(t, "expected an expression, found " + describe(t));
  }

  // ---- helper functions: `def NAME(A, B) = EXPR` in the header, expanded where they are called
  struct Helper {
    std::vector<std::string> params;
    ExprPtr body;
  };
  static constexpr std::size_t kMaxHelperNodes = std::size_t{1} << 16;

  void helper_def(const Token& key) {
    const Token& nt = peek();
    std::string name = ident("the helper's name after 'def'");
    static const std::set<std::string> builtin = {"floor", "ceil",     "ilog2", "clog2", "popcount",
                                                  "log2",  "sqrt",     "min",   "max",   "abs",
                                                  "len",   "neighbor", "if",    "break"};
    if (builtin.count(name))
      error(nt, "'" + name + "' is a built-in function; a helper needs another name");
    if (defs_.count(name)) error(nt, "helper '" + name + "' is defined twice");
    Helper h;
    expect("(", "'(' and the parameters after 'def " + name + "'");
    if (!accept(")")) {
      do {
        const Token& pt = peek();
        std::string prm = ident("a parameter name");
        if (std::find(h.params.begin(), h.params.end(), prm) != h.params.end())
          error(pt, "parameter '" + prm + "' appears twice");
        h.params.push_back(prm);
      } while (accept(","));
      expect(")", "')' to close the parameters of '" + name + "'");
    }
    expect("=", "'=' and the helper's formula after 'def " + name + "(...)'");
    h.body = expr();  // calls of earlier helpers are expanded here: no recursion is possible
    (void)key;
    defs_.emplace(name, std::move(h));
  }

  ExprPtr substitute(const Expr& e, const Helper& h, const Expr& call, std::size_t& nodes) {
    if (++nodes > kMaxHelperNodes)
      error_at(call.loc, "helper '" + call.name + "' expands to more than " +
                             std::to_string(kMaxHelperNodes) + " operators");
    if (e.kind == ExprKind::Name) {
      auto it = std::find(h.params.begin(), h.params.end(), e.name);
      if (it != h.params.end())
        return substitute(*call.args[static_cast<std::size_t>(it - h.params.begin())], Helper{},
                          call, nodes);
    }
    auto c = std::make_unique<Expr>();
    c->kind = e.kind;
    c->loc = e.loc;
    c->op = e.op;
    c->value = e.value;
    c->name = e.name;
    for (const auto& a : e.args) c->args.push_back(substitute(*a, h, call, nodes));
    if (c->args.empty()) return c;
    std::uint32_t height = 0;
    for (const auto& a : c->args) height = std::max(height, a->height);
    c->height = height + 1;
    if (c->height > kMaxExprHeight)
      error_at(call.loc, "helper '" + call.name + "' expands to an expression nested more than " +
                             std::to_string(kMaxExprHeight) + " operators deep");
    return c;
  }

  ExprPtr expand(const Expr& call, const Helper& h) {
    if (call.args.size() != h.params.size())
      error_at(call.loc, "helper '" + call.name + "' takes " + std::to_string(h.params.size()) +
                             " argument" + (h.params.size() == 1 ? "" : "s") + ", given " +
                             std::to_string(call.args.size()));
    std::size_t nodes = 0;
    return substitute(*h.body, h, call, nodes);
  }

  std::map<std::string, Helper> defs_;
  std::vector<Token> t_;
  std::string file_;
  std::size_t pos_ = 0;
  int nest_ = 0;
  int loop_depth_ = 0;  // enclosing for and while bodies: where `break` may stand
};

}  // namespace

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

Model parse_model(const std::string& text, const std::string& file) {
  if (text.size() > kMaxModelBytes)
    throw UsageError("model file '" + file + "' has " + std::to_string(text.size()) +
                     " bytes; the limit is " + std::to_string(kMaxModelBytes >> 20) + " MiB");
  Lexer lx(text, file);
  Parser ps(lx.run(), file);
  Model m = ps.model();
  check_model(m);
  return m;
}

Model parse_model_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read model file '" + path + "'");
  // Refuse an oversize file before reading it (a pipe or device reports no size: read at most
  // one byte past the limit).
  in.seekg(0, std::ios::end);
  auto size = in.tellg();
  if (size > 0 && static_cast<std::uint64_t>(size) > kMaxModelBytes)
    throw UsageError("model file '" + path + "' has " + std::to_string(size) +
                     " bytes; the limit is " + std::to_string(kMaxModelBytes >> 20) + " MiB");
  in.clear();
  in.seekg(0, std::ios::beg);
  std::string text;
  char buf[1 << 16];
  while (text.size() <= kMaxModelBytes && in.read(buf, sizeof buf).gcount() > 0)
    text.append(buf, static_cast<std::size_t>(in.gcount()));
  return parse_model(text, path);
}

}  // namespace collv
