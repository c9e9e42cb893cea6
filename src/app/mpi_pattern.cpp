// `collv mpi --model`: the message pattern of a run (per rank and call, the receivers, order and
// sizes of the messages it posted, logged by the harness's UCX interposer) against the model's
// sends in program order (docs/mpi.md, "Message patterns").
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "app/mpi_internal.hpp"
#include "util/error.hpp"

namespace fs = std::filesystem;

namespace collv {

namespace mpi_detail {

bool read_sent_line(const nlohmann::json& j, std::string& why, SentLine* into) {
  const auto to = j.find("to"), bytes = j.find("bytes"), lost = j.find("lost");
  if (to == j.end() || bytes == j.end() || lost == j.end() || !to->is_array() ||
      !bytes->is_array() || !lost->is_number_integer()) {
    why = "expected to: [rank, ...], bytes: [n, ...], lost: n";
    return false;
  }
  if (to->size() != bytes->size()) {
    why = fmt::format("{} receivers and {} sizes", to->size(), bytes->size());
    return false;
  }
  if (lost->get<std::int64_t>() < 0) {
    why = "lost must not be negative";
    return false;
  }
  for (std::size_t i = 0; i < to->size(); ++i)
    if (!(*to)[i].is_number_integer() || !(*bytes)[i].is_number_integer() ||
        (*to)[i].get<std::int64_t>() < -1 || (*bytes)[i].get<std::int64_t>() < -1) {
      why = fmt::format("message {}: expected a rank and a size (integers, -1 when unknown)", i);
      return false;
    }
  // Optional: each message's UCX tag and the time it was posted (the harness since 2026-11-29).
  const auto tag = j.find("tag"), ns = j.find("ns");
  for (const auto& [it, name] : {std::pair{tag, "tag"}, std::pair{ns, "ns"}}) {
    if (it == j.end()) continue;
    if (!it->is_array() || it->size() != to->size()) {
      why = fmt::format("{}: expected an array of {} integers, one per message", name, to->size());
      return false;
    }
    for (const auto& v : *it)
      if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0)) {
        why = fmt::format("{}: expected integers of 0 or more", name);
        return false;
      }
  }
  if (ns != j.end())
    for (const auto& v : *ns)
      if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
        why = "ns: a time beyond 2^63 - 1";
        return false;
      }
  const auto host = j.find("host");
  if (host != j.end() &&
      (!host->is_number_unsigned() || host->get<std::uint64_t>() > 0xffffffffu)) {
    why = "host: expected an integer in 0..2^32 - 1";
    return false;
  }
  if (into) {
    into->lost = lost->get<std::int64_t>();
    into->messages.clear();
    for (std::size_t i = 0; i < to->size(); ++i) {
      SentMessage m{(*to)[i].get<std::int64_t>(), (*bytes)[i].get<std::int64_t>()};
      if (tag != j.end()) m.tag = (*tag)[i].get<std::uint64_t>();
      if (ns != j.end() && tag != j.end()) m.ns = (*ns)[i].get<std::int64_t>();
      if (host != j.end()) m.host = host->get<std::int64_t>();
      into->messages.push_back(m);
    }
  }
  return true;
}

}  // namespace mpi_detail

using namespace mpi_detail;

