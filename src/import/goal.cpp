// GOAL (LogGOPSim) reader (docs/formats.md, "GOAL").
//
// The file is parsed into ops per rank, receives are matched to sends by (src, dst, tag) in
// order, and an event graph is built: two events per op (its start and its end) with an edge for
// every `requires` (end of B -> start of A), `irequires` (start of B -> start of A), op (start ->
// end) and message (start of the send -> end of the receive). The earliest schedule is the
// longest path in that graph; a cycle is a deadlock; reachability gives the information flow.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "import/import.hpp"
#include "util/deadline.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"
#include "util/text.hpp"

namespace collv {

// What the flow question needs of a GOAL file (import.hpp): heard[r] is the set of ranks some op
// of r depends on (r included), hears_all[r] whether one op of r depends on every rank's ops.
struct GoalReach {
  std::uint32_t p = 0, words = 0;
  bool computed = false;             // false: over the bit budget
  std::vector<std::uint64_t> heard;  // p x words
  std::vector<bool> hears_all;
};

namespace {

using import_detail::add_violation;
using import_detail::make_check;

constexpr std::uint64_t kMaxRanks = 2048;       // the Trace's complete:N topology is N*(N-1) links
constexpr std::uint64_t kMaxOps = 10'000'000;   // ops in the whole file
constexpr std::uint64_t kMaxDeps = 40'000'000;  // requires/irequires in the whole file
constexpr std::uint64_t kFlowBitBudget = 1u << 28;  // ranks x events bits for the all-to-all flow
constexpr std::uint32_t kNever = std::numeric_limits<std::uint32_t>::max();

enum class GoalKind { Send, Recv, Calc };

struct GoalOp {
  GoalKind kind = GoalKind::Calc;
  std::string label;
  std::uint64_t size = 0;  // bytes (send, recv) or the calc's amount
  std::uint32_t peer = 0;
  std::uint64_t tag = 0;
  std::uint32_t rank = 0;
  std::uint32_t line = 0, col = 0;
  std::uint32_t match = kNever;  // the matched op (send <-> recv)
};

struct GoalDep {
  std::uint32_t a, b;  // op indices: a waits for b
  bool immediate;      // irequires: a starts after b starts
};

struct GoalTok {
  std::string text;
  std::uint32_t col;
};

class Parser {
 public:
  Parser(const std::string& text, const std::string& src) : text_(text), src_(src) {}

