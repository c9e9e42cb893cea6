// SCCL/msccl algorithm JSON reader (docs/formats.md, "SCCL/msccl JSON"): rounds of sends
// [chunk, src, dst] replayed from the collective's `pre` sets, judged against its `post` sets.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "import/import.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace collv {

namespace {

using import_detail::add_violation;
using import_detail::make_check;
using nlohmann::json;

[[noreturn]] void bad(const std::string& src, const std::string& key, const std::string& msg) {
  throw UsageError(src + ": " + key + ": " + msg);
}

const json& need(const json& j, const char* key, const std::string& src, const std::string& path) {
  if (!j.is_object() || !j.contains(key)) bad(src, path + key, "missing");
  return j.at(key);
}

std::int64_t need_int(const json& j, const std::string& src, const std::string& path,
                      std::int64_t lo, std::int64_t hi) {
  if (!j.is_number_integer()) bad(src, path, "expected an integer");
  auto v = j.get<std::int64_t>();
  if (v < lo || v > hi) bad(src, path, fmt::format("{} is outside {}..{}", v, lo, hi));
  return v;
}

}  // namespace

namespace {

ImportedSchedule read_msccl_json(const std::string& text, const std::string& src);

}  // namespace

ImportedSchedule import_msccl_json(const std::string& text, const std::string& src) {
  // Every exception of the JSON library (a number out of range, a value of another type than
  // the reader checked for) becomes an input error naming the file, never a crash.
  try {
    return read_msccl_json(text, src);
  } catch (const json::exception& e) {
    throw UsageError(src + ": unexpected JSON: " + json_error_text(e.what()));
  }
}

