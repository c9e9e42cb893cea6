// Verification partitioned over processes (see partition.hpp and docs/partitioned.md): the rounds
// of a partitioned run, and the checks combined at rank 0.
#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "exec/executor.hpp"
#include "exec/timing.hpp"
#include "util/read_file.hpp"
#include "util/text.hpp"
#include "verify/partition.hpp"

namespace collv {

namespace {

// ---- bytes on the wire: little records of fixed-width numbers ----

class Writer {
 public:
  template <class T>
  void put(T x) {
    char b[sizeof(T)];
    std::memcpy(b, &x, sizeof(T));
    s_.append(b, sizeof(T));
  }
  void put_str(const std::string& x) {
    put<std::uint32_t>(static_cast<std::uint32_t>(x.size()));
    s_ += x;
  }
  std::string& str() { return s_; }

 private:
  std::string s_;
};

// The same records written in place, into a buffer sized beforehand (a round's exchange is
// packed straight into the one send buffer, every process's part at its offset).
class Cursor {
 public:
  explicit Cursor(char* p) : p_(p) {}
  template <class T>
  void put(T x) {
    std::memcpy(p_, &x, sizeof(T));
    p_ += sizeof(T);
  }
  const char* at() const { return p_; }

 private:
  char* p_;
};

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  template <class T>
  T get() {
    COLLV_ASSERT(pos_ + sizeof(T) <= s_.size());
    T x;
    std::memcpy(&x, s_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return x;
  }
  std::string get_str() {
    auto n = get<std::uint32_t>();
    COLLV_ASSERT(pos_ + n <= s_.size());
    std::string x(s_.substr(pos_, n));
    pos_ += n;
    return x;
  }
  bool done() const { return pos_ >= s_.size(); }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;
};

// Items travel by value: a fingerprint is its 64-bit sum; an exact or ordered item (an id into
// this process's table) as its contributions, interned again where it arrives.
template <class W>
void put_buffer(W& w, const Domain& d, const Buffer& b) {
  w.template put<std::uint32_t>(b.size());
  for (Item it : b) {
    if (!d.inspectable()) {
      w.template put<std::uint64_t>(it);
      continue;
    }
    const auto terms = d.terms(it);  // a copy: a view is kept by the domain until it ends
    w.template put<std::uint32_t>(static_cast<std::uint32_t>(terms.size()));
    for (std::uint32_t x : terms) w.template put<std::uint32_t>(x);
  }
}

Buffer get_buffer(Reader& r, Domain& d) {
  Buffer b;
  auto n = r.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < n; ++i) {
    if (!d.inspectable()) {
      b.push_back(r.get<std::uint64_t>());
      continue;
    }
    auto k = r.get<std::uint32_t>();
    std::vector<std::uint32_t> terms(k);
    for (auto& x : terms) x = r.get<std::uint32_t>();
    b.push_back(k == 0 ? Item{0} : d.from_terms(std::move(terms)));
  }
  return b;
}

enum Record : std::uint8_t { kMessage = 1, kBound = 2, kStep = 3 };

// How many more sends a node may make each round (SliceMachine::set_horizon).
constexpr std::uint32_t kPace = 1;

// An error thrown on one process becomes the same error on every process (the lowest rank's), so
// they all leave the run together: the collective calls never wait for a process that left.
struct ErrorState {
  // 0 none, 1 LimitError, 2 UsageError (a ModelError's text included), 3 InternalError
  int kind = 0;
  std::string what;
  void capture(const std::exception_ptr& e) {
    try {
      std::rethrow_exception(e);
    } catch (const LimitError& x) {
      kind = 1, what = x.what();
    } catch (const UsageError& x) {
      kind = 2, what = x.what();
    } catch (const ModelError& x) {
      kind = 2, what = x.what();
    } catch (const InternalError& x) {
      kind = 3, what = x.what();
    } catch (const std::bad_alloc&) {
      kind = 1, what = "out of memory";
    } catch (const std::exception& x) {
      kind = 2, what = x.what();
    }
  }
};

// Some process has an error (`mine` may be none): every process throws the lowest rank's.
[[noreturn]] void raise_shared_error(Partition& part, const ErrorState& mine) {
  Writer w;
  w.put<std::int32_t>(mine.kind);
  w.put_str(mine.what);
  for (const auto& s : part.allgather(w.str())) {
    Reader r(s);
    auto kind = r.get<std::int32_t>();
    std::string what = r.get_str();
    if (kind == 1) throw LimitError(what);
    if (kind == 2) throw UsageError(what);
    if (kind == 3) throw InternalError(what);
  }
  throw InternalError("internal error: a process reported an error it did not send");
}

void share_error(Partition& part, const ErrorState& mine) {
  std::vector<std::uint64_t> any{mine.kind != 0 ? 1u : 0u};
  part.allreduce(any, false);
  if (any[0] != 0) raise_shared_error(part, mine);
}

// Runs f on this process; if it throws a user-facing error here or on any other process, every
// process throws the lowest rank's.
template <class F>
void together(Partition& part, F&& f) {
  ErrorState e;
  try {
    f();
  } catch (...) {
    e.capture(std::current_exception());
  }
  share_error(part, e);
}

class PartitionDriver : public SliceDriver {
 public:
  PartitionDriver(Partition& part, const Topology& t) : part_(part), topo_(t) {}
  NodeId lo(std::uint32_t p) const override { return part_.slice_lo(p, part_.rank()); }
  NodeId hi(std::uint32_t p) const override { return part_.slice_lo(p, part_.rank() + 1); }