  void parse() {
    std::size_t pos = 0;
    std::uint32_t line = 0;
    bool in_rank = false;
    std::uint32_t cur_rank = 0;
    std::unordered_map<std::string, std::uint32_t> labels;  // of the current rank
    std::vector<bool> seen_rank;
    DeadlineTick tick;
    while (pos <= text_.size()) {
      tick([&] { return fmt::format("reading {} (at line {})", src_, line); });
      std::size_t eol = text_.find('\n', pos);
      if (eol == std::string::npos) eol = text_.size();
      ++line;
      std::vector<GoalTok> t = tokens(pos, eol, line);
      pos = eol + 1;
      if (t.empty()) continue;
      auto err = [&](std::uint32_t col, const std::string& msg) {
        throw UsageError(fmt::format("{}:{}:{}: error: {}", src_, line, col, msg));
      };
      if (!num_ranks_) {
        if (t[0].text != "num_ranks" || t.size() != 2)
          err(t[0].col, "a GOAL schedule starts with `num_ranks N`");
        std::uint64_t n = number(t[1], line, "num_ranks");
        if (n == 0 || n > kMaxRanks)
          err(t[1].col, fmt::format("num_ranks {} is outside 1..{}", n, kMaxRanks));
        require_memory(n * n * 16,
                       fmt::format("{}: the complete:{} topology of the trace", src_, n));
        num_ranks_ = static_cast<std::uint32_t>(n);
        seen_rank.assign(n, false);
        continue;
      }
      if (!in_rank) {
        if (t[0].text != "rank" || t.size() != 3 || t[2].text != "{")
          err(t[0].col, "expected `rank R {`");
        std::uint64_t r = number(t[1], line, "rank");
        if (r >= num_ranks_)
          err(t[1].col, fmt::format("rank {} is outside 0..{}", r, num_ranks_ - 1));
        if (seen_rank[r]) err(t[1].col, fmt::format("rank {} is defined twice", r));
        seen_rank[r] = true;
        cur_rank = static_cast<std::uint32_t>(r);
        in_rank = true;
        labels.clear();
        continue;
      }
      if (t[0].text == "}") {
        if (t.size() != 1) err(t[1].col, "unexpected text after `}`");
        in_rank = false;
        continue;
      }
      // A dependency: lA requires lB / lA irequires lB.
      if (t.size() == 3 && (t[1].text == "requires" || t[1].text == "irequires")) {
        auto find = [&](const GoalTok& k) {
          auto it = labels.find(k.text);
          if (it == labels.end())
            err(k.col, fmt::format("label `{}` is not defined (before this line) in rank {}",
                                   printable(k.text, 40), cur_rank));
          return it->second;
        };
        std::uint32_t a = find(t[0]), b = find(t[2]);
        if (a == b) err(t[0].col, fmt::format("`{}` depends on itself", t[0].text));
        if (deps_.size() >= kMaxDeps)
          err(t[0].col, fmt::format("more than {} dependencies", kMaxDeps));
        deps_.push_back({a, b, t[1].text == "irequires"});
        continue;
      }
      // An op: [LABEL:] send SIZEb to R [tag T] [cpu N] [nic N] | recv SIZEb from R [tag T]
      // [cpu N] [nic N] | calc C [cpu N], in txt2bin's order; cpu and nic are read and ignored.
      // A label is an identifier ([a-zA-Z][a-zA-Z0-9_]*); txt2bin allows an op without one.
      GoalOp op;
      op.rank = cur_rank;
      op.line = line;
      op.col = t[0].col;
      std::size_t v = 0;  // index of the verb
      if (t[0].text != "send" && t[0].text != "recv" && t[0].text != "calc") {
        if (t[0].text.size() < 2 || t[0].text.back() != ':')
          err(t[0].col, "expected `LABEL: send|recv|calc ...`, `lA requires lB`, or `}`");
        op.label = t[0].text.substr(0, t[0].text.size() - 1);
        if (!identifier(op.label))
          err(t[0].col, fmt::format("label `{}` is not an identifier ([a-zA-Z][a-zA-Z0-9_]*)",
                                    printable(op.label, 40)));
        if (labels.count(op.label))
          err(t[0].col, fmt::format("label `{}` is defined twice in rank {}", op.label, cur_rank));
        if (t.size() < 2) err(t[0].col, "the label has no op");
        v = 1;
      }
      std::size_t k = v + 1;
      const std::string& verb = t[v].text;
      std::vector<const char*> suffixes;  // what may follow, in order
      if (verb == "send" || verb == "recv") {
        op.kind = verb == "send" ? GoalKind::Send : GoalKind::Recv;
        const char* dir = verb == "send" ? "to" : "from";
        if (t.size() < v + 4)
          err(t[v].col, fmt::format("expected `{} SIZEb {} R [tag T]`", verb, dir));
        GoalTok sz = t[v + 1];
        if (sz.text.empty() || sz.text.back() != 'b')
          err(sz.col, fmt::format("expected the size in bytes, `{}b`", printable(sz.text, 20)));
        sz.text.pop_back();
        op.size = number(sz, line, "size");
        if (t[v + 2].text != dir) err(t[v + 2].col, fmt::format("expected `{}`", dir));
        std::uint64_t peer = number(t[v + 3], line, "peer rank");
        if (peer >= num_ranks_)
          err(t[v + 3].col, fmt::format("rank {} is outside 0..{}", peer, num_ranks_ - 1));
        if (peer == cur_rank)
          err(t[v + 3].col, fmt::format("rank {} names itself as its peer", peer));
        op.peer = static_cast<std::uint32_t>(peer);
        k = v + 4;
        suffixes = {"tag", "cpu", "nic"};
      } else if (verb == "calc") {
        op.kind = GoalKind::Calc;
        if (t.size() < v + 2) err(t[v].col, "expected `calc C`");
        op.size = number(t[v + 1], line, "calc amount");
        k = v + 2;
        suffixes = {"cpu"};
      } else {
        err(t[v].col, fmt::format("unknown op `{}` (send, recv or calc)", printable(verb, 40)));
      }
      std::size_t next = 0;  // suffixes before this one are used up
      while (k < t.size()) {
        std::size_t f = next;
        while (f < suffixes.size() && t[k].text != suffixes[f]) ++f;
        if (f == suffixes.size()) {
          std::string allowed;
          for (std::size_t q = next; q < suffixes.size(); ++q)
            allowed += fmt::format("{}`{}`", allowed.empty() ? "" : ", ", suffixes[q]);
          err(t[k].col, fmt::format("unexpected `{}`{}", printable(t[k].text, 40),
                                    allowed.empty() ? std::string(" (end of line expected)")
                                                    : " (txt2bin expects " + allowed +
                                                          " or the end of the line here)"));
        }
        if (k + 1 >= t.size()) err(t[k].col, fmt::format("`{}` needs a number", suffixes[f]));
        std::uint64_t val = number(t[k + 1], line, suffixes[f]);
        if (std::string(suffixes[f]) == "tag") op.tag = val;
        next = f + 1;
        k += 2;
      }
      if (ops_.size() >= kMaxOps) err(t[0].col, fmt::format("more than {} ops", kMaxOps));
      if (!op.label.empty()) labels.emplace(op.label, static_cast<std::uint32_t>(ops_.size()));
      ops_.push_back(std::move(op));
    }
    if (in_comment_)
      throw UsageError(fmt::format("{}:{}:{}: error: the `/*` comment is not closed with `*/`",
                                   src_, comment_line_, comment_col_));
    if (!num_ranks_) throw UsageError(src_ + ":1:1: error: no `num_ranks N` line");
    if (in_rank)
      throw UsageError(
          fmt::format("{}:{}:1: error: rank {} is not closed with `}}`", src_, line, cur_rank));
  }

