// The only file of collv that includes z3++.h (see solver.hpp).
#include "smt/solver.hpp"

#include <z3++.h>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "util/deadline.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"

namespace collv::smt {

const char* answer_name(Answer a) {
  switch (a) {
    case Answer::Sat:
      return "sat";
    case Answer::Unsat:
      return "unsat";
    case Answer::Unknown:
      return "unknown";
  }
  return "?";
}

namespace {

// Interrupts a Z3 context at `end` unless stopped before. Z3's own timeout bounds the search only,
// not the parsing and asserting before it, where Z3 also simplifies (asserting one query of a
// 4,096-item trace took 140 s past a --timeout of 5 s).
class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;
  Watchdog(z3::context& ctx, Clock::time_point end) {
    thread_ = std::thread([this, &ctx, end] {
      std::unique_lock<std::mutex> lock(m_);
      while (!done_ && Clock::now() < end)
        cv_.wait_until(lock, std::min(end, Clock::now() + std::chrono::seconds(1)));
      // Again every 50 ms until the query returns: Z3 clears a cancellation when a check starts,
      // so one interrupt during parsing or asserting would be lost.
      while (!done_) {
        fired_ = true;
        ctx.interrupt();
        cv_.wait_for(lock, std::chrono::milliseconds(50));
      }
    });
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog() { stop(); }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(m_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  bool fired() {
    std::lock_guard<std::mutex> lock(m_);
    return fired_;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false, fired_ = false;
  std::thread thread_;
};

// The end of the script's next piece from `from`: after the first command that ends at or past
// from + size (a ')' at depth 0), or the script's end. Comments and quoted symbols and strings
// are skipped, so a parenthesis in them does not count.
std::size_t next_piece(const std::string& s, std::size_t from, std::size_t size) {
  int depth = 0;
  for (std::size_t i = from; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ';') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '|' || c == '"') {
      for (++i; i < s.size() && s[i] != c; ++i) {
      }
    } else if (c == '(') {
      ++depth;
    } else if (c == ')' && --depth == 0 && i + 1 - from >= size) {
      return i + 1;
    }
  }
  return s.size();
}

// The top-level lists of an answer such as "((x 0)\n (y (- 1)))" or "(a b)": their texts, or
// its atoms.
std::vector<std::string> answer_items(const std::string& text) {
  std::vector<std::string> items;
  auto open = text.find('(');
  if (open == std::string::npos) return items;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = open + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (depth == 0 && c == ')') break;
    if (c == '(') {
      if (depth++ == 0) start = i;
    } else if (c == ')') {
      if (--depth == 0) items.push_back(text.substr(start, i + 1 - start));
    } else if (depth == 0 && !std::isspace(static_cast<unsigned char>(c))) {
      std::size_t e = i;
      while (e < text.size() && !std::isspace(static_cast<unsigned char>(text[e])) &&
             text[e] != '(' && text[e] != ')')
        ++e;
      items.push_back(text.substr(i, e - i));
      i = e - 1;
    }
  }
  return items;
}

// Z3's resource count of the solver's context ("rlimit count" of its statistics).
std::uint64_t rlimit_count(z3::solver& s) {
  z3::stats st = s.statistics();
  for (unsigned i = 0; i < st.size(); ++i)
    if (st.key(i) == "rlimit count")
      return st.is_uint(i) ? st.uint_value(i) : static_cast<std::uint64_t>(st.double_value(i));
  return 0;
}

std::string rlimit_reached(std::uint64_t rlimit) {
  return fmt::format("stopped at the resource limit of {} units (rlimit)", rlimit);
}

}  // namespace

struct Solver::Impl {
  z3::context ctx;  // declared first: everything below lives in it
  std::unique_ptr<z3::solver> solver;
  bool read = false;  // the query is in the context's command reader (read in pieces)
  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
};

// The context is created on the first check: a query refused by the size cap, or a Solver used
// only to count (reserve), never pays for one.
Solver::Solver(Limits limits, std::string logic) : limits_(limits), logic_(std::move(logic)) {}

