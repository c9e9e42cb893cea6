// `collv mpi --model`: the message pattern of a run (per rank and call, the receivers, order and
// sizes of the messages it posted, logged by the harness's UCX interposer) against the model's
// sends in program order (docs/mpi.md, "Message patterns").
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

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
  if (into) {
    into->lost = lost->get<std::int64_t>();
    into->messages.clear();
    for (std::size_t i = 0; i < to->size(); ++i)
      into->messages.push_back({(*to)[i].get<std::int64_t>(), (*bytes)[i].get<std::int64_t>()});
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
  // A library that splits the harness's elements (MPICH's scatter for a broadcast cuts the
  // buffer in bytes) sends messages no model of whole elements describes: not compared.
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
          return res;
        }
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
      res.verdict = Verdict::Fail;
      if (res.violations.empty()) {
        Counterexample cx;
        cx.invariant = "messages";
        cx.nodes.push_back(static_cast<NodeId>(r));
        cx.message = fmt::format(
            "rank {}, call {}, message {}: the library {}, the model {} (the library posts {} "
            "message{} here, the model {})",
            r, call + 1, k + 1, text(l, k), text(m, k), l.size(), l.size() == 1 ? "" : "s",
            m.size());
        res.violations.push_back(cx);
      }
      ++res.violation_count;
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