  std::uint32_t num_ranks_ = 0;
  std::vector<GoalOp> ops_;
  std::vector<GoalDep> deps_;

 private:
  static bool identifier(const std::string& s) {
    if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
  }

  // The tokens of one line, as LogGOPSim's txt2bin scans them: `//` (to the end of the line) and
  // `/* ... */` (across lines) are comments only where an item may start (the line's start, after
  // `{`, `}` or `num_ranks N`); anywhere else, like `#` or any other character txt2bin does not
  // know, they are an error.
  std::vector<GoalTok> tokens(std::size_t b, std::size_t e, std::uint32_t line) {
    std::vector<GoalTok> out;
    std::size_t i = b;
    auto err = [&](std::size_t at, const std::string& msg) {
      throw UsageError(fmt::format("{}:{}:{}: error: {}", src_, line, at - b + 1, msg));
    };
    auto item_start = [&] {
      return out.empty() || out.back().text == "{" || out.back().text == "}" ||
             (out.size() == 2 && out[0].text == "num_ranks");
    };
    while (i < e) {
      if (in_comment_) {
        std::size_t close = std::string_view(text_).substr(i, e - i).find("*/");
        if (close == std::string_view::npos) {
          i = e;
          break;
        }
        in_comment_ = false;
        i += close + 2;
        continue;
      }
      char c = text_[i];
      if (c == '\r') {  // txt2bin's line end is "\r"? "\n": a carriage return elsewhere is no blank
        if (i + 1 != e) err(i, "a carriage return (\\r) that does not end the line");
        ++i;
        continue;
      }
      if (c == ' ' || c == '\t') {
        std::size_t j = i;
        while (j < e && (text_[j] == ' ' || text_[j] == '\t')) ++j;
        // Where an item starts, txt2bin takes blanks only before the line's end: after them it
        // drops one character and reads on, so an indented item, a comment after `{ ` or a
        // second comment or item after `*/ ` is refused there (or read without its first letter).
        if (item_start() && j < e && !(text_[j] == '\r' && j + 1 == e))
          err(j, fmt::format("blanks before `{}` where an item starts (LogGOPSim's txt2bin "
                             "rejects an indented item, and any item or comment after `{{ `, `}} "
                             "`, `*/ ` or `num_ranks N ` on the same line)",
                             printable(text_.substr(j, std::min<std::size_t>(e - j, 8)), 20)));
        i = j;
        continue;
      }
      if (c == '/' && i + 1 < e && (text_[i + 1] == '/' || text_[i + 1] == '*')) {
        if (!item_start())
          err(i, fmt::format("a `{}` comment where an item goes on (LogGOPSim's txt2bin reads "
                             "comments only where an item starts)",
                             text_.substr(i, 2)));
        if (text_[i + 1] == '/') break;
        in_comment_ = true;
        comment_line_ = line;
        comment_col_ = static_cast<std::uint32_t>(i - b + 1);
        i += 2;
        continue;
      }
      if (c == '#')
        err(i, "`#` is not GOAL (LogGOPSim's txt2bin rejects it; comments are // and /* */)");
      std::size_t j = i;
      if (c == '{' || c == '}') {
        ++j;
      } else {
        // A word ends at a blank, a brace or a comment's opening (which the next round judges).
        while (j < e && text_[j] != ' ' && text_[j] != '\t' && text_[j] != '\r' &&
               text_[j] != '{' && text_[j] != '}' &&
               !(text_[j] == '/' && j + 1 < e && (text_[j + 1] == '/' || text_[j + 1] == '*')))
          ++j;
      }
      out.push_back({text_.substr(i, j - i), static_cast<std::uint32_t>(i - b + 1)});
      i = j;
    }
    return out;
  }