  StreamTotals drive(SliceMachine& m, Trace& tr) override {
    const auto p = static_cast<std::uint32_t>(topo_.num_processors());
    Domain& dom = *tr.domain;
    const int k = part_.size();
    // Transfers that arrived here and wait for their sender's bound, per sending process: (id
    // there, id here), 8 bytes each (a hash map took about 40), kept in the order of the ids
    // there (a sender numbers its remote sends in the order it packs them, so they arrive in
    // order), found by binary search; answered ones are marked and dropped from the front.
    struct Waiting {
      std::vector<std::pair<std::uint32_t, std::uint32_t>> q;
      std::size_t head = 0;
    };
    std::vector<Waiting> arrived(k);
    auto wait_bound = [&](int r, std::uint32_t there, std::uint32_t here) {
      auto& w = arrived[r];
      if (w.q.size() == w.head || w.q.back().first < there) {
        w.q.emplace_back(there, here);
      } else {  // out of order (not expected): keep the list sorted
        auto at = std::upper_bound(w.q.begin() + static_cast<std::ptrdiff_t>(w.head), w.q.end(),
                                   std::make_pair(there, kNoTransfer));
        w.q.insert(at, {there, here});
      }
    };
    auto take_bound = [&](int r, std::uint32_t there) {
      auto& w = arrived[r];
      auto at = std::lower_bound(w.q.begin() + static_cast<std::ptrdiff_t>(w.head), w.q.end(),
                                 std::make_pair(there, std::uint32_t{0}));
      COLLV_ASSERT(at != w.q.end() && at->first == there && at->second != kNoTransfer);
      const std::uint32_t here = at->second;
      at->second = kNoTransfer;  // answered
      while (w.head < w.q.size() && w.q[w.head].second == kNoTransfer) ++w.head;
      if (w.head == w.q.size()) {
        w.q.clear();
        w.head = 0;
      } else if (w.head > 4096 && 2 * w.head > w.q.size()) {
        w.q.erase(w.q.begin(), w.q.begin() + static_cast<std::ptrdiff_t>(w.head));
        w.head = 0;
      }
      return here;
    };
    StreamTiming* st = nullptr;
    together(part_, [&] {
      m.start();
      st = &m.timing();
    });
    // Packs what goes to the other processes (messages, the senders' bounds, the receivers'
    // steps) into one send buffer, process r's part counts[r] bytes at its offset (each part's
    // size is counted first, so the records are written once, in place); returns how many
    // records.
    auto pack = [&](std::string& send, std::vector<std::size_t>& counts) {
      counts.assign(k, 0);
      for (const auto& x : m.outbox()) {
        std::size_t b = 17 + 4;  // the record's fields and the buffer's length
        for (Item it : x.payload) b += dom.inspectable() ? 4 + 4 * dom.weight(it) : 8;
        counts[part_.owner(x.dst, p)] += b;
      }
      for (const auto& b : st->bounds_out()) counts[part_.owner(b.node, p)] += 9;
      for (const auto& x : st->steps_out()) counts[part_.owner(x.node, p)] += 9;
      std::size_t total = 0;
      std::vector<Cursor> w;
      w.reserve(k);
      for (int r = 0; r < k; ++r) total += counts[r];
      send = part_.buffer();
      send.resize(total);
      total = 0;
      for (int r = 0; r < k; ++r) {
        w.emplace_back(send.data() + total);
        total += counts[r];
      }
      std::uint64_t n = 0;
      for (auto& x : m.outbox()) {
        Cursor& o = w[part_.owner(x.dst, p)];
        o.put<std::uint8_t>(kMessage);
        o.put<std::uint32_t>(x.tid);
        o.put<std::uint32_t>(x.src);
        o.put<std::uint32_t>(x.dst);
        o.put<std::uint16_t>(x.len);
        o.put<std::uint16_t>(x.line);
        put_buffer(o, dom, x.payload);
        ++n;
      }
      std::vector<RemoteSend>().swap(m.outbox());  // its memory back before the exchange
      for (const auto& b : st->bounds_out()) {
        Cursor& o = w[part_.owner(b.node, p)];
        o.put<std::uint8_t>(kBound);
        o.put<std::uint32_t>(b.tid);
        o.put<std::uint32_t>(b.value);
        ++n;
      }
      st->bounds_out().clear();
      for (const auto& x : st->steps_out()) {
        Cursor& o = w[part_.owner(x.node, p)];
        o.put<std::uint8_t>(kStep);
        o.put<std::uint32_t>(x.tid);
        o.put<std::uint32_t>(x.value);
        ++n;
      }
      st->steps_out().clear();
      total = 0;
      for (int r = 0; r < k; ++r) {  // every part filled exactly
        total += counts[r];
        COLLV_ASSERT(w[r].at() == send.data() + total);
      }
      return n;
    };
    // Messages first, then timing, as each process packed them (a bound may follow its message
    // in the same round).
    auto unpack = [&](const Partition::Received& in) {
      for (int r = 0; r < k; ++r) {
        Reader rd(in.from(r));
        while (!rd.done()) {
          auto kind = rd.get<std::uint8_t>();
          auto id = rd.get<std::uint32_t>();
          if (kind == kMessage) {
            auto src = rd.get<std::uint32_t>();
            auto dst = rd.get<std::uint32_t>();
            auto len = rd.get<std::uint16_t>();
            auto line = rd.get<std::uint16_t>();
            Buffer b = get_buffer(rd, dom);
            std::uint32_t tid = 0;
            m.deliver(src, dst, len, line, id, std::move(b), tid);
            wait_bound(r, id, tid);
          } else if (kind == kBound) {
            auto v = rd.get<std::uint32_t>();
            st->set_bound(take_bound(r, id), v);
          } else {
            COLLV_ASSERT(kind == kStep);
            st->set_step(id, rd.get<std::uint32_t>());
          }
        }
      }
    };
    // An error on this process (a limit, a refused send) stops its work and goes to the others
    // in the next exchange (the first of its sums), where every process throws the lowest
    // rank's: no collective operation of its own, and none waits for a process that left.
    ErrorState err;
    auto local = [&](auto&& f) {
      if (err.kind != 0) return;
      try {
        f();
      } catch (...) {
        err.capture(std::current_exception());
      }
    };
    // One exchange of the records packed in `out`, and `sums` summed over the processes
    // (returned): the round's one MPI_Iallgather and, when a byte moves, one MPI_Ialltoallv.
    auto exchange = [&](std::string& out, std::vector<std::size_t>& counts,
                        std::vector<std::uint64_t> sums) {
      sums.insert(sums.begin(), err.kind != 0 ? 1u : 0u);
      if (err.kind != 0) {
        out.clear();
        counts.assign(k, 0);
      }
      Partition::Received in = part_.exchange(out, counts, sums);
      if (sums[0] != 0) raise_shared_error(part_, err);
      return std::make_pair(std::move(in), std::move(sums));
    };
    // Timing-only rounds until no process has a bound or step to send: each settles one more
    // link of the chains of sends between slices, so the windows of waiting transfers stay as
    // small as one process's (a chain waiting a round per link made them grow with the run).
    // `failed` (this process's run failed) travels in the first exchange; returns whether any
    // process's had, after that exchange's records are read.
    auto settle = [&](bool at_end, bool failed) {
      for (;;) {
        std::string out;
        std::vector<std::size_t> counts(k, 0);
        std::uint64_t sent = 0;
        local([&] {
          if (at_end)
            st->finish();
          else
            st->resolve(true);
          sent = pack(out, counts);
        });
        auto got = exchange(out, counts, {sent, failed ? 1u : 0u});
        const Partition::Received& in = got.first;  // no structured binding: a lambda reads it
        const std::vector<std::uint64_t>& g = got.second;
        failed = false;
        if (g[1] == 0) return g[2] != 0;
        local([&] { unpack(in); });
        part_.give_back(std::move(got.first.data));
        if (g[2] != 0) return true;
      }
    };
    // The run: each process runs its nodes until they finish, wait or reach the horizon (at
    // most `horizon` sends each), then the messages between slices are exchanged; it ends when
    // no process sent one and none holds a node at the horizon (or one failed). The horizon keeps
    // the slices within a step or two of each other, as one process's lowest-point-first order
    // keeps its nodes; it grows by at least a 64th a round, so a run that sends for ever
    // reaches --max-steps (100,000) in about 750 rounds.
    std::uint32_t horizon = kPace;
    m.set_horizon(horizon);
    auto failed_here = [&] { return tr.failure.kind != RunFailure::Kind::None; };
    for (;;) {
      std::string out;
      std::vector<std::size_t> counts(k, 0);
      std::uint64_t sent = 0;
      local([&] {
        m.run_local();
        st->resolve(true);
        sent = pack(out, counts);
      });
      auto got = exchange(out, counts, {sent, failed_here() ? 1u : 0u, m.held()});
      const Partition::Received& in = got.first;
      const std::vector<std::uint64_t>& g = got.second;
      local([&] { unpack(in); });
      part_.give_back(std::move(got.first.data));
      if (g[2] != 0 || (g[1] == 0 && g[3] == 0)) break;
      // What just arrived is received in this round (its receivers run up to their next send and
      // are held there), so its step goes back to its sender in the timing rounds that follow:
      // a transfer between slices waits in the windows for a round, not two.
      local([&] { m.run_receives(); });
      if (settle(false, failed_here())) break;
      horizon = static_cast<std::uint32_t>(std::min<std::uint64_t>(
          std::uint64_t{horizon} + std::max(kPace, horizon / 64), kNoTransfer - 1));
      m.set_horizon(horizon);
    }
    // The timing of what is left (transfers never received take no receive predecessor).
    settle(true, false);
    share_failure(m, tr, p);
    part_.window_bytes = std::max(part_.window_bytes, st->peak_bytes());
    part_.remote_span = std::max<std::uint64_t>(part_.remote_span, st->peak_remote_span());
    // The totals over every process; node 0's output for final-buffers.
    StreamTotals tot;
    std::vector<std::uint64_t> sums{st->issued() - st->arrived(), st->unreceived(),
                                    st->unresolved_here()};
    part_.allreduce(sums, false);
    std::vector<std::uint64_t> steps{st->steps()};
    part_.allreduce(steps, true);
    tot.issued = sums[0];
    tot.unreceived = sums[1];
    tot.unresolved = sums[2];
    tot.steps = static_cast<std::uint32_t>(steps[0]);
    std::vector<std::uint64_t> transfers(tot.steps, 0), items(tot.steps, 0);
    const auto& ps = st->per_step();
    for (std::size_t s = 0; s < ps.size(); ++s) {
      transfers[s] = ps[s].transfers;
      items[s] = ps[s].max_link_items;
    }
    part_.allreduce(transfers, false);
    part_.allreduce(items, true);
    tot.per_step.resize(tot.steps);
    for (std::size_t s = 0; s < tot.steps; ++s) {
      tot.per_step[s].transfers = static_cast<std::uint32_t>(transfers[s]);
      tot.per_step[s].max_link_items = static_cast<std::uint32_t>(items[s]);
      tot.per_step[s].max_link_transfers = transfers[s] > 0 ? 1 : 0;
    }
    return tot;
  }