Solver::~Solver() = default;

bool Solver::reserve(std::uint64_t terms, std::uint64_t extra_bytes) {
  reserved_ = sat_add(reserved_, terms);
  extra_bytes_ = sat_add(extra_bytes_, extra_bytes);
  if (reserved_ > limits_.max_terms) refused_ = true;
  // The memory the query will take, checked before it is built against --max-memory.
  std::uint64_t need = sat_add(sat_mul(reserved_, limits_.bytes_per_term), extra_bytes_),
                used = resident_bytes();
  if (!refused_ && sat_add(need, used) > memory_limit()) {
    refused_ = true;
    memory_refusal_ = fmt::format(
        "query refused before it was built: about {} terms need about {} (at {} bytes per term{}), "
        "over --max-memory {} with {} in use (raise --max-memory, or use a smaller size)",
        reserved_, mib_text(need), limits_.bytes_per_term,
        extra_bytes_ ? fmt::format(", and {} of bit vectors", mib_text(extra_bytes_)) : "",
        mib_text(memory_limit()), mib_text(used));
  }
  return !refused_;
}

std::string Solver::refusal() const {
  if (!memory_refusal_.empty()) return memory_refusal_;
  return fmt::format(
      "query refused before it was built: it needs about {} terms, over the cap of {} "
      "(raise it with --max-terms, or use a smaller size)",
      reserved_, limits_.max_terms);
}

void Solver::declare(const std::string& name, const std::string& sort) {
  sorts_[name] = sort;
  script_ += fmt::format("(declare-const {} {})\n", name, sort);
  dirty_ = true;
}

void Solver::reset_script() {
  script_.clear();
  sorts_.clear();
  dirty_ = true;
  if (impl_) impl_->solver.reset();
}

void Solver::add(const std::string& smt2) {
  script_ += smt2;
  if (!smt2.empty() && smt2.back() != '\n') script_ += '\n';
  dirty_ = true;
}