  std::uint64_t number(const GoalTok& t, std::uint32_t line, const std::string& what) {
    if (t.text.empty() || t.text.size() > 18 ||
        !std::all_of(t.text.begin(), t.text.end(), [](char c) { return c >= '0' && c <= '9'; }))
      throw UsageError(fmt::format("{}:{}:{}: error: {} `{}` is not a non-negative integer", src_,
                                   line, t.col, what, printable(t.text, 40)));
    return std::stoull(t.text);
  }

  const std::string& text_;
  const std::string& src_;
  bool in_comment_ = false;  // inside /* ... */
  std::uint32_t comment_line_ = 0, comment_col_ = 0;
};

const char* kind_name(GoalKind k) {
  return k == GoalKind::Send ? "send" : k == GoalKind::Recv ? "recv" : "calc";
}

std::string op_name(const GoalOp& o) {
  std::string label = o.label.empty() ? fmt::format("(line {})", o.line) : o.label;
  if (o.kind == GoalKind::Calc) return fmt::format("rank {} {} (calc {})", o.rank, label, o.size);
  return fmt::format("rank {} {} ({} {}b {} {} tag {})", o.rank, label, kind_name(o.kind), o.size,
                     o.kind == GoalKind::Send ? "to" : "from", o.peer, o.tag);
}

}  // namespace

// The steps a port has taken, as links to a later step (path-compressed): first_free(s) is the
// first step at or after s not taken, in amortized near-constant time.
class FreeSteps {
 public:
  std::uint32_t first_free(std::uint32_t s) {
    std::uint32_t at = s;
    for (auto it = next_.find(at); it != next_.end(); it = next_.find(at)) at = it->second;
    for (auto it = next_.find(s); it != next_.end() && it->second != at; it = next_.find(s)) {
      s = it->second;
      it->second = at;
    }
    return at;
  }
  void take(std::uint32_t s) { next_[s] = s + 1; }