  // Node 0's final output, for every process (final-buffers), once the outputs are taken. Node 0
  // is the first of its owner's slice; with more processes than nodes that owner need not be
  // rank 0 (at K = 3 on two nodes, rank 0 holds none).
  void share_first_output(Trace& tr) {
    const int first = part_.owner(0, topo_.num_processors());
    Writer w;
    if (part_.rank() == first && !tr.final_output.empty())
      put_buffer(w, *tr.domain, tr.final_output[0]);
    auto all = part_.allgather(w.str());
    Reader r(all[first]);
    if (!all[first].empty()) tr.slice_first_output = get_buffer(r, *tr.domain);
  }

 private:
  // The run's failure, the same on every process: the lowest rank's runtime error or limit, or
  // else the deadlock of the nodes left waiting on all of them (as one process reports it).
  // A self-message never received comes last, as in one process.
  void share_failure(SliceMachine& m, Trace& tr, std::uint32_t p) {
    const RunFailure before = tr.failure;
    m.check_self_messages();
    const RunFailure self = before.kind == RunFailure::Kind::None ? tr.failure : RunFailure{};
    tr.failure = before;
    Writer w;
    w.put<std::int32_t>(static_cast<std::int32_t>(tr.failure.kind));
    w.put_str(tr.failure.message);
    w.put<std::int32_t>(static_cast<std::int32_t>(self.kind));
    w.put_str(self.message);
    w.put<std::uint64_t>(m.unfinished());
    auto waiting = m.waiting();
    w.put<std::uint64_t>(waiting.size());
    for (auto [v, on] : waiting) {
      w.put<std::uint32_t>(v);
      w.put<std::uint32_t>(on);
    }
    SourceLoc at;
    if (!waiting.empty()) at = m.blocked_at(waiting.front().first);
    w.put_str(at.file);
    w.put<std::int32_t>(at.line);
    w.put<std::int32_t>(at.col);
    auto all = part_.allgather(w.str());
    std::uint64_t unfinished = 0;
    std::unordered_map<NodeId, NodeId> waits;
    std::vector<NodeId> order;
    std::optional<SourceLoc> first_at;
    std::optional<RunFailure> failed, self_failed;
    for (const auto& s : all) {
      Reader r(s);
      auto kind = static_cast<RunFailure::Kind>(r.get<std::int32_t>());
      std::string msg = r.get_str();
      if (kind != RunFailure::Kind::None && !failed) {
        failed.emplace();
        failed->kind = kind;
        failed->message = msg;
      }
      auto self_kind = static_cast<RunFailure::Kind>(r.get<std::int32_t>());
      std::string self_msg = r.get_str();
      if (self_kind != RunFailure::Kind::None && !self_failed) {
        self_failed.emplace();
        self_failed->kind = self_kind;
        self_failed->message = self_msg;
      }
      unfinished += r.get<std::uint64_t>();
      auto n = r.get<std::uint64_t>();
      for (std::uint64_t i = 0; i < n; ++i) {
        auto v = r.get<std::uint32_t>();
        waits[v] = r.get<std::uint32_t>();
        order.push_back(v);
      }
      SourceLoc loc;
      loc.file = r.get_str();
      loc.line = r.get<std::int32_t>();
      loc.col = r.get<std::int32_t>();
      if (n > 0 && !first_at) first_at = loc;
    }
    (void)p;
    if (failed) {
      tr.failure = *failed;
    } else if (unfinished > 0) {
      COLLV_ASSERT(!order.empty() && first_at);
      tr.failure = deadlock_failure(
          topo_, std::move(order),
          [&](NodeId v) {
            auto it = waits.find(v);
            return it == waits.end() ? kAllNodes : it->second;
          },
          *first_at);
    } else if (self_failed) {
      tr.failure = *self_failed;
    }
  }

