// Recursive-descent parser for model files: the model, its header (keys, library lines and their
// selectors) and the entry points. Hand-written so that every error can say what was expected at
// which file:line:col, in the words of the language reference. parser_detail.hpp has the Parser;
// lexer.cpp the tokens.
#include <algorithm>
#include <cctype>
#include <fstream>

#include "lang/parser_detail.hpp"

namespace collv {

namespace parser_detail {

Model Parser::model() {
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

void Parser::header(ModelHeader& h) {
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
      if (name == "reduce" && is_punct("-") && (is_word("scatter", 1) || is_word("scatterv", 1))) {
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
void Parser::library_line(const Token& key, ModelHeader& h) {
  LibraryClaim l;
  l.loc = loc(key);
  const Token& name = peek();
  l.library = ident("a library after 'library' (openmpi, mpich or nccl)");
  if (l.library != "openmpi" && l.library != "mpich" && l.library != "nccl")
    error(name, "unknown library '" + printable(l.library) + "' (expected openmpi, mpich or nccl)");
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

bool Parser::version_less(const std::string& a, const std::string& b) {
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
void Parser::check_selectors(const LibraryClaim& l, Collective c) const {
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
      error_at(l.loc,
               "'" + key + "' takes the algorithm's name in MPICH (as ring), not '" + value + "'");
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

}  // namespace parser_detail

Model parse_model(const std::string& text, const std::string& file) {
  if (text.size() > kMaxModelBytes)
    throw UsageError("model file '" + file + "' has " + std::to_string(text.size()) +
                     " bytes; the limit is " + std::to_string(kMaxModelBytes >> 20) + " MiB");
  parser_detail::Lexer lx(text, file);
  parser_detail::Parser ps(lx.run(), file);
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
