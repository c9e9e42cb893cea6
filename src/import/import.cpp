// Format detection, dispatch and the checks shared by the schedule readers (see import.hpp).
#include "import/import.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "check/dataflow.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"
#include "util/read_file.hpp"

namespace collv {

const char* schedule_format_name(ScheduleFormat f) {
  switch (f) {
    case ScheduleFormat::TraceJson:
      return "collv-json";
    case ScheduleFormat::MscclXml:
      return "msccl-xml";
    case ScheduleFormat::MscclJson:
      return "msccl-json";
    case ScheduleFormat::Goal:
      return "goal";
  }
  return "?";
}

namespace {

// The file's text, at most a quarter of the memory left under --max-memory (the readers build
// several times the text): a file that never ends (/dev/zero, a FIFO) is refused there, and the
// read stops at --timeout.
std::string read_text(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError("'" + path + "' is a directory, not a schedule file");
  if (!std::ifstream(path, std::ios::binary))
    throw UsageError("cannot read schedule file '" + path + "'");
  std::uint64_t in_use = resident_bytes(), limit = memory_limit();
  std::uint64_t room = limit > in_use ? (limit - in_use) / 4 : 0;
  return read_file_bounded(path, std::max<std::uint64_t>(room, 1 << 20),
                           "a schedule file (at most a quarter of the memory left under "
                           "--max-memory)");
}

std::string lower_ext(const std::string& path) {
  std::string e = std::filesystem::path(path).extension().string();
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

ScheduleFormat detect_text(const std::string& text, const std::string& path) {
  std::size_t k = 0;
  if (text.size() >= 3 && static_cast<unsigned char>(text[0]) == 0xEF) k = 3;  // UTF-8 BOM
  while (k < text.size() && std::isspace(static_cast<unsigned char>(text[k]))) ++k;
  if (k < text.size() && text[k] == '<') return ScheduleFormat::MscclXml;
  if (k < text.size() && text[k] == '{') {
    // A key, not a value: SCCL/msccl JSON marks every object with msccl_type or sccl_type.
    if (text.find("\"msccl_type\"") != std::string::npos ||
        text.find("\"sccl_type\"") != std::string::npos)
      return ScheduleFormat::MscclJson;
    return ScheduleFormat::TraceJson;
  }
  if (text.compare(k, 9, "num_ranks") == 0) return ScheduleFormat::Goal;
  std::string e = lower_ext(path);
  if (e == ".xml") return ScheduleFormat::MscclXml;
  if (e == ".goal") return ScheduleFormat::Goal;
  if (e == ".json") return ScheduleFormat::TraceJson;
  throw UsageError(path +
                   ": not a schedule collv reads (MSCCL-XML, SCCL/msccl JSON, GOAL or collv's "
                   "trace JSON; see docs/formats.md)");
}

}  // namespace

ScheduleFormat detect_schedule_format(const std::string& path) {
  return detect_text(read_text(path), path);
}

bool looks_like_schedule_path(const std::string& path) {
  std::string e = lower_ext(path);
  return e == ".xml" || e == ".json" || e == ".goal";
}

ImportedSchedule import_schedule(const std::string& path, const MscclOptions& msccl) {
  std::string text = read_text(path);
  switch (detect_text(text, path)) {
    case ScheduleFormat::MscclXml:
      return import_msccl_xml(text, path, msccl);
    case ScheduleFormat::MscclJson:
      return import_msccl_json(text, path);
    case ScheduleFormat::Goal:
      return import_goal(std::move(text), path);
    case ScheduleFormat::TraceJson:
      break;
  }
  ImportedSchedule s;
  s.format = ScheduleFormat::TraceJson;
  s.trace = read_trace_file(path);
  return s;
}

std::vector<std::pair<std::string, std::string>> not_checked_by_format(const ImportedSchedule& s) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!s.carries_data) {
    if (!s.postcondition)
      out.emplace_back("postcondition",
                       "the format carries message sizes, not data: the postcondition was not "
                       "checked");
    for (const char* n : {"final-buffers", "nodup", "dataflow"})
      out.emplace_back(n, "the format carries message sizes, not data");
  }
  if (!s.congestion_note.empty()) out.emplace_back("congestion", s.congestion_note);
  if (s.postcondition && s.postcondition->verdict == Verdict::NotChecked)
    out.emplace_back("postcondition", s.postcondition->note);
  for (const auto& c : s.checks)
    if (c.verdict == Verdict::NotChecked &&
        std::find_if(std::begin(kCheckNames), std::end(kCheckNames),
                     [&](const char* n) { return c.name == n; }) != std::end(kCheckNames))
      out.emplace_back(c.name, c.note);
  return out;
}