std::optional<std::vector<SentMessages>> library_sends(const std::string& dir, int p, int count,
                                                       std::string& why_not) {
  std::vector<SentMessages> calls(kHarnessCalls, SentMessages(static_cast<std::size_t>(p)));
  for (int r = 0; r < p; ++r) {
    fs::path file = fs::path(dir) / fmt::format("rank{}.jsonl", r);
    std::error_code ec;
    auto size = fs::file_size(file, ec);
    if (ec) {
      why_not = fmt::format("rank {} wrote no file", r);
      return std::nullopt;
    }
    if (size > kMaxRankFile) throw LimitError(file.string() + ": too large");
    std::ifstream f(file);
    std::string line;
    std::int64_t call = 1;  // the call within the count (its lines number it harness_call)
    std::vector<bool> seen(kHarnessCalls);
    std::size_t lineno = 0;
    while (std::getline(f, line)) {
      ++lineno;
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) continue;  // judged by the run's checks
      const auto k = j.find("k");
      if (k == j.end() || !k->is_string()) continue;
      if (*k == "call" && j.contains("n") && j["n"].is_number_integer())
        call = j["n"].get<std::int64_t>() - harness_call(count, 1) + 1;
      if (*k != "sent" || call < 1 || call > kHarnessCalls) continue;
      SentLine sl;
      std::string why;
      if (!read_sent_line(j, why, &sl)) {
        why_not = fmt::format("{}:{}: {}", file.string(), lineno, why);
        return std::nullopt;
      }
      if (sl.lost > 0) {
        why_not = fmt::format(
            "rank {}, call {}: {} message{} not logged (beyond the harness's log, or sent as a UCX "
            "active message)",
            r, call, sl.lost, sl.lost == 1 ? "" : "s");
        return std::nullopt;
      }
      for (std::size_t i = 0; i < sl.messages.size(); ++i) {
        const auto& m = sl.messages[i];
        if (m.to < 0 || m.to >= p || m.bytes < 0) {
          why_not = fmt::format(
              "rank {}, call {}, message {}: {} (the harness could not tell it)", r, call, i + 1,
              m.to < 0 || m.to >= p ? "an endpoint of no rank" : "a datatype of unknown size");
          return std::nullopt;
        }
      }
      calls[static_cast<std::size_t>(call - 1)][static_cast<std::size_t>(r)] =
          std::move(sl.messages);
      seen[static_cast<std::size_t>(call - 1)] = true;
    }
    for (int c = 0; c < kHarnessCalls; ++c)
      if (!seen[static_cast<std::size_t>(c)]) {
        why_not = fmt::format(
            "rank {} logged no message pattern for call {} (the harness logs it for MPICH over "
            "UCX, whose endpoints it mapped to ranks, and for Open MPI under its pml monitoring, "
            "when every peer's message passed through it; the library returned an error, runs "
            "over another transport, or its monitoring is off)",
            r, c + 1);
        return std::nullopt;
      }
  }
  return calls;
}

PeerMessages peer_messages(const std::vector<SentMessages>& calls, int p) {
  PeerMessages m(p);
  for (const auto& call : calls)
    for (std::size_t r = 0; r < call.size() && r < static_cast<std::size_t>(p); ++r)
      for (const auto& msg : call[r]) {
        if (msg.to < 0 || msg.to >= p || msg.bytes < 0) continue;  // library_sends refuses them
        const auto to = static_cast<std::size_t>(msg.to);
        if (to == r) {
          ++m.self[r];
          continue;
        }
        ++m.msgs[r][to];
        m.bytes[r][to] += static_cast<std::uint64_t>(msg.bytes);
      }
  return m;
}

namespace {

// A library that splits the harness's elements (MPICH's scatter for a broadcast cuts the buffer
// in bytes) sends messages no model of whole elements describes: not compared (res inconclusive,
// true returned).
bool splits_elements(const std::vector<SentMessages>& lib, std::uint64_t elem_bytes,
                     CheckResult& res) {
  for (std::size_t call = 0; call < lib.size(); ++call)
    for (std::size_t r = 0; r < lib[call].size(); ++r)
      for (std::size_t k = 0; k < lib[call][r].size(); ++k)
        if (lib[call][r][k].bytes % static_cast<std::int64_t>(elem_bytes) != 0) {
          res.verdict = Verdict::Unknown;
          res.note = fmt::format(
              "not compared: rank {}, call {}, message {} carries {} bytes, part of an element of "
              "{} bytes (the library splits the buffer in bytes; the model counts whole "
              "elements)",
              r, call + 1, k + 1, lib[call][r][k].bytes, elem_bytes);
          return true;
        }
  return false;
}

void add_violation(CheckResult& res, std::size_t rank, std::string message) {
  res.verdict = Verdict::Fail;
  if (res.violations.empty()) {
    Counterexample cx;
    cx.invariant = "messages";
    cx.nodes.push_back(static_cast<NodeId>(rank));
    cx.message = std::move(message);
    res.violations.push_back(cx);
  }
  ++res.violation_count;
}

// The library's messages of one rank (indices into `l`) in the order of their tags: MPICH takes
// a schedule's tags in the order it posts its operations. A tag space that wrapped around inside
// the call (a gap of more than 2^20 between consecutive tags; one call takes a few hundred)
// starts after the gap.
std::vector<std::size_t> tag_order(const std::vector<SentMessage>& l,
                                   const std::vector<std::size_t>& idx) {
  std::vector<std::size_t> v = idx;
  std::stable_sort(v.begin(), v.end(),
                   [&](std::size_t a, std::size_t b) { return l[a].tag < l[b].tag; });
  std::size_t start = 0;
  std::uint64_t widest = 0;
  for (std::size_t i = 1; i < v.size(); ++i)
    if (l[v[i]].tag - l[v[i - 1]].tag > widest) {
      widest = l[v[i]].tag - l[v[i - 1]].tag;
      start = i;
    }
  if (widest > (std::uint64_t{1} << 20))
    std::rotate(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(start), v.end());
  return v;
}

}  // namespace