  Partition& part_;
  const Topology& topo_;
};

// ---- check results on the wire (JSON) ----

nlohmann::json to_json(const CheckResult& c) {
  nlohmann::json j;
  j["name"] = c.name;
  j["verdict"] = static_cast<int>(c.verdict);
  j["count"] = c.violation_count;
  j["note"] = c.note;
  j["order_only"] = c.order_only;
  j["after_stop"] = c.after_stop;
  auto& vs = j["violations"] = nlohmann::json::array();
  for (const auto& v : c.violations) {
    nlohmann::json x;
    x["invariant"] = v.invariant;
    if (v.step) x["step"] = *v.step;
    x["nodes"] = v.nodes;
    x["transfers"] = v.transfers;
    auto& bs = x["buffers"] = nlohmann::json::array();
    for (const auto& b : v.buffers) bs.push_back({b.node, b.what, b.contents});
    x["message"] = v.message;
    vs.push_back(std::move(x));
  }
  return j;
}

CheckResult from_json(const nlohmann::json& j) {
  CheckResult c;
  c.name = j["name"].get<std::string>();
  c.verdict = static_cast<Verdict>(j["verdict"].get<int>());
  c.violation_count = j["count"].get<std::size_t>();
  c.note = j["note"].get<std::string>();
  c.order_only = j["order_only"].get<bool>();
  c.after_stop = j["after_stop"].get<bool>();
  for (const auto& x : j["violations"]) {
    Counterexample v;
    v.invariant = x["invariant"].get<std::string>();
    if (x.contains("step")) v.step = x["step"].get<std::uint32_t>();
    v.nodes = x["nodes"].get<std::vector<NodeId>>();
    v.transfers = x["transfers"].get<std::vector<std::uint32_t>>();
    for (const auto& b : x["buffers"])
      v.buffers.push_back({b[0].get<NodeId>(), b[1].get<std::string>(), b[2].get<std::string>()});
    v.message = x["message"].get<std::string>();
    c.violations.push_back(std::move(v));
  }
  return c;
}

// One per-node check over every slice, in rank order (the slices are in node order): what
// check_trace gives on the whole run. `parts` are the results of each process for its nodes.
CheckResult combine(const std::vector<CheckResult>& parts, std::size_t max_violations) {
  CheckResult r = parts.front();
  // A verdict every slice shares that is neither pass nor fail (a run stopped at a limit: the
  // same note everywhere) stands as it is.
  if (r.verdict != Verdict::Pass && r.verdict != Verdict::Fail) return r;
  r.violations.clear();
  r.violation_count = 0;
  bool fail = false, order_only = true;
  std::string fail_note;
  for (const auto& c : parts) {
    if (c.verdict != Verdict::Fail) continue;
    fail = true;
    order_only = order_only && c.order_only;
    if (fail_note.empty()) fail_note = c.note;
    r.violation_count += c.violation_count;
    for (const auto& v : c.violations)
      if (r.violations.size() < max_violations) r.violations.push_back(v);
  }
  if (fail) {
    r.verdict = Verdict::Fail;
    r.order_only = order_only;
    r.note = order_only ? fail_note : "";
  }
  return r;
}

std::vector<CheckResult> combine_at_root(std::vector<CheckResult> mine,
                                         const std::vector<std::string>& names, Partition& part) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& c : mine)
    if (std::find(names.begin(), names.end(), c.name) != names.end()) j.push_back(to_json(c));
  auto all = part.allgather(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  const std::size_t max_violations = CheckOptions{}.max_violations;
  for (auto& c : mine) {
    if (std::find(names.begin(), names.end(), c.name) == names.end()) continue;
    std::vector<CheckResult> parts;
    for (const auto& s : all)
      for (const auto& x : nlohmann::json::parse(s))
        if (x["name"].get<std::string>() == c.name) parts.push_back(from_json(x));
    c = combine(parts, max_violations);
  }
  return mine;
}