Result Solver::check(const std::vector<std::string>& assumptions,
                     const std::vector<std::string>& value_names) {
  Result r;
  if (refused_) {
    r.reason = refusal();
    return r;
  }
  auto t0 = std::chrono::steady_clock::now();
  // --timeout of the whole command (util/deadline): a query gets at most the time left, its
  // parsing and asserting included (the watchdog).
  check_deadline("the Z3 query");
  const unsigned ms = static_cast<unsigned>(std::min<std::uint64_t>(
      limits_.timeout_ms, std::max<std::uint64_t>(1, deadline_remaining_ms())));
  auto timed_out = [&] {
    return ms < limits_.timeout_ms
               ? fmt::format("stopped at the time limit of --timeout {} ms (the command's)",
                             deadline_ms())
               : fmt::format("timeout after {} ms", limits_.timeout_ms);
  };
  // A large query is read in pieces, with the time checked between them: Z3 reads a script
  // without looking at an interrupt, and the nodup query of a 4,096-item trace (2.2 MB, 8,192
  // chained bit-vector definitions) took 30 s of CPU to read past a --timeout of 2 s.
  // Queries for a named logic (synthesis: QF_FD) keep the parsed path: Z3's command reader
  // solves them otherwise (a star:4 all-reduce lower bound in 6 steps, 0.5 s parsed, timed out at
  // 60 s), and their scripts are flat clauses, which Z3 reads fast.
  // Only under a command's --timeout (util/deadline), the wall-clock bound the reading must hold:
  // without it the queries are parsed at once as before (the command reader has not been
  // measured on the 86 MB certificates of proofs/slow).
  const bool in_pieces = logic_.empty() && script_.size() > limits_.read_in_pieces_above &&
                         deadline_remaining_ms() != UINT64_MAX;
  if (!impl_ || (in_pieces && (dirty_ || !impl_->read))) impl_ = std::make_unique<Impl>();
  z3::context& ctx = impl_->ctx;
  // A little after Z3's own timeout, so that a search stopped by Z3 reports as before.
  Watchdog dog(ctx, t0 + std::chrono::milliseconds(std::uint64_t{ms} + 100));
  if (in_pieces) {
    check_in_pieces(
        r, assumptions, value_names, ms, [&] { return dog.fired(); }, timed_out);
    dog.stop();
    if (dog.fired()) {  // an interrupted context is not used again
      impl_.reset();
      dirty_ = true;
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }
  try {
    if (dirty_ || !impl_->solver) {
      impl_->solver = logic_.empty() ? std::make_unique<z3::solver>(ctx)
                                     : std::make_unique<z3::solver>(ctx, logic_.c_str());
      z3::expr_vector fs = ctx.parse_string(script_.c_str());
      impl_->solver->add(fs);
      dirty_ = false;
    }
    z3::solver& s = *impl_->solver;
    z3::params p(ctx);
    p.set("timeout", ms);
    // Z3 takes the resource limit as a 32-bit parameter (units past the check's start).
    if (limits_.rlimit)
      p.set("rlimit", static_cast<unsigned>(std::min<std::uint64_t>(limits_.rlimit, 0xFFFFFFFFu)));
    s.set(p);
    z3::expr_vector as(ctx);
    for (const auto& a : assumptions) as.push_back(ctx.bool_const(a.c_str()));
    const std::uint64_t units0 = rlimit_count(s);
    z3::check_result cr = s.check(as);
    r.rlimit_used = rlimit_count(s) - std::min(units0, rlimit_count(s));
    if (cr == z3::unsat) {
      r.answer = Answer::Unsat;
      z3::expr_vector core = s.unsat_core();
      for (unsigned i = 0; i < core.size(); ++i) r.core.push_back(core[i].to_string());
    } else if (cr == z3::sat) {
      r.answer = Answer::Sat;
      z3::model m = s.get_model();
      for (const auto& n : value_names) {
        auto it = sorts_.find(n);
        std::string sort = it == sorts_.end() ? "Int" : it->second;
        z3::expr c = sort == "Bool" ? ctx.bool_const(n.c_str()) : ctx.int_const(n.c_str());
        if (sort != "Bool" && sort != "Int") continue;
        r.values[n] = m.eval(c, true).to_string();
      }
    } else {
      r.answer = Answer::Unknown;
      r.reason = s.reason_unknown();
      // Z3 reports a resource limit as "canceled", like an interrupt: told apart by the count.
      if (limits_.rlimit && r.rlimit_used >= limits_.rlimit && !dog.fired())
        r.reason = rlimit_reached(limits_.rlimit);
      else if (r.reason == "canceled" || r.reason == "timeout" || r.reason == "interrupted" ||
               dog.fired())
        r.reason = timed_out();
    }
  } catch (const z3::exception& e) {
    if (!dog.fired())
      throw InternalError(std::string("internal error: Z3 rejected a query collv built: ") +
                          e.msg());
    r.answer = Answer::Unknown;  // interrupted while parsing or asserting
    r.reason = timed_out();
  }
  dog.stop();
  if (dog.fired()) {  // an interrupted context is not used again
    impl_.reset();
    dirty_ = true;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void Solver::check_in_pieces(Result& r, const std::vector<std::string>& assumptions,
                             const std::vector<std::string>& value_names, unsigned ms,
                             const std::function<bool()>& fired,
                             const std::function<std::string()>& timed_out) {
  z3::context& ctx = impl_->ctx;
  auto eval = [&](const std::string& text) {
    const char* out = Z3_eval_smtlib2_string(ctx, text.c_str());
    std::string o = out ? out : "";
    if (o.find("(error") != std::string::npos && !fired())
      throw InternalError("internal error: Z3 rejected a query collv built: " +
                          o.substr(0, std::min<std::size_t>(o.size(), 300)));
    return o;
  };
  auto stopped = [&] {
    r.answer = Answer::Unknown;
    r.reason = timed_out();
  };
  if (!impl_->read) {
    // The context's command reader is made by its first command, with the options of that
    // moment: unsat cores on for it alone.
    Z3_global_param_set("unsat_core", "true");
    eval(logic_.empty() ? "" : "(set-logic " + logic_ + ")");
    Z3_global_param_set("unsat_core", "false");
    constexpr std::size_t kPiece = 4096;  // bytes: a piece of chained definitions reads in ms
    for (std::size_t at = 0; at < script_.size();) {
      const std::size_t end = next_piece(script_, at, kPiece);
      eval(script_.substr(at, end - at));
      at = end;
      if (at < script_.size() && (fired() || deadline_passed())) {
        stopped();
        r.reason += fmt::format(" (Z3 had read {} of the query's {} bytes)", at, script_.size());
        return;
      }
    }
    impl_->read = true;
    dirty_ = false;
  }
  eval(fmt::format("(set-option :timeout {})", ms));
  if (limits_.rlimit)
    eval(fmt::format("(set-option :rlimit {})",
                     std::min<std::uint64_t>(limits_.rlimit, 0xFFFFFFFFu)));
  std::string cmd = "(check-sat-assuming (";
  for (std::size_t i = 0; i < assumptions.size(); ++i) cmd += (i ? " " : "") + assumptions[i];
  const std::string out = eval(cmd + "))");
  const std::string answer = out.substr(0, out.find_first_of(" \r\n"));
  if (answer == "unsat") {
    r.answer = Answer::Unsat;
    r.core = answer_items(eval("(get-unsat-core)"));
  } else if (answer == "sat") {
    r.answer = Answer::Sat;
    std::vector<std::string> names;
    for (const auto& n : value_names) {
      auto it = sorts_.find(n);
      std::string sort = it == sorts_.end() ? "Int" : it->second;
      if (sort == "Bool" || sort == "Int") names.push_back(n);
    }
    if (!names.empty()) {
      std::string q = "(get-value (";
      for (std::size_t i = 0; i < names.size(); ++i) q += (i ? " " : "") + names[i];
      for (const std::string& pair : answer_items(eval(q + "))"))) {
        // "(name value)"
        std::size_t b = pair.find_first_not_of(" \t\r\n", 1);
        std::size_t e = pair.find_first_of(" \t\r\n", b);
        if (b == std::string::npos || e == std::string::npos) continue;
        std::size_t v = pair.find_first_not_of(" \t\r\n", e);
        r.values[pair.substr(b, e - b)] = pair.substr(v, pair.size() - 1 - v);
      }
    }
  } else {
    r.answer = Answer::Unknown;
    auto items = answer_items(eval("(get-info :reason-unknown)"));
    r.reason = items.size() >= 2 ? items[1] : "unknown";
    if (r.reason.size() >= 2 && r.reason.front() == '"')
      r.reason = r.reason.substr(1, r.reason.size() - 2);
    if (r.reason == "canceled" || r.reason == "timeout" || r.reason == "interrupted" || fired())
      stopped();
  }
}

std::string Solver::to_smt2(Answer expected, const std::vector<std::string>& assumptions,
                            const std::string& comment) const {
  return to_smt2_checks(expected, {assumptions}, comment);
}

std::string Solver::to_smt2_checks(Answer expected,
                                   const std::vector<std::vector<std::string>>& checks,
                                   const std::string& comment) const {
  std::string out = fmt::format("; expected: {}\n", answer_name(expected));
  std::size_t start = 0;
  while (start < comment.size()) {
    auto nl = comment.find('\n', start);
    if (nl == std::string::npos) nl = comment.size();
    out += "; " + comment.substr(start, nl - start) + "\n";
    start = nl + 1;
  }
  if (!logic_.empty()) out += "(set-logic " + logic_ + ")\n";
  out += script_;
  for (const auto& assumptions : checks) {
    out += "(check-sat-assuming (";
    for (std::size_t i = 0; i < assumptions.size(); ++i) out += (i ? " " : "") + assumptions[i];
    out += "))\n";
  }
  return out;
}

void Solver::emit_smt2(const std::string& path, Answer expected,
                       const std::vector<std::string>& assumptions,
                       const std::string& comment) const {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw UsageError("cannot write " + path);
  f << to_smt2(expected, assumptions, comment);
  if (!f) throw UsageError("cannot write " + path);
}

std::string lemma_failure(const Result& r) {
  for (std::size_t i = 0; i + 1 < r.answers.size(); ++i)
    if (r.answers[i] != Answer::Unsat)
      return fmt::format("lemma check {} of {} answered {} (a lemma must be unsat)", i + 1,
                         r.answers.size(), answer_name(r.answers[i]));
  return "";
}

std::optional<Answer> expected_answer_of(const std::string& text) {
  auto pos = text.find("; expected:");
  if (pos == std::string::npos) return std::nullopt;
  auto eol = text.find('\n', pos);
  std::string v =
      text.substr(pos + 11, eol == std::string::npos ? std::string::npos : eol - pos - 11);
  auto b = v.find_first_not_of(" \t");
  auto e = v.find_last_not_of(" \t\r");
  if (b == std::string::npos) return std::nullopt;
  v = v.substr(b, e - b + 1);
  if (v == "unsat") return Answer::Unsat;
  if (v == "sat") return Answer::Sat;
  if (v == "unknown") return Answer::Unknown;
  return std::nullopt;
}

Result run_smt2_script(const std::string& text, unsigned timeout_ms, std::uint64_t max_bytes) {
  Result r;
  if (text.size() > max_bytes) {
    r.reason = fmt::format("script refused: {} bytes, over the cap of {}", text.size(), max_bytes);
    return r;
  }
  auto t0 = std::chrono::steady_clock::now();
  // --timeout of the whole command (util/deadline): each check gets at most the time left, and
  // a watchdog interrupts Z3 at the limit (a script of many checks, or a long parse).
  check_deadline("running the SMT-LIB script");
  timeout_ms = static_cast<unsigned>(
      std::min<std::uint64_t>(timeout_ms, std::max<std::uint64_t>(1, deadline_remaining_ms())));
  z3::config cfg;
  cfg.set("timeout", static_cast<int>(timeout_ms));
  z3::context ctx(cfg);
  std::string script = fmt::format("(set-option :timeout {})\n", timeout_ms) + text;
  std::string out;
  {
    std::optional<Watchdog> dog;  // at the command's --timeout, if it has one
    if (deadline_remaining_ms() != UINT64_MAX)
      dog.emplace(ctx, std::chrono::steady_clock::now() +
                           std::chrono::milliseconds(deadline_remaining_ms()));
    try {
      out = Z3_eval_smtlib2_string(ctx, script.c_str());
      if (dog) dog->stop();
      ctx.check_error();
    } catch (const z3::exception& e) {
      if (dog) dog->stop();
      check_deadline("running the SMT-LIB script");
      throw UsageError(std::string("Z3 could not run the script: ") + e.msg());
    }
  }
  check_deadline("running the SMT-LIB script");
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Every line that is an answer, in order; the last one is the script's answer.
  std::size_t start = 0;
  while (start < out.size()) {
    auto nl = out.find('\n', start);
    if (nl == std::string::npos) nl = out.size();
    std::string line = out.substr(start, nl - start);
    if (line == "sat") r.answers.push_back(Answer::Sat);
    if (line == "unsat") r.answers.push_back(Answer::Unsat);
    if (line == "unknown" || line == "timeout") {
      r.answers.push_back(Answer::Unknown);
      r.reason = line;
    }
    if (line.rfind("(error", 0) == 0) throw UsageError("Z3: " + line);
    start = nl + 1;
  }
  if (!r.answers.empty()) {
    r.answer = r.answers.back();
    return r;
  }
  r.reason = "the script gave no answer";
  return r;
}

}  // namespace collv::smt