CheckResult compare_sends_dependent(const std::vector<SentMessages>& lib,
                                    const ModelRunResult& model, std::uint64_t elem_bytes) {
  CheckResult res;
  res.name = "messages";
  res.verdict = Verdict::Pass;
  if (splits_elements(lib, elem_bytes, res)) return res;
  const SentMessages& ms = model.sends;
  std::uint64_t self = 0, dependencies = 0;
  std::int64_t host = -1;  // the one machine every logged send came from
  for (std::size_t call = 0; call < lib.size(); ++call) {
    const std::size_t p = std::min(lib[call].size(), ms.size());
    std::vector<std::vector<SentMessage>> L(p);
    for (std::size_t r = 0; r < p; ++r)
      for (const auto& m : lib[call][r]) {
        if (m.to == static_cast<std::int64_t>(r)) {
          ++self;  // a model's send to itself is no transfer
          continue;
        }
        if (m.ns >= 0 && m.host >= 0 && host >= 0 && m.host != host) {
          res.verdict = Verdict::Unknown;
          res.note = fmt::format(
              "not compared: rank {}, call {}: the ranks ran on different machines, whose clocks "
              "do not order their sends",
              r, call + 1);
          return res;
        }
        if (m.ns >= 0 && m.host >= 0) host = m.host;
        if (m.ns < 0 || m.host < 0) {
          res.verdict = Verdict::Unknown;
          res.note = fmt::format(
              "not compared: rank {}, call {}: a message without the UCX tag, time and machine "
              "that the order by dependencies needs (a harness before 2026-11-29, or a library "
              "that is not MPICH over UCX)",
              r, call + 1);
          return res;
        }
        L[r].push_back(m);
      }
    // The same messages: per rank, receiver and size, as many of each as the model's.
    bool same = true;
    std::vector<std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::size_t>>> lc(p),
        mc(p);
    for (std::size_t r = 0; r < p; ++r) {
      for (std::size_t k = 0; k < L[r].size(); ++k) lc[r][{L[r][k].to, L[r][k].bytes}].push_back(k);
      for (std::size_t k = 0; k < ms[r].size(); ++k)
        mc[r][{ms[r][k].to, ms[r][k].bytes}].push_back(k);
      std::set<std::pair<std::int64_t, std::int64_t>> kinds;
      for (const auto& [k, v] : lc[r]) kinds.insert(k);
      for (const auto& [k, v] : mc[r]) kinds.insert(k);
      for (const auto& kind : kinds) {
        const std::size_t nl = lc[r][kind].size(), nm = mc[r][kind].size();
        if (nl == nm) continue;
        same = false;
        add_violation(
            res, r,
            fmt::format("rank {}, call {}: the library sends {} message{} of {} bytes to rank {}, "
                        "the model {} (the messages are compared as a multiset: any order their "
                        "dependencies allow)",
                        r, call + 1, nl, nl == 1 ? "" : "s", kind.second, kind.first, nm));
        break;  // the first kind of each rank
      }
    }
    if (!same) continue;
    // The model's k-th message of a receiver and size is the library's k-th in tag order.
    std::vector<std::vector<std::size_t>> match(p);
    for (std::size_t r = 0; r < p; ++r) {
      match[r].resize(ms[r].size());
      for (const auto& [kind, mk] : mc[r]) {
        const auto lk = tag_order(L[r], lc[r][kind]);
        for (std::size_t i = 0; i < mk.size(); ++i) match[r][mk[i]] = lk[i];
      }
    }
    // No send before its sender could have the data it carries on.
    for (std::size_t r = 0; r < p && r < model.depends.size(); ++r)
      for (std::size_t k = 0; k < ms[r].size() && k < model.depends[r].size(); ++k) {
        const SentMessage& s = L[r][match[r][k]];
        for (const SendRef& d : model.depends[r][k]) {
          if (d.rank >= p || d.index >= ms[d.rank].size()) continue;
          ++dependencies;
          const SentMessage& from = L[d.rank][match[d.rank][d.index]];
          if (s.ns >= from.ns) continue;
          add_violation(
              res, r,
              fmt::format("rank {}, call {}: the library sends {} bytes to rank {} (the model's "
                          "message {}) {} ns before rank {} sends it the {} bytes that message "
                          "carries on (rank {}'s message {} in the model): a send before the "
                          "data it depends on could have arrived",
                          r, call + 1, s.bytes, s.to, k + 1, from.ns - s.ns, d.rank, from.bytes,
                          d.rank, d.index + 1));
          break;
        }
      }
  }
  res.note =
      "per rank and call, the multiset of messages (receiver and size) against the model's "
      "sends, and every send posted after its sender's messages its payload depends on in the "
      "model (the library's messages matched to the model's by their UCX tags, ordered by the "
      "harness's CLOCK_MONOTONIC times); the order of independent sends is not compared";
  res.note +=
      fmt::format("; {} dependenc{} checked", dependencies, dependencies == 1 ? "y" : "ies");
  if (self > 0)
    res.note +=
        fmt::format("; {} message{} a rank sent to itself left out", self, self == 1 ? "" : "s");
  return res;
}