// The model file's text as this process reads it now (the model was parsed from it at start-up);
// 0 when it cannot be read any more.
std::uint64_t model_text_hash(const Model& m) {
  try {
    return fnv1a(read_file_bounded(m.file, kMaxModelBytes, "a model file"));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

std::optional<std::string> partition_agree_arguments(Partition& part,
                                                     const std::vector<std::string>& args) {
  auto e = argument_disagreement(part.allgather(encode_arguments(args)));
  if (e) part.settled = true;
  return e;
}

void partition_checkpoint(Partition& part, const std::string& run) {
  COLLV_ASSERT(!part.settled);
  RankStatus mine;
  mine.run = run;
  auto d = status_disagreement(part.allgather(encode_status(mine)));
  if (!d) return;
  part.settled = true;
  throw PartitionLeft(d->message, d->code);
}

std::optional<Disagreement> partition_leave(Partition& part, const RankStatus& mine) {
  if (part.settled) return std::nullopt;
  part.settled = true;
  return status_disagreement(part.allgather(encode_status(mine)));
}

Trace run_model_partitioned(const Model& m, const Topology& t, const RunOptions& opts,
                            Partition& part) {
  // Every process is here, at the start of this run, or one has left (a file only it could not
  // read): then all of them stop now, rather than wait in the rounds for the one that left.
  // The model's text is compared too: the same file name with other contents on one host would
  // mix two programs in one run (a wrong verdict). Topology files need no such hash: their links
  // declare bandwidths, which a partitioned (streamed) run refuses.
  partition_checkpoint(
      part,
      fmt::format("{} ({}) on {} ({} domain, count {}, root {}, shift {}; model text #{:016x})",
                  m.header.name, m.file, t.spec(), domain_name(opts.domain), opts.count, opts.root,
                  opts.shift, model_text_hash(m)));
  PartitionDriver d(part, t);
  // A partitioned run streams by itself (--stream auto): the trace it would keep is spread over
  // the processes, which is what they are for. Where a streamed run does not apply, the refusal
  // says why.
  RunOptions ro = opts;
  if (ro.stream == RunOptions::Stream::Auto) ro.stream = RunOptions::Stream::On;
  // The setup (requires, claims, estimates, refusals) is the same on every process, so its
  // errors are too; the rounds make an error of one process everyone's.
  Trace tr;
  try {
    tr = run_model_sliced(m, t, ro, d);
  } catch (const StreamRefused& e) {
    if (opts.stream != RunOptions::Stream::Auto) throw;
    throw StreamRefused(
        fmt::format("partitioned verify follows streamed runs only, and {}", e.what()));
  }
  d.share_first_output(tr);
  // --stream auto runs a streamed run again with its trace kept when the transfer checks cannot
  // be judged without it (run_model); a partitioned run cannot, and says so rather than differ.
  // A run stopped by a runtime error or a limit has its verdict already (the stored run would
  // stop at the same place and give the same one); its unreceived transfers are the stop's.
  const bool stopped = tr.failure.kind == RunFailure::Kind::RuntimeError ||
                       tr.failure.kind == RunFailure::Kind::OpLimit ||
                       tr.failure.kind == RunFailure::Kind::StepLimit;
  if (opts.stream == RunOptions::Stream::Auto && !tr.stream_incomplete.empty() && !stopped)
    throw StreamRefused(fmt::format(
        "partitioned verify follows streamed runs only, and collv would run this one again with "
        "its trace kept ({}); use --stream on to judge it streamed",
        tr.stream_incomplete));
  return tr;
}

std::vector<CheckResult> check_partitioned(const Trace& t, Partition& part) {
  std::vector<CheckResult> mine;
  together(part, [&] { mine = check_trace(t, CheckOptions{}); });
  return combine_at_root(std::move(mine), {"postcondition", "final-buffers"}, part);
}

std::pair<CheckResult, CheckResult> node_checks_partitioned(const Trace& t, Partition& part) {
  std::vector<CheckResult> mine;
  together(part, [&] {
    mine = {check_postcondition(t, CheckOptions{}), check_final_buffers(t, CheckOptions{})};
  });
  auto r = combine_at_root(std::move(mine), {"postcondition", "final-buffers"}, part);
  return {r[0], r[1]};
}

}  // namespace collv