 private:
  std::unordered_map<std::uint32_t, std::uint32_t> next_;
};

ImportedSchedule import_goal(const std::string& text, const std::string& source) {
  Parser ps(text, source);
  ps.parse();
  const std::uint32_t p = ps.num_ranks_;
  std::vector<GoalOp>& ops = ps.ops_;
  const std::uint32_t n = static_cast<std::uint32_t>(ops.size());
  // The event graph: two events of ~80 bytes per op, an edge per dependency and message.
  require_memory(
      std::uint64_t{n} * 200 + ps.deps_.size() * 16,
      fmt::format("{}: the event graph of {} ops and {} dependencies", source, n, ps.deps_.size()));

  ImportedSchedule out;
  out.format = ScheduleFormat::Goal;
  out.carries_data = false;
  CheckResult match = make_check("match");
  CheckResult deadlock = make_check("deadlock");
  CheckResult flow = make_check("flow");

  // Matching: the k-th send from s to d with tag t pairs with the k-th such receive at d.
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>,
           std::pair<std::vector<std::uint32_t>, std::vector<std::uint32_t>>>
      queues;
  DeadlineTick match_tick;
  for (std::uint32_t i = 0; i < n; ++i) {
    match_tick([&] { return fmt::format("matching the ops of {}", source); });
    const GoalOp& o = ops[i];
    if (o.kind == GoalKind::Send) queues[{o.rank, o.peer, o.tag}].first.push_back(i);
    if (o.kind == GoalKind::Recv) queues[{o.peer, o.rank, o.tag}].second.push_back(i);
  }
  for (auto& [key, q] : queues) {
    std::size_t m = std::min(q.first.size(), q.second.size());
    for (std::size_t k = 0; k < m; ++k) {
      ops[q.first[k]].match = q.second[k];
      ops[q.second[k]].match = q.first[k];
      if (ops[q.first[k]].size != ops[q.second[k]].size) {
        const GoalOp& s = ops[q.first[k]];
        const GoalOp& r = ops[q.second[k]];
        Counterexample c;
        c.nodes = {s.rank, r.rank};
        c.message = fmt::format("{}:{}:{}: {} receives {}b but its send {} (line {}) sends {}b",
                                source, r.line, r.col, op_name(r), r.size, s.label, s.line, s.size);
        add_violation(match, std::move(c));
      }
    }
    for (std::size_t k = m; k < q.first.size(); ++k) {
      const GoalOp& s = ops[q.first[k]];
      Counterexample c;
      c.nodes = {s.rank, s.peer};
      c.message = fmt::format("{}:{}:{}: {} has no matching receive at rank {}", source, s.line,
                              s.col, op_name(s), s.peer);
      add_violation(match, std::move(c));
    }
    for (std::size_t k = m; k < q.second.size(); ++k) {
      const GoalOp& r = ops[q.second[k]];
      Counterexample c;
      c.nodes = {r.peer, r.rank};
      c.message = fmt::format("{}:{}:{}: {} has no matching send at rank {}", source, r.line, r.col,
                              op_name(r), r.peer);
      add_violation(match, std::move(c));
    }
  }

  // The event graph: event 2i is op i's start, 2i+1 its end. Edge (u, v, w): time(v) >= time(u)+w.
  struct Edge {
    std::uint32_t to;
    std::uint32_t w;
  };
  const std::uint32_t ne = 2 * n;
  std::vector<std::vector<Edge>> succ(ne);
  std::vector<std::uint32_t> indeg(ne, 0);
  auto edge = [&](std::uint32_t u, std::uint32_t v, std::uint32_t w) {
    succ[u].push_back({v, w});
    ++indeg[v];
  };
  for (const GoalDep& d : ps.deps_) edge(d.immediate ? 2 * d.b : 2 * d.b + 1, 2 * d.a, 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    const GoalOp& o = ops[i];
    // A send is injected in one step (eager: it does not wait for its receive); a receive ends
    // when its message has arrived and it has started.
    edge(2 * i, 2 * i + 1, o.kind == GoalKind::Send ? 1 : 0);
    if (o.kind == GoalKind::Recv && o.match != kNever) edge(2 * o.match, 2 * i + 1, 1);
  }

  // Earliest times under the single-port machine (docs/formats.md): events in order of their
  // earliest time (Kahn's order with a min-heap); a matched receive's end is its transfer's step,
  // placed at the first step at or after it at which the sender's send port and the receiver's
  // receive port are both free (a rank whose sends wait for nothing does not send them all in one
  // step: its port serializes them, as LogGOPSim's NIC does). An unmatched receive never ends: its
  // end and everything after it stay at kNever.
  std::vector<std::uint32_t> time(ne, 0);
  std::vector<bool> never(ne, false);
  for (std::uint32_t i = 0; i < n; ++i)
    if (ops[i].kind == GoalKind::Recv && ops[i].match == kNever) never[2 * i + 1] = true;
  std::vector<std::uint32_t> order;
  order.reserve(ne);
  std::vector<std::uint32_t> left = indeg;
  using Ready = std::pair<std::uint32_t, std::uint32_t>;  // (time, event)
  std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> ready;
  for (std::uint32_t v = 0; v < ne; ++v)
    if (left[v] == 0) ready.push({0, v});
  std::vector<FreeSteps> send_busy(p), recv_busy(p);
  DeadlineTick tick;
  auto where = [&] { return fmt::format("judging {} ({} ops)", source, n); };
  while (!ready.empty()) {
    tick(where);
    std::uint32_t u = ready.top().second;
    ready.pop();
    order.push_back(u);
    const GoalOp& o = ops[u / 2];
    if (u % 2 == 1 && o.kind == GoalKind::Recv && o.match != kNever && !never[u]) {
      auto& sb = send_busy[ops[o.match].rank];
      auto& rb = recv_busy[o.rank];
      // The first step free on both ports: each port jumps over its taken steps at once (a rank
      // whose sends wait for nothing fills its port's steps one after another; stepping through
      // them one by one made a file of n such sends take n^2 / 2 steps to judge).
      std::uint32_t s = std::max<std::uint32_t>(time[u], 1);
      for (;;) {
        s = sb.first_free(s);
        std::uint32_t r = rb.first_free(s);
        if (r == s) break;
        s = r;
      }
      sb.take(s);
      rb.take(s);
      time[u] = s;
    }
    for (const Edge& e : succ[u]) {
      if (never[u])
        never[e.to] = true;
      else
        time[e.to] = std::max(time[e.to], time[u] + e.w);
      if (--left[e.to] == 0) ready.push({time[e.to], e.to});
    }
  }
  if (order.size() < ne) {
    // Every event left has a predecessor left: walk back from one until an event repeats.
    std::vector<std::vector<std::uint32_t>> pred(ne);
    for (std::uint32_t u = 0; u < ne; ++u)
      if (left[u] > 0)
        for (const Edge& e : succ[u])
          if (left[e.to] > 0) pred[e.to].push_back(u);
    std::uint32_t v = 0;
    while (left[v] == 0) ++v;
    std::vector<std::uint32_t> pos(ne, kNever), walk;
    while (pos[v] == kNever) {
      pos[v] = static_cast<std::uint32_t>(walk.size());
      walk.push_back(v);
      std::uint32_t next = kNever;
      for (std::uint32_t u : pred[v])
        if (left[u] > 0) {
          next = u;
          break;
        }
      v = next;
    }
    std::vector<std::uint32_t> cyc(walk.begin() + pos[v], walk.end());
    std::reverse(cyc.begin(), cyc.end());  // in waiting order: each event waits for the one before
    std::string msg;
    std::vector<NodeId> nodes;
    for (std::uint32_t e : cyc) {
      const GoalOp& o = ops[e / 2];
      msg += fmt::format("{}{} of {} (line {})", msg.empty() ? "" : " -> ", e % 2 ? "end" : "start",
                         op_name(o), o.line);
      if (nodes.empty() || nodes.back() != o.rank) nodes.push_back(o.rank);
    }
    std::uint32_t blocked = 0;
    for (std::uint32_t i = 0; i < n; ++i) blocked += left[2 * i + 1] > 0;
    Counterexample c;
    c.nodes = nodes;
    c.message = fmt::format(
        "dependency cycle (each event waits for the one before it, the first for the last): {}; "
        "{} ops can never complete",
        msg, blocked);
    add_violation(deadlock, std::move(c));
  }
  auto done = [&](std::uint32_t ev) { return left[ev] == 0 && !never[ev]; };

  // The Trace: one transfer per matched pair that happens, at step = its receive's end (>= 1).
  Trace& t = out.trace;
  t.model_file = source;
  t.model_name = source;
  t.collective = Collective::Allreduce;  // unused: the postcondition is not checked
  t.nodup_claimed = false;
  t.topology = Topology::parse(fmt::format("complete:{}", p));
  t.port = PortModel::Single;
  t.domain = make_domain(DomainKind::Exact, p, 1, 1);
  t.initial_input.assign(p, Buffer{});
  t.final_output.assign(p, Buffer{});
  std::vector<std::uint32_t> recvs;
  for (std::uint32_t i = 0; i < n; ++i)
    if (ops[i].kind == GoalKind::Recv && ops[i].match != kNever && done(2 * i + 1) &&
        done(2 * ops[i].match))
      recvs.push_back(i);
  std::sort(recvs.begin(), recvs.end(), [&](std::uint32_t a, std::uint32_t b) {
    return std::tie(time[2 * a + 1], ops[ops[a].match].line) <
           std::tie(time[2 * b + 1], ops[ops[b].match].line);
  });
  for (std::uint32_t r : recvs) {
    const GoalOp& s = ops[ops[r].match];
    Transfer x{};
    x.step = time[2 * r + 1];
    x.src = s.rank;
    x.dst = ops[r].rank;
    x.payload_begin = 0;
    x.payload_len = 0;
    x.line = static_cast<std::uint16_t>(std::min<std::uint32_t>(s.line, 65535));
    t.transfers.push_back(x);
  }
  t.compute_stats();

  // Information flow over the event graph (requires, irequires, messages): for every event, the
  // ranks with an op it depends on (bit sets of p bits); from them, which rank's ops some op of
  // which rank depends on, and which ranks have one op that depends on every rank.
  if (deadlock.verdict == Verdict::Pass) {
    auto reach = std::make_shared<GoalReach>();
    reach->p = p;
    if (static_cast<std::uint64_t>(p) * ne <= kFlowBitBudget) {
      const std::uint32_t words = (p + 63) / 64;
      std::vector<std::uint64_t> bits(static_cast<std::size_t>(ne) * words, 0);
      for (std::uint32_t i = 0; i < n; ++i)
        bits[static_cast<std::size_t>(2 * i) * words + ops[i].rank / 64] |= std::uint64_t{1}
                                                                            << (ops[i].rank % 64);
      for (std::uint32_t u : order) {
        if (never[u]) continue;
        for (const Edge& e : succ[u])
          for (std::uint32_t w = 0; w < words; ++w)
            bits[static_cast<std::size_t>(e.to) * words + w] |=
                bits[static_cast<std::size_t>(u) * words + w];
      }
      reach->words = words;
      reach->heard.assign(static_cast<std::size_t>(p) * words, 0);
      reach->hears_all.assign(p, p == 1);
      for (std::uint32_t v = 0; v < ne; ++v) {
        if (never[v]) continue;
        std::uint32_t r = ops[v / 2].rank;
        std::uint32_t cnt = 0;
        for (std::uint32_t w = 0; w < words; ++w) {
          std::uint64_t b = bits[static_cast<std::size_t>(v) * words + w];
          reach->heard[static_cast<std::size_t>(r) * words + w] |= b;
          cnt += static_cast<std::uint32_t>(__builtin_popcountll(b));
        }
        if (cnt == p) reach->hears_all[r] = true;
      }
      for (std::uint32_t r = 0; r < p; ++r)  // a rank with no op still "hears" itself
        reach->heard[static_cast<std::size_t>(r) * words + r / 64] |= std::uint64_t{1} << (r % 64);
      reach->computed = true;
    }
    out.goal_reach = reach;
  }

  if (match.verdict == Verdict::Fail)
    match.note = "receives are matched to sends by (source, destination, tag) in order";
  deadlock.note =
      "steps: the earliest schedule; a send takes one step from its start (eager), a receive "
      "ends when it has started and its message has arrived";
  out.congestion_note = "GOAL leaves link contention to the simulator (LogGOPSim's LogGP model)";
  if (!out.goal_reach) {
    flow.verdict = Verdict::NotChecked;
    flow.note = "the schedule deadlocks (see deadlock)";
  }
  out.checks = {match, deadlock, flow};
  if (out.goal_reach) judge_goal_flow(out, "", std::nullopt);
  return out;
}

void judge_goal_flow(ImportedSchedule& s, const std::string& collective,
                     std::optional<std::uint32_t> root) {
  auto it = std::find_if(s.checks.begin(), s.checks.end(),
                         [](const CheckResult& r) { return r.name == "flow"; });
  if (s.format != ScheduleFormat::Goal || it == s.checks.end())
    throw UsageError("--collective names the collective of a GOAL file; other formats declare it");
  enum class Q { Default, ToRoot, FromRoot, Everyone, AllPairs, Prefix };
  Q q = Q::Default;
  std::string what;
  if (collective.empty()) {
    q = Q::Default;
  } else if (collective == "reduce" || collective == "gather" || collective == "incast") {
    q = Q::ToRoot;
  } else if (collective == "broadcast" || collective == "scatter" || collective == "outcast") {
    q = Q::FromRoot;
  } else if (collective == "allreduce" || collective == "barrier" || collective == "allgather") {
    q = Q::Everyone;
  } else if (collective == "alltoall" || collective == "reduce-scatter") {
    q = Q::AllPairs;
  } else if (collective == "scan") {
    q = Q::Prefix;
  } else {
    throw UsageError(
        "--collective: GOAL flow knows broadcast, scatter, outcast, reduce, gather, "
        "incast, allreduce, allgather, barrier, alltoall, reduce-scatter and scan, "
        "not '" +
        printable(collective, 40) + "'");
  }
  CheckResult flow = make_check("flow");
  if (!s.goal_reach) {  // a deadlock: nothing to ask
    flow.verdict = Verdict::NotChecked;
    flow.note = "the schedule deadlocks (see deadlock)";
    *it = flow;
    return;
  }
  const GoalReach& g = *s.goal_reach;
  const std::uint32_t p = g.p;
  if (root && *root >= p)
    throw UsageError(
        fmt::format("--source {} is not a rank of the GOAL file (0..{})", *root, p - 1));
  const std::uint32_t R = root.value_or(0);
  if (!g.computed) {
    flow.verdict = Verdict::Unknown;
    flow.note = fmt::format("not decided: ranks x events is over collv's budget of {} bits",
                            kFlowBitBudget);
    *it = flow;
    return;
  }
  // hears(r, s): some op of r depends on an op of s (or r == s).
  auto hears = [&](std::uint32_t r, std::uint32_t src) {
    return (g.heard[static_cast<std::size_t>(r) * g.words + src / 64] >> (src % 64)) & 1;
  };
  auto list = [](const std::vector<std::uint32_t>& v) {
    std::string o;
    for (std::size_t k = 0; k < v.size() && k < 16; ++k)
      o += fmt::format("{}{}", k ? ", " : "", v[k]);
    if (v.size() > 16) o += fmt::format(", ... ({} in all)", v.size());
    return o;
  };
  auto deaf_to = [&](std::uint32_t src) {  // ranks that never depend on src
    std::vector<std::uint32_t> v;
    for (std::uint32_t r = 0; r < p; ++r)
      if (!hears(r, src)) v.push_back(r);
    return v;
  };
  auto unheard_by = [&](std::uint32_t r) {  // ranks r never depends on
    std::vector<std::uint32_t> v;
    for (std::uint32_t src = 0; src < p; ++src)
      if (!hears(r, src)) v.push_back(src);
    return v;
  };
  auto fail = [&](std::vector<std::uint32_t> nodes, std::string msg) {
    Counterexample c;
    c.nodes.assign(nodes.begin(), nodes.end());
    c.message = std::move(msg);
    add_violation(flow, std::move(c));
  };
  const std::string via = "(through requires, irequires and messages)";
  switch (q) {
    case Q::FromRoot: {
      auto v = deaf_to(R);
      if (!v.empty())
        fail(v, fmt::format("{} of {} ranks never depend on root {} {}: rank(s) {}", v.size(), p, R,
                            via, list(v)));
      what = fmt::format("{} from root {}: every rank depends on the root", collective, R);
      break;
    }
    case Q::ToRoot: {
      auto v = unheard_by(R);
      if (!v.empty())
        fail({R}, fmt::format("root {} never depends on {} of {} ranks {}: rank(s) {}", R, v.size(),
                              p, via, list(v)));
      what = fmt::format("{} to root {}: the root depends on every rank", collective, R);
      break;
    }
    case Q::Everyone: {
      for (std::uint32_t r = 0; r < p; ++r) {
        if (g.hears_all[r]) continue;
        auto v = unheard_by(r);
        fail({r}, v.empty()
                      ? fmt::format("rank {} has no op that depends on every rank's ops (each "
                                    "rank reaches some op of it, none reaches one op)",
                                    r)
                      : fmt::format("rank {} never depends on rank(s) {} {}", r, list(v), via));
      }
      what = collective + ": every rank has an op that depends on every rank's ops";
      break;
    }
    case Q::AllPairs: {
      for (std::uint32_t r = 0; r < p; ++r) {
        auto v = unheard_by(r);
        if (!v.empty())
          fail({r}, fmt::format("rank {} never depends on rank(s) {} {}", r, list(v), via));
      }
      what = collective + ": every rank depends on every rank";
      break;
    }
    case Q::Prefix: {
      for (std::uint32_t r = 0; r < p; ++r) {
        std::vector<std::uint32_t> v;
        for (std::uint32_t src = 0; src < r; ++src)
          if (!hears(r, src)) v.push_back(src);
        if (!v.empty())
          fail({r}, fmt::format("rank {} never depends on rank(s) {} {}", r, list(v), via));
      }
      what = "scan: every rank depends on every lower rank";
      break;
    }
    case Q::Default: {
      // Some rank reaches every rank (a broadcast shape) or every rank reaches some rank (a
      // reduce shape); with -s, that rank is the root.
      std::optional<std::uint32_t> found;
      bool out_shape = false;
      for (std::uint32_t r = root.value_or(0); r < (root ? R + 1 : p) && !found; ++r) {
        if (deaf_to(r).empty())
          found = r, out_shape = true;
        else if (unheard_by(r).empty())
          found = r;
      }
      if (!found) {
        if (root) {
          auto a = deaf_to(R), b = unheard_by(R);
          fail({R},
               fmt::format("root {} neither reaches every rank ({} never depend on it: {}) nor "
                           "is reached by every rank (it never depends on {})",
                           R, a.size(), list(a), list(b)));
        } else {
          std::uint32_t best = 0;
          std::size_t most = 0;
          for (std::uint32_t r = 0; r < p; ++r) {
            std::size_t k = p - deaf_to(r).size();
            if (k > most) most = k, best = r;
          }
          auto a = deaf_to(best);
          fail(a, fmt::format("no rank reaches every rank and no rank is reached by every rank {}; "
                              "rank {} reaches the most, {} of {} (never: {})",
                              via, best, most, p, list(a)));
        }
      } else {
        what = fmt::format("rank {} {}", *found,
                           out_shape ? "reaches every rank" : "is reached by every rank");
      }
      std::string asked =
          root ? fmt::format("root {} reaches every rank or every rank reaches it", R)
               : "some rank reaches every rank, or every rank reaches some rank";
      what = "GOAL names no collective (give --collective): " + asked +
             (what.empty() ? std::string() : "; " + what);
      break;
    }
  }
  flow.note = "question asked: " + what;
  *it = flow;
}

}  // namespace collv