CheckResult compare_sends(const std::vector<SentMessages>& lib_in, const SentMessages& model,
                          std::uint64_t elem_bytes, std::int64_t control_bytes) {
  // A control message (no element: a byte, an int) stands for a model's send of no item.
  std::vector<SentMessages> lib = lib_in;
  std::size_t controls = 0;
  if (control_bytes >= 0)
    for (auto& call : lib)
      for (auto& rank : call)
        for (auto& m : rank)
          if (m.bytes == control_bytes) {
            m.bytes = 0;
            ++controls;
          }
  CheckResult res;
  res.name = "messages";
  res.verdict = Verdict::Pass;
  auto text = [](const std::vector<SentMessage>& v, std::size_t k) {
    return k < v.size() ? fmt::format("sends {} bytes to rank {}", v[k].bytes, v[k].to)
                        : std::string("sends no more");
  };
  if (splits_elements(lib, elem_bytes, res)) return res;
  std::uint64_t self = 0;
  for (std::size_t call = 0; call < lib.size(); ++call) {
    for (std::size_t r = 0; r < lib[call].size() && r < model.size(); ++r) {
      std::vector<SentMessage> l;
      for (const auto& m : lib[call][r]) {
        if (m.to == static_cast<std::int64_t>(r))
          ++self;  // a model's send to itself is no transfer
        else
          l.push_back(m);
      }
      const auto& m = model[r];
      std::size_t k = 0;
      while (k < l.size() && k < m.size() && l[k] == m[k]) ++k;
      if (k == l.size() && k == m.size()) continue;
      add_violation(res, r,
                    fmt::format("rank {}, call {}, message {}: the library {}, the model {} (the "
                                "library posts {} message{} here, the model {})",
                                r, call + 1, k + 1, text(l, k), text(m, k), l.size(),
                                l.size() == 1 ? "" : "s", m.size()));
    }
  }
  res.note =
      "per rank and call, the receiver, order and size of every message the rank posted (MPICH "
      "over UCX, logged by the harness), against the model's sends in program order; what a "
      "rank receives, and when, is not compared";
  if (controls > 0)
    res.note +=
        fmt::format("; {} control message{} of {} bytes compared as the model's sends of no item",
                    controls, controls == 1 ? "" : "s", control_bytes);
  if (self > 0)
    res.note +=
        fmt::format("; {} message{} a rank sent to itself left out", self, self == 1 ? "" : "s");
  return res;
}

}  // namespace collv