std::vector<CheckResult> check_imported(const ImportedSchedule& s, const CheckOptions& o) {
  std::vector<CheckResult> all = check_trace(s.trace, o);
  for (auto& r : all)
    if (r.name == "postcondition" && s.postcondition) r = *s.postcondition;
  for (const auto& [name, why] : not_checked_by_format(s))
    for (auto& r : all)
      if (r.name == name) r = not_checked(name.c_str(), why);
  // A format's check named like one of check_trace's replaces it (GOAL's match and deadlock).
  for (const auto& c : s.checks) {
    auto it = std::find_if(all.begin(), all.end(),
                           [&](const CheckResult& r) { return r.name == c.name; });
    if (it != all.end())
      *it = c;
    else
      all.push_back(c);
  }
  return all;
}

std::uint64_t level_synchronous_steps(const Trace& t) {
  std::vector<std::map<std::pair<NodeId, NodeId>, std::uint64_t>> load(t.steps + 1);
  for (const Transfer& x : t.transfers) {
    if (x.step > t.steps) continue;
    auto path = t.topology.adjacent(x.src, x.dst) ? std::vector<NodeId>{x.src, x.dst}
                                                  : t.topology.route(x.src, x.dst);
    for (std::size_t h = 0; h + 1 < path.size(); ++h)
      load[x.step][{path[h], path[h + 1]}] += x.payload_len;
  }
  std::uint64_t total = 0;
  for (const auto& step : load) {
    std::uint64_t need = 0;
    for (const auto& [k, chunks] : step) {
      std::uint64_t bw = t.topology.bandwidth(k.first, k.second);
      if (bw == 0) continue;
      need = std::max<std::uint64_t>(need, (chunks + bw - 1) / bw);
    }
    total += need;
  }
  return total;
}

namespace import_detail {

CheckResult make_check(const char* name) {
  CheckResult r;
  r.name = name;
  r.verdict = Verdict::Pass;
  return r;
}

void add_violation(CheckResult& r, Counterexample c, std::size_t max_kept) {
  r.verdict = Verdict::Fail;
  c.invariant = r.name;
  ++r.violation_count;
  if (r.violations.size() < max_kept) r.violations.push_back(std::move(c));
}

CheckResult positional_postcondition(const Trace& t, const std::vector<Buffer>& expected,
                                     const std::string& what) {
  CheckResult r = make_check("postcondition");
  const Domain& d = *t.domain;
  for (NodeId v = 0; v < expected.size() && v < t.final_output.size(); ++v) {
    const Buffer& got = t.final_output[v];
    const Buffer& want = expected[v];
    for (std::size_t k = 0; k < want.size(); ++k) {
      Item g = k < got.size() ? got[k] : 0;
      if (g == want[k]) continue;
      Counterexample c;
      c.nodes = {v};
      c.buffers.push_back({v, "output", buffer_to_string(t, got)});
      c.buffers.push_back({v, "expected", buffer_to_string(t, want)});
      c.message = fmt::format("gpu {} {} chunk {} holds {} but {} requires {}", v, what, k,
                              d.describe(g), collective_name(t.collective), d.describe(want[k]));
      add_violation(r, std::move(c), 5);
      break;
    }
  }
  r.note = "positional: every chunk of the output buffer as the runtime defines it";
  return r;
}

std::shared_ptr<const std::vector<std::optional<Buffer>>> file_expected(
    const std::vector<Buffer>& expected, std::optional<NodeId> only) {
  auto out = std::make_shared<std::vector<std::optional<Buffer>>>(expected.size());
  for (NodeId v = 0; v < expected.size(); ++v)
    if (!only || *only == v) (*out)[v] = expected[v];
  return out;
}

}  // namespace import_detail

}  // namespace collv