namespace {

ImportedSchedule read_msccl_json(const std::string& text, const std::string& src) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw UsageError(src + ": not valid JSON: " + json_error_text(e.what()));
  }
  if (!j.is_object()) throw UsageError(src + ": expected a JSON object");
  const json& coll = need(j, "collective", src, "");
  int p = static_cast<int>(
      need_int(need(coll, "nodes", src, "collective."), src, "collective.nodes", 1, 4096));
  const json& chunks = need(coll, "chunks", src, "collective.");
  if (!chunks.is_array() || chunks.empty())
    bad(src, "collective.chunks", "expected a non-empty list");
  const int C = static_cast<int>(chunks.size());
  std::vector<std::vector<int>> pre(C), post(C);
  for (int c = 0; c < C; ++c) {
    std::string path = fmt::format("collective.chunks[{}].", c);
    for (const char* key : {"pre", "post"}) {
      const json& l = need(chunks[c], key, src, path);
      if (!l.is_array()) bad(src, path + key, "expected a list of ranks");
      for (std::size_t k = 0; k < l.size(); ++k)
        (key[1] == 'r' ? pre : post)[c].push_back(
            static_cast<int>(need_int(l[k], src, fmt::format("{}{}[{}]", path, key, k), 0, p - 1)));
    }
    if (pre[c].empty()) bad(src, path + "pre", "a chunk must start somewhere");
  }
  std::string runtime = coll.value("runtime_name", std::string());
  std::string name = j.value("name", std::string("sccl"));

  ImportedSchedule out;
  out.format = ScheduleFormat::MscclJson;
  Trace& t = out.trace;
  t.model_name = name;
  t.model_file = src;
  t.collective = runtime == "alltoall"         ? Collective::Alltoall
                 : runtime == "allreduce"      ? Collective::Allreduce
                 : runtime == "reduce_scatter" ? Collective::ReduceScatter
                                               : Collective::Allgather;
  t.op_class = OperatorClass::Commutative;
  t.nodup_claimed = false;
  t.port = PortModel::All;
  t.topology = Topology::parse(fmt::format("complete:{}", p));

  // input_map / output_map: rank -> chunk ids, in buffer order.
  auto read_map = [&](const char* key) {
    std::vector<std::vector<int>> m(p);
    const json& jm = need(j, key, src, "");
    if (!jm.is_object()) bad(src, key, "expected an object of rank -> chunk list");
    for (auto it = jm.begin(); it != jm.end(); ++it) {
      std::string path = std::string(key) + "." + it.key();
      long long r = -1;
      try {
        std::size_t used = 0;
        r = std::stoll(it.key(), &used);
        if (used != it.key().size()) r = -1;
      } catch (...) {
      }
      if (r < 0 || r >= p) bad(src, path, "the key must be a rank 0.." + std::to_string(p - 1));
      if (!it.value().is_array()) bad(src, path, "expected a list of chunks");
      for (std::size_t k = 0; k < it.value().size(); ++k)
        m[r].push_back(static_cast<int>(
            need_int(it.value()[k], src, fmt::format("{}[{}]", path, k), 0, C - 1)));
    }
    return m;
  };
  auto input_map = read_map("input_map");
  auto output_map = read_map("output_map");

  CheckResult attributes = make_check("attributes");
  // Chunk c is the item x{r}.{k}: its first pre rank r and its position k in r's input.
  std::uint32_t elems = 1;
  for (auto& l : input_map)
    elems = std::max<std::uint32_t>(elems, static_cast<std::uint32_t>(l.size()));
  t.domain = make_domain(DomainKind::Exact, static_cast<std::uint32_t>(p), elems, 1);
  Domain& d = *t.domain;
  std::vector<Item> item(C, 0);
  for (int c = 0; c < C; ++c) {
    int r = pre[c].front();
    auto& in = input_map[r];
    auto pos = std::find(in.begin(), in.end(), c);
    if (pos == in.end()) {
      Counterexample ce;
      ce.nodes = {static_cast<NodeId>(r)};
      ce.message = fmt::format("{}: chunk {} starts on rank {} (pre) but input_map[{}] lacks it",
                               src, c, r, r);
      add_violation(attributes, std::move(ce));
      item[c] = d.leaf(static_cast<std::uint32_t>(r), 0);
      continue;
    }
    item[c] = d.leaf(static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(pos - in.begin()));
  }
  std::vector<std::set<int>> holds(p);
  for (int r = 0; r < p; ++r) {
    t.initial_input.push_back({});
    for (int c : input_map[r]) {
      t.initial_input.back().push_back(item[c]);
      holds[r].insert(c);
    }
  }
  for (int c = 0; c < C; ++c)
    for (int r : pre[c])
      if (!holds[r].count(c)) {
        Counterexample ce;
        ce.message = fmt::format("{}: chunk {} starts on rank {} (pre) but input_map[{}] lacks it",
                                 src, c, r, r);
        add_violation(attributes, std::move(ce));
      }

  // topology.links[dst][src]: chunks per round over src -> dst (absent: every link, width 1).
  std::vector<std::vector<std::int64_t>> links;
  if (j.contains("topology") && j["topology"].contains("links")) {
    const json& jl = j["topology"]["links"];
    if (!jl.is_array() || jl.size() != static_cast<std::size_t>(p))
      bad(src, "topology.links", fmt::format("expected a {}x{} matrix", p, p));
    for (std::size_t a = 0; a < jl.size(); ++a) {
      if (!jl[a].is_array() || jl[a].size() != static_cast<std::size_t>(p))
        bad(src, fmt::format("topology.links[{}]", a), fmt::format("expected {} entries", p));
      links.emplace_back();
      for (std::size_t b = 0; b < jl[a].size(); ++b)
        links.back().push_back(
            need_int(jl[a][b], src, fmt::format("topology.links[{}][{}]", a, b), 0, 1 << 20));
    }
  }
  CheckResult link_check = make_check("links");
  // The file's own machine: its links route the transfers (`file:PATH` parses back to it).
  if (!links.empty()) {
    std::vector<Topology::ListedLink> listed;
    for (int dst = 0; dst < p; ++dst)
      for (int a = 0; a < p; ++a)
        if (a != dst && links[dst][a] > 0)
          listed.push_back({static_cast<NodeId>(a), static_cast<NodeId>(dst),
                            static_cast<std::uint32_t>(links[dst][a]), 0});
    try {
      t.topology = Topology::listed("file:" + src, p, 0, listed);
    } catch (const SpecError&) {
      // Not a connected network (or a self-link): judged on complete:p, the links check stands.
    }
  }

  const json& steps = need(j, "steps", src, "");
  if (!steps.is_array()) bad(src, "steps", "expected a list of steps");
  for (std::size_t s = 0; s < steps.size(); ++s) {
    std::string path = fmt::format("steps[{}].", s);
    const json& sends = need(steps[s], "sends", src, path);
    if (!sends.is_array()) bad(src, path + "sends", "expected a list of [chunk, src, dst]");
    std::int64_t rounds = steps[s].contains("rounds")
                              ? need_int(steps[s]["rounds"], src, path + "rounds", 1, 1 << 20)
                              : 1;
    std::map<std::pair<int, int>, std::int64_t> load;
    std::vector<std::pair<int, int>> arrivals;  // (rank, chunk) held after this step
    for (std::size_t k = 0; k < sends.size(); ++k) {
      std::string sp = fmt::format("{}sends[{}]", path, k);
      if (!sends[k].is_array() || sends[k].size() != 3) bad(src, sp, "expected [chunk, src, dst]");
      int c = static_cast<int>(need_int(sends[k][0], src, sp + "[0]", 0, C - 1));
      int a = static_cast<int>(need_int(sends[k][1], src, sp + "[1]", 0, p - 1));
      int b = static_cast<int>(need_int(sends[k][2], src, sp + "[2]", 0, p - 1));
      if (a == b) bad(src, sp, "a rank sends to itself");
      Transfer x;
      x.step = static_cast<std::uint32_t>(s + 1);
      x.src = static_cast<NodeId>(a);
      x.dst = static_cast<NodeId>(b);
      x.payload_begin = static_cast<std::uint32_t>(t.payload.size());
      x.payload_len = 1;
      x.line = 0;
      // The chunk as the sender holds it; a chunk it does not hold is not derivable (dataflow).
      t.payload.push_back(item[c]);
      t.transfers.push_back(x);
      // A chunk the sender does not hold is still recorded: the dataflow check reports it.
      arrivals.emplace_back(b, c);
      ++load[{a, b}];
    }
    for (auto [r, c] : arrivals) holds[r].insert(c);
    if (!links.empty())
      for (auto& [ab, n] : load) {
        std::int64_t bw = links[ab.second][ab.first];
        if (n <= bw * rounds) continue;
        Counterexample ce;
        ce.step = static_cast<std::uint32_t>(s + 1);
        ce.nodes = {static_cast<NodeId>(ab.first), static_cast<NodeId>(ab.second)};
        ce.message = fmt::format(
            "step {}: {} chunks go {} -> {} but topology.links[{}][{}] = {} allows {} in {} "
            "round(s)",
            s + 1, n, ab.first, ab.second, ab.second, ab.first, bw, bw * rounds, rounds);
        add_violation(link_check, std::move(ce));
      }
  }
  CheckResult postc = make_check("postcondition");
  for (int c = 0; c < C; ++c)
    for (int r : post[c])
      if (!holds[r].count(c)) {
        Counterexample ce;
        ce.nodes = {static_cast<NodeId>(r)};
        ce.message = fmt::format("rank {} never receives chunk {} ({}), which post requires", r, c,
                                 d.describe(item[c]));
        add_violation(postc, std::move(ce), 5);
      }
  for (int r = 0; r < p; ++r) {
    Buffer fin;
    for (int c : output_map[r]) fin.push_back(holds[r].count(c) ? item[c] : 0);
    t.final_output.push_back(std::move(fin));
    for (int c : output_map[r])
      if (std::find(post[c].begin(), post[c].end(), r) == post[c].end()) {
        Counterexample ce;
        ce.message = fmt::format("{}: output_map[{}] lists chunk {}, whose post omits rank {}", src,
                                 r, c, r);
        add_violation(attributes, std::move(ce));
      }
  }
  postc.note = "every chunk reaches every rank of its post set (collective.chunks)";
  t.compute_stats();
  out.postcondition = postc;
  out.congestion_note = links.empty() ? "the file has no topology.links"
                                      : "judged by the links check (topology.links)";
  if (links.empty()) link_check.verdict = Verdict::NotChecked;
  link_check.note = "chunks per step on each link against links[dst][src] x rounds";
  out.checks = {attributes, link_check};
  return out;
}

}  // namespace

}  // namespace collv
